"""The numba backend's compiled code, kept per program (a ``core.ProgramMemo``):
written by the compiler (``native``, which imports numba) and read by the
backend (the package's ``__init__``, which must not import numba)."""
from __future__ import annotations

from ...core import ProgramMemo

__all__ = ["COMPILED"]

COMPILED = ProgramMemo("numba backend: compiled code")
