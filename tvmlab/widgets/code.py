"""Syntax-highlighted code panes (LLVM IR, assembly, CUDA C, GLSL, Python).

Highlighting uses pygments with inline styles, so the HTML needs no CSS file
or network access; without pygments the text is shown plain.
"""
from __future__ import annotations

import html

LEXERS = {"llvm": "llvm", "ll": "llvm", "asm": "gas", "cuda": "cuda", "cu": "cuda",
          "glsl": "glsl", "python": "python", "c": "c"}
PANE_STYLE = ("font-size:12px;line-height:1.3;overflow:auto;max-height:520px;"
              "border:1px solid #dee2e6;background:#fbfbfb;padding:4px;margin:0")
MAX_CHARS = 400_000      # longer sources are cut so the browser stays responsive


def highlight(text, lang):
    """``text`` as an HTML ``<pre>`` block, coloured for ``lang`` when pygments is available."""
    cut = ""
    if len(text) > MAX_CHARS:
        cut = f"\n… {len(text) - MAX_CHARS} more characters not shown"
        text = text[:MAX_CHARS]
    try:
        from pygments import highlight as _hl
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
        lexer = get_lexer_by_name(LEXERS.get(lang, lang))
        fmt = HtmlFormatter(noclasses=True, nowrap=True, style="default")
        body = _hl(text, lexer, fmt)
    except Exception:   # no pygments, or no lexer for this language: plain text
        body = html.escape(text)
    return (f'<pre class="tvmlab-code" style="{PANE_STYLE}">{body}'
            f'{html.escape(cut)}</pre>')


def pane_html(title, text=None, lang="text", note=None):
    """One titled pane: highlighted ``text``, or ``note`` saying why there is none."""
    head = f'<div style="font-weight:bold;font-size:12px;margin:2px 0">{html.escape(title)}</div>'
    if text is None:
        msg = html.escape(note or "no code")
        return (f'{head}<div class="tvmlab-empty" style="{PANE_STYLE};color:#868e96;'
                f'white-space:pre-wrap;font-family:monospace">{msg}</div>')
    return head + highlight(text, lang)
