"""The host side of a GPU build, without a device: bind call arguments to the host function of a
device split, evaluate each launch's grid and block, and make the launches in order.

``CUDAFunction`` runs it with CUDA arrays and the driver; the thread-level simulator
(``tvmlab.analysis.gpusim``) runs the same walk with host arrays, so both check arguments with the same
rules and messages and launch the same kernels with the same grids.
"""
from __future__ import annotations

import numpy as np

from ..errors import RuntimeArgError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import IRVisitor
from ..ir.printer import astext
from ..lower.verify_gpu import DEFAULT_LIMITS
from .llvm_build import _py_fn


class _Temps(IRVisitor):
    def __init__(self):
        super().__init__()
        self.temps = []

    def visit_Allocate(self, s):
        self.temps.append((s.buffer_var, s.dtype, s.extents[0]))
        self.generic_visit(s)


class DeviceHost:
    """Argument binding and the host walk of a split's host PrimFunc and its ``KernelLaunch`` list.

    A subclass says which arrays it accepts (``_host_array``) and what a launch receives for each
    kernel argument (``_kernel_arg``).
    """

    def __init__(self, host, launches):
        self.name = host.name
        self.host = host
        self.launches = launches
        t = _Temps()
        t.visit(host.body)
        self.temps = t.temps
        self.keys = {}
        for p in host.params:
            self.keys.setdefault(p, p.name)
        for buf in host.buffer_map.values():
            for d in buf.shape:
                if isinstance(d, E.Var):
                    self.keys.setdefault(d, d.name)
        self.buffers = [p for p in host.params if p in host.buffer_map]
        self.scalars = [p for p in host.params if p not in host.buffer_map]

    def _host_array(self, a, where):
        """``a`` as the array object to bind (dtype, ndim, shape); raises RuntimeArgError if it is not one."""
        raise NotImplementedError

    def _kernel_arg(self, value, dtype):
        """What a launch receives for one kernel argument (an array, or a scalar of ``dtype``)."""
        return (value, dtype)

    def _eval(self, e, env):
        fn = _py_fn(e, lambda v: self.keys.get(v, v.name))
        if fn is None:
            raise RuntimeArgError(f"{self.name}: cannot evaluate {astext(e)} on the host")
        try:
            return int(fn(env))
        except KeyError as k:
            raise RuntimeArgError(f"{self.name}: {astext(e)} uses {k.args[0]}, which no argument determines") from None

    def _bind(self, args):
        params = self.host.params
        nb = len(self.buffers)
        if len(args) not in (len(params), nb):
            raise RuntimeArgError(f"{self.name}: expected {nb} arrays ({', '.join(p.name for p in self.buffers)})"
                                  f" or all {len(params)} arguments, got {len(args)}")
        env, values = {}, {}
        it = iter(args)
        for p in params:
            if p in self.host.buffer_map:
                buf = self.host.buffer_map[p]
                where = f"{self.name}: argument '{buf.name}'"
                a = self._host_array(next(it), where)
                if str(a.dtype) != buf.dtype:
                    raise RuntimeArgError(f"{where}: expected dtype {buf.dtype}, got {a.dtype}")
                if a.ndim != len(buf.shape):
                    raise RuntimeArgError(f"{where}: expected {len(buf.shape)} dims, got shape {a.shape}")
                for k, (d, g) in enumerate(zip(buf.shape, a.shape)):
                    if isinstance(d, E.IntImm) and d.value != g:
                        raise RuntimeArgError(f"{where}: expected shape[{k}] = {d.value}, got {g}")
                    if isinstance(d, E.Var):
                        key = self.keys[d]
                        if env.setdefault(key, g) != g:
                            raise RuntimeArgError(f"{where}: shape[{k}] is {g} but {key} = {env[key]}")
                values[p] = a
            elif len(args) == len(params):
                values[p] = next(it)
        for p in self.scalars:
            key = self.keys[p]
            if p in values:
                v = float(values[p]) if p.dtype.startswith("float") else int(values[p])
                if env.setdefault(key, v) != v:
                    raise RuntimeArgError(f"{self.name}: {p.name} = {v} but the shapes give {env[key]}")
            if key not in env:
                raise RuntimeArgError(f"{self.name}: no argument determines {p.name}; pass all arguments")
            values[p] = env[key]
        for p, a in values.items():
            if p in self.host.buffer_map:
                for k, d in enumerate(self.host.buffer_map[p].shape):
                    if not isinstance(d, (E.IntImm, E.Var)) and self._eval(d, env) != a.shape[k]:
                        raise RuntimeArgError(f"{self.name}: argument '{p.name}' shape[{k}] is {a.shape[k]}, "
                                              f"expected {astext(d)} = {self._eval(d, env)}")
        return env, values

    def run_host(self, env, values, launch):
        """Make the launches of the host body in order, host loops (a scan's time loop) included:
        ``launch(KernelLaunch, grid, block, [_kernel_arg(...) for each kernel argument])`` for each."""
        by_name = {ln.name: ln for ln in self.launches}

        def walk(s):
            if isinstance(s, S.SeqStmt):
                for x in s.seq:
                    walk(x)
            elif isinstance(s, S.For):
                key = self.keys.setdefault(s.loop_var, f"{s.loop_var.name}#loop{len(self.keys)}")
                lo, ext = self._eval(s.min, env), self._eval(s.extent, env)
                for i in range(lo, lo + ext):
                    env[key] = i
                    walk(s.body)
                env.pop(key, None)
            elif isinstance(s, (S.AttrStmt, S.Allocate, S.LetStmt)):
                if isinstance(s, S.LetStmt):
                    env[self.keys.setdefault(s.var, f"{s.var.name}#let{len(self.keys)}")] = self._eval(s.value, env)
                walk(s.body)
            elif isinstance(s, S.IfThenElse):
                cond = _py_fn(s.condition, lambda v: self.keys.get(v, v.name))
                if cond is None:
                    raise RuntimeArgError(f"{self.name}: cannot evaluate {astext(s.condition)} on the host")
                if cond(env):
                    walk(s.then_case)
                elif s.else_case is not None:
                    walk(s.else_case)
            elif isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == "launch_kernel":
                self._launch(by_name[s.value.args[0].value], env, values, launch)
            elif isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == "tvm_call_packed":
                from ..runtime.packed import host_call      # an extern stage's call, with the device arrays
                host_call(s.value, lambda v: values[v], lambda e: self._scalar(e, env), self.name)

        walk(self.host.body)

    def _scalar(self, e, env):
        if isinstance(e, (E.IntImm, E.FloatImm)):
            return bool(e.value) if e.dtype == "bool" else e.value
        if isinstance(e, E.Var) and e.dtype.startswith("float"):
            return env[self.keys.get(e, e.name)]
        return self._eval(e, env)

    def temp_sizes(self, env):
        """[(Var, dtype, element count)] of the host's global temporaries for the bound ``env``."""
        return [(var, dtype, self._eval(count, env)) for var, dtype, count in self.temps]

    def _launch(self, ln, env, values, launch):
        grid = tuple(self._eval(x, env) for x in ln.grid())
        block = tuple(self._eval(x, env) for x in ln.block())
        if any(g <= 0 for g in grid):
            return                # an empty launch: nothing to compute
        if np.prod(block) > DEFAULT_LIMITS["max_threads_per_block"]:
            raise RuntimeArgError(f"{self.name}: {ln.name} needs {np.prod(block)} threads per block, more "
                                  f"than {DEFAULT_LIMITS['max_threads_per_block']}")
        kargs = []
        for a in ln.args:
            if a.dtype == "handle":
                kargs.append(self._kernel_arg(values[a], "handle"))
            else:
                kargs.append(self._kernel_arg(values[a] if a in values else env[self.keys[a]], a.dtype))
        launch(ln, grid, block, kargs)
