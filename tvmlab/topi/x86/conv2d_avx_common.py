"""The fallback AutoTVM config of a CPU 2-D convolution (TVM's ``topi.x86.conv2d_avx_common``): channel
blocks of ``nchwc_blocks`` and a register tile of output columns dividing the output width."""
from __future__ import annotations

from ..nn.workload import out_width


def register_width(ow, limit=31):
    """The largest divisor of ``ow`` up to ``limit`` (the output columns of one register tile)."""
    return max(n for n in range(1, min(ow, limit) + 1) if ow % n == 0)


def _fallback_schedule(cfg, wkl):
    """Set ``cfg``'s knobs tile_ic, tile_oc, tile_ow and unroll_kw for workload ``wkl``."""
    from ...autotvm.space import OtherOptionEntity, SplitEntity
    from .conv2d import nchwc_blocks
    ic_bn, oc_bn = nchwc_blocks(wkl.in_filter, wkl.out_filter, wkl.out_dtype)
    ow = out_width(wkl)
    reg = register_width(ow)
    cfg["tile_ic"] = SplitEntity([wkl.in_filter // ic_bn, ic_bn])
    cfg["tile_oc"] = SplitEntity([wkl.out_filter // oc_bn, oc_bn])
    cfg["tile_ow"] = SplitEntity([ow // reg, reg])
    cfg["unroll_kw"] = OtherOptionEntity(False)
