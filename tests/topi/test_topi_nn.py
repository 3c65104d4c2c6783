"""topi.nn / topi.* computes with the topi.x86 and topi.generic schedules, against numpy on random data.

Shapes include ones the tiles do not divide, broadcasting corner cases and symbolic sizes; outputs are
poisoned with NaN before each call by ``check_build``.  Fused groups (conv2d + bias + relu, dense + relu,
injective chains) are built as one function.
"""
import numpy as np
import pytest

from tvmlab import te, topi
from tvmlab.errors import DSLError, ScheduleError, TVMLabError
from tvmlab.topi import testing as ref
from tvmlab.topi.utils import OperatorError

x86 = topi.x86


def ph(shape, name, dtype="float32"):
    return te.placeholder(shape, name=name, dtype=dtype)


def inj(out):
    return x86.schedule_injective([out])


# ------------------------------------------------------------------ elementwise and broadcasting

@pytest.mark.parametrize("sa,sb", [((4, 1, 5), (3, 1)), ((2, 3), (3,)), ((1,), (37,)), ((5, 1), (1, 6)),
                                   ((3, 40), (3, 40))])
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum", "minimum"])
def test_broadcast_binary(sa, sb, name, check_build):
    A, B = ph(sa, "A"), ph(sb, "B")
    C = getattr(topi, name)(A, B)
    np_fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
             "maximum": np.maximum, "minimum": np.minimum}[name]
    assert C.op.tag == "broadcast"
    check_build(inj(C), [A, B, C], np_fn, ranges={"B": (0.5, 2.0)})


def test_power_and_scalars(check_build):
    A, B = ph((3, 1, 7), "A"), ph((5, 1), "B")
    C = topi.power(A, B)
    check_build(inj(C), [A, B, C], np.power, ranges={"A": (0.5, 2.0)})
    D = topi.subtract(2.0, topi.multiply(A, 3))
    check_build(inj(D), [A, D], lambda a: 2.0 - a * 3)
    assert not isinstance(topi.add(1, 2), te.Tensor)        # two scalars: an expression, as in TVM


def test_integer_divide_truncates(check_build):
    A, B = ph((50,), "A", "int32"), ph((50,), "B", "int32")
    C = topi.divide(A, B)
    D = topi.floor_divide(A, B)
    s = x86.schedule_injective([C, D])
    check_build(s, [A, B, C, D], lambda a, b: [np.trunc(a / b).astype("int32"), a // b],
                ranges={"A": (-20, 20), "B": (1, 6)})


def test_broadcast_symbolic(check_build):
    n = te.var("n")
    A, B = ph((n, 1), "A"), ph((7,), "B")
    C = topi.add(A, B)
    check_build(inj(C), [A, B, C], np.add, env={"n": 45})


@pytest.mark.parametrize("fn,np_fn,rng_", [
    ("exp", np.exp, None), ("sqrt", np.sqrt, (0.1, 4.0)), ("log", np.log, (0.1, 4.0)), ("negative", np.negative, None),
    ("abs", np.abs, None), ("tanh", np.tanh, None), ("sigmoid", lambda a: 1 / (1 + np.exp(-a)), None)])
def test_unary(fn, np_fn, rng_, check_build):
    A = ph((5, 33), "A")
    B = getattr(topi, fn)(A)
    assert B.op.tag == "elemwise"
    check_build(inj(B), [A, B], np_fn, ranges={"A": rng_} if rng_ else None)


def test_clip_and_cast(check_build):
    A = ph((70,), "A")
    B = topi.cast(topi.clip(A, -0.5, 0.25), "float64")
    check_build(inj(B), [A, B], lambda a: np.clip(a, -0.5, 0.25).astype("float64"))


def test_activations(check_build):
    A = ph((2, 3, 17), "A")
    slope = ph((3,), "slope")
    outs = [topi.nn.relu(A), topi.nn.leaky_relu(A, 0.1), topi.nn.elu(A, 0.7), topi.nn.selu(A),
            topi.nn.softplus(A), topi.nn.prelu(A, slope, axis=1)]
    s = x86.schedule_injective(outs)

    def want(a, sl):
        al, g = 1.6732632423543772, 1.0507009873554805
        return [np.maximum(a, 0), np.where(a > 0, a, 0.1 * a), np.where(a > 0, a, 0.7 * (np.exp(a) - 1)),
                g * np.where(a > 0, a, al * (np.exp(a) - 1)), np.log1p(np.exp(a)),
                np.where(a > 0, a, sl[None, :, None] * a)]
    check_build(s, [A, slope, *outs], want, ranges={"A": (-30, 30)})


# ------------------------------------------------------------------ data movement

def test_shape_ops(check_build):
    A = ph((2, 3, 4), "A")
    outs = [topi.reshape(A, (4, -1)), topi.transpose(A, (2, 0, 1)), topi.transpose(A),
            topi.expand_dims(A, -1, 2), topi.squeeze(topi.expand_dims(A, 1)), topi.nn.flatten(A),
            topi.tile(A, (2, 1, 3)), topi.tile(A, (2, 1, 1, 2)), topi.repeat(A, 2, 1)]
    want = lambda a: [a.reshape(4, -1), a.transpose(2, 0, 1), a.transpose(), a[..., None, None], a,  # noqa: E731
                      a.reshape(2, -1), np.tile(a, (2, 1, 3)), np.tile(a, (2, 1, 1, 2)), np.repeat(a, 2, 1)]
    check_build(x86.schedule_injective(outs), [A, *outs], want)


def test_concatenate_split_stack(check_build):
    A, B, C = ph((2, 3, 5), "A"), ph((2, 1, 5), "B"), ph((2, 4, 5), "C")
    cat = topi.concatenate([A, B, C], axis=1)
    parts = topi.split(cat, [2, 5], axis=1)
    halves = topi.split(A, 5, axis=-1)
    st = topi.stack([A, A], axis=0)
    outs = [cat, *parts, halves[3], st]
    want = lambda a, b, c: [np.concatenate([a, b, c], 1), *np.split(np.concatenate([a, b, c], 1), [2, 5], 1),  # noqa
                            np.split(a, 5, -1)[3], np.stack([a, a])]
    check_build(x86.schedule_injective(outs), [A, B, C, *outs], want)


@pytest.mark.parametrize("begin,end,strides", [([1, 0], [3, 7], None), ([-2, 1], [10, -1], [1, 2]),
                                               ([3, 6], [0, 0], [-1, -3]), ([0], [2], None)])
def test_strided_slice(begin, end, strides, check_build):
    A = ph((4, 9), "A")
    B = topi.strided_slice(A, begin, end, strides)
    sl = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides or [1] * len(begin)))
    check_build(inj(B), [A, B], lambda a: a[sl])


def test_take_and_gather(check_build):
    A = ph((5, 6), "A")
    idx = ph((2, 3), "idx", "int32")
    outs = [topi.take(A, idx, axis=1), topi.take(A, idx, axis=0, mode="wrap"), topi.take(A, idx),
            topi.take(A, [4, -1, 0], axis=0, mode="wrap"), topi.gather(A, 1, topi.cast(topi.take(A, idx), "int32"))]
    s = x86.schedule_injective(outs)

    def want(a, i):
        flat = a.ravel()[np.clip(i, 0, a.size - 1)]
        g_idx = flat.astype("int32")
        return [a[:, np.clip(i, 0, 5)], a[i % 5], flat, a[[4, -1, 0]], np.take_along_axis(a[:2], g_idx % 6, 1)]
    check_build(s, [A, idx, *outs], want, ranges={"idx": (-7, 9), "A": (-9, 9)})


