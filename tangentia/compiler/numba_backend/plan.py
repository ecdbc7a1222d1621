"""The numba backend's passes: what to do with each equation of a program, decided
before the generator (``codegen._Gen``) emits any code for it.

``program_plan(jaxpr, limit, rows, fusible)`` runs the passes over a program once per
scalarization limit (memoized on the program: the same loop body lowered again,
inlined or as a unit, is not analysed again) and returns a ``Plan``:

* ``eqns``, ``outvars``: the program after common-subexpression and dead-code
  elimination (``compiler.passes.simplify``);
* ``consumers``: per variable, the equations reading it (None: a program output);
* ``fusible``: the variables whose one consumer reads them element by element
  (``rules.FUSIBLE``): their value may stay a lazy expression, fused into that
  consumer's (up to ``codegen.MAX_FUSED`` operations in a chain);
* ``rows``: per equation better computed row by row (a vmap batch of ``B`` rows of
  at most ``limit`` elements, an output too large to scalarize: the row rules of
  ``rules.ROWS``), ``(B, roles, row equation)``; and ``wide_from[k]``: whether an
  equation from ``eqns[k]`` on computed row by row has rows of several axes (a run
  of only one-element rows gains nothing over fused loops, ``codegen._Gen.row_run``:
  no run is looked for from ``k`` if not; looking was quadratic in a long chain of
  vector operations, 3.5 s of the 3.8 s generation of 750 of them);
* ``dots``: per ``dot_general``, how it is computed (``DotPlan``): unrolled over
  scalars, by BLAS or the backend's own GEMM kernel (``gemm``), as a fused
  expression, or by loops;

and the emitter reads these annotations instead of deciding as it goes.  A
decision that depends on how the generator happens to represent a value when it
reaches an equation (a lazy expression or an array, a scalarized value or not)
stays in the emitter.
"""
from __future__ import annotations

from typing import AbstractSet, Any, Dict, List, Optional, Set, Tuple

from ...core import Eqn, Jaxpr, ProgramMemo, ShapedArray, Var
from ...primitives import contraction as C
from ..passes import simplify
from . import gemm

__all__ = ["Plan", "DotPlan", "program_plan", "row_plan", "dot_plan"]

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


# -- contractions ------------------------------------------------------------

BLAS_MIN_FLOPS = 4096  # dot_general with m*n*k*batch at least this (floats) calls BLAS
FUSED_DOT_K = 4   # contractions over at most this many elements are fused expressions
# A batched contraction calls BLAS once per batch element, when each product has at least
# this many multiply-adds (m*n*k); smaller ones are loops, whose per-element cost has no call
# overhead (1x32 by 32x1 products: 4x faster, 16x16 by 16x16: 1.3x, 24^3: equal) but which
# lose at larger sizes (64^3: 17x slower, power-of-two strides).
BATCHED_BLAS_MIN = 1 << 14


def _dot_dims(x_shape, y_shape, dimension_numbers):
    """(lhs free dims, rhs free dims, m, n, k, batch size) of a ``dot_general``."""
    (lc, rc), (lb, rb) = dimension_numbers
    lf = [i for i in range(len(x_shape)) if i not in lc and i not in lb]
    rf = [i for i in range(len(y_shape)) if i not in rc and i not in rb]
    return (lf, rf, _size([x_shape[i] for i in lf]), _size([y_shape[i] for i in rf]),
            _size([x_shape[i] for i in lc]), _size([x_shape[i] for i in lb]))


class DotPlan:
    """How a ``dot_general`` is computed: ``kind`` is ``"unroll"`` (a small output:
    scalar products written out), ``"blas"`` (large floating products: ``np.dot``,
    or ``gemm._gemm`` if ``own_gemm``), ``"fused"`` (a short contraction: an element
    expression fused into its consumer) or ``"loops"``; ``lazy_kind`` is the kind
    when an operand reaches it as a lazy expression (which the unrolled and fused
    forms do not take).  ``dims``: ``_dot_dims``'s."""

    __slots__ = ("kind", "lazy_kind", "own_gemm", "dims")

    def __init__(self, kind, lazy_kind, own_gemm, dims):
        self.kind: str = kind
        self.lazy_kind: str = lazy_kind
        self.own_gemm: bool = own_gemm
        self.dims: Tuple[Any, ...] = dims


def dot_plan(eqn: Eqn, limit: int) -> DotPlan:
    """The ``DotPlan`` of a ``dot_general`` equation whose values of at most ``limit``
    elements are scalarized."""
    x, y = (a.aval for a in eqn.inputs)
    out = eqn.outputs[0].aval
    dims = _dot_dims(x.shape, y.shape, eqn.params["dimension_numbers"])
    _, _, m, n, k, batch = dims
    blas = out.dtype.kind in "fc" and m * n * k * max(1, batch) >= BLAS_MIN_FLOPS and k > 1 and \
        (batch <= 1 or m * n * k >= BATCHED_BLAS_MIN)
    lazy_kind = "blas" if blas else "loops"
    if _size(out.shape) <= limit and _size(out.shape) * k <= 4 * limit:
        kind = "unroll"
    elif not blas and k <= FUSED_DOT_K:
        kind = "fused"
    else:
        kind = lazy_kind
    return DotPlan(kind, lazy_kind, blas and gemm.use_gemm(out.dtype, m, n, k), dims)


# -- the plan of a program ------------------------------------------------------

class Plan:
    """The passes' annotations of one program at one scalarization limit (see the
    module docstring)."""

    __slots__ = ("eqns", "outvars", "consumers", "fusible", "rows", "wide_from", "dots")

    def __init__(self, eqns, outvars, consumers, fusible, rows, wide_from, dots):
        self.eqns: List[Eqn] = eqns
        self.outvars: List[Any] = outvars
        self.consumers: Dict[Var, List[Optional[Eqn]]] = consumers
        self.fusible: Set[Var] = fusible
        self.rows: Dict[Eqn, RowPlan] = rows
        self.wide_from: List[bool] = wide_from
        self.dots: Dict[Eqn, DotPlan] = dots


_PLANS = ProgramMemo("numba backend: the passes' plan of a program, per scalarization limit")


def program_plan(jaxpr: Jaxpr, limit: int, rows: Dict[Any, Any], fusible: AbstractSet[Any]) -> Plan:
    """The ``Plan`` of ``jaxpr`` whose values of at most ``limit`` elements are
    scalarized, with the row rules ``rows`` and the primitives ``fusible`` of the
    consumers that keep a lazy operand lazy (memoized; per ``TANGENTIA_NUMBA_GEMM``
    mode too)."""
    key = (limit, id(rows), id(fusible), gemm.gemm_mode())
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
        lazy = {v for v, users in consumers.items()
                if len(users) == 1 and users[0] is not None and users[0].prim in fusible}
        batched, dots = {}, {}
        for eqn in eqns:
            if rows:
                r = row_plan(eqn, rows, limit)
                if r is not None:
                    batched[eqn] = r
            if eqn.prim is C.dot_general_p:
                dots[eqn] = dot_plan(eqn, limit)
        wide_from = [False] * (len(eqns) + 1)
        if batched:
            for j in range(len(eqns) - 1, -1, -1):
                wide_from[j] = wide_from[j + 1] or (
                    eqns[j] in batched and len(eqns[j].outputs[0].aval.shape) >= 2)
        p = _PLANS.set(jaxpr, Plan(eqns, outvars, consumers, lazy, batched, wide_from, dots),
                       key)
    return p
