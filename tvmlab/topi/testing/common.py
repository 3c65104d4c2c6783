"""Per-target dispatch of computes and schedules, as TVM's tests pick them: a table keyed by a target's
generic keys ("cpu", "gpu", "arm_cpu", ...) plus "generic", and ``dispatch`` returning the entry for the
target's first key the table has (else "generic").

    s = topi.testing.get_injective_schedule("cuda")([out])     # topi.cuda.schedule_injective
"""
from __future__ import annotations

import numpy as np

from ... import te
from ...codegen.registry import Target
from ...testing import assert_allclose
from .. import cuda, generic, nn, x86
from ..absent import absent_target

_arm_cpu, _hls, _mali, _bifrost, _intel_graphics = (
    absent_target("tvmlab.topi", t) for t in ("arm_cpu", "hls", "mali", "bifrost", "intel_graphics"))

_injective_schedule = {
    "generic": generic.schedule_injective,
    "cpu": x86.schedule_injective,
    "arm_cpu": _arm_cpu.schedule_injective,
    "gpu": cuda.schedule_injective,
    "hls": _hls.schedule_injective,
}

_reduce_schedule = {
    "generic": generic.schedule_reduce,
    "cpu": x86.schedule_reduce,
    "gpu": cuda.schedule_reduce,
    "hls": _hls.schedule_reduce,
}

_conv2d_nchw_implement = {
    "generic": (nn.conv2d_nchw, generic.schedule_conv2d_nchw),
    "cpu": (x86.conv2d_nchw, x86.schedule_conv2d_nchw),
    "arm_cpu": (_arm_cpu.conv2d_nchw_spatial_pack, _arm_cpu.schedule_conv2d_nchw_spatial_pack),
    "gpu": (cuda.conv2d_nchw, cuda.schedule_conv2d_nchw),
    "mali": (_mali.conv2d_nchw_spatial_pack, _mali.schedule_conv2d_nchw_spatial_pack),
    "bifrost": (_bifrost.conv2d_nchw_spatial_pack, _bifrost.schedule_conv2d_nchw_spatial_pack),
    "intel_graphics": (_intel_graphics.conv2d_nchw, _intel_graphics.schedule_conv2d_nchw),
    "hls": (nn.conv2d_nchw, _hls.schedule_conv2d_nchw),
}


def dispatch(target, dispatch_map):
    """The entry of ``dispatch_map`` for ``target`` (a string or Target): its first generic key that the
    map has, else ``dispatch_map["generic"]``."""
    target = target if isinstance(target, Target) else Target(str(target))
    for key in target.keys:
        if key in dispatch_map:
            return dispatch_map[key]
    if "generic" not in dispatch_map:
        raise KeyError(f"dispatch: no entry for target {str(target)!r} (keys {list(target.keys)}) and no "
                       f"'generic' entry; the map has {sorted(dispatch_map)}")
    return dispatch_map["generic"]


def get_injective_schedule(target):
    """The injective (element-wise, broadcast, layout) schedule for ``target``."""
    return dispatch(target, _injective_schedule)


def get_reduce_schedule(target):
    """The reduction schedule for ``target``."""
    return dispatch(target, _reduce_schedule)


get_broadcast_schedule = get_injective_schedule
get_elemwise_schedule = get_injective_schedule


def get_conv2d_nchw_implement(target):
    """(compute, schedule) of conv2d in NCHW for ``target``."""
    return dispatch(target, _conv2d_nchw_implement)


def compare_numpy_tvm(inputs, output, target, device, compute, schedule):
    """Build ``compute`` on placeholders shaped as the numpy ``inputs`` with ``schedule``, run it on
    ``device`` and compare with the numpy ``output`` (rtol = atol = 1e-4)."""
    te_inputs = [te.placeholder(shape=i.shape, dtype=str(i.dtype)) for i in inputs]
    from ...runtime import ndarray as nd
    from ...driver import build
    te_out = nd.array(np.full(output.shape, np.nan if output.dtype.kind == "f" else 0, output.dtype), device=device)
    with Target(target):
        out = compute(*te_inputs)
        s = schedule([out])
        func = build(s, te_inputs + [out])
        func(*([nd.array(x, device=device) for x in inputs] + [te_out]))
    assert_allclose(te_out.numpy(), output, atol=1e-4, rtol=1e-4)
