"""The numba backend's passes: what to do with each equation of a program, decided
before the generator (``codegen._Gen``) emits any code for it.

``program_plan(jaxpr, settings, rows, fusible)`` runs the passes over a program once
per ``Settings`` (memoized on the program: the same loop body lowered again,
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
  and before the other passes, a product the own kernel computes whose one reader
  is an update ``d +- s * product`` becomes one ``dot_general`` with an
  ``epilogue`` at the update's place (``fuse_epilogues``): the kernel writes the
  update while the product is in the cache;
* ``calls``: per program an equation carries (a loop body, a branch, a called
  function: ``jit``, ``checkpoint``, a custom rule), how it is lowered
  (``CallPlan``, the outlining pass): inlined, outlined (a separate njit function
  of the same module) or a compile unit (a module of its own, cached by numba on
  its own), from its estimated code size (``code_cost``) and the thresholds of
  the ``Settings``; and ``pruned``: per call whose program is inlined (``jit``,
  ``checkpoint``, custom rules: ``CALL_BODIES``) and some of whose results no one
  reads, which results are read: the emitter inlines the program without the others
  (``pruned``), and dead-code elimination drops what only they needed (the
  pendulum gradient's cotangent of its time grid, computed inside the backward
  pass's ``jit`` and then dropped);
* ``inplace``: per ``scatter`` whose operand is computed by an equation of the program
  and read by nothing else (no other equation, not an output), that equation's
  primitive: the emitter may write the update into the operand's array instead of a
  copy of it, where it knows that array to be the operand's own (``rules._scatter``:
  computed by an elementwise operation or another scatter; the spring chain's
  ``v.at[0].set(0.0)``, a copy of 16x2 elements per step in each direction);

and the emitter reads these annotations instead of deciding as it goes.

What the passes decide depends on a few module settings -- the scalarization
limit (``codegen.SMALL``), the outlining and compile-unit thresholds
(``codegen.OUTLINE_MIN_COST``, ``native.UNIT_MIN_COST``), whether units and IR
blocks are on (``TANGENTIA_NUMBA_UNITS``, ``TANGENTIA_NUMBA_IRBLOCK``) -- which
``native`` reads once per compile into a ``Settings``.  The ``Settings`` are part
of the key of every memo of a decision (the plans, the call plans, the compiled
code), so a change of a setting (a test lowering a threshold) never reuses what
was decided or compiled under another.  A
decision that depends on how the generator happens to represent a value when it
reaches an equation (a lazy expression or an array, a scalarized value or not)
stays in the emitter.
"""
from __future__ import annotations

from typing import AbstractSet, Any, Dict, List, NamedTuple, Optional, Set, Tuple

import numpy as np

from ...core import CustomVmapCallPrimitive, Eqn, Jaxpr, ProgramMemo, ShapedArray, Var, subjaxprs
from ...custom_derivatives import _base as CD
from ...primitives import call as CL, contraction as C, indexing as I, remat
from ..passes import simplify
from . import gemm

