"""Rich notebook displays of tensors, schedules, lowered IR and modules.

The classes call ``mimebundle(obj)`` from their ``_repr_mimebundle_``; the
result holds ``text/plain`` and a self-contained ``text/html`` (inline
styles and inline SVG, nothing fetched from the network).  Graphs are drawn
only when graphviz's ``dot`` is present; otherwise the HTML says why.
"""
from __future__ import annotations

import html

from ..ir.printer import astext
from .code import highlight
from .colors import KIND_COLORS, TABLE, legend_html
from .diff import diff_html

BOX = "font-size:12px;border-left:3px solid #4dabf7;padding-left:6px"


def _svg(graph, summary):
    from .graph import to_svg
    svg, why = to_svg(graph)
    if svg is None:
        return f'<div style="color:#868e96;font-size:11px">{html.escape(summary)}: {html.escape(why)}</div>'
    return (f'<details><summary style="font-size:12px">{html.escape(summary)}</summary>'
            f'<div style="overflow:auto;max-height:480px">{svg}</div></details>')


def _shape(shape):
    return "(" + ", ".join(astext(d) if not isinstance(d, int) else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def tensor_html(t):
    from ..ir.tensor import ComputeOp
    from .graph import ast1_graph
    op = t.op
    kind = "placeholder (an input)" if not isinstance(op, ComputeOp) else \
        ("reduction" if op.is_reduction else "compute")
    rows = [("name", t.name), ("shape", _shape(t.shape)), ("dtype", t.dtype), ("operation", kind)]
    body = "".join(f"<tr><td><b>{k}</b></td><td style='font-family:monospace'>{html.escape(str(v))}"
                   f"</td></tr>" for k, v in rows)
    expr = ""
    if isinstance(op, ComputeOp):
        idx = ", ".join(iv.var.name for iv in op.axis)
        expr = highlight(f"{t.name}[{idx}] = {astext(op.body[t.value_index])}", "python")
        expr += _svg(ast1_graph([op]), "AST1 dataflow graph")
    return (f'<div style="{BOX}"><b>Tensor</b> (AST1){TABLE}{body}</table>'
            f"{expr}</div>")


def schedule_html(s):
    from .graph import ast1_graph
    rows = []
    for st in s.stages:
        key = s.stage_key(st)
        if st.is_placeholder:
            rows.append(f"<tr><td><b>{html.escape(key)}</b></td><td><i>input</i></td><td></td></tr>")
            continue
        chips = "".join(
            f'<span title="{st.attr(iv).kind}" style="background:{KIND_COLORS[st.attr(iv).kind]};'
            f'padding:0 4px;margin:1px;border-radius:3px;font-family:monospace">'
            f'{html.escape(iv.var.name)}</span>' for iv in st.leaf_iter_vars)
        where = {"root": "root", "inline": "inlined"}.get(st.attach_type) or \
            f"at {st.attach_stage.name}.{st.attach_ivar.var.name}"
        rows.append(f"<tr><td><b>{html.escape(key)}</b></td><td>{chips}</td>"
                    f"<td>{html.escape(where)}</td></tr>")
    code = highlight(s.trace.as_python("s"), "python") if len(s.trace) else \
        "<div><i>no primitives applied: the default schedule</i></div>"
    return (f'<div style="{BOX}"><b>Schedule</b> — {len(s.stages)} stages{legend_html()}'
            + TABLE + '<tr><th>stage</th><th>leaf axes</th><th>computed</th>'
            f'</tr>{"".join(rows)}</table><div style="font-size:12px"><b>trace as Python</b></div>'
            f'{code}{_svg(ast1_graph(s), "AST1 dataflow graph")}</div>')


def ir_html(obj):
    """An IRModule or PrimFunc: IR text with loop kinds marked, plus its graph."""
    from ..ir.function import IRModule
    from .graph import stmt_graph
    funcs = list(obj) if isinstance(obj, IRModule) else [obj]
    level = "AST3"
    parts = [f'<div style="{BOX}"><b>{"IRModule" if isinstance(obj, IRModule) else "PrimFunc"}'
             f'</b> (lowered IR){legend_html()}', diff_html(None, obj.script())]
    for f in funcs[:4]:
        parts.append(_svg(stmt_graph(f, level), f"{level} graph of {f.name}"))
    parts.append("</div>")
    return "".join(parts)


def module_html(m):
    parts = [f'<div style="{BOX}"><b>Module</b> ({html.escape(m.type_key)}) — functions: '
             f'{html.escape(", ".join(m.function_names))}']
    formats = [("LLVM IR", "ll", "llvm"), ("assembly", "asm", "asm")] if m.type_key == "llvm" \
        else [("source", "", {"cuda": "cuda", "opengl": "glsl"}.get(m.type_key, "c"))]
    for k, (title, fmt, lang) in enumerate(formats):
        try:
            text = m.get_source(fmt)
        except Exception as e:   # a format this module lacks: say so
            text = None
            parts.append(f'<div style="color:#868e96;font-size:11px">{title}: {html.escape(str(e))}</div>')
        if text is not None:
            parts.append(f'<details{" open" if k == 0 else ""}><summary style="font-size:12px">'
                         f'{title}</summary>{highlight(text, lang)}</details>')
    parts.append("</div>")
    return "".join(parts)


def mimebundle(obj):
    """{"text/plain": ..., "text/html": ...} for a Tensor, Schedule, IRModule, PrimFunc or Module."""
    from ..ir.function import IRModule, PrimFunc
    from ..ir.tensor import Tensor
    from ..runtime.module import Module
    from ..schedule.schedule import Schedule
    if isinstance(obj, Tensor):
        body = tensor_html(obj)
    elif isinstance(obj, Schedule):
        body = schedule_html(obj)
    elif isinstance(obj, (IRModule, PrimFunc)):
        body = ir_html(obj)
    elif isinstance(obj, Module):
        body = module_html(obj)
    else:
        return {"text/plain": repr(obj)}
    return {"text/plain": repr(obj), "text/html": body}
