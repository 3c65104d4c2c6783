"""How a stage's leaf axes derive from its root axes (TVM's IterVar relations).

Each relation links parent axes to children; bound inference passes domains
down them (root → leaf) and ScheduleOps passes loop indices up (leaf → root).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(eq=False)
class Split:
    """parent = outer * factor + inner; exactly one of factor / nparts is set."""
    parent: Any
    outer: Any
    inner: Any
    factor: Any = None
    nparts: Any = None

    def __repr__(self):
        how = f"factor={self.factor}" if self.factor is not None else f"nparts={self.nparts}"
        return f"split(parent={self.parent.var.name}, outer={self.outer.var.name}, " \
               f"inner={self.inner.var.name}, {how})"


@dataclass(eq=False)
class Fuse:
    """fused = outer * extent(inner) + inner."""
    outer: Any
    inner: Any
    fused: Any

    def __repr__(self):
        return f"fuse(outer={self.outer.var.name}, inner={self.inner.var.name}, " \
               f"fused={self.fused.var.name})"


@dataclass(eq=False)
class Rebase:
    """rebased runs from 0; parent = rebased + min(parent)."""
    parent: Any
    rebased: Any

    def __repr__(self):
        return f"rebase(parent={self.parent.var.name}, rebased={self.rebased.var.name})"


@dataclass(eq=False)
class Singleton:
    """A new axis of extent one (from fusing nothing)."""
    iter: Any

    def __repr__(self):
        return f"singleton({self.iter.var.name})"
