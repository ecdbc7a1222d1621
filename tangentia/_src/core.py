"""``jax._src.core``: ``trace_state_clean``, which numpyro reads to know whether it runs
under a transformation (it caches closures only outside them), and the IR's types that
libraries import from there (flax's fp8 layers: ``ShapedArray``)."""
from __future__ import annotations

from .. import core as _core
from ..core import (ClosedJaxpr, Jaxpr, Literal, Primitive, ShapedArray, Tracer,  # noqa: F401
                    Var, get_aval)


def physical_aval(aval):
    """The type of an array's storage: the type itself (tangentia has no extended dtypes)."""
    return aval


def trace_state_clean() -> bool:
    """Whether no transformation is running: the current interpreter is evaluation."""
    return _core.current_trace() is _core.EVAL_TRACE
