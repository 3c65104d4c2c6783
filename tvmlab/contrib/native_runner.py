"""One native call per graph run: a small JIT-compiled function that calls every kernel in order.

The graph executor knows, once it has planned storage, every kernel's address
and every argument's address; they do not change between runs.  Calling the
kernels one by one from Python costs a ctypes call each (argument conversion,
releasing and taking the GIL): a few hundred nanoseconds per node, which is
most of a small model's run.  ``compile_runner`` writes those calls, with their
arguments as constants, into one LLVM function; ``run()`` is then a single
ctypes call.  The first kernel that fails stops the run and its index and error
code come back, so the error is raised exactly as a direct call would raise it.
The ahead-of-time executor (``aot_executor``) writes its entry function with
the same ``runner_ir``, its arguments offsets into a workspace and constants.
"""
from __future__ import annotations

import ctypes
import time

_INT_TYPES = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "i8", "uint16": "i16",
              "uint32": "i32", "uint64": "i64", "bool": "i1"}


def _llvm_args(fn, cargs):
    """LLVM (type, value) text per native argument, or None when one cannot be a constant here."""
    out = []
    for p, v in zip(fn.spec.params, cargs):
        if p.kind == "buffer":
            addr = v if isinstance(v, int) else getattr(v, "value", None)
            if not isinstance(addr, int):
                return None
            out.append(("ptr", addr))
        elif p.dtype in _INT_TYPES and isinstance(v, int):
            out.append((_INT_TYPES[p.dtype], int(v)))
        else:
            return None             # float scalars and the like: the Python loop calls this kernel
    return out


SERIAL_BYTES = 1 << 16     # a kernel touching less than this runs on one thread (no team to wake and join)


def runner_ir(calls, serial=(), name="graph_run", bases=()):
    """LLVM IR of ``i64 @<name>(ptr %<base>, ...)`` for ``calls`` = [(kernel, [(type, value)])]: 0 when every
    call returns 0, else ``(index + 1) << 32 | code`` of the first that fails.  Calls whose index is in ``serial``
    run with OpenMP's thread count set to one (set on entering a stretch of them, restored on leaving it or
    on failing inside it).

    A kernel is its address (an int: code in this process) or its symbol (a str, declared here and linked
    with its definition later, as in an ahead-of-time library).  A "ptr" value is an address or ``(base,
    offset)``: ``offset`` bytes into the pointer argument ``base`` (one of ``bases``)."""
    lines = []
    if serial:
        lines += ["declare i32 @omp_get_max_threads()", "declare void @omp_set_num_threads(i32)"]
    declared = set()
    for kernel, args in calls:
        if isinstance(kernel, str) and kernel not in declared:
            declared.add(kernel)
            lines.append(f'declare i32 @"{kernel}"({", ".join(ty for ty, _ in args)})')
    params = ", ".join(f"ptr noalias %{b}" for b in bases)
    lines += [f'define i64 @"{name}"({params}) {{', "entry:"]
    if serial:
        lines.append("  %nthreads = call i32 @omp_get_max_threads()")
    restore = "  call void @omp_set_num_threads(i32 %nthreads)"
    for k, (kernel, args) in enumerate(calls):
        if k in serial and k - 1 not in serial:
            lines.append("  call void @omp_set_num_threads(i32 1)")
        vals = []
        for j, (ty, v) in enumerate(args):
            if ty == "ptr" and isinstance(v, tuple):
                base, offset = v
                lines.append(f"  %a{k}_{j} = getelementptr inbounds i8, ptr %{base}, i64 {offset}")
                vals.append(f"ptr %a{k}_{j}")
            elif ty == "ptr":
                lines.append(f"  %a{k}_{j} = inttoptr i64 {v} to ptr")
                vals.append(f"ptr %a{k}_{j}")
            else:
                vals.append(f"{ty} {v}")
        if isinstance(kernel, str):
            callee = f'@"{kernel}"'
        else:
            lines.append(f"  %f{k} = inttoptr i64 {kernel} to ptr")
            callee = f"%f{k}"
        lines.append(f"  %r{k} = call i32 {callee}({', '.join(vals)})")
        leaving = k in serial and k + 1 not in serial
        if leaving:
            lines.append(restore)
        lines += [f"  %c{k} = icmp ne i32 %r{k}, 0",
                  f"  br i1 %c{k}, label %fail{k}, label %ok{k}",
                  f"fail{k}:"]
        if k in serial and not leaving:
            lines.append(restore)
        lines += [f"  %z{k} = zext i32 %r{k} to i64",
                  f"  %e{k} = or i64 %z{k}, {(k + 1) << 32}",
                  f"  ret i64 %e{k}",
                  f"ok{k}:"]
    lines += ["  ret i64 0", "}"]
    return "\n".join(lines) + "\n"


