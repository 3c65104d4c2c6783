"""Targets and the registry of builders, as in TVM's ``codegen.build_<target>``.

A backend registers ``builder(mod: IRModule, target: Target) -> runtime Module``
under a target kind ("llvm", "cuda", ...).  ``Target("llvm -mcpu=skylake")``
parses a target string; its kind must be registered, so a typo fails early
with the list of known targets.  A notebook can add or wrap a target with
``register_target(name, builder, override=True)``.
"""
from __future__ import annotations

import threading

from ..errors import BuildError
from ..lower.intrin_rules import register_intrin_rule  # noqa: F401  (tvm.target.register_intrin_rule)

_BUILDERS = {}   # kind -> (builder, keys)


def register_target(name, builder, override=False, keys=None):
    """Register ``builder`` for target kind ``name``; ``keys`` are its generic keys ("cpu", "gpu")."""
    if not isinstance(name, str) or not name or " " in name:
        raise BuildError(f"target name must be a non-empty word, got {name!r}")
    if not callable(builder):
        raise BuildError(f"builder for target {name!r} must be callable, got {builder!r}")
    if name in _BUILDERS and not override:
        raise BuildError(f"target {name!r} is already registered; pass override=True to replace it")
    _BUILDERS[name] = (builder, tuple(keys) if keys else (name,))
    _register_global(name, builder)
    return builder


def _register_global(name, builder):
    """Also reachable as TVM's global ``codegen.build_<name>(mod, target)`` (target: str or Target)."""
    from ..runtime.registry import register_func

    def build(mod, target=name):
        return builder(mod, target if isinstance(target, Target) else Target(target))
    build.__name__ = f"build_{name}"
    build.__doc__ = f"Build a lowered IRModule for target {name!r} (the registered builder)."
    build.builder = builder
    register_func(f"codegen.build_{name}", build, override=True)


def list_targets():
    """Registered target kinds, in registration order."""
    return list(_BUILDERS)


def get_builder(name):
    """The builder registered for target kind ``name``."""
    entry = _BUILDERS.get(name)
    if entry is None:
        raise BuildError(f"unknown target {name!r}; known: {', '.join(_BUILDERS) or '(none)'}")
    return entry[0]


_TARGET_SCOPE = threading.local()


class TargetKind(str):
    """A target's kind: the plain name, also as ``.name`` (TVM's ``target.kind.name``)."""
    __slots__ = ()

    @property
    def name(self):
        return str(self)


class Target:
    """A parsed target string: ``kind`` plus ``-key=value`` options.

    ``Target("llvm -mcpu=znver4 -mattr=+avx2")`` has kind "llvm", keys
    ("cpu",) and options {"mcpu": "znver4", "mattr": "+avx2"}.  A flag without
    a value ("-system-lib") is stored as True.
    """
    __slots__ = ("kind", "keys", "options", "host")

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            self.kind, self.keys, self.options = target.kind, target.keys, dict(target.options)
            self.host = target.host if host is None else Target(host)
            return
        if not isinstance(target, str) or not target.strip():
            raise BuildError(f"target must be a string such as 'llvm', got {target!r}")
        words = target.split()
        kind = words[0]
        if kind not in _BUILDERS:
            raise BuildError(f"unknown target {kind!r}; known: {', '.join(_BUILDERS) or '(none)'}")
        options = {}
        for w in words[1:]:
            if not w.startswith("-") or w in ("-", "--"):
                raise BuildError(f"malformed option {w!r} in target {target!r}: expected -key=value or -flag")
            key, eq, value = w.lstrip("-").partition("=")
            if eq and not value:
                raise BuildError(f"option -{key} in target {target!r} has no value")
            options[key] = value if eq else True
        self.kind = TargetKind(kind)
        self.keys = _keys(kind, options)
        self.options = options
        self.host = None if host is None else Target(host)

    @staticmethod
    def canon_target_and_host(target, target_host=None):
        """``(target, host)`` as Targets (None stays None); the host is attached to the target, as in TVM."""
        if target is None:
            return None, None if target_host is None else Target(target_host)
        target = Target(target, target_host)
        return target, target.host

    @property
    def attrs(self):
        """The options, under TVM's name."""
        return self.options

    @property
    def thread_warp_size(self):
        """Threads that run in lock step: 32 on CUDA, 1 elsewhere (``-thread_warp_size=`` overrides)."""
        return int(self.options.get("thread_warp_size", 32 if self.kind == "cuda" else 1))

    @property
    def max_num_threads(self):
        """Most threads in one block (``-max_num_threads=`` overrides): 1024 on CUDA, 256 on other GPUs."""
        default = 1024 if self.kind == "cuda" else 256 if "gpu" in self.keys else 1
        return int(self.options.get("max_num_threads", default))

    @staticmethod
    def list_kinds():
        return list_targets()

    def __str__(self):
        opts = " ".join(f"-{k}" if v is True else f"-{k}={v}" for k, v in self.options.items())
        return f"{self.kind} {opts}" if opts else self.kind

    def __repr__(self):
        return f"Target({str(self)!r})"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Target(other)
            except BuildError:
                return False
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    # ``with Target("llvm"):`` makes it the current target (TVM's scope; AutoTVM templates query it)
    def __enter__(self):
        _TARGET_SCOPE.__dict__.setdefault("stack", []).append(self)
        return self

    def __exit__(self, *exc):
        _TARGET_SCOPE.stack.pop()

    @staticmethod
    def current(allow_none=True):
        """The innermost ``with Target(...)`` target of this thread, or None."""
        stack = getattr(_TARGET_SCOPE, "stack", None)
        if stack:
            return stack[-1]
        if not allow_none:
            raise BuildError("no current target: use `with tvm.target.Target('llvm'):`")
        return None


def _keys(kind, options):
    """The generic keys of a target, most specific first, as TVM orders them: ``-keys=a,b`` given,
    then the ``-device=`` name, then the kind's registered keys ("llvm -device=arm_cpu": arm_cpu, cpu)."""
    keys = [k for k in str(options.get("keys", "")).split(",") if k and options.get("keys") is not True]
    device = options.get("device")
    if isinstance(device, str) and device not in keys:
        keys.append(device)
    return tuple(keys + [k for k in _BUILDERS[kind][1] if k not in keys])


def cuda(model="unknown", arch=None, options=None):
    """A CUDA target (TVM's ``tvm.target.cuda()``): ``cuda(arch="sm_80")`` is ``Target("cuda -arch=sm_80")``;
    ``options`` is a list of further "-key=value" words."""
    words = ["cuda"]
    if model and model != "unknown":
        words.append(f"-model={model}")
    if arch:
        words.append(f"-arch={arch}")
    words += list(options or [])
    return Target(" ".join(words))


def create(target):
    """``Target(target)`` under the name TVM used before 0.8 (``tvm.target.create``)."""
    return Target(target)


def current_target(allow_none=True):
    """The innermost ``with Target(...)`` of this thread (TVM's ``Target.current``)."""
    return Target.current(allow_none)


def build_module(mod, target):
    """Build a lowered IRModule for ``target`` through ``codegen.build_<kind>``
    (TVM's ``target.codegen.build_module``)."""
    from ..runtime.registry import get_global_func
    tgt = target if isinstance(target, Target) else Target(target)
    return get_global_func(f"codegen.build_{tgt.kind}")(mod, tgt)


class _CodegenNamespace:
    """``tvm.target.codegen``: the module-level functions of TVM's ``python/tvm/target/codegen.py``."""
    build_module = staticmethod(build_module)


codegen = _CodegenNamespace()
