"""Build and time one candidate schedule, with TVM's error codes (``MeasureErrorNo``).

Building and running are separate steps, as in TVM: ``build_candidate`` runs
the user's ``make() -> (s, args)``, builds it with ``tvmlab.build`` and
exports a shared library (so many builds can run in parallel workers and the
library can travel to another machine); ``run_candidate`` loads that library
in a clean process, fills the arguments with random data and times the
function with ``time_evaluator``.  With a reference library it also checks
every output against the reference's on the same inputs.  ``measure`` does
both in the calling process (handy from a notebook, no isolation).

Failures raise ``MeasureError`` carrying the code the records store.
"""
from __future__ import annotations

import os
import tempfile
import uuid

import numpy as np

from ..errors import TVMLabError


class MeasureErrorNo:
    """TVM's error numbers for a measurement."""
    NO_ERROR = 0
    INSTANTIATION_ERROR = 1   # the template raised for this config
    COMPILE_HOST = 2          # lowering or code generation failed
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4        # running the code failed or crashed
    WRONG_ANSWER = 5          # outputs differ from the reference
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8

    @classmethod
    def name(cls, code):
        for k, v in vars(cls).items():
            if k.isupper() and v == code:
                return k
        return f"ERROR_{code}"


class MeasureError(TVMLabError):
    """A candidate failed; ``error_no`` is its MeasureErrorNo."""

    def __init__(self, error_no, message):
        super().__init__(f"{MeasureErrorNo.name(error_no)}: {message}")
        self.error_no = error_no


def arg_info(args):
    """``[(shape, dtype)]`` of the tensor arguments; every dim must be a constant."""
    from ..ir.expr import IntImm
    from ..ir.tensor import Tensor
    info = []
    for a in args:
        if not isinstance(a, Tensor):
            raise MeasureError(MeasureErrorNo.INSTANTIATION_ERROR,
                               f"tuning needs tensor arguments only, got {type(a).__name__} {a!r}")
        shape = [d.value if isinstance(d, IntImm) else d if isinstance(d, int) else None for d in a.shape]
        if any(d is None for d in shape):
            raise MeasureError(MeasureErrorNo.INSTANTIATION_ERROR,
                               f"tuning needs constant shapes; {a.name} has shape {tuple(a.shape)}")
        info.append((tuple(shape), str(a.dtype)))
    return info


def _export_context():
    # the current PassContext plus codegen.llvm.export_only: the build skips the JIT it would not use
    from ..ir.transform import PassContext
    cur = PassContext.current()
    return PassContext(cur.opt_level, cur.required_pass, cur.disabled_pass, cur.instruments,
                       {**cur.config, "codegen.llvm.export_only": True}, cur.trace)


def build_module(make, target, export_only=False):
    """``(module, arg_info)`` for ``make() -> (s, args)`` built for ``target``.

    ``export_only``: an LLVM module is not compiled for this process, only
    for ``export_library`` (half the compile time); its functions cannot be called.
    """
    import contextlib

    import tvmlab
    try:
        s, args = make()
    except MeasureError:
        raise
    except Exception as e:  # noqa: BLE001 - an invalid config raises anything
        raise MeasureError(MeasureErrorNo.INSTANTIATION_ERROR, f"{type(e).__name__}: {e}") from None
    info = arg_info(args)
    try:
        with _export_context() if export_only else contextlib.nullcontext():
            mod = tvmlab.build(s, args, target=target)
    except Exception as e:  # noqa: BLE001
        raise MeasureError(MeasureErrorNo.COMPILE_HOST, f"{type(e).__name__}: {e}") from None
    if getattr(mod, "type_key", None) == "cuda_host":
        # a CUDA build does not say which arguments it writes: the computed tensors among them
        from ..ir.tensor import PlaceholderOp
        mod.written = [i for i, a in enumerate(args) if not isinstance(a.op, PlaceholderOp)]
    return mod, info


CUDA_SUFFIX = ".cuda.pkl"


