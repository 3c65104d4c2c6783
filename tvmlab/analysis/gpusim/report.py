"""What a simulation found: ``Finding`` (one bug, with the threads, buffer and element involved) and
``SimReport`` (every finding, the launches made, how many barriers ran)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import SimulationError
from ...ir.printer import astext

# Kinds of findings, in the order a report lists them.
RACE = "race"
DIVERGENT_BARRIER = "divergent barrier"
DIVERGENT_SHUFFLE = "divergent shuffle"
DIVERGENT_WARP = "divergent warp-collective"    # a tensor-core (wmma) call some lanes of a warp skip
OUT_OF_BOUNDS = "out of bounds"
UNINITIALIZED = "uninitialized read"
KINDS = (DIVERGENT_BARRIER, RACE, DIVERGENT_SHUFFLE, DIVERGENT_WARP, OUT_OF_BOUNDS, UNINITIALIZED)

# At most this many findings of each kind are kept (the rest are only counted).
MAX_PER_KIND = 20


@dataclass
class Finding:
    """One bug: ``kind`` (see KINDS), the ``kernel``, the statement (short text), a ``message`` naming
    the threads (``threadIdx=(x,y,z) blockIdx=(x,y,z)``), and where it applies the ``buffer`` and
    flat ``element``; ``threads`` / ``arrived`` / ``missing`` hold the same threads as coordinates
    (for drawing them)."""
    kind: str
    kernel: str
    stmt: str
    message: str
    buffer: str | None = None
    element: int | None = None
    threads: tuple = ()       # the threads involved: ((tx, ty, tz), (bx, by, bz)) each
    block: tuple = ()         # the launch's block (x, y, z) dims
    arrived: tuple = ()       # a divergent barrier or shuffle: threadIdx of those that took part
    missing: tuple = ()       # ... and of those of the same block (segment) that did not

    def __str__(self):
        return f"{self.kind} in {self.kernel}: {self.message}\n    at: {self.stmt}"


@dataclass
class Launch:
    """One kernel launch the simulation made: ``grid`` and ``block`` (x, y, z), ``barriers`` (block
    barriers executed, summed over blocks), ``traffic`` (its memory traffic when counted, else None)."""
    kernel: str
    grid: tuple
    block: tuple
    barriers: int = 0
    traffic: object = None


@dataclass
class SimReport:
    """The findings of a simulation (at most MAX_PER_KIND of each kind; ``counts`` has the totals),
    the ``launches`` made, and ``stopped`` (why execution ended early, e.g. at a divergent barrier)."""
    name: str
    findings: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    launches: list = field(default_factory=list)
    stopped: str | None = None

    @property
    def ok(self):
        return not self.findings

    @property
    def barriers(self):
        return sum(ln.barriers for ln in self.launches)

    def traffic(self):
        """The memory traffic of every counted launch (``simulate(..., traffic=True)``): one
        ``traffic.Access`` per kernel statement and buffer, summed over launches."""
        from .traffic import Access
        rows = {}
        for ln in self.launches:
            if ln.traffic is None:
                continue
            for (site, buf, op), r in ln.traffic.rows.items():
                key = (ln.kernel, site, buf, op)
                acc = rows.get(key)
                if acc is None:
                    acc = rows[key] = Access(r.kernel, r.stmt, r.buffer, r.scope, r.op)
                acc.merge(r)
        return list(rows.values())

    def traffic_table(self, top=None):
        """The traffic as text, the least efficient accesses first (see ``traffic.table``)."""
        from .traffic import table
        rows = self.traffic()
        if not rows:
            return "no memory traffic counted: simulate with traffic=True"
        return table(rows, top)

    def of_kind(self, kind):
        return [f for f in self.findings if f.kind == kind]

    def add(self, finding):
        n = self.counts.get(finding.kind, 0)
        self.counts[finding.kind] = n + 1
        if n < MAX_PER_KIND:
            self.findings.append(finding)

    def summary(self):
        groups = {}
        for ln in self.launches:
            key = f"{ln.kernel} grid={tuple_text(ln.grid)} block={tuple_text(ln.block)}"
            groups[key] = groups.get(key, 0) + 1
        runs = ", ".join(k + (f" x{n}" if n > 1 else "") for k, n in groups.items()) or "none"
        if self.ok:
            return f"{self.name}: no findings; launches: {runs}"
        parts = [f"{self.counts[k]} {k}{'s' if self.counts[k] > 1 else ''}" for k in KINDS if k in self.counts]
        lines = [f"{self.name}: {', '.join(parts)} (launches: {runs})"]
        for k in KINDS:
            shown = self.of_kind(k)
            lines += [str(f) for f in shown]
            if self.counts.get(k, 0) > len(shown):
                lines.append(f"... and {self.counts[k] - len(shown)} more {k} finding(s)")
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        return "\n".join(lines)

    __str__ = summary

    def raise_if_findings(self):
        if not self.ok:
            raise SimulationError(self.summary(), self)
        return self


def stmt_text(s, width=110):
    """The first line of statement ``s`` as tvmlab prints it, cut to ``width`` characters."""
    text = astext(s).strip().splitlines()[0].strip() if s is not None else "?"
    return text if len(text) <= width else text[:width - 3] + "..."


def coords(n, dims):
    """Linear index ``n`` as (x, y, z) over ``dims``."""
    x, y, _ = dims
    return (n % x, (n // x) % y, n // (x * y))


def thread_text(gtid, block, grid):
    """``threadIdx=(x,y,z) blockIdx=(x,y,z)`` of global thread id ``gtid``."""
    t = block[0] * block[1] * block[2]
    tx, bx = coords(int(gtid) % t, block), coords(int(gtid) // t, grid)
    return f"threadIdx=({tx[0]},{tx[1]},{tx[2]}) blockIdx=({bx[0]},{bx[1]},{bx[2]})"


def tuple_text(c):
    return f"({c[0]},{c[1]},{c[2]})"
