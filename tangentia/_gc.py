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


class _QuietGC:
    """The period's state (one per process); ``quiet_gc()`` returns it, a context manager."""

    __slots__ = ("depth", "frozen", "saved")

    def __init__(self) -> None:
        self.depth = 0
        self.frozen = False
        self.saved: Any = None       # (the thresholds before, the ones set) or None

    def __enter__(self) -> None:
        with _LOCK:
            if self.depth == 0:
                self.frozen = frozen = gc.isenabled() and gc.get_freeze_count() == 0
                if frozen:
                    _gc_freeze()
                old = _gc_get_threshold()
                if 0 < old[0] < GC_THRESHOLD:
                    new = (GC_THRESHOLD,) + old[1:]
                    self.saved = (old, new)
                    _gc_set_threshold(*new)
                else:
                    self.saved = None
            self.depth += 1

    def __exit__(self, *exc: object) -> None:
        with _LOCK:
            self.depth -= 1
            if self.depth == 0:
                saved = self.saved
                if saved is not None and _gc_get_threshold() == saved[1]:
                    _gc_set_threshold(*saved[0])
                if self.frozen:
                    _gc_unfreeze()
                self.frozen = False
                self.saved = None


_STATE = _QuietGC()


def quiet_gc() -> _QuietGC:
    """The context manager of a quiet period (``with quiet_gc(): ...``)."""
    return _STATE


def refreeze() -> None:
    """Freeze the objects created since the period began (modules just imported), if the
    period froze the process's objects."""
    with _LOCK:
        if _STATE.frozen:
            _gc_freeze()
