"""Text views with the change from the previous step highlighted.

``diff_html(old, new)`` shows the new text in full; lines the step added are
green, lines it removed are shown struck through in red, and ``for`` lines
carry their loop kind's colour as a left border, as in the graphs.
"""
from __future__ import annotations

import difflib
import html

from .colors import ADDED, KIND_COLORS, REMOVED, kind_of_line

PRE_STYLE = ("font-family:monospace;font-size:12px;line-height:1.35;margin:0;padding:4px;"
             "white-space:pre;overflow:auto;max-height:480px;background:#fcfcfc;"
             "border:1px solid #dee2e6")


def diff_lines(old, new):
    """[(tag, line)] with tag in {" ", "+", "-"}: ``new`` in full, removed lines interleaved."""
    a, b = (old or "").splitlines(), (new or "").splitlines()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out += [(" ", x) for x in b[j1:j2]]
            continue
        out += [("-", x) for x in a[i1:i2]]
        out += [("+", x) for x in b[j1:j2]]
    return out


def diff_stats(old, new):
    """(lines added, lines removed)."""
    lines = diff_lines(old, new)
    return sum(t == "+" for t, _ in lines), sum(t == "-" for t, _ in lines)


def _line_html(tag, line):
    kind = kind_of_line(line)
    style = []
    if kind:
        style.append(f"border-left:6px solid {KIND_COLORS[kind]}")
    else:
        style.append("border-left:6px solid transparent")
    if tag == "+":
        style.append(f"background:{ADDED}")
    elif tag == "-":
        style.append(f"background:{REMOVED};text-decoration:line-through;color:#868e96")
    mark = {"+": "+", "-": "−", " ": " "}[tag]
    return (f'<div class="tvmlab-line tvmlab-{ {"+": "add", "-": "del", " ": "same"}[tag]}" '
            f'style="{";".join(style)}">{mark} {html.escape(line)}</div>')


def diff_html(old, new, title=None):
    """HTML of ``new`` with the difference from ``old`` highlighted (``old=None``: plain)."""
    if old is None:
        lines = [(" ", x) for x in (new or "").splitlines()]
        summary = ""
    else:
        lines = diff_lines(old, new)
        added = sum(t == "+" for t, _ in lines)
        removed = sum(t == "-" for t, _ in lines)
        summary = (f'<span style="color:#2b8a3e">+{added}</span> '
                   f'<span style="color:#c92a2a">−{removed}</span> lines since the previous step'
                   if added or removed else "no change since the previous step")
    head = ""
    if title or summary:
        head = (f'<div style="font-size:12px;margin:2px 0"><b>{html.escape(title or "")}</b> '
                f'{summary}</div>')
    body = "".join(_line_html(t, x) for t, x in lines)
    return f'{head}<div style="{PRE_STYLE}">{body}</div>'
