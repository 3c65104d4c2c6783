"""TEDD (tvmlab.contrib.tedd): TVM's three schedule drawings, as DOT text, files and SVG."""
import os

import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.contrib import tedd
from tvmlab.widgets.colors import KIND_COLORS
from tvmlab.widgets.graph import dot_missing_reason


def conv_bias_relu():
    """TVM's tedd tutorial program (conv2d HWCN + bias + relu), written with te directly."""
    in_size, in_channel, batch, num_filter, kernel = 14, 16, 1, 16, 3
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, num_filter), name="W")
    B = te.placeholder((1, num_filter, 1), name="bias")
    pad = te.compute((in_size + 2, in_size + 2, in_channel, batch), lambda y, x, c, n: te.if_then_else(
        te.all(y >= 1, y <= in_size, x >= 1, x <= in_size), A[y - 1, x - 1, c, n], 0.0),
        name="PaddedInput")
    rc = te.reduce_axis((0, in_channel), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    conv = te.compute((in_size, in_size, num_filter, batch), lambda yy, xx, ff, nn: te.sum(
        pad[yy + ry, xx + rx, rc, nn] * W[ry, rx, rc, ff], axis=[ry, rx, rc]), name="Conv2dOutput")
    bias = te.compute(conv.shape, lambda y, x, f, n: conv[y, x, f, n] + B[0, f, 0], name="T_add")
    relu = te.compute(conv.shape, lambda *i: te.max(bias(*i), 0.0), name="T_relu")
    s = te.create_schedule(relu.op)
    s[pad].compute_inline()
    s[bias].compute_inline()
    WS = s.cache_read(W, "shared", [conv])
    y, x, f, n = s[relu].op.axis
    fo, fi = s[relu].split(f, factor=4)
    yx = s[relu].fuse(y, x)
    s[relu].bind(yx, te.thread_axis("blockIdx.x"))
    s[relu].bind(fi, te.thread_axis("threadIdx.x"))
    s[conv].compute_at(s[relu], fi)
    s[WS].compute_at(s[conv], ry)
    return s, [A, W, B, relu]


def test_dataflow_graph_names_every_tensor_and_stage(tmp_path):
    s, _ = conv_bias_relu()
    path = tmp_path / "dfg.dot"
    assert tedd.viz_dataflow_graph(s, dot_file_path=str(path)) is None      # as in TVM
    text = path.read_text()
    assert text == tedd.dataflow_graph(s).source
    for name in ("A", "W", "bias", "PaddedInput", "Conv2dOutput", "W.shared", "T_add",
                 "T_relu"):
        assert name in text, name
    assert "inlined" in text
    # edges: W's tensor feeds the shared cache stage, the cache feeds Conv2dOutput
    assert text.count("->") >= 8


def test_schedule_tree_attaches_under_the_loop_and_colours_kinds(tmp_path):
    s, _ = conv_bias_relu()
    dot = tedd.viz_schedule_tree(s, output_dot_string=True)
    assert "ROOT" in dot and "W.shared" in dot
    # the conv is computed at T_relu's threadIdx.x axis, W.shared at the conv's ry axis
    leaf = [iv.var.name for iv in s.stages[-1].leaf_iter_vars]
    assert f"stage_T_relu:iv{leaf.index('i2.inner')} -> stage_Conv2dOutput" in dot
    conv = next(st for st in s.stages if st.name == "Conv2dOutput")
    ry = [iv.var.name for iv in conv.leaf_iter_vars].index("ry")
    assert f"stage_Conv2dOutput:iv{ry} -> stage_W_shared" in dot
    assert KIND_COLORS["thread_binding"] in dot and "threadIdx.x" in dot
    assert "inlined: PaddedInput, T_add" in dot
    s2 = s.normalize()
    dot2 = tedd.viz_schedule_tree(s2, dot_file_path=str(tmp_path / "t2.dot"), output_dot_string=True)
    assert (tmp_path / "t2.dot").read_text() == dot2


def test_itervar_graph_shows_split_and_fuse_with_ranges():
    A = te.placeholder((30, 20), name="A")
    C = te.compute((30, 20), lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    f = s[C].fuse(ii, C.op.axis[1])
    s[C].vectorize(f)
    dot = tedd.viz_itervar_relationship_graph(s, output_dot_string=True)
    assert "Split\nfactor=8" in dot.replace("\\n", "\n") and "Fuse" in dot
    assert "i.outer" in dot and "i.inner.j.fused" in dot
    assert "[0, 4)" in dot       # i.outer covers ceil(30 / 8) = 4
    assert KIND_COLORS["vectorized"] in dot
    assert "leaf 0: i.outer" in dot and "leaf 1: i.inner.j.fused" in dot


def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(tedd.TEDDError, match="expected a schedule"):
        tedd.viz_schedule_tree("not a schedule")
    s, _ = conv_bias_relu()
    with pytest.raises(tedd.TEDDError, match="does not exist"):
        tedd.viz_dataflow_graph(s, dot_file_path=str(tmp_path / "no" / "such" / "x.dot"))
    assert isinstance(tedd.TEDDError("x"), tvm.TVMLabError)


@pytest.mark.skipif(dot_missing_reason() is not None, reason=str(dot_missing_reason()))
def test_show_svg_displays_an_svg(monkeypatch):
    shown = []
    import IPython.display
    monkeypatch.setattr(IPython.display, "display", lambda x: shown.append(x))
    s, _ = conv_bias_relu()
    tedd.viz_itervar_relationship_graph(s, show_svg=True)
    assert shown and "<svg" in shown[0].data


def test_tvm_tedd_tutorial_with_only_imports_changed(tmp_path):
    from tvmlab import topi
    if not hasattr(getattr(topi, "nn", None), "conv2d_hwcn") or \
            not hasattr(getattr(topi, "generic", None), "schedule_conv2d_hwcn"):
        pytest.skip("topi.nn.conv2d_hwcn / topi.generic.schedule_conv2d_hwcn are not in this tvmlab")
    batch, in_channel, in_size, num_filter, kernel, stride = 1, 256, 32, 256, 3, 1
    padding, dilation = "SAME", 1
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, num_filter), name="W")
    B = te.placeholder((1, num_filter, 1), name="bias")
    with tvm.target.Target("llvm"):
        t_conv = topi.nn.conv2d_hwcn(A, W, stride, padding, dilation)
        t_bias = topi.add(t_conv, B)
        t_relu = topi.nn.relu(t_bias)
        s = topi.generic.schedule_conv2d_hwcn([t_relu])
    tedd.viz_dataflow_graph(s, dot_file_path=str(tmp_path / "dfg.dot"))
    tedd.viz_schedule_tree(s, dot_file_path=str(tmp_path / "scheduletree.dot"))
    s = s.normalize()
    tedd.viz_schedule_tree(s, dot_file_path=str(tmp_path / "scheduletree2.dot"))
    tedd.viz_itervar_relationship_graph(s, dot_file_path=str(tmp_path / "itervar.dot"))
    for f in ("dfg", "scheduletree", "scheduletree2", "itervar"):
        assert os.path.getsize(tmp_path / f"{f}.dot") > 100
