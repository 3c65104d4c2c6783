"""``python -m tvmlab.bench.onnx_suite``: ONNX's own backend test models through from_onnx and relay.build.

The onnx wheel ships them (onnx/backend/test/data): ``pytorch-converted`` (PyTorch modules exported at
opset 6 to 12), ``pytorch-operator`` (single operators, mostly opset 6) and ``light`` (classic CNNs, opset
9, with constant weights, checked on ``arange`` inputs against stored outputs as onnx's runner does).
Each case is imported, built at opt_level 3, run on its stored inputs and compared with its stored outputs
(onnx's tolerances: rtol 1e-3, atol 1e-7, relaxed to 1e-4 times the output's magnitude for the deep
networks).  A case passes, fails (wrong values), or errs (import or build), with the reason.

    python -m tvmlab.bench.onnx_suite [--suites pytorch-converted,pytorch-operator,light] [-v]
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import sys
import warnings

import numpy as np

SUITES = ("pytorch-converted", "pytorch-operator", "light")


def data_dir():
    """The backend test data of the installed onnx, or None when it has none (or onnx is missing)."""
    try:
        import onnx
    except ImportError:
        return None
    d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    return d if os.path.isdir(d) else None


@dataclasses.dataclass
class Case:
    suite: str
    name: str
    status: str          # "pass", "fail" or "error"
    reason: str = ""


def _tensor(path):
    import onnx
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(t)


def _graph_inputs(model):
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _cases(suite, root):
    """(name, model path, [(inputs, outputs)]) of one suite."""
    base = os.path.join(root, suite)
    if suite == "light":
        for path in sorted(glob.glob(os.path.join(base, "*.onnx"))):
            outs = sorted(glob.glob(os.path.splitext(path)[0] + "_output_*.pb"))
            yield os.path.basename(path)[:-5], path, [(None, [_tensor(p) for p in outs])]
        return
    for d in sorted(glob.glob(os.path.join(base, "test_*"))):
        sets = []
        for s in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            ins = [_tensor(p) for p in sorted(glob.glob(os.path.join(s, "input_*.pb")))]
            outs = [_tensor(p) for p in sorted(glob.glob(os.path.join(s, "output_*.pb")))]
            sets.append((ins, outs))
        yield os.path.basename(d), os.path.join(d, "model.onnx"), sets


def _dummy(info):
    """onnx's runner's input for the light models: ``arange / n`` in the input's shape (unknown dims 1)."""
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in info.type.tensor_type.shape.dim)
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def run_case(suite, name, path, sets):
    import onnx

    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    model = onnx.load(path)
    infos = _graph_inputs(model)
    try:
        first = sets[0][0] if sets[0][0] is not None else [_dummy(i) for i in infos]
        shape = {i.name: x.shape for i, x in zip(infos, first)}
        dtype = {i.name: str(x.dtype) for i, x in zip(infos, first)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod, params = relay.frontend.from_onnx(model, shape=shape, dtype=dtype)
            with tvm.transform.PassContext(opt_level=3):
                lib = relay.build(mod, target="llvm", params=params)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    except Exception as e:      # the reason is what the report is for
        return Case(suite, name, "error", f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
    for ins, outs in sets:
        ins = ins if ins is not None else [_dummy(i) for i in infos]
        try:
            for info, x in zip(infos, ins):
                m.set_input(info.name, x)
            m.run()
            got = [m.get_output(k).numpy() for k in range(m.get_num_outputs())]
        except Exception as e:
            return Case(suite, name, "error", f"run: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        if len(got) != len(outs):
            return Case(suite, name, "fail", f"{len(got)} outputs, expected {len(outs)}")
        for k, (g, w) in enumerate(zip(got, outs)):
            deep = suite == "light"
            atol = 1e-4 * float(np.abs(w).max()) if deep and w.size else 1e-7
            if g.shape != w.shape:
                return Case(suite, name, "fail", f"output {k}: shape {g.shape}, expected {w.shape}")
            if not np.allclose(g, w, rtol=1e-3, atol=atol, equal_nan=True):
                err = float(np.max(np.abs(g.astype(np.float64) - w)))
                return Case(suite, name, "fail", f"output {k}: max abs error {err:.3g}")
    return Case(suite, name, "pass")


def run(suites=SUITES, only=None, verbose=False, out=sys.stdout):
    """Every case of ``suites`` (names containing ``only`` when given): a list of Case, or [] without data."""
    root = data_dir()
    if root is None:
        return []
    cases = []
    for suite in suites:
        for name, path, sets in _cases(suite, root):
            if only and only not in name:
                continue
            c = run_case(suite, name, path, sets)
            cases.append(c)
            if verbose:
                print(f"{suite:<18} {name:<48} {c.status:<6} {c.reason}", file=out, flush=True)
    return cases


def counts(cases):
    """{suite: (passed, total)}."""
    out = {}
    for c in cases:
        p, t = out.get(c.suite, (0, 0))
        out[c.suite] = (p + (c.status == "pass"), t + 1)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tvmlab.bench.onnx_suite", description=__doc__.split("\n")[0])
    p.add_argument("--suites", default=",".join(SUITES))
    p.add_argument("--only", default=None, help="only cases whose name contains this")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    args = p.parse_args(argv)
    if data_dir() is None:
        print("note: the installed onnx ships no backend test data (pip install onnx)")
        return
    cases = run([s for s in args.suites.split(",") if s], args.only, args.verbose)
    for c in cases:
        if c.status != "pass" and not args.verbose:
            print(f"{c.suite:<18} {c.name:<48} {c.status:<6} {c.reason}")
    for suite, (passed, total) in counts(cases).items():
        print(f"{suite}: {passed} of {total} pass")


if __name__ == "__main__":
    main()
