"""A model compiled ahead of time, run from C without Python: the exported library and its header, compiled
with ``cc`` here, statically linked from its .tar, and cross-compiled for aarch64 and run under qemu."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tarfile

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.relay.backend import Executor
from tvmlab.runtime import llvm_jit
from tvmlab.runtime.executor import AotModule

CC = next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang) to build the C programs")
AARCH64_CC, QEMU, SYSROOT = "aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu"
CROSS_MISSING = [what for what, ok in ((f"{AARCH64_CC} (gcc-aarch64-linux-gnu)", shutil.which(AARCH64_CC)),
                                       (f"{QEMU} (qemu-user)", shutil.which(QEMU)),
                                       (f"{SYSROOT} (libc6-arm64-cross)", os.path.isdir(SYSROOT))) if not ok]

# The whole program: read the input from a file, run the model, write the first output to stdout.
MAIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "model.h"

int main(int argc, char **argv) {
  const tvmlab_tensor_info *in = tvmlab_default_input_info(0), *out = tvmlab_default_output_info(0);
  void *x = malloc(in->nbytes), *y = malloc(out->nbytes);
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(x, 1, in->nbytes, f) != in->nbytes) return 2;
  tvmlab_default_model *m = tvmlab_default_create();
  if (!m || tvmlab_default_set_input(m, in->name, x, in->nbytes) || tvmlab_default_run(m) ||
      tvmlab_default_get_output(m, 0, y, out->nbytes)) {
    fprintf(stderr, "%s\n", tvmlab_default_error(m));
    return 1;
  }
  fwrite(y, 1, out->nbytes, stdout);
  tvmlab_default_destroy(m);
  return 0;
}
"""


def onnx_model(name):
    """(relay module, params) of ``tvmlab.bench.models.<name>()``."""
    pytest.importorskip("onnx")
    from tvmlab.bench import models
    return relay.frontend.from_onnx(getattr(models, name)())


def small_cnn(target="llvm", mod_name="default", executor=Executor("aot")):
    mod, params = onnx_model("small_cnn")
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target=target, params=params, executor=executor, mod_name=mod_name)


@pytest.fixture(scope="module")
def cnn():
    return small_cnn()


def compile_c(tmp_path, source, *args, cc=None, name="main"):
    (tmp_path / f"{name}.c").write_text(source)
    cmd = [cc or CC, "-O2", "-Wall", "-Werror", "-o", str(tmp_path / name), str(tmp_path / f"{name}.c"), *args]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, f"{' '.join(cmd)}\n{run.stderr}"
    return tmp_path / name


