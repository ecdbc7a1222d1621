"""NaN debugging: inside ``with tg.debug_nans(): ...`` the first primitive
that produces a NaN from NaN-free inputs raises, naming it (``tangentia.debug``
is the other debugging module: JAX's ``jax.debug``, print and callbacks from
inside transformed functions).

Enabling it swaps the outermost interpreter for one that checks every result
(a context variable, so it is per thread and costs nothing when off).  It is
an ``EvalTrace``, so it evaluates custom-rule calls as evaluation does (by
inheritance: nothing is registered for it).  Jitted
programs are run operation by operation while it is on, so the failing
operation inside them is found too.
"""
from __future__ import annotations

import numpy as np

from . import core


class DebugNansEvalTrace(core.EvalTrace):
    """Evaluation that raises FloatingPointError on the first NaN result."""

    __slots__ = ()

    def describe(self):
        return "eager evaluation (debug_nans)"

    def process_primitive(self, prim, args, params):
        if prim.call_param is not None:   # a call (jit, checkpoint): find the operation inside
            jaxpr = params[prim.call_param]
            if type(jaxpr) is core.Jaxpr and not jaxpr.constvars:
                return core.eval_jaxpr(jaxpr, (), *args)
        out = core.EvalTrace.process_primitive(self, prim, args, params)
        for o in (out if prim.multiple_results else (out,)):
            if o.dtype.kind in "fc" and np.isnan(o).any():
                if not any(np.isnan(a).any() for a in args
                           if isinstance(a, (np.ndarray, float, complex, np.generic))
                           and np.asarray(a).dtype.kind in "fc"):
                    raise FloatingPointError(
                        f"invalid value (nan) encountered in '{prim.name}' (debug_nans is on): "
                        f"its inputs have no NaN, its output {core.get_aval(o).str_short()} "
                        f"does. Inputs: {_summary(args)}")
        return out



def _summary(args):
    parts = []
    for a in args:
        a = np.asarray(a)
        if a.size <= 6:
            parts.append(np.array2string(a, precision=4))
        else:
            parts.append(f"{a.dtype}{list(a.shape)} min={np.nanmin(a):.4g} max={np.nanmax(a):.4g}")
    return ", ".join(parts)


_DEBUG_TRACE = DebugNansEvalTrace(None)


class debug_nans:
    """Context manager: inside it, the first operation producing a NaN from
    NaN-free inputs raises ``FloatingPointError`` naming the operation.

    ``with tg.debug_nans(): tg.grad(f)(x)``; ``debug_nans(False)`` turns it off
    in a nested scope.

    Args:
      enable: turn the check on (``True``) or off (``False``) inside the block.
    """

    __slots__ = ("enable", "scope")

    def __init__(self, enable=True):
        self.enable = enable

    def __enter__(self):
        current = core.current_trace()
        if current is not core.EVAL_TRACE and current is not _DEBUG_TRACE:
            raise RuntimeError("debug_nans must be entered outside of any transformation")
        self.scope = core.set_trace(_DEBUG_TRACE if self.enable else core.EVAL_TRACE)
        self.scope.__enter__()
        return self

    def __exit__(self, *exc):
        self.scope.__exit__(*exc)
