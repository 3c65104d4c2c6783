"""2-D convolution in NCHW layout: the compute and a CPU schedule.

``conv2d_nchw(data, kernel, stride=1, padding=1)`` with data (N, C, H, W) and
kernel (O, C, KH, KW) gives (N, O, OH, OW); the padded input is its own stage.

The schedule vectorises along the output row (16 or 8 lanes, whichever divides
the row; the vectors of a row are unrolled) and blocks ``OC_BLOCK`` output
channels, so ``OC_BLOCK`` rows of accumulators stay in registers while the
reduction over input channels and the kernel window runs; each step is one
input row load and ``OC_BLOCK`` broadcast FMAs.  Tasks are (batch, channel
block, output row) triples spread over the cores.
"""
from __future__ import annotations

from .. import te
from ..errors import ScheduleError
from .util import const_int

OC_BLOCK = 4


def conv2d_nchw(data, kernel, stride=1, padding=1, name="conv2d"):
    """Convolution of ``data`` (N, C, H, W) with ``kernel`` (O, C, KH, KW), zero padding, no dilation."""
    if len(data.shape) != 4 or len(kernel.shape) != 4:
        raise ScheduleError(f"conv2d_nchw needs 4-D data and kernel, got {tuple(data.shape)} and "
                            f"{tuple(kernel.shape)}")
    n, c, h, w = data.shape
    o, c2, kh, kw = kernel.shape
    if const_int(c) is not None and const_int(c2) is not None and const_int(c) != const_int(c2):
        raise ScheduleError(f"conv2d_nchw: data has {const_int(c)} channels but the kernel expects "
                            f"{const_int(c2)}")
    if not isinstance(stride, int) or stride < 1 or not isinstance(padding, int) or padding < 0:
        raise ScheduleError(f"conv2d_nchw: stride must be an int >= 1 and padding an int >= 0, "
                            f"got {stride!r} and {padding!r}")
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (w + 2 * padding - kw) // stride + 1
    zero = te.const(0, data.dtype)
    if padding:
        pad = te.compute((n, c, h + 2 * padding, w + 2 * padding),
                         lambda b, ch, y, x: te.if_then_else(
                             te.all(y >= padding, y < h + padding, x >= padding, x < w + padding),
                             data[b, ch, y - padding, x - padding], zero), name=name + "_pad")
    else:
        pad = te.compute(data.shape, lambda b, ch, y, x: data[b, ch, y, x], name=name + "_pad")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute((n, o, oh, ow),
                      lambda b, f, y, x: te.sum(pad[b, rc, y * stride + ry, x * stride + rx] * kernel[f, rc, ry, rx],
                                                axis=[rc, ry, rx]),
                      name=name, tag="conv2d_nchw")


def schedule_conv2d_nchw(out, target="llvm", oc_block=OC_BLOCK):
    """Row-vectorised, channel-blocked direct convolution (see the module docstring)."""
    if str(target).split()[0] != "llvm":
        raise ScheduleError(f"schedule_conv2d_nchw has a schedule for target 'llvm', got {target!r}")
    if getattr(out.op, "tag", "") != "conv2d_nchw":
        raise ScheduleError(f"schedule_conv2d_nchw needs the output of topi.conv2d_nchw, got {out.op.name!r}")
    pad = [t for t in out.op.input_tensors if t.op.name.endswith("_pad")][0]
    s = te.create_schedule(out.op)
    pb, pc, py, px = s[pad].op.axis
    s[pad].parallel(s[pad].fuse(pb, pc))
    s[pad].vectorize(px)

    b, f, y, x = s[out].op.axis
    rc, ry, rx = s[out].op.reduce_axis
    o = const_int(out.shape[1])
    if o is not None:
        oc_block = max(1, min(oc_block, o))
    ow = const_int(out.shape[3])
    lanes = next((v for v in (16, 8) if ow is not None and ow % v == 0), 8)
    fo, fi = s[out].split(f, factor=oc_block)
    xo, xi = s[out].split(x, factor=lanes)
    s[out].reorder(b, fo, y, rc, ry, rx, fi, xo, xi)
    s[out].parallel(s[out].fuse(b, fo, y))
    s[out].unroll(ry)
    s[out].unroll(rx)
    s[out].unroll(fi)
    s[out].unroll(xo)
    s[out].vectorize(xi)
    return s
