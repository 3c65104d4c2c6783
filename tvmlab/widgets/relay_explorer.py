"""RelayExplorer: the ipywidgets face of the Relay view (``tvmlab.explore(mod, params=params)``).

Layout: a summary line; the stages (input, then after each graph pass) as
toggle buttons; the kind-colour legend; tabs Graph (SVG) | Text (the module
printed) | Changes (operator counts against the previous stage) | Profile
(each kernel of the built model timed alone, on request); and the
fused groups of the shown stage as a list whose "open" button puts that
group's TE schedule in the operator explorer below. When the graph repeats a
block (the layers of a transformer) the runs are drawn folded and a menu
opens one block at a time (``expand(i)``; ``collapse()`` folds it again). The widget holds no
compiler logic: ``RelayView`` computes every stage.
"""
from __future__ import annotations

import html

import ipywidgets as W

from ..errors import TVMLabError
from .colors import TABLE
from .relay_view import RelayView, legend_html, to_html

_BOX = "overflow:auto;max-height:560px;border:1px solid #dee2e6;background:white;padding:2px"


class RelayExplorer(W.VBox):
    """Python API: ``view`` (the RelayView), ``stage``, ``show(stage)``, ``groups()``, ``open_group(k)``,
    ``measure()`` (each kernel timed, also in the Profile tab), ``repeats()`` (the runs of repeated blocks
    of the shown stage), ``expand(i, run=0)`` / ``expand_all()`` / ``collapse()`` (the drawing's folds)."""

    def __init__(self, mod, params=None, targets=None, opt_level=3, disabled_pass=(), **explorer_options):
        self.target = (targets or ["llvm"])[0]
        self.view = RelayView(mod, params, target=self.target, opt_level=opt_level, disabled_pass=disabled_pass)
        self._explorer_options = {"benchmark": False, **explorer_options}
        self.group_explorer = None
        self.last_profile = None
        self.error = None
        self._stage = W.ToggleButtons(options=self.view.names, value=self.view.names[-1],
                                      style={"button_width": "auto"})
        self._blocks = W.Dropdown(options=[("folded", None)], value=None, description="repeated blocks",
                                  style={"description_width": "initial"}, layout=W.Layout(width="360px"))
        self._blocks.observe(lambda ch: self._redraw(), names="value")
        self._quiet = False
        self._summary = W.HTML()
        self._graph = W.HTML()
        self._text = W.HTML()
        self._changes = W.HTML()
        self._profile = W.HTML("<p>Build the model and time each kernel alone.</p>")
        self._measure = W.Button(description="measure kernels", icon="clock-o",
                                 tooltip="relay.build the module and time each kernel call (takes a while)")
        self._measure.on_click(lambda _: self.measure())
        tabs = W.Tab(children=[self._graph, self._text, self._changes, W.VBox([self._measure, self._profile])])
        for k, t in enumerate(("Graph", "Text", "Changes", "Profile")):
            tabs.set_title(k, t)
        self._groups = W.Select(options=[], rows=8, layout=W.Layout(width="70%"))
        self._open = W.Button(description="open schedule", icon="external-link",
                              tooltip="open this group's TE schedule in the operator explorer")
        self._status = W.HTML()
        self._out = W.Output()
        self._stage.observe(lambda ch: self.show(ch["new"]), names="value")
        self._open.on_click(lambda _: self._open_selected())
        super().__init__(children=[self._summary, self._stage, W.HBox([W.HTML(legend_html()), self._blocks]), tabs,
                                   W.HTML("<b>fused groups</b> (choose one, then open its schedule)"),
                                   W.HBox([self._groups, self._open]), self._status, self._out])
        self.show(self.view.names[-1])

    @property
    def stage(self):
        return self._stage.value

    def groups(self):
        return self.view.groups(self.stage)

    def repeats(self):
        """The runs of repeated blocks of the shown stage (``tvmlab.relay.repeats.Run``)."""
        return self.view.repeats(self.stage).runs

    @property
    def expanded(self):
        """(run, block) drawn in full, "all" when nothing is folded, None when every run is folded."""
        return self._blocks.value

    def expand(self, block, run=0):
        """Draw block ``block`` of run ``run`` in full, the others of the run staying folded."""
        from .relay_view import expand_target
        target = expand_target(self.view.repeats(self.stage), (run, block))
        self._blocks.value = target          # observe redraws

    def expand_all(self):
        """Draw every block (no folding)."""
        self._blocks.value = "all"

    def collapse(self):
        """Fold every run of repeated blocks again."""
        self._blocks.value = None

    def show(self, stage):
        """Draw ``stage`` (a name from ``view.names``)."""
        if stage != self._stage.value:
            self._stage.value = stage          # observe calls back into show
            return
        i = self.view.names.index(stage)
        counts = self.view.counts(stage)
        groups = self.view.groups(stage)
        self._summary.value = (f"<b>Relay module</b> · stage <code>{html.escape(stage)}</code>: "
                               f"{sum(counts.values())} operators"
                               + (f" in {len(groups)} fused groups" if groups else ""))
        runs = self.view.repeats(stage).runs
        if runs:
            n = sum(r.count for r in runs)
            self._summary.value += (f" · {n} repeated blocks in {len(runs)} run{'s' if len(runs) > 1 else ''}"
                                    f" ({', '.join(f'{r.count} × {len(r.blocks[0])} units' for r in runs)})")
        self._set_block_options(runs)
        self._redraw()
        self._text.value = f'<pre style="{_BOX};font-size:11px">{html.escape(str(self.view.module(stage)))}</pre>'
        self._changes.value = _changes_html(self.view.counts(i - 1) if i else {}, counts,
                                            self.view.names[i - 1] if i else None)
        rep = self.view.repeats(stage)

        def where(g):
            at = rep.block_of(g.call)
            return "" if at is None else f" · block {at[1] + 1}" + (f" of run {at[0]}" if len(runs) > 1 else "")
        self._groups.options = [(f"{g.index}: {g.name} · {g.kind} ({len(g.ops)} ops){where(g)}", g.index)
                                for g in groups]
        self._open.disabled = not groups

    def _set_block_options(self, runs):
        options = [("folded", None)]
        for r, run in enumerate(runs):
            name = f"run {r}: " if len(runs) > 1 else ""
            options += [(f"{name}open block {b + 1} of {run.count}", (r, b)) for b in range(run.count)]
        options.append(("every block drawn", "all"))
        keep = self._blocks.value if self._blocks.value in [v for _, v in options] else None
        self._quiet = True                   # one redraw, from show()
        try:
            self._blocks.options = options
            self._blocks.value = keep
        finally:
            self._quiet = False
        self._blocks.layout.display = None if runs else "none"

    def _redraw(self):
        if self._quiet:
            return
        value = self._blocks.value
        collapse, expand = value != "all", (value if isinstance(value, tuple) else None)
        self._graph.value = f'<div style="{_BOX}">{to_html(self.view, self.stage, collapse, expand)}</div>'

    def measure(self, number=5, rounds=3):
        """Build and time every kernel (``RelayView.profile``); the rows are also shown in the Profile tab."""
        self._profile.value = "<p>building and timing…</p>"
        try:
            rows = self.view.profile(number=number, rounds=rounds)
        except TVMLabError as e:
            self._profile.value = f'<span style="color:#c92a2a">{html.escape(str(e))}</span>'
            raise
        total = sum(ms for _, ms, _ in rows) or 1.0
        body = "".join(f"<tr><td><code>{html.escape(n)}</code></td><td>{ms:.3f}</td>"
                       f'<td><div style="background:#ffa94d;height:10px;width:{300 * ms / total:.0f}px"></div>'
                       f"</td><td>{html.escape(str(shape))}</td></tr>" for n, ms, shape in rows)
        self._profile.value = (f"<p>{len(rows)} kernel calls, {total:.2f} ms in all (each timed alone)</p>"
                               f"{TABLE}<tr><th>kernel</th><th>ms</th><th>share</th><th>output</th></tr>"
                               f"{body}</table>")
        self.last_profile = rows
        return rows

    def open_group(self, index):
        """Open fused group ``index`` of the shown stage in the operator explorer (also returned)."""
        try:
            ex = self.view.explore_group(index, self.stage, self.target, **self._explorer_options)
        except TVMLabError as e:
            self.error = e
            self._status.value = f'<span style="color:#c92a2a">{html.escape(str(e))}</span>'
            raise
        self.error = None
        group = self.view.groups(self.stage)[index]
        self._status.value = f"operator explorer on <code>{html.escape(group.name)}</code> ({group.kind})"
        self.group_explorer = ex
        self._out.clear_output()
        with self._out:
            from IPython.display import display
            display(ex)
        return ex

    def _open_selected(self):
        if self._groups.value is not None:
            try:
                self.open_group(self._groups.value)
            except TVMLabError:
                pass          # shown in the status line


def _changes_html(before, after, before_name):
    if before_name is None:
        rows = "".join(f"<tr><td><code>{html.escape(k)}</code></td><td>{v}</td></tr>"
                       for k, v in sorted(after.items()))
        return f"{TABLE}<tr><th>operator</th><th>count</th></tr>{rows}</table>"
    rows = []
    for k in sorted(set(before) | set(after)):
        a, b = before.get(k, 0), after.get(k, 0)
        if a != b:
            colour = "#2b8a3e" if b > a else "#c92a2a"
            rows.append(f"<tr><td><code>{html.escape(k)}</code></td><td>{a}</td><td>{b}</td>"
                        f'<td style="color:{colour}">{b - a:+d}</td></tr>')
    if not rows:
        return f"<p>same operators as after <code>{html.escape(before_name)}</code></p>"
    return (f"<p>operator counts against <code>{html.escape(before_name)}</code></p>{TABLE}<tr>"
            f"<th>operator</th><th>before</th><th>after</th><th></th></tr>{''.join(rows)}</table>")
