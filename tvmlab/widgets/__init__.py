"""The explorer: tvmlab's compiler as an interactive notebook widget.

    ex = tvmlab.explore(s, [A, B, C], targets=["llvm"])
    ex.apply("split", stage="C", axis="i", factor=64)

Graph drawing, code panes and benchmark plots live in their own modules and
are usable without ipywidgets; ``Explorer`` (ipywidgets) ties them together.
"""
from .colors import KIND_COLORS  # noqa: F401
from .session import PRIMITIVES, Session, make_step  # noqa: F401


def explore(s, args=None, targets=None, **options):
    """Open the explorer on schedule ``s`` of ``args``: an ipywidgets widget (see Explorer)."""
    from .relay_view import explore_relay, is_relay_module  # a Relay module opens the Relay view
    if args is None and is_relay_module(s):
        return explore_relay(s, targets=targets, **options)
    from .explorer import Explorer
    return Explorer(s, args, targets=targets, **options)


def __getattr__(name):
    if name == "Explorer":
        from .explorer import Explorer
        return Explorer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
