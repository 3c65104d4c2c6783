"""``python -m tvmlab.bench.graph``: whole ONNX models built by tvmlab against onnxruntime, side by side.

For each model (a small CNN and a ResNet-50-shaped network, 224x224, batch
1, float32, random weights built with onnx.helper) the table gives
onnxruntime's time and tvmlab's at opt_level 3, then with FuseOps off and with
AlterOpLayout off, so the help of each pass shows as a ratio. onnxruntime
runs with as many intra-op threads as tvmlab's parallel loops use. Every
tvmlab build is first checked against onnxruntime's output (rtol 1e-3).

    python -m tvmlab.bench.graph [--models small_cnn,resnet50,bert,gpt2,vit] [--quick] [--repeat N]
                                 [--fixed-threads] [--profile] [--overhead] [--wait-policy]

The transformers (``bert``: BERT-base, ``gpt2``: GPT-2 small, both seq 128; ``vit``: ViT-B/16 at 224x224;
batch 1) are checked to 1e-4 relative.  Thread counts follow OMP_NUM_THREADS (``OMP_NUM_THREADS=1`` compares
one thread with onnxruntime on one).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import numpy as np

from ..runtime.llvm_jit import SPINCOUNT
from . import models
from .peak import threads
from .timing import side_by_side

# (name, passes disabled[, PassContext config])
VARIANTS = (("tvmlab", ()), ("no FuseOps", ("FuseOps",)), ("no AlterOpLayout", ("AlterOpLayout",)),
            ("no Winograd", (), {"relay.conv2d_winograd": False}))


FIXED_THREADS = False       # --fixed-threads: every run on all threads (GraphModule.adaptive_threads off)


def compile_onnx(model, shape, opt_level=3, disabled_pass=(), target="llvm", config=None):
    """from_onnx + relay.build + GraphModule: the TVM tutorial's three steps; also returns build seconds."""
    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    t0 = time.perf_counter()
    mod, params = relay.frontend.from_onnx(model, shape=shape)
    with tvm.transform.PassContext(opt_level=opt_level, disabled_pass=list(disabled_pass), config=config):
        lib = relay.build(mod, target=target, params=params)
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    if FIXED_THREADS:
        gmod.adaptive_threads = False
    return gmod, time.perf_counter() - t0


def ort_session(model, nthreads):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = nthreads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


@dataclasses.dataclass
class Result:
    model: str
    variant: str
    tvmlab_s: float
    ort_s: float
    build_s: float
    max_rel_err: float
    slowdown: float = 1.0      # this variant's time / the full pipeline's, timed side by side

    @property
    def ratio(self):
        return self.ort_s / self.tvmlab_s


