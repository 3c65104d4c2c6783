"""``python -m tvmlab.bench.onnx_ops``: the ONNX operators beyond classifiers, one model each, against
onnxruntime side by side (Resize, TopK, ArgMax, CumSum, Einsum, Where, LSTM, GRU).

Each model is imported with from_onnx, built at opt_level 3, checked against
onnxruntime's output, then timed interleaved with it (onnxruntime with as
many intra-op threads as tvmlab's parallel loops); the ratio is
onnxruntime's time over tvmlab's (above 1: tvmlab is faster).  With
``--repeat N`` each case is built and timed N times afresh (new session, new
module), the repeats going round all the cases, and the median ratio is
reported: on a shared two-core machine, stretches of seconds run two threads at
half their speed, on either side.

    python -m tvmlab.bench.onnx_ops [--only resize_linear,topk] [--repeat 3]
"""
from __future__ import annotations

import argparse

import numpy as np

from .graph import compile_onnx
from .models import finish_model
from .peak import threads
from .timing import side_by_side


def _rand(shape, seed, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def _cases():
    """name -> (nodes, inputs {name: array}, initializers {name: array}, output names, opset)."""
    from onnx import helper
    mk = helper.make_node
    hid, inp, seq, batch = 64, 32, 16, 4
    return {
        "resize_linear": ([mk("Resize", ["x", "", "s"], ["y"], mode="linear")],
                          {"x": _rand((1, 32, 56, 56), 1)}, {"s": np.array([1, 1, 2, 2], np.float32)}, ["y"], 13),
        "resize_nearest_x1.5": ([mk("Resize", ["x", "", "s"], ["y"], mode="nearest")],
                                {"x": _rand((1, 32, 56, 56), 2)}, {"s": np.array([1, 1, 1.5, 1.5], np.float32)},
                                ["y"], 13),
        "topk_5_of_1000": ([mk("TopK", ["x", "k"], ["v", "i"])], {"x": _rand((8, 1000), 3)},
                           {"k": np.array([5], np.int64)}, ["v", "i"], 11),
        "argmax_1000": ([mk("ArgMax", ["x"], ["y"], axis=1)], {"x": _rand((64, 1000), 4)}, {}, ["y"], 13),
        "cumsum_256": ([mk("CumSum", ["x", "a"], ["y"])], {"x": _rand((64, 256), 5)},
                       {"a": np.array(1, np.int64)}, ["y"], 14),
        "einsum_attention": ([mk("Einsum", ["q", "k"], ["y"], equation="bhid,bhjd->bhij")],
                             {"q": _rand((1, 8, 128, 64), 6), "k": _rand((1, 8, 128, 64), 7)}, {}, ["y"], 12),
        "where_less": ([mk("Less", ["x", "t"], ["c"]), mk("Where", ["c", "x", "t"], ["y"])],
                       {"x": _rand((1, 64, 56, 56), 8)}, {"t": np.array(0.1, np.float32)}, ["y"], 13),
        "lstm_16x4": ([mk("LSTM", ["x", "W", "R", "B"], ["y", "h", "c"], hidden_size=hid)],
                      {"x": _rand((seq, batch, inp), 9)},
                      {"W": _rand((1, 4 * hid, inp), 10), "R": _rand((1, 4 * hid, hid), 11),
                       "B": _rand((1, 8 * hid), 12)}, ["y", "h", "c"], 14),
        "gru_16x4_bidir": ([mk("GRU", ["x", "W", "R", "B"], ["y", "h"], hidden_size=hid, direction="bidirectional")],
                           {"x": _rand((seq, batch, inp), 13)},
                           {"W": _rand((2, 3 * hid, inp), 14), "R": _rand((2, 3 * hid, hid), 15),
                            "B": _rand((2, 6 * hid), 16)}, ["y", "h"], 14),
    }


def _model(nodes, inputs, inits, outputs, opset):
    import onnx
    from onnx import helper
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outputs]
    graph = helper.make_graph(nodes, "bench", ins, outs,
                              initializer=[onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    return finish_model(graph, opset)


def run(only=None, out=print, repeat=1):
    """Time every case (or those in ``only``) ``repeat`` times, each time built afresh; prints and returns
    (name, onnxruntime seconds, tvmlab seconds) of the repeat with the median ratio."""
    nthreads = threads()
    out(f"{'model':<22}{'onnxruntime ms':>16}{'tvmlab ms':>12}{'ratio (ort/tvmlab)':>21}"
        + ("   ratios of the repeats" if repeat > 1 else ""))
    cases = {name: case for name, case in _cases().items() if not only or name in only}
    # the repeats go round all the cases, so a slow stretch of the machine does not take every try of one;
    # each case's row is printed once its last try is in
    tries = {name: [] for name in cases}
    rows = []
    for k in range(repeat):
        for name, case in cases.items():
            tries[name].append(_time_case(name, case, nthreads))
            if k < repeat - 1:
                continue
            ordered = sorted(tries[name], key=lambda r: r[0] / r[1])
            t_ort, t_tvm = ordered[len(ordered) // 2]
            rows.append((name, t_ort, t_tvm))
            each = "   " + ", ".join(f"{o / t:.2f}" for o, t in ordered) if repeat > 1 else ""
            out(f"{name:<22}{t_ort * 1e3:>16.3f}{t_tvm * 1e3:>12.3f}{t_ort / t_tvm:>20.2f}x{each}")
    return rows


def _time_case(name, case, nthreads):
    """(onnxruntime seconds, tvmlab seconds) of one fresh instance of each, checked first."""
    import onnxruntime as ort
    nodes, inputs, inits, outputs, opset = case
    m = _model(nodes, inputs, inits, outputs, opset)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = nthreads
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    gmod, _ = compile_onnx(m, {k: v.shape for k, v in inputs.items()})
    for k, v in inputs.items():
        gmod.set_input(k, v)
    gmod.run()
    want = sess.run(None, inputs)
    for i, w in enumerate(want):
        got = gmod.get_output(i).numpy()
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(got, w, err_msg=f"{name} output {i}")
        else:
            np.testing.assert_allclose(got, w, rtol=1e-3, atol=1e-4, err_msg=f"{name} output {i}")
    t_tvm, t_ort = side_by_side(gmod.run, lambda: sess.run(None, inputs), rounds=3, min_ms=20.0)
    return t_ort, t_tvm


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="", help="comma-separated case names")
    p.add_argument("--repeat", type=int, default=3, help="fresh instances per case; the median ratio is shown")
    a = p.parse_args(argv)
    run([s for s in a.only.split(",") if s] or None, repeat=max(1, a.repeat))


if __name__ == "__main__":
    main()
