"""Operation attributes (``te.compute(..., attrs={...})``) seen both ways.

TVM keeps an operation's attrs as a Map of IR objects: ``op.attrs["hello"].value``
is the int of an IntImm and ``op.attrs["arr"][0].value`` an element of an Array.
tvmlab's own readers (topi schedules, autotvm templates, relay) treat them as
plain Python values: ``int(op.attrs["block"])``, ``sh, sw = op.attrs["strides"]``.
The values here are both: an int, float or str subclass with TVM's ``.value``
and ``.dtype``, a tuple subclass for arrays, a dict subclass for maps.  They
compare, hash, pickle and ``repr`` like the plain values, so tuning records and
workload keys do not change; ``str`` of a map is JSON text as in TVM.
"""
from __future__ import annotations

import json
import math
import numbers

from .expr import Expr


class AttrInt(int):
    """An integer attribute: an int with IntImm's ``.value`` and ``.dtype``."""
    __slots__ = ()

    @property
    def value(self):
        return int(self)

    @property
    def dtype(self):
        return "int32" if -2**31 <= self < 2**31 else "int64"


class AttrBool(int):
    """A boolean attribute (``IntImm("bool")`` in TVM): 0 or 1, printed as False / True."""
    __slots__ = ()
    dtype = "bool"

    @property
    def value(self):
        return bool(self)

    def __repr__(self):
        return repr(bool(self))

    __str__ = __repr__


class AttrFloat(float):
    """A float attribute: a float with FloatImm's ``.value`` and ``.dtype``."""
    __slots__ = ()
    dtype = "float32"

    @property
    def value(self):
        return float(self)


class AttrStr(str):
    """A string attribute: a str with StringImm's ``.value``."""
    __slots__ = ()

    @property
    def value(self):
        return str(self)


class AttrArray(tuple):
    """An array attribute (TVM's Array): a tuple whose elements are attribute values too."""
    __slots__ = ()

    def __str__(self):
        return "[" + ", ".join(_text(v) for v in self) + "]"


class AttrMap(dict):
    """An operation's attrs (TVM's Map): values are converted as they are stored."""

    def __init__(self, items=(), **kw):
        super().__init__()
        self.update(items, **kw)

    def __setitem__(self, key, value):
        super().__setitem__(key, attr_value(value))

    def update(self, items=(), **kw):
        for k, v in dict(items, **kw).items():
            self[k] = v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def __str__(self):
        return "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in self.items()) + "}"

    def __reduce__(self):
        return (AttrMap, (dict(self),))


def attr_value(x):
    """``x`` as an attribute value; IR objects (expressions, tensors, ...) and None stay as they are."""
    if x is None or isinstance(x, (AttrInt, AttrBool, AttrFloat, AttrStr, AttrArray, AttrMap, Expr)):
        return x
    if isinstance(x, bool):
        return AttrBool(x)
    if isinstance(x, numbers.Integral):
        return AttrInt(x)
    if isinstance(x, numbers.Real):
        return AttrFloat(x)
    if isinstance(x, str):
        return AttrStr(x)
    if isinstance(x, (list, tuple)):
        return AttrArray(attr_value(v) for v in x)
    if isinstance(x, dict):
        return AttrMap(x)
    try:
        import numpy as np
        if isinstance(x, np.generic):
            return attr_value(x.item())
    except ImportError:  # pragma: no cover
        pass
    return x


def _text(v):
    """One value of a map's JSON-like text (TVM prints Maps this way)."""
    if v is None:
        return "null"
    if isinstance(v, (AttrBool, bool)):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(str(v))
    if isinstance(v, float):
        return repr(float(v)) if math.isfinite(v) else json.dumps(repr(float(v)))
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, (AttrArray, AttrMap)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    return str(v)


__all__ = ["AttrInt", "AttrBool", "AttrFloat", "AttrStr", "AttrArray", "AttrMap", "attr_value"]
