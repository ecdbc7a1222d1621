"""Python's cyclic garbage collector, kept off the objects that were there before, while a
large piece of work allocates: a program's compile (the numba backend) and a staging trace
(``interpreters.partial_eval.trace_to_jaxpr``).

Such work allocates millions of objects, so the collector runs hundreds of times, and each
full collection walks every object of the process: NumPy's, SciPy's, numba's modules and
registries (~170,000 objects once numba is imported), tangentia's.  That was 0.08 s of CPU of
a tiny program's first compile in a fresh process (0.8 s), 0.16 s of a 10-layer scan's
(1.3 s), and ~0.45 s of the ~1.9 s of an eager ``hessian`` of an odeint loss, nearly all of it
in full collections during its staging traces.

While such a period runs, the objects that existed before it (and those a compile's imports
create: ``refreeze``) are frozen (``gc.freeze``: not walked; one of them that becomes garbage
meanwhile is collected after the period), and a young collection waits for ``GC_THRESHOLD``
allocations instead of Python's 700; at the end they are unfrozen and the thresholds
restored (unless the process changed them meanwhile).  The same garbage is collected, some
of it later.  Nested and concurrent periods (other threads) share one period: the first to
begin starts it, the last to end ends it; a lock keeps the count right across threads.  A
process that froze objects itself (``gc.get_freeze_count()``) or turned the collector off
keeps its own state (only the young threshold is raised, as set, while the period runs).

``with quiet_gc():`` costs ~1-2 us (a plain object, no generator), so it wraps work of
hundreds of microseconds or more, never each eager primitive.
"""
from __future__ import annotations

import gc
import threading
from typing import Any

GC_THRESHOLD = 5000

_LOCK = threading.Lock()
_gc_freeze = gc.freeze
_gc_unfreeze = gc.unfreeze
_gc_get_threshold = gc.get_threshold
_gc_set_threshold = gc.set_threshold


class _State:
    """The process's quiet period (one: ``_STATE``), shared by nested and concurrent periods."""

    __slots__ = ("depth", "frozen", "saved", "user_froze")

    def __init__(self) -> None:
        self.depth = 0
        self.frozen = False
        self.saved: Any = None       # (the thresholds before, the ones set) or None
        # Whether the process froze objects itself, as last seen: ``gc.get_freeze_count``
        # walks every frozen object (~6 ms for 70,000 on a loaded machine; nothing when none
        # is frozen), so a staging trace (``check`` False) asks again only after a compile's
        # period (which always asks) found none frozen.  A process that unfreezes its
        # objects later loses only the freeze of its traces, never its own state.
        self.user_froze = False


class _Period:
    """A period's context manager: a compile's (``check``: asks whether the process froze
    objects itself, every time) or a staging trace's (asks only as ``_State.user_froze``
    says)."""

    __slots__ = ("check",)

    def __init__(self, check: bool) -> None:
        self.check = check

    def __enter__(self) -> None:
        st = _STATE
        with _LOCK:
            if st.depth == 0:
                frozen = False
                if gc.isenabled() and (self.check or not st.user_froze):
                    st.user_froze = gc.get_freeze_count() > 0
                    frozen = not st.user_froze
                st.frozen = frozen
                if frozen:
                    _gc_freeze()
                old = _gc_get_threshold()
                if 0 < old[0] < GC_THRESHOLD:
                    new = (GC_THRESHOLD,) + old[1:]
                    st.saved = (old, new)
                    _gc_set_threshold(*new)
                else:
                    st.saved = None
            st.depth += 1

    def __exit__(self, *exc: object) -> None:
        st = _STATE
        with _LOCK:
            st.depth -= 1
            if st.depth == 0:
                saved = st.saved
                if saved is not None and _gc_get_threshold() == saved[1]:
                    _gc_set_threshold(*saved[0])
                if st.frozen:
                    _gc_unfreeze()
                st.frozen = False
                st.saved = None


_STATE = _State()
_COMPILE = _Period(check=True)          # a compile's period
_TRACE = _Period(check=False)           # a staging trace's period (the same state)


def quiet_gc() -> _Period:
    """The context manager of a compile's quiet period (``with quiet_gc(): ...``)."""
    return _COMPILE


def quiet_trace() -> _Period:
    """The context manager of a staging trace's quiet period."""
    return _TRACE


def refreeze() -> None:
    """Freeze the objects created since the period began (modules just imported), if the
    period froze the process's objects."""
    with _LOCK:
        if _STATE.frozen:
            _gc_freeze()