def model_feeds(model, shape=None, seed=0):
    """Random inputs for every graph input of ``model``: floats from a normal distribution (the first input
    shaped ``shape`` when given), int64 token ids below the size of the embedding table that reads them, an
    ``attention_mask`` of ones with the last quarter padded (zeros)."""
    import onnx
    rng = np.random.default_rng(seed)
    tables = {i.name: i.dims[0] for i in model.graph.initializer if len(i.dims) == 2}
    readers = {}
    for n in model.graph.node:
        if n.op_type == "Gather" and n.input[0] in tables:
            readers[n.input[1]] = tables[n.input[0]]
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for k, info in enumerate(i for i in model.graph.input if i.name not in inits):
        dims = tuple(d.dim_value for d in info.type.tensor_type.shape.dim)
        if k == 0 and shape is not None:
            dims = tuple(shape)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)
        if dtype.kind == "f":
            feeds[info.name] = rng.standard_normal(dims).astype(dtype)
        elif info.name == "attention_mask":
            mask = np.ones(dims, dtype)
            mask[..., dims[-1] - dims[-1] // 4:] = 0
            feeds[info.name] = mask
        else:
            feeds[info.name] = rng.integers(0, readers.get(info.name, 2), dims).astype(dtype)
    return feeds


def _checked_build(name, variant, model, feeds, disabled, want, rtol=1e-3, config=None):
    gmod, build_s = compile_onnx(model, {k: v.shape for k, v in feeds.items()}, disabled_pass=disabled,
                                 config=config)
    for k, v in feeds.items():
        gmod.set_input(k, v)
    gmod.run()
    errs = []
    for i, w in enumerate(want):
        got = gmod.get_output(i).numpy()
        scale = float(np.abs(w).max()) or 1.0
        np.testing.assert_allclose(got, w, rtol=rtol, atol=rtol / 10 * scale,
                                   err_msg=f"{name} ({variant}) output {i} disagrees with onnxruntime")
        errs.append(float(np.max(np.abs(got - w)) / scale))
    return gmod, build_s, max(errs)


def bench_model(name, model, shape, variants=VARIANTS, rounds=3, seed=0, min_ms=200, rtol=1e-3):
    """One Result per variant; raises AssertionError if an output disagrees with onnxruntime.

    ``shape`` is the first input's shape (the others random as ``model_feeds`` makes them) or a dict of
    inputs by name. The first variant is timed against onnxruntime; each other one against onnxruntime
    and against the first, so a pass's effect is a ratio of two timings taken side by side.
    """
    nthreads = threads()
    feeds = dict(shape) if isinstance(shape, dict) else model_feeds(model, shape, seed)
    sess = ort_session(model, nthreads)
    want = sess.run(None, feeds)
    results, full = [], None
    from tvmlab.relay import transform as rt
    for variant, disabled, *config in variants:
        missing = [p for p in disabled if not hasattr(rt, p)]
        if missing:
            variant += " (absent)"          # the pass is not in this build: the row measures noise
        gmod, build_s, err = _checked_build(name, variant, model, feeds, disabled, want, rtol,
                                            config[0] if config else None)
        ours, theirs = side_by_side(gmod.run, lambda: sess.run(None, feeds), rounds=rounds, min_ms=min_ms)
        slowdown = 1.0
        if full is None:
            full = gmod
        else:
            mine, base = side_by_side(gmod.run, full.run, rounds=rounds, min_ms=min_ms)
            slowdown = mine / base
        results.append(Result(name, variant, ours, theirs, build_s, err, slowdown))
        print(f"  {name} {variant}: {theirs / ours:.2f}x onnxruntime"
              + (f", {slowdown:.2f}x the full pipeline's time" if slowdown != 1.0 else ""),
              file=sys.stderr, flush=True)
    return results


def format_table(results):
    w = max([len("model")] + [len(r.model) for r in results]) + 2
    head = (f"{'model':<{w}}{'variant':<18}{'vs ort':>8}{'tvmlab ms':>11}{'ort ms':>9}{'pass off':>10}"
            f"{'build s':>9}{'max err':>10}")
    out = [head, "-" * len(head)]
    for r in results:
        off = f"{r.slowdown:>9.2f}x" if r.variant != VARIANTS[0][0] else f"{'':>10}"
        out.append(f"{r.model:<{w}}{r.variant:<18}{r.ratio:>7.2f}x{r.tvmlab_s * 1e3:>11.2f}{r.ort_s * 1e3:>9.2f}"
                   f"{off}{r.build_s:>9.1f}{r.max_rel_err:>10.1e}")
    out.append(f"vs ort = onnxruntime time / tvmlab time (> 1: tvmlab is faster), both on {threads()} threads; "
               f"pass off = time with that pass off / time of the full pipeline (> 1: the pass helps), "
               f"timed side by side; max err relative to the output's largest magnitude")
    out.append(load_note())
    return "\n".join(out)


def load_note():
    """The machine's load average: parallel timings beside other busy processes are not a quiet machine's."""
    import os
    try:
        load = os.getloadavg()[0]
    except OSError:
        return "load average unknown"
    busy = load > threads() + 0.5       # this benchmark's own threads count too
    return (f"load average (1 min) {load:.2f} on {os.cpu_count()} CPUs, this benchmark's {threads()} threads "
            "included" + ("; other processes were busy, so these timings are not a quiet machine's" if busy else ""))


MODELS = {
    "small_cnn": lambda: (models.small_cnn(size=64), (1, 3, 64, 64)),
    "resnet50": lambda: (models.resnet50(), (1, 3, 224, 224)),
    "mobilenet_v2": lambda: (models.mobilenet_v2(), (1, 3, 224, 224)),
    "bert": lambda: (models.bert(), None),          # BERT-base, seq 128, batch 1
    "gpt2": lambda: (models.gpt2(), None),          # GPT-2 small, seq 128, batch 1
    "vit": lambda: (models.vit(), None),            # ViT-B/16, 224x224, batch 1
    "bert_small": lambda: (models.bert(layers=2, hidden=256, heads=4, seq=64, vocab=1000), None),
}
RTOL = {"bert": 1e-4, "gpt2": 1e-4, "vit": 1e-4}    # the transformers are checked to 1e-4 relative


def run(names=("small_cnn", "resnet50"), variants=VARIANTS, out=sys.stdout, rounds=3):
    results = []
    for name in names:
        if name not in MODELS:
            raise SystemExit(f"unknown model {name!r}; choose from {sorted(MODELS)}")
        model, shape = MODELS[name]()
        results += bench_model(name, model, shape, variants=variants, rounds=rounds, rtol=RTOL.get(name, 1e-3))
    print(format_table(results), file=out, flush=True)
    return results


def profile(gmod, number=10, rounds=5):
    """[(kernel name, ms per call, output shape)] per kernel call, slowest first (``GraphModule.profile``'s rows)."""
    return [(r["name"], r["ms"], r["shape"]) for r in gmod.profile(number=number, repeat=rounds).rows]


def format_profile(rows, top=15):
    total = sum(r[1] for r in rows)
    out = [f"{'kernel':<64}{'ms':>8}{'share':>7}  output", "-" * 96]
    for name, ms, shape in rows[:top]:
        out.append(f"{name[:63]:<64}{ms:>8.3f}{100 * ms / total:>6.1f}%  {shape}")
    out.append(f"{len(rows)} kernel calls, {total:.2f} ms in all")
    return "\n".join(out)


def ort_profile(model, feeds, nthreads=None, runs=20):
    """onnxruntime's own per-node profile (SessionOptions.enable_profiling) of ``runs`` runs on ``feeds`` (a dict
    of inputs, or the first input's array): ``{op type: ms per run}`` and the mean whole-run ms, for comparison
    with ``GraphModule.profile``."""
    import json
    import os
    import tempfile

    import onnxruntime as ort
    if not isinstance(feeds, dict):
        feeds = {model.graph.input[0].name: feeds}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = nthreads or threads()
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    with tempfile.TemporaryDirectory() as d:
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(d, "ort")
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        for _ in range(runs + 3):
            sess.run(None, feeds)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    runs_at = sorted((e["ts"], e["dur"]) for e in events if e.get("cat") == "Session" and e["name"] == "model_run")
    start = runs_at[3][0] if len(runs_at) > 3 else 0        # the first runs warm up
    run_us = [d for t, d in runs_at if t >= start]
    by_op = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= start:
            op = e.get("args", {}).get("op_name", "?")
            by_op[op] = by_op.get(op, 0.0) + e["dur"] / 1e3 / max(len(run_us), 1)
    run_ms = (sorted(run_us)[len(run_us) // 2] / 1e3) if run_us else float("nan")
    return dict(sorted(by_op.items(), key=lambda kv: -kv[1])), run_ms


def format_ort_profile(by_op, run_ms):
    out = [f"{'onnxruntime op type':<40}{'ms/run':>9}"]
    out += [f"{op:<40}{ms:>9.3f}" for op, ms in by_op.items()]
    out.append(f"sum {sum(by_op.values()):.3f} ms per run; median run {run_ms:.3f} ms (profiling on)")
    return "\n".join(out)


def node_overhead(nodes=200, rounds=3):
    """Executor cost per graph node: a chain of ``nodes`` tiny kernels (relu / add on 16 floats, fusion off) run
    by the native runner and by a Python loop over the same prepared calls, side by side.
    Returns ``{"native": ns per node, "python": ns per node}``."""
    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    x = relay.var("x", shape=(1, 16), dtype="float32")
    y = x
    for i in range(nodes):
        y = relay.nn.relu(y) if i % 2 == 0 else relay.add(y, relay.const(np.float32(1.0)))
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["FuseOps"]):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    ex = graph_executor.GraphModule(lib["default"](tvm.cpu(0))).module
    ex.set_input("x", np.random.default_rng(0).random((1, 16), dtype=np.float32))
    calls = list(ex.calls)

    def python_loop():
        for call in calls:
            call()
    native, py = side_by_side(ex.run, python_loop, rounds=rounds, min_ms=20, settle=0.01)
    return {"native": native / len(calls) * 1e9, "python": py / len(calls) * 1e9}


WAIT_POLICIES = (("libgomp's own (spin 300000)", {"GOMP_SPINCOUNT": "300000"}),
                 (f"tvmlab's default (spin {SPINCOUNT})", {}),
                 ("OMP_WAIT_POLICY=passive", {"OMP_WAIT_POLICY": "passive"}))


def _compiled(model, feeds):
    """``model`` compiled for the shapes of ``feeds``, its inputs set."""
    gmod, _ = compile_onnx(model, {k: v.shape for k, v in feeds.items()})
    for k, v in feeds.items():
        gmod.set_input(k, v)
    return gmod


def _loop_child(name, seconds):
    """Run ``name`` back to back for ``seconds``; print best / median / wall ms per run as JSON (one line)."""
    import json
    model, shape = MODELS[name]()
    gmod = _compiled(model, model_feeds(model, shape))
    run = gmod.module.run
    run()
    ts, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds or len(ts) < 5:
        t = time.perf_counter()
        run()
        ts.append(time.perf_counter() - t)
    wall = (time.perf_counter() - t0) / len(ts)
    ts.sort()
    print(json.dumps({"best": ts[0] * 1e3, "median": ts[len(ts) // 2] * 1e3, "wall": wall * 1e3}), flush=True)


def wait_policies(name="small_cnn", seconds=2.0, out=sys.stdout):
    """Each libgomp wait policy in a fresh process (it is read when libgomp loads), alone and beside a second
    process running the same model with the same policy (two tvmlab processes on the machine). Rows:
    (load, policy, best ms, median ms, wall ms per run: the time between runs included)."""
    import json
    import os
    import subprocess
    rows = []
    for load in ("alone", "beside another"):
        for policy, env in WAIT_POLICIES:
            e = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
            e.update(env)
            cmd = [sys.executable, "-m", "tvmlab.bench.graph", "--loop-child", name]
            other = None
            if load != "alone":
                other = subprocess.Popen(cmd + ["1000"], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(4)       # its build, then it runs
            try:
                res = subprocess.run(cmd + [str(seconds)], env=e, capture_output=True, text=True, timeout=600)
            finally:
                if other is not None:
                    other.kill()
                    other.wait()
            r = json.loads(res.stdout.strip().splitlines()[-1])
            rows.append((load, policy, r["best"], r["median"], r["wall"]))
            print(f"{name} {load:<15} {policy:<30} best {r['best']:8.3f} ms  median {r['median']:8.3f} ms  "
                  f"wall {r['wall']:8.3f} ms per run", file=out, flush=True)
    return rows


def run_if_available():
    """The default run, or a note when onnx/onnxruntime (the ``graph`` extra) are missing."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as e:
        print(f"note: whole-model benchmark skipped: {e} (pip install 'tvmlab[graph]')", flush=True)
        return []
    return run()


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tvmlab.bench.graph", description=__doc__.split("\n")[0])
    p.add_argument("--models", default="small_cnn,resnet50", help="comma-separated: " + ", ".join(MODELS))
    p.add_argument("--quick", action="store_true", help="only the full pipeline, no pass-off variants")
    p.add_argument("--profile", action="store_true",
                   help="time each kernel of the full pipeline instead, beside onnxruntime's per-op profile")
    p.add_argument("--overhead", action="store_true", help="executor cost per node (native runner vs Python loop)")
    p.add_argument("--wait-policy", action="store_true",
                   help="libgomp wait policies, each in a fresh process, alone and beside another tvmlab process")
    p.add_argument("--fixed-threads", action="store_true",
                   help="tvmlab runs on all threads every run (no switch to one thread when runs slow down)")
    p.add_argument("--repeat", type=int, default=1, help="run the comparison this many times; the median ratio")
    p.add_argument("--loop-child", nargs=2, metavar=("MODEL", "SECONDS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    global FIXED_THREADS
    FIXED_THREADS = args.fixed_threads
    if args.loop_child:
        _loop_child(args.loop_child[0], float(args.loop_child[1]))
        return
    if args.wait_policy:
        for name in [m for m in args.models.split(",") if m]:
            wait_policies(name)
        return
    if args.overhead:
        o = node_overhead()
        print(f"executor cost per node: {o['native']:.0f} ns (one native call per run), {o['python']:.0f} ns "
              f"(one ctypes call per node); {o['python'] / o['native']:.0f}x", flush=True)
        return
    names = [m for m in args.models.split(",") if m]
    if args.profile:
        for name in names:
            model, shape = MODELS[name]()
            feeds = model_feeds(model, shape)
            rep = _compiled(model, feeds).profile(number=10, repeat=3)
            print(f"{name} (tvmlab, each kernel alone):\n{rep.table(top=25)}\n", flush=True)
            print(f"{name} (onnxruntime):\n{format_ort_profile(*ort_profile(model, feeds))}\n", flush=True)
        return
    if args.repeat > 1:
        repeated(names, args.repeat, VARIANTS[:1] if args.quick else VARIANTS)
        return
    run(names, VARIANTS[:1] if args.quick else VARIANTS)


def repeated(names, times, variants=VARIANTS[:1], out=sys.stdout):
    """``run`` ``times`` times (each model built once per time): every ratio, then the median per model and
    variant (the machine is shared: one run's ratio says little)."""
    ratios = {}
    for k in range(times):
        print(f"-- run {k + 1} of {times}", file=out, flush=True)
        for r in run(names, variants, out=out):
            ratios.setdefault((r.model, r.variant), []).append(r.ratio)
    print(f"median of {times} runs (onnxruntime time / tvmlab time, {threads()} threads"
          f"{', tvmlab on all threads every run' if FIXED_THREADS else ''}):", file=out)
    for (model, variant), rs in ratios.items():
        print(f"  {model:<12}{variant:<18}{float(np.median(rs)):.2f}x   ({', '.join(f'{x:.2f}' for x in rs)})",
              file=out, flush=True)
    return ratios


if __name__ == "__main__":
    main()
