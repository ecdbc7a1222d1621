"""``checkpoint`` (rematerialization): a call primitive whose reverse mode
saves only its inputs and recomputes everything else on the way back.

* partial evaluation computes the known outputs now, and stages the whole
  program for the unknown (tangent) outputs, so the only residuals are the
  call's inputs;
* transposition re-evaluates the program's non-linear equations (the primal
  recomputation) before transposing its linear ones.

These are the shared rules of call-like primitives (``interpreters.call_rules``)
in their ``remat`` variant.
"""
from __future__ import annotations

from ..compiler.backend import get_backend
from ..core import Primitive
from ..interpreters.call_rules import def_call_rules

remat_p = Primitive("checkpoint", multiple_results=True)


def _remat_impl(*args, jaxpr):
    return get_backend().compile(jaxpr)(*args)


remat_p.impl = _remat_impl
remat_p.abstract_eval = lambda *avals, jaxpr: [v.aval for v in jaxpr.outvars]


def_call_rules(remat_p, remat=True)
