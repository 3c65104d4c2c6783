"""The Explorer's trace and primitive controls: the stage table, the form of one primitive
(only valid choices, from ``choices``), and the trace with undo / redo / reset / copy-as-code.

Everything a control does goes through the Explorer's Python API (``apply``, ``undo``, ...), so a
notebook and a click change the session the same way.
"""
from __future__ import annotations

import html

import ipywidgets as W

from ..errors import TVMLabError
from . import choices as C
from .colors import KIND_COLORS, TABLE
from .explorer_views import flex


def click_handler(fn):
    """A button callback running ``fn``: its TVMLabError is already shown in the status line,
    so it is not raised into the widget event loop."""
    def click(_):
        try:
            fn()
        except TVMLabError:
            pass
    return click


class TracePanel:
    """The stage table, the form of one primitive and the trace of ``session``; its buttons call
    ``apply`` (keyword arguments from the form), ``undo``, ``redo`` and ``reset``, which change the
    session and refresh the explorer; ``show_error`` puts an incomplete choice in the status line.
    Observers do nothing while ``quiet`` is up."""

    WIDGETS = ("stages_view", "stage_select", "primitive_select", "apply_button", "trace_view", "undo_button",
               "redo_button", "reset_button", "copy_button", "code_box")

    def __init__(self, session, quiet, apply, undo, redo, reset, show_error):
        self.session = session
        self._quiet = quiet
        self._apply = apply
        self._show_error = show_error
        self.stages_view = W.HTML()
        self.stage_select = W.Dropdown(description="stage", layout=W.Layout(width="260px"))
        self.primitive_select = W.Dropdown(description="primitive", layout=W.Layout(width="260px"))
        self._form = W.VBox()
        self.params = {}
        self.apply_button = W.Button(description="apply", button_style="primary", icon="play")
        self.stage_select.observe(self._on_stage, names="value")
        self.primitive_select.observe(self._on_primitive, names="value")
        self.apply_button.on_click(self._on_apply)
        self.controls_box = W.VBox([self.stages_view, self.stage_select, self.primitive_select,
                                    self._form, self.apply_button], layout=flex())
        self.trace_view = W.HTML()
        fit = dict(layout=W.Layout(width="auto", flex="0 0 auto"))   # as wide as its label, never cut
        self.undo_button = W.Button(description="undo", icon="undo", **fit)
        self.redo_button = W.Button(description="redo", icon="repeat", **fit)
        self.reset_button = W.Button(description="reset", icon="refresh", **fit)
        self.copy_button = W.Button(description="copy as code", icon="clipboard", **fit)
        self.code_box = W.Textarea(layout=W.Layout(width="100%", height="140px", display="none"))
        for b, fn in ((self.undo_button, undo), (self.redo_button, redo), (self.reset_button, reset)):
            b.on_click(click_handler(fn))
        self.copy_button.on_click(self._on_copy)
        self.trace_box = W.VBox([W.HTML("<b>trace</b>"), self.trace_view, W.HBox(
            [self.undo_button, self.redo_button, self.reset_button, self.copy_button],
            layout=W.Layout(flex_flow="row wrap")), self.code_box], layout=flex())

    def refresh_stages(self):
        sch = self.session.schedule
        rows = []
        for stg in sch.stages:
            key = sch.stage_key(stg)
            if stg.is_placeholder:
                rows.append(f"<tr><td><b>{html.escape(key)}</b></td><td colspan=2>"
                            f"<i>input</i></td></tr>")
                continue
            chips = []
            for iv in stg.leaf_iter_vars:
                a = stg.attr(iv)
                kind = a.kind
                tag = f" → {a.bind_thread.thread_tag}" if a.bind_thread is not None else ""
                border = "1px dashed #495057" if iv.iter_type == "reduce" else "1px solid #ced4da"
                chips.append(f'<span title="{kind}" style="background:{KIND_COLORS[kind]};'
                             f'border:{border};padding:0 4px;margin:1px;border-radius:3px;'
                             f'font-family:monospace">{html.escape(iv.var.name + tag)}</span>')
            where = {"root": "root", "inline": "inlined"}.get(stg.attach_type)
            if where is None:
                where = f"at {stg.attach_stage.name}.{stg.attach_ivar.var.name}"
            if stg.scope:
                where += f", {stg.scope}"
            rows.append(f"<tr><td><b>{html.escape(key)}</b></td><td>{''.join(chips)}</td>"
                        f"<td style='color:#868e96'>{html.escape(where)}</td></tr>")
        self.stages_view.value = (TABLE + '<tr><th>stage</th>'
                                  '<th>leaf axes (outer → inner)</th><th>computed</th></tr>'
                                  + "".join(rows) + "</table>")
        keys = [sch.stage_key(x) for x in sch.stages]
        cur = self.stage_select.value
        default = next((sch.stage_key(x) for x in reversed(sch.stages) if not x.is_placeholder),
                       keys[-1])
        self.stage_select.options = keys
        self.stage_select.value = cur if cur in keys else default
        self._refresh_primitives()

    def _refresh_primitives(self):
        sch = self.session.schedule
        prims = C.valid_primitives(sch, self.stage_select.value) if self.stage_select.value else []
        cur = self.primitive_select.value
        self.primitive_select.options = prims
        if prims:
            self.primitive_select.value = cur if cur in prims else prims[0]
        self.primitive_select.disabled = not prims
        self.apply_button.disabled = not prims

    def _on_stage(self, change):
        if self._quiet:
            return
        with self._quiet():
            self._refresh_primitives()
        self.rebuild_form()

    def _on_primitive(self, change):
        if not self._quiet:
            self.rebuild_form()

    def rebuild_form(self):
        sch = self.session.schedule
        stage, prim = self.stage_select.value, self.primitive_select.value
        self.params = {}
        if not stage or not prim:
            self._form.children = [W.HTML("<i>no primitive applies to this stage</i>")]
            return
        ch = C.axis_choices(sch, stage, prim)
        P = self.params
        wide = W.Layout(width="260px")

        def dd(name, opts, value=None, desc=None):
            w = W.Dropdown(options=opts, description=desc or name, layout=wide)
            if value is not None and value in [o[1] if isinstance(o, tuple) else o for o in opts]:
                w.value = value
            P[name] = w
            return w

        def num(name, value, lo=1, desc=None):
            w = W.BoundedIntText(value=value, min=lo, max=2**30, description=desc or name,
                                 layout=wide)
            P[name] = w
            return w

        if prim == "split":
            dd("axis", ch["axis"])
            P["mode"] = W.ToggleButtons(options=["factor", "nparts"], value="factor",
                                        style={"button_width": "60px"})
            num("amount", 8)
        elif prim == "tile":
            ax = ch["x_parent"]
            dd("x_parent", ax, desc="x axis")
            dd("y_parent", ax, ax[1] if len(ax) > 1 else None, desc="y axis")
            num("x_factor", 8, desc="x factor")
            num("y_factor", 8, desc="y factor")
        elif prim == "fuse":
            dd("axes", [(", ".join(r), r) for r in ch["axes"]])
        elif prim == "reorder":
            leaf = ch["axis"]
            dd("axis", leaf, leaf[-1] if leaf else None, desc="move")
            dd("position", [(f"{k}: where {n} is", k) for k, n in enumerate(leaf)], 0, desc="to")
        elif prim in ("vectorize", "unroll", "parallel", "rfactor"):
            dd("axis", ch["axis"])
            if prim == "rfactor":
                num("factor_axis", 0, lo=0, desc="factor_axis")
        elif prim == "bind":
            dd("axis", ch["axis"])
            dd("thread", ch["thread"])
        elif prim == "pragma":
            dd("axis", ch["axis"])
            dd("pragma_type", ch["pragma_type"], desc="pragma")
            num("pragma_value", 16, lo=0, desc="value")
        elif prim == "compute_at":
            parent = dd("parent", ch["parent"])
            dd("scope", C.scope_choices(sch, parent.value) if parent.value else [])

            def on_parent(change):
                P["scope"].options = C.scope_choices(self.session.schedule, change["new"]) \
                    if change["new"] else []
            parent.observe(on_parent, names="value")
        elif prim in ("set_scope", "cache_write"):
            dd("scope", ch["scope"], "local" if prim == "cache_write" else None)
        elif prim == "cache_read":
            dd("scope", ch["scope"], "local")
            P["readers"] = W.SelectMultiple(options=ch["readers"], value=tuple(ch["readers"]),
                                            description="readers", layout=wide)
        widgets = list(P.values())
        self._form.children = widgets or [W.HTML("<i>no parameters</i>")]

    def form_kwargs(self):
        """``Explorer.form_kwargs``: what the stage, primitive and form choose, as ``apply`` keywords."""
        P = {k: w.value for k, w in self.params.items()}
        prim, stage = self.primitive_select.value, self.stage_select.value
        if prim == "split":
            return {"stage": stage, "axis": P["axis"], P["mode"]: P["amount"]}
        if prim == "reorder":
            leaf = [iv.var.name for iv in self.session.schedule[stage].leaf_iter_vars]
            order = [n for n in leaf if n != P["axis"]]
            order.insert(P["position"], P["axis"])
            return {"stage": stage, "axes": order}
        if prim in ("cache_read", "cache_write", "rfactor"):
            kw = {"tensor": stage, **P}
            if prim == "cache_read":
                kw["readers"] = list(P["readers"])
            return kw
        if prim == "normalize":
            return {}
        return {"stage": stage, **P}

    def _on_apply(self, _):
        prim = self.primitive_select.value
        if not prim:
            return
        try:
            kw = self.form_kwargs()
            self._apply(prim, **kw)
        except TVMLabError:
            pass            # shown in the status line
        except (KeyError, TypeError, ValueError) as e:
            self._show_error(TVMLabError(f"{prim}: incomplete choice ({e})"))

    def refresh_trace(self):
        s = self.session
        items = []
        for k, step in enumerate(s.steps):
            weight = "bold" if k == len(s.steps) - 1 else "normal"
            items.append(f'<li style="font-weight:{weight}">{html.escape(repr(step))}</li>')
        for step in reversed(s.redo_steps):
            items.append(f'<li style="color:#adb5bd">(undone) {html.escape(repr(step))}</li>')
        body = "".join(items) or "<i>no steps yet: the default schedule</i>"
        self.trace_view.value = (f'<ol style="font-family:monospace;font-size:12px;margin:0;'
                                 f'padding-left:22px">{body}</ol>')
        self.undo_button.disabled = not s.steps
        self.redo_button.disabled = not s.redo_steps
        if self.code_box.layout.display != "none":
            self.code_box.value = self.session.as_python()

    def _on_copy(self, _):
        self.code_box.value = self.session.as_python()
        self.code_box.layout.display = None if self.code_box.layout.display == "none" else "none"

