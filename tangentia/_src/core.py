"""``jax._src.core.trace_state_clean``, which numpyro reads to know whether it runs
under a transformation (it caches closures only outside them)."""
from __future__ import annotations

from .. import core as _core


def trace_state_clean() -> bool:
    """Whether no transformation is running: the current interpreter is evaluation."""
    return _core.current_trace() is _core.EVAL_TRACE
