"""Trigonometric and hyperbolic functions beside ``topi.sin`` / ``topi.cos`` (tag ``elemwise``, float tensors)."""
from __future__ import annotations

from ..ir import op as _op
from .math import _unary

tan = _unary("tan", _op.tan, True)
sinh = _unary("sinh", _op.sinh, True)
cosh = _unary("cosh", _op.cosh, True)
asin = _unary("asin", _op.asin, True)
acos = _unary("acos", _op.acos, True)
atan = _unary("atan", _op.atan, True)
