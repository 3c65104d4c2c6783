"""Tensor cores on the simulator: the wmma intrinsics as warp-collective operations.

A fragment buffer (``wmma.*`` scope) is per-warp storage: ``FragmentMemory`` keeps one copy per warp
of ``count`` tiles (rows x cols, row-major whatever the layout in memory).  Every call must be made by
all the lanes of a warp together, with the same fragment index, pointer, stride and fill value in
each lane; a call some lanes of a warp skip is a divergent warp-collective (undefined behaviour on
hardware, which the simulator reports like a divergent barrier), a value that differs between lanes
an error.  Loads and stores go through the simulated shared / global memory (bounds, races and reads
of unwritten elements are checked): lane ``l`` of a warp moves the tile's elements ``l, l + 32, ...``.
``tvm_mma_sync`` multiplies float16 tiles in float32 (as the hardware does) and rounds the result
to the accumulator's type.
"""
from __future__ import annotations

import numpy as np

from ...errors import SimulationError
from ...ir import dtype as dt
from ...ir.expr import Call
from .memory import garbage
from .report import DIVERGENT_WARP, OUT_OF_BOUNDS, UNINITIALIZED

WARP = 32


class FragmentMemory:
    """The fragments of one buffer for every warp of a chunk: ``data`` (warps, count, rows * cols)."""
    scope = "fragment"

    def __init__(self, name, frag, warps):
        r, c = frag.rows_cols
        self.name, self.frag, self.rc = name, frag, r * c
        self.data = garbage(frag.dtype, warps * frag.count * self.rc).reshape(warps, frag.count, self.rc)
        self.written = np.zeros((warps, frag.count), dtype=bool)

    def load(self, ch, *a):
        raise SimulationError(f"{ch.run.sim.name}: fragment {self.name} is read element by element; a tensor-core "
                              "fragment is opaque (use tvm_store_matrix_sync to see its values)")

    store = load


