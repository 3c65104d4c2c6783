"""TVM's ``tvm.parser``: Relay text to an IRModule (``parse``, ``fromtext``, ``parse_expr``).

The parser lives with the graph level (``tvmlab.relay.parser``); this face imports it on use, so
``import tvmlab`` stays free of the graph level.
"""
from __future__ import annotations


def parse(source, source_name="from_string", init_module=None, init_meta_table=None):
    """An IRModule from Relay text (``#[version = "0.0.5"]`` then ``def @main(...) { ... }``)."""
    from .relay import parser
    return parser.parse(source, source_name, init_module, init_meta_table)


def parse_expr(source):
    """One Relay expression from text."""
    from .relay import parser
    return parser.parse_expr(source)


def fromtext(source, source_name="from_string"):
    """The same as :func:`parse` (TVM's older name)."""
    return parse(source, source_name)
