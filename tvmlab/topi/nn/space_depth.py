"""Moving blocks of pixels into channels and back, as TVM's ``topi.nn.space_to_depth`` /
``depth_to_space`` (NCHW or NHWC).

    Y = topi.nn.space_to_depth(X, 2)              # (N, C, H, W) -> (N, 4C, H/2, W/2)
    Z = topi.nn.depth_to_space(Y, 2, mode="DCR")  # and back
"""
from __future__ import annotations

from ... import te
from .. import tag
from ..utils import OperatorError, check_tensor, const_or_none, shape_str


def _axes(op, data, block_size, layout):
    check_tensor(op, data, "data", 4)
    if layout not in ("NCHW", "NHWC"):
        raise OperatorError(f"{op}: layout must be NCHW or NHWC, got {layout!r}")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise OperatorError(f"{op}: block_size must be an int >= 1, got {block_size!r}")
    return (1, 2, 3) if layout == "NCHW" else (3, 1, 2)


def space_to_depth(data, block_size, layout="NCHW"):
    """Each ``block_size`` x ``block_size`` block of pixels becomes channels: output channel
    ``(by * block_size + bx) * C + c``."""
    ca, ha, wa = _axes("space_to_depth", data, block_size, layout)
    c, h, w = (const_or_none(data.shape[a]) for a in (ca, ha, wa))
    if None in (c, h, w) or h % block_size or w % block_size:
        raise OperatorError(f"space_to_depth: the height and width of {shape_str(data)} must be constant "
                            f"multiples of block_size {block_size}")
    shape = list(data.shape)
    shape[ca], shape[ha], shape[wa] = c * block_size * block_size, h // block_size, w // block_size

    def f(*i):
        block, ch = i[ca] // c, i[ca] % c
        idx = list(i)
        idx[ca] = ch
        idx[ha] = i[ha] * block_size + block // block_size
        idx[wa] = i[wa] * block_size + block % block_size
        return data(*idx)
    return te.compute(tuple(shape), f, name="space_to_depth", tag=tag.INJECTIVE)


def depth_to_space(data, block_size, layout="NCHW", mode="DCR"):
    """Channels become ``block_size`` x ``block_size`` blocks of pixels: input channel
    ``(by * block_size + bx) * C' + c`` ("DCR") or ``c * block_size**2 + by * block_size + bx`` ("CDR")."""
    ca, ha, wa = _axes("depth_to_space", data, block_size, layout)
    if mode not in ("DCR", "CDR"):
        raise OperatorError(f"depth_to_space: mode must be DCR or CDR, got {mode!r}")
    c = const_or_none(data.shape[ca])
    bb = block_size * block_size
    if c is None or c % bb:
        raise OperatorError(f"depth_to_space: the channels of {shape_str(data)} must be a constant multiple of "
                            f"block_size**2 = {bb}")
    co = c // bb
    shape = list(data.shape)
    shape[ca], shape[ha], shape[wa] = co, data.shape[ha] * block_size, data.shape[wa] * block_size

    def f(*i):
        block = (i[ha] % block_size) * block_size + i[wa] % block_size
        idx = list(i)
        idx[ca] = block * co + i[ca] if mode == "DCR" else i[ca] * bb + block
        idx[ha], idx[wa] = i[ha] // block_size, i[wa] // block_size
        return data(*idx)
    return te.compute(tuple(shape), f, name="depth_to_space", tag=tag.INJECTIVE)
