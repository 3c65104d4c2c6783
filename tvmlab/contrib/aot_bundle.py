"""An ahead-of-time model written out as one library with a small C API (``export_library``).

``model.so`` is linked by the C compiler from three parts: one LLVM object
holding the kernels, the entry ``<prefix>_aot_run`` and the metadata that
``tvm.runtime.load_module`` reads; the parameters, as an assembly file that
``.incbin``s their bytes (a ResNet's 100 MB never pass through LLVM); and the
C API, ``aot_runtime.c`` compiled after tables generated from the plan.
``model.h``, written beside it, declares the API.  ``model.tar`` holds the
same three parts linked into one relocatable object, with the kernels local
to it and every global symbol carrying the model's prefix (two models link
into one program), and the header.  Code built with ``-mtriple`` is
compiled and linked by that architecture's compiler (``cc=``).
"""
from __future__ import annotations

import os
import tarfile
import tempfile

import numpy as np

from ..codegen.llvm_export import OPENMP_LIB, _linker, run_tool, uses_openmp
from ..errors import BuildError, RuntimeArgError
from ..runtime.library import METADATA_SYMBOL
from .aot_executor import entry_ir

RUNTIME_C = os.path.join(os.path.dirname(__file__), "aot_runtime.c")


def c_string(text):
    """``text`` as a C string literal (ASCII; other bytes as octal escapes)."""
    out = []
    for b in str(text).encode():
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= b < 127 and ch != "?":       # '?' escaped: no trigraphs
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _tensor_text(row):
    return f"{row['name']}  {row['dtype']}[{', '.join(map(str, row['shape']))}]"


def header_text(plan, file_name, static=False, openmp=True):
    """The C header of the model's API."""
    p = plan["prefix"]
    guard = p.upper() + "_H"
    base = os.path.basename(file_name)
    stem = os.path.splitext(base)[0]
    libs = " -lm" + (" -lgomp" if openmp else "")
    link = (f"cc main.c {stem}.o{libs}" if static else f"cc main.c ./{base} -Wl,-rpath,'$ORIGIN'")
    first = plan["inputs"][0]["name"] if plan["inputs"] else "data"
    rows = ([f" *   input  {_tensor_text(r)}" for r in plan["inputs"]] +
            [f" *   output {i}: {_tensor_text(r)}" for i, r in enumerate(plan["outputs"])])
    return f"""/* {stem}.h: the C API of {base}, a model compiled ahead of time by tvmlab.
 *
 *   {p}_model *m = {p}_create();
 *   if (m == NULL) puts({p}_error(NULL));
 *   {p}_set_input(m, "{first}", x, sizeof x);
 *   {p}_run(m);
 *   {p}_get_output(m, 0, y, sizeof y);
 *   {p}_destroy(m);
 *
{chr(10).join(rows)}
 *
 * Link: {link}
 * Threads: TVM_NUM_THREADS, else OMP_NUM_THREADS, else one per core.  One model instance
 * runs one inference at a time; create one per thread to run several at once.
 */
#ifndef {guard}
#define {guard}

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {{
#endif

#ifndef TVMLAB_TENSOR_INFO_DEFINED
#define TVMLAB_TENSOR_INFO_DEFINED
typedef struct {{
  const char *name;      /* the input's name ("{first}"); outputs are "output" or "output0", "output1", ... */
  const char *dtype;     /* "float32", "int64", "bool" (one byte each), ... */
  int ndim;
  const int64_t *shape;
  size_t size;           /* elements */
  size_t nbytes;         /* bytes set_input / get_output copy */
}} tvmlab_tensor_info;
#endif

typedef struct {p}_model {p}_model;

/* A model instance with its workspace; NULL when out of memory ({p}_error(NULL) says so). */
{p}_model *{p}_create(void);
void {p}_destroy({p}_model *model);
/* Why the model's last call failed ("" when it did not). */
const char *{p}_error(const {p}_model *model);

/* The inputs and outputs: name, dtype, shape, bytes (NULL when the index is out of range). */
int {p}_num_inputs(void);
int {p}_num_outputs(void);
const tvmlab_tensor_info *{p}_input_info(int index);
const tvmlab_tensor_info *{p}_output_info(int index);
int {p}_input_index(const char *name);      /* -1 when there is no such input */

/* 0 on success; -1 on failure (a wrong name, index or size; a kernel's error). */
int {p}_set_input({p}_model *model, const char *name, const void *data, size_t nbytes);
int {p}_run({p}_model *model);
int {p}_get_output({p}_model *model, int index, void *data, size_t nbytes);

#ifdef __cplusplus
}}
#endif
#endif
"""


def _info_rows(rows, kind):
    shapes, infos = [], []
    for i, r in enumerate(rows):
        size = 1
        for d in r["shape"]:
            size *= d
        dims = ", ".join(str(d) for d in r["shape"]) or "0"
        shapes.append(f"static const int64_t {kind}_shape{i}[] = {{{dims}}};")
        infos.append(f"  {{{c_string(r['name'])}, {c_string(r['dtype'])}, {len(r['shape'])}, {kind}_shape{i}, "
                     f"{size}u, {size * np.dtype(r['dtype']).itemsize}u}},")
    return shapes, infos


def _array(ctype, name, values, empty="0"):
    return f"static const {ctype} {name}[] = {{{', '.join(values) or empty}}};"


