"""Simulated memory: global, shared (one copy per block) and local (one per thread) buffers, with the
checks of every access: bounds, reads of elements never written, and races.

A barrier orders everything a block did before it against everything after, so two accesses race
exactly when they come from different threads, one writes, and they are in different blocks or in the
same block within one barrier epoch.  Race detection keeps a shadow per element: the last writer (global
thread id and its block's epoch), the last reader (the same) with flags for "several threads read it in
that epoch" and "threads of several blocks read it".  That is exact for these rules.  The shadow of a
global buffer lives for a whole launch (its blocks run in chunks); a shared buffer's for its chunk.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtype as dt
from .report import OUT_OF_BOUNDS, RACE, UNINITIALIZED

# r_flag bits: several threads read the element in r_key's epoch; threads of several blocks read it
SEVERAL, BLOCKS = 1, 2
_TID = (1 << 32) - 1

_SCOPE_TEXT = {"global": "global", "shared": "shared memory", "local": "local memory"}


def garbage(dtype, n):
    """Storage of ``n`` elements of ``dtype`` filled with a recognisable junk value (NaN for floats)."""
    if dt.is_float(dtype):
        return np.full(n, np.nan, dtype=dt.to_numpy(dtype))
    if dt.is_bool(dtype):
        return np.ones(n, dtype=bool)
    return np.full(n, 0x5A % (2 ** (dt.bits(dtype) - 1)), dtype=dt.to_numpy(dtype))


def value_dtype(dtype):
    """The numpy dtype values of a buffer of ``dtype`` are computed in."""
    return np.float64 if dt.is_float(dtype) else bool if dt.is_bool(dtype) else np.int64


class Memory:
    """One buffer as the threads of a chunk see it.

    ``size`` is the element count one block (shared), one thread (local) or the launch (global) sees;
    ``data`` the flat storage of every copy.  ``races``: whether the kernel writes it (then every access
    is checked against the shadow); ``init``: whether reads of elements never written are reported.
    """

    def __init__(self, name, scope, dtype, size, data, races, init):
        self.name, self.scope, self.dtype, self.size = name, scope, dtype, size
        self.data = data
        self.np_dtype = data.dtype
        self.out_dtype = value_dtype(dtype)
        self.races = races
        self.written = np.zeros(len(data), dtype=bool) if init else None
        self.w_key = None

    def _shadow(self):
        n = len(self.data)
        self.w_key = np.full(n, -1, np.int64)       # last writer: epoch << 32 | global thread id
        self.w_site = np.zeros(n, np.int32)
        self.r_key = np.full(n, -1, np.int64)       # a reader: epoch << 32 | global thread id
        self.r_flag = np.zeros(n, np.int8)          # SEVERAL readers in r_key's epoch; readers in BLOCKS
        self.r_site = np.zeros(n, np.int32)

    # ---------------------------------------------------------------- addressing
    def _where(self, ch, idx, m, pred, lanes, site):
        """(threads, elements, physical addresses, output positions) of the accesses active under ``m``
        (positions None: every thread, in order)."""
        n = ch.N
        if lanes == 1:
            if pred is not None:
                m = _and_mask(ch, m, pred)
                if m is None:
                    return None
            if m is ch.full:
                ln, pos = ch.lanes, None
                a = idx if isinstance(idx, np.ndarray) and idx.ndim else np.full(n, idx, np.int64)
            else:
                ln = pos = ch.active(m)
                a = idx[ln] if isinstance(idx, np.ndarray) and idx.ndim else np.full(len(ln), idx, np.int64)
        else:
            em = np.broadcast_to(m[:, None], (n, lanes))
            if pred is not None:
                em = em & np.broadcast_to(pred, (n, lanes))
            pos = np.flatnonzero(em)
            ln = pos // lanes
            a = np.broadcast_to(idx, (n, lanes)).reshape(-1)[pos]
        a = a.astype(np.int64, copy=False)
        bad = (a < 0) | (a >= self.size)
        if bad.any():
            self._out_of_bounds(ch, a, ln, bad, site)
            keep = ~bad
            pos = np.flatnonzero(keep) if pos is None else pos[keep]
            ln, a = ln[keep], a[keep]
        if self.scope == "shared":
            pa = ch.slot[ln] * self.size + a
        elif self.scope == "local":
            pa = a * n + ln
        else:
            pa = a
        return ln, a, pa, pos

    def _out_of_bounds(self, ch, a, ln, bad, site):
        for k in np.flatnonzero(bad)[:3]:
            ch.find(OUT_OF_BOUNDS, site, f"{ch.who(ln[k])} accesses {self._elem(a[k])}, outside "
                    f"{self.name} ({self.size} elements{self._per()})", self.name, int(a[k]),
                    threads=(ch.gtid[ln[k]],))

    def _per(self):
        return {"shared": " per block", "local": " per thread"}.get(self.scope, "")

    def _elem(self, a):
        return f"{_SCOPE_TEXT[self.scope]} {self.name}[{int(a)}]"

    # ---------------------------------------------------------------- access
    def _row(self, ch, idx, m, pred, lanes):
        """Element ``idx`` of every thread's copy of a local buffer (stored element-major, so this is a
        contiguous row), when ``idx`` is the same in every thread; else None."""
        if self.scope != "local" or lanes != 1 or pred is not None or isinstance(idx, np.ndarray) and idx.ndim:
            return None
        i = int(idx)
        return i if 0 <= i < self.size else None

    def load(self, ch, idx, m, pred, lanes, site, count=True):
        n = ch.N
        i = self._row(ch, idx, m, pred, lanes)
        if i is not None:
            if self.written is not None:
                w = self.written[i * n:(i + 1) * n]
                if not (w.all() if m is ch.full else w[m].all()):
                    self._uninit(ch, np.flatnonzero(m & ~w)[:1], np.array([i]), site)
            return self.data[i * n:(i + 1) * n].astype(self.out_dtype)
        w = self._where(ch, idx, m, pred, lanes, site)
        if w is None:
            return np.zeros(n if lanes == 1 else (n, lanes), self.out_dtype)
        ln, a, pa, pos = w
        if count and ch.run.traffic is not None:
            ch.run.traffic.record(ch, site, self, "load", ln, a, lanes)
        vals = self.data[pa]
        if self.written is not None and len(pa):
            unset = ~self.written[pa]
            if unset.any():
                k = np.flatnonzero(unset)[:1]
                self._uninit(ch, ln[k], a[k], site)
        if self.races and len(pa):
            self._check_read(ch, ln, a, pa, site)
        if lanes == 1 and pos is None:
            return vals.astype(self.out_dtype)
        out = np.zeros(n * lanes, self.out_dtype)
        out[pos] = vals
        return out if lanes == 1 else out.reshape(n, lanes)

    def _uninit(self, ch, ln, a, site):
        ch.find(UNINITIALIZED, site, f"{ch.who(ln[0])} reads {self._elem(a[0])}, which "
                f"{'no thread of its block has' if self.scope == 'shared' else 'it has not'} written in this launch",
                self.name, int(a[0]), threads=(ch.gtid[ln[0]],))

    def store(self, ch, idx, val, m, pred, lanes, site, count=True):
        n = ch.N
        i = self._row(ch, idx, m, pred, lanes)
        if i is not None:
            row = slice(i * n, (i + 1) * n)
            if m is ch.full:
                self.data[row] = val
                self.written[row] = True
            else:
                np.copyto(self.data[row], val, casting="unsafe", where=m)
                self.written[row] |= m
            return
        w = self._where(ch, idx, m, pred, lanes, site)
        if w is None:
            return
        ln, a, pa, pos = w
        if count and ch.run.traffic is not None:
            ch.run.traffic.record(ch, site, self, "store", ln, a, lanes)
        if lanes > 1:
            val = np.broadcast_to(val, (ch.N, lanes)).reshape(-1)[pos]
        elif isinstance(val, np.ndarray) and val.ndim:
            if pos is not None:
                val = val[pos]
        else:
            val = np.full(len(pa), val)
        val = np.asarray(val).astype(self.np_dtype)
        if self.races and len(pa):
            self._check_write(ch, ln, a, pa, val, site)
        self.data[pa] = val
        if self.written is not None:
            self.written[pa] = True

    # ---------------------------------------------------------------- races
    def _check_read(self, ch, ln, a, pa, site):
        if self.w_key is None:
            self._shadow()
        tid, blk, key = ch.ids(ln)
        self._after_write(ch, ln, a, pa, site, tid, blk, key, "reads")
        # Merge this access into each element's readers.  Every thread's own merge is scattered (one
        # of several threads on an element wins); the losers show that there were several readers.
        rk, rf = self.r_key[pa], self.r_flag[pa]
        seen = rk >= 0
        same = seen & ((rk & _TID) // ch.T == blk)
        self.r_flag[pa] = (rf & BLOCKS) | np.where(seen & ~same, BLOCKS, 0) | \
            np.where(same & (rk >> 32 == key >> 32) & ((rf & SEVERAL != 0) | (rk != key)), SEVERAL, 0)
        self.r_key[pa] = key
        self.r_site[pa] = site
        lost = self.r_key[pa] != key
        if lost.any():
            p = pa[lost]
            other = (self.r_key[p] & _TID) // ch.T != blk[lost]
            self.r_flag[p] |= np.where(other, SEVERAL | BLOCKS, SEVERAL).astype(np.int8)

    def _after_write(self, ch, ln, a, pa, site, tid, blk, key, verb):
        """Report accesses of elements another thread wrote in an unordered way (a block barrier since,
        in the same block, orders them)."""
        wk = self.w_key[pa]
        wt = wk & _TID
        bad = (wk >= 0) & (wt != tid) & ((wt // ch.T != blk) | (wk >> 32 == key >> 32))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            ch.find(RACE, site, f"{ch.who(ln[k])} {verb} {self._elem(a[k])}, which {ch.thread(wt[k])} wrote"
                    f"{ch.at(self.w_site[pa[k]], site)}{self._unordered(wt[k], tid[k], ch)}",
                    self.name, int(a[k]), threads=(tid[k], wt[k]))

    def _check_write(self, ch, ln, a, pa, val, site):
        if self.w_key is None:
            self._shadow()
        tid, blk, key = ch.ids(ln)
        self._after_write(ch, ln, a, pa, site, tid, blk, key, "writes")
        rk, rf = self.r_key[pa], self.r_flag[pa]
        rt = rk & _TID
        bad = (rk >= 0) & ((rf & BLOCKS != 0) | (rt // ch.T != blk) |
                           ((rk >> 32 == key >> 32) & ((rf & SEVERAL != 0) | (rt != tid))))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            p, t = pa[k], int(rt[k])
            readers = f"threads of several blocks (last {ch.thread(t)})" if rf[k] & BLOCKS else \
                f"several threads (last {ch.thread(t)})" if rf[k] & SEVERAL else ch.thread(t)
            ch.find(RACE, site, f"{ch.who(ln[k])} writes {self._elem(a[k])}, which {readers} read"
                    f"{ch.at(self.r_site[p], site)}{self._unordered(t, tid[k], ch)}", self.name, int(a[k]),
                    threads=(tid[k], t))
        self.w_key[pa] = key
        self.w_site[pa] = site
        won = self.w_key[pa] & _TID       # two threads of this very store on one element: one wins
        clash = np.flatnonzero(won != tid)
        if len(clash):
            k = int(clash[0])
            first, second = sorted((int(won[k]), int(tid[k])))
            j = int(np.flatnonzero((tid == won[k]) & (pa == pa[k]))[0])
            same = " (the same value)" if val[j] == val[k] else ""
            ch.find(RACE, site, f"{ch.thread(first)} and {ch.thread(second)} both write {self._elem(a[k])}{same} "
                    f"in this statement{self._unordered(first, second, ch)}", self.name, int(a[k]),
                    threads=(first, second))

    @staticmethod
    def _unordered(t1, t2, ch):
        if int(t1) // ch.T != int(t2) // ch.T:
            return " (threads of different blocks are never ordered within a launch)"
        return " with no barrier between"


def _and_mask(ch, m, pred):
    if not isinstance(pred, np.ndarray):
        return m if pred else None
    out = m & pred
    if not out.any():
        return None
    return ch.full if out.all() else out