def test_pad_where(check_build):
    A = ph((3, 4), "A")
    P = topi.nn.pad(A, (1, 0), (2, 3), pad_value=-1.5)
    W = topi.where(topi.greater(A, 0.0), A, topi.negative(A))
    assert P.op.tag.startswith("injective")
    check_build(x86.schedule_injective([P, W]), [A, P, W],
                lambda a: [np.pad(a, ((1, 2), (0, 3)), constant_values=-1.5), np.abs(a)])


@pytest.mark.parametrize("c,block", [(16, 8), (12, 8), (5, 4)])
def test_layout_transform(c, block, check_build):
    A = ph((2, c, 3, 5), "A")
    B = topi.layout_transform(A, "NCHW", f"NCHW{block}c")
    C = topi.layout_transform(B, f"NCHW{block}c", "NCHW")
    D = topi.layout_transform(B, f"NCHW{block}c", f"NCHW{block // 2}c")
    want = lambda a: [ref.layout_transform_python(a, "NCHW", f"NCHW{block}c"),  # noqa: E731
                      ref.layout_transform_python(ref.layout_transform_python(a, "NCHW", f"NCHW{block}c"),
                                                  f"NCHW{block}c", "NCHW"),
                      ref.layout_transform_python(ref.layout_transform_python(
                          ref.layout_transform_python(a, "NCHW", f"NCHW{block}c"), f"NCHW{block}c", "NCHW"),
                          "NCHW", f"NCHW{block // 2}c")]
    check_build(x86.schedule_injective([B, C, D]), [A, B, C, D], want)


def test_injective_chain_fused(check_build):
    A, b = ph((4, 6), "A"), ph((6,), "b")
    out = topi.nn.relu(topi.add(topi.transpose(topi.reshape(A, (6, 4)), (1, 0)), b))
    s = x86.schedule_injective([out])
    assert sum(1 for st in s.stages if st.attach_type == "inline") == 3
    check_build(s, [A, b, out], lambda a, bb: np.maximum(a.reshape(6, 4).T + bb, 0))


# ------------------------------------------------------------------ reductions

