"""Named sets of module settings, for timing schedule variants side by side in one run.

The schedules keep the choices a GPU has to decide as module constants (``topi.cuda.conv2d.REGISTER_TILES``,
``tvmlab.lower.thread_sync.PROVE_ONE_TO_ONE``, ...). A benchmark given ``--variant old
topi.cuda.conv2d.REGISTER_TILES=False`` builds each row once per variant, each with its settings in place,
so the ratios come from one run on one device rather than from runs on different machines.
"""
from __future__ import annotations

import ast
import contextlib
import importlib
from dataclasses import dataclass, field

from ..errors import TVMLabError

DEFAULT = "default"


@dataclass
class Variant:
    """A name and its settings: [(module, attribute, value)]."""
    name: str
    settings: list = field(default_factory=list)

    def describe(self):
        return ", ".join(f"{m.__name__}.{a}={v!r}" for m, a, v in self.settings) or "the defaults"


def _module_and_attr(path):
    """The module and attribute of a dotted ``path`` under ``tvmlab`` (``topi.cuda.conv2d.FB`` or
    ``tvmlab.topi.cuda.conv2d.FB``)."""
    parts = path.split(".")
    if parts[0] == "tvmlab":
        parts = parts[1:]
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise TVMLabError(f"variant setting {path!r}: expected a module path and an attribute, such as "
                          "topi.cuda.conv2d.REGISTER_TILES")
    name = "tvmlab." + ".".join(parts[:-1])
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        raise TVMLabError(f"variant setting {path!r}: no module {name} ({e})") from None
    if not hasattr(module, parts[-1]):
        raise TVMLabError(f"variant setting {path!r}: {name} has no attribute {parts[-1]!r}")
    return module, parts[-1]


def _compatible(old, new):
    if old is None or new is None:
        return True
    if isinstance(old, bool):
        return isinstance(new, bool) or type(new) is int and new in (0, 1)
    if isinstance(new, bool):
        return False
    if isinstance(old, float):
        return isinstance(new, (int, float))
    return type(old) is type(new)


def parse_setting(text):
    """``(module, attribute, value)`` of ``path=value``; the value is a Python literal (``False``, ``64``,
    ``(2, 16, 4)``, ``None``) of the attribute's kind, and the attribute a plain value, not a function."""
    path, eq, raw = text.partition("=")
    if not eq or not raw.strip():
        raise TVMLabError(f"variant setting {text!r}: expected path=value, such as "
                          "topi.cuda.conv2d.REGISTER_TILES=False")
    module, attr = _module_and_attr(path.strip())
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        raise TVMLabError(f"variant setting {text!r}: the value {raw.strip()!r} is not a Python literal "
                          "(True, 64, 0.5, (2, 16, 4), None, 'text')") from None
    old = getattr(module, attr)
    if callable(old) or isinstance(old, type(importlib)):
        raise TVMLabError(f"variant setting {text!r}: {module.__name__}.{attr} is a "
                          f"{type(old).__name__}, not a setting")
    if not _compatible(old, value):
        raise TVMLabError(f"variant setting {text!r}: {module.__name__}.{attr} is a {type(old).__name__} "
                          f"({old!r}), got a {type(value).__name__}")
    return module, attr, value


def parse_variants(specs):
    """Variants from ``[[name, "path=value", ...], ...]`` (argparse's ``append`` of ``nargs="+"``); none
    given: the defaults alone."""
    if not specs:
        return [Variant(DEFAULT)]
    variants, names = [], set()
    for spec in specs:
        name, *settings = spec
        if "=" in name:
            raise TVMLabError(f"--variant {' '.join(spec)}: the first word names the variant (such as old), "
                              f"got the setting {name!r}")
        if name in names:
            raise TVMLabError(f"--variant {name}: the name is given twice")
        names.add(name)
        variants.append(Variant(name, [parse_setting(s) for s in settings]))
    return variants


@contextlib.contextmanager
def applied(variant):
    """The variant's settings in place while the block runs; the old values back afterwards."""
    old = [(m, a, getattr(m, a)) for m, a, _ in variant.settings]
    try:
        for m, a, v in variant.settings:
            setattr(m, a, v)
        yield variant
    finally:
        for m, a, v in reversed(old):
            setattr(m, a, v)
