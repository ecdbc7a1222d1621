"""Reuse of the large arrays generated code allocates, without numba: a bounded set of
freed blocks that the next allocation of the same size takes back.

Why: a jitted program allocates its large values (outputs and temporaries) afresh on
every call, through numba's runtime and ``malloc``.  When they are freed at the end of
the call, glibc finds more than its trim threshold free at the top of its heap and
returns it to the kernel, so the next call touches new pages again: the MLP SGD step
(784-512-512-10, batch 128) took 1,500-2,600 page faults per call, 5-7 ms of system
time of its 16-17 ms (measured on a loaded 2-core AMD EPYC, one thread, CPU time; JAX's
step: 0.5 faults).  XLA keeps its buffers in its own allocator; this is the same idea,
at the one place generated code allocates (``alloc._empty``).

How: arrays of at least ``MIN_BYTES`` are allocated through numba's external-allocator
interface (``NRT_MemInfo_alloc_external``, via ``NRT_get_api``) with the allocator
``tangentia_pool`` defined here.  Its ``malloc`` takes a held block whose size is the
request rounded up to 4 KiB (no block more than a quarter larger), else calls
``malloc``, and where ``malloc`` fails, frees every held block and asks once more (under
memory pressure the blocks kept for speed give way; a request that still fails is a
``MemoryError`` raised by the generated code, ``alloc._alloc``).  Its ``free`` keeps
the block in one of ``SLOTS`` slots, within a cap on the bytes held (``TANGENTIA_NUMBA_POOL_MB``, default 64 MiB; 0 keeps none): to make
room it frees held blocks in turn, oldest first, so a program whose sizes change is
served again after its first call (a block larger than the cap is freed).  A short spin lock (``sched_yield`` while it is
taken) guards the slots, so allocation and release are thread-safe and need no GIL.
A block starts at a 64-byte boundary of what ``malloc`` returned, with its size and that
pointer in its first 16 bytes; numba's ``MemInfo`` (48 bytes) follows, so the array's
data is 64-byte aligned.  A child process made by ``fork`` starts with the lock free.  The contents of a reused block
are whatever was there (``np.empty``'s contract).  ``release()`` frees every held block
(``tangentia.clear_caches`` calls it); ``held_bytes()`` tells what is held.

The functions are a few lines of LLVM IR compiled by llvmlite and registered as the
symbol ``tangentia_pool`` (the allocator's record), so generated code and the machine
code of ``objcache`` (which runs programs without importing numba) link to the same
allocator in any process.
"""
from __future__ import annotations

import ctypes
import os
import threading

from llvmlite import binding as _llvm

from .sigint import jit_ir

__all__ = ["SYMBOL", "MIN_BYTES", "SLOTS", "release", "held_bytes", "cap_bytes"]

SYMBOL = "tangentia_pool"
MIN_BYTES = 1 << 16      # smaller arrays: malloc's own bins serve them without faults
SLOTS = 64
_ENV = "TANGENTIA_NUMBA_POOL_MB"
_DEFAULT_MB = 64


def _cap_from_env():
    raw = os.environ.get(_ENV, "").strip()
    if not raw:
        return _DEFAULT_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        raise ValueError(f"{_ENV} must be a number of MiB (0 keeps no block), got {raw!r}") from None
    if mb < 0:
        raise ValueError(f"{_ENV} must be a number of MiB (0 keeps no block), got {raw!r}")
    return int(mb * (1 << 20))