class ThreadChoice:
    """All threads or one for the next run, whichever recent runs show faster.

    On an idle machine a model runs fastest on every core; when another
    process holds a core, a team of threads waits at each parallel region for
    the thread that has no core, and one thread is faster (a small CNN: 0.16 ms
    instead of 0.41).  Runs stay on all threads while they are steady; when the
    median of the last ``window`` runs is over ``slow`` times the fastest run
    seen, a probe runs ``burst`` times on one thread (the first run is not
    counted), and if it beats ``gain`` times that median, runs switch to one
    thread.  On one thread a probe of all threads comes every ``first`` runs,
    the interval doubling (up to ``longest``) while probes lose, and at the
    latest ``max_wait`` seconds (or 30 runs' time, if longer) after the last
    one: when the other process goes, a small model is back on every core
    within that time, however many runs the doubling had reached.  An idle
    machine's runs are steady, so it pays no probes.  A run that starts after
    the runner sat idle (longer than ``idle`` seconds, and 10 runs' time) is not
    counted: its threads were asleep, which says nothing about other processes.
    On all threads, neither are the runs of the next ``warm`` seconds, and no
    probe of one thread starts in them: on a virtual machine two threads can run
    slowly for some milliseconds after an idle spell, and a model run in bursts
    would move to one thread at every burst.  On one thread, probes of all
    threads still come at a burst's start, so a model goes back to them as soon
    as the other process has gone.
    """

    def __init__(self, threads, first=16, longest=1024, gain=0.8, slow=1.25, window=5, burst=3, max_wait=0.05,
                 idle=1e-3, warm=0.02, clock=time.perf_counter):
        self.threads, self.use = threads, threads
        self.first, self.longest, self.gain, self.slow = first, longest, gain, slow
        self.window, self.burst, self.max_wait, self.idle, self.warm = window, burst, max_wait, idle, warm
        self.clock = clock
        self.interval, self.count = first, 0
        self.recent = []            # seconds of the latest runs on self.use
        self.fastest = float("inf")  # fastest run on all threads
        self.probe = []             # seconds of the probe under way
        self.since = clock()        # when the current choice began or the last probe ended
        self.woke = float("-inf")   # when runs resumed after the last idle spell

    def _other(self):
        return 1 if self.use == self.threads else self.threads

    def _median(self):
        r = sorted(self.recent)
        return r[len(r) // 2] if r else float("inf")

    def _warming(self):
        return self.clock() - self.woke < self.warm

    def _want_probe(self):
        if self.threads == 1 or (self.use == self.threads and self._warming()):
            return False
        if self.use == 1:           # only a probe shows when all threads are worth it again
            wait = max(self.max_wait, 30 * self._median()) if self.recent else self.max_wait
            return self.count >= self.interval or self.clock() - self.since >= wait
        return self.count >= self.interval and len(self.recent) == self.window and \
            self._median() > self.slow * self.fastest

    def next(self):
        """The thread count for the next run."""
        if self.probe or self._want_probe():
            return self._other()
        self.count += 1
        return self.use

    def record(self, threads, seconds, gap=0.0):
        """``seconds`` of a run on ``threads``, which began ``gap`` seconds after the previous run ended."""
        if gap > max(self.idle, 10 * seconds):
            self.woke = self.clock()
            if threads != self.use and not self.probe:
                self.probe.append(seconds)      # a probe's first run, which is not counted anyway
            return
        if self.use == self.threads and self._warming():
            return
        if threads == self.threads:
            self.fastest = min(self.fastest, seconds)
        if threads == self.use:
            self.recent = (self.recent + [seconds])[-self.window:]
            return
        self.probe.append(seconds)
        if len(self.probe) < self.burst:
            return
        best, self.probe, self.count = min(self.probe[1:]), [], 0
        if best < self.gain * self._median():
            self.use, self.interval, self.recent = threads, self.first, [best]
        else:
            self.interval = min(self.interval * 2, self.longest)
        self.since = self.clock()


class GraphRunner:
    """``runner()`` runs every kernel once, in order, in one native call; failures raise as the kernel would.
    ``adaptive``: each run on all threads or on one as ``ThreadChoice`` finds faster (else always all)."""

    def __init__(self, funcs, cargs_list, serial=(), adaptive=True):
        import llvmlite.binding as llvm

        from ..runtime import llvm_jit
        calls = []
        for fn, cargs in zip(funcs, cargs_list):
            args = _llvm_args(fn, cargs)
            addr = ctypes.cast(fn._cfunc, ctypes.c_void_p).value if fn._cfunc is not None else None
            if args is None or not addr:
                raise ValueError(f"{fn.name}: its arguments cannot be fixed in native code")
            calls.append((addr, args))
        self.funcs = list(funcs)
        self.keep = list(cargs_list)            # the argument objects stay alive with the runner
        self.serial = sorted(serial) if llvm_jit.has_openmp() else []
        ref = llvm.parse_assembly(runner_ir(calls, set(self.serial)))
        ref.verify()
        cpu, features = llvm_jit.host_cpu()
        self.engine = llvm_jit.JitEngine(ref, cpu, features, opt=0)
        self._call = ctypes.CFUNCTYPE(ctypes.c_uint64)(self.engine.address("graph_run"))
        self.choice, self._set_threads, self._end = None, None, 0.0
        self.set_adaptive(adaptive)

    def set_adaptive(self, on):
        """Turn ``ThreadChoice`` on (when OpenMP runs more than one thread) or off (every run on all threads)."""
        from ..runtime import llvm_jit
        self.choice = None
        if on and llvm_jit.has_openmp():
            gomp = ctypes.CDLL(llvm_jit.initialize())
            threads = gomp.omp_get_max_threads()
            if threads > 1:
                self.choice, self._set_threads = ThreadChoice(threads), gomp.omp_set_num_threads

    def __call__(self):
        c = self.choice
        if c is None:
            rc = self._call()
        else:
            n = c.next()
            if n != c.threads:
                self._set_threads(n)
            t0 = time.perf_counter()
            rc = self._call()
            self._end, gap = time.perf_counter(), t0 - self._end
            c.record(n, self._end - t0, gap)
            if n != c.threads:
                self._set_threads(c.threads)
        if rc:
            code = rc & 0xFFFFFFFF
            self.funcs[(rc >> 32) - 1]._raise(code - (1 << 32) if code >= 1 << 31 else code)


def small_calls(arg_lists, limit=SERIAL_BYTES):
    """Indices of the calls whose arguments together hold fewer than ``limit`` bytes: waking and joining a
    second thread costs about what such a kernel does (a softmax over 10 classes, a pool to 1x1).
    An argument is an NDArray or its size in bytes."""
    return [k for k, args in enumerate(arg_lists)
            if sum(a if isinstance(a, int) else a._arr.nbytes for a in args) < limit]


def make_runner(funcs, arg_lists, serial=None):
    """A ``GraphRunner`` for the kernels ``funcs`` called with ``arg_lists`` (NDArrays), or None when one of
    them cannot be called from native code (not a CPU function, or a float scalar argument).  ``serial``:
    indices of the calls to run on one thread (default: ``small_calls``)."""
    if not funcs or not all(hasattr(f, "_pack") and hasattr(f, "_cfunc") and hasattr(f, "spec") for f in funcs):
        return None
    try:
        return GraphRunner(funcs, [f._pack(a) for f, a in zip(funcs, arg_lists)],
                           small_calls(arg_lists) if serial is None else serial)
    except ValueError:
        return None
