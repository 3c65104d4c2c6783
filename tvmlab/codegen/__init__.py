"""Code generators, one per target, found by name through the registry.

    mod = codegen.build_module(ir_module, "llvm")     # -> runtime Module
    codegen.register_target("mytarget", my_builder)  # add or wrap a target
"""
from .registry import Target, get_builder, list_targets, register_target  # noqa: F401
from .llvm_build import build_llvm  # noqa: F401  (registers "llvm")
from .cuda_build import build_cuda  # noqa: F401  (registers "cuda"; compiling needs no GPU)
from .glsl_build import build_opengl  # noqa: F401  (registers "opengl"; runs on EGL)
from .opencl_build import build_opencl  # noqa: F401  (registers "opencl"; runs through pyopencl)


def build_module(mod, target="llvm"):
    """Build an AST3 IRModule with the builder registered for ``target``'s kind."""
    target = Target(target)
    return get_builder(target.kind)(mod, target)
