"""Graph passes, each a ``tvm.transform`` pass on an IRModule: ``relay.transform.FuseOps(2)(mod)``."""
from __future__ import annotations

from ...ir.transform import module_pass
from ..expr import Function


def _map_functions(mod, fn):
    """A new module whose relay functions are ``fn(function)``, typed again; other functions are kept."""
    from .infer_type import infer_function

    def one(f):
        g = fn(f)
        infer_function(g)
        return g
    return type(mod)({name: one(f) if isinstance(f, Function) else f for name, f in mod.functions.items()})


def InferType():
    """Type every node (``expr.checked_type``); raises TypeInferenceError on a mismatch."""
    from .infer_type import infer_function

    def run(mod, ctx):
        def one(f):
            infer_function(f)
            return f
        return _map_functions(mod, one)
    return module_pass(run, opt_level=0, name="InferType")


def SimplifyInference():
    """batch_norm folded into the preceding conv2d's weights and bias (else a per-channel scale and shift);
    dropout removed."""
    from .simplify_inference import simplify, use_counts
    from .infer_type import infer_function

    def run(mod, ctx):
        def one(f):
            infer_function(f)
            body = simplify(f.body, use_counts(f.body))
            return f if body is f.body else Function(f.params, body, None, f.type_params, f.attrs)
        return _map_functions(mod, one)
    return module_pass(run, opt_level=0, name="SimplifyInference")


def FoldConstant():
    """Calls whose operands are all constants computed at compile time (one small build for all of them)."""
    from .fold_constant import fold
    return module_pass(lambda mod, ctx: _map_functions(mod, fold), opt_level=2, name="FoldConstant")


def SimplifyExpr():
    """Layer norms written out become ``nn.layer_norm``; ``power`` by 1, 2, 3, 0.5 becomes multiplications;
    division by a power of two, a multiplication (see ``simplify_expr``)."""
    from .simplify_expr import simplify
    from .infer_type import infer_function

    def run(mod, ctx):
        def one(f):
            infer_function(f)
            body = simplify(f.body)
            return f if body is f.body else Function(f.params, body, None, f.type_params, f.attrs)
        return _map_functions(mod, one)
    return module_pass(run, opt_level=0, name="SimplifyExpr")


def DeadCodeElimination(inline_once=False):
    """Let bindings nothing reads removed (``inline_once``: a binding read once is substituted)."""
    from .dead_code import eliminate
    return module_pass(lambda mod, ctx: _map_functions(mod, lambda f: eliminate(f, inline_once)),
                       opt_level=1, name="DeadCodeElimination")


def FuseOps(fuse_opt_level=-1):
    """Operators grouped into primitive functions by pattern kind (see ``fuse_ops``); ``fuse_opt_level=-1``
    follows the PassContext (0 there: no fusion)."""
    from .fuse_ops import fuse_function

    def run(mod, ctx):
        level = ctx.opt_level if fuse_opt_level < 0 else fuse_opt_level
        return _map_functions(mod, lambda f: fuse_function(f, level))
    return module_pass(run, opt_level=0, name="FuseOps")


def AlterOpLayout(target="llvm"):
    """conv2d NCHW -> NCHW[x]c blocked by the vector width of ``target``, layout_transform only where a
    producer and its consumer disagree (see ``alter_op_layout``); 3x3 convolutions with constant kernels
    and enough channels by Winograd's F(4x4, 3x3) unless the PassContext config says
    ``{"relay.conv2d_winograd": False}``.  For a CUDA target the layouts stay NCHW and only the Winograd
    rewrite applies (``winograd_cuda``)."""
    from .alter_op_layout import alter
    from .winograd_cuda import alter_cuda

    def run(f, ctx):
        winograd = ctx.config.get("relay.conv2d_winograd", True)
        if str(target).split()[0] == "cuda":
            return alter_cuda(f, winograd)
        return alter(f, target, winograd=winograd)
    return module_pass(lambda mod, ctx: _map_functions(mod, lambda f: run(f, ctx)), opt_level=3,
                       name="AlterOpLayout")


def function_pass(pass_func=None, opt_level=0, name=None, required=None):
    """A pass from ``fn(func, mod, ctx) -> func`` (or a class with ``transform_function``) applied to every
    relay function of a module: ``@relay.transform.function_pass(opt_level=1)``."""
    import functools
    import inspect

    from ...errors import TVMLabError

    def create(fn):
        pname = name or getattr(fn, "__name__", "function_pass")
        if inspect.isclass(fn):
            @functools.wraps(fn, updated=())
            def make(*args, **kwargs):
                inst = fn(*args, **kwargs)
                return _make(inst.transform_function, pname)
            return make
        if not callable(fn):
            raise TVMLabError(f"function_pass needs a function or a class, got {fn!r}")
        return _make(fn, pname)

    def _make(f, pname):
        def run(mod, ctx):
            def one(func):
                out = f(func, mod, ctx)
                if not isinstance(out, Function):
                    raise TVMLabError(f"function pass {pname} returned {type(out).__name__}, expected a "
                                      "relay.Function")
                return out
            return _map_functions(mod, one)
        return module_pass(run, opt_level=opt_level, name=pname, required=required)

    return create(pass_func) if pass_func is not None else create
