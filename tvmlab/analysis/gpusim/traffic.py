"""Memory traffic on the simulator: how each global or shared access of a kernel would move through a
GPU's memory system, counted per warp request.

Global memory moves 32-byte sectors: a warp's request costs the distinct sectors its lanes touch, so
``efficiency`` (bytes asked for / bytes moved) is 100% for a coalesced access and 12.5% for float32
lanes 32 bytes apart.  Shared memory has 32 banks of 4-byte words and serves a request in 128-byte
phases (all 32 lanes for 4-byte accesses, 16 for 8-byte, 8 for 16-byte vectors); a phase takes as many
wavefronts as the most distinct words any one bank holds, so ``conflict`` is 1.0 for a conflict-free
access and 32.0 for a column of a 32 x 32 float tile.  Tensor-core tile loads and stores (``wmma``)
are counted as the hardware's ``ldmatrix`` moves them: 8 rows of 16 bytes per phase.  A vector access
counts as one request when each thread's elements are consecutive and aligned to the vector's width
(CUDA's ``float4`` loads and stores), else as one request per element, as the CUDA C prints it.

The counts are a model of NVIDIA GPUs since Volta (sector size, banks, phases); they do not time
anything, and they say nothing of caches (a sector read twice is counted twice).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import dtype as dt

SECTOR = 32      # bytes a global memory transaction moves
BANKS = 32       # shared-memory banks, WORD bytes wide
WORD = 4
PHASE = 128      # bytes of a shared request served per phase
WARP = 32


@dataclass
class Access:
    """One statement's accesses of one buffer, summed over every warp request a simulation made.

    ``requests``: warp-level requests; ``bytes``: bytes the active lanes asked for (a byte several lanes
    of one request read counts once).  Global: ``sectors`` moved.  Shared: ``wavefronts`` served and
    ``ideal`` (the fewest the same bytes could take)."""
    kernel: str
    stmt: str
    buffer: str
    scope: str
    op: str
    requests: int = 0
    bytes: int = 0
    sectors: int = 0
    wavefronts: int = 0
    ideal: int = 0

    @property
    def efficiency(self):
        """Global: bytes asked for / bytes moved (1.0 = coalesced).  Shared: ideal / wavefronts."""
        if self.scope == "global":
            return self.bytes / (self.sectors * SECTOR) if self.sectors else 1.0
        return self.ideal / self.wavefronts if self.wavefronts else 1.0

    @property
    def conflict(self):
        """Shared: wavefronts per ideal wavefront (1.0 = no bank conflicts; N = N-way).  Global: 1.0."""
        return self.wavefronts / self.ideal if self.scope == "shared" and self.ideal else 1.0

    def merge(self, other):
        for k in ("requests", "bytes", "sectors", "wavefronts", "ideal"):
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def text(self):
        if self.scope == "global":
            how = f"{self.sectors} sectors, {100 * self.efficiency:.1f}% of the bytes moved used"
        else:
            how = f"{self.wavefronts} wavefronts for {self.ideal} ideal ({self.conflict:.2f}-way)"
        return f"{self.scope} {self.op} of {self.buffer}: {self.requests} warp requests, {self.bytes} bytes, {how}"


def global_cost(warp, byte):
    """(requests, distinct (warp, sector) pairs) of one statement's accesses: ``warp`` and ``byte`` per
    lane element."""
    if not len(warp):
        return 0, 0
    w = warp.astype(np.int64)
    sectors = np.unique(w * (1 << 40) + byte // SECTOR)
    return len(np.unique(w)), len(sectors)


def shared_cost(group, unit, banks=BANKS):
    """(wavefronts, ideal wavefronts) of shared accesses in phases: ``group`` the phase of each lane
    element, ``unit`` the bank-wide unit it touches (a 4-byte word; a 16-byte piece with ``banks`` 8 for
    ``ldmatrix``).  A phase takes as many wavefronts as the most distinct units in one bank, ideally
    its distinct units served ``banks`` at a time."""
    if not len(group):
        return 0, 0
    u = np.unique(group.astype(np.int64) * (1 << 40) + unit)
    phase, word = u >> 40, u & ((1 << 40) - 1)
    pb, depth = np.unique(phase * banks + word % banks, return_counts=True)
    ph = pb // banks
    starts = np.flatnonzero(np.r_[True, ph[1:] != ph[:-1]])
    waves = np.maximum.reduceat(depth, starts)
    _, units = np.unique(phase, return_counts=True)
    return int(waves.sum()), int((-(-units // banks)).sum())


def _distinct(warp, byte):
    """Distinct (warp, byte address) pairs: the bytes a statement's requests asked for, each once however
    many lanes of the warp read it."""
    return len(np.unique(warp.astype(np.int64) * (1 << 40) + byte))


def _one_access(a, ln, lanes):
    """Whether every thread's vector is consecutive elements aligned to the vector's width (CUDA moves
    those as one ``float4``-style access; anything else, lane by lane)."""
    if len(a) % lanes:
        return False
    v, lv = a.reshape(-1, lanes), ln.reshape(-1, lanes)
    return bool((np.diff(v, axis=1) == 1).all() and (lv == lv[:, :1]).all() and (v[:, 0] % lanes == 0).all())


class Traffic:
    """The counts of one launch, by statement site: ``rows`` {site: Access}."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.rows = {}

    def row(self, site, stmt, buffer, scope, op):
        key = (site, buffer, op)
        r = self.rows.get(key)
        if r is None:
            r = self.rows[key] = Access(self.kernel, stmt, buffer, scope, op)
        return r

    def record(self, ch, site, mem, op, ln, a, lanes):
        """Count the accesses of lanes ``ln`` to elements ``a`` of Memory ``mem`` (``lanes`` per thread)."""
        if mem.scope not in ("global", "shared") or not len(ln):
            return
        esize = max(1, dt.bits(mem.dtype) // 8)
        byte = a.astype(np.int64) * esize
        wpb = -(-ch.T // WARP)
        tid = ch.tid[ln]
        warp = ch.slot[ln] * wpb + tid // WARP
        r = self.row(site, ch.run.sim.site_text(site), mem.name, mem.scope, op)
        if mem.scope == "global":
            if lanes > 1 and not _one_access(a, ln, lanes):
                req, sec = global_cost(warp * lanes + np.arange(len(ln)) % lanes, byte)
            else:
                req, sec = global_cost(warp, byte)
            r.requests += req
            r.sectors += sec
            r.bytes += _distinct(warp, byte) * esize
            return
        if lanes > 1 and not _one_access(a, ln, lanes):     # lane by lane: a request per element
            group = warp * lanes + np.arange(len(ln)) % lanes
            r.requests += len(np.unique(warp)) * lanes
        else:
            width = esize * lanes if esize * lanes <= 16 else esize
            per_phase = max(1, PHASE // max(width, WORD))        # lanes served in one 128-byte phase
            group = warp * (WARP // per_phase) + (tid % WARP) // per_phase
            r.requests += len(np.unique(warp))
        w = shared_cost(group, byte // WORD)
        r.wavefronts += w[0]
        r.ideal += w[1]
        r.bytes += _distinct(warp, byte) * esize

    def record_tile(self, ch, site, mem, op, warp_off, st, rows_cols, layout, esize):
        """Count one wmma tile load or store per warp: tile rows (in memory) split in 16-byte pieces, 8
        rows of one piece per phase (``ldmatrix`` / ``stmatrix``); ``warp_off`` / ``st`` per warp, in
        elements."""
        if mem.scope not in ("global", "shared") or not len(warp_off):
            return
        r_, c_ = rows_cols
        nrow, ncol = (r_, c_) if layout == "row_major" else (c_, r_)     # lines contiguous in memory
        row = np.arange(nrow)
        col = np.arange(ncol)
        off = warp_off.astype(np.int64)[:, None, None]
        stride = st.astype(np.int64)[:, None, None]
        byte = (off + row[None, :, None] * stride + col[None, None, :]) * esize      # (warps, rows, cols)
        nw = len(warp_off)
        r = self.row(site, ch.run.sim.site_text(site), mem.name, mem.scope, op)
        r.requests += nw
        r.bytes += nw * nrow * ncol * esize
        if mem.scope == "global":
            w = np.repeat(np.arange(nw), nrow * ncol)
            r.sectors += global_cost(w, byte.reshape(-1))[1]
            return
        piece = max(1, 16 // esize)                              # elements per 16-byte piece
        pieces = -(-ncol // piece)
        start = byte[:, :, ::piece][:, :, :pieces]               # (warps, rows, pieces): piece addresses
        groups = -(-nrow // 8)
        group = (np.arange(nw)[:, None, None] * groups + (row // 8)[None, :, None]) * pieces + \
            np.arange(pieces)[None, None, :]
        w = shared_cost(np.broadcast_to(group, start.shape).reshape(-1), start.reshape(-1) // 16, BANKS // 4)
        r.wavefronts += w[0]
        r.ideal += w[1]


def totals(rows):
    """(global efficiency, shared conflict) over all ``rows``: bytes asked for / bytes moved by every
    global access, and wavefronts / ideal wavefronts of every shared one (1.0 when there are none)."""
    g = [r for r in rows if r.scope == "global"]
    sh = [r for r in rows if r.scope == "shared"]
    moved = sum(r.sectors for r in g) * SECTOR
    ideal = sum(r.ideal for r in sh)
    return (sum(r.bytes for r in g) / moved if moved else 1.0,
            sum(r.wavefronts for r in sh) / ideal if ideal else 1.0)


def table(rows, top=None):
    """Text table of Access rows, the least efficient first."""
    rows = sorted(rows, key=lambda r: (r.efficiency, -r.bytes))
    head = (f"{'scope':<7}{'op':<6}{'buffer':<18}{'requests':>9}{'bytes':>11}{'efficiency':>11}{'conflict':>9}"
            "  statement")
    out = [head, "-" * len(head)]
    for r in rows[:top]:
        conflict = f"{r.conflict:.2f}" if r.scope == "shared" else "-"
        out.append(f"{r.scope:<7}{r.op:<6}{r.buffer[:17]:<18}{r.requests:>9}{r.bytes:>11}{100 * r.efficiency:>10.1f}%"
                   f"{conflict:>9}  {r.kernel}: {r.stmt[:70]}")
    if top is not None and len(rows) > top:
        out.append(f"... {len(rows) - top} more")
    return "\n".join(out)


__all__ = ["Access", "Traffic", "global_cost", "shared_cost", "table", "totals", "SECTOR", "BANKS"]
