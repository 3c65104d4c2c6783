"""Heap buffers of generated CPU code, kept between calls (TVM's workspace pool, per module).

A buffer too large for the stack used to be ``aligned_alloc``-ed and ``free``-d on every call.  Whether
glibc then hands the memory back to the kernel depends on its state in the process (its dynamic mmap and
trim thresholds): where it does, every call faults each page in again -- a Winograd convolution alone in a
fresh process took 1.6 ms instead of 0.3 (830 page faults per call).  Generated code calls
``__tvmlab_ws_alloc`` / ``__tvmlab_ws_free`` instead, defined in each module (so saved objects and shared
libraries need nothing more than libc): a freed block waits in one of ``SLOTS`` slots, and the next
request takes the smallest waiting block that is large enough.  The slots are lock-free (atomic exchange and
compare-exchange), so tasks of a parallel loop may allocate at once; with every slot full a freed block goes
back to libc.  ``__tvmlab_ws_release`` frees the waiting blocks (the JIT calls it when it drops the module).

Each block starts with a 64-byte header holding its capacity; callers get the address after it (64-byte
aligned, as ``aligned_alloc(64, ...)`` gave).  A slot's capacity is also kept beside it as a hint for the
search: the header of a block taken from a slot is checked before the block is used.
"""
from __future__ import annotations

SLOTS = 8
HEADER = 64
ALLOC, FREE, RELEASE = "__tvmlab_ws_alloc", "__tvmlab_ws_free", "__tvmlab_ws_release"


def ir():
    """The pool's LLVM IR: two internal globals and three functions (release has external linkage)."""
    n, h = SLOTS, HEADER
    slots = f"[{n} x ptr]"
    caps = f"[{n} x i64]"
    return f"""
@__tvmlab_ws_slots = internal global {slots} zeroinitializer, align 64
@__tvmlab_ws_caps = internal global {caps} zeroinitializer, align 64

define internal noalias align 64 ptr @{ALLOC}(i64 %bytes) nounwind {{
entry:
  br label %scan
scan:
  %i = phi i64 [0, %entry], [%i1, %scan.next]
  %best = phi i64 [-1, %entry], [%best1, %scan.next]
  %bcap = phi i64 [-1, %entry], [%bcap1, %scan.next]
  %sp = getelementptr {slots}, ptr @__tvmlab_ws_slots, i64 0, i64 %i
  %cp = getelementptr {caps}, ptr @__tvmlab_ws_caps, i64 0, i64 %i
  %p = load atomic ptr, ptr %sp monotonic, align 8
  %c = load atomic i64, ptr %cp monotonic, align 8
  %full = icmp ne ptr %p, null
  %big = icmp uge i64 %c, %bytes
  %less = icmp ult i64 %c, %bcap
  %fit0 = and i1 %full, %big
  %fit = and i1 %fit0, %less
  %best1 = select i1 %fit, i64 %i, i64 %best
  %bcap1 = select i1 %fit, i64 %c, i64 %bcap
  br label %scan.next
scan.next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, {n}
  br i1 %more, label %scan, label %scan.end
scan.end:
  %found = icmp sge i64 %best1, 0
  br i1 %found, label %take, label %new
take:
  %tsp = getelementptr {slots}, ptr @__tvmlab_ws_slots, i64 0, i64 %best1
  %got = atomicrmw xchg ptr %tsp, ptr null acquire, align 8
  %some = icmp ne ptr %got, null
  br i1 %some, label %check, label %new
check:
  %gcap = load i64, ptr %got, align 64
  %ok = icmp uge i64 %gcap, %bytes
  br i1 %ok, label %reuse, label %small
reuse:
  %user = getelementptr i8, ptr %got, i64 {h}
  ret ptr %user
small:
  call void @free(ptr %got)
  br label %new
new:
  %total = add i64 %bytes, {h}
  %blk = call ptr @aligned_alloc(i64 64, i64 %total)
  %null = icmp eq ptr %blk, null
  br i1 %null, label %oom, label %init
oom:
  ret ptr null
init:
  store i64 %bytes, ptr %blk, align 64
  %nuser = getelementptr i8, ptr %blk, i64 {h}
  ret ptr %nuser
}}

define internal void @{FREE}(ptr %user) nounwind {{
entry:
  %blk = getelementptr i8, ptr %user, i64 -{h}
  %cap = load i64, ptr %blk, align 64
  br label %try
try:
  %i = phi i64 [0, %entry], [%i1, %next]
  %sp = getelementptr {slots}, ptr @__tvmlab_ws_slots, i64 0, i64 %i
  %r = cmpxchg ptr %sp, ptr null, ptr %blk acq_rel monotonic, align 8
  %put = extractvalue {{ ptr, i1 }} %r, 1
  br i1 %put, label %kept, label %next
kept:
  %cp = getelementptr {caps}, ptr @__tvmlab_ws_caps, i64 0, i64 %i
  store atomic i64 %cap, ptr %cp monotonic, align 8
  ret void
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, {n}
  br i1 %more, label %try, label %drop
drop:
  call void @free(ptr %blk)
  ret void
}}

define void @{RELEASE}() nounwind {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop.next]
  %sp = getelementptr {slots}, ptr @__tvmlab_ws_slots, i64 0, i64 %i
  %p = atomicrmw xchg ptr %sp, ptr null acquire, align 8
  %some = icmp ne ptr %p, null
  br i1 %some, label %drop, label %loop.next
drop:
  call void @free(ptr %p)
  br label %loop.next
loop.next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, {n}
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""