_IR = """
%alloc = type {{ i8* (i64, i8*)*, i8* (i8*, i64, i8*)*, void (i8*, i8*)*, i8* }}
@tangentia_pool = global %alloc {{ i8* (i64, i8*)* @tangentia_pool_malloc,
    i8* (i8*, i64, i8*)* @tangentia_pool_realloc, void (i8*, i8*)* @tangentia_pool_free, i8* null }}
@blocks = internal global [{slots} x i8*] zeroinitializer
@sizes = internal global [{slots} x i64] zeroinitializer
@tangentia_pool_lock = global i32 0
@hand = internal global i64 0
@tangentia_pool_held = global i64 0
@tangentia_pool_cap = global i64 {cap}

declare i8* @malloc(i64)
declare void @free(i8*)
declare i32 @sched_yield()

define internal void @acquire() {{
entry:
  br label %spin
spin:
  %old = atomicrmw xchg i32* @tangentia_pool_lock, i32 1 acquire
  %busy = icmp ne i32 %old, 0
  br i1 %busy, label %wait, label %done
wait:
  %y = call i32 @sched_yield()
  br label %spin
done:
  ret void
}}

define internal void @unlock() {{
  store atomic i32 0, i32* @tangentia_pool_lock release, align 4
  ret void
}}

; a block of at least `n` bytes plus the 16-byte header, the header's address + 16
define i8* @tangentia_pool_malloc(i64 %n, i8* %opaque) {{
entry:
  %n16 = add i64 %n, 4111
  %need = and i64 %n16, -4096
  %q = lshr i64 %need, 2
  %most = add i64 %need, %q
  call void @acquire()
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %skip ]
  %sp = getelementptr [{slots} x i64], [{slots} x i64]* @sizes, i64 0, i64 %i
  %s = load i64, i64* %sp
  %big = icmp uge i64 %s, %need
  %small = icmp ule i64 %s, %most
  %fits = and i1 %big, %small
  br i1 %fits, label %take, label %skip
skip:
  %next = add i64 %i, 1
  %more = icmp ult i64 %next, {slots}
  br i1 %more, label %loop, label %fresh
take:
  %bp = getelementptr [{slots} x i8*], [{slots} x i8*]* @blocks, i64 0, i64 %i
  %b = load i8*, i8** %bp
  store i64 0, i64* %sp
  store i8* null, i8** %bp
  %h = load i64, i64* @tangentia_pool_held
  %h2 = sub i64 %h, %s
  store i64 %h2, i64* @tangentia_pool_held
  call void @unlock()
  %r = getelementptr i8, i8* %b, i64 16
  ret i8* %r
fresh:
  call void @unlock()
  %more64 = add i64 %need, 64
  %raw1 = call i8* @malloc(i64 %more64)
  %null = icmp eq i8* %raw1, null
  br i1 %null, label %short, label %ok
short:
  ; malloc refused: the blocks held go back to the system, and malloc is asked once more
  %freed = call i64 @tangentia_pool_release()
  %some = icmp ne i64 %freed, 0
  br i1 %some, label %retry, label %fail
retry:
  %raw2 = call i8* @malloc(i64 %more64)
  %null2 = icmp eq i8* %raw2, null
  br i1 %null2, label %fail, label %ok
fail:
  ret i8* null
ok:
  ; the block's base: raw rounded up to 64 bytes; its header: [size, raw]
  %raw = phi i8* [ %raw1, %fresh ], [ %raw2, %retry ]
  %ri = ptrtoint i8* %raw to i64
  %ri63 = add i64 %ri, 63
  %bi = and i64 %ri63, -64
  %off = sub i64 %bi, %ri
  %base = getelementptr i8, i8* %raw, i64 %off
  %szp = bitcast i8* %base to i64*
  store i64 %need, i64* %szp
  %rawp = getelementptr i64, i64* %szp, i64 1
  store i64 %ri, i64* %rawp
  %r2 = getelementptr i8, i8* %base, i64 16
  ret i8* %r2
}}

; the pointer malloc returned for the block at `base`
define internal i8* @raw_of(i8* %base) {{
  %p = bitcast i8* %base to i64*
  %q = getelementptr i64, i64* %p, i64 1
  %ri = load i64, i64* %q
  %raw = inttoptr i64 %ri to i8*
  ret i8* %raw
}}

define internal void @drop(i8* %base) {{
  %raw = call i8* @raw_of(i8* %base)
  call void @free(i8* %raw)
  ret void
}}

define i8* @tangentia_pool_realloc(i8* %p, i64 %n, i8* %opaque) {{
  ret i8* null
}}

; keep the block: first evict blocks in turn (the hand's order: the oldest kept first)
; until it fits within the cap, then take an empty slot, else evict the hand's
define void @tangentia_pool_free(i8* %p, i8* %opaque) {{
entry:
  %raw = getelementptr i8, i8* %p, i64 -16
  %szp = bitcast i8* %raw to i64*
  %s = load i64, i64* %szp
  %c = load i64, i64* @tangentia_pool_cap
  %fits = icmp ule i64 %s, %c
  br i1 %fits, label %locked, label %too_big
too_big:
  call void @drop(i8* %raw)
  ret void
locked:
  call void @acquire()
  %hand0 = load i64, i64* @hand
  br label %room
room:
  %k = phi i64 [ 0, %locked ], [ %k1, %evicted ]
  %h = load i64, i64* @tangentia_pool_held
  %h2 = add i64 %h, %s
  %ok = icmp ule i64 %h2, %c
  %tried = icmp uge i64 %k, {slots}
  %stop = or i1 %ok, %tried
  br i1 %stop, label %slot, label %evict
evict:
  %jk = add i64 %hand0, %k
  %j = urem i64 %jk, {slots}
  %ejp = getelementptr [{slots} x i64], [{slots} x i64]* @sizes, i64 0, i64 %j
  %es = load i64, i64* %ejp
  %ebp = getelementptr [{slots} x i8*], [{slots} x i8*]* @blocks, i64 0, i64 %j
  %eb = load i8*, i8** %ebp
  %full = icmp ne i64 %es, 0
  br i1 %full, label %evict1, label %evicted
evict1:
  call void @drop(i8* %eb)
  store i64 0, i64* %ejp
  store i8* null, i8** %ebp
  %eh = sub i64 %h, %es
  store i64 %eh, i64* @tangentia_pool_held
  br label %evicted
evicted:
  %k1 = add i64 %k, 1
  br label %room
slot:
  %hk = add i64 %hand0, %k
  %hand1 = urem i64 %hk, {slots}
  br label %scan
scan:
  %i = phi i64 [ 0, %slot ], [ %next, %skip ]
  %sp = getelementptr [{slots} x i64], [{slots} x i64]* @sizes, i64 0, i64 %i
  %s0 = load i64, i64* %sp
  %empty = icmp eq i64 %s0, 0
  br i1 %empty, label %keep, label %skip
skip:
  %next = add i64 %i, 1
  %more = icmp ult i64 %next, {slots}
  br i1 %more, label %scan, label %replace
replace:
  ; every slot taken: the hand's block goes, this one takes its slot
  %rsp = getelementptr [{slots} x i64], [{slots} x i64]* @sizes, i64 0, i64 %hand1
  %rs = load i64, i64* %rsp
  %rbp = getelementptr [{slots} x i8*], [{slots} x i8*]* @blocks, i64 0, i64 %hand1
  %rb = load i8*, i8** %rbp
  call void @drop(i8* %rb)
  %rh = load i64, i64* @tangentia_pool_held
  %rh2 = sub i64 %rh, %rs
  store i64 %rh2, i64* @tangentia_pool_held
  br label %keep
keep:
  %at = phi i64 [ %i, %scan ], [ %hand1, %replace ]
  %bp = getelementptr [{slots} x i8*], [{slots} x i8*]* @blocks, i64 0, i64 %at
  %kp = getelementptr [{slots} x i64], [{slots} x i64]* @sizes, i64 0, i64 %at
  store i8* %raw, i8** %bp
  store i64 %s, i64* %kp
  %kh = load i64, i64* @tangentia_pool_held
  %kh2 = add i64 %kh, %s
  store i64 %kh2, i64* @tangentia_pool_held
  %at1 = add i64 %at, 1
  %nh = urem i64 %at1, {slots}
  %moved = icmp eq i64 %at, %hand1
  %hand2 = select i1 %moved, i64 %nh, i64 %hand1
  store i64 %hand2, i64* @hand
  call void @unlock()
  ret void
}}

; free every held block; returns the bytes released
define i64 @tangentia_pool_release() {{
entry:
  call void @acquire()
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %cont ]
  %sp = getelementptr [{slots} x i64], [{slots} x i64]* @sizes, i64 0, i64 %i
  %s = load i64, i64* %sp
  %some = icmp ne i64 %s, 0
  br i1 %some, label %drop, label %cont
drop:
  %bp = getelementptr [{slots} x i8*], [{slots} x i8*]* @blocks, i64 0, i64 %i
  %b = load i8*, i8** %bp
  call void @drop(i8* %b)
  store i64 0, i64* %sp
  store i8* null, i8** %bp
  br label %cont
cont:
  %next = add i64 %i, 1
  %more = icmp ult i64 %next, {slots}
  br i1 %more, label %loop, label %end
end:
  %h = load i64, i64* @tangentia_pool_held
  store i64 0, i64* @tangentia_pool_held
  call void @unlock()
  ret i64 %h
}}
"""


