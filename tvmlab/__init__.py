"""tvmlab: a compact tensor compiler in the style of TVM's tensor-expression stack.

    import tvmlab as tvm
    from tvmlab import te
"""
import sys as _sys

from . import errors, ir, te, tir  # noqa: F401
from . import hybrid  # noqa: F401  (te.hybrid: registers itself as tvmlab.te.hybrid)
from . import codegen, runtime  # noqa: F401
from . import lower as _passes  # noqa: F401  (the pass package; tvmlab.lower is the function)
from .codegen.registry import Target, register_target  # noqa: F401
from .driver import build, lower  # noqa: F401
from .errors import TVMError, TVMLabError  # noqa: F401
from . import arith  # noqa: F401  (tvm.arith.Analyzer)
from . import _ffi  # noqa: F401  (tvm._ffi.base.TVMError, tvm._ffi.register_func)
from .runtime import container  # noqa: F401  (tvm.container.Map / Array)
from .runtime import Device, cpu, cuda, device, metal, opencl, opengl, rocm, vulkan  # noqa: F401
from .runtime import ndarray as nd  # noqa: F401
from . import testing  # noqa: F401
from .ir import transform  # noqa: F401  (tvm.transform: Pass, Sequential, PassContext)
from .ir import instrument  # noqa: F401  (tvm.instrument: PassTimingInstrument, ...)
from .ir.function import IRModule  # noqa: F401
from .lower.intrin_rules import register_intrin_lowering as _ril
from .runtime.registry import get_global_func, list_global_func_names, register_func  # noqa: F401

target = codegen.registry

__version__ = "0.1.0"


def explore(s, args=None, targets=None, **options):
    """Open the explorer widget on schedule ``s`` of ``args``, or on a Relay module ``s`` with
    ``params=`` (needs the ``lab`` extra)."""
    from .widgets import explore as _explore
    return _explore(s, args, targets=targets, **options)


def compare(s1, s2, args, targets=None, sizes=None, benchmark=True):
    """A/B comparison of two schedules of ``args``: traces, AST3 and code diffs, both timed."""
    from .widgets.compare import compare as _compare
    return _compare(s1, s2, args, targets=targets, sizes=sizes, benchmark=benchmark)


def load_ipython_extension(ip):
    """``%load_ext tvmlab``: register the ``%tvmlab`` magics."""
    from .widgets.magics import load_ipython_extension as _load
    _load(ip)


ir.register_intrin_lowering = _ril       # tvm.ir.register_intrin_lowering (the rules live in lower/)
from .driver.prim_func import create_prim_func as _cpf  # noqa: E402
te.create_prim_func = _cpf      # te.create_prim_func (it builds on the driver, a layer above te)
error = errors          # TVM's tvm.error: the same module (tvm.error.TVMError)
_sys.modules[__name__ + ".error"] = errors
