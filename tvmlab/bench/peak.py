"""The CPU's float32 FMA peak: measured with a register-only FMA loop on every core.

``peak_gflops()`` returns (GFLOP/s, how it was obtained).  The measurement runs
an LLVM kernel of independent chains of FMAs on full native vectors (no memory
traffic; 8 lanes with AVX2, 16 with AVX-512; as many chains as the registers
hold, enough to cover the FMA latency) on as many threads as the OpenMP
runtime uses, timed together.  Setting
``TVMLAB_PEAK_GFLOPS`` replaces the measurement (e.g. with the nominal peak:
cores x FMA units x lanes x 2 x clock).
"""
from __future__ import annotations

import ctypes
import os
import threading
import time

import llvmlite.binding as llvm

from ..codegen.llvm_vector import vector_registers
from ..runtime import llvm_jit

MAX_CHAINS = 12          # independent FMA chains: latency 4 x 2 FMA pipes needs 8
FLOPS_PER_THREAD = 8e9   # work per thread and round: about 0.1 s on a current core


def _shape():
    """(lanes, chains) for the host: one native float32 vector per chain, two registers kept for constants."""
    regs = vector_registers("llvm")
    return regs.lanes("float32"), min(MAX_CHAINS, regs.count - 3)


def _kernel_ir(lanes, chains):
    vt = f"<{lanes} x float>"
    mul = "<" + ", ".join(["float 0x3FEFF7CEE0000000"] * lanes) + ">"
    add = "<" + ", ".join(["float 0x3F50624DE0000000"] * lanes) + ">"
    one = "<" + ", ".join(["float 1.0"] * lanes) + ">"
    out = ["define void @fma_peak(i64 %n, ptr %out) {", "entry:", "  br label %loop", "loop:",
           "  %i = phi i64 [0, %entry], [%i1, %loop]"]
    out += [f"  %a{k} = phi {vt} [{one}, %entry], [%b{k}, %loop]" for k in range(chains)]
    out += [f"  %b{k} = call {vt} @llvm.fma.v{lanes}f32({vt} %a{k}, {vt} {mul}, {vt} {add})" for k in range(chains)]
    out += ["  %i1 = add i64 %i, 1", "  %c = icmp ult i64 %i1, %n", "  br i1 %c, label %loop, label %done", "done:"]
    acc = "%b0"
    for k in range(1, chains):
        out.append(f"  %s{k} = fadd {vt} {acc}, %b{k}")
        acc = f"%s{k}"
    out += [f"  store {vt} {acc}, ptr %out, align 4", "  ret void", "}",
            f"declare {vt} @llvm.fma.v{lanes}f32({vt}, {vt}, {vt})"]
    return "\n".join(out)


def threads():
    """Threads a parallel loop uses (TVM_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this
    process may run on)."""
    return llvm_jit.num_threads()


def measure(nthreads=None, rounds=5, settle=0.1):
    """Measured FMA GFLOP/s of ``nthreads`` threads running together (best of ``rounds``)."""
    nthreads = nthreads or threads()
    lanes, chains = _shape()
    steps = int(FLOPS_PER_THREAD / (lanes * chains * 2))
    cpu, features = llvm_jit.host_cpu()
    engine = llvm_jit.JitEngine(llvm.parse_assembly(_kernel_ir(lanes, chains)), cpu, features)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(engine.address("fma_peak"))
    sinks = [ctypes.create_string_buffer(lanes * 4) for _ in range(nthreads)]
    best = 0.0
    for _ in range(rounds):
        time.sleep(settle)           # let other thread pools stop spinning
        barrier = threading.Barrier(nthreads + 1)

        def work(k):
            barrier.wait()
            fn(steps, ctypes.addressof(sinks[k]))   # ctypes releases the GIL during the call

        ts = [threading.Thread(target=work, args=(k,)) for k in range(nthreads)]
        for t in ts:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in ts:
            t.join()
        elapsed = time.perf_counter() - t0
        best = max(best, nthreads * steps * chains * lanes * 2 / elapsed / 1e9)
    return best


_measured = {}       # threads -> GFLOP/s: measured once per process
_lock = threading.Lock()


def peak_gflops(fresh=False, rounds=5):
    """(float32 FMA peak in GFLOP/s, a note saying where it comes from).

    Measured on the first call (about a second) and remembered for the process;
    ``fresh=True`` measures again and keeps the better of the two (the less disturbed).
    """
    env = os.environ.get("TVMLAB_PEAK_GFLOPS")
    if env:
        try:
            return float(env), "TVMLAB_PEAK_GFLOPS"
        except ValueError:
            pass
    n = threads()
    lanes, chains = _shape()
    with _lock:
        if n not in _measured or fresh:
            _measured[n] = max(_measured.get(n, 0.0), measure(n, rounds=rounds))
    return _measured[n], f"measured: {n} threads x {chains} chains of {lanes}-lane FMAs"