@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 2), False), (-1, False)])
def test_reductions(axis, keepdims, check_build):
    A = ph((3, 5, 19), "A")
    outs = [topi.sum(A, axis, keepdims), topi.mean(A, axis, keepdims), topi.max(A, axis, keepdims),
            topi.min(A, axis, keepdims)]
    s = x86.schedule_reduce(outs[:1])
    check_build(s, [A, outs[0]], lambda a: np.sum(a, axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-5)
    for o, f in zip(outs[1:], (np.mean, np.max, np.min)):
        check_build(x86.schedule_reduce([o]), [A, o], lambda a, f=f: f(a, axis=axis, keepdims=keepdims),
                    rtol=1e-5, atol=1e-5)


def test_row_sums_long_rows(check_build):
    n = te.var("n")
    A = ph((n, 2, 203), "A")                      # rows long enough for partial sums in vector lanes
    for keepdims in (False, True):
        S = topi.sum(A, axis=-1, keepdims=keepdims)
        check_build(x86.schedule_reduce([S]), [A, S], lambda a: a.sum(-1, keepdims=keepdims), env={"n": 3},
                    rtol=1e-5, atol=1e-5)


def test_argmax_symbolic_sum(check_build):
    n = te.var("n")
    A = ph((n, 13), "A")
    am = topi.argmax(A, axis=1)
    sm = topi.sum(A, axis=1, keepdims=True)
    check_build(x86.schedule_reduce([am]), [A, am], lambda a: np.argmax(a, 1).astype("int32"), env={"n": 7})
    check_build(x86.schedule_reduce([sm]), [A, sm], lambda a: a.sum(1, keepdims=True), env={"n": 9},
                rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ convolutions

CONV_CASES = [  # (n, c, h, w), (o, kh, kw), stride, padding, dilation, groups
    ((1, 3, 13, 11), (20, 3, 3), 1, 1, 1, 1),
    ((2, 8, 9, 10), (17, 3, 1), (2, 1), (1, 0, 2, 1), (1, 2), 1),
    ((1, 16, 8, 8), (32, 1, 1), 1, 0, 1, 1),
    ((1, 6, 11, 7), (9, 3, 3), 2, (1, 1), 1, 3),
    ((1, 8, 14, 14), (16, 5, 5), 2, 2, 2, 1),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv2d_nchw(case, check_build):
    (n, c, h, w), (o, kh, kw), stride, padding, dilation, groups = case
    X, W = ph((n, c, h, w), "X"), ph((o, c // groups, kh, kw), "W")
    if groups == 1:
        out = topi.nn.conv2d_nchw(X, W, stride, padding, dilation)
        assert out.op.tag == "conv2d_nchw"
    else:
        out = topi.nn.group_conv2d_nchw(X, W, stride, padding, dilation, groups)
    s = x86.schedule_conv2d_nchw([out])
    check_build(s, [X, W, out], lambda x, k: ref.conv2d_nchw_python(x, k, stride, padding, groups, dilation),
                rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("seed", range(4))
def test_conv2d_random_configurations(seed, check_build):
    r = np.random.default_rng(seed)
    groups = int(r.choice([1, 2, 3]))
    c, o = groups * int(r.integers(1, 4)), groups * int(r.integers(1, 7))
    kh, kw = int(r.integers(1, 4)), int(r.integers(1, 4))
    stride = (int(r.integers(1, 3)), int(r.integers(1, 3)))
    dilation = (int(r.integers(1, 3)), int(r.integers(1, 3)))
    padding = tuple(int(v) for v in r.integers(0, 3, size=4))
    h, w = int(r.integers(kh * 2, 12)), int(r.integers(kw * 2, 12))
    X, W, b = ph((int(r.integers(1, 3)), c, h, w), "X"), ph((o, c // groups, kh, kw), "W"), ph((o,), "b")
    out = topi.nn.leaky_relu(topi.nn.bias_add(topi.nn.group_conv2d_nchw(X, W, stride, padding, dilation, groups), b),
                             0.2)
    check_build(x86.schedule_group_conv2d_nchw([out]), [X, W, b, out],
                lambda x, k, bb: (lambda y: np.where(y > 0, y, 0.2 * y))(
                    ref.conv2d_nchw_python(x, k, stride, padding, groups, dilation) + bb[None, :, None, None]),
                rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mult,stride", [(1, 1), (1, 2), (2, 1)])
def test_depthwise_conv2d(mult, stride, check_build):
    X, W = ph((1, 21, 10, 9), "X"), ph((21, mult, 3, 3), "W")
    out = topi.nn.depthwise_conv2d_nchw(X, W, stride, 1, 1)
    assert out.op.tag == "depthwise_conv2d_nchw"
    check_build(x86.schedule_depthwise_conv2d_nchw([out]), [X, W, out],
                lambda x, k: ref.depthwise_conv2d_nchw_python(x, k, stride, 1, 1), rtol=1e-4, atol=1e-4)


def test_depthwise_direct_fused(check_build):
    X, W, b = ph((1, 8, 9, 40), "X"), ph((8, 1, 3, 3), "W"), ph((8,), "b")
    conv = topi.nn.depthwise_conv2d_nchw(X, W, 1, (1, 2, 0, 1), (2, 1))
    assert conv.op.attrs["direct"]                   # unit stride, rows of 40: computed in NCHW
    out = topi.nn.relu(topi.nn.bias_add(conv, b))
    for o in (conv, out):
        check_build(x86.schedule_depthwise_conv2d_nchw([o]), [X, W, b, o] if o is out else [X, W, o],
                    (lambda x, k, bb: np.maximum(ref.depthwise_conv2d_nchw_python(x, k, 1, (1, 2, 0, 1), (2, 1)) +
                                                 bb[None, :, None, None], 0)) if o is out else
                    (lambda x, k: ref.depthwise_conv2d_nchw_python(x, k, 1, (1, 2, 0, 1), (2, 1))),
                    rtol=1e-4, atol=1e-4)


def test_conv2d_bias_relu_fused(check_build):
    X, W, b = ph((1, 5, 12, 9), "X"), ph((19, 5, 3, 3), "W"), ph((19,), "b")
    conv = topi.nn.conv2d_nchw(X, W, 1, 1, 1)
    out = topi.nn.relu(topi.add(conv, topi.expand_dims(b, 1, 2)))
    s = x86.schedule_conv2d_nchw([out])
    assert s[conv].attach_type == "inline"           # one loop nest: tiles go through bias and relu
    check_build(s, [X, W, b, out], lambda x, k, bb: np.maximum(ref.conv2d_nchw_python(x, k, 1, 1) +
                                                                bb[None, :, None, None], 0), rtol=1e-4, atol=1e-4)


def test_conv2d_residual_block_fused(check_build):
    X, W, b, S = ph((1, 6, 8, 8), "X"), ph((6, 6, 3, 3), "W"), ph((6,), "b"), ph((1, 6, 8, 8), "S")
    out = topi.nn.relu(topi.add(topi.nn.bias_add(topi.nn.conv2d(X, W, 1, 1, 1), b), S))
    s = x86.schedule_conv2d_nchw([out])
    check_build(s, [X, W, b, S, out], lambda x, k, bb, sc: np.maximum(
        ref.conv2d_nchw_python(x, k, 1, 1) + bb[None, :, None, None] + sc, 0), rtol=1e-4, atol=1e-4)
    F = topi.full((2, 3), "float32", 1.5)
    G = topi.add(topi.full_like(S, -2.0), S)
    check_build(x86.schedule_injective([F, G]), [S, F, G], lambda sc: [np.full((2, 3), 1.5, "float32"), sc - 2.0])
    with pytest.raises(OperatorError, match="layout 'NHWC' is not supported"):
        topi.nn.conv2d(X, W, 1, 1, 1, layout="NHWC")


def test_group_with_two_outputs(check_build):
    X, W, b = ph((1, 3, 7, 6), "X"), ph((5, 3, 3, 3), "W"), ph((5,), "b")
    biased = topi.nn.bias_add(topi.nn.conv2d_nchw(X, W, 1, 1, 1), b)
    out = topi.nn.relu(biased)
    d = topi.nn.relu(topi.nn.dense(topi.nn.flatten(X), ph((4, 126), "D")))
    want = lambda x, k, bb: (lambda y: [np.maximum(y, 0), y])(ref.conv2d_nchw_python(x, k, 1, 1) +  # noqa: E731
                                                               bb[None, :, None, None])
    check_build(x86.schedule_conv2d_nchw([out, biased]), [X, W, b, out, biased], want, rtol=1e-4, atol=1e-4)
    dd = d.op.input_tensors[0]
    check_build(x86.schedule_dense([d, dd]), [X, dd.op.input_tensors[1], d, dd],
                lambda x, w: [np.maximum(x.reshape(1, -1) @ w.T, 0), x.reshape(1, -1) @ w.T], rtol=1e-4, atol=1e-4)


def test_conv2d_batch_norm_generic(check_build):
    X, W = ph((1, 4, 7, 7), "X"), ph((6, 4, 3, 3), "W")
    g, be, m, v = (ph((6,), nm) for nm in ("g", "be", "m", "v"))
    out = topi.nn.batch_norm(topi.nn.conv2d_nchw(X, W, 1, 1, 1), g, be, m, v)[0]
    want = lambda x, k, g_, b_, m_, v_: ref.batch_norm_python(ref.conv2d_nchw_python(x, k, 1, 1), g_, b_, m_, v_)  # noqa
    check_build(topi.generic.schedule_conv2d_nchw([out]), [X, W, g, be, m, v, out], want,
                ranges={"v": (0.5, 2.0)}, rtol=1e-4, atol=1e-4)
    check_build(x86.schedule_conv2d_nchw([out]), [X, W, g, be, m, v, out], want,
                ranges={"v": (0.5, 2.0)}, rtol=1e-4, atol=1e-4)


def test_conv2d_NCHWc(check_build):
    X, W, b = ph((1, 2, 9, 8, 8), "X"), ph((3, 2, 3, 3, 8, 16), "W"), ph((1, 3, 1, 1, 16), "b")
    conv = topi.nn.conv2d_NCHWc(X, W, 1, 1, 1, "NCHW8c", "NCHW16c")
    out = topi.nn.relu(topi.add(conv, b))

    def conv_ref(x, k):
        xn = ref.layout_transform_python(x, "NCHW8c", "NCHW")
        kn = k.transpose(0, 5, 1, 4, 2, 3).reshape(48, 16, 3, 3)
        return ref.layout_transform_python(ref.conv2d_nchw_python(xn, kn, 1, 1), "NCHW", "NCHW16c")
    s = x86.schedule_conv2d_NCHWc([out])
    from tvmlab import lower
    text = str(lower(s, [X, W, b, out], simple_mode=True))
    assert "for rx" in text and "for rci" not in text, text     # the 8 input lanes unrolled (UNROLL_LANES)
    check_build(s, [X, W, b, out], lambda x, k, bb: np.maximum(conv_ref(x, k) + bb, 0), rtol=1e-4, atol=1e-4)
    check_build(x86.schedule_conv2d_NCHWc([conv]), [X, W, conv], conv_ref, rtol=1e-4, atol=1e-4)


def _nchwc_bias_relu_reference(ib, c, k, stride, pad):
    """numpy's relu(conv2d_NCHWc + b) for data in NCHW{ib}c, a kernel (O/16, C/ib, k, k, ib, 16), output NCHW16c."""
    def reference(x, w, bb):
        xn = ref.layout_transform_python(x, f"NCHW{ib}c", "NCHW")
        kn = w.transpose(0, 5, 1, 4, 2, 3).reshape(-1, c, k, k)
        y = ref.layout_transform_python(ref.conv2d_nchw_python(xn, kn, stride, pad), "NCHW", "NCHW16c")
        return np.maximum(y + bb, 0)
    return reference


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_NCHWc_1x1_unrolls_its_input_lanes(stride, check_build, monkeypatch):
    # a 1x1 kernel's 16 input lanes unrolled (UNROLL_LANES); 11 columns leave a guarded last register tile
    from tvmlab import lower
    from tvmlab.topi.x86 import conv2d as x86conv
    X, W, b = ph((1, 3, 7, 11, 16), "X"), ph((2, 3, 1, 1, 16, 16), "W"), ph((1, 2, 1, 1, 16), "b")
    conv = topi.nn.conv2d_NCHWc(X, W, stride, 0, 1, "NCHW16c", "NCHW16c")
    out = topi.nn.relu(topi.add(conv, b))
    s = x86.schedule_conv2d_NCHWc([out])
    assert "for rci" not in str(lower(s, [X, W, b, out], simple_mode=True))
    monkeypatch.setattr(x86conv, "UNROLL_LANES", False)
    assert "for rci" in str(lower(x86.schedule_conv2d_NCHWc([out]), [X, W, b, out], simple_mode=True))
    check_build(s, [X, W, b, out], _nchwc_bias_relu_reference(16, 48, 1, stride, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size, stride, where", [(9, 1, "task"), (98, 2, "rows")])
def test_conv2d_NCHWc_padded_input_per_task_or_by_rows(size, stride, where, check_build):
    # a small padded input is made inside each (channel block, row) task; a large one (>= 256 KB) and the
    # layout transform feeding it are passes of their own, split by rows over the threads
    from tvmlab.topi.x86 import conv2d as x86conv
    C = 16 if where == "task" else 8
    X, W, b = ph((1, C, size, size), "X"), ph((2, 1, 3, 3, C, 16), "W"), ph((1, 2, 1, 1, 16), "b")
    xc = topi.layout_transform(X, "NCHW", f"NCHW{C}c") if where == "rows" else None
    data = xc if xc is not None else ph((1, 1, size, size, C), "X")
    conv = topi.nn.conv2d_NCHWc(data, W, stride, 1, 1, f"NCHW{C}c", "NCHW16c")
    out = topi.nn.relu(topi.add(conv, b))
    pad = conv.op.input_tensors[0]
    assert (x86conv._bytes(pad) >= x86conv.PARALLEL_PAD_BYTES) == (where == "rows")
    s = x86.schedule_conv2d_NCHWc([out])
    args = [X if xc is not None else data, W, b, out]
    from tvmlab import lower
    text = str(lower(s, args, simple_mode=True))
    loops = [ln.strip() for ln in text.splitlines() if "T.parallel" in ln]
    if where == "task":                     # one parallel loop: the padding is made inside it
        assert len(loops) == 1, loops
    else:                                   # transform and padding by rows (those the tasks read), then tasks
        rows = ((size - 1) // stride) * stride + 3
        assert len(loops) == 3 and f"T.parallel({size})" in loops[0] and f"T.parallel({rows})" in loops[1], loops

    def reference(x, k, bb):
        xn = x if xc is not None else ref.layout_transform_python(x, f"NCHW{C}c", "NCHW")
        kn = k.transpose(0, 5, 1, 4, 2, 3).reshape(32, C, 3, 3)
        y = ref.layout_transform_python(ref.conv2d_nchw_python(xn, kn, stride, 1), "NCHW", "NCHW16c")
        return np.maximum(y + bb, 0)
    check_build(s, args, reference, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size,stride", [(14, 2), (9, 1)])
def test_conv2d_NCHWc_streamed_kernel(size, stride, check_build, monkeypatch):
    # a kernel slice per output block of STREAM_WINDOW_BYTES (3x3 stride 2) or STREAM_KERNEL_BYTES (stride 1) or
    # more: tasks of STREAM_ROWS rows (7 and 9 rows leave a short last task), the input-channel blocks outermost,
    # partial sums in a buffer per task
    from tvmlab.topi.x86 import conv2d as x86conv
    X, W, b = ph((1, 3, size, size, 8), "X"), ph((2, 3, 3, 3, 8, 16), "W"), ph((1, 2, 1, 1, 16), "b")
    conv = topi.nn.conv2d_NCHWc(X, W, stride, 1, 1, "NCHW8c", "NCHW16c")
    out = topi.nn.relu(topi.add(conv, b))
    slice_bytes = 3 * 3 * 3 * 8 * 16 * 4
    assert x86conv._kernel_slice_bytes(conv.op) == slice_bytes
    from tvmlab import lower
    plain = str(lower(x86.schedule_conv2d_NCHWc([out]), [X, W, b, out], simple_mode=True))
    monkeypatch.setattr(x86conv, "STREAM_WINDOW_BYTES" if stride > 1 else "STREAM_KERNEL_BYTES", slice_bytes)
    s = x86.schedule_conv2d_NCHWc([out])
    text = str(lower(s, [X, W, b, out], simple_mode=True))
    oh = (size - 1) // stride + 1
    tasks = 2 * -(-oh // x86conv.STREAM_ROWS)
    assert f"T.parallel({tasks})" in text and f"T.parallel({tasks})" not in plain, text
    assert text.index("for rco") < text.index("for ry"), text      # channel blocks outside the rows
    check_build(s, [X, W, b, out], _nchwc_bias_relu_reference(8, 24, 3, stride, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k, stride", [(1, 2), (1, 1), (3, 2)])
def test_conv2d_NCHWc_strided_1x1_tasks_go_row_by_row(k, stride, check_build):
    # a 1x1 kernel with a stride: tasks (batch, row, channel block), each input row read for all output blocks
    # together; other kernels keep (batch, channel block, row).  9 x 9 inputs: a guarded last register tile
    import tvmlab
    from tvmlab import lower
    X, W, b = ph((1, 2, 9, 9, 16), "X"), ph((4, 2, k, k, 16, 16), "W"), ph((1, 4, 1, 1, 16), "b")
    conv = topi.nn.conv2d_NCHWc(X, W, stride, k // 2, 1, "NCHW16c", "NCHW16c")
    out = topi.nn.relu(topi.add(conv, b))
    with tvmlab.target.Target("llvm -mcpu=haswell"):
        s = x86.schedule_conv2d_NCHWc([out])
    text = str(lower(s, [X, W, b, out], simple_mode=True))
    task = "i0.i2.fused.i1.fused" if (k, stride) == (1, 2) else "i0.i1.fused.i2.fused"
    assert f"for {task} in T.parallel" in text, text
    check_build(s, [X, W, b, out], _nchwc_bias_relu_reference(16, 32, k, stride, k // 2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k", [3, 1])
def test_conv2d_NCHWc_streams_windowed_kernels_sooner(k, check_build, monkeypatch):
    # a strided kernel with a window streams from STREAM_WINDOW_BYTES a slice; a 1x1 kernel of that slice does
    # not (its sums would pass through the task's buffer every 16 reduction steps), only from STREAM_KERNEL_BYTES
    from tvmlab import lower
    from tvmlab.topi.x86 import conv2d as x86conv
    X, W, b = ph((1, 3, 14, 14, 8), "X"), ph((2, 3, k, k, 8, 16), "W"), ph((1, 2, 1, 1, 16), "b")
    conv = topi.nn.conv2d_NCHWc(X, W, 2, k // 2, 1, "NCHW8c", "NCHW16c")
    out = topi.nn.relu(topi.add(conv, b))
    monkeypatch.setattr(x86conv, "STREAM_WINDOW_BYTES", x86conv._kernel_slice_bytes(conv.op))
    s = x86.schedule_conv2d_NCHWc([out])
    text = str(lower(s, [X, W, b, out], simple_mode=True))
    tasks = 2 * -(-7 // x86conv.STREAM_ROWS)
    assert (f"T.parallel({tasks})" in text) == (k == 3), text
    monkeypatch.setattr(x86conv, "STREAM_KERNEL_BYTES", x86conv._kernel_slice_bytes(conv.op))
    assert f"T.parallel({tasks})" in str(lower(x86.schedule_conv2d_NCHWc([out]), [X, W, b, out], simple_mode=True))
    check_build(s, [X, W, b, out], _nchwc_bias_relu_reference(8, 24, k, 2, k // 2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k, stride, size, blocks", [(1, 1, 7, 2), (3, 2, 14, 2), (3, 1, 7, 2), (3, 1, 7, 24)])
def test_conv2d_NCHWc_flat_tiles_over_short_rows(k, stride, size, blocks, check_build, monkeypatch):
    # 7-wide output rows (ResNet-50's last stage): a task per channel block cuts its register tiles from all 49
    # pixels (tiles of 5 on AVX2) instead of from each row (4 + 3: the 3-wide tile has too few sums in flight);
    # the padded input is made inside the task unless the task's rows of it are too large (24 channel blocks)
    import tvmlab
    from tvmlab import lower
    from tvmlab.topi.x86 import conv2d as x86conv
    X, W = ph((1, blocks, size, size, 16), "X"), ph((16, blocks, k, k, 16, 16), "W")
    b = ph((1, 16, 1, 1, 16), "b")
    conv = topi.nn.conv2d_NCHWc(X, W, stride, k // 2, 1, "NCHW16c", "NCHW16c")
    out = topi.nn.relu(topi.add(conv, b))
    window, kernel = x86conv.STREAM_WINDOW_BYTES, 216 * 1024
    monkeypatch.setattr(x86conv, "STREAM_KERNEL_BYTES", kernel)
    with tvmlab.target.Target("llvm -mcpu=haswell"):
        s = x86.schedule_conv2d_NCHWc([out])
        monkeypatch.setattr(x86conv, "FLAT_TILES", False)
        monkeypatch.setattr(x86conv, "STREAM_WINDOW_BYTES", 1 << 40)
        monkeypatch.setattr(x86conv, "STREAM_KERNEL_BYTES", 1 << 40)
        by_rows = str(lower(x86.schedule_conv2d_NCHWc([out]), [X, W, b, out], simple_mode=True))
    text = str(lower(s, [X, W, b, out], simple_mode=True))
    loops = [ln.strip() for ln in text.splitlines() if "T.parallel" in ln]
    assert "y.x.fused" in text and "y.x.fused" not in by_rows, text
    assert loops[-1].endswith("T.parallel(16):") and "T.parallel(112)" in by_rows, loops
    assert len(loops) == (2 if blocks == 24 else 1), loops     # the padding: a pass of its own, or in the task
    # a kernel slice of STREAM_WINDOW_BYTES (3x3 stride 2) or STREAM_KERNEL_BYTES (3x3 stride 1: 24 blocks, 216
    # KB, made that bound here) or more: the input blocks outside the tiles
    bound = window if stride > 1 else kernel
    streams = k == 3 and x86conv._kernel_slice_bytes(conv.op) >= bound
    assert streams == (blocks == 24)
    assert (text.index("for rco") < text.index("for y.x.fused.outer in")) == streams, text
    check_build(s, [X, W, b, out], _nchwc_bias_relu_reference(16, 16 * blocks, k, stride, k // 2),
                rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride,padding,opad", [(2, 1, 1), (1, 0, 0), ((3, 2), (1, 0, 2, 1), (2, 0))])
def test_conv2d_transpose(stride, padding, opad, check_build):
    X, W = ph((1, 3, 5, 4), "X"), ph((3, 7, 3, 3), "W")
    out = topi.nn.conv2d_transpose_nchw(X, W, stride, padding, output_padding=opad)
    check_build(x86.schedule_conv2d_transpose_nchw([out]), [X, W, out],
                lambda x, k: ref.conv2d_transpose_nchw_python(x, k, stride, padding, opad), rtol=1e-4, atol=1e-4)


def test_symbolic_batch_and_int8(check_build):
    n = te.var("n")
    X, W = ph((n, 3, 9, 8), "X"), ph((5, 3, 3, 3), "W")
    out = topi.nn.relu(topi.nn.conv2d_nchw(X, W, 1, 1, 1))
    check_build(x86.schedule_conv2d_nchw([out]), [X, W, out],
                lambda x, w: np.maximum(ref.conv2d_nchw_python(x, w, 1, 1), 0), env={"n": 2}, rtol=1e-4, atol=1e-4)
    pool = topi.nn.pool2d(X, 3, 2, 1, 1, "max")
    check_build(x86.schedule_pool([pool]), [X, pool], lambda x: ref.pool2d_python(x, 3, 2, 1, 1, "max"), env={"n": 3})
    X8, W8 = ph((1, 4, 6, 6), "X8", "int8"), ph((6, 4, 3, 3), "W8", "int8")
    o8 = topi.nn.conv2d_nchw(X8, W8, 1, 0, 1, out_dtype="int32")
    check_build(x86.schedule_conv2d_nchw([o8]), [X8, W8, o8],
                lambda x, w: ref.conv2d_nchw_python(x.astype("int32"), w.astype("int32"), 1, 0),
                ranges={"X8": (-9, 9), "W8": (-9, 9)})
    m = te.var("m")
    A, B = ph((m, 20), "A"), ph((30, 20), "B")
    d = topi.nn.relu(topi.nn.dense(A, B))
    check_build(x86.schedule_dense([d]), [A, B, d], lambda a, b: np.maximum(a @ b.T, 0), env={"m": 37},
                rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ dense and matrix products

@pytest.mark.parametrize("m,k,n", [(1, 37, 21), (4, 64, 100), (33, 19, 45)])
def test_dense_bias_relu(m, k, n, check_build):
    X, W, b = ph((m, k), "X"), ph((n, k), "W"), ph((n,), "b")
    plain = topi.nn.dense(X, W)
    fused = topi.nn.relu(topi.nn.dense(X, W, b))
    check_build(x86.schedule_dense([plain]), [X, W, plain], lambda x, w: x @ w.T, rtol=1e-4, atol=1e-4)
    check_build(x86.schedule_dense([fused]), [X, W, b, fused], lambda x, w, bb: np.maximum(x @ w.T + bb, 0),
                rtol=1e-4, atol=1e-4)


def test_dense_pack_from_layout_transform(check_build):
    X, W, b = ph((20, 24), "X"), ph((37, 24), "W"), ph((37,), "b")
    packed = topi.layout_transform(W, "NK", "NK16n")            # done once for a constant weight
    assert tuple(packed.shape) == (3, 24, 16)
    out = topi.nn.relu(topi.nn.dense_pack(X, packed, b, units=37))
    check_build(x86.schedule_dense([out]), [X, W, b, out], lambda x, w, bb: np.maximum(x @ w.T + bb, 0),
                rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n", [(1, 1000), (2, 400), (1, 1024), (3, 1030)])
def test_dense_pack_with_few_rows_tiles_several_panels(m, n, check_build):
    """A batch-1 classifier: a register tile of all the rows is several W panels wide (independent sums, more
    streams of W); the last tile, past the packed panels, neither reads beyond them nor leaves a gather."""
    import re

    import tvmlab
    X, W, b = ph((m, 176), "X"), ph((n, 176), "W"), ph((n,), "b")     # enough work for a parallel loop
    with tvmlab.target.Target("llvm -mcpu=haswell"):           # AVX2: 16-wide panels, 6-row register tiles
        packed = topi.layout_transform(W, "NK", "NK16n")
        out = topi.nn.relu(topi.nn.dense_pack(X, packed, b, units=n))
        s = x86.schedule_dense([out])
    wide = min(4, 6 // m) * 16                                 # panels side by side, at most 12 sums
    assert re.findall(r"T\.parallel\((\d+)\)", str(tvmlab.lower(s, [X, W, b, out]))) == [str(-(-n // wide))]
    mod, _ = check_build(s, [X, W, b, out], lambda x, w, bb: np.maximum(x @ w.T + bb, 0), rtol=1e-4, atol=1e-4)
    assert "masked.gather" not in mod.get_source("ll")


def test_conv2d_NCHWc_from_layout_transforms(check_build):
    X, W = ph((1, 12, 6, 7), "X"), ph((20, 12, 3, 3), "W")
    ic, oc = x86.nchwc_blocks(12, 20, target="llvm -mcpu=haswell")
    assert (ic, oc) == (12, 10)                                  # largest divisors within 16 float32 lanes
    xc = topi.layout_transform(X, "NCHW", f"NCHW{ic}c")
    wc = topi.layout_transform(W, "OIHW", f"OIHW{ic}i{oc}o")
    conv = topi.nn.conv2d_NCHWc(xc, wc, 1, 1, 1, f"NCHW{ic}c", f"NCHW{oc}c")
    out = topi.layout_transform(conv, f"NCHW{oc}c", "NCHW")
    s = x86.schedule_conv2d_NCHWc([conv])
    check_build(s, [X, W, conv], lambda x, k: ref.layout_transform_python(ref.conv2d_nchw_python(x, k, 1, 1),
                                                                          "NCHW", f"NCHW{oc}c"), rtol=1e-4, atol=1e-4)
    check_build(topi.generic.schedule_conv2d_NCHWc([out]), [X, W, out], lambda x, k: ref.conv2d_nchw_python(x, k, 1, 1),
                rtol=1e-4, atol=1e-4)


def test_matmul_batch_matmul(check_build):
    A, B = ph((7, 5), "A"), ph((9, 5), "B")
    mm = topi.nn.matmul(A, B, transpose_b=True)
    mt = topi.nn.matmul(topi.transpose(A), topi.transpose(B, (1, 0)), transpose_a=True)
    check_build(x86.schedule_dense([mm]), [A, B, mm], lambda a, b: a @ b.T, rtol=1e-5, atol=1e-5)
    check_build(x86.schedule_matmul([mt]), [A, B, mt], lambda a, b: a @ b.T, rtol=1e-5, atol=1e-5)
    X, Y = ph((3, 4, 6), "X"), ph((1, 5, 6), "Y")
    bm = topi.nn.batch_matmul(X, Y)
    check_build(x86.schedule_batch_matmul([bm]), [X, Y, bm], lambda x, y: x @ y.transpose(0, 2, 1),
                rtol=1e-5, atol=1e-5)
    P, Q = ph((2, 40, 13), "P"), ph((1, 37, 40), "Q")          # columns the panels do not divide, a shared B
    pq = topi.nn.batch_matmul(P, Q, transpose_a=True)
    check_build(x86.schedule_batch_matmul([pq]), [P, Q, pq], lambda p, q: p.transpose(0, 2, 1) @ q[0].T,
                rtol=1e-4, atol=1e-4)
    Z = ph((3, 6, 5), "Z")
    bn = topi.nn.relu(topi.nn.batch_matmul(X, Z, transpose_b=False))
    check_build(x86.schedule_batch_matmul([bn]), [X, Z, bn], lambda x, z: np.maximum(x @ z, 0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ pooling, softmax, normalisation

POOL_CASES = [((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, True),
              ((3, 3), (2, 2), (1, 1), (0, 0, 0, 0), True, True),
              ((2, 3), (2, 2), (1, 1), (1, 0, 1, 1), True, False),
              ((3, 3), (1, 1), (2, 2), (2, 2, 2, 2), False, False),
              ((2, 2), (2, 2), (1, 1), 0, False, True)]


@pytest.mark.parametrize("case", POOL_CASES, ids=[str(i) for i in range(len(POOL_CASES))])
@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool2d(case, pool_type, check_build):
    kernel, stride, dilation, padding, ceil_mode, cip = case
    X = ph((1, 3, 11, 10), "X")
    out = topi.nn.pool2d(X, kernel, stride, dilation, padding, pool_type, ceil_mode, "NCHW", cip)
    s = x86.schedule_pool([out], "NCHW")
    pads = [st.attach_type for st in s.stages if st.op.name == "T_pool_pad"]
    assert pads in ([], ["scope"])          # a padded copy is made row by row, inside the output's loop
    check_build(s, [X, out],
                lambda x: ref.pool2d_python(x, kernel, stride, dilation, padding, pool_type, ceil_mode, cip),
                rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout,width", [("NCHW16c", 37), ("NHWC", 37), ("NCHW16c", 1100)])
@pytest.mark.parametrize("case", POOL_CASES[:4], ids=[str(i) for i in range(4)])
def test_max_pool_channels_last_pads_rows_in_its_tasks(layout, width, case, check_build):
    """Max pooling with the channels last (the NCHWc layout of a CNN's first pool): a task per output row
    makes the padded rows it reads; rows too wide for that (1100 columns) get a parallel padding pass."""
    kernel, stride, dilation, padding, ceil_mode, _ = case
    shape = (1, 2, 20, width, 16) if layout == "NCHW16c" else (1, 20, width, 32)
    X = ph(shape, "X")
    out = topi.multiply(topi.nn.pool2d(X, kernel, stride, dilation, padding, "max", ceil_mode, layout), 2.0)
    s = x86.schedule_pool([out], layout)
    pads = [st.attach_type for st in s.stages if st.op.name == "T_pool_pad"]
    assert pads in ([], ["scope" if width < 1000 else "root"])

    def want(x):
        nchw = x.transpose(0, 1, 4, 2, 3).reshape(1, 32, 20, width) if layout == "NCHW16c" else x.transpose(0, 3, 1, 2)
        y = 2 * ref.pool2d_python(nchw, kernel, stride, dilation, padding, "max", ceil_mode)
        n, c, h, w = y.shape
        return y.reshape(n, 2, 16, h, w).transpose(0, 1, 3, 4, 2) if layout == "NCHW16c" else y.transpose(0, 2, 3, 1)
    check_build(s, [X, out], want, rtol=1e-6, atol=1e-6)


def test_reduction_groups_fused(check_build):
    X = ph((2, 4, 9, 10), "X")
    # a reduction absorbs its injective inputs; elementwise stages fuse after pooling and softmax
    m = topi.mean(topi.nn.relu(topi.subtract(X, 0.5)), axis=(2, 3), keepdims=True)
    p = topi.multiply(topi.nn.relu(topi.nn.pool2d(X, 3, 2, 1, 1, "max")), 2.0)
    a = topi.add(topi.nn.pool2d(X, 2, 2, 1, (1, 1, 0, 0), "avg", ceil_mode=True), 1.0)
    sm = topi.exp(topi.nn.log_softmax(topi.transpose(X, (0, 2, 3, 1)), axis=-1))
    for s, o, fn in [(x86.schedule_reduce([m]), m, lambda x: np.maximum(x - 0.5, 0).mean(axis=(2, 3), keepdims=True)),
                     (x86.schedule_pool([p]), p, lambda x: 2 * np.maximum(ref.pool2d_python(x, 3, 2, 1, 1, "max"), 0)),
                     (x86.schedule_pool([a]), a,
                      lambda x: 1 + ref.pool2d_python(x, 2, 2, 1, (1, 1, 0, 0), "avg", True)),
                     (x86.schedule_softmax([sm]), sm, lambda x: ref.softmax_python(x.transpose(0, 2, 3, 1), -1))]:
        assert sum(1 for st in s.stages if st.attach_type == "inline") >= 1
        check_build(s, [X, o], fn, rtol=1e-5, atol=1e-5)


def test_global_and_adaptive_pool(check_build):
    X = ph((2, 5, 7, 9), "X")
    outs = [topi.nn.global_pool(X, "avg"), topi.nn.global_pool(X, "max"), topi.nn.adaptive_pool(X, (3, 4), "avg")]
    for o, (os_, t) in zip(outs, [((1, 1), "avg"), ((1, 1), "max"), ((3, 4), "avg")]):
        check_build(x86.schedule_adaptive_pool([o]), [X, o],
                    lambda x, os_=os_, t=t: ref.adaptive_pool_python(x, os_, t), rtol=1e-5, atol=1e-5)
    Y = ph((1, 6, 5, 3), "Y")
    for pads, ptype in ((0, "max"), ((1, 0, 1, 1), "avg")):
        nhwc = topi.nn.pool2d(Y, 2, 2, 1, pads, ptype, layout="NHWC")
        check_build(x86.schedule_pool([nhwc], "NHWC"), [Y, nhwc],
                    lambda y, pads=pads, ptype=ptype: ref.pool2d_python(y, 2, 2, 1, pads, ptype, layout="NHWC"),
                    rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,axis", [((4, 37), -1), ((2, 5, 3, 4), 1), ((3, 70), 0), ((3, 150), -1)])
def test_softmax(shape, axis, check_build):
    X = ph(shape, "X")
    sm, lsm = topi.nn.softmax(X, axis), topi.nn.log_softmax(X, axis)
    s = x86.schedule_softmax([sm])
    if axis == -1:       # a row at a time: the row's max, exponentials and sum inside the output's row loop
        attach = {st.op.name: st.attach_type for st in s.stages}
        assert [attach[n] for n in ("T_softmax_maxelem", "T_softmax_exp", "T_softmax_expsum", "T_softmax_norm")] \
            == ["scope", "scope", "scope", "root"]
    check_build(s, [X, sm], lambda x: ref.softmax_python(x, axis), rtol=1e-5, atol=1e-6)
    check_build(x86.schedule_softmax([lsm]), [X, lsm], lambda x: ref.log_softmax_python(x, axis), rtol=1e-5,
                atol=1e-5)


def test_lrn_instance_norm(check_build):
    X = ph((2, 7, 4, 5), "X")
    out = topi.nn.lrn(X, 3, 1, 0.001, 0.75, 1.0)
    check_build(x86.schedule_lrn([out]), [X, out], lambda x: ref.lrn_python(x, 3, 1, 1.0, 0.001, 0.75), rtol=1e-5)
    out4 = topi.nn.lrn(X, 4, 1, 0.5, 0.5, 2.0)
    check_build(x86.schedule_lrn([out4]), [X, out4], lambda x: ref.lrn_python(x, 4, 1, 2.0, 0.5, 0.5), rtol=1e-5)
    g, b = ph((7,), "g"), ph((7,), "b")
    for shape in ((2, 7, 4, 5), (1, 7, 9, 10)):          # the second: sums as vectors of partial sums
        Y = ph(shape, "Y")
        inorm = topi.nn.instance_norm(Y, g, b)
        check_build(x86.schedule_instance_norm([inorm]), [Y, g, b, inorm],
                    lambda y, gg, bb: ref.instance_norm_python(y, gg, bb), rtol=1e-4, atol=1e-4)
    Z = ph((2, 3, 11, 12), "Z")
    gp = topi.nn.global_pool(Z, "avg")
    check_build(x86.schedule_adaptive_pool([gp]), [Z, gp], lambda z: z.mean(axis=(2, 3), keepdims=True),
                rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ tags, utils, errors

def test_tag_scope():
    A = ph((3,), "A")
    with te.tag_scope("my_tag"):
        B = te.compute((3,), lambda i: A[i] + 1, name="B")
        C = te.compute((3,), lambda i: A[i] + 1, name="C", tag="explicit")

    @te.tag_scope(tag=topi.tag.INJECTIVE)
    def f(x):
        return te.compute((3,), lambda i: x[i] * 2, name="D")
    D = f(A)
    E = te.compute((3,), lambda i: A[i], name="E")
    assert (B.op.tag, C.op.tag, D.op.tag, E.op.tag) == ("my_tag", "explicit", "injective", "")
    assert topi.tag.is_injective(D.op) and topi.tag.is_broadcast("elemwise") and not topi.tag.is_broadcast(D)
    assert topi.tag.is_injective("injective,pad") and not topi.tag.is_injective("conv2d_nchw")
    with pytest.raises(DSLError, match="string tag"):
        te.tag_scope(3)
    with pytest.raises(ValueError, match="do not nest"):       # as in TVM
        with te.tag_scope("conv"):
            f(A)
    F = te.compute((3,), lambda i: A[i], name="F")
    assert F.op.tag == ""                                       # the failed scopes left no tag behind


def test_current_target_sizes_the_tiles(check_build):
    import tvmlab
    X, W = ph((1, 4, 6, 6), "X"), ph((40, 4, 3, 3), "W")
    with tvmlab.target.Target("llvm -mcpu=haswell"):           # AVX2: 16 float32 channels per block
        conv = topi.nn.conv2d_nchw(X, W, 1, 1, 1)
        s = x86.schedule_conv2d_nchw([conv])
    assert conv.op.attrs["oc_block"] == 16
    assert topi.nn.conv2d_nchw(X, W, 1, 1, 1, target="llvm -mcpu=skylake-avx512").op.attrs["oc_block"] == 32
    check_build(s, [X, W, conv], lambda x, k: ref.conv2d_nchw_python(x, k, 1, 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(OperatorError, match="unexpected keyword"):
        x86.schedule_dense([conv], tile=3)


def test_utils():
    n = te.var("n")
    A = ph((n, 4, 2 * 3), "A")
    assert topi.utils.get_const_tuple(A.shape)[1:] == (4, 6)
    assert topi.utils.get_const_tuple(A.shape)[0] is n
    assert topi.utils.get_const_int(A.shape[2]) == 6 and topi.utils.equal_const_int(A.shape[1], 4)
    with pytest.raises(TVMLabError, match="constant integer"):
        topi.utils.get_const_int(A.shape[0])
    out = topi.nn.relu(topi.add(topi.reshape(ph((8,), "B"), (2, 4)), 1.0))
    s = te.create_schedule(out.op)
    seen = []
    topi.utils.traverse_inline(s, out.op, lambda op: seen.append(op.name))
    assert seen == ["T_reshape", "T_add", "T_relu"]
    assert [st.attach_type for st in s.stages if st.op.name in ("T_reshape", "T_add")] == ["inline", "inline"]


def test_bad_input_errors():
    A = ph((2, 3), "A")
    with pytest.raises(OperatorError, match=r"do not broadcast \(dimension 1: 3 vs 4"):
        topi.add(A, ph((4,), "B"))
    with pytest.raises(ScheduleError, match="one shape and dtype"):
        topi.add(A, ph((2, 3), "C", "int32"))
    X = ph((1, 3, 8, 8), "X")
    with pytest.raises(OperatorError, match="data has 3 channels but the kernel expects 4"):
        topi.nn.conv2d_nchw(X, ph((5, 4, 3, 3), "W"), 1, 1, 1)
    with pytest.raises(OperatorError, match="padding must be ints"):
        topi.nn.conv2d_nchw(X, ph((5, 3, 3, 3), "W"), 1, (1, 2, 3), 1)
    with pytest.raises(OperatorError, match="do not split into 2 groups"):
        topi.nn.group_conv2d_nchw(X, ph((5, 1, 3, 3), "W"), 1, 1, 1, 2)
    with pytest.raises(OperatorError, match="cannot reshape"):
        topi.reshape(A, (4, -1))
    with pytest.raises(OperatorError, match="axis 3 is out of range"):
        topi.sum(A, axis=3)
    with pytest.raises(OperatorError, match="cannot read layout"):
        topi.layout_transform(X, "NCHW", "NCHW8")
    with pytest.raises(OperatorError, match="batch_dims must be 0"):
        topi.take(A, ph((2,), "i", "int32"), 0, 1)
    with pytest.raises(OperatorError, match="pool_type must be"):
        topi.nn.pool2d(X, 2, 2, 1, 0, "min")
    with pytest.raises(ScheduleError, match="no operator tagged conv2d_nchw"):
        x86.schedule_conv2d_nchw([topi.nn.relu(X)])
    with pytest.raises(ScheduleError, match="CPU schedule"):
        x86.schedule_injective([topi.nn.relu(X)], target="cuda")


# ------------------------------------------------------------------ CUDA (compiled by NVRTC; run where a GPU is)

def _cuda_build(s, args):
    import tvmlab
    try:
        return tvmlab.build(s, args, "cuda")
    except TVMLabError as e:
        if "NVRTC is not available" in str(e) or "neither NVRTC" in str(e):
            pytest.skip(f"no CUDA compiler here: {e}")
        raise


def test_cuda_schedules_compile_and_run_where_a_gpu_is():
    import tvmlab
    X, W, b = ph((1, 4, 9, 9), "X"), ph((6, 4, 3, 3), "W"), ph((6,), "b")
    A = ph((5, 37), "A")
    conv = topi.nn.relu(topi.nn.bias_add(topi.nn.conv2d_nchw(X, W, 1, 1, 1), b))
    sm, pool, chain = topi.nn.softmax(A), topi.nn.pool2d(X, 3, 2, 1, 1, "avg"), topi.transpose(topi.add(A, 1.0))
    groups = [(topi.cuda.schedule_conv2d_nchw([conv]), [X, W, b, conv],
               lambda x, w, bb: np.maximum(ref.conv2d_nchw_python(x, w, 1, 1) + bb[None, :, None, None], 0)),
              (topi.cuda.schedule_softmax([sm]), [A, sm], ref.softmax_python),
              (topi.cuda.schedule_pool([pool]), [X, pool], lambda x: ref.pool2d_python(x, 3, 2, 1, 1, "avg")),
              (topi.cuda.schedule_injective([chain]), [A, chain], lambda a: (a + 1).T)]
    for s, args, fn in groups:
        f = _cuda_build(s, args)
        src = f.imported_modules[0].get_source()
        assert "blockIdx.x" in src and "threadIdx.x" in src
        rng = np.random.default_rng(0)
        ins = [rng.standard_normal([int(d) for d in topi.utils.get_const_tuple(t.shape)]).astype("float32")
               for t in args[:-1]]
        out = np.full([int(d) for d in topi.utils.get_const_tuple(args[-1].shape)], np.nan, "float32")
        tvmlab.testing.simulate(f, *ins, out)              # the kernels, thread by thread
        np.testing.assert_allclose(out, fn(*ins), rtol=1e-4, atol=1e-4)
    with pytest.raises(ScheduleError, match="CUDA schedule"):
        topi.cuda.schedule_injective([conv], target="llvm")
    with pytest.raises(ScheduleError, match="is a scalar"):
        topi.cuda.schedule_injective(topi.sum(A))
    total = topi.sum(A)          # a reduction to one value: the threads of a block share it
    f = tvmlab.build(topi.cuda.schedule_reduce(total), [A, total], "cuda")
    a = np.random.default_rng(0).uniform(-1, 1, [int(d) for d in A.shape]).astype(A.dtype)
    got = np.full((), np.nan, "float32")
    tvmlab.testing.simulate(f, a, got)
    np.testing.assert_allclose(got, a.sum(dtype="float64"), rtol=1e-4)


def test_topi_tutorial_program(check_build):
    """TVM's "Introduction to TOPI" program, with only the imports changed (CPU schedules here)."""
    import tvmlab as tvm
    a, b = ph((100, 10, 10), "a"), ph((10, 10), "b")
    c = a + b                                   # tensor arithmetic broadcasts, as topi.add
    d = a * b
    e = topi.elemwise_sum([c, d])
    f = e / 2.0
    g = topi.sum(f, axis=(1, 2))
    with tvm.target.Target("llvm"):
        sg = topi.x86.schedule_reduce(g)
    check_build(sg, [a, b, g], lambda x, y: ((x + y + x * y) / 2).sum(axis=(1, 2)), rtol=1e-5, atol=1e-4)
    data, kernel = te.placeholder((1, 3, 24, 24), name="data"), te.placeholder((10, 3, 5, 5), name="kernel")
    with tvm.target.Target("cuda"):
        conv = topi.cuda.conv2d_nchw(data, kernel, 1, 2, 1)
        out = topi.nn.relu(conv)
        sconv = topi.cuda.schedule_conv2d_nchw([out])
    assert tvm.lower(sconv, [data, kernel, out], simple_mode=True) is not None
    out_cpu = topi.nn.relu(topi.x86.conv2d_nchw(data, kernel, 1, 2, 1))
    check_build(topi.x86.schedule_conv2d_nchw([out_cpu]), [data, kernel, out_cpu],
                lambda x, k: np.maximum(ref.conv2d_nchw_python(x, k, 1, 2), 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_other_float_dtypes(dtype, check_build):
    X, W = ph((1, 5, 9, 9), "X", dtype), ph((7, 5, 3, 3), "W", dtype)
    conv = topi.nn.relu(topi.nn.conv2d_nchw(X, W, 2, 1, 1))
    sm = topi.nn.softmax(topi.nn.flatten(X))
    tol = {"rtol": 1e-2, "atol": 5e-2} if dtype == "float16" else {}
    check_build(x86.schedule_conv2d_nchw([conv]), [X, W, conv], lambda x, w: np.maximum(
        ref.conv2d_nchw_python(x.astype("float64"), w.astype("float64"), 2, 1), 0).astype(dtype), **tol)
    check_build(x86.schedule_softmax([sm]), [X, sm],
                lambda x: ref.softmax_python(x.reshape(1, -1).astype("float64")).astype(dtype), **tol)


def test_symbolic_rows(check_build):
    n = te.var("n")
    X, Y = ph((n, 37), "X"), ph((n, 12, 3, 3), "Y")
    S = topi.nn.softmax(X)
    check_build(x86.schedule_softmax([S]), [X, S], ref.softmax_python, env={"n": 5}, rtol=1e-5, atol=1e-6)
    L = topi.layout_transform(Y, "NCHW", "NCHW8c")
    C = topi.concatenate([X, X], axis=0)
    check_build(x86.schedule_injective([L]), [Y, L], lambda y: ref.layout_transform_python(y, "NCHW", "NCHW8c"),
                env={"n": 2})
    check_build(x86.schedule_injective([C]), [X, C], lambda x: np.concatenate([x, x]), env={"n": 3})
