"""Ahead-of-time model tests run from C, as in TVM's ``tvm.testing.aot``.

    outputs = generate_ref_data(mod, {"data": x}, params)          # graph executor in Python
    compile_and_run(AOTTestModel(module=mod, inputs={"data": x}, outputs=outputs, params=params),
                    AOT_DEFAULT_RUNNER, interface_api="c", use_unpacked_api=True)

``compile_and_run`` builds each model with ``Executor("aot")``, exports it as
a static object with its C API (``export_library("name.tar")``), writes a C
``main`` that sets the inputs, runs, and compares every output with the
expected one, compiles it with the system C compiler and runs it: a mismatch
raises ``AOTTestFailure`` with the program's report.  The host is the only
runner: TVM's Arm Corstone-300 runner needs its FVP, which tvmlab does not
drive (``tvm.testing.requires_corstone300`` skips such tests).
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import tarfile
import tempfile
from typing import Any, Dict, List, Optional, Union

import numpy as np

from ..errors import DeviceError, RuntimeArgError, TVMLabError

AOT_SUCCESS_TOKEN = "AOT_TEST_SUCCESS"
AOT_FAILURE_TOKEN = "AOT_TEST_FAILURE"

# numpy dtype -> the C type the generated main compares in
C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t",
           "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t", "float32": "float", "float64": "double",
           "bool": "uint8_t"}


class AOTTestFailure(TVMLabError, AssertionError):
    """The C program found an output that differs from the expected one, or could not run the model."""


@dataclasses.dataclass
class AOTTestModel:
    """A model under test: ``module`` (a relay IRModule), ``inputs`` {name: array}, the expected
    ``outputs`` ({name: array} as ``generate_ref_data`` returns, or a list in output order), the
    absolute ``output_tolerance`` (default 0.001 for floats, exact for integers), the model's ``name``
    (its C prefix ``tvmlab_<name>``) and ``params`` bound as constants.  ``extra_memory_in_bytes`` is
    accepted for TVM's tests: the host program allocates the workspace itself."""
    module: Any
    inputs: Dict[str, np.ndarray]
    outputs: Union[Dict[str, np.ndarray], List[np.ndarray]]
    output_tolerance: Optional[Union[int, float]] = None
    name: str = "default"
    params: Optional[Dict[str, np.ndarray]] = None
    extra_memory_in_bytes: int = 0


@dataclasses.dataclass
class AOTTestRunner:
    """Where the test program runs: ``makefile="default"`` is this machine (``AOT_DEFAULT_RUNNER``);
    ``prologue`` / ``epilogue`` are C statements put before and after the checks in ``main``,
    ``includes`` headers it includes, ``pass_config`` extra PassContext options for the build."""
    makefile: str = "default"
    prologue: str = ""
    epilogue: str = ""
    includes: List[str] = dataclasses.field(default_factory=list)
    parameters: Dict[str, str] = dataclasses.field(default_factory=dict)
    pass_config: Dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class AOTCompiledTestModel:
    """A model and what ``relay.build`` made of it (an AOTExecutorFactoryModule)."""
    model: AOTTestModel
    executor_factory: Any


def _host_target(target):
    """TVM's AOT tests build for its C source target; tvmlab builds the same C API with LLVM for this
    machine, so ``"c ..."`` (its options name a microcontroller) becomes ``"llvm"``."""
    text = str(target).strip()
    return "llvm" if text.split(" ")[0] == "c" else text


def _check_interface(interface_api, use_unpacked_api):
    if interface_api not in ("c", "packed"):
        raise RuntimeArgError(f"compile_and_run: interface_api is 'c' or 'packed', got {interface_api!r}")
    if interface_api == "c" and not use_unpacked_api:
        raise RuntimeArgError("compile_and_run: interface_api='c' needs use_unpacked_api=True (the C interface "
                              "calls the operators unpacked)")


