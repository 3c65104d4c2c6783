"""Storage scopes with tags: "shared:foo", "global.tag", "local.acc", "local_TB2".

A tag names a memory for the user (TVM uses tags for accelerator buffers);
storage behaves as its base scope: bound inference relaxes by the base's
rank and the allocation is made in the base memory.  AST2's realize keeps
the full name.
"""
from __future__ import annotations

BASES = ("global", "shared", "warp", "local")
# tensor-core fragments: opaque per-warp registers, bound like "local" (never relaxed over threads)
WMMA_SCOPES = ("wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator")


def split_scope(scope):
    """``(base, tag)`` of a scope string, or None when it names no known memory."""
    if not isinstance(scope, str):
        return None
    if scope in ("",) + BASES:
        return scope, ""
    if scope in WMMA_SCOPES:
        return "local", scope
    for b in BASES:
        if scope.startswith(b) and len(scope) > len(b) + 1 and scope[len(b)] in ":._":
            return b, scope[len(b):]
    return None


def base_scope(scope):
    parts = split_scope(scope)
    return parts[0] if parts else scope


def check_scope(prim, scope):
    from ..errors import ScheduleError
    if split_scope(scope) is None:
        raise ScheduleError(f"{prim}: unknown storage scope {scope!r}; expected one of {BASES}, "
                            "optionally with a tag (\"shared:tile\", \"global.acc\", \"local_buf\")")
