"""What a CUDA kernel costs the GPU: registers, shared memory, spills, and the occupancy they allow.

``resource_usage(ptx, arch)`` asks ``ptxas -v`` (the CUDA toolkit's assembler) for each kernel's
registers, shared memory, stack frame and spill bytes; without ptxas it reads registers and shared
memory from the cubin NVRTC made (its ``.nv.info`` attributes and ``.nv.shared`` sections).
``occupancy(usage, threads_per_block, arch)`` is the theoretical occupancy: resident warps per SM
over the most the SM holds, with the limit that binds (threads, blocks, registers or shared memory),
from the per-architecture limits in NVIDIA's CUDA occupancy calculator.  No GPU is needed.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass

from ..errors import BuildError


@dataclass
class KernelResources:
    """``registers`` per thread, static ``shared_bytes`` per block, ``stack_bytes`` per thread,
    ``spill_stores`` / ``spill_loads`` (bytes), and where the figures came from ("ptxas" or "cubin";
    the cubin does not say the spills: None)."""
    kernel: str
    registers: int
    shared_bytes: int
    stack_bytes: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    source: str = "ptxas"


# compute capability -> (max threads/SM, max blocks/SM, registers/SM, max shared bytes/SM,
#                        shared bytes reserved per block)
_LIMITS = {
    (5, 0): (2048, 32, 65536, 65536, 0), (5, 2): (2048, 32, 65536, 98304, 0), (5, 3): (2048, 32, 65536, 65536, 0),
    (6, 0): (2048, 32, 65536, 65536, 0), (6, 1): (2048, 32, 65536, 98304, 0), (6, 2): (2048, 32, 65536, 65536, 0),
    (7, 0): (2048, 32, 65536, 98304, 0), (7, 2): (2048, 32, 65536, 98304, 0), (7, 5): (1024, 16, 65536, 65536, 0),
    (8, 0): (2048, 32, 65536, 167936, 1024), (8, 6): (1536, 16, 65536, 102400, 1024),
    (8, 7): (1536, 16, 65536, 167936, 1024), (8, 9): (1536, 24, 65536, 102400, 1024),
    (9, 0): (2048, 32, 65536, 233472, 1024), (10, 0): (2048, 32, 65536, 233472, 1024),
    (12, 0): (1536, 32, 65536, 102400, 1024),
}
_WARP, _REG_UNIT, _SHARED_UNIT = 32, 256, 128


def limits(arch):
    """The SM limits of sm_<arch> (an int such as 80): the listed architecture at or below it."""
    cc = (arch // 10, arch % 10)
    known = [k for k in _LIMITS if k <= cc]
    if not known:
        raise BuildError(f"no occupancy limits for sm_{arch}; known: "
                         f"{', '.join(f'sm_{a}{b}' for a, b in sorted(_LIMITS))}")
    return _LIMITS[max(known)]


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas(text):
    """{kernel: KernelResources} from the output of ``ptxas -v``."""
    out, name, frame = {}, None, (None, None, None)
    for line in text.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            name, frame = m.group(1), (None, None, None)
            continue
        m = _PTXAS_FRAME.search(line)
        if m and name:
            frame = tuple(int(x) for x in m.groups())
            continue
        m = _PTXAS_USED.search(line)
        if m and name:
            out[name] = KernelResources(name, int(m.group(1)), int(m.group(2) or 0), *frame, source="ptxas")
    return out


def _ptxas(ptx, arch):
    exe = shutil.which("ptxas")
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([exe, "-v", f"-arch=sm_{arch}", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True, check=False)
    if r.returncode:
        raise BuildError(f"ptxas could not assemble the PTX for sm_{arch}:\n{r.stderr.strip()}")
    return parse_ptxas(r.stdout + r.stderr)


def _sections(elf):
    """[(name, offset, size, type)] of a 64-bit little-endian ELF file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise BuildError("not a 64-bit ELF cubin")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + k * shentsize) for k in range(shnum)]
    strtab = heads[shstrndx]
    names = elf[strtab[4]:strtab[4] + strtab[5]]

    def name(off):
        return names[off:names.index(b"\0", off)].decode()
    return [(name(h[0]), h[4], h[5], h[1]) for h in heads]


