"""Errors of the graph level: every one names the operator (or node) and what was expected versus given."""
from __future__ import annotations

from ..errors import TVMLabError


class RelayError(TVMLabError, ValueError):
    """A graph is malformed or an operator is used wrongly (bad attribute, wrong argument count)."""


class TypeInferenceError(RelayError):
    """Shapes or dtypes of an operator's arguments do not fit together (raised by InferType)."""