def run_c(cmd, tmp_path, threads=None, **env):
    env = {**os.environ, **env}
    if threads is not None:
        env["TVM_NUM_THREADS"] = str(threads)
    run = subprocess.run(list(map(str, cmd)), capture_output=True, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    return run


def python_threads():
    """The thread count this process's parallel loops run on (OpenMP's), or None without OpenMP."""
    if not llvm_jit.has_openmp():
        return None
    return ctypes.CDLL(llvm_jit.initialize()).omp_get_max_threads()


def python_output(lib, x):
    m = AotModule(lib["default"](tvm.cpu(0)))
    m.run(data=x)
    return m.get_output(0).numpy()


def c_equals_python(lib, x, tmp_path):
    """Export ``lib``, run MAIN_C on ``x`` on this process's thread count: its output, asserted equal to
    Python's to the bit."""
    lib.export_library(tmp_path / "model.so")
    main = compile_c(tmp_path, MAIN_C, "./model.so", "-Wl,-rpath,$ORIGIN")
    x.tofile(tmp_path / "x.bin")
    want = python_output(lib, x)
    got = np.frombuffer(run_c([main, "x.bin"], tmp_path, threads=python_threads()).stdout, "float32")
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    return want


def test_a_c_program_runs_the_small_cnn_bit_for_bit_as_python(cnn, rng, tmp_path):
    from tvmlab.contrib import graph_executor
    x = rng.standard_normal((1, 3, 32, 32)).astype("float32")
    want = c_equals_python(cnn, x, tmp_path)
    # the graph executor and the library loaded back into Python agree to the bit as well
    g = graph_executor.GraphModule(small_cnn(executor=None)["default"](tvm.cpu(0)))
    g.run(data=x)
    np.testing.assert_array_equal(g.get_output(0).numpy(), want)
    np.testing.assert_array_equal(python_output(tvm.runtime.load_module(tmp_path / "model.so"), x), want)
    assert np.isclose(want.sum(), 1.0, atol=1e-5) and (want > 0).all()       # a softmax


API_C = r"""
#include <stdio.h>
#include "model.h"

static int threads(void) {      /* this process's threads, from /proc: libgomp's team stays after a run */
  char line[256];
  int n = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  if (f != NULL) fclose(f);
  return n;
}

int main(void) {
  const tvmlab_tensor_info *in = tvmlab_default_input_info(0), *out = tvmlab_default_output_info(0);
  static float x[3 * 32 * 32], y[10];
  printf("inputs %d, outputs %d\n", tvmlab_default_num_inputs(), tvmlab_default_num_outputs());
  printf("in %s %s %d [%d %d %d %d] %zu %zu\n", in->name, in->dtype, in->ndim, (int)in->shape[0],
         (int)in->shape[1], (int)in->shape[2], (int)in->shape[3], in->size, in->nbytes);
  printf("out %s %s %d [%d %d] %zu\n", out->name, out->dtype, out->ndim, (int)out->shape[0], (int)out->shape[1],
         out->nbytes);
  printf("none %d %d %d %d\n", tvmlab_default_input_info(1) == NULL, tvmlab_default_output_info(-1) == NULL,
         tvmlab_default_input_index("data"), tvmlab_default_input_index("nope"));
  tvmlab_default_model *m = tvmlab_default_create();
  printf("%d %s\n", tvmlab_default_set_input(m, "nope", x, sizeof x), tvmlab_default_error(m));
  printf("%d %s\n", tvmlab_default_set_input(m, "data", x, 12), tvmlab_default_error(m));
  printf("%d %s\n", tvmlab_default_get_output(m, 1, y, sizeof y), tvmlab_default_error(m));
  printf("%d %s\n", tvmlab_default_get_output(m, 0, y, 4), tvmlab_default_error(m));
  int rc = tvmlab_default_set_input(m, "data", x, sizeof x) | tvmlab_default_run(m);
  printf("run %d [%s] threads %d\n", rc, tvmlab_default_error(m), threads());
  tvmlab_default_destroy(m);
  return 0;
}
"""


def test_the_c_api_describes_the_model_says_what_is_wrong_and_honours_the_thread_variables(cnn, tmp_path):
    cnn.export_library(tmp_path / "model.so")
    api = compile_c(tmp_path, API_C, "./model.so", "-Wl,-rpath,$ORIGIN")
    lines = run_c([api], tmp_path).stdout.decode().splitlines()
    assert lines[:4] == ["inputs 1, outputs 1", "in data float32 4 [1 3 32 32] 3072 12288",
                         "out output float32 2 [1 10] 40", "none 1 1 0 -1"]
    assert lines[4] == "-1 set_input: the model has no input 'nope'; inputs: data"
    assert lines[5] == "-1 set_input: input 'data' (3072 elements of float32) takes 12288 bytes, got 12"
    assert lines[6] == "-1 get_output: output index 1 is out of range: the model has 1 outputs"
    assert lines[7] == "-1 get_output: output 'output' (10 elements of float32) takes 40 bytes, got 4"
    assert lines[8].startswith("run 0 [] threads ")
    if python_threads() is None:
        pytest.skip("libgomp is not available: the library runs its loops on one thread")
    # TVM_NUM_THREADS, else OMP_NUM_THREADS, sets the team that runs the parallel loops (any core count)
    for env, want in (({"TVM_NUM_THREADS": "3"}, 3), ({"OMP_NUM_THREADS": "2"}, 2),
                      ({"TVM_NUM_THREADS": "1", "OMP_NUM_THREADS": "3"}, 1)):
        env = {"TVM_NUM_THREADS": "", "OMP_NUM_THREADS": "", **env}
        clean = {k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS")}
        run = subprocess.run([str(api)], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                             env={**clean, **{k: v for k, v in env.items() if v}})
        assert run.stdout.splitlines()[8] == f"run 0 [] threads {want}", env


FAILS_C = r"""
#include <stdio.h>
#include "fails.h"

int main(void) {
  float x[4] = {5, 1, 2, 3}, y[4];
  tvmlab_checked_model *m = tvmlab_checked_create();
  tvmlab_checked_set_input(m, "x", x, sizeof x);
  printf("%d %s\n", tvmlab_checked_run(m), tvmlab_checked_error(m));
  x[0] = 0;
  tvmlab_checked_set_input(m, "x", x, sizeof x);
  printf("%d [%s] ", tvmlab_checked_run(m), tvmlab_checked_error(m));
  tvmlab_checked_get_output(m, 0, y, sizeof y);
  printf("%.6f\n", y[0]);
  tvmlab_checked_destroy(m);
  return 0;
}
"""


def test_a_failing_kernel_reports_its_message_through_the_c_api(tmp_path):
    from test_aot import failing_model
    failing_model("checked").export_library(tmp_path / "fails.so")
    prog = compile_c(tmp_path, FAILS_C, "./fails.so", "-Wl,-rpath,$ORIGIN")
    lines = run_c([prog], tmp_path).stdout.decode().splitlines()
    assert lines[0].startswith("-1 run: kernel 1 (fused_negative): assertion failed: the first element is below "
                               "100 (condition: "), lines
    assert lines[1] == f"0 [] {np.exp(-1.0):.6f}"


TWO_C = r"""
#include <stdio.h>
#include "cnn.h"
#include "mlp.h"

int main(void) {          /* two models in one program: one image through both, the logits to stdout */
  static float x[3 * 32 * 32], h[32], y[10], z[10];
  FILE *f = fopen("x.bin", "rb");
  if (!f || fread(x, sizeof x, 1, f) != 1 || fread(h, sizeof h, 1, f) != 1) return 2;
  tvmlab_cnn_model *a = tvmlab_cnn_create();
  tvmlab_mlp_model *b = tvmlab_mlp_create();
  if (tvmlab_cnn_set_input(a, "data", x, sizeof x) || tvmlab_cnn_run(a) || tvmlab_cnn_get_output(a, 0, y, sizeof y) ||
      tvmlab_mlp_set_input(b, "h", h, sizeof h) || tvmlab_mlp_run(b) || tvmlab_mlp_get_output(b, 0, z, sizeof z))
    return 1;
  fwrite(y, sizeof y, 1, stdout);
  fwrite(z, sizeof z, 1, stdout);
  tvmlab_cnn_destroy(a);
  tvmlab_mlp_destroy(b);
  return 0;
}
"""


def mlp(rng):
    """dense + bias + softmax: the small CNN's last kernels have the same names."""
    h = relay.var("h", shape=(1, 32))
    w, b = relay.var("w", shape=(10, 32)), relay.var("b", shape=(10,))
    f = relay.Function([h, w, b], relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(h, w), b)))
    params = {"w": rng.standard_normal((10, 32)).astype("float32"), "b": rng.standard_normal(10).astype("float32")}
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(f), "llvm", params=params, executor=Executor("aot"), mod_name="mlp")


