"""Helpers for writing operators, spelled as in TVM's ``topi.utils``.

    n, c, h, w = get_const_tuple(data.shape)       # ints (a symbolic dim stays an expression)
    traverse_inline(s, outs[0].op, callback)       # inline injective stages, call back on the rest
"""
from __future__ import annotations

from .. import te
from ..codegen.llvm_vector import vector_registers
from ..errors import DSLError, ScheduleError
from ..ir import expr as E
from ..ir import op as _op
from ..ir.arith.analyzer import simplify as _simplify
from ..ir.tensor import ComputeOp, IterVar, PlaceholderOp
from . import tag as _tag


def get_const_int(expr):
    """The Python int of a constant integer expression; a clear error for a symbolic one."""
    if isinstance(expr, bool):
        raise DSLError(f"expected an integer, got the bool {expr!r}")
    if isinstance(expr, int):
        return expr
    if isinstance(expr, IterVar):
        expr = expr.var
    if isinstance(expr, E.Expr):
        e = _simplify(expr)
        if isinstance(e, E.IntImm):
            return int(e.value)
    raise DSLError(f"expected a constant integer, got {expr!r}")


def get_const_float(expr):
    """The Python float of a constant expression."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return float(expr)
    if isinstance(expr, E.Expr):
        e = _simplify(expr)
        if isinstance(e, (E.IntImm, E.FloatImm)):
            return float(e.value)
    raise DSLError(f"expected a constant number, got {expr!r}")


def const_or_none(expr):
    """The int value of ``expr`` when it is a constant, else None."""
    try:
        return get_const_int(expr)
    except DSLError:
        return None


def get_const_tuple(in_tuple):
    """A tuple of ints from a shape; a dimension that is not constant stays an expression (as in TVM)."""
    out = []
    for x in in_tuple:
        v = const_or_none(x)
        out.append(v if v is not None else (x.var if isinstance(x, IterVar) else x))
    return tuple(out)


def equal_const_int(expr, value):
    """Whether ``expr`` is the constant ``value``."""
    return const_or_none(expr) == value


def simplify(expr):
    """``expr`` simplified (an int stays an int)."""
    if isinstance(expr, int):
        return expr
    return _simplify(_op.convert(expr))


def prod(xs):
    """The product of ints or expressions (1 for none)."""
    out = 1
    for x in xs:
        out = out * x if not (isinstance(out, int) and out == 1) else x
    return simplify(out) if not isinstance(out, int) else out


def get_const_shape(shape, what):
    """Ints for every dimension of ``shape``, or a DSLError naming ``what`` needs constants."""
    out = []
    for k, x in enumerate(shape):
        v = const_or_none(x)
        if v is None:
            raise DSLError(f"{what} needs a constant shape, got a symbolic dimension {k} ({x})")
        out.append(v)
    return tuple(out)


def ravel_index(indices, shape):
    """The row-major flat index of ``indices`` in ``shape``."""
    idx = None
    for i, (x, n) in enumerate(zip(indices, shape)):
        idx = x if idx is None else idx * n + x
    return idx if idx is not None else 0


def unravel_index(idx, shape):
    """The row-major indices of flat ``idx`` in ``shape``."""
    out = []
    for n in reversed(shape):
        out.append(_op.floormod(idx, n) if not equal_const_int(n, 1) else _op.const(0, "int32"))
        idx = _op.floordiv(idx, n)
    return list(reversed(out))


def traverse_inline(s, final_op, callback=None):
    """Walk the operations feeding ``final_op``: inline every injective compute that is not an output,
    and call ``callback(op)`` on each compute (outputs and complex operators included), each once."""
    visited = set()
    outputs = set(s.outputs)

    def walk(op):
        if op in visited:
            return
        visited.add(op)
        if isinstance(op, ComputeOp) and _tag.is_injective(op.tag) and op is not final_op \
                and op not in outputs:
            s[op].compute_inline()
        for t in op.input_tensors:
            if isinstance(t.op, ComputeOp):
                walk(t.op)
        if callback is not None and isinstance(op, ComputeOp):
            callback(op)

    walk(final_op)


def is_placeholder(t):
    return isinstance(t.op, PlaceholderOp)


class OperatorError(DSLError, ScheduleError):
    """Bad input to a topi operator (shapes, dtypes, attributes): names the operator, expected and got.

    Both a DSLError and a ScheduleError, so code catching either (as earlier topi raised) still does."""


def shape_str(t):
    """``float32(1, 3, 224, 224)`` for error messages."""
    return f"{t.dtype}{tuple(get_const_tuple(t.shape))}"


def check_tensor(op, t, name, ndim=None):
    """Raise OperatorError unless ``t`` is a Tensor (of ``ndim`` dimensions when given)."""
    from ..ir.tensor import Tensor
    if not isinstance(t, Tensor):
        raise OperatorError(f"{op}: {name} must be a te.Tensor, got {type(t).__name__}: {t!r}")
    if ndim is not None and len(t.shape) != ndim:
        raise OperatorError(f"{op}: {name} must be {ndim}-D, got {shape_str(t)}")


def normalize_axis(op, axis, ndim):
    """``axis`` (negative counts from the end) as an index in [0, ndim)."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise OperatorError(f"{op}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise OperatorError(f"{op}: axis {axis} is out of range for {ndim} dimension(s)")
    return axis % ndim


