"""``relay.sin`` / ``cos`` / ``tan`` / ``sinh`` / ``cosh`` / ``asin`` / ``acos`` / ``atan`` (element-wise, float)
and ``relay.mod`` (C's fmod) / ``relay.floor_mod`` (the divisor's sign), with numpy broadcasting."""
from __future__ import annotations

from .tensor import _binary, _float_only, _topi, _unary

sin = _unary("sin", rel=_float_only("sin"), topi=_topi("sin"))
cos = _unary("cos", rel=_float_only("cos"), topi=_topi("cos"))
tan = _unary("tan", rel=_float_only("tan"), topi=_topi("tan"))
sinh = _unary("sinh", rel=_float_only("sinh"), topi=_topi("sinh"))
cosh = _unary("cosh", rel=_float_only("cosh"), topi=_topi("cosh"))
asin = _unary("asin", rel=_float_only("asin"), topi=_topi("asin"))
acos = _unary("acos", rel=_float_only("acos"), topi=_topi("acos"))
atan = _unary("atan", rel=_float_only("atan"), topi=_topi("atan"))
mod = _binary("mod")
floor_mod = _binary("floor_mod")

__all__ = ["sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan", "mod", "floor_mod"]
