"""build_llvm: AST3 IRModule -> optimised LLVM module -> JIT-compiled runtime Module.

Steps: write LLVM assembly (CodeGenLLVM), parse and verify it, optimise with
the new pass manager at O3 (loop and SLP vectorisation on) for the host CPU
and its features, compile in-process with MCJIT, and describe each function
(parameters, shapes, error codes) for the runtime's argument checks.

Target options: ``-mcpu=<name>`` (default: the host CPU), ``-mattr=+f,-g``
(features added to the CPU's), ``-opt-level=0..3`` (default 3),
``-mtriple=<triple>`` (another architecture, e.g. aarch64-linux-gnu: its CPU
defaults to "generic").  Code built for a CPU other than the host can be
inspected (``get_source``) and exported, but calling it raises DeviceError,
since it may use instructions this machine lacks.
"""
from __future__ import annotations

import llvmlite.binding as llvm

from ..errors import BuildError
from ..ir import expr as E
from ..ir.printer import astext
from ..runtime import llvm_jit
from ..runtime.library import function_symbol
from ..runtime.module import DimExpr, FuncSpec, Function, Module, ParamSpec, _dim_fn
from .common import functions_of, written_buffers
from .llvm_codegen import CodeGenLLVM, signature
from .llvm_export import LLVMExporter
from .registry import Target, register_target

_OPTIONS = ("mcpu", "mattr", "opt-level", "mtriple")
_IGNORED = ("keys", "system-lib", "model", "tag")


# ------------------------------------------------------------------ target
def target_config(target):
    """(cpu, features, opt level, reason the code cannot run here or None) for an llvm Target."""
    opts = target.options
    unknown = [k for k in opts if k not in _OPTIONS and k not in _IGNORED]
    if unknown:
        raise BuildError(f"unknown option(s) {', '.join('-' + k for k in unknown)} for target {str(target)!r}; "
                         f"the llvm target knows {', '.join('-' + k for k in _OPTIONS)}")
    try:
        opt = int(opts.get("opt-level", 3))
    except ValueError:
        opt = -1
    if not 0 <= opt <= 3:
        raise BuildError(f"-opt-level must be 0, 1, 2 or 3, got {opts.get('opt-level')!r}")
    host, host_features = llvm_jit.host_cpu()
    mcpu = opts.get("mcpu")
    mattr = opts.get("mattr")
    if mcpu is True or mattr is True:
        raise BuildError(f"-mcpu and -mattr need a value, e.g. -mcpu={host}")
    triple = target_triple(target)
    if not llvm_jit.is_host_triple(triple):       # another architecture: its own CPU names
        if mcpu == "native":
            raise BuildError(f"-mcpu=native names this machine's CPU; with -mtriple={triple} name a CPU of that "
                             "architecture (e.g. -mcpu=cortex-a72) or leave -mcpu out for a generic one")
        cpu, features = mcpu or "generic", ""
    elif mcpu in (None, "native", host):
        cpu, features = host, host_features
    else:
        cpu, features = mcpu, ""
    if mattr:
        features = f"{features},{mattr}" if features else mattr
    return cpu, features, opt, llvm_jit.not_runnable(cpu, features, triple)


def target_triple(target):
    """The LLVM triple code for ``target`` is built for: its ``-mtriple``, else this machine's."""
    triple = target.options.get("mtriple")
    if triple is True:
        raise BuildError("-mtriple needs a value, e.g. -mtriple=aarch64-linux-gnu")
    return llvm_jit.check_triple(triple)


def optimize(module_ref, tm, opt):
    """Run LLVM's default O<opt> pipeline with loop and SLP vectorisation."""
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_unrolling = opt >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module_ref, pb)


# ------------------------------------------------------------------ runtime description
_DIM_OPS = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%", E.Min: "min", E.Max: "max"}


def _dim_tree(e, key):
    """Shape expression ``e`` as a DimExpr tree (ints, var keys, [op, a, b]), or None if unsupported."""
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        return key(e)
    if isinstance(e, E.Cast):
        return _dim_tree(e.value, key)
    op = _DIM_OPS.get(type(e))
    if op is not None:
        a, b = _dim_tree(e.a, key), _dim_tree(e.b, key)
        if a is not None and b is not None:
            return [op, a, b]
    return None


def _py_fn(e, key):
    """A Python function env -> int evaluating shape expression ``e``, or None if unsupported."""
    tree = _dim_tree(e, key)
    return None if tree is None else _dim_fn(tree)


