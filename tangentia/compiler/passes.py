"""Program passes shared by the ``jit`` backends (they sit at the backend layer).

``simplify(jaxpr, dce=...)`` returns a program's equations after
common-subexpression elimination (an equation with the same primitive,
inputs and parameters as an earlier one is dropped and its output replaced by
the earlier output) and, optionally, dead-code elimination (equations whose
outputs nothing uses, unless they have effects).  The program itself is left
untouched: equations whose inputs change are new ``Eqn`` objects.
"""
from __future__ import annotations

from ..core import Eqn, Var
from ..interpreters.partial_eval import _dce   # (tracing's DCE: effects, nested ones too)

__all__ = ["simplify"]


def _cse_key(eqn, ins):
    """The key of an equation's computation, or None if it cannot be shared."""
    if eqn.prim.multiple_results or eqn.prim.has_effects:
        return None
    # Literals by type and repr: 0.0 and -0.0 (equal, same hash) must stay apart.
    key = (eqn.prim, tuple(a if type(a) is Var else ("literal", type(a.val), repr(a.val),
                                                     a.aval.dtype) for a in ins),
           tuple(sorted(eqn.params.items())))
    try:
        hash(key)
    except TypeError:  # unhashable parameters (arrays, programs, slices)
        return None
    return key


def simplify(jaxpr, dce=False):
    """``(eqns, outvars)`` of ``jaxpr`` after CSE (and dead-code elimination if ``dce``)."""
    seen, subst, eqns = {}, {}, []
    for eqn in jaxpr.eqns:
        ins = [subst.get(a, a) if type(a) is Var else a for a in eqn.inputs]
        key = _cse_key(eqn, ins)
        if key is not None:
            prev = seen.get(key)
            if prev is not None:
                subst[eqn.outputs[0]] = prev
                continue
            seen[key] = eqn.outputs[0]
        eqns.append(Eqn(eqn.prim, ins, eqn.outputs, eqn.params, eqn.source)
                    if any(a is not b for a, b in zip(ins, eqn.inputs)) else eqn)
    outvars = [subst.get(a, a) if type(a) is Var else a for a in jaxpr.outvars]
    if dce:
        eqns, _ = _dce(eqns, outvars)
    return eqns, outvars
