"""``relay.backend.Executor`` and ``Runtime``: how ``relay.build`` lays a model out to run (TVM's spelling).

``Executor("graph")`` (the default): a graph JSON that the graph executor walks
(on the CPU one JIT-compiled native call runs every kernel).
``Executor("aot")``: the ahead-of-time executor, one entry function running
the kernels in order over a planned workspace, with the parameters embedded;
its library exports as one file with a C API (``contrib.aot_executor``).
``Runtime("cpp")`` / ``Runtime("crt")`` are accepted for TVM scripts; tvmlab
has one CPU runtime and the AOT library carries its own small C API.
"""
from __future__ import annotations

from .base import RelayError

_EXECUTOR_OPTIONS = {
    "graph": {"link-params": bool},
    "aot": {"interface-api": str, "unpacked-api": bool, "link-params": bool, "workspace-byte-alignment": int},
}
_RUNTIME_OPTIONS = {"cpp": {"system-lib": bool}, "crt": {"system-lib": bool}}


def _checked(what, name, options, table):
    if name not in table:
        raise RelayError(f"{what}: unknown {what.lower()} {name!r}; known: {', '.join(map(repr, table))}")
    options = dict(options or {})
    for key, value in options.items():
        want = table[name].get(key)
        if want is None:
            raise RelayError(f"{what}({name!r}): unknown option {key!r}; known: {', '.join(table[name]) or 'none'}")
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise RelayError(f"{what}({name!r}): option {key!r} must be a {want.__name__}, got {value!r}")
    return options


class Executor:
    """``Executor("graph")`` or ``Executor("aot", {"workspace-byte-alignment": 64, ...})``."""

    def __init__(self, name="graph", options=None):
        self.name = name
        self.options = _checked("Executor", name, options, _EXECUTOR_OPTIONS)
        align = self.options.get("workspace-byte-alignment", 64)
        if align < 64 or align & (align - 1):
            raise RelayError(f"Executor('aot'): workspace-byte-alignment must be a power of two >= 64 (the "
                             f"kernels assume 64-byte aligned buffers), got {align}")
        if self.options.get("interface-api", "c") not in ("c", "packed"):
            raise RelayError(f"Executor('aot'): interface-api is 'c' or 'packed', got "
                             f"{self.options['interface-api']!r}")
        if self.options.get("link-params") is False and name == "aot":
            raise RelayError("Executor('aot'): the parameters are always linked into the library "
                             "(link-params=False is not supported)")

    def __getitem__(self, key):
        return self.options[key]

    def __repr__(self):
        return f"Executor({self.name!r}{', ' + repr(self.options) if self.options else ''})"


class Runtime:
    """``Runtime("cpp")`` (the default) or ``Runtime("crt", {"system-lib": True})``; both run on tvmlab's
    CPU runtime (recorded, no other effect)."""

    def __init__(self, name="cpp", options=None):
        self.name = name
        self.options = _checked("Runtime", name, options, _RUNTIME_OPTIONS)

    def __repr__(self):
        return f"Runtime({self.name!r}{', ' + repr(self.options) if self.options else ''})"


def executor_of(executor):
    """An ``Executor`` from relay.build's ``executor=`` (None, a name, or an Executor)."""
    if executor is None:
        return Executor("graph")
    if isinstance(executor, str):
        return Executor(executor)
    if not isinstance(executor, Executor):
        raise RelayError(f"relay.build: executor must be relay.backend.Executor('graph' | 'aot'), got {executor!r}")
    return executor


def runtime_of(runtime):
    if runtime is None or isinstance(runtime, Runtime):
        return runtime or Runtime("cpp")
    if isinstance(runtime, str):
        return Runtime(runtime)
    raise RelayError(f"relay.build: runtime must be relay.backend.Runtime('cpp' | 'crt'), got {runtime!r}")
