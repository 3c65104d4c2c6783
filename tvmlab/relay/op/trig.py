"""``relay.sin`` / ``cos`` / ``tan`` / ``sinh`` / ``cosh`` / ``asin`` / ``acos`` / ``atan`` (element-wise, float)
and ``relay.mod`` (C's fmod) / ``relay.floor_mod`` (the divisor's sign), with numpy broadcasting."""
from __future__ import annotations

from .tensor import _binary, _float_unary

sin = _float_unary("sin")
cos = _float_unary("cos")
tan = _float_unary("tan")
sinh = _float_unary("sinh")
cosh = _float_unary("cosh")
asin = _float_unary("asin")
acos = _float_unary("acos")
atan = _float_unary("atan")
mod = _binary("mod")
floor_mod = _binary("floor_mod")

__all__ = ["sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan", "mod", "floor_mod"]