_EIATTR_REGCOUNT = 0x2F


def parse_cubin(cubin):
    """{kernel: KernelResources} (registers and shared memory) from a cubin's ELF sections."""
    secs = _sections(cubin)
    regs, shared = {}, {}
    symtab = next((s for s in secs if s[0] == ".symtab"), None)
    strtab = next((s for s in secs if s[0] == ".strtab"), None)
    symbols = []
    if symtab and strtab:
        names = cubin[strtab[1]:strtab[1] + strtab[2]]
        for k in range(symtab[2] // 24):
            st_name, = struct.unpack_from("<I", cubin, symtab[1] + 24 * k)
            symbols.append(names[st_name:names.index(b"\0", st_name)].decode())
    for name, off, size, _ in secs:
        if name.startswith(".nv.shared."):
            shared[name[len(".nv.shared."):]] = size
        if name == ".nv.info":                      # the attributes of every function
            pos = off
            while pos + 4 <= off + size:
                fmt, attr, n = cubin[pos], cubin[pos + 1], struct.unpack_from("<H", cubin, pos + 2)[0]
                body = pos + 4
                if fmt == 0x04 and attr == _EIATTR_REGCOUNT and n == 8:
                    sym, count = struct.unpack_from("<II", cubin, body)
                    if sym < len(symbols):
                        regs[symbols[sym]] = count
                # a 4-byte header (format, attribute, a 16-bit value); SVAL attributes: that many bytes follow
                pos = body + (n if fmt == 0x04 else 0)
    return {k: KernelResources(k, r, shared.get(k, 0), source="cubin") for k, r in regs.items()}


def resource_usage(ptx, arch, cubin=None):
    """{kernel: KernelResources} of the kernels in ``ptx`` (compiled for sm_<arch>): from ptxas when it
    is installed, else from ``cubin``; BuildError when neither is available."""
    got = _ptxas(ptx, arch)
    if got is not None:
        return got
    if cubin is not None:
        return parse_cubin(cubin)
    raise BuildError("resource usage needs ptxas (the CUDA toolkit) or a cubin (build with -arch=sm_XX)")


@dataclass
class Occupancy:
    """Resident ``blocks`` per SM, ``warps`` of ``max_warps``, ``occupancy`` (a fraction) and what
    limits it: "threads", "blocks", "registers" or "shared memory"."""
    blocks: int
    warps: int
    max_warps: int
    occupancy: float
    limited_by: str


def occupancy(res, threads_per_block, arch):
    """The theoretical occupancy of a kernel with resources ``res`` launched with that many threads."""
    max_threads, max_blocks, regs_sm, shared_sm, reserved = limits(arch)
    if threads_per_block < 1:
        raise BuildError(f"threads per block must be positive, got {threads_per_block}")
    warps_per_block = -(-threads_per_block // _WARP)
    max_warps = max_threads // _WARP
    bounds = {"threads": max_warps // warps_per_block, "blocks": max_blocks}
    if res.registers:
        per_warp = -(-res.registers * _WARP // _REG_UNIT) * _REG_UNIT
        bounds["registers"] = (regs_sm // per_warp) // warps_per_block
    if res.shared_bytes:
        per_block = -(-(res.shared_bytes + reserved) // _SHARED_UNIT) * _SHARED_UNIT
        bounds["shared memory"] = shared_sm // per_block
    limited_by = min(bounds, key=lambda k: bounds[k])
    blocks = max(0, bounds[limited_by])
    warps = blocks * warps_per_block
    return Occupancy(blocks, warps, max_warps, warps / max_warps, limited_by)
