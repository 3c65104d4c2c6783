"""A schedule as JSON (``tvm.ir.save_json(s)``) and through pickle: its output operations plus its trace.

Loading rebuilds the operations (``ir.serialize``) and replays the trace on a
fresh schedule of them, so the loaded schedule has the same stages, axes and
attachments under the same names.
"""
from __future__ import annotations

from ..ir import serialize
from .schedule import Schedule
from .trace import Trace


def _write(sch, w):
    return {"outputs": w.w(list(sch.outputs)), "steps": [dict(s) for s in sch.trace.steps],
            "symbols": w.w(dict(sch.trace.symbols))}


def _read(d, r):
    ops = list(r.r(d["outputs"]))
    symbols = r.r(d["symbols"])
    sch = Trace(None, d["steps"]).replay(Schedule(ops), symbols=symbols)
    sch.trace.symbols.update(symbols)
    return sch


def restore(text):
    """The schedule that ``serialize.save_json`` wrote (pickle's constructor)."""
    out = serialize.load_json(text)
    if not isinstance(out, Schedule):
        raise serialize.JSONError(f"expected a schedule, got {type(out).__name__}")
    return out


serialize.register_type(Schedule, "Schedule", _write, _read)