def func_spec(name, func, errors):
    """The runtime's description of ``func``: parameter kinds, dtypes, shapes with symbolic dims."""
    keys = {}

    def key(v):
        k = keys.get(v)
        if k is None:
            taken = set(keys.values())
            k = v.name if v.name not in taken else next(f"{v.name}#{i}" for i in range(1, 1 << 30)
                                                       if f"{v.name}#{i}" not in taken)
            keys[v] = k
        return k

    def dim(x):
        if isinstance(x, int):
            return x
        if isinstance(x, E.IntImm):
            return x.value
        if isinstance(x, E.Var):
            return key(x)
        tree = _dim_tree(x, key)
        return None if tree is None else DimExpr(astext(x), tree)

    written = written_buffers(func.body)
    params = []
    for p in signature(func):
        buf = func.buffer_map.get(p)
        if buf is not None:
            strides = None if buf.strides is None else [dim(s) for s in buf.strides]
            params.append(ParamSpec(buf.name, "buffer", buf.dtype, [dim(s) for s in buf.shape], strides,
                                    written=p in written or buf.data in written))
        elif p.dtype == "handle":
            params.append(ParamSpec(p.name, "buffer", None, written=p in written))
        else:
            params.append(ParamSpec(p.name, "scalar", p.dtype, var=key(p)))
    return FuncSpec(name, params, errors)


# ------------------------------------------------------------------ build
def _generate(funcs, tm, triple):
    cg = CodeGenLLVM(triple, str(tm.target_data), openmp=llvm_jit.has_openmp())
    errors = {name: cg.add_function(name, f) for name, f in funcs.items()}
    return cg.text(), errors


def generate(mod, target="llvm"):
    """Unoptimised LLVM assembly for ``mod`` (IRModule or PrimFunc) and each function's error codes."""
    target = Target(target)
    cpu, features, opt, _ = target_config(target)
    triple = target_triple(target)
    return _generate(functions_of(mod, "build_llvm"), llvm_jit.create_target_machine(cpu, features, opt,
                                                                                     triple=triple), triple)


def _export_only():
    # tuning builders only export: skipping the JIT halves their compile time
    from ..ir.transform import PassContext
    return bool(PassContext.current().config.get("codegen.llvm.export_only", False))


def build_llvm(mod, target="llvm"):
    """Compile an AST3 IRModule (or PrimFunc) for the host CPU; returns a runtime Module."""
    target = Target(target)
    if target.kind != "llvm":
        raise BuildError(f"build_llvm builds for target 'llvm', got {str(target)!r}")
    cpu, features, opt, reason = target_config(target)
    triple = target_triple(target)
    funcs = functions_of(mod, "build_llvm")
    tm = llvm_jit.create_target_machine(cpu, features, opt, triple=triple)
    text, errors = _generate(funcs, tm, triple)
    try:
        ref = llvm.parse_assembly(text)
        ref.verify()
    except RuntimeError as e:
        raise BuildError(f"internal error: the generated LLVM IR is invalid: {e} "
                         "(tvmlab.codegen.llvm_build.generate(mod) returns the IR)") from None
    from .llvm_import import link_imports
    link_imports(ref, funcs)
    if opt > 0:
        optimize(ref, tm, opt)
    opt_text = str(ref)
    if reason is None and _export_only():
        reason = ("it was built for export only (PassContext config 'codegen.llvm.export_only'); "
                  "export_library it and load it with tvmlab.runtime.load_module")
    engine = None if reason else llvm_jit.JitEngine(ref, cpu, features, opt)
    functions = {}
    for name, f in funcs.items():
        address = engine.address(function_symbol(name)) if engine else 0
        functions[name] = Function(func_spec(name, f, errors[name]), address, engine, reason)

    def asm():
        r = llvm.parse_assembly(opt_text)
        return llvm_jit.create_target_machine(cpu, features, opt, triple=triple).emit_assembly(r)

    sources = {"ll": opt_text, "ll-unopt": text, "asm": asm}
    entry = next(iter(funcs))
    exporter = LLVMExporter(opt_text, cpu, features, opt, [f.spec for f in functions.values()], entry, triple)
    return Module("llvm", functions, entry, sources, aliases={"": "ll", "llvm": "ll", "s": "asm"},
                  exporter=exporter)


register_target("llvm", build_llvm, keys=("cpu",))