def test_two_models_link_into_one_program_statically_and_as_shared_libraries(rng, tmp_path):
    cnn, net = small_cnn(mod_name="cnn"), mlp(rng)
    shared = set(cnn.get_lib().function_names) & set(net.get_lib().function_names)
    assert shared, "the two models should share kernel names, to show they do not clash"
    x = rng.standard_normal((1, 3, 32, 32)).astype("float32")
    h = rng.standard_normal((1, 32)).astype("float32")
    (tmp_path / "x.bin").write_bytes(x.tobytes() + h.tobytes())
    a = AotModule(cnn["cnn"](tvm.cpu(0)))
    a.run(data=x)
    b = AotModule(net["mlp"](tvm.cpu(0)))
    b.run(h=h)
    want = np.concatenate([a.get_output(0).numpy().ravel(), b.get_output(0).numpy().ravel()])
    for lib, name in ((cnn, "cnn"), (net, "mlp")):
        lib.export_library(tmp_path / f"{name}.tar")
        lib.export_library(tmp_path / f"{name}.so")
        with tarfile.open(tmp_path / f"{name}.tar") as tar:
            assert sorted(tar.getnames()) == [f"{name}.h", f"{name}.o"]
            for member in tar.getnames():
                (tmp_path / "static").mkdir(exist_ok=True)
                (tmp_path / "static" / member).write_bytes(tar.extractfile(member).read())
    gomp = ["-lgomp"] if llvm_jit.has_openmp() else []
    static = compile_c(tmp_path / "static", TWO_C, "cnn.o", "mlp.o", "-lm", *gomp, name="two")
    dynamic = compile_c(tmp_path, TWO_C, "./cnn.so", "./mlp.so", "-Wl,-rpath,$ORIGIN", name="two")
    for prog, where in ((static, tmp_path / "static"), (dynamic, tmp_path)):
        (where / "x.bin").write_bytes((tmp_path / "x.bin").read_bytes())
        got = np.frombuffer(run_c([prog], where, threads=python_threads()).stdout, "float32")
        np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(bool(CROSS_MISSING), reason=f"cross-compiling for aarch64 needs {', '.join(CROSS_MISSING)} "
                    "(Debian packages; `make test` installs them when run as root)")
def test_cross_compiled_for_aarch64_and_run_under_qemu(cnn, rng, tmp_path):
    arm = small_cnn("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72")
    arm.export_library(tmp_path / "model.so", cc=AARCH64_CC)
    assert tvm.runtime.library.elf_machine(tmp_path / "model.so") == 183
    main = compile_c(tmp_path, MAIN_C, "./model.so", "-Wl,-rpath,$ORIGIN", cc=AARCH64_CC)
    x = rng.standard_normal((1, 3, 32, 32)).astype("float32")
    x.tofile(tmp_path / "x.bin")
    want = python_output(cnn, x)
    for threads in (1, 2):
        run = run_c([QEMU, "-L", SYSROOT, main, "x.bin"], tmp_path, threads=threads)
        got = np.frombuffer(run.stdout, "float32").reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(tvm.TVMLabError, match="holds code for aarch64"):
        tvm.runtime.load_module(tmp_path / "model.so")


@pytest.mark.slow
def test_resnet50_from_c_matches_python_bit_for_bit(rng, tmp_path):
    mod, params = onnx_model("resnet50")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params, executor=Executor("aot"))
    c_equals_python(lib, rng.standard_normal((1, 3, 224, 224)).astype("float32"), tmp_path)
