"""The numba backend's compiled code, kept per program (a ``core.ProgramMemo``) and per
``plan.Settings`` (the key): written and read by the compiler (``native``, which imports
numba; the package's ``NumbaBackend.compiled`` asks ``native.compiled`` once native is
imported).

An entry lives as long as its program, but the machine code behind it does not go with
it: numba keeps what it compiled until the process ends.  Dropping every reference to 20
compiled programs (this memo, jit's caches, numba's dispatchers and their registrations)
and removing their LLVM modules from numba's engine gave back 7 of the 99 MB of RSS they
had added (measured 2026-12-06: what stays is C heap in use, LLVM's; the Python objects of a
program are about 0.5 MB of its 5).
tests/_xdist_balance.py runs the test modules that compile most in fresh workers for that
reason."""
from __future__ import annotations

import threading

from ...core import ProgramMemo

__all__ = ["COMPILED", "Counts"]

COMPILED = ProgramMemo("numba backend: compiled code")


class Counts(dict):
    """Counters of what the compiler did in this process (``reroll.STATS``: runs rolled;
    ``codegen.SEG_STATS``: copies emitted as calls), read by tests as differences around
    a compile.  Like a cache's statistics they are process-wide, not part of any result;
    ``add`` counts under a lock, so compiles on several threads (tiered ``jit``'s
    background compile, a user's threads) never lose a count."""

    def __init__(self, *names):
        super().__init__((n, 0) for n in names)
        self._lock = threading.Lock()

    def add(self, name, n=1):
        with self._lock:
            self[name] += n
