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

from ...core import ProgramMemo

__all__ = ["COMPILED"]

COMPILED = ProgramMemo("numba backend: compiled code")
