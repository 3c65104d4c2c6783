"""The vector registers an llvm target compiles to: their width and how many there are.

CPU schedules (``tvmlab.topi``) size their register tiles from this: an
AVX-512 machine has 32 registers of 512 bits, an AVX2 one 16 of 256.  The
answer is read off LLVM itself, by compiling a wide vector add for the
target's CPU and features and looking at the registers the assembly names, so
it holds for any ``-mcpu`` / ``-mattr`` LLVM knows, not only for a table of
names kept here.
"""
from __future__ import annotations

import dataclasses
import functools
import re

import llvmlite.binding as llvm

from ..ir import dtype as dt
from ..runtime import llvm_jit
from .llvm_build import target_config, target_triple
from .registry import Target

_PROBE = """
define void @probe(ptr noalias %a, ptr noalias %b) {
  %x = load <64 x float>, ptr %a, align 64
  %y = load <64 x float>, ptr %b, align 64
  %z = fadd <64 x float> %x, %y
  store <64 x float> %z, ptr %a, align 64
  ret void
}
"""

# register name patterns in the probe's assembly -> (bits, registers of that kind)
_KINDS = ((re.compile(r"%zmm\d"), 512, 32), (re.compile(r"%ymm\d"), 256, 16), (re.compile(r"%xmm\d"), 128, 16),
          (re.compile(r"\bv\d+\.4s\b"), 128, 32),      # AArch64 NEON: v0-v31
          (re.compile(r"\bq\d+\b"), 128, 16))            # 32-bit ARM NEON: q0-q15


@dataclasses.dataclass(frozen=True)
class VectorRegisters:
    bits: int        # width of one vector register
    count: int       # architectural vector registers

    def lanes(self, dtype):
        """Elements of ``dtype`` in one register (at least 1)."""
        return max(1, self.bits // max(8, dt.parse(dtype)[1]))

    def holding(self, elements, dtype):
        """Registers that ``elements`` values of ``dtype`` take (at least 1)."""
        return max(1, -(-elements // self.lanes(dtype)))


@functools.lru_cache(maxsize=None)
def _probe(cpu, features, triple):
    tm = llvm_jit.create_target_machine(cpu, features, 2, triple=triple)
    asm = tm.emit_assembly(llvm.parse_assembly(_PROBE))
    for pattern, bits, count in _KINDS:
        if pattern.search(asm):
            return VectorRegisters(bits, count)
    return VectorRegisters(128, 16)


def vector_registers(target="llvm"):
    """The ``VectorRegisters`` code built for ``target`` (an llvm target string or Target) uses."""
    target = Target(target)
    cpu, features, _, _ = target_config(target)
    return _probe(cpu, features, target_triple(target))
