"""Tuner callbacks: ``log_to_file(path)`` and ``progress_bar(total)``.

A callback is ``fn(tuner, inputs, results)``, called after each measured batch.
"""
from __future__ import annotations

import os

from .record import RecordError, check_protocol, encode


def log_to_file(file_out, protocol="json"):
    """Append one TVM-format record line per trial to ``file_out`` (a path or an open file)."""
    check_protocol(protocol)

    def _callback(_, inputs, results):
        lines = "".join(encode(i, r) + "\n" for i, r in zip(inputs, results))
        if isinstance(file_out, (str, bytes)) or hasattr(file_out, "__fspath__"):
            with open(os.fspath(file_out), "a", encoding="utf-8") as f:
                f.write(lines)
        else:
            file_out.write(lines)
            file_out.flush()

    _callback.file_out = file_out
    return _callback


def progress_bar(total, prefix="", si_prefix="G"):
    """A tqdm bar of trials with the best GFLOP/s so far (closed when ``total`` trials are done)."""
    from tqdm.auto import tqdm
    scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(si_prefix)
    if scale is None:
        raise RecordError(f"si_prefix must be one of '', K, M, G, T; got {si_prefix!r}")
    state = {"bar": None, "best": 0.0}

    def _callback(tuner, inputs, results):
        if state["bar"] is None:
            state["bar"] = tqdm(total=total, desc=prefix or "tuning", unit="trial")
        for inp, res in zip(inputs, results):
            if res.error_no == 0 and res.costs:
                flop = inp.task.flop or 0
                state["best"] = max(state["best"], flop / (sum(res.costs) / len(res.costs)) / scale)
        bar = state["bar"]
        bar.set_postfix_str(f"best {state['best']:.2f} {si_prefix}FLOPS")
        bar.update(len(results))
        if bar.n >= total:
            bar.close()

    return _callback
