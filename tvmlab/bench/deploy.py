"""``python -m tvmlab.bench.deploy``: what an ahead-of-time model ships, and its speed from C against Python.

For each model, built with ``executor=relay.backend.Executor("aot")``: the
bytes of what ships (``model.so`` with ``model.h``, or ``model.tar`` for
static linking; the graph executor's three files beside them), then ms per
run of the library's ``run`` called from a C program (best mean of several
timed loops, clock_gettime), of ``AotModule.run`` and of ``GraphModule.run``
in this process, timed in turn for a few rounds, all on the same thread count (the C program gets
``TVM_NUM_THREADS`` = this process's OpenMP threads).  The C output must
equal Python's bit for bit.  ``--aarch64`` also cross-compiles each model and
runs it under qemu-aarch64 (its output against x86's; no timing: emulated).

    python -m tvmlab.bench.deploy [--models small_cnn,resnet50] [--aarch64] [--rounds 3]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import tempfile

import numpy as np

from . import models

# Times the model's run: argv[1] input file, argv[2] output file, argv[3] runs per loop, argv[4] loops.
TIMING_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "model.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
  const tvmlab_tensor_info *in = tvmlab_default_input_info(0), *out = tvmlab_default_output_info(0);
  void *x = malloc(in->nbytes), *y = malloc(out->nbytes);
  FILE *f = fopen(argv[1], "rb");
  if (argc < 5 || !f || fread(x, 1, in->nbytes, f) != in->nbytes) return 2;
  int number = atoi(argv[3]), repeat = atoi(argv[4]);
  tvmlab_default_model *m = tvmlab_default_create();
  if (!m || tvmlab_default_set_input(m, in->name, x, in->nbytes) || tvmlab_default_run(m)) {
    fprintf(stderr, "%s\n", tvmlab_default_error(m));
    return 1;
  }
  double best = 1e30;
  for (int r = 0; r < repeat; r++) {
    double t0 = now();
    for (int i = 0; i < number; i++) tvmlab_default_run(m);
    double ms = (now() - t0) * 1e3 / number;
    if (ms < best) best = ms;
  }
  tvmlab_default_get_output(m, 0, y, out->nbytes);
  FILE *o = fopen(argv[2], "wb");
  fwrite(y, 1, out->nbytes, o);
  fclose(o);
  printf("%.6f\n", best);
  tvmlab_default_destroy(m);
  return 0;
}
"""

SHAPES = {"small_cnn": (1, 3, 32, 32), "resnet50": (1, 3, 224, 224), "mobilenet_v2": (1, 3, 224, 224)}


def threads():
    """This process's OpenMP thread count (1 without libgomp)."""
    from ..runtime import llvm_jit
    return ctypes.CDLL(llvm_jit.initialize()).omp_get_max_threads() if llvm_jit.has_openmp() else 1


def _run(cmd, cwd, env=None):
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=env, timeout=3600)
    if run.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{run.stderr}")
    return run.stdout


def _sizes(d):
    return {name: os.path.getsize(os.path.join(d, name)) for name in sorted(os.listdir(d))}


def build(name, target="llvm", executor="aot"):
    import tvmlab as tvm
    from tvmlab import relay
    mod, params = relay.frontend.from_onnx(getattr(models, name)())
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target=target, params=params, executor=relay.backend.Executor(executor))


