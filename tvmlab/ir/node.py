"""Base of every IR node: an immutable value with named child fields.

Nodes are frozen slotted dataclasses.  Identity (``is``) is what passes use to
track variables; ``structural_equal`` in ``ir.structural`` compares values.
``fields()`` lists the child fields in order, which lets one generic visitor
and one generic mutator (``ir.functor``) serve every pass.
"""
import dataclasses

node = dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False)


class Node:
    __slots__ = ()

    _field_names = None

    @classmethod
    def field_names(cls):
        names = cls.__dict__.get("_field_cache")
        if names is None:
            names = tuple(f.name for f in dataclasses.fields(cls))
            type.__setattr__(cls, "_field_cache", names)
        return names

    def replace(self, **changes):
        """A copy of this node with some fields replaced."""
        return dataclasses.replace(self, **changes)

    def __repr__(self):
        from .printer import astext
        return astext(self)

    __str__ = __repr__

    def same_as(self, other):
        return self is other
