"""The numba backend's passes: what to do with each equation of a program, decided
before the generator (``codegen._Gen``) emits any code for it.

``program_plan(jaxpr, limit, rows)`` runs the passes over a program once per
scalarization limit (memoized on the program: the same loop body lowered again,
inlined or as a unit, is not analysed again) and returns a ``Plan``:

* ``eqns``, ``outvars``: the program after common-subexpression and dead-code
  elimination (``compiler.passes.simplify``);
* ``consumers``: per variable, the equations reading it (None: a program output);
* ``rows``: per equation better computed row by row (a vmap batch of ``B`` rows of
  at most ``limit`` elements, an output too large to scalarize: the row rules of
  ``rules.ROWS``), ``(B, roles, row equation)``;

and the emitter reads these annotations instead of deciding as it goes.  A
decision that depends on how the generator happens to represent a value when it
reaches an equation (a lazy expression or an array, a scalarized value or not)
stays in the emitter.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...core import Eqn, Jaxpr, ProgramMemo, ShapedArray, Var
from ..passes import simplify

__all__ = ["Plan", "program_plan", "row_plan"]

RowPlan = Tuple[int, List[str], "_RowEqn"]


class _RowVar:
    """A variable of a row equation (``row_plan``): only its aval is read."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval


class _RowEqn:
    """An equation applied to one row of a batch (``row_plan``)."""

    __slots__ = ("prim", "params", "inputs", "outputs")

    def __init__(self, prim, params, inputs, outputs):
        self.prim, self.params, self.inputs, self.outputs = prim, params, inputs, outputs


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def row_plan(eqn: Eqn, rows: Dict[Any, Any], limit: int) -> Optional[RowPlan]:
    """``(B, roles, row equation)`` if ``eqn`` is better computed row by row: its
    output has a leading (batch) axis of length B and rows of at most ``limit``
    elements, but is not small itself; else None (``rows``: ``rules.ROWS``)."""
    rule = rows.get(eqn.prim)
    if rule is None or len(eqn.outputs) != 1 or eqn.prim.has_effects:
        return None
    out = eqn.outputs[0].aval
    if not out.shape or out.shape[0] < 2 or _size(out.shape) <= limit \
            or _size(out.shape[1:]) > limit:
        return None
    if any(a.aval.dtype.kind not in "biuf" for a in list(eqn.inputs) + [eqn.outputs[0]]):
        return None
    b = out.shape[0]
    roles, params = rule(eqn, b)
    if roles is None:
        return None
    ins: List[Any] = []
    for a, r in zip(eqn.inputs, roles):
        if r == "w" and _size(a.aval.shape) > limit:
            return None
        ins.append(a if r == "w" else _RowVar(ShapedArray(a.aval.shape[1:], a.aval.dtype)))
    return b, roles, _RowEqn(eqn.prim, params, ins, [_RowVar(ShapedArray(out.shape[1:], out.dtype))])


class Plan:
    """The passes' annotations of one program at one scalarization limit (see the
    module docstring)."""

    __slots__ = ("eqns", "outvars", "consumers", "rows")

    def __init__(self, eqns, outvars, consumers, rows):
        self.eqns: List[Eqn] = eqns
        self.outvars: List[Any] = outvars
        self.consumers: Dict[Var, List[Optional[Eqn]]] = consumers
        self.rows: Dict[Eqn, RowPlan] = rows


_PLANS = ProgramMemo("numba backend: the passes' plan of a program, per scalarization limit")


def program_plan(jaxpr: Jaxpr, limit: int, rows: Dict[Any, Any]) -> Plan:
    """The ``Plan`` of ``jaxpr`` whose values of at most ``limit`` elements are
    scalarized, with the row rules ``rows`` (memoized)."""
    key = (limit, id(rows))
    p = _PLANS.get(jaxpr, key)
    if p is None:
        eqns, outvars = simplify(jaxpr, dce=True)
        consumers: Dict[Var, List[Optional[Eqn]]] = {}
        for eqn in eqns:
            for a in eqn.inputs:
                if type(a) is Var:
                    consumers.setdefault(a, []).append(eqn)
        for a in outvars:
            if type(a) is Var:
                consumers.setdefault(a, []).append(None)
        batched = {}
        if rows:
            for eqn in eqns:
                r = row_plan(eqn, rows, limit)
                if r is not None:
                    batched[eqn] = r
        p = _PLANS.set(jaxpr, Plan(eqns, outvars, consumers, batched), key)
    return p