def bench_model(name, number, repeat, rounds, aarch64, tmp):
    import tvmlab as tvm
    from tvmlab.contrib import graph_executor
    from tvmlab.runtime.executor import AotModule
    d = os.path.join(tmp, name)
    os.makedirs(os.path.join(d, "graph"))
    lib, graph = build(name), build(name, executor="graph")
    lib.export_library(os.path.join(d, "model.so"))
    lib.export_library(os.path.join(d, "model.tar"))
    graph.export_library(os.path.join(d, "graph", "m.so"))
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write(TIMING_C)
    _run(["cc", "-O2", "-o", "main", "main.c", "./model.so", "-Wl,-rpath,$ORIGIN"], d)
    x = np.random.default_rng(0).standard_normal(SHAPES[name]).astype("float32")
    x.tofile(os.path.join(d, "x.bin"))
    n = threads()
    a = AotModule(lib["default"](tvm.cpu(0)))
    g = graph_executor.GraphModule(graph["default"](tvm.cpu(0)))
    g.adaptive_threads = False              # every run on all threads, as the C program
    a.run(data=x)
    g.run(data=x)
    c_ms = aot_ms = graph_ms = float("inf")
    for _ in range(rounds):                 # interleaved, the best of each: a busy machine slows all alike
        c_ms = min(c_ms, float(_run(["./main", "x.bin", "y.bin", number, repeat], d,
                                    env={**os.environ, "TVM_NUM_THREADS": str(n)})))
        aot_ms = min(aot_ms, min(a.benchmark(number=number, repeat=repeat).results) * 1e3)
        graph_ms = min(graph_ms, min(g.benchmark(number=number, repeat=repeat).results) * 1e3)
    want = a.get_output(0).numpy()
    got = np.fromfile(os.path.join(d, "y.bin"), "float32").reshape(want.shape)
    sizes = {**_sizes(d), **{f"graph/{k}": v for k, v in _sizes(os.path.join(d, "graph")).items()}}
    print(f"\n{name}: {len(lib.plan['calls'])} kernel calls, constants {lib.plan['constants_bytes']:,} B, "
          f"workspace {lib.plan['workspace_bytes']:,} B, {n} threads")
    for f in ("model.so", "model.h", "model.tar", "graph/m.so", "graph/m.so.graph.json", "graph/m.so.params.npz"):
        print(f"  {f:<24}{sizes[f]:>14,} B")
    print(f"  C run()          {c_ms:9.3f} ms   (C output == Python's bit for bit: "
          f"{bool(np.array_equal(got, want))}; max |diff| {float(np.abs(got - want).max()):.3g})")
    print(f"  AotModule.run    {aot_ms:9.3f} ms   ({aot_ms / c_ms:.2f}x C)")
    print(f"  GraphModule.run  {graph_ms:9.3f} ms   ({graph_ms / c_ms:.2f}x C)")
    if aarch64:
        arm = build(name, target="llvm -mtriple=aarch64-linux-gnu")
        arm.export_library(os.path.join(d, "arm.so"), cc="aarch64-linux-gnu-gcc")   # arm.h: model.h's API
        _run(["aarch64-linux-gnu-gcc", "-O2", "-o", "main_arm", "main.c", "./arm.so", "-Wl,-rpath,$ORIGIN"], d)
        _run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "./main_arm", "x.bin", "y_arm.bin", 1, 1], d)
        y = np.fromfile(os.path.join(d, "y_arm.bin"), "float32").reshape(want.shape)
        print(f"  aarch64 (qemu): arm.so {os.path.getsize(os.path.join(d, 'arm.so')):,} B, "
              f"max |diff| vs x86 {float(np.abs(y - want).max()):.3g}")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tvmlab.bench.deploy", description=__doc__.split("\n")[0])
    p.add_argument("--models", default="small_cnn", help="comma-separated: " + ", ".join(SHAPES))
    p.add_argument("--number", type=int, default=0, help="runs per timed loop (default: by model)")
    p.add_argument("--repeat", type=int, default=5, help="timed loops; the best mean counts")
    p.add_argument("--rounds", type=int, default=3, help="C, AotModule, GraphModule timed in turn, this often")
    p.add_argument("--aarch64", action="store_true", help="also cross-compile and run under qemu-aarch64")
    args = p.parse_args(argv)
    if shutil.which("cc") is None:
        raise SystemExit("a C compiler (cc) is needed to build the C program")
    missing = [t for t in ("aarch64-linux-gnu-gcc", "qemu-aarch64") if args.aarch64 and shutil.which(t) is None]
    if missing:
        raise SystemExit(f"--aarch64 needs {', '.join(missing)} (apt-get install gcc-aarch64-linux-gnu "
                         "libc6-arm64-cross qemu-user)")
    with tempfile.TemporaryDirectory(prefix="tvmlab-deploy-") as tmp:
        for name in args.models.split(","):
            if name not in SHAPES:
                raise SystemExit(f"unknown model {name!r}; known: {', '.join(SHAPES)}")
            number = args.number or (200 if name == "small_cnn" else 5)
            bench_model(name, number, args.repeat, args.rounds, args.aarch64, tmp)


if __name__ == "__main__":
    main()