def _check_model(model, seen):
    if not isinstance(model, AOTTestModel):
        raise RuntimeArgError(f"compile_and_run: expected AOTTestModel instances, got {type(model).__name__}")
    if not isinstance(model.name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", model.name):
        raise RuntimeArgError(f"AOTTestModel: name must be a C identifier (it prefixes the model's C API), "
                              f"got {model.name!r}")
    if model.name in seen:
        raise RuntimeArgError(f"compile_and_run: two models are named {model.name!r}; give each its own name")
    seen.add(model.name)


def compile_models(models, interface_api, use_unpacked_api, workspace_byte_alignment=8,
                   constant_byte_alignment=8, enable_op_fusion=True, pass_config=None, use_runtime_executor=True,
                   target="llvm", workspace_memory_pools=None, constant_memory_pools=None, schedule_name=None):
    """Build each model with the AOT executor; returns [AOTCompiledTestModel].

    Alignments below 64 bytes are raised to 64 (the kernels assume it; a larger alignment satisfies a
    smaller request).  ``enable_op_fusion=False`` is accepted and builds fused as usual: tvmlab's
    FuseOps has no depth limit."""
    from .. import relay
    from ..ir.transform import PassContext
    from ..relay.backend import Executor

    models = models if isinstance(models, (list, tuple)) else [models]
    _check_interface(interface_api, use_unpacked_api)
    seen = set()
    for m in models:
        _check_model(m, seen)
    for what, value in (("workspace_byte_alignment", workspace_byte_alignment),
                        ("constant_byte_alignment", constant_byte_alignment)):
        if not isinstance(value, int) or value <= 0 or value & (value - 1):
            raise RuntimeArgError(f"compile_models: {what} must be a power of two, got {value!r}")
    if constant_byte_alignment > 64:
        raise RuntimeArgError(f"compile_models: constants are 64-byte aligned; constant_byte_alignment "
                              f"{constant_byte_alignment} is more than that")
    if workspace_memory_pools is not None or constant_memory_pools is not None or schedule_name is not None:
        raise RuntimeArgError("compile_models: memory pools and fixed schedules (schedule_name) are not "
                              "supported; tvmlab plans one workspace per model")
    executor = Executor("aot", {"workspace-byte-alignment": max(64, workspace_byte_alignment),
                                "interface-api": interface_api, "unpacked-api": bool(use_unpacked_api)})
    compiled = []
    for model in models:
        with PassContext(opt_level=3, config=dict(pass_config or {})):
            factory = relay.build(model.module, _host_target(target), params=model.params, executor=executor,
                                  mod_name=model.name)
        compiled.append(AOTCompiledTestModel(model=model, executor_factory=factory))
    return compiled


def _outputs_by_index(model, plan):
    """[(index, name, expected array)] in the C API's output order, checked against the plan."""
    rows = plan["outputs"]
    names = [r["name"] for r in rows]
    given = model.outputs
    if isinstance(given, dict):
        unknown = [k for k in given if k not in names]
        if unknown:
            raise RuntimeArgError(f"AOTTestModel {model.name!r}: no output named {unknown[0]!r}; the model's "
                                  f"outputs are {names}")
        pairs = [(names.index(k), k, v) for k, v in given.items()]
    else:
        given = list(given)
        if len(given) > len(rows):
            raise RuntimeArgError(f"AOTTestModel {model.name!r}: {len(given)} expected outputs for a model "
                                  f"with {len(rows)}")
        pairs = [(i, names[i], v) for i, v in enumerate(given)]
    if not pairs:
        raise RuntimeArgError(f"AOTTestModel {model.name!r}: no expected outputs to compare")
    out = []
    for i, name, value in pairs:
        out.append((i, name, _checked_array(model, "output", name, value, rows[i])))
    return sorted(out, key=lambda t: t[0])


def _checked_array(model, kind, name, value, row):
    arr = np.ascontiguousarray(np.asarray(value.numpy() if hasattr(value, "numpy") else value))
    if tuple(arr.shape) != tuple(row["shape"]) or str(arr.dtype) != row["dtype"]:
        raise RuntimeArgError(f"AOTTestModel {model.name!r}: {kind} {name!r} is {row['dtype']}"
                              f"{list(row['shape'])}, got {arr.dtype}{list(arr.shape)}")
    if str(arr.dtype) not in C_TYPES:
        raise RuntimeArgError(f"AOTTestModel {model.name!r}: {kind} {name!r} has dtype {arr.dtype}, which the "
                              f"C test program cannot compare; supported: {', '.join(C_TYPES)}")
    return arr


def _inputs(model, plan):
    rows = {r["name"]: r for r in plan["inputs"]}
    unknown = [k for k in model.inputs if k not in rows]
    if unknown:
        raise RuntimeArgError(f"AOTTestModel {model.name!r}: no input named {unknown[0]!r}; the model's inputs "
                              f"are {list(rows)}")
    missing = [k for k in rows if k not in model.inputs]
    if missing:
        raise RuntimeArgError(f"AOTTestModel {model.name!r}: input {missing[0]!r} has no data")
    return [(k, _checked_array(model, "input", k, model.inputs[k], rows[k])) for k in rows]


class _Blob:
    """The test data of one model, one array after another at 64-byte aligned offsets."""

    def __init__(self):
        self.parts, self.size = [], 0

    def add(self, arr):
        offset = self.size
        data = arr.tobytes()
        pad = (-len(data)) % 64
        self.parts.append(data + b"\0" * pad)
        self.size += len(data) + pad
        return offset

    def bytes(self):
        return b"".join(self.parts) or b"\0"


_COMPARE_C = """
static int compare_{t}(const char *model, const char *output, const {ct} *got, const {ct} *want, size_t n,
                      double tol) {{
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++) {{
    int ok = got[i] == want[i] || (tol > 0 && fabs((double)got[i] - (double)want[i]) <= tol);
    if (!ok && bad++ == 0) first = i;
  }}
  if (bad) printf("model '%s' output '%s': %zu of %zu elements differ by more than %g; first at flat index %zu: "
                  "got %.9g, expected %.9g\\n", model, output, bad, n, tol, first, (double)got[first],
                  (double)want[first]);
  return bad != 0;
}}
"""


def _model_c(compiled):
    """(C code of check_<name>(), the data blob) for one compiled model."""
    model, plan = compiled.model, compiled.executor_factory.plan
    p, name = plan["prefix"], model.name
    blob = _Blob()
    lines = [f"extern const uint8_t aottest_{name}_data[];",
             f"static int check_{name}(void) {{",
             "  int bad = 0;",
             f"  {p}_model *m = {p}_create();",
             f'  if (m == NULL) {{ printf("model \'{name}\': %s\\n", {p}_error(NULL)); return 1; }}']
    for key, arr in _inputs(model, plan):
        off = blob.add(arr)
        lines.append(f"  if ({p}_set_input(m, {_c_str(key)}, aottest_{name}_data + {off}, {arr.nbytes})) "
                     f"goto fail;")
    lines.append(f"  if ({p}_run(m)) goto fail;")
    for index, key, arr in _outputs_by_index(model, plan):
        off = blob.add(arr)
        dtype = str(arr.dtype)
        tol = model.output_tolerance
        tol = float(tol if tol is not None else (0.001 if np.issubdtype(arr.dtype, np.floating) else 0))
        ct = C_TYPES[dtype]
        lines += ["  {",
                  f"    {ct} *got = ({ct} *)malloc({max(arr.nbytes, 1)});",
                  f"    if (got == NULL) {{ printf(\"model '{name}': out of memory\\n\"); return 1; }}",
                  f"    memset(got, 0xff, {arr.nbytes});   /* poison: NaN for floats */",
                  f"    if ({p}_get_output(m, {index}, got, {arr.nbytes})) {{ free(got); goto fail; }}",
                  f"    bad |= compare_{dtype}({_c_str(name)}, {_c_str(key)}, got, "
                  f"(const {ct} *)(aottest_{name}_data + {off}), {arr.size}u, {tol!r});",
                  "    free(got);",
                  "  }"]
    lines += [f"  {p}_destroy(m);", "  return bad;", "fail:",
              f'  printf("model \'{name}\': %s\\n", {p}_error(m));',
              f"  {p}_destroy(m);", "  return 1;", "}", ""]
    return "\n".join(lines), blob.bytes()


def _c_str(text):
    from ..contrib.aot_bundle import c_string
    return c_string(text)


def main_c(compiled, runner):
    """The C source of the test program for ``compiled`` models (and the data blob of each)."""
    dtypes = sorted({str(a.dtype) for c in compiled for _, _, a in _outputs_by_index(c.model,
                                                                                       c.executor_factory.plan)})
    parts = ["#include <math.h>", "#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>",
             "#include <string.h>"]
    parts += [f'#include "{c.model.name}.h"' for c in compiled]
    parts += [f'#include "{h}"' for h in runner.includes]
    for t in dtypes:
        parts.append(_COMPARE_C.format(t=t, ct=C_TYPES[t]))
    blobs = {}
    for c in compiled:
        code, blobs[c.model.name] = _model_c(c)
        parts.append(code)
    checks = " ".join(f"bad |= check_{c.model.name}();" for c in compiled)
    parts.append(f"int main(void) {{\n  int bad = 0;\n{runner.prologue}\n  {checks}\n{runner.epilogue}\n"
                 f'  printf("%s\\n", bad ? "{AOT_FAILURE_TOKEN}" : "{AOT_SUCCESS_TOKEN}");\n'
                 f"  return bad ? 1 : 0;\n}}\n")
    return "\n".join(parts), blobs


def run_and_check(models, runner, interface_api, debug_calculated_workspaces=False, workspace_byte_alignment=8,
                  constant_byte_alignment=8, data_linkage=None, test_dir=None, verbose=False,
                  use_workspace_io=False):
    """Write, compile and run the C test program of ``models`` (AOTCompiledTestModel); AOTTestFailure
    with the program's report when an output differs or a call fails.  ``test_dir`` keeps the files."""
    _check_runner(runner)
    if use_workspace_io:
        raise RuntimeArgError("run_and_check: use_workspace_io is not supported; inputs and outputs are copied "
                              "in and out with set_input / get_output")
    if test_dir is not None:
        os.makedirs(test_dir, exist_ok=True)
        return _build_and_run(models, runner, os.fspath(test_dir), verbose)
    with tempfile.TemporaryDirectory(prefix="tvmlab-aottest-") as tmp:
        return _build_and_run(models, runner, tmp, verbose)


def _build_and_run(models, runner, base, verbose):
    from ..codegen.llvm_export import OPENMP_LIB, _linker, run_tool
    from ..contrib.aot_bundle import constants_asm

    source, blobs = main_c(models, runner)     # checks every model's data before writing anything
    tool = _linker(None, None, compiler=True)
    if tool is None:
        raise TVMLabError("compile_and_run: the AOT test program needs a C compiler (cc, gcc or clang) on PATH")
    objects = []
    for c in models:
        name = c.model.name
        c.executor_factory.export_library(os.path.join(base, f"{name}.tar"))
        with tarfile.open(os.path.join(base, f"{name}.tar")) as tar:
            tar.extractall(base)
        with open(os.path.join(base, f"{name}_data.bin"), "wb") as f:
            f.write(blobs[name])
        with open(os.path.join(base, f"{name}_data.s"), "w") as f:
            f.write(constants_asm(f"aottest_{name}_data", os.path.join(base, f"{name}_data.bin")))
        objects += [os.path.join(base, f"{name}.o"), os.path.join(base, f"{name}_data.s")]
    with open(os.path.join(base, "main.c"), "w") as f:
        f.write(source)
    exe = os.path.join(base, "aot_test_runner")
    cmd = [tool, "-O1", "-std=gnu11", f"-I{base}", "-o", exe, os.path.join(base, "main.c"), *objects, "-lm",
           OPENMP_LIB]
    if verbose:
        print(" ".join(cmd))
    run_tool(cmd, "compiling the AOT test program")
    env = {**os.environ}
    env.setdefault("GOMP_SPINCOUNT", "5000")
    run = subprocess.run([exe], capture_output=True, text=True, cwd=base, env=env)
    output = (run.stdout + run.stderr).strip()
    if verbose:
        print(output)
    if run.returncode != 0 or AOT_SUCCESS_TOKEN not in run.stdout:
        raise AOTTestFailure(f"the AOT test program failed (exit code {run.returncode}):\n{output}")
    return output


def _check_runner(runner):
    if not isinstance(runner, AOTTestRunner):
        raise RuntimeArgError(f"compile_and_run: runner must be an AOTTestRunner (AOT_DEFAULT_RUNNER), got "
                              f"{type(runner).__name__}")
    if runner.makefile != "default":
        raise DeviceError(f"compile_and_run: the {runner.makefile!r} runner needs the Arm Corstone-300 FVP "
                          f"(FVP_Corstone_SSE-300 and arm-none-eabi-gcc), which tvmlab does not drive; AOT tests "
                          f"run on this machine with AOT_DEFAULT_RUNNER (mark such tests "
                          f"@tvm.testing.requires_corstone300)")


def compile_and_run(models, runner, interface_api, use_unpacked_api, debug_calculated_workspaces=False,
                    workspace_byte_alignment=8, constant_byte_alignment=8, enable_op_fusion=True,
                    data_linkage=None, use_runtime_executor=True, target="llvm", target_opts=None, test_dir=None,
                    verbose=False, schedule_name=None):
    """Build ``models`` (one AOTTestModel or a list) with the AOT executor and check them from C on
    this machine (``runner=AOT_DEFAULT_RUNNER``); AOTTestFailure names the model, output, first
    differing element and how many differ.  ``target`` "c" (TVM's default) builds for this machine
    with LLVM; ``target_opts`` {"-mcpu": ...} are appended to the target as in TVM."""
    _check_runner(runner)
    _check_interface(interface_api, use_unpacked_api)
    if target_opts:
        target = " ".join([str(target)] + [f"{k}={v}" for k, v in target_opts.items()])
    compiled = compile_models(models, interface_api, use_unpacked_api, workspace_byte_alignment,
                              constant_byte_alignment, enable_op_fusion, runner.pass_config, use_runtime_executor,
                              target, schedule_name=schedule_name)
    return run_and_check(compiled, runner, interface_api, debug_calculated_workspaces, workspace_byte_alignment,
                         constant_byte_alignment, data_linkage, test_dir, verbose)


def generate_ref_data(mod, input_data, params=None, target="llvm"):
    """The outputs of ``mod`` on ``input_data`` from tvmlab's graph executor: {"output": array}, or
    {"output0": ..., "output1": ...} for several (the names the AOT C API gives them)."""
    from .. import relay
    from ..contrib.graph_executor import GraphModule
    from ..ir.transform import PassContext
    from ..runtime.device import cpu

    with PassContext(opt_level=3):
        lib = relay.build(mod, target=_host_target(target), params=params)
    gmod = GraphModule(lib["default"](cpu(0)))
    gmod.set_input(**input_data)
    gmod.run()
    n = gmod.get_num_outputs()
    outs = [gmod.get_output(i).numpy() for i in range(n)]
    names = ["output"] if n == 1 else [f"output{i}" for i in range(n)]
    return dict(zip(names, outs))


__all__ = ["AOTTestModel", "AOTTestRunner", "AOTCompiledTestModel", "AOTTestFailure", "compile_models",
           "run_and_check", "compile_and_run", "generate_ref_data", "AOT_SUCCESS_TOKEN", "AOT_FAILURE_TOKEN"]