def build_candidate(make, target, out_dir=None):
    """Build ``make() -> (s, args)`` and export it: ``{"path", "args"}`` (args as ``arg_info``).

    A CPU build is a shared library; a CUDA build (compiled by NVRTC here, no GPU needed) is its
    ``module_state`` pickled, with the indices of the arguments it writes."""
    import pickle
    mod, info = build_module(make, target, export_only=True)
    out_dir = out_dir or tempfile.gettempdir()
    cuda = getattr(mod, "type_key", None) == "cuda_host"
    path = os.path.join(out_dir, f"tvmlab_tune_{os.getpid()}_{uuid.uuid4().hex[:12]}" +
                        (CUDA_SUFFIX if cuda else ".so"))
    try:
        if cuda:
            from ..codegen.cuda_build import module_state
            with open(path, "wb") as f:
                pickle.dump({"module": module_state(mod), "written": mod.written}, f)
        else:
            mod.export_library(path)
    except Exception as e:  # noqa: BLE001
        raise MeasureError(MeasureErrorNo.COMPILE_HOST, f"export failed: {type(e).__name__}: {e}") from None
    return {"path": path, "args": info}


def target_for_build(target):
    """``target`` as a builder worker should compile it: a CUDA target without ``-arch`` gets the GPU's
    (read here, in the process that starts the workers, so they never touch the CUDA driver)."""
    text = str(target)
    if text.split()[0:1] != ["cuda"] or "-arch" in text:
        return text
    from ..runtime import cuda_driver
    b = cuda_driver.backend()
    if b is None:
        return text
    major, minor = b.compute_capability(0)
    return f"{text} -arch=sm_{major}{minor}"


def load_candidate(path):
    """The Module of a file ``build_candidate`` wrote (a shared library or a CUDA build)."""
    import pickle

    import tvmlab
    if not path.endswith(CUDA_SUFFIX):
        return tvmlab.runtime.load_module(path)
    from ..codegen.cuda_build import module_from_state
    with open(path, "rb") as f:
        data = pickle.load(f)
    mod = module_from_state(data["module"])
    mod.written = list(data["written"])
    return mod


def _materialise(lib):
    # a library given as bytes (sent to another machine) is written to a temporary file
    if isinstance(lib, (bytes, bytearray)):
        cuda = bytes(lib[:4]) != b"\x7fELF"        # a CUDA build's pickle, not a shared library
        fd, path = tempfile.mkstemp(suffix=CUDA_SUFFIX if cuda else ".so", prefix="tvmlab_tune_")
        with os.fdopen(fd, "wb") as f:
            f.write(lib)
        return path, True
    return os.fspath(lib), False


def random_inputs(info, seed=0):
    """numpy arrays for ``arg_info``: random values (never all zero)."""
    from ..testing import random_data
    rng = np.random.default_rng(seed)
    return [random_data(shape, dtype, rng) for shape, dtype in info]


_INPUTS = {}     # (arg_info, seed) -> inputs: the candidates of one task share them


def shared_inputs(info, seed=0):
    """``random_inputs(info, seed)``, made once per process (callers must not write to them)."""
    key = (tuple((tuple(s), d) for s, d in info), seed)
    if key not in _INPUTS:
        if len(_INPUTS) >= 8:
            _INPUTS.pop(next(iter(_INPUTS)))
        _INPUTS[key] = random_inputs(info, seed)
    return _INPUTS[key]


def _time_function(fn_module, info, number, repeat, min_repeat_ms, inputs, budget=None, kill_after=None):
    import signal
    import time

    import tvmlab
    dev = _device(fn_module)
    arrays = [tvmlab.nd.array(x, dev) for x in inputs]
    f = fn_module.get_function(fn_module.entry_name)
    written = _written(fn_module)
    try:
        if kill_after is not None:
            # SIGALRM's default action ends the process, even inside native code
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, kill_after)
        t0 = time.perf_counter()
        f(*arrays)
        first = time.perf_counter() - t0
        if kill_after is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        outputs = [arrays[i].numpy().copy() for i in written]
        if budget is not None and first * number * repeat > budget:
            # so slow that timing it fully would use up the budget: its first call is its cost
            costs = [first] * repeat
        else:
            timer = fn_module.time_evaluator(fn_module.entry_name, dev, number=number, repeat=repeat,
                                             min_repeat_ms=min_repeat_ms)
            costs = list(timer(*arrays).results)
    except Exception as e:  # noqa: BLE001
        raise MeasureError(MeasureErrorNo.RUNTIME_DEVICE, f"{type(e).__name__}: {e}") from None
    return costs, written, outputs


