"""IPython magics: ``%load_ext tvmlab``, then ``%tvmlab explore|lower|bench``.

    %tvmlab explore s A B C --target llvm --target cuda
    %tvmlab lower s A B C --simple
    %tvmlab bench s A B C --size n=1048576

Names are looked up (evaluated) in the notebook's namespace.
"""
from __future__ import annotations


from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ..errors import TVMLabError


def _sizes(items):
    out = {}
    for it in items or ():
        name, eq, value = it.partition("=")
        if not eq or not name or not value.strip().lstrip("-").isdigit():
            raise UsageError(f"--size expects NAME=INT (e.g. n=1024), got {it!r}")
        out[name] = int(value)
    return out


class BenchReport:
    """Benchmark records of one schedule: a table in a notebook, a list in Python."""

    def __init__(self, records, peak_note):
        self.records = records
        self.peak_note = peak_note

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def __repr__(self):
        lines = []
        for r in self.records:
            t = "-" if r["time_ms"] is None else f"{r['time_ms']:.4f} ms"
            g = "" if r["gflops"] is None else f", {r['gflops']:.2f} GFLOP/s"
            np_ms = "" if not r.get("numpy_ms") else f" (numpy {r['numpy_ms']:.4f} ms)"
            msg = f" {r['message']}" if r.get("message") else ""
            lines.append(f"{r['target']}: {r['status']} {t}{g}{np_ms}{msg}")
        return "\n".join(lines) or "no runnable target"

    def _repr_html_(self):
        from .explorer import _records_html
        return _records_html([{"step": 0, "label": "", **r} for r in self.records], self.peak_note)


@magics_class
class TVMLabMagics(Magics):
    """The ``%tvmlab`` line magic."""

    @magic_arguments()
    @argument("action", choices=["explore", "lower", "bench"],
              help="explore: open the explorer widget; lower: show the lowered IR (AST3); "
                   "bench: check against numpy and time on each runnable target")
    @argument("schedule", help="the schedule (a name in the notebook, e.g. s)")
    @argument("tensors", nargs="*", help="the argument tensors, e.g. A B C")
    @argument("--target", "-t", action="append", default=None,
              help="a target such as llvm or cuda; repeat for several (default: llvm)")
    @argument("--size", action="append", default=None,
              help="value of a symbolic shape variable for bench/explore, e.g. n=4096")
    @argument("--simple", action="store_true", help="lower: simple mode (no loop partitioning)")
    @argument("--no-bench", action="store_true", help="explore: no live benchmark")
    @line_magic
    def tvmlab(self, line):
        """Explore, lower or benchmark a tvmlab schedule."""
        args = parse_argstring(self.tvmlab, line)
        sch = self._lookup(args.schedule)
        tensors = [self._lookup(t) for t in args.tensors]
        if not tensors:
            raise UsageError(f"%tvmlab {args.action}: give the argument tensors after the schedule, "
                             "e.g. %tvmlab " + args.action + " s A B C")
        sizes = _sizes(args.size)
        import tvmlab
        if args.action == "explore":
            return tvmlab.explore(sch, tensors, targets=args.target, sizes=sizes,
                                  benchmark=not args.no_bench)
        if args.action == "lower":
            return tvmlab.lower(sch, tensors, simple_mode=args.simple)
        return bench(sch, tensors, args.target or ["llvm"], sizes)

    def _lookup(self, name):
        ns = self.shell.user_ns
        try:
            return eval(name, ns)   # names and simple expressions such as C.op
        except Exception as e:
            raise UsageError(f"%tvmlab: cannot find {name!r} in the notebook: "
                             f"{type(e).__name__}: {e}") from None


def bench(sch, tensors, targets, sizes=None):
    """Build ``sch`` for each target, check against numpy, time: a BenchReport."""
    import tvmlab
    from .bench import Workload, machine_peak_gflops, measure
    wl = Workload(tensors, list(sch.outputs), sizes)
    records = []
    for t in targets:
        try:
            dev = tvmlab.device(str(t).split()[0])
            if not dev.exist:
                records.append({"target": t, "status": "not runnable", "time_ms": None,
                                "gflops": None, "numpy_ms": None,
                                "message": f"no {dev.device_type} device on this machine"})
                continue
            mod = tvmlab.build(sch, tensors, target=t)
            records.append(measure(mod, t, wl))
        except TVMLabError as e:
            records.append({"target": t, "status": "failed", "time_ms": None, "gflops": None,
                            "numpy_ms": None, "message": str(e)})
    return BenchReport(records, machine_peak_gflops()[1])


def load_ipython_extension(ip):
    ip.register_magics(TVMLabMagics)


__all__ = ["TVMLabMagics", "BenchReport", "bench", "load_ipython_extension"]
