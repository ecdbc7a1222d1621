"""A compile unit's float constants as its parameters (issue 23: a changed program reuses
what it can).

A compile unit (``native._lower_unit``: a repeated segment's copies, a loop body, a called
function) is cached by its source, and a float literal of its program was written into that
source: a program whose only change is a constant in every step (a spring chain's damping
``0.1 * v`` made ``0.2 * v``, a leaky activation's slope) had new units, compiled again
(0.35-0.4 s of numba each), where their code was the same but for that number.
``lifted(jaxpr)`` gives the unit's program with such literals made inputs, and the literals
the caller passes for them: the unit's source no longer holds the value, so the next
program with another value loads it from numba's cache, and the value itself still reaches
the code at every call (the caller's source holds it, and the caller's cache keys, numba's
and ``objcache.program_key``, include it): never a stale number.

Only literals whose lifting changes neither a number nor the speed of a call are lifted:
float64 scalars, inputs of an equation of ``_PRIMS`` whose other inputs are all float64
(so NumPy's promotion of a weakly typed Python float and of a float64 value agree: a
float32 ``x * 0.1`` keeps its literal), not inside nested programs (their bodies are
emitted with the unit).  ``div``, ``pow`` and the like are left alone: LLVM makes a
division by a constant power of two a multiplication and ``pow(x, 2.0)`` a product, which a
run-time value would undo; for add, subtract, multiply, max, min and comparisons
LLVM does the same work on a constant as on a run-time scalar (without fast-math it
folds only exact identities, so the numbers are bit for bit those of the literal).
Off by default: ``TANGENTIA_NUMBA_UNIT_CONSTS=1`` turns it on (read per program; part of the
cache keys as every ``TANGENTIA_`` setting).  Measured at the end of session 20 (quiet
machine, one core, fresh processes, CPU s of the first compile, off / on): the fori_loop
family of 40 dynamic slices 1.44 / 2.71, 30 slices 1.36 / 2.34, the residual MLP of 10 and
100 layers 1.40 / 1.59 and 1.52 / 1.72, 300 scalar operations 0.92 / 1.16: every program
pays for the parameters at its first compile, which only a program edited in one of these
constants gets back (the spring chain with another damping: 1.96 -> 0.81 s reused)."""
from __future__ import annotations

import os

import numpy as np

from ...core import Eqn, Jaxpr, Literal, ProgramMemo, Var, subjaxprs

__all__ = ["lifted", "enabled"]

_F8 = np.dtype(np.float64)
# (elementwise primitives whose lowering is the same instruction on a constant and on a
# variable; by name: the primitives live above this layer's imports)
_PRIMS = frozenset(("add", "add_any", "sub", "mul", "max", "min", "gt", "ge", "lt", "le", "eq", "ne"))
_LIFTED = ProgramMemo("numba backend: a unit's program with its float constants as inputs")


def enabled():
    return os.environ.get("TANGENTIA_NUMBA_UNIT_CONSTS", "0") == "1"


def _liftable(eqn, a):
    if type(a) is not Literal or tuple(a.aval.shape) != () or a.aval.dtype != _F8 \
            or type(a.val) is bool:
        return False
    others = [b for b in eqn.inputs if type(b) is not Literal]
    return bool(others) and all(b.aval.dtype == _F8 for b in others)


def lifted(jaxpr):
    """``(program, literals)``: ``jaxpr`` with its liftable float literals (see the module
    docstring) made inputs, after its own, one per occurrence in order, and those literals
    (``core.Literal``); None if it has none (memoized per program)."""
    r = _LIFTED.get(jaxpr)
    if r is None:
        r = _LIFTED.set(jaxpr, _lift(jaxpr) or ())
    return r or None


def _lift(jaxpr):
    new_in, lits, eqns = [], [], []
    for e in jaxpr.eqns:
        if getattr(e.prim, "name", None) not in _PRIMS or e.prim.has_effects \
                or any(True for _ in subjaxprs(e.prim, e.params)):
            eqns.append(e)
            continue
        ins, n = list(e.inputs), len(lits)
        for i, a in enumerate(ins):
            if _liftable(e, a):
                ins[i] = Var(a.aval)
                new_in.append(ins[i])
                lits.append(a)
        eqns.append(Eqn(e.prim, ins, e.outputs, e.params, e.source) if len(lits) > n else e)
    if not lits:
        return None
    return Jaxpr(list(jaxpr.constvars), list(jaxpr.invars) + new_in, eqns, list(jaxpr.outvars)), lits
