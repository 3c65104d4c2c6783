"""``topi.einsum("ij,jk->ik", A, B)``: one TE compute for any explicit or implicit subscripts.

Letters kept in the output are its axes; the others become reduction axes
summed over the product of the operands (numpy's rules; "..." stands for the
leading axes an operand has beyond its letters, broadcast across operands).
"""
from __future__ import annotations

from .. import te
from .utils import OperatorError, check_tensor, const_or_none


def parse_subscripts(subscripts, ranks):
    """(input letter lists, output letters) of ``subscripts`` for operands of ``ranks``; errors name the term."""
    if not isinstance(subscripts, str):
        raise OperatorError(f"einsum: subscripts must be a string, got {subscripts!r}")
    spec = subscripts.replace(" ", "")
    lhs, arrow, out = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise OperatorError(f"einsum: {subscripts!r} names {len(terms)} operand(s), got {len(ranks)}")
    ell = []
    if "." in spec:
        terms, out, ell = _expand_ellipsis(subscripts, terms, out if arrow else None, ranks)
        lhs = ",".join(terms)
        if not arrow:
            letters = "".join(terms)
            out = "".join(ell) + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
            arrow = "->"
    for t, r in zip(terms, ranks):
        if not t.isalpha() and t != "" or len(t) != r:
            raise OperatorError(f"einsum: term {t!r} needs {r} letter(s) for an operand of rank {r}")
    if not arrow:       # implicit: the letters seen once, alphabetically
        letters = "".join(terms)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if (out and not out.isalpha()) or len(set(out)) != len(out) or any(c not in lhs for c in out):
        raise OperatorError(f"einsum: output {out!r} must be distinct letters of the inputs")
    return [list(t) for t in terms], list(out)


def _expand_ellipsis(subscripts, terms, out, ranks):
    """Terms (and output) with each "..." replaced by fresh capital letters, right-aligned across operands."""
    used = set("".join(terms) + (out or ""))
    counts = []
    for t, r in zip(terms, ranks):
        if t.count("...") > 1 or (t.replace("...", "").count(".")):
            raise OperatorError(f"einsum: term {t!r} of {subscripts!r} has a malformed ellipsis")
        counts.append(r - (len(t) - 3) if "..." in t else 0)
        if counts[-1] < 0:
            raise OperatorError(f"einsum: term {t!r} has more letters than its operand's rank {r}")
    n = max(counts) if counts else 0
    pool = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used][:n]
    if len(pool) < n:
        raise OperatorError(f"einsum: {subscripts!r} uses too many letters to expand its ellipsis")
    terms = [t.replace("...", "".join(pool[n - k:])) for t, k in zip(terms, counts)]
    if out is not None:
        if out.replace("...", "").count("."):
            raise OperatorError(f"einsum: output {out!r} of {subscripts!r} has a malformed ellipsis")
        out = out.replace("...", "".join(pool))
    return terms, out, pool


def einsum(subscripts, *operands):
    """Sum of products of ``operands`` as ``numpy.einsum(subscripts, ...)`` (one dtype)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise OperatorError("einsum: needs at least one operand")
    for k, t in enumerate(operands):
        check_tensor("einsum", t, f"operand {k}")
    if len({t.dtype for t in operands}) != 1:
        raise OperatorError(f"einsum: operands need one dtype, got {[t.dtype for t in operands]}")
    terms, out = parse_subscripts(subscripts, [len(t.shape) for t in operands])
    extent = {}
    for t, letters in zip(operands, terms):
        for c, d in zip(letters, t.shape):
            if c in extent and const_or_none(extent[c]) != const_or_none(d) and 1 not in \
                    (const_or_none(extent[c]), const_or_none(d)):
                raise OperatorError(f"einsum: letter {c!r} is {extent[c]} in one operand and {d} in another")
            if c not in extent or const_or_none(extent[c]) == 1:
                extent[c] = d
    summed = [c for c in extent if c not in out]
    raxes = {c: te.reduce_axis((0, extent[c]), name=f"k_{c}") for c in summed}

    def f(*i):
        env = dict(zip(out, i))
        env.update({c: r for c, r in raxes.items()})
        val = None
        for t, letters in zip(operands, terms):
            idx = [0 if const_or_none(d) == 1 and const_or_none(extent[c]) != 1 else env[c]
                   for c, d in zip(letters, t.shape)]
            v = t(*idx)
            val = v if val is None else val * v
        return te.sum(val, axis=list(raxes.values())) if raxes else val
    return te.compute(tuple(extent[c] for c in out), f, name="T_einsum", tag="einsum")
