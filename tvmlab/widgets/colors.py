"""One colour per loop kind, shared by every view (graphs, IR text, axis chips).

A student who learns "green is vectorized" in the AST2 graph should see the
same green in the IR text and in the list of axes.
"""
from __future__ import annotations

import html

KIND_COLORS = {
    "serial": "#e9ecef",
    "parallel": "#ffc078",
    "vectorized": "#8ce99a",
    "unrolled": "#d0bfff",
    "thread_binding": "#74c0fc",
}
# How each kind is spelled in printed IR (``for i in T.vectorized(8):``).
KIND_WORDS = {"serial": "range", "parallel": "T.parallel", "vectorized": "T.vectorized",
              "unrolled": "T.unroll", "thread_binding": "T.thread_binding"}

# Every table the widgets draw: columns apart, headers left-aligned over their column.  A <style>
# before each table, since a widget's HTML gets no notebook table styles (a notebook output that
# drops the <style> keeps JupyterLab's own).
TABLE = ('<style>.tvmlab-table{border-collapse:collapse;font-size:12px;margin:4px 0}'
         '.tvmlab-table th,.tvmlab-table td{padding:2px 14px 2px 4px;text-align:left;vertical-align:top}'
         '.tvmlab-table th{border-bottom:1px solid #ced4da;font-weight:600;white-space:nowrap}'
         '.tvmlab-table tr:nth-child(even) td{background:#f8f9fa}</style><table class="tvmlab-table">')

ADDED = "#d3f9d8"      # a line or node that is new since the previous step
REMOVED = "#ffe3e3"    # a line that the step removed
CHANGED_EDGE = "#e8590c"   # outline of a graph node that is new since the previous step


def kind_of_line(line):
    """The loop kind of a printed ``for`` line, else None."""
    s = line.lstrip()
    if not s.startswith("for ") or " in " not in s:
        return None
    rest = s.split(" in ", 1)[1]
    for kind, word in KIND_WORDS.items():
        if rest.startswith(word + "("):
            return kind
    if "T.launch_thread" in s:
        return "thread_binding"
    return None


def legend_html():
    """A one-line legend of the loop-kind colours."""
    chips = "".join(
        f'<span style="background:{c};padding:1px 6px;margin-right:4px;border-radius:3px;'
        f'font-family:monospace;font-size:11px">{html.escape(k)}</span>'
        for k, c in KIND_COLORS.items())
    return f'<div style="margin:2px 0">loop kinds: {chips}</div>'