def _warps(ch, m, site, op):
    """(active lanes, their warp ids, leader lane of each active warp, warp ids) under mask ``m``;
    reports a divergent warp-collective when some lanes of a warp are inactive."""
    wpb = -(-ch.T // WARP)
    warp = ch.slot * wpb + ch.tid // WARP
    ln = ch.lanes if m is ch.full else ch.active(m)
    split = None if m is ch.full else ch.split_group(m, WARP)
    if split is not None:
        g, on, off, blk, whole = split
        ch.find(DIVERGENT_WARP, site, f"in blockIdx={blk}, threadIdx={ch._threads_text(ch.tid[on])} run {op} "
                f"but threadIdx={ch._threads_text(ch.tid[off])} of the same warp do not: a tensor-core "
                f"call needs the whole warp{ch._under()}", key=g, threads=[int(ch.gtid[on[0]])],
                arrived=ch.tid[on], missing=ch.tid[off])
        ln = ln[whole[ln]]                           # the split warps do nothing
    w = warp[ln]
    ws, first = np.unique(w, return_index=True)
    return ln, w, ln[first], ws


def _uniform(ch, val, ln, w, leaders, ws, what, op, site):
    """``val`` (scalar or per-lane array) at each warp's leader; raises when lanes of a warp differ."""
    if not isinstance(val, np.ndarray) or not val.ndim:
        return np.full(len(ws), val)
    lead = val[leaders]
    pos = np.searchsorted(ws, w)
    if not np.array_equal(val[ln], lead[pos]):
        k = int(np.flatnonzero(val[ln] != lead[pos])[0])
        raise SimulationError(f"{ch.run.sim.name}: `{ch.run.sim.site_text(site)}`: the {what} of {op} differs "
                              f"between the lanes of a warp ({ch.who(ln[k])} has {val[ln[k]]}, its warp's first "
                              f"lane {val[leaders[pos[k]]]}); a tensor-core call takes one value per warp")
    return lead


def _fragment(ch, var, op):
    mem = ch.mem.get(var)
    if not isinstance(mem, FragmentMemory):
        raise SimulationError(f"{ch.run.sim.name}: {op}: {var.name} is not a fragment buffer (scope wmma.*)")
    return mem


def _index(ch, mem, idx, ws, leaders, site):
    """Fragment indices per warp, checked against the buffer's count; None where out of bounds."""
    idx = idx.astype(np.int64)
    bad = (idx < 0) | (idx >= mem.frag.count)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        ch.find(OUT_OF_BOUNDS, site, f"{ch.who(leaders[k])}'s warp uses fragment {mem.name}[{int(idx[k])}], "
                f"outside its {mem.frag.count} fragments", mem.name, int(idx[k]), threads=(ch.gtid[leaders[k]],))
        return None
    return idx


def _warp_call(ch, m, site, op, fvar, fidx):
    """The warps taking part in a call on fragment buffer ``fvar`` and the fragment each names:
    (lanes, their warps, leaders, warps, FragmentMemory, indices), or None when there is nothing to do."""
    ln, w, leaders, ws = _warps(ch, m, site, op)
    if not len(ws):
        return None
    mem = _fragment(ch, fvar, op)
    x = _index(ch, mem, _uniform(ch, fidx(ch, m), ln, w, leaders, ws, "fragment index", op, site),
               ws, leaders, site)
    return None if x is None else (ln, w, leaders, ws, mem, x)


def _check_alignment(ch, op, site, off, st, esize):
    """wmma's rules, undefined behaviour on hardware when broken: the pointer 256-bit aligned, the
    stride (ldm) a multiple of 16 bytes."""
    bad_ptr = (off * esize) % 32 != 0
    bad_ldm = (st * esize) % 16 != 0
    if bad_ptr.any() or bad_ldm.any():
        k = int(np.flatnonzero(bad_ptr | bad_ldm)[0])
        what = (f"pointer at element {int(off[k])} ({int(off[k]) * esize} bytes) is not 32-byte aligned"
                if bad_ptr[k] else f"stride {int(st[k])} ({int(st[k]) * esize} bytes) is not a multiple of 16 bytes")
        raise SimulationError(f"{ch.run.sim.name}: `{ch.run.sim.site_text(site)}`: {op}'s {what}, as the "
                              "tensor cores require")


def compile_call(sim, s, site):
    """A closure ``g(ch, m)`` running wmma call ``s.value`` (in Evaluate ``s``)."""
    e = s.value
    op, args = e.op, e.args
    fr = sim.fragments
    if op == "tvm_mma_sync":
        fs = [sim.expr(a) for a in args]
        d, a, b, c = (args[i] for i in (0, 2, 4, 6))

        def mma(ch, m):
            ln, w, leaders, ws = _warps(ch, m, site, op)
            if not len(ws):
                return
            mems = [_fragment(ch, v, op) for v in (d, a, b, c)]
            idx = []
            for k, mem in enumerate(mems):
                x = _uniform(ch, fs[2 * k + 1](ch, m), ln, w, leaders, ws, "fragment index", op, site)
                x = _index(ch, mem, x, ws, leaders, site)
                if x is None:
                    return
                idx.append(x)
            for mem, x in zip(mems[1:], idx[1:]):
                if not mem.written[ws, x].all():
                    k = int(np.flatnonzero(~mem.written[ws, x])[0])
                    ch.find(UNINITIALIZED, site, f"{ch.who(leaders[k])}'s warp multiplies fragment "
                            f"{mem.name}[{int(x[k])}], which it has not filled or loaded", mem.name, int(x[k]),
                            threads=(ch.gtid[leaders[k]],))
            md, ma, mb, mc = mems
            mm, nn, kk = md.frag.shape
            av = ma.data[ws, idx[1]].astype(np.float32).reshape(-1, mm, kk)
            bv = mb.data[ws, idx[2]].astype(np.float32).reshape(-1, kk, nn)
            cv = mc.data[ws, idx[3]].astype(np.float32).reshape(-1, mm, nn)
            out = (np.matmul(av, bv) + cv).reshape(len(ws), -1)
            md.data[ws, idx[0]] = out.astype(md.data.dtype)
            md.written[ws, idx[0]] = True
        return mma

    fvar, fidx = args[0], sim.expr(args[4])
    if op == "tvm_fill_fragment":
        fval = sim.expr(args[5])

        def fill(ch, m):
            call = _warp_call(ch, m, site, op, fvar, fidx)
            if call is None:
                return
            ln, w, leaders, ws, mem, x = call
            v = _uniform(ch, fval(ch, m), ln, w, leaders, ws, "fill value", op, site)
            mem.data[ws, x] = v.astype(mem.data.dtype)[:, None]
            mem.written[ws, x] = True
        return fill

    ptr = args[5]
    if not (isinstance(ptr, Call) and ptr.op == "tvm_access_ptr" and len(ptr.args) == 5):
        raise SimulationError(f"{sim.name}: {op} needs a tvm_access_ptr(...) pointer (buffer.access_ptr), got {ptr}")
    pvar, foff, fstride = ptr.args[1], sim.expr(ptr.args[2]), sim.expr(args[6])
    pdtype = ptr.args[0].value
    layout = args[7].value
    frag = fr[fvar]
    rc = int(np.prod(frag.rows_cols))
    per = rc // WARP
    mine = np.arange(WARP)[:, None] + WARP * np.arange(per)[None, :]     # lane l: elements l, l + 32, ...
    lanes = dt.lanes(pdtype)
    if lanes != 1:
        raise SimulationError(f"{sim.name}: {op}: pointer of vector type {pdtype}")
    store = op == "tvm_store_matrix_sync"
    esize = max(1, dt.bits(pdtype) // 8)

    def move(ch, m):
        call = _warp_call(ch, m, site, op, fvar, fidx)
        if call is None:
            return
        ln, w, leaders, ws, mem, x = call
        off = _uniform(ch, foff(ch, m), ln, w, leaders, ws, "pointer", op, site).astype(np.int64)
        st = _uniform(ch, fstride(ch, m), ln, w, leaders, ws, "stride", op, site).astype(np.int64)
        _check_alignment(ch, op, site, off, st, esize)
        pos = np.searchsorted(ws, w)                 # each active lane's warp row
        lane = ch.tid[ln] % WARP
        i, j = np.divmod(mine[lane], frag.rows_cols[1])     # tile coordinates of each lane's elements
        if layout == "row_major":
            rel = i * st[pos][:, None] + j
        else:
            rel = j * st[pos][:, None] + i
        idx = np.zeros((ch.N, per), np.int64)
        idx[ln] = off[pos][:, None] + rel
        mask = np.zeros(ch.N, bool)
        mask[ln] = True
        target = ch.memory(pvar)
        if ch.run.traffic is not None:
            ch.run.traffic.record_tile(ch, site, target, "store" if store else "load", off, st, frag.rows_cols,
                                       layout, max(1, dt.bits(pdtype) // 8))
        if store:
            if not mem.written[ws, x].all():
                k = int(np.flatnonzero(~mem.written[ws, x])[0])
                ch.find(UNINITIALIZED, site, f"{ch.who(leaders[k])}'s warp stores fragment {mem.name}[{int(x[k])}], "
                        "which it has not filled or computed", mem.name, int(x[k]), threads=(ch.gtid[leaders[k]],))
            tile = mem.data[ws, x]                   # (warps, rc)
            val = np.zeros((ch.N, per), tile.dtype)
            val[ln] = tile[pos[:, None], mine[lane]]
            target.store(ch, idx, val.astype(np.float64), mask, None, per, site, count=False)
        else:
            vals = target.load(ch, idx, mask, None, per, site, count=False)
            tile = np.empty((len(ws), rc), np.float64)
            tile[pos[:, None], mine[lane]] = vals[ln]
            mem.data[ws, x] = tile.astype(mem.data.dtype)
            mem.written[ws, x] = True
    return move


__all__ = ["FragmentMemory", "compile_call", "WARP"]