def tables_c(plan, header, openmp):
    """The C source of the API: the header, the plan as tables, then ``aot_runtime.c``."""
    p = plan["prefix"]
    in_shapes, in_infos = _info_rows(plan["inputs"], "input")
    out_shapes, out_infos = _info_rows(plan["outputs"], "output")
    errors = [f"  {{{k}, {code}, {c_string(msg)}}}," for k, call in enumerate(plan["calls"])
              for code, msg in call["errors"]]
    lines = [header,
             "/* Generated from the model's plan; aot_runtime.c follows. */",
             f"#define TVMLAB_PREFIX {p}",
             f"#define TVMLAB_OPENMP {int(openmp)}",
             f"#define TVMLAB_ALIGNMENT {plan['alignment']}",
             f"#define TVMLAB_WORKSPACE_BYTES {plan['workspace_bytes']}",
             f"#define TVMLAB_NUM_INPUTS {len(plan['inputs'])}",
             f"#define TVMLAB_NUM_OUTPUTS {len(plan['outputs'])}",
             f"#define TVMLAB_INPUT_NAMES {c_string(', '.join(r['name'] for r in plan['inputs']) or '(none)')}",
             "",
             f"extern const uint8_t {p}_constants[];",
             f"uint64_t {p}_aot_run(uint8_t *workspace, const uint8_t *constants);",
             *in_shapes, *out_shapes,
             "static const tvmlab_tensor_info inputs[] = {", *in_infos, "  {0}," if not in_infos else "", "};",
             "static const tvmlab_tensor_info outputs[] = {", *out_infos, "};",
             _array("size_t", "input_offset", [f"{r['offset']}u" for r in plan["inputs"]]),
             _array("size_t", "output_offset", [f"{r['offset']}u" for r in plan["outputs"]]),
             _array("unsigned char", "output_in_constants",
                    ["1" if r["region"] == "constants" else "0" for r in plan["outputs"]]),
             _array("char *const", "kernel_names", [c_string(c["kernel"]) for c in plan["calls"]], '""'),
             "static const struct { int call, code; const char *text; } errors[] = {",
             *errors, '  {-1, 0, ""},', "};", ""]
    with open(RUNTIME_C) as f:
        return "\n".join(lines) + "\n" + f.read()


def constants_asm(symbol, bin_path):
    """Assembly defining ``symbol``: the bytes of ``bin_path``, 64-byte aligned, read-only."""
    path = bin_path.replace("\\", "\\\\").replace('"', '\\"')
    return (f'\t.section .rodata.{symbol},"a"\n\t.balign 64\n\t.globl {symbol}\n\t.type {symbol}, %object\n'
            f'{symbol}:\n\t.incbin "{path}"\n\t.size {symbol}, .-{symbol}\n'
            '\t.section .note.GNU-stack,"",%progbits\n')


def write_bundle(factory, file_name, cc=None, options=()):
    """Write ``factory`` (an AOTExecutorFactoryModule) as ``file_name``: ``.so`` (and ``.h`` beside) or ``.tar``."""
    path = os.fspath(file_name)
    static = path.endswith(".tar")
    if not static and not path.endswith(".so"):
        raise RuntimeArgError(f"export_library: an ahead-of-time model is written as a shared library ('.so', its "
                              f"header beside it) or a '.tar' of an object and its header; got {path!r}")
    exporter = getattr(factory.lib, "_exporter", None)
    if exporter is None:
        raise RuntimeArgError("export_library: this model's code was loaded from a library and cannot be written "
                              "out again; export it from the relay.build result")
    plan = factory.plan
    tool = _linker(cc, exporter.triple, compiler=True)
    if tool is None:
        raise BuildError("export_library: writing a model's C API needs a C compiler (cc, gcc or clang) on PATH; "
                         "none was found (on Debian: apt-get install gcc)")
    kernels = [s.name for s in exporter.specs]
    obj = exporter.object_code(extra_ir=entry_ir(plan), metadata={**exporter.metadata(), "aot": plan},
                               internal=kernels + [METADATA_SYMBOL] if static else ())
    openmp = plan["openmp"] or uses_openmp(obj)
    stem = os.path.splitext(os.path.basename(path))[0]
    header = header_text(plan, path, static, openmp)
    with tempfile.TemporaryDirectory(prefix="tvmlab-aot-") as tmp:
        files = {"kernels.o": obj, "constants.bin": factory.constants.tobytes()}
        files["constants.s"] = constants_asm(plan["prefix"] + "_constants",
                                             os.path.join(tmp, "constants.bin")).encode()
        files[f"{stem}_api.c"] = tables_c(plan, header, openmp).encode()
        for name, data in files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        parts = [os.path.join(tmp, n) for n in ("kernels.o", "constants.s", f"{stem}_api.c")]
        flags = ["-O2", "-fPIC", "-std=gnu11"]
        if static:
            combined = os.path.join(tmp, stem + ".o")
            run_tool([tool, "-r", "-nostdlib", *flags, "-o", combined, *parts, *options], f"linking {combined}")
            with open(os.path.join(tmp, stem + ".h"), "w") as f:
                f.write(header)
            with tarfile.open(path, "w") as tar:
                tar.add(combined, arcname=stem + ".o")
                tar.add(os.path.join(tmp, stem + ".h"), arcname=stem + ".h")
            return
        libs = ["-lm"] + ([OPENMP_LIB] if openmp else [])
        run_tool([tool, "-shared", *flags, f"-Wl,-soname,{os.path.basename(path)}", "-Wl,-Bsymbolic", "-o", path,
                  *parts, *libs, *options], f"linking {path}")
    with open(os.path.splitext(path)[0] + ".h", "w") as f:
        f.write(header)