def _device(mod):
    """The device a module runs on: cuda(0) for a CUDA build (MeasureError where there is none), else the CPU."""
    import tvmlab
    if getattr(mod, "type_key", None) != "cuda_host":
        return tvmlab.cpu(0)
    dev = tvmlab.cuda(0)
    if not dev.exist:
        from ..runtime import cuda_driver
        reason = cuda_driver.no_device_reason() or "cuda(0) is absent"
        raise MeasureError(MeasureErrorNo.RUNTIME_DEVICE,
                           f"no CUDA device on this machine ({reason}): the config was built (NVRTC) but cannot "
                           "be timed here; run the runner where there is a GPU")
    return dev


def _written(mod):
    """Indices of the arguments a module writes."""
    if hasattr(mod, "written"):
        return list(mod.written)
    f = mod.get_function(mod.entry_name)
    return [i for i, p in enumerate(f.spec.params) if p.kind == "buffer" and p.written]


def _check(outputs, ref_outputs, written, info, rtol=1e-3, atol=1e-3):
    for i, got, want in zip(written, outputs, ref_outputs):
        if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=False):
            bad = int(np.sum(~np.isclose(got, want, rtol=rtol, atol=atol)))
            raise MeasureError(MeasureErrorNo.WRONG_ANSWER,
                               f"argument {i} {info[i][0]}: {bad} elements differ from the reference")


def run_candidate(lib, info, number=1, repeat=1, min_repeat_ms=0, ref=None, seed=0, remove=True, budget=None,
                  kill_after=None):
    """Seconds per call (one per repeat) of the library ``lib`` (a path or its bytes).

    ``ref`` (a path or bytes of a library with the same arguments) gives the
    expected outputs on the same random inputs; outputs start as NaN.
    ``remove`` deletes ``lib`` afterwards.  With ``budget`` (seconds), a
    candidate whose first call times ``number * repeat`` exceeds it is not
    timed further: that call is its cost (slow candidates finish quickly
    instead of running into the runner's timeout).  ``kill_after`` (seconds)
    ends this very process with SIGALRM when the first call runs longer: use it
    only in a disposable process (``tvmlab.tuning.forked.call_forked``).
    """
    path, temp = _materialise(lib)
    try:
        try:
            mod = load_candidate(path)
        except Exception as e:  # noqa: BLE001
            raise MeasureError(MeasureErrorNo.RUNTIME_DEVICE, f"cannot load the build: {e}") from None
        _device(mod)
        inputs = shared_inputs(info, seed)
        costs, written, outputs = _time_function(mod, info, number, repeat, min_repeat_ms,
                                                 _poisoned(inputs, mod), budget, kill_after)
        if ref is not None:
            rpath, rtemp = _materialise(ref)
            try:
                rmod = load_candidate(rpath)
                _, rwritten, ref_outputs = _time_function(rmod, info, 1, 1, 0, _poisoned(inputs, rmod))
            finally:
                if rtemp:
                    os.unlink(rpath)
            _check(outputs, ref_outputs, written, info)
        return costs
    finally:
        if temp or remove:
            try:
                os.unlink(path)
            except OSError:
                pass


def _poisoned(inputs, mod):
    # outputs start as NaN (or a sentinel) so an element the code forgets to write shows up
    # (only those are copied: the arrays made from the inputs are the kernel's, never these)
    from ..testing import poison
    out = list(inputs)
    for i in _written(mod):
        if i < len(out):
            out[i] = inputs[i].copy()
            poison(out[i])
    return out


def measure(make, target="llvm", number=1, repeat=1, min_repeat_ms=0, check_against=None, seed=0):
    """Build and time ``make()`` in this process: seconds per call, one per repeat.

    ``check_against`` is another ``make`` whose outputs are the reference.
    Parallel code run here is not isolated: a crash takes this process down.
    """
    mod, info = build_module(make, target)
    inputs = random_inputs(info, seed)
    costs, written, outputs = _time_function(mod, info, number, repeat, min_repeat_ms, _poisoned(inputs, mod))
    if check_against is not None:
        rmod, rinfo = build_module(check_against, target)
        if rinfo != info:
            raise MeasureError(MeasureErrorNo.WRONG_ANSWER, f"the reference takes {rinfo}, the candidate {info}")
        _, _, ref_outputs = _time_function(rmod, info, 1, 1, 0, _poisoned(inputs, rmod))
        _check(outputs, ref_outputs, written, info)
    return costs
