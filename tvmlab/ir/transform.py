"""Passes over an IRModule, as TVM's ``tvm.transform`` spells them.

A pass is a callable ``IRModule -> IRModule`` with a name and an opt level.
``Sequential`` runs a list of them under the current ``PassContext``, which
decides which ones are enabled (``opt_level``, ``required_pass``,
``disabled_pass``), carries ``config`` options that passes read, and calls
instruments before and after each pass (the explorer records every step
this way).  The same machinery serves ``tir.transform`` (lowering passes)
and ``relay.transform`` (graph passes).
"""
from __future__ import annotations

import functools
import inspect

from ..errors import TVMLabError


class PassInfo:
    """A pass's name, the lowest ``opt_level`` that enables it, and the passes it needs first."""
    __slots__ = ("opt_level", "name", "required")

    def __init__(self, opt_level, name, required=None):
        self.opt_level = int(opt_level)
        self.name = str(name)
        self.required = list(required or [])

    def __repr__(self):
        return f"PassInfo(name={self.name!r}, opt_level={self.opt_level}, required={self.required})"


class PassContext:
    """The settings passes run under: ``with tvm.transform.PassContext(opt_level=3): ...``.

    ``config`` holds named options (``{"tir.disable_vectorize": True}``);
    ``instruments`` are objects with any of ``enter_pass_ctx``,
    ``exit_pass_ctx``, ``should_run(mod, info)``, ``run_before_pass(mod,
    info)`` and ``run_after_pass(mod, info)``.
    """
    _stack: list = []

    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None,
                 config=None, trace=None):
        if not isinstance(opt_level, int) or not 0 <= opt_level <= 4:
            raise TVMLabError(f"PassContext opt_level must be an int in 0..4, got {opt_level!r}")
        for what, v in (("required_pass", required_pass), ("disabled_pass", disabled_pass)):
            if v is not None and (isinstance(v, str) or not all(isinstance(x, str) for x in v)):
                raise TVMLabError(f"PassContext {what} must be a list of pass names, got {v!r}")
        if config is not None and not isinstance(config, dict):
            raise TVMLabError(f"PassContext config must be a dict, got {type(config).__name__}")
        self.opt_level = opt_level
        self.required_pass = list(required_pass or [])
        self.disabled_pass = list(disabled_pass or [])
        self.instruments = list(instruments or [])
        self.config = dict(config or {})
        self.trace = trace

    @staticmethod
    def current():
        """The innermost active context (a default one when none is active)."""
        return PassContext._stack[-1] if PassContext._stack else _DEFAULT

    def __enter__(self):
        PassContext._stack.append(self)
        for ins in self.instruments:
            _hook(ins, "enter_pass_ctx")
        return self

    def __exit__(self, *exc):
        for ins in self.instruments:
            _hook(ins, "exit_pass_ctx")
        PassContext._stack.remove(self)
        return False

    def override_instruments(self, instruments):
        for ins in self.instruments:
            _hook(ins, "exit_pass_ctx")
        self.instruments = list(instruments or [])
        for ins in self.instruments:
            _hook(ins, "enter_pass_ctx")

    def pass_enabled(self, info):
        """Whether a pass with ``info`` runs under this context (TVM's rule)."""
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return info.opt_level <= self.opt_level

    def _run(self, pss, mod):
        """Run one pass with the instruments' hooks around it."""
        for ins in self.instruments:
            should = getattr(ins, "should_run", None)
            if should is not None and not should(mod, pss.info):
                return mod
        for ins in self.instruments:
            _hook(ins, "run_before_pass", mod, pss.info)
        out = pss.transform_module(mod, self)
        for ins in self.instruments:
            _hook(ins, "run_after_pass", out, pss.info)
        return out

    def __repr__(self):
        return (f"PassContext(opt_level={self.opt_level}, required_pass={self.required_pass}, "
                f"disabled_pass={self.disabled_pass}, config={self.config})")


def _hook(ins, name, *args):
    f = getattr(ins, name, None)
    if f is not None:
        f(*args)


_DEFAULT = PassContext()


class Pass:
    """Base class: ``pass_(mod)`` runs it under the current context (always, as in TVM)."""
    info: PassInfo

    def transform_module(self, mod, ctx):
        raise NotImplementedError

    def __call__(self, mod):
        from .function import IRModule
        if not isinstance(mod, IRModule):
            raise TVMLabError(f"pass {self.info.name} expects an IRModule, got "
                              f"{type(mod).__name__}; wrap a function with tvm.IRModule.from_expr")
        return PassContext.current()._run(self, mod)

    def __repr__(self):
        return f"{type(self).__name__}({self.info.name}, opt_level={self.info.opt_level})"


class ModulePass(Pass):
    """A pass from a function ``fn(mod, ctx) -> mod``."""

    def __init__(self, fn, info):
        self._fn = fn
        self.info = info

    def transform_module(self, mod, ctx):
        out = self._fn(mod, ctx)
        from .function import IRModule
        if not isinstance(out, IRModule):
            raise TVMLabError(f"pass {self.info.name} returned {type(out).__name__}, "
                              f"expected an IRModule")
        return out


class Sequential(Pass):
    """Run ``passes`` in order, skipping those the context does not enable."""

    def __init__(self, passes=None, opt_level=0, name="sequential", required=None):
        passes = list(passes or [])
        for k, p in enumerate(passes):
            if not isinstance(p, Pass):
                raise TVMLabError(f"Sequential: item {k} is not a pass, got {type(p).__name__}")
        self.passes = passes
        self.info = PassInfo(opt_level, name, required)

    def transform_module(self, mod, ctx):
        by_name = {p.info.name: p for p in self.passes}
        for p in self.passes:
            if not ctx.pass_enabled(p.info):
                continue
            for req in p.info.required:
                if req in by_name and req != p.info.name:
                    mod = ctx._run(by_name[req], mod)
            mod = ctx._run(p, mod)
        return mod

    def __repr__(self):
        return f"Sequential([{', '.join(p.info.name for p in self.passes)}])"


def pass_maker(pass_cls, method, what, pass_func, opt_level, name, required):
    """The body of ``module_pass`` and of ``tir.transform.prim_func_pass``: a pass of ``pass_cls``
    from a function, or (from a class) a constructor of such passes calling ``method``."""
    def create(fn):
        pname = name or fn.__name__
        info = PassInfo(opt_level, pname, required)
        if inspect.isclass(fn):
            cls = fn

            @functools.wraps(cls, updated=())
            def make(*args, **kwargs):
                return pass_cls(getattr(cls(*args, **kwargs), method), info)
            return make
        if not callable(fn):
            raise TVMLabError(f"{what} needs a function or a class, got {fn!r}")
        return pass_cls(fn, info)

    if pass_func is not None:
        return create(pass_func)
    return create


def module_pass(pass_func=None, opt_level=0, name=None, required=None):
    """Make a pass from ``fn(mod, ctx)`` or from a class with ``transform_module(mod, ctx)``.

    Works as ``@module_pass(opt_level=2)`` or ``module_pass(fn, opt_level=2)``.
    """
    return pass_maker(ModulePass, "transform_module", "module_pass", pass_func, opt_level, name,
                      required)


class PrintIR(Pass):
    """A pass that prints the module and returns it unchanged."""

    def __init__(self, header=""):
        self.header = header
        self.info = PassInfo(0, "PrintIR")

    def transform_module(self, mod, ctx):
        print(f"PrintIR({self.header}):\n{mod}")
        return mod
