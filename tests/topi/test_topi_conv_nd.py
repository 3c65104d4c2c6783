"""Convolutions in any layout with 1 to 3 spatial axes (direct, grouped, depthwise NHWC, transposed,
Winograd), pooling in 1 to 3 axes and its gradient, resizing, upsampling and grid sampling: built with
their CPU and CUDA schedules, against numpy on random data (the CUDA build on the simulator)."""
import numpy as np
import pytest

from tvmlab import te, topi
from tvmlab.topi import testing as ref
from tvmlab.topi.utils import OperatorError
from topi_check import verify

X86, CUDA = topi.x86, topi.cuda
TOL = {"rtol": 1e-4, "atol": 1e-4}


def ph(shape, name, dtype="float32"):
    return te.placeholder(shape, name=name, dtype=dtype)


@pytest.mark.parametrize("layout,groups,stride,padding,dilation", [
    ("NCW", 1, 2, "SAME", 1), ("NWC", 1, 1, (2, 1), 2), ("NCW", 3, 1, "VALID", 1), ("NWC", 3, 2, 1, 1)])
def test_conv1d(layout, groups, stride, padding, dilation, rng):
    c, o, w, k = 6, 9, 19, 3
    x = ph((2, c, w) if layout == "NCW" else (2, w, c), "x")
    kshape = (o, c // groups, k) if layout == "NCW" else (k, c // groups, o)
    kern = ph(kshape, "k")
    if groups == 1:
        conv = topi.nn.conv1d(x, kern, stride, padding, dilation, layout)
    else:
        conv = getattr(topi.nn, f"group_conv1d_{layout.lower()}")(x, kern, stride, padding, dilation, groups)
    out = topi.nn.relu(conv)

    def want(a, b):
        if layout == "NWC":
            a, b = a.transpose(0, 2, 1), b.transpose(2, 1, 0)
        r = np.maximum(ref.group_conv1d_ncw_python(a, b, stride, padding, dilation, groups), 0)
        return r if layout == "NCW" else r.transpose(0, 2, 1)
    name = f"schedule_{'' if groups == 1 else 'group_'}conv1d_{layout.lower()}"
    verify([x, kern, out], want, rng, getattr(X86, name), getattr(CUDA, name), **TOL)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_nhwc_and_grouped(groups, rng):
    x, kern = ph((1, 9, 7, 4), "x"), ph((3, 3, 4 // groups, 6), "k")
    b = ph((6,), "b")
    conv = topi.nn.conv2d_nhwc(x, kern, 1, 1, 1) if groups == 1 else \
        topi.nn.group_conv2d_nhwc(x, kern, (2, 1), (1, 0, 2, 1), 1, groups)
    out = topi.nn.relu(topi.add(conv, b))
    stride, pad = (1, 1) if groups == 1 else ((2, 1), (1, 0, 2, 1))
    verify([x, kern, b, out], lambda a, w, bb: np.maximum(ref.conv2d_nhwc_python(a, w, stride, pad, groups) + bb, 0),
           rng, X86.schedule_conv2d_nhwc, CUDA.schedule_conv2d_nhwc, **TOL)


def test_depthwise_conv2d_nhwc(rng):
    x, kern = ph((2, 8, 9, 3), "x"), ph((3, 3, 3, 2), "k")
    out = topi.nn.depthwise_conv2d_nhwc(x, kern, (2, 1), "SAME", 1)
    verify([x, kern, out], lambda a, w: ref.depthwise_conv2d_python_nhwc(a, w, (2, 1), "SAME"), rng,
           X86.schedule_depthwise_conv2d_nhwc, CUDA.schedule_depthwise_conv2d_nhwc, **TOL)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_conv3d(layout, rng):
    c, o = 4, 6
    x = ph((1, c, 5, 6, 7) if layout == "NCDHW" else (1, 5, 6, 7, c), "x")
    kern = ph((o, c // 2, 3, 2, 3) if layout == "NCDHW" else (3, 2, 3, c // 2, o), "k")
    fn = topi.nn.conv3d_ncdhw if layout == "NCDHW" else topi.nn.conv3d_ndhwc
    out = fn(x, kern, (1, 2, 1), (1, 0, 1, 0, 1, 2), 1, 2)
    want = ref.conv3d_ncdhw_python if layout == "NCDHW" else ref.conv3d_ndhwc_python
    name = f"schedule_conv3d_{layout.lower()}"
    verify([x, kern, out], lambda a, w: want(a, w, (1, 2, 1), (1, 0, 1, 0, 1, 2), 2), rng, getattr(X86, name),
           getattr(CUDA, name), **TOL)


def test_transposed_convolutions(rng):
    x, kern = ph((2, 3, 7), "x"), ph((3, 4, 4), "k")
    out = topi.nn.conv1d_transpose_ncw(x, kern, 3, (1, 2), "float32", 1)
    verify([x, kern, out], lambda a, w: ref.conv1d_transpose_ncw_python(a, w, 3, (1, 2), 1), rng,
           topi.generic.schedule_conv1d_transpose_ncw, CUDA.schedule_conv1d_transpose_ncw, **TOL)
    x3, k3 = ph((1, 2, 3, 4, 3), "x3"), ph((2, 3, 2, 3, 2), "k3")
    out3 = topi.nn.conv3d_transpose_ncdhw(x3, k3, (2, 1, 2), 1, "float32", (1, 0, 0))
    verify([x3, k3, out3], lambda a, w: ref.conv3d_transpose_ncdhw_python(a, w, (2, 1, 2), 1, (1, 0, 0)), rng,
           X86.schedule_conv3d_transpose_ncdhw, CUDA.schedule_conv3d_transpose_ncdhw, **TOL)
    xg, kg = ph((1, 4, 5, 6), "xg"), ph((4, 3, 3, 3), "kg")
    outg = topi.nn.group_conv2d_transpose_nchw(xg, kg, 2, 1, "float32", (1, 0), 2)
    verify([xg, kg, outg], lambda a, w: ref.conv2d_transpose_nchw_python(a, w, 2, 1, (1, 0), 2), rng,
           topi.generic.schedule_group_conv2d_transpose_nchw, CUDA.schedule_conv2d_transpose_nchw, **TOL)


@pytest.mark.parametrize("layout,padding,dilation", [("NHWC", 1, 1), ("NCHW", (0, 2, 1, 1), 1), ("NHWC", 2, 2)])
def test_winograd(layout, padding, dilation, rng):
    if layout == "NHWC":
        x, kern = ph((1, 10, 9, 5), "x"), ph((3, 3, 5, 4), "k")
        out = topi.nn.conv2d_winograd_nhwc(x, kern, 1, padding, dilation, "float32")
        dil = (dilation, dilation, 1, 1)
        want = lambda a, w: ref.conv2d_nhwc_python(a, ref.dilate_python(w, dil), 1, padding)  # noqa: E731
        cuda = CUDA.schedule_conv2d_nhwc_winograd_direct
    else:
        x, kern = ph((2, 5, 10, 9), "x"), ph((4, 5, 3, 3), "k")
        out = topi.nn.conv2d_winograd_nchw(x, kern, 1, padding, dilation, "float32")
        want = lambda a, w: ref.conv2d_nchw_python(a, w, 1, padding)  # noqa: E731
        cuda = CUDA.schedule_conv2d_nchw_winograd
    assert out.op.attrs["tile_size"] in (2, 4)
    verify([x, kern, out], want, rng, lambda outs: te.create_schedule([o.op for o in outs]), cuda, **TOL)
    with pytest.raises(OperatorError, match="unit strides"):
        topi.nn.conv2d_winograd_nchw(ph((1, 2, 8, 8), "a"), ph((2, 2, 3, 3), "b"), 2, 1, 1, "float32")


def test_winograd_transforms_are_exact():
    for m, r in ((2, 3), (4, 3), (2, 5), (3, 2)):
        at, bt, g = topi.nn.winograd.winograd_matrices(m, r)
        d, w = np.random.default_rng(m * r).standard_normal((2, m + r - 1)), np.random.default_rng(r).standard_normal(r)
        for row in d:
            np.testing.assert_allclose(at @ ((g @ w) * (bt @ row)), np.correlate(row, w, "valid"), rtol=1e-9, atol=1e-9)


def test_conv3d_winograd(rng):
    x, kern = ph((1, 3, 4, 7, 6), "x"), ph((2, 3, 2, 3, 3), "k")
    out = topi.nn.conv3d_winograd_ncdhw(x, kern, 1, 1, 1)
    verify([x, kern, out], lambda a, w: ref.conv3d_ncdhw_python(a, w, 1, 1), rng,
           lambda outs: te.create_schedule([o.op for o in outs]), **TOL)


@pytest.mark.parametrize("layout,ceil_mode,count_include_pad,pool_type", [
    ("NCW", True, True, "avg"), ("NWC", False, False, "max"), ("NCDHW", True, False, "avg"),
    ("NDHWC", True, True, "max")])
def test_pool1d_pool3d(layout, ceil_mode, count_include_pad, pool_type, rng):
    n = 1 if "DHW" not in layout else 3
    spatial = (11,) if n == 1 else (5, 7, 6)
    shape = (2, 3) + spatial if layout.startswith("NC") else (2,) + spatial + (3,)
    kernel, stride, dilation = [3] * n, [2] * n, [1] * (n - 1) + [2]
    padding = [1] * n + [2] * n
    x = ph(shape, "x")
    fn = topi.nn.pool1d if n == 1 else topi.nn.pool3d
    # through relu, as TVM's test: a window wholly in the padding is -inf (max) here, 0 in the reference
    out = topi.nn.relu(fn(x, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad))
    want = ref.poolnd_python(np.zeros(shape, "float32"), kernel, stride, dilation, padding[:n], padding[n:], pool_type,
                             count_include_pad, ceil_mode, layout=layout)
    assert tuple(int(d) for d in out.shape) == want.shape
    verify([x, out], lambda a: ref.poolnd_python(a, kernel, stride, dilation, padding[:n], padding[n:], pool_type,
                                                 count_include_pad, ceil_mode, layout=layout),
           rng, lambda o: X86.schedule_pool(o, layout), lambda o: CUDA.schedule_pool(o, layout),
           ranges={"x": (0.01, 1)}, **TOL)     # positive: the reference reads max's padding as 0, as TVM's


def test_ceil_mode_rules():
    x = ph((1, 1, 31, 31), "x")
    tvm_rule = topi.nn.pool2d(x, 3, 3, 1, (2, 1, 2, 1), "max", True)
    torch_rule = topi.nn.pool2d(x, 3, 3, 1, (2, 1, 2, 1), "max", True, drop_pad_windows=True)
    assert int(tvm_rule.shape[2]) == 12 and int(torch_rule.shape[2]) == 11


@pytest.mark.parametrize("pool_type,ceil_mode,count_include_pad", [("max", True, True), ("avg", False, False),
                                                                   ("avg", True, True)])
def test_pool_grad(pool_type, ceil_mode, count_include_pad, rng):
    x = ph((2, 3, 11, 10), "x")
    fwd = topi.nn.pool2d(x, (3, 2), (2, 2), 1, (1, 0, 2, 1), pool_type, ceil_mode, "NCHW", count_include_pad)
    g = ph(tuple(int(d) for d in fwd.shape), "g")
    out = topi.nn.pool_grad(g, x, (3, 2), (2, 2), (1, 0, 2, 1), pool_type, ceil_mode, "NCHW", count_include_pad)
    verify([x, g, out], lambda a, gg: ref.pool_grad_nchw(a, gg, (3, 2), (2, 2), (1, 0, 2, 1), pool_type, ceil_mode,
                                                          count_include_pad),
           rng, topi.generic.schedule_pool_grad, CUDA.schedule_pool_grad, ranges={"x": (0.01, 1)}, **TOL)


@pytest.mark.parametrize("layout", ["NDHWC", "NCDHW"])
def test_adaptive_pool3d(layout, rng):
    shape = (1, 3, 7, 9, 5) if layout == "NCDHW" else (1, 7, 9, 5, 3)
    x = ph(shape, "x")
    for pool_type, size in (("avg", (3, 4, 2)), ("max", (1, 1, 1))):
        out = topi.nn.adaptive_pool3d(x, size, pool_type, layout)
        verify([x, out], lambda a: ref.adaptive_pool(a, size, pool_type, layout), rng, X86.schedule_adaptive_pool,
               **TOL)


@pytest.mark.parametrize("method,mode", [("nearest_neighbor", "asymmetric"), ("linear", "half_pixel"),
                                         ("nearest_neighbor", "align_corners"), ("cubic", "align_corners")])
def test_resize1d_3d(method, mode, rng):
    x1 = ph((2, 3, 9), "x1")
    out1 = topi.image.resize1d(x1, None, (14,), "NCW", method, mode)
    verify([x1, out1], lambda a: ref.resize1d_python(a, (14 / 9,), "NCW", method, mode), rng, X86.schedule_injective,
           CUDA.schedule_injective, **TOL)
    if method == "cubic":
        return
    x3 = ph((1, 4, 5, 6, 2), "x3")
    out3 = topi.image.resize3d(x3, None, (3, 8, 4), "NDHWC", method, mode)
    verify([x3, out3], lambda a: ref.resize3d_python(a, (3 / 4, 8 / 5, 4 / 6), "NDHWC", method, mode), rng,
           X86.schedule_injective, CUDA.schedule_injective, **TOL)


@pytest.mark.parametrize("shape,size,method,mode,exclude", [
    ((1, 20, 13, 11), (29, 23), "linear", "half_pixel", 0),       # channels each a parallel task
    ((2, 3, 9, 7), (16, 5), "cubic", "align_corners", 0),          # few channels: the pass at the root
    ((1, 17, 6, 10), (13, 31), "cubic", "half_pixel", 1),
    ((1, 18, 12, 9), (7, 20), "linear", "asymmetric", 0),          # smaller in H: one stage, four gathers
    ((1, 16, 7, 9), (12, 20), "nearest_neighbor", "asymmetric", 0),
    ((1, 16, 7, 9), (7, 20), "nearest_neighbor", "half_pixel", 0)])  # as high: one gather, one stage
def test_resize2d_enlarged_in_h_resizes_rows_first(shape, size, method, mode, exclude, rng):
    from tvmlab.topi.image.resize import MIN_TASKS, PASS
    x = ph(shape, "x")
    out = topi.image.resize2d(x, None, size, "NCHW", method, mode, cubic_alpha=-0.75, cubic_exclude=exclude)
    passes = [t.op for t in out.op.input_tensors if t.op.tag == PASS]
    grows = size[0] > shape[2] or (size[0] == shape[2] and method != "nearest_neighbor")
    assert len(passes) == (1 if grows else 0)
    s = topi.image.schedule_resize2d(out)
    if passes:
        many = shape[0] * shape[1] >= MIN_TASKS
        assert s[passes[0]].attach_type == ("scope" if many else "root")
    scale = (size[0] / shape[2], size[1] / shape[3])

    def want(a):
        return ref.resize2d_python(a, scale, "NCHW", method, mode, cubic_alpha=-0.75, cubic_exclude=exclude)
    verify([x, out], want, rng, topi.image.schedule_resize2d, CUDA.schedule_injective, **TOL)


@pytest.mark.parametrize("method,atol", [("linear", 1), ("nearest_neighbor", 0)])
def test_resize2d_rows_first_keeps_integer_outputs(method, atol, rng):
    x = ph((1, 16, 5, 7), "x", "uint8")
    out = topi.image.resize2d(x, None, (10, 14), "NCHW", method, "half_pixel")
    data = rng.integers(0, 256, (1, 16, 5, 7)).astype("uint8")
    want = ref.resize2d_python(data.astype("float32"), (2.0, 2.0), "NCHW", method, "half_pixel")
    got = verify([x, out], lambda a: want.astype("uint8"), rng, topi.image.schedule_resize2d, inputs={"x": data},
                 atol=atol)
    assert got[0].dtype == np.uint8


def test_resize2d_rows_first_with_a_symbolic_batch_and_several_outputs(rng):
    import tvmlab
    from tvmlab.topi.image.resize import PASS
    n = te.var("n")
    x = ph((n, 20, 6, 5), "x")
    out = topi.image.resize2d(x, None, (12, 11), "NCHW", "linear", "half_pixel")
    f = tvmlab.build(topi.image.schedule_resize2d(out), [x, out])
    data = rng.uniform(-1, 1, (3, 20, 6, 5)).astype("float32")
    got = tvmlab.nd.array(np.full((3, 20, 12, 11), np.nan, "float32"))
    f(tvmlab.nd.array(data), got)
    want = ref.resize2d_python(data, (2.0, 11 / 5), "NCHW", "linear", "half_pixel")
    np.testing.assert_allclose(got.numpy(), want, **TOL)

    def pass_of(o):
        (p,) = [t.op for t in o.op.input_tensors if t.op.tag == PASS]
        return p
    # two resizes of one input: each output makes its own pass inside its own channel loop
    x2 = ph((1, 20, 6, 5), "x2")
    outs = [topi.image.resize2d(x2, None, (12, 11), "NCHW", "linear"),
            topi.image.resize2d(x2, None, (9, 7), "NCHW", "cubic")]
    s = topi.image.schedule_resize2d(outs)
    for o in outs:
        assert s[pass_of(o)].attach_type == "scope" and s[pass_of(o)].attach_stage is s[o]
    lin = lambda a: ref.resize2d_python(a, (2.0, 11 / 5), "NCHW", "linear", "half_pixel")  # noqa: E731
    verify([x2, *outs], lambda a: [lin(a), ref.resize2d_python(a, (1.5, 1.4), "NCHW", "cubic", "half_pixel")],
           rng, topi.image.schedule_resize2d, **TOL)
    # a resize that is an output read by another: its pass goes with it; inlined into two outputs: at the root
    r = topi.image.resize2d(x2, None, (12, 11), "NCHW", "linear")
    for outs, want, at in (([topi.nn.relu(r), r], lambda a: [np.maximum(lin(a), 0), lin(a)], r),
                           ([topi.nn.relu(r), topi.negative(r)], lambda a: [np.maximum(lin(a), 0), -lin(a)], None)):
        s = topi.image.schedule_resize2d(outs)
        assert s[pass_of(r)].attach_type == ("root" if at is None else "scope")
        assert at is None or s[pass_of(r)].attach_stage is s[at]
        verify([x2, *outs], want, rng, topi.image.schedule_resize2d, **TOL)


@pytest.mark.parametrize("shape,size", [((1, 3, 1, 4), (1, 4)), ((1, 3, 1, 4), (5, 7)), ((1, 3, 2, 4), (2, 9))])
def test_resize2d_of_one_or_two_rows(shape, size, rng):
    x = ph(shape, "x")
    out = topi.image.resize2d(x, None, size, "NCHW", "cubic", "half_pixel")
    verify([x, out], lambda a: ref.resize2d_python(a, (size[0] / shape[2], size[1] / shape[3]), "NCHW", "cubic",
                                                   "half_pixel"), rng, topi.image.schedule_resize2d, **TOL)


def test_upsampling_packed_layout(rng):
    x = ph((1, 2, 5, 6, 1, 4), "x")
    out = topi.nn.upsampling(x, 1.6, 2.0, "NCHW1n4c", "bilinear")
    verify([x, out], lambda a: ref.resize2d_python(a, (1.6, 2.0), "NCHW1n4c", "linear", "asymmetric"), rng,
           X86.schedule_injective, CUDA.schedule_injective, **TOL)
    x3 = ph((1, 2, 3, 4, 5), "x3")
    out3 = topi.nn.upsampling3d(x3, 2.0, 1.5, 1.0, "NCDHW", "trilinear", "asymmetric")
    verify([x3, out3], lambda a: ref.resize3d_python(a, (2.0, 1.5, 1.0), "NCDHW", "linear", "asymmetric"), rng,
           X86.schedule_injective, **TOL)


@pytest.mark.parametrize("method,padding,align", [("bilinear", "zeros", True), ("nearest", "reflection", False),
                                                  ("bicubic", "border", False), ("bicubic", "reflection", True)])
def test_grid_sample_and_affine_grid(method, padding, align, rng):
    x, grid = ph((2, 3, 5, 6), "x"), ph((2, 2, 4, 7), "grid")
    out = topi.image.grid_sample(x, grid, method, "NCHW", padding, align)
    cuda = None if method == "bicubic" else CUDA.schedule_injective     # 16 taps: slow to simulate
    verify([x, grid, out], lambda a, gr: ref.grid_sample_python(a, gr, method, "NCHW", padding, align), rng,
           X86.schedule_injective, cuda, ranges={"grid": (-1.4, 1.4)}, **TOL)
    if method == "bilinear":
        x3, g3 = ph((1, 2, 3, 4, 5), "x3"), ph((1, 3, 2, 3, 4), "g3")
        out3 = topi.image.grid_sample(x3, g3, method, "NCDHW", "border", align)
        verify([x3, g3, out3], lambda a, gr: ref.grid_sample_python(a, gr, method, "NCDHW", "border", align), rng,
               X86.schedule_injective, ranges={"g3": (-1.3, 1.3)}, **TOL)
        theta = ph((2, 2, 3), "theta")
        verify([theta, topi.image.affine_grid(theta, (4, 7))], lambda t: ref.affine_grid_python(t, (4, 7)), rng,
               X86.schedule_injective, CUDA.schedule_injective, **TOL)


@pytest.mark.parametrize("layout,method", [("NHWC", "bilinear"), ("NCHW", "nearest_neighbor")])
def test_crop_and_resize(layout, method, rng):
    shape = (2, 9, 8, 3) if layout == "NHWC" else (2, 3, 9, 8)
    img, boxes, idx = ph(shape, "img"), ph((3, 4), "boxes"), ph((3,), "idx", "int32")
    box_np = np.array([[0.1, 0.2, 0.8, 0.7], [-0.2, 0.0, 1.2, 0.9], [0.3, 0.3, 0.3, 0.9]], "float32")
    idx_np = np.array([1, 0, 1], "int32")
    out = topi.image.crop_and_resize(img, boxes, idx, (5, 4), layout, method, 0.5)
    verify([img, boxes, idx, out], lambda i, b, k: ref.crop_and_resize_python(i, b, k, (5, 4), layout, method, 0.5),
           rng, X86.schedule_injective, CUDA.schedule_injective, inputs={"boxes": box_np, "idx": idx_np}, **TOL)