class _Pool:
    engine = None
    held = lock = None  # ctypes views of the globals
    cap = None
    release = None


_SETUP_LOCK = threading.Lock()


def _setup():
    with _SETUP_LOCK:
        if _Pool.engine is not None:
            return
        engine = jit_ir(_IR.format(slots=SLOTS, cap=_cap_from_env()))
        _llvm.add_symbol(SYMBOL, engine.get_global_value_address(SYMBOL))
        _Pool.held = ctypes.c_int64.from_address(engine.get_global_value_address("tangentia_pool_held"))
        _Pool.cap = ctypes.c_int64.from_address(engine.get_global_value_address("tangentia_pool_cap"))
        _Pool.release = ctypes.CFUNCTYPE(ctypes.c_int64)(
            engine.get_function_address("tangentia_pool_release"))
        _Pool.lock = ctypes.c_int32.from_address(engine.get_global_value_address("tangentia_pool_lock"))
        _Pool.engine = engine     # (kept alive: generated code calls into it)
        if hasattr(os, "register_at_fork"):
            # (a thread of the parent may have held the lock: the child has no such thread)
            os.register_at_fork(after_in_child=_unlock_in_child)


def _unlock_in_child():
    _Pool.lock.value = 0


_setup()


def release():
    """Free every block the pool holds; returns the number of bytes released."""
    return int(_Pool.release())


def held_bytes():
    """The bytes of the freed blocks the pool holds for reuse."""
    return int(_Pool.held.value)


def cap_bytes():
    """The most the pool holds (``TANGENTIA_NUMBA_POOL_MB``, read when it was set up)."""
    return int(_Pool.cap.value)