__all__ = ["Plan", "DotPlan", "CallPlan", "Settings", "program_plan", "row_plan", "dot_plan",
           "UNROLL_MAX_TERMS", "fold_transposes", "fuse_epilogues", "call_plan", "code_cost", "own_cost", "pruned",
           "CALL_BODIES", "inplace_scatters"]

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
# A contraction with a scalarized output (at most ``limit`` elements) and more than this
# many terms (output elements x contraction length) is, inside an IR block, a loop over
# the contraction reading its operands in place (``DotPlan.loop``, ``irblock``): the code
# of an unrolled 8x8 matrix-vector product (64 multiply-adds, their operands' loads)
# grew compile time faster than linearly with the number of layers in a scan.  The
# emitter's reductions of arrays in memory follow the same bound.
UNROLL_MAX_TERMS = 32


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
    forms do not take).  ``dims``: ``_dot_dims``'s.  ``loop``: inside an IR block, a
    loop over the contraction (its output is scalarized and it has more than
    ``UNROLL_MAX_TERMS`` terms); ``kind`` is then the form outside blocks."""

    __slots__ = ("kind", "lazy_kind", "own_gemm", "dims", "loop")

    def __init__(self, kind, lazy_kind, own_gemm, dims, loop=False):
        self.kind: str = kind
        self.lazy_kind: str = lazy_kind
        self.own_gemm: bool = own_gemm
        self.dims: Tuple[Any, ...] = dims
        self.loop: bool = loop


def dot_plan(eqn: Eqn, limit: int) -> DotPlan:
    """The ``DotPlan`` of a ``dot_general`` equation whose values of at most ``limit``
    elements are scalarized (an equation with an ``epilogue``, ``fuse_epilogues``:
    of its product)."""
    x, y = (a.aval for a in eqn.inputs[:2])
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
    loop = kind != "blas" and _size(out.shape) <= limit and _size(out.shape) * k > UNROLL_MAX_TERMS
    own = blas and gemm.use_gemm(out.dtype, m, n, k, fused="epilogue" in eqn.params)
    return DotPlan(kind, lazy_kind, own, dims, loop)



def consumers_of(eqns: List[Eqn], outvars: List[Any]) -> Dict[Any, List[Optional[Eqn]]]:
    """Per variable of ``eqns``, the equations reading it, in order (None: a program
    output)."""
    users: Dict[Any, List[Optional[Eqn]]] = {}
    for eqn in eqns:
        for a in eqn.inputs:
            if type(a) is Var:
                users.setdefault(a, []).append(eqn)
    for a in outvars:
        if type(a) is Var:
            users.setdefault(a, []).append(None)
    return users


def fold_transposes(eqns: List[Eqn], outvars: List[Any]) -> List[Eqn]:
    """``eqns`` with each ``dot_general`` operand that is a ``transpose`` of a variable
    read as that variable, the contraction's dimensions renumbered through the
    permutation (where the free dimensions keep their order, so the output is the
    same), and the transposes then read by no one dropped: ``x.T @ g`` written by
    hand becomes a product of ``x`` with a transpose flag (``rules._dot_blas``: a
    view given to BLAS or the own kernel) instead of a copy of ``x`` written first."""
    from ...interpreters import base_ops as B
    src = {e.outputs[0]: e for e in eqns if e.prim is B.transpose_p and type(e.inputs[0]) is Var}
    if not src:
        return eqns
    out, changed = [], False
    for e in eqns:
        if e.prim is C.dot_general_p and "epilogue" not in e.params:
            (lc, rc), (lb, rb) = e.params["dimension_numbers"]
            ins, dims = list(e.inputs), [[lc, lb], [rc, rb]]
            for t in (0, 1):
                tr = src.get(ins[t]) if type(ins[t]) is Var else None
                while tr is not None:       # (a transpose of a transpose: both)
                    perm = tr.params["permutation"]
                    c, b = dims[t]
                    free = [perm[i] for i in range(len(perm)) if i not in c and i not in b]
                    if free != sorted(free):
                        break
                    dims[t] = [tuple(perm[i] for i in c), tuple(perm[i] for i in b)]
                    ins[t] = tr.inputs[0]
                    tr = src.get(ins[t])
            if any(a is not b for a, b in zip(ins, e.inputs)):
                (lc, lb), (rc, rb) = dims
                e = Eqn(e.prim, ins, e.outputs,
                        dict(e.params, dimension_numbers=((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))),
                        e.source)
                changed = True
        out.append(e)
    if not changed:
        return eqns
    while True:     # (a transpose read only by a dropped one goes too)
        read = {a for e in out for a in e.inputs if type(a) is Var} | \
            {a for a in outvars if type(a) is Var}
        kept = [e for e in out if e.prim is not B.transpose_p or e.outputs[0] in read]
        if len(kept) == len(out):
            return kept
        out = kept


def _scalar_of(a, dt):
    """Whether ``a`` (an equation input) is a scalar of dtype ``dt``, or a weakly typed
    floating literal (a Python number: the operation rounds it to ``dt`` first)."""
    return tuple(a.aval.shape) == () and (a.aval.dtype == dt or (
        type(a) is not Var and getattr(a.aval, "weak_type", False)
        and a.aval.dtype.kind in "f" and dt.kind == "f"))


def fuse_epilogues(eqns: List[Eqn], outvars: List[Any], limit: int) -> List[Eqn]:
    """``eqns`` with each product that the own GEMM kernel computes (``dot_plan``: kind
    ``"blas"``, no batch dimensions, ``gemm.use_gemm`` with ``fused``) and that is read
    only by the update ``d + s * p``, ``d - s * p`` or ``d +- p`` (``mul`` by a scalar ``s`` of its
    dtype, then ``add``/``add_any``/``sub`` with an array ``d`` of its shape and
    dtype; each intermediate read only there) replaced by one ``dot_general``
    equation with the parameter ``epilogue`` (``"add"`` or ``"sub"``) and the inputs
    ``x, y, d, s`` (``s`` a literal 1 where there is no ``mul``), at the update's
    place: ``gemm._gemm_into`` then writes the update block by block while the
    product is in the cache (an SGD step's weight updates; the rounding of each
    operation is kept: ``s * p`` and ``d -+ (s * p)`` are each rounded once)."""
    from ...core import Literal
    from ...interpreters import ad
    from ...primitives import elementwise as E
    users = consumers_of(eqns, outvars)

    def only_user(v):
        u = users.get(v, ())
        return u[0] if len(u) == 1 and u[0] is not None and len(u[0].outputs) == 1 \
            and u[0].outputs[0].aval.shape == v.aval.shape \
            and u[0].outputs[0].aval.dtype == v.aval.dtype else None
    fused: Dict[Eqn, Optional[Eqn]] = {}    # absorbed equation -> None; update -> its equation
    for eqn in eqns:
        if eqn.prim is not C.dot_general_p or "epilogue" in eqn.params:
            continue
        dp = dot_plan(eqn, limit)
        (_, _), (lb, _) = eqn.params["dimension_numbers"]
        p = eqn.outputs[0]
        dt = p.aval.dtype
        if dp.kind != "blas" or lb:
            continue
        u = only_user(p)
        scale, absorbed = None, [eqn]
        if u is not None and u.prim is E.mul_p and len(u.inputs) == 2 and \
                sum(a is p for a in u.inputs) == 1:
            other = u.inputs[1] if u.inputs[0] is p else u.inputs[0]
            if _scalar_of(other, dt):
                scale, absorbed, p = other, absorbed + [u], u.outputs[0]
                u = only_user(p)
        if u is None or u.prim not in (E.add_p, ad.add_any_p, E.sub_p) or len(u.inputs) != 2 \
                or sum(a is p for a in u.inputs) != 1:
            continue
        d = u.inputs[1] if u.inputs[0] is p else u.inputs[0]
        if type(d) is not Var or d.aval.shape != p.aval.shape or d.aval.dtype != dt \
                or (u.prim is E.sub_p and u.inputs[0] is p):
            continue      # (s * p - d is not an update of d)
        if not (dp.own_gemm or gemm.use_gemm(dt, *dp.dims[2:5], fused=True)):
            continue
        if scale is None:
            scale = Literal(np.ones((), dt)[()], ShapedArray((), dt))
        x, y = eqn.inputs
        mode = "sub" if u.prim is E.sub_p else "add"
        fused[u] = Eqn(C.dot_general_p, [x, y, d, scale], u.outputs,
                       dict(eqn.params, epilogue=mode), eqn.source)
        for e in absorbed:
            fused[e] = None
    if not fused:
        return eqns
    return [fused[e] if e in fused else e for e in eqns if fused.get(e, e) is not None]

# -- outlining and compile units ------------------------------------------------

class Settings(NamedTuple):
    """The module settings the passes and the emitter follow, read once per compile
    (``native._settings``) and part of the key of every memo of what they decide."""

    limit: int                      # values of at most this many elements are scalarized
    outline_min_cost: int           # a nested program costing this is an outlined function
    unit_min_cost: Optional[int]    # ... costing this outside its own units: a compile
                                    # unit (None: no units)
    blocks: bool = True             # runs of scalarized equations are IR blocks (``irblock``)


def _nested(eqn: Eqn) -> List[Jaxpr]:
    return list(subjaxprs(eqn.prim, eqn.params))


_COST = ProgramMemo("numba backend: estimated code size outside the compile units")


def code_cost(jaxpr: Jaxpr, limit: int) -> int:
    """Estimated generated code size of a program whose values of at most ``limit``
    elements are scalarized: each equation counts the elements of its largest
    scalarized output (1 for array outputs), nested programs included (memoized)."""
    return own_cost(jaxpr, limit, None)


def own_cost(jaxpr: Jaxpr, limit: int, unit_min_cost: Optional[int]) -> int:
    """``code_cost`` of ``jaxpr`` without its nested programs that are compile units
    (those whose own cost is at least ``unit_min_cost``; each counts 1; None: no
    units, every nested program counts whole)."""
    key = (limit, unit_min_cost)
    c = _COST.get(jaxpr, key)
    if c is None:
        c = 0
        for eqn in jaxpr.eqns:
            c += max([_size(v.aval.shape) for v in eqn.outputs if _size(v.aval.shape) <= limit]
                     + [1])
            for q in _nested(eqn):
                own = own_cost(q, limit, unit_min_cost)
                c += own if unit_min_cost is None or own < unit_min_cost else 1
        _COST.set(jaxpr, c, key)
    return c


class CallPlan:
    """How a nested program is lowered where the emitter reaches it (the outlining
    pass).  ``kind``: ``"unit"`` (a compile unit: its own module, called through its
    address; its own cost, ``own``, is at least ``Settings.unit_min_cost``),
    ``"inline"`` (its code written in place: it is small, or it is not a unit but
    calls units, whose addresses a local function could not reach) or
    ``"outline"`` (a separate njit function of the same module: ``cost`` at least
    ``Settings.outline_min_cost``, numba's compile time growing faster than
    linearly with a function's size).  ``vector_kind``: the kind inside a loop LLVM
    vectorizes (rows, ``elementwise_loop``), where no unit is called: ``"inline"``
    or ``"outline"`` by ``cost``.  A called function (``jit``, ``checkpoint``, a
    custom rule's body) is a unit or else inlined by its rule, never outlined; so
    are the programs a rule always inlines (a one-step scan, a one-branch cond,
    ``custom_linear_solve``'s)."""

    __slots__ = ("kind", "vector_kind", "cost", "own")

    def __init__(self, kind, vector_kind, cost, own):
        self.kind: str = kind
        self.vector_kind: str = vector_kind
        self.cost: int = cost
        self.own: int = own

    @property
    def unit(self) -> bool:
        return self.kind == "unit"

    def __repr__(self):
        return f"CallPlan({self.kind}, vector: {self.vector_kind}, cost {self.cost}, own {self.own})"


_CALLS = ProgramMemo("numba backend: how a nested program is lowered, per settings")

# Call-like primitives: the parameter holding the program they call (inlined by their
# rules, ``rules._inline``, unless it is a compile unit; its outputs are the call's).
# ``custom_vmap_call`` is made above the backends (``tangentia.custom_batching``): keyed
# by its class, as in ``rules``.
CALL_BODIES = {CL.jit_p: "jaxpr", remat.remat_p: "jaxpr", CD.custom_jvp_call_p: "call_jaxpr",
               CD.custom_vjp_call_p: "call_jaxpr", CustomVmapCallPrimitive: "call_jaxpr"}

_PRUNED = ProgramMemo("numba backend: a called program without its unread outputs, per mask")


def pruned(jaxpr: Jaxpr, live: Tuple[bool, ...]) -> Jaxpr:
    """``jaxpr`` with only its outputs where ``live`` is true (memoized per mask, so its
    plan is too)."""
    p = _PRUNED.get(jaxpr, live)
    if p is None:
        p = _PRUNED.set(jaxpr, Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.eqns,
                                     [o for o, keep in zip(jaxpr.outvars, live) if keep]), live)
    return p


def call_plan(jaxpr: Jaxpr, settings: Settings) -> CallPlan:
    """The ``CallPlan`` of the nested program ``jaxpr`` under ``settings`` (memoized)."""
    key = settings[:3]
    p = _CALLS.get(jaxpr, key)
    if p is None:
        cost = code_cost(jaxpr, settings.limit)
        plain = "inline" if cost < settings.outline_min_cost else "outline"
        if settings.unit_min_cost is None:
            kind, own = plain, cost
        else:
            own = own_cost(jaxpr, settings.limit, settings.unit_min_cost)
            kind = "unit" if own >= settings.unit_min_cost else "inline" if own != cost else plain
        p = _CALLS.set(jaxpr, CallPlan(kind, plain, cost, own), key)
    return p


# -- scatters in place ----------------------------------------------------------

def inplace_scatters(eqns: List[Eqn], consumers: Dict[Any, List[Optional[Eqn]]]) -> Dict[Eqn, Any]:
    """``{scatter: producer's primitive}`` for each ``scatter`` equation of ``eqns`` whose
    operand is computed by an equation of ``eqns`` and read by that scatter alone, once
    (not by another equation, nor twice by it, nor as an output): after the scatter no one
    reads the operand, so its array may take the update (``Plan.inplace``).  An operand
    that is an input of the program (an argument, a constant, a loop's carry) is never
    listed: its array is the caller's."""
    producer = {v: e for e in eqns for v in e.outputs}
    out = {}
    for eqn in eqns:
        if eqn.prim is I.scatter_p:
            x = eqn.inputs[0]
            users = consumers.get(x, ()) if type(x) is Var else ()
            if len(users) == 1 and users[0] is eqn and x in producer:
                out[eqn] = producer[x].prim
    return out


# -- the plan of a program ------------------------------------------------------

class Plan:
    """The passes' annotations of one program under one ``Settings`` (see the module
    docstring)."""

    __slots__ = ("eqns", "outvars", "consumers", "fusible", "rows", "wide_from", "dots", "calls",
                 "pruned", "settings", "inplace")

    def __init__(self, eqns, outvars, consumers, fusible, rows, wide_from, dots, calls, pruned,
                 settings, inplace=None):
        self.eqns: List[Eqn] = eqns
        self.outvars: List[Any] = outvars
        self.consumers: Dict[Var, List[Optional[Eqn]]] = consumers
        self.fusible: Set[Var] = fusible
        self.rows: Dict[Eqn, RowPlan] = rows
        self.wide_from: List[bool] = wide_from
        self.dots: Dict[Eqn, DotPlan] = dots
        self.calls: Dict[Jaxpr, CallPlan] = calls
        self.pruned: Dict[Eqn, Tuple[bool, ...]] = pruned
        self.settings: Settings = settings
        self.inplace: Dict[Eqn, Any] = {} if inplace is None else inplace


_PLANS = ProgramMemo("numba backend: the passes' plan of a program, per settings")


def program_plan(jaxpr: Jaxpr, settings: Settings, rows: Dict[Any, Any],
                 fusible: AbstractSet[Any]) -> Plan:
    """The ``Plan`` of ``jaxpr`` under ``settings`` (values of at most
    ``settings.limit`` elements are scalarized), with the row rules ``rows`` and the
    primitives ``fusible`` of the consumers that keep a lazy operand lazy (memoized;
    per ``TANGENTIA_NUMBA_GEMM`` mode too)."""
    key = (settings, id(rows), id(fusible), gemm.gemm_mode())
    p = _PLANS.get(jaxpr, key)
    if p is None:
        limit = settings.limit
        eqns, outvars = simplify(jaxpr, dce=True)
        eqns = fuse_epilogues(fold_transposes(eqns, outvars), outvars, limit)   # (contractions)
        consumers = consumers_of(eqns, outvars)
        lazy = {v for v, users in consumers.items()
                if len(users) == 1 and users[0] is not None and users[0].prim in fusible}
        batched, dots, calls, prune = {}, {}, {}, {}
        for eqn in eqns:
            if rows and "epilogue" not in eqn.params:
                r = row_plan(eqn, rows, limit)
                if r is not None:
                    batched[eqn] = r
            if eqn.prim is C.dot_general_p:
                dots[eqn] = dot_plan(eqn, limit)
            for q in _nested(eqn):
                calls[q] = call_plan(q, settings)
            if eqn.prim in CALL_BODIES or type(eqn.prim) in CALL_BODIES:
                live = tuple(v in consumers for v in eqn.outputs)
                if not all(live):
                    prune[eqn] = live
        wide_from = [False] * (len(eqns) + 1)
        if batched:
            for j in range(len(eqns) - 1, -1, -1):
                wide_from[j] = wide_from[j + 1] or (
                    eqns[j] in batched and len(eqns[j].outputs[0].aval.shape) >= 2)
        p = _PLANS.set(jaxpr, Plan(eqns, outvars, consumers, lazy, batched, wide_from, dots, calls,
                                   prune, settings, inplace_scatters(eqns, consumers)), key)
    return p