def cpu_target(target=None):
    """``target``, else the current ``with tvm.target.Target(...)`` when it is a CPU one, else "llvm":
    tiles are sized for the machine the code is built for."""
    if target is not None:
        return target
    from ..codegen.registry import Target
    cur = Target.current()
    return str(cur) if cur is not None and cur.kind == "llvm" else "llvm"


def gpu_target_current():
    """Whether the enclosing ``with tvm.target.Target(...)`` is a GPU one (computes then skip the CPU's
    packed layouts: a GPU schedule tiles the operands in shared memory instead)."""
    from ..codegen.registry import Target
    cur = Target.current()
    return cur is not None and "gpu" in cur.keys


def with_cpu_target(fn):
    """Decorator: a ``target=None`` argument of ``fn`` becomes ``cpu_target()`` before the call."""
    import functools
    import inspect
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise OperatorError(f"{fn.__name__}: {e}") from None
        bound.apply_defaults()
        bound.arguments["target"] = cpu_target(bound.arguments["target"])
        return fn(*bound.args, **bound.kwargs)
    return call


def nchw_pack_layout(layout_info):
    """Whether ``layout_info`` is NCHW with batch and channel blocks ("NCHW4n16c"): TVM's helper."""
    import re
    return bool(re.fullmatch(r"NCHW\d+n\d+c", str(layout_info)))


def nchw_xc_layout(layout_info):
    """Whether ``layout_info`` is NCHW with a channel block ("NCHW16c")."""
    import re
    return bool(re.fullmatch(r"NCHW\d+c", str(layout_info)))


def get_shape(src_shape, src_layout, dst_layout):
    """``src_shape`` (in ``src_layout``) as it is in ``dst_layout``: the same axes permuted or re-blocked
    ("NCHW16c" -> "NC16cWH", "OIHW16i8o" -> "HWO8oI16i")."""
    from .transform import parse_layout
    src, dst = parse_layout(src_layout), parse_layout(dst_layout)
    if len(src) != len(src_shape):
        raise OperatorError(f"get_shape: layout {src_layout!r} has {len(src)} axes but the shape {tuple(src_shape)} "
                            f"has {len(src_shape)}")
    dims = [const_or_none(d) for d in src_shape]
    primal = {}
    for (axis, factor), d in zip(src, dims):
        primal[axis.upper()] = primal.get(axis.upper(), 1) * d
    blocks = {axis.upper(): factor for axis, factor in dst if factor is not None}
    if set(primal) != {a.upper() for a, _ in dst}:
        raise OperatorError(f"get_shape: layouts {src_layout!r} and {dst_layout!r} do not have the same axes")
    out = []
    for axis, factor in dst:
        if factor is not None:
            out.append(factor)
        else:
            out.append(primal[axis] // blocks.get(axis, 1))
    return tuple(out)


# ---- packing helpers of the CPU operators

VECTORS = 2     # vector registers across a packed block: the width of a register tile


def vector_block(dtype, target="llvm"):
    """Elements of ``dtype`` in ``VECTORS`` vector registers of ``target`` (16 float32 with AVX2, 32 with AVX-512)."""
    return VECTORS * vector_registers(target).lanes(dtype)


def pack_blocks(shape, value, limit, dtype, name):
    """A packing stage of ``shape`` whose first axis counts blocks of ``shape[-1]`` along a dimension of
    size ``limit``: ``value(*index)`` where ``index[0] * block + index[-1] < limit``, zero past the end."""
    block = shape[-1]
    if const_or_none(limit) is not None and const_or_none(limit) % block == 0:
        return te.compute(shape, value, name=name)
    zero = E.FloatImm(dtype, 0.0) if "float" in dtype else E.IntImm(dtype, 0)
    return te.compute(shape, lambda *i: te.if_then_else(i[0] * block + i[-1] < limit, value(*i), zero), name=name)


def find_stage_input(out, suffix):
    """The input tensor of ``out``'s operation whose name ends with ``suffix``."""
    for t in out.op.input_tensors:
        if t.op.name.endswith(suffix):
            return t
    raise ScheduleError(f"{out.op.name} reads no tensor named '*{suffix}'; build it with the matching topi compute")


def check_options(op, **options):
    """Raise ScheduleError unless every option given (not None) is an int >= 1."""
    for name, value in options.items():
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ScheduleError(f"{op}: {name} must be an int >= 1 (or None for the default), got {value!r}")
