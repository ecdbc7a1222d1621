"""Runs of scalarized equations emitted as one numba intrinsic writing LLVM IR.

numba's cost is per statement of the generated Python (typing, its IR passes,
lowering), not per LLVM instruction: a chain of elementwise operations on a
value of 8 elements was 8 statements per equation, and compiled at 5-7 ms per
equation.  Here a maximal run of consecutive equations whose values are all
scalarized (``SV``: ``codegen.SMALL`` elements or fewer, real or integer dtypes)
and which all have a rule in ``RULES`` becomes one call

    (s40, s41, ) = _blk3(((s1, s2, ), ))

of an intrinsic generated for that run: numba types and lowers one call, and
the intrinsic's code generation emits the run's scalar operations as straight
IR with llvmlite's builder (LLVM still sees the same unrolled scalar code, so
the compiled program runs as fast).  Its inputs are the scalars the run reads
(a tuple of tuples of at most ``_CHUNK``), its outputs those the rest of the
program reads.

* **Rules** are keyed by ``Primitive``.  Elementwise ones compute in the dtypes
  of NumPy's loop (``rules._loop_dtypes``) with the same operations as the
  Python the generator would write (``fadd``, ``fcmp``, the casts of numba's
  ``context.cast``, the IR of ``vecmath``'s and ``vecmath_trig``'s scalar
  functions, numba's own lowering of ``**``), so results are bit for bit those
  of the statement-per-element code (``TANGENTIA_NUMBA_IRBLOCK=0`` emits that).
  Structural operations (broadcasts, reshapes, transposes, static indexing,
  concatenation) rearrange element lists, reductions and small contractions
  fold left in the generator's order.
* **Scalar nodes** are built first (``_Block``): constants folded as NumPy
  folds them, repeated operations shared; a run with fewer than ``MIN_OPS``
  operations is emitted as before (a call would not pay).
* **Vector lanes** (``_Block.group``, ``_lane_plan``, ``_emit_lanes``): the nodes one
  equation makes of the same operation at the same depth (a batched value's elements)
  are one ``<n x T>`` operation where that saves more scalar operations than the moves
  between vectors and scalars cost; each lane computes what its scalar node did, bit
  for bit (``TANGENTIA_NUMBA_LANES=0``: scalars only).
* **The cache key.** A block's description (its nodes, in order, as text) is
  hashed; the generated source names the digest in a comment next to the
  block's global, so two programs differing only inside a block have
  different sources (and on-disk cache entries).  Blocks of the same
  description share one intrinsic per process.
"""
from __future__ import annotations

import hashlib
import math
import operator
import os
import threading

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types as nbt
from numba.core.extending import intrinsic
from numba.core.typing import signature
from numba.np.numpy_support import as_dtype

from ...core import Literal
from ...interpreters import ad, base_ops as B
from ...primitives import contraction as C, elementwise as E, indexing as I, reductions as R
from ...primitives import misc as M, remat, structural as S
from . import reroll, vecmath, vecmath_trig
from .rowio import _CHUNK, chunks as _chunks, nest as _nest  # noqa: F401 - (_nest: read by native)
from .rowio import flat_types, flat_values, row_load_p, row_store_p, view_struct
from .codegen import (AV, SV, UNROLL, ZV, _bidx, _dt, _is_float0, _lit, _nbtype, _ravel,
                      _shape_str, _size, _typed)
from .plan import UNROLL_MAX_TERMS
from .rules import (_index_plan, _loop_dtypes, concatenate_source, dot_indices,
                    transpose_source)

__all__ = ["RULES", "MIN_OPS", "lower_run"]

# A block of more than SPLIT_NODES operations is split into functions of about
# FUNCTION_NODES (below, one function compiles as fast -- the chain of 1,799
# equations, 14,000 operations: 3.0 s whole, 3.3 s in pieces -- and runs faster:
# values crossing pieces go through memory; the pendulum's adjoint loop split
# into pieces of 400 ran 15% slower, its vmap's 5,174-operation body 12%).
SPLIT_NODES = 16000
FUNCTION_NODES = 1000
# Outside loop bodies (code run once per call) a block is split past TOP_SPLIT_NODES: a
# top-level chain of 10,080 equations (bench_cold's ``special`` family, 2,800 operations)
# spent 13 of its 22 s of CPU in LLVM's register allocation of one function; in pieces the
# whole compile took 7 s, the call the same (49.5 / 49.9 us, bit-equal).  Loop bodies keep
# SPLIT_NODES (split at 4,000, ``ode_vmap_grad``'s body ran 699 -> 1,149 us per call), and
# so do blocks with vector lanes (pieces have none: ``jit(hessian)`` of 100 stages 3-9%
# slower per call for a 6% faster compile).
TOP_SPLIT_NODES = 4000
MIN_OPS = 4        # a run with fewer scalar operations is emitted as Python statements
# Vector lanes (``_Block.group``, ``_emit_lanes``): the same operation on the elements of
# a batched value is one ``<n x double>`` operation of at most LANES_MAX lanes
# (``TANGENTIA_NUMBA_LANES=0``: one scalar operation per element, the same results)
LANES = os.environ.get("TANGENTIA_NUMBA_LANES", "1") != "0"
LANES_MAX = 64
LANES_PROFIT = True     # (False: every pack that can be scheduled is a vector; for tests)
ARRAY_MAX = 1024   # arrays of at most this many elements are read by a block element by element
FEW_ROWS = 8       # a batch of at most this many rows may be computed in a block (``_eligible``)
MANY_ROWS = 16     # a reduction over this many rows of an array is a loop (``_many_rows``; the
                   # size from which units are generic in their batch, ``native.GENERIC_MIN``)
_KINDS = "biuf"


class _Val:
    """A value inside a block: its shape, dtype and one node id per element (C order);
    ``var``: the variable of an array in memory (``AV``) the value is, read in place by
    loops (``_loop``), else None."""

    __slots__ = ("shape", "dtype", "ids", "var")

    def __init__(self, shape, dtype, ids, var=None):
        self.shape, self.dtype, self.ids, self.var = tuple(shape), dtype, ids, var


class _Block:
    """The scalar nodes of one run: ``nodes[i] = (op, dtype, args, param)``.

    ``op`` is ``"in"`` (``param``: the input's position), ``"arr"`` (a whole array
    in memory, read in place by loops; ``param``: the input's position), ``"const"``
    (``param``: the value as a NumPy scalar of ``dtype``), ``"cast"`` (from ``param``,
    a dtype), ``"loop"`` (a loop computing several values, ``_loop``; ``param``: its
    description), ``"pick"`` (the ``param``-th value of the loop node ``args[0]``),
    ``"rowld"``/``"rowst"`` (element ``e`` of row ``stack[j, i]`` read, or written with
    ``args[2]``; ``args``: the stack's ``"arr"`` node and ``i``'s; ``param``: ``(j, e,
    the row's shape)``: ``rowio.RowOp``), ``"arrst"`` (element ``param`` of the fresh
    array ``args[0]`` written with ``args[1]``: ``_emit``) or an operation name
    (``param``: an exponent or None); ``args`` are node ids."""

    def __init__(self):
        self.nodes = []
        self.memo = {}
        self.inputs = []        # (Var, element index, dtype) per input node
        self.arrays = set()     # the Vars read from arrays in memory (``AV``), element by element
        self.ops = 0            # operations (not inputs, constants or casts)
        self.stores = 0         # "rowst"/"arrst" nodes (effects: emitted though no output reads them)
        self.packs = []         # lists of nodes computed as one vector operation (``group``)

    def _add(self, key, node):
        i = self.memo.get(key)
        if i is None:
            i = self.memo[key] = len(self.nodes)
            self.nodes.append(node)
        return i

    def input(self, var, k, dtype):
        key = ("in", id(var), k)
        i = self.memo.get(key)
        if i is None:
            i = self.memo[key] = len(self.nodes)
            self.nodes.append(("in", dtype, (), len(self.inputs)))
            self.inputs.append((var, k, dtype))
        return i

    def array(self, var, dtype):
        """The node of the whole array ``var`` (in memory, ``AV``), read in place."""
        key = ("arr", id(var))
        i = self.memo.get(key)
        if i is None:
            i = self.memo[key] = len(self.nodes)
            self.nodes.append(("arr", dtype, (), len(self.inputs)))
            self.inputs.append((var, None, dtype))
            self.arrays.add(var)
        return i

    def const(self, value, dtype):
        v = np.asarray(value).astype(dtype)[()]
        return self._add(("c", dtype.str, v.tobytes()), ("const", dtype, (), v))

    def dtype(self, i):
        return self.nodes[i][1]

    def cast(self, i, dst):
        op, src, _, param = self.nodes[i]
        if src == dst:
            return i
        if op == "const":
            return self.const(param, dst)      # (as ``codegen._cast`` folds a literal)
        return self._add(("cast", i, dst.str), ("cast", dst, (i,), src))

    def op(self, name, dtype, args, param=None):
        key = (name, dtype.str, tuple(args), param)
        i = self.memo.get(key)
        if i is None:
            self.ops += 1
            i = self.memo[key] = len(self.nodes)
            self.nodes.append((name, dtype, tuple(args), param))
        return i

    def group(self, start):
        """Vector lanes among the nodes from ``start`` (one equation's new nodes): the
        nodes of the same operation, dtype and parameter at the same depth in the
        equation (``level``: no node of a pack reads another) become a pack, in the
        order they were made (an elementwise equation's output elements in C order; a
        reduction's step across its outputs), of at most ``LANES_MAX`` lanes; rows'
        and fresh arrays' consecutive elements are read or written as one vector
        (``_emit_lanes``)."""
        nodes = self.nodes
        level = {}
        groups = {}
        for i in range(start, len(nodes)):
            op, dt, args, param = nodes[i]
            lv = 0
            for a in args:
                if a >= start and level[a] >= lv:
                    lv = level[a] + 1
            level[i] = lv
            if not _lanes_ok(nodes, i):
                continue
            if op == "rowld" or op == "rowst":
                key = (op, dt.str, args[0], args[1], param[0], param[2], lv)
            elif op == "arrst":
                key = (op, dt.str, args[0], lv)
            else:
                key = (op, dt.str, param, lv)
            groups.setdefault(key, []).append(i)
        for (op, *_), ids in groups.items():
            if op in _MEMORY:       # (consecutive elements)
                runs = _runs(ids, nodes)
            else:
                runs = [ids[c:c + LANES_MAX] for c in range(0, len(ids), LANES_MAX)]
            self.packs.extend(r for r in runs if len(r) >= 2)

    def text(self, outputs):
        """The description hashed into the cache key."""
        lines = []
        for op, dt, args, param in self.nodes:
            if op == "const":
                param = param.tobytes().hex()
            elif op == "cast":
                param = param.str
            lines.append(f"{op} {dt.str} {' '.join(map(str, args))} {param}")
        lines.append("out " + " ".join(map(str, outputs)))
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Rules: ``rule(bb, g, eqn, ins) -> [_Val]`` (None: not in a block)

def _out(eqn):
    return eqn.outputs[0].aval


def _elementwise(bb, g, eqn, ins):
    out = _out(eqn)
    prim = eqn.prim
    in_dts = [a.aval.dtype for a in eqn.inputs]
    param = None
    if prim is E.select_p:
        loop_in, loop_out, name = [in_dts[0], out.dtype, out.dtype], out.dtype, "select"
    elif prim is B.convert_element_type_p:
        if in_dts[0].kind == "f" and out.dtype.kind in "iu":
            return None     # (saturating: ``rules._convert``, a call)
        loop_in, loop_out, name = [out.dtype], out.dtype, "id"
    elif prim is E.integer_pow_p:
        y = eqn.params["y"]
        if out.dtype.kind != "f" and y not in (0, 1, 2):
            return None
        loop_in, loop_out, name, param = [out.dtype], out.dtype, "ipow", y
    else:
        loop_in, loop_out = _loop_dtypes(eqn)
        name = _ELEMENTWISE[prim]
    loop_in = [np.dtype(d) for d in loop_in]
    loop_out = np.dtype(loop_out)
    if any(d.kind not in _KINDS for d in list(loop_in) + [loop_out]) or \
            {d.kind for d in loop_in} == {"i", "u"}:   # (int64 vs uint64: rules, helpers._icmp)
        return None
    op_dt = loop_in[0] if prim is not E.select_p else out.dtype
    if not _supported(name, op_dt):
        return None
    n = _size(out.shape)
    operands = [[bb.cast(i, d) for i in _broadcast(v, out.shape, n)] for v, d in zip(ins, loop_in)]
    ids = []
    for args in zip(*operands):
        r = args[0] if name == "id" else _compute(bb, name, op_dt, args, param)
        if bb.dtype(r) != loop_out:
            return None
        ids.append(bb.cast(r, out.dtype))
    return [_Val(out.shape, out.dtype, ids)]


def _broadcast(v, shape, n):
    """The node ids of ``v`` broadcast to ``shape`` (of ``n`` elements), in C order."""
    if v.shape == tuple(shape):
        return v.ids
    if len(v.ids) == 1:
        return v.ids * n
    return [v.ids[_ravel(_bidx(idx, v.shape, shape), v.shape)] for idx in np.ndindex(*shape)]


# the operation computed by each elementwise primitive (in the loop's dtype)
_ELEMENTWISE = {
    E.add_p: "add", ad.add_any_p: "add",
    E.sub_p: "sub", E.mul_p: "mul", E.div_p: "div", E.neg_p: "neg",
    E.maximum_p: "max", E.minimum_p: "min",
    E.eq_p: "eq", E.ne_p: "ne", E.lt_p: "lt", E.le_p: "le", E.gt_p: "gt", E.ge_p: "ge",
    E.and_p: "and", E.or_p: "or", E.not_p: "not", E.xor_p: "xor",
    E.bitwise_and_p: "band", E.bitwise_or_p: "bor", E.bitwise_xor_p: "bxor",
    E.bitwise_not_p: "bnot",
    E.sin_p: "sin", E.cos_p: "cos", E.exp_p: "exp", E.log_p: "log", E.tanh_p: "tanh",
    E.expm1_p: "expm1", E.log1p_p: "log1p", E.sqrt_p: "sqrt", E.abs_p: "abs",
}
# Elementwise primitives computed by numba's own lowering of the function the
# generator's statement calls (``rules._OPS``): the same code, bit for bit.
# name: (primitive, function, boolean result)
_CALLS = {
    "tan": (E.tan_p, math.tan, False), "asin": (E.arcsin_p, math.asin, False),
    "acos": (E.arccos_p, math.acos, False), "atan": (E.arctan_p, math.atan, False),
    "sinh": (E.sinh_p, math.sinh, False), "cosh": (E.cosh_p, math.cosh, False),
    "asinh": (E.arcsinh_p, math.asinh, False), "acosh": (E.arccosh_p, math.acosh, False),
    "atanh": (E.arctanh_p, math.atanh, False), "atan2": (E.atan2_p, math.atan2, False),
    "pow": (E.pow_p, operator.pow, False), "copysign": (M.copysign_p, math.copysign, False),
    "floor": (E.floor_p, np.floor, False), "ceil": (E.ceil_p, np.ceil, False),
    "round": (E.round_p, np.rint, False), "nextafter": (M.nextafter_p, np.nextafter, False),
    "isnan": (E.isnan_p, math.isnan, True), "isinf": (E.isinf_p, math.isinf, True),
    "isfinite": (E.isfinite_p, math.isfinite, True),
}
_ELEMENTWISE.update({prim: name for name, (prim, _, _) in _CALLS.items()})
_FLOAT_ONLY = {"div", "sin", "cos", "exp", "log", "tanh", "expm1", "log1p", "sqrt"} | set(_CALLS)
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _supported(name, dt):
    if name in _FLOAT_ONLY:
        return dt.kind == "f"
    if name in ("sub", "neg"):
        return dt.kind != "b"
    if name in ("and", "or", "not", "xor"):
        return dt.kind == "b"       # (their integer forms compare with 0: not here)
    if name in ("band", "bor", "bxor", "bnot"):
        return dt.kind in "biu"
    if name == "abs":
        return dt.kind != "u"
    if name == "pow":               # (integers: ``rules``, helpers._ipow; numba's saturated)
        return dt.kind == "f"
    return True


def _compute(bb, name, dt, args, param=None):
    """The node of ``name`` on ``args`` (nodes of dtype ``dt``), the generator's
    expression for it (``rules._OPS``, ``_SCALAR_OPS``, ``_integer_pow``)."""
    b = np.dtype(bool)
    if name in _COMPARE or (name in _CALLS and _CALLS[name][2]):
        return bb.op(name, b, args)
    if name == "select":
        return bb.op("select", dt, [bb.cast(args[0], b)] + list(args[1:]))
    if name == "ipow":
        if param == 0:
            return bb.const(1, dt)
        if param == 1:
            return args[0]
        if param == 2:
            return _compute(bb, "mul", dt, [args[0], args[0]])
        # (``x ** 3.0``: numba computes a float32 ``x`` to the power of a float64 in float64)
        f8 = np.dtype(np.float64)
        return bb.cast(bb.op("pow", f8, [bb.cast(args[0], f8), bb.const(float(param), f8)]), dt)
    if dt.kind == "b":
        if name in ("add", "max", "or"):
            name = "or"
        elif name in ("mul", "min", "and"):
            name = "and"
        elif name == "abs":
            return args[0]
    return bb.op(name, dt, args)


def _identity(bb, g, eqn, ins):
    return [ins[0]]


def _reshape(bb, g, eqn, ins):
    out = _out(eqn)
    return [_Val(out.shape, out.dtype, list(ins[0].ids))]


def _remap(x, out, in_index):
    return _Val(out.shape, out.dtype,
                [x.ids[_ravel(in_index(idx), x.shape)] for idx in np.ndindex(*out.shape)])


def _transpose(bb, g, eqn, ins):
    return [_remap(ins[0], _out(eqn), transpose_source(eqn.params["permutation"]))]


def _broadcast_to(bb, g, eqn, ins):
    out, x = _out(eqn), ins[0]
    return [_remap(x, out, lambda idx: _bidx(idx, x.shape, out.shape))]


def _getitem(bb, g, eqn, ins):
    if len(ins) != 1:
        return None         # (index arrays: the generator's rule, with its bounds checks)
    _, in_index = _index_plan(eqn.params["spec"], ins[0].shape, [])
    return [_remap(ins[0], _out(eqn), in_index)]


def _scatter(bb, g, eqn, ins):
    """A scatter at static indices (no index operands, ``x.at[:, k].add(y)``): each
    updated element is the generator's (``rules._scatter``): old and new cast to the
    combining dtype, the mode's operation, the result cast to the output's dtype.  (In
    a vmapped ODE's reverse loop, each one ended a block: ~20 blocks in a row where
    one does.)"""
    if len(ins) != 2:
        return None
    x, y = ins
    mode = eqn.params["mode"]
    name = _SCATTER.get(mode, False)
    out = _out(eqn)
    cdt = np.result_type(x.dtype, y.dtype) if mode != "set" else out.dtype
    if name is False or (name is not None and not _supported(name, cdt)):
        return None
    idx_shape, in_index = _index_plan(eqn.params["spec"], x.shape, [])
    ids = [bb.cast(i, out.dtype) for i in x.ids]
    for idx in np.ndindex(*idx_shape):
        k = _ravel(in_index(idx), x.shape)
        new = bb.cast(y.ids[_ravel(_bidx(idx, y.shape, idx_shape), y.shape)], cdt)
        r = new if name is None else _compute(bb, name, cdt, [bb.cast(ids[k], cdt), new])
        ids[k] = bb.cast(r, out.dtype)
    return [_Val(out.shape, out.dtype, ids)]


_SCATTER = {"set": None, "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _concatenate(bb, g, eqn, ins):
    out = _out(eqn)
    axis = eqn.params["axis"]
    ids = []
    shapes = [v.shape for v in ins]
    for idx in np.ndindex(*out.shape):
        k, src = concatenate_source(shapes, axis, idx)
        ids.append(bb.cast(ins[k].ids[_ravel(src, ins[k].shape)], out.dtype))
    return [_Val(out.shape, out.dtype, ids)]


_REDUCE = {B.reduce_sum_p: ("add", 0), R.reduce_prod_p: ("mul", 1), R.reduce_max_p: ("max", None),
           R.reduce_min_p: ("min", None), R.reduce_and_p: ("and", True), R.reduce_or_p: ("or", False)}


def _reduce(bb, g, eqn, ins):
    x, = ins
    out = _out(eqn)
    dt = out.dtype
    axes = tuple(eqn.params["axes"])
    name, init = _REDUCE[eqn.prim]
    if not _supported(name, dt):
        return None
    if x.var is not None and _size(x.shape) > UNROLL_MAX_TERMS and dt.kind in "iuf" and \
            _consecutive(axes) and axes:
        kept = [i for i in range(len(x.shape)) if i not in axes]
        bases = []
        for k_idx in np.ndindex(*[x.shape[i] for i in kept]):
            full = [0] * len(x.shape)
            for i, v in zip(kept, k_idx):
                full[i] = v
            bases.append(tuple(full))
        return [_loop(bb, name, dt, out.shape, [(x, bases, axes)])]
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    red = [d for i, d in enumerate(x.shape) if i in axes]
    ids = []
    for k_idx in np.ndindex(*kept):
        acc = None
        for r_idx in np.ndindex(*red):
            k_it, r_it = iter(k_idx), iter(r_idx)
            full = tuple(next(r_it) if i in axes else next(k_it) for i in range(len(x.shape)))
            e = bb.cast(x.ids[_ravel(full, x.shape)], dt)
            acc = e if acc is None else _compute(bb, name, dt, [acc, e])
        if acc is None:
            if init is None:
                return None
            acc = bb.const(init, dt)
        ids.append(acc)
    return [_Val(out.shape, dt, ids)]


def _dot_general(bb, g, eqn, ins):
    x, y = ins
    out = _out(eqn)
    dt = out.dtype
    dn = eqn.params["dimension_numbers"]
    (lc, rc), _ = dn
    plan = g.dot_plan(eqn)      # (the contraction pass's choice: ``plan.dot_plan``)
    lf, rf, _, _, k, _ = plan.dims
    if plan.loop and dt.kind in "iuf" and _consecutive(lc) and _consecutive(rc) and lc:
        bx, by = [], []
        for o_idx in np.ndindex(*out.shape):
            xi, yi = dot_indices(len(x.shape), len(y.shape), dn, lf, rf, o_idx, (0,) * len(lc))
            bx.append(xi)
            by.append(yi)
        return [_loop(bb, "dot", dt, out.shape, [(x, bx, tuple(lc)), (y, by, tuple(rc))])]
    csh = [x.shape[i] for i in lc]
    if plan.kind != "unroll" and (g.is_small(out.shape) or _size(out.shape) * _size(csh) > UNROLL):
        return None     # (a wide output: ``_wide``; unrolled when it has at most UNROLL terms)
    
    ids = []
    for o_idx in np.ndindex(*out.shape):
        acc = None
        for c_idx in np.ndindex(*csh):
            xi, yi = dot_indices(len(x.shape), len(y.shape), eqn.params["dimension_numbers"],
                                 lf, rf, o_idx, c_idx)
            t = _compute(bb, "mul", dt, [bb.cast(x.ids[_ravel(xi, x.shape)], dt),
                                         bb.cast(y.ids[_ravel(yi, y.shape)], dt)])
            acc = t if acc is None else _compute(bb, "add", dt, [acc, t])
        ids.append(acc if acc is not None else bb.const(0, dt))
    return [_Val(out.shape, dt, ids)]


def _consecutive(axes):
    """Whether ``axes`` are increasing consecutive axes (a loop runs over them as one:
    their elements in C order are evenly spaced)."""
    return all(b == a + 1 for a, b in zip(axes, axes[1:]))


def _loop(bb, name, dt, shape, operands):
    """A ``_Val`` of ``shape`` whose element ``o`` is the fold, in order, of one term
    per step of a loop (``c``, over the elements of the ``axes`` of each operand, in C
    order): ``name`` is ``"dot"`` (the sum of products of the two operands' elements)
    or a reduction's operation (``_REDUCE``) on the one operand's elements.
    ``operands``: ``(value, starts, axes)`` per operand, ``starts[o]`` the index of
    the operand's element at ``c = 0`` for output element ``o``.  An array in memory is
    read in place; other values are passed as the loop node's arguments (cast to
    ``dt``) and stored in a stack buffer.  Unrolled, the terms of an 8x8 matrix-vector
    product were 64 multiply-adds and 64 loads of the matrix; as a loop, the body has
    one load per operand and output element, whatever the contraction's length."""
    args, specs = [], []
    n_out = _size(shape)
    steps = None
    for v, starts, axes in operands:
        inner = _size(v.shape[axes[-1] + 1:])
        steps = _size([v.shape[a] for a in axes])
        if v.var is not None:
            specs.append(("mem", len(args), v.dtype.str, v.shape, tuple(starts), tuple(axes)))
            args.append(bb.array(v.var, v.dtype))
        else:
            specs.append(("vals", len(args), len(v.ids),
                          tuple(_ravel(s, v.shape) for s in starts), inner))
            args.extend(bb.cast(i, dt) for i in v.ids)
    node = bb.op("loop", dt, args, (name, n_out, steps, tuple(specs)))
    return _Val(shape, dt, [bb.op("pick", dt, (node,), o) for o in range(n_out)])


def _stack_step(bb, ins):
    """The ``"arr"`` node of a stack and the int64 node of the step (``rowio.RowOp``)."""
    return ins[0].ids[0], bb.cast(ins[1].ids[0], np.dtype(np.int64))


def _row_load(bb, g, eqn, ins):
    arr, i = _stack_step(bb, ins)
    out, j = _out(eqn), eqn.params["j"]
    return [_Val(out.shape, out.dtype,
                 [bb.op("rowld", out.dtype, (arr, i), (j, e, out.shape))
                  for e in range(_size(out.shape))])]


def _row_store(bb, g, eqn, ins):
    arr, i = _stack_step(bb, ins)
    dt, j, shape = ins[0].dtype, eqn.params["j"], ins[2].shape
    for e, x in enumerate(ins[2].ids):
        bb.op("rowst", dt, (arr, i, bb.cast(x, dt)), (j, e, shape))
        bb.stores += 1
    return []


RULES = {p: _elementwise for p in list(_ELEMENTWISE) + [E.select_p, B.convert_element_type_p,
                                                        E.integer_pow_p]}
RULES.update({
    S.stop_gradient_p: _identity, remat.name_p: _identity,
    B.reshape_p: _reshape, B.transpose_p: _transpose, B.broadcast_to_p: _broadcast_to,
    I.getitem_p: _getitem, I.scatter_p: _scatter, S.concatenate_p: _concatenate,
    C.dot_general_p: _dot_general,
    **{p: _reduce for p in _REDUCE},
    row_load_p: _row_load, row_store_p: _row_store,
})


# ---------------------------------------------------------------------------
# Runs


def _eligible(g, eqn, env=None, vals=()):
    """Whether ``eqn`` can join a block: a rule, no effects, every value scalarized --
    but an input that is an array in memory (``AV``, at most ``ARRAY_MAX`` elements, not
    computed in the block) is read by the block element by element, and an output of at
    most ``UNROLL`` elements is computed in it (``_wide``; given ``env``) from an operand
    scalarized or computed in the block -- or from arrays alone, for a batch of at most
    ``FEW_ROWS`` rows outside loop bodies (``rules.loop_body``).  Such values (``jit(hessian)``
    of a function of f64[6]: f64[6,6] everywhere) were row loops, each with arrays
    allocated, rows loaded and stored, and numba's code around them (25 stages: 64,000
    lines of IR; in blocks 18,000, compile 6.7 -> 2.6 s, 38 -> 33 us per call, the same
    bits).  Elsewhere the loops stay: LLVM vectorizes a loop over many rows or elements,
    ``sin`` and all, where a block calls ``sin`` per element (``vmap`` of a Runge-Kutta
    ``while_loop`` over 32 states of 2: 12 us per call in rows, 31 in a block; 300
    operations on f64[40]: 26 us fused, 138 in a block)."""
    if eqn.prim is row_load_p or eqn.prim is row_store_p:
        a = eqn.inputs[0]       # (the stack, any size: read and written in place)
        return env is not None and a not in vals and type(env.get(a)) is AV and all(
            g.is_small(v.aval.shape) and v.aval.dtype.kind in _KINDS
            for v in eqn.inputs[1:] + eqn.outputs)
    if eqn.prim not in RULES or eqn.prim.has_effects or not eqn.outputs:
        return False
    wide = few = False
    for a in eqn.outputs:
        aval = a.aval
        if aval.dtype.kind not in _KINDS or _is_float0(aval.dtype):
            return False
        if not g.is_small(aval.shape):
            if env is None or not _wide(g, aval):
                return False
            few = (few or not wide) and len(aval.shape) > 1 and aval.shape[0] <= FEW_ROWS
            wide = True
    scalar = False
    for a in eqn.inputs:
        aval = a.aval
        if aval.dtype.kind not in _KINDS or _is_float0(aval.dtype):
            return False
        if g.is_small(aval.shape) or a in vals:
            # (an operand scalarized with dimensions, or wide and computed in the block:
            # the generator would write a wide result element by element)
            scalar = scalar or (type(a) is not Literal and len(aval.shape) > 0)
        elif (env is None or type(a) is Literal or type(env.get(a)) is not AV
                or _size(aval.shape) > ARRAY_MAX):
            return False
    if eqn.prim in _REDUCE and 0 in eqn.params["axes"] and _many_rows(eqn.inputs[0], env, vals):
        return False
    return scalar or not wide or (few and not g.loop_bodies)


def _many_rows(a, env, vals):
    """Whether ``a`` is an array in memory (not computed in the block) of at least
    ``MANY_ROWS`` rows: a reduction over them (a bias's gradient, the sum over a batch)
    is a loop of the generator (``rules._reduce``: an accumulator per output element),
    whose trip count a size-generic unit reads from its argument
    (``native._generic_source``), not a block whose nodes and digest depend on the
    number of rows: ``jit(grad)`` of a 16-wide MLP at a batch of 17 to 64 rows compiled
    its backward layer anew for each batch (batch 128, past ``ARRAY_MAX`` elements, was
    already a loop)."""
    return (env is not None and type(a) is not Literal and a not in vals and type(env.get(a)) is AV
            and len(a.aval.shape) > 0 and a.aval.shape[0] >= MANY_ROWS)


def _wide(g, aval):
    """Whether a value too large to be scalarized is computed in a block (its elements
    as nodes, written to a fresh array if read after the block, ``_emit``): at most
    ``codegen.UNROLL`` elements, the values the generator would write element by
    element, one statement each, such as a matrix gradient's accumulation
    ``dW + outer(g, h)``, or row by row."""
    return _size(aval.shape) <= UNROLL


def lower_run(g, eqns, k, env, consumers):
    """Lower the run of eligible equations from ``eqns[k]`` (up to the first one a
    rule declines): as one block if it has at least ``MIN_OPS`` operations, else one
    by one (``g.lower_one``).  Returns the index after what was lowered (``k``:
    ``eqns[k]`` is not eligible)."""
    bb = _Block()
    vals = {}
    j = k
    while j < len(eqns):
        eqn = eqns[j]
        if _no_data(eqn):
            # a float0 result (a tangent of integers or booleans: ``codegen.ZV``, no code)
            # does not end the run: a ``select`` of float0 zeros split the adjoint unit of
            # ``hessian`` of the pendulum ODE loss (2,126 equations) into 5 blocks, ~200
            # scalars passed from each to the next through numba tuples (1,800 of the
            # unit's 3,600 numba IR statements)
            for v in eqn.outputs:
                env[v] = ZV(v.aval.shape, v.aval.dtype)
            j += 1
            continue
        if not _eligible(g, eqn, env, vals):
            break
        start = len(bb.nodes)
        ins = []
        for a in eqn.inputs:
            if type(a) is Literal:
                dt = a.aval.dtype
                ins.append(_Val((), dt, [bb.const(a.val, dt)]))
            elif a in vals:
                ins.append(vals[a])
            elif a is eqn.inputs[0] and (eqn.prim is row_load_p or eqn.prim is row_store_p):
                ins.append(_Val(a.aval.shape, a.aval.dtype, [bb.array(a, a.aval.dtype)], a))
            else:
                aval = a.aval
                if not g.is_small(aval.shape):
                    bb.arrays.add(a)
                ins.append(_Val(aval.shape, aval.dtype,
                                [bb.input(a, i, aval.dtype) for i in range(_size(aval.shape))],
                                a if not g.is_small(aval.shape) else None))
        outs = RULES[eqn.prim](bb, g, eqn, ins)
        if outs is None:
            break
        for v, o in zip(eqn.outputs, outs):
            vals[v] = o
        if LANES:
            bb.group(start)
        j += 1
    if j == k:
        if k < len(eqns) and _eligible(g, eqns[k]):     # (a rule declined it; scalarized)
            g.lower_one(eqns[k], env, consumers, {})
            return k + 1
        return k
    run = eqns[k:j]
    if bb.ops < MIN_OPS:
        for eqn in run:
            g.lower_one(eqn, env, consumers, {})
        return j
    in_run = {id(e) for e in run}
    results = [(v, vals[v]) for e in run if not _no_data(e) for v in e.outputs
               if any(u is None or id(u) not in in_run for u in consumers.get(v, ()))]
    _emit(g, bb, results, env)
    return j


def _no_data(eqn):
    """Whether ``eqn`` computes only float0 values, without effects: the generator
    gives them no code (``codegen._Gen.lower_eqn``)."""
    return bool(eqn.outputs) and not eqn.prim.has_effects and \
        all(_is_float0(v.aval.dtype) for v in eqn.outputs)


def _emit(g, bb, results, env):
    # wide results (``_wide``): the block writes them into fresh arrays (``"arrst"``)
    if any(not g.is_small(val.shape) for _, val in results):
        wide = [(var, val) for var, val in results if not g.is_small(val.shape)]
        results = [(var, val) for var, val in results if g.is_small(val.shape)]
        for var, val in wide:
            n = g.name("a")
            g.emit(f"{n} = _empty({_shape_str(val.shape)}, {_dt(val.dtype)})")
            env[var] = AV(val.shape, val.dtype, n)
            arr = bb.array(var, val.dtype)
            start = len(bb.nodes)
            for k, i in enumerate(val.ids):
                bb.op("arrst", val.dtype, (arr, i), k)
                bb.stores += 1
            if LANES:
                bb.group(start)
    # the scalar expressions of the inputs (named: each is read once, by the call),
    # each passed once (``in_map``: input node -> argument, or (array, element) for an
    # element of an array passed whole: ``bb.arrays``)
    # (an array that is a view of a buffer, ``native._Views``, is read in the buffer: the
    # block takes the buffer, once, not the array; ``views[a]``: ``(argument, element
    # offset or None, shape)`` of array ``a``)
    srcs, args, where, in_map = {}, [], {}, []
    arrays, arr_pos, views, view_avs, arg_pos = [], {}, [], [], {}
    g_views = getattr(g, "views", None) or {}
    for var, k, dtype in bb.inputs:
        if var in bb.arrays:
            a = arr_pos.get(var)
            if a is None:
                a = arr_pos[var] = len(views)
                av = env[var]
                view_avs.append(av)
                buf, off = g_views.get(av.name, (None, None))
                if buf is None:
                    views.append((len(arrays), None, av.shape))
                    arrays.append(av)
                else:
                    j = arg_pos.get(buf)
                    if j is None:
                        j = arg_pos[buf] = len(arrays)
                        arrays.append(AV((None,), av.dtype, buf))
                    views.append((j, off, av.shape))
            in_map.append((a, k))
            continue
        sv = srcs.get(var)
        if sv is None:
            sv = srcs[var] = g.named(g.small(env[var]))
        e = _typed(sv.elems[k], dtype)
        pos = where.get((e, dtype.str))
        if pos is None:
            pos = where[(e, dtype.str)] = len(args)
            args.append(e)
        in_map.append(pos)
    # the outputs: nodes computed by the block, once each, and the elements of arrays it
    # reads (loaded by the block: one call, where a statement each took ~5 ms of numba's
    # compile -- a Hessian's batched program reads columns of its input so); scalar inputs
    # and constants are read where they are
    out_ids, names, node_name = [], [], {}
    for var, val in results:
        elems = []
        for i in val.ids:
            op, dt, _, param = bb.nodes[i]
            if op == "in" and type(in_map[param]) is not tuple:
                elems.append(args[in_map[param]])
            elif op == "const":
                elems.append(_lit(param, dt))
            else:
                n = node_name.get(i)
                if n is None:
                    n = node_name[i] = g.name("s")
                    out_ids.append(i)
                    names.append(n)
                elems.append(n)
        env[var] = SV(val.shape, val.dtype, elems)
    if not out_ids and not bb.stores:
        return
    in_dts = [None] * len(args)
    for (_, _, dt), pos in zip(bb.inputs, in_map):
        if type(pos) is int:
            in_dts[pos] = dt
    arr_specs = [(av.dtype, av.shape) for av in arrays]
    text = (" ".join(dt.str for dt in in_dts) + "\n" + " ".join(map(str, in_map)) + "\n"
            + bb.text(out_ids))
    if arrays:
        text = " ".join(f"{dt.str}{list(shape)}" for dt, shape in arr_specs) + "\n" + text
        if any(off is not None for _, off, _ in views):
            text = " ".join(f"{j}@{off}{list(shape)}" for j, off, shape in views) + "\n" + text
    if bb.packs:    # (the same nodes emitted with vector lanes: another source, cache entry)
        text = f"lanes {len(bb.packs)}{'' if LANES_PROFIT else ' all'}\n" + text
    split = (TOP_SPLIT_NODES if not g.loop_bodies and not bb.packs
             and len(bb.nodes) > TOP_SPLIT_NODES else SPLIT_NODES)
    if split != SPLIT_NODES:        # (the same nodes split otherwise: another cache entry)
        text = f"split {split}\n" + text
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    fn = _intrinsic(digest, bb.nodes, in_dts, in_map, out_ids, arr_specs, views, bb.packs,
                    split)
    name = g.glob(fn, "_blk")
    g.notes.append(f"# {name}: irblock {digest} ({len(bb.nodes)} nodes)")
    # (a run of all of a loop carry's elements, in order, is passed as its tuple: ``g.packed``;
    # the intrinsic flattens its argument)
    call_args = _nest(g.packed(args)) + "".join(", " + av.name for av in arrays)
    # (the outputs are unpacked from tuples of at most ``_CHUNK``, nested: numba loads a
    # tuple variable whole for each element it unpacks, and LLVM's SROA then splits
    # n loads of n elements -- a block of 2,000 outputs took a minute)
    g.emit(f"{_nest(names)} = {name}({call_args})" if names else f"{name}({call_args})")


# ---------------------------------------------------------------------------
# The intrinsic

_STORES = ("rowst", "arrst")     # nodes with an effect (emitted though no output reads them)
_INTRINSICS = {}        # digest -> intrinsic: blocks of the same description share one
_MEMO_MAX = 4096
_LOCK = threading.Lock()


def _intrinsic(digest, nodes, in_dts, in_map, out_ids, arr_specs=(), views=(), packs=(),
               split=SPLIT_NODES):
    with _LOCK:
        fn = _INTRINSICS.get(digest)
        if fn is None:
            if len(_INTRINSICS) >= _MEMO_MAX:   # (compiled programs keep theirs)
                _INTRINSICS.clear()
            fn = _INTRINSICS[digest] = _make_intrinsic(digest, nodes, in_dts, in_map, out_ids,
                                                       arr_specs, views, packs, split)
    return fn


def _make_intrinsic(digest, nodes, in_dts, in_map, out_ids, arr_specs=(), views=(), packs=(),
                    split=SPLIT_NODES):
    if not views:       # (each array argument read itself)
        views = [(a, None, shape) for a, (_, shape) in enumerate(arr_specs)]
    in_types = [_nbtype(dt) for dt in in_dts]
    n_in = len(in_types)
    shape = _chunks(list(range(len(out_ids))))      # (the outputs' nesting: ``_nest``)

    def ret_type(tree):
        return nbt.Tuple([ret_type(t) if type(t) is list else _nbtype(nodes[out_ids[t]][1])
                          for t in tree])
    ret = ret_type(shape)

    def make(context, builder, ty, tree, res):
        return context.make_tuple(builder, ty, [
            make(context, builder, ty.types[k], t, res) if type(t) is list else res[t]
            for k, t in enumerate(tree)])

    def check(args):
        flat = flat_types(args)
        return len(flat) == n_in and all(isinstance(t, (nbt.Number, nbt.Boolean)) for t in flat)

    def lower(context, builder, sig, llargs):
        vals = flat_values(builder, sig.args[0], llargs[0])
        vals = [context.cast(builder, v, t, want)
                for v, t, want in zip(vals, flat_types(sig.args[0]), in_types)]
        if arr_specs:
            arrs = [(aty, context.make_array(aty)(context, builder, llargs[1 + a]))
                    for a, aty in enumerate(sig.args[1:])]
            ins = _Inputs(context, builder, vals, in_map, arrs, views)
        else:
            ins = [vals[p] for p in in_map]
        res = _emit_ir(context, builder, nodes, ins, out_ids, digest, packs, split)
        return make(context, builder, sig.return_type, shape, res)

    if not arr_specs:
        def typer(typingctx, args):
            if not check(args):
                return None
            return signature(ret, args), lower
    else:
        def typer_arrays(typingctx, args, arrays):
            if not check(args) or not all(
                    isinstance(t, nbt.Array) and t.ndim == len(shape) and as_dtype(t.dtype) == dt
                    for t, (dt, shape) in zip(arrays, arr_specs)):
                return None
            return signature(ret, args, *arrays), lower
        # (the arrays are arguments of their own, ``_blk3(scalars, a, b)``, not a tuple: numba
        # increfs and decrefs each array put in a tuple, two atomic operations per array and
        # call, in every step of a loop; numba's intrinsics take no ``*args``, so the typer is
        # written for this number of arrays)
        names = "".join(f", a{k}" for k in range(len(arr_specs)))
        space = {"typer_arrays": typer_arrays}
        exec(f"def typer(typingctx, args{names}):\n"
             f"    return typer_arrays(typingctx, args, [{names[2:]}])", space)
        typer = space["typer"]
    typer.__name__ = f"irblock_{digest}"
    return intrinsic(typer)


class _Inputs:
    """The values of a block's input nodes, by position: a scalar argument, or an
    element of an array argument, loaded when first asked for (only the elements
    the outputs need are read).  ``views[a]``: ``(argument, offset, shape)`` of the
    block's array ``a``: the argument itself (offset None), or the C-contiguous array
    of ``shape`` at that element offset of the argument (a buffer, ``_emit``)."""

    def __init__(self, context, builder, vals, in_map, arrs, views):
        self.context, self.builder, self.vals, self.in_map = context, builder, vals, in_map
        self.arrs, self.views = arrs, views

    def lazy(self, p):
        """Input ``p``: a scalar argument's value, or an array element to load where it
        is first used (``_value``): loaded at the block's start, the elements a block
        reads (a matrix gradient's 64) stayed live across all of it, spilled."""
        m = self.in_map[p]
        return self.vals[m] if type(m) is int or m[1] is None else _Lazy(self, p)

    def __getitem__(self, p):
        m = self.in_map[p]
        if type(m) is int:
            return self.vals[m]
        a, k = m
        j, off, shape = self.views[a]
        aty, ary = self.arrs[j]
        builder = self.builder
        i64 = ir.IntType(64)
        if k is None:       # (the whole array: ``_Block.array``)
            if off is None:
                return _ArrIn(aty, ary)
            return _ArrIn(nbt.Array(aty.dtype, len(shape), "C"),
                          _View(self.context, builder, aty, ary, ir.Constant(i64, off), shape))
        if off is not None:
            k += off
        if aty.layout == "C":
            ptr = builder.gep(ary.data, [ir.Constant(i64, k)])
        else:
            idx = [ir.Constant(i64, int(i)) for i in np.unravel_index(k, shape)]
            ptr = cgutils.get_item_pointer2(self.context, builder, ary.data,
                                            cgutils.unpack_tuple(builder, ary.shape),
                                            cgutils.unpack_tuple(builder, ary.strides),
                                            aty.layout, idx)
        return self.context.unpack_value(builder, aty.dtype, ptr)


class _Lazy:
    """An input node's element of an array argument, not loaded yet (``_Inputs.lazy``)."""

    __slots__ = ("inputs", "p")

    def __init__(self, inputs, p):
        self.inputs, self.p = inputs, p


class _View:
    """The structure of an array in a buffer (``_Inputs``) as loops read it: its data
    pointer; the whole structure (``rowio.view_struct``, 30 LLVM instructions) is built
    only where it is stored (a value crossing pieces of a split block, ``_emit_ir``)."""

    __slots__ = ("args", "data", "struct")

    def __init__(self, context, builder, aty, ary, off, shape):
        self.args = (context, builder, aty, ary, off, shape, aty.dtype)
        self.data = builder.gep(ary.data, [off])
        self.struct = None

    def _getvalue(self):
        if self.struct is None:
            self.struct = view_struct(*self.args)[1]._getvalue()
        return self.struct


class _ArrIn:
    """The value of an ``"arr"`` node: an array argument (numba type and structure)."""

    __slots__ = ("aty", "ary")

    def __init__(self, aty, ary):
        self.aty, self.ary = aty, ary

    @property
    def type(self):
        return self.ary._getvalue().type


_LLTYPES = {}


def _lltype(dt):
    t = _LLTYPES.get(dt)
    if t is None:
        if dt.kind == "b":
            t = ir.IntType(1)
        elif dt.kind == "f":
            t = ir.DoubleType() if dt.itemsize == 8 else ir.FloatType()
        else:
            t = ir.IntType(8 * dt.itemsize)
        _LLTYPES[dt] = t
    return t


def _llconst(value, dt):
    t = _lltype(dt)
    if dt.kind == "f":
        return ir.Constant(t, float(value))
    v = int(value)
    bits = 1 if dt.kind == "b" else 8 * dt.itemsize
    if dt.kind != "b" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return ir.Constant(t, v)


def _emit_ir(context, builder, nodes, in_vals, out_ids, digest, packs=(), split=SPLIT_NODES):
    """Emit the nodes the outputs need; returns the outputs' values.  Past
    ``split`` operations (``SPLIT_NODES``; ``TOP_SPLIT_NODES`` outside loop bodies), they
    are split into consecutive pieces, each an out-of-line (``noinline``) function of the
    module taking the values it reads and returning those read after it: LLVM's code
    generation (instruction selection and scheduling of one basic block, spill slots of
    one function) grows faster than linearly with a function's size (one block of 48,000
    operations: 11.8 s; pieces of a few hundred: linear)."""
    live = bytearray(len(nodes))
    for i in out_ids:
        live[i] = 1
    for i in range(len(nodes) - 1, -1, -1):
        if live[i] or nodes[i][0] in _STORES:
            live[i] = 1
            for a in nodes[i][2]:
                live[a] = 1
    vals = {}
    order = []
    lazy = type(in_vals) is _Inputs
    for i, (op, dt, args, param) in enumerate(nodes):
        if live[i]:
            if op == "in" and lazy:
                vals[i] = in_vals.lazy(param)
            elif op == "in" or op == "arr":
                vals[i] = in_vals[param]
            elif op != "const":
                order.append(i)
    memo = {}
    # (repeated runs of nodes emitted as loops over their copies: ``reroll``)
    res = reroll.emit(context, builder, nodes, order, vals, memo, out_ids, in_vals, packs, _ROLL_OPS)
    if res is not None:
        return res
    if packs and len(order) <= split:
        _emit_lanes(context, builder, nodes, order, vals, memo, packs, out_ids)
        return [_value(nodes, vals, i) for i in out_ids]
    if len(order) <= split:
        _emit_nodes(context, builder, nodes, order, vals, memo, out_ids)
        return [_value(nodes, vals, i) for i in out_ids]
    n_pieces = -(-len(order) // FUNCTION_NODES)
    size = -(-len(order) // n_pieces)
    pieces = [[]]
    for i in order:         # (a loop node and the picks of its values stay together)
        if len(pieces[-1]) >= size and nodes[i][0] != "pick":
            pieces.append([])
        pieces[-1].append(i)
    piece_of = {}
    for c, piece in enumerate(pieces):
        for i in piece:
            piece_of[i] = c
    last = {}       # node -> the last piece reading it (len(pieces): an output)
    reads = []      # per piece: the values it reads from the buffers
    for c, piece in enumerate(pieces):
        r = set()
        for i in piece:
            for a in nodes[i][2]:
                if piece_of.get(a, -1) != c and nodes[a][0] != "const":
                    r.add(a)
                last[a] = max(last.get(a, -1), c)
        reads.append(sorted(r))
    for i in out_ids:
        last[i] = len(pieces)
    # Values crossing pieces live in stack buffers (one per LLVM type, slots reused
    # once read for the last time): pieces take the buffers, not the values (a
    # gradient's forward pass leaves hundreds of values to its backward pass).
    slots, free, counts = {}, {}, {}

    def take(i):
        key = vals[i].type if nodes[i][0] == "arr" else _slot_type(nodes[i][1])
        pool = free.setdefault(key, [])
        slots[i] = (key, pool.pop() if pool else counts.setdefault(key, 0))
        if not pool and slots[i][1] == counts[key]:
            counts[key] += 1

    inputs = sorted({a for r in reads for a in r if a not in piece_of})
    for i in inputs:
        take(i)
    results = []
    for c, piece in enumerate(pieces):
        results.append([i for i in piece if last.get(i, -1) > c])
        for i in results[-1]:
            take(i)
        for a in reads[c]:
            if last[a] == c:
                key, k = slots[a]
                free[key].append(k)
    keys = sorted(counts, key=str)
    bufs = [cgutils.alloca_once(builder, key, size=counts[key]) for key in keys]
    where = dict(zip(keys, range(len(keys))))

    def store(b, ptrs, i, v):
        key, k = slots[i]
        if type(v) is _ArrIn:
            v = v.ary._getvalue()
        elif key != v.type:
            v = b.zext(v, key)
        b.store(v, b.gep(ptrs[where[key]], [ir.Constant(ir.IntType(64), k)]))

    def load(b, ptrs, i):
        key, k = slots[i]
        v = b.load(b.gep(ptrs[where[key]], [ir.Constant(ir.IntType(64), k)]))
        if nodes[i][0] == "arr":
            aty = vals[i].aty
            return _ArrIn(aty, context.make_array(aty)(context, b, value=v))
        ty = _lltype(nodes[i][1])
        return v if ty == key else b.trunc(v, ty)

    for i in inputs:
        store(builder, bufs, i, _value(nodes, vals, i))
    module = builder.module
    for c, piece in enumerate(pieces):
        fname = f"tangentia_irblock_{digest}_{c}"
        fn = module.globals.get(fname)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [buf.type for buf in bufs]),
                             fname)
            fn.linkage = "internal"
            for attr in ("noinline", "nounwind"):
                fn.attributes.add(attr)
            b = ir.IRBuilder(fn.append_basic_block())
            local = {a: load(b, fn.args, a) for a in reads[c]}
            _emit_nodes(context, b, nodes, piece, local, memo, results[c])
            for i in results[c]:
                store(b, fn.args, i, local[i])
            b.ret_void()
        builder.call(fn, bufs)
    for i in out_ids:
        if i in piece_of:
            vals[i] = load(builder, bufs, i)
    return [_value(nodes, vals, i) for i in out_ids]


def _slot_type(dt):
    return ir.IntType(8) if dt.kind == "b" else _lltype(dt)


def _value(nodes, vals, i):
    v = vals.get(i)
    if type(v) is _Lazy:    # (an element of an array argument: loaded where first used)
        v = vals[i] = v.inputs[v.p]
    elif v is None:         # (a constant)
        _, dt, _, param = nodes[i]
        v = vals[i] = _llconst(param, dt)
    return v


def _emit_nodes(context, builder, nodes, order, vals, memo, keep=()):
    """Emit ``order``'s nodes.  A node read once (in ``order``, and not in ``keep``:
    read after it) is emitted where it is read, as the generator's statements
    inline an expression used once: the values live as briefly as theirs (emitted
    in equation order, a batched loop body spilled 10% more and ran 5% slower)."""
    f = vecmath._IR(builder)
    inside = set(order)
    uses = {}
    for i in order:
        for a in nodes[i][2]:
            if a in inside:
                uses[a] = uses.get(a, 0) + 1
    for i in keep:
        uses[i] = uses.get(i, 0) + 2
    deferred = {i for i in order if uses.get(i, 0) == 1}

    def get(a):
        return _value(nodes, vals, a)

    def emit(i):
        _emit_node(context, builder, f, memo, nodes, vals, i, get)

    for i in order:
        if i in deferred:
            continue
        # the deferred operands first (depth first, without recursion)
        stack = [(i, False)]
        while stack:
            j, ready = stack.pop()
            if ready:
                emit(j)
                continue
            stack.append((j, True))
            for a in reversed(nodes[j][2]):
                if a in deferred and a not in vals:
                    stack.append((a, False))


def _emit_node(context, builder, f, memo, nodes, vals, i, get):
    """Emit node ``i`` (not an input or a constant) into ``vals``; ``get(a)``: the
    scalar value of node ``a``."""
    op, dt, args, param = nodes[i]
    if op == "cast":
        vals[i] = _cast_ir(context, builder, get(args[0]), param, dt)
    elif op == "pick":
        vals[i] = vals[args[0]][param]
    elif op == "loop":
        vals[i] = _loop_ir(context, builder, f, memo, dt,
                           [get(a) for a in args], param)
    elif op == "arrst":
        arr = vals[args[0]]
        if arr.aty.layout != "C":
            raise TypeError(f"irblock: an array a block writes must be C-contiguous, got {arr.aty}")
        ptr = builder.gep(arr.ary.data, [ir.Constant(ir.IntType(64), param)]) if param else \
            arr.ary.data
        context.pack_value(builder, arr.aty.dtype, get(args[1]), ptr)
        vals[i] = None
    elif op == "rowld" or op == "rowst":
        arr = vals[args[0]]
        ptr = _row_pointer(context, builder, memo, arr, get(args[1]), param)
        if op == "rowld":
            vals[i] = context.unpack_value(builder, arr.aty.dtype, ptr)
        else:
            context.pack_value(builder, arr.aty.dtype, get(args[2]), ptr)
            vals[i] = None
    else:
        vals[i] = _OP_IR[op](context, builder, f, memo, dt,
                             [get(a) for a in args],
                             nodes[args[0]][1] if args else dt)


# the operations a pack computes as one vector operation (bit for bit each lane's scalar
# one: IEEE arithmetic, comparisons, selects, sqrt, bit operations, exact casts);
# transcendental functions and calls stay one per lane
_LANE_OPS = {"add", "sub", "mul", "div", "neg", "max", "min", "and", "or", "not", "xor",
             "band", "bor", "bxor", "bnot", "select", "sqrt", "abs", "isfinite", "cast",
             "rowld", "rowst", "arrst", *_COMPARE}
_MEMORY = ("rowld", "rowst", "arrst")


def _lanes_ok(nodes, i):
    """Whether node ``i`` may be a lane of a pack (``_Block.group``)."""
    op, dt, args, param = nodes[i]
    if op not in _LANE_OPS:
        return False
    dts = [dt] + [nodes[a][1] for a in args if nodes[a][0] != "arr"]
    if any(d.kind == "f" and d.itemsize not in (4, 8) for d in dts):
        return False
    if op in _MEMORY:
        return dt.kind in "iuf"
    if op == "cast":        # (not from booleans, not float to integer: ``_cast_ir``'s others)
        return param.kind in "iuf" and not (param.kind == "f" and dt.kind in "iu")
    return True


def _elem(node):
    """The element index a memory node reads or writes (in its row or array)."""
    return node[3] if node[0] == "arrst" else node[3][1]


def _runs(ids, nodes):
    """``ids`` (memory nodes) cut into runs of consecutive elements of at most
    ``LANES_MAX``."""
    runs = [[ids[0]]]
    for a, b in zip(ids, ids[1:]):
        if _elem(nodes[b]) == _elem(nodes[a]) + 1 and len(runs[-1]) < LANES_MAX:
            runs[-1].append(b)
        else:
            runs.append([b])
    return runs


def _column(ids, unit, plist, nodes):
    """How a pack's operand (``ids``: the node each lane reads) is made: ``("pack",
    packs)``: the lanes of one pack, or of two of the same length (the vector, or a
    shuffle); ``"splat"``: one node; ``"const"``: constants; else ``"insert"``."""
    src = []
    for a in ids:
        u = unit.get(a)
        if u is None:
            src = None
            break
        if u not in src:
            src.append(u)
    if src and (len(src) == 1 or (len(src) == 2 and len(plist[src[0]]) == len(plist[src[1]]))):
        return "pack", src
    a0 = ids[0]
    if all(a == a0 for a in ids):
        return "splat", None
    if all(nodes[a][0] == "const" for a in ids):
        return "const", None
    return "insert", None


def _lane_plan(nodes, order, vals, packs, out_ids):
    """The packs kept (``_emit_lanes``): ``(unit, plist)``, ``unit[i]`` the index in
    ``plist`` of node ``i``'s pack (``plist[u]`` empty: dissolved).  A pack keeps its
    live lanes (at least two); one is dissolved where it cannot be scheduled at its
    last lane (every operand of every lane computed before, no lane reading another), and
    so is each group of packs reading one another (``_column``'s ``"pack"``) whose
    vector operations would not save more scalar ones (a lane count less one per
    pack) than they cost in moves between vectors and scalars: a lane extracted for
    a scalar reader (a call per lane, an output), an operand inserted lane by lane,
    a splat, a shuffle.  (The pendulum's gradient, lanes of 2, and a scan body's
    ``tanh`` per lane of a loop's sums ran 4-10% slower with them.)"""
    live = set(order)
    unit, plist = {}, []
    for p in packs:
        q = [i for i in p if i in live]
        if not q:
            continue
        if nodes[q[0]][0] in _MEMORY:
            arr = vals[nodes[q[0]][2][0]]
            if arr.aty.layout != "C" or arr.aty.dtype != _nbtype(nodes[q[0]][1]):
                continue
            runs = _runs(q, nodes)
        else:
            runs = [q]
        for r in runs:
            if len(r) >= 2:
                for i in r:
                    unit[i] = len(plist)
                plist.append(r)

    def dissolve(u):
        for j in plist[u]:
            del unit[j]
        plist[u] = []

    # positions in ``order``, not node numbers: a rerolled block's order has its stores
    # hoisted (``reroll.hoist_stores``), a store before nodes numbered below it
    where = {i: t for t, i in enumerate(order)}
    while True:
        changed = True
        while changed:     # (scheduling: every read of a value computed before)
            changed = False
            pos = [max(where[j] for j in p) if p else -1 for p in plist]
            for i in order:
                u = unit.get(i)
                at = where[i] if u is None else pos[u]
                for a in nodes[i][2]:
                    ua = unit.get(a)
                    if ua is not None and (ua == u or pos[ua] >= at):
                        dissolve(ua)
                        changed = True
        # (cost: groups of packs connected by vector operands)
        parent = list(range(len(plist)))

        def find(u):
            while parent[u] != u:
                parent[u] = parent[parent[u]]
                u = parent[u]
            return u
        cost = [0] * len(plist)
        extracted = set()
        for u, p in enumerate(plist):
            if not p:
                continue
            n = len(p)
            op = nodes[p[0]][0]
            k0 = 2 if op == "rowst" else 1 if op == "arrst" else 0
            if op == "rowld":
                continue
            for k in range(k0, len(nodes[p[0]][2])):
                ids = [nodes[i][2][k] for i in p]
                kind, src = _column(ids, unit, plist, nodes)
                if kind == "pack":
                    for v in src:
                        parent[find(v)] = find(u)
                    if ids != plist[src[0]]:    # (a shuffle)
                        cost[u] += 1
                elif kind == "splat":
                    cost[u] += 0 if nodes[ids[0]][0] == "const" else 2
                elif kind == "insert":
                    cost[u] += n
                    extracted.update(a for a in ids if a in unit)
        for i in order:
            if i not in unit:
                extracted.update(a for a in nodes[i][2] if a in unit)
        extracted.update(i for i in out_ids if i in unit)
        for i in extracted:
            cost[unit[i]] += 1
        total = {}
        for u, p in enumerate(plist):
            if p:
                r = find(u)
                c, g = total.get(r, (0, 0))
                total[r] = (c + cost[u], g + len(p) - 1)
        bad = {r for r, (c, g) in total.items() if c >= g and LANES_PROFIT}
        if not bad:
            return unit, plist
        for u, p in enumerate(plist):
            if p and find(u) in bad:
                dissolve(u)


def _emit_lanes(context, builder, nodes, order, vals, memo, packs, out_ids):
    """Emit ``order``'s nodes, each pack kept of ``packs`` (``_Block.group``) as one
    vector operation, where its last lane in ``order`` was.  A pack's operand is,
    per lane, the node the lane reads: the vector of a pack in the same order, a
    shuffle of one or two packs, one node splatted, constants, else the lanes'
    scalars inserted one by one; a scalar node reading a lane extracts it (once).
    Rows and fresh arrays are read and written as vectors of their consecutive
    elements.  Which packs are kept: ``_lane_plan``."""
    f = vecmath._IR(builder)
    unit, plist = _lane_plan(nodes, order, vals, packs, out_ids)
    lane = {}
    for p in plist:
        for k, i in enumerate(p):
            lane[i] = k
    i32 = ir.IntType(32)
    pvals, cols = {}, {}

    def get(a):
        v = vals.get(a)
        if v is None and a in unit:
            v = vals[a] = builder.extract_element(pvals[unit[a]], ir.Constant(i32, lane[a]))
            return v
        return _value(nodes, vals, a)

    def mask(ks):
        return ir.Constant(ir.VectorType(i32, len(ks)), [ir.Constant(i32, k) for k in ks])

    def column(ids):
        key = tuple(ids)
        v = cols.get(key)
        if v is not None:
            return v
        n, a0 = len(ids), ids[0]
        kind, src = _column(ids, unit, plist, nodes)
        if kind == "pack":
            first = pvals[src[0]]
            ks = [lane[a] + (len(plist[src[0]]) if unit[a] != src[0] else 0) for a in ids]
            if len(src) == 1 and ks == list(range(len(plist[src[0]]))):
                v = first
            else:
                other = pvals[src[1]] if len(src) == 2 else ir.Constant(first.type, ir.Undefined)
                v = builder.shuffle_vector(first, other, mask(ks))
        elif kind == "splat":
            x = get(a0)
            v = builder.insert_element(ir.Constant(ir.VectorType(x.type, n), ir.Undefined), x,
                                       ir.Constant(i32, 0))
            v = builder.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), mask([0] * n))
        elif kind == "const":
            v = ir.Constant(ir.VectorType(_lltype(nodes[a0][1]), n),
                            [_llconst(nodes[a][3], nodes[a][1]) for a in ids])
        else:
            xs = [get(a) for a in ids]
            v = ir.Constant(ir.VectorType(xs[0].type, n), ir.Undefined)
            for k, x in enumerate(xs):
                v = builder.insert_element(v, x, ir.Constant(i32, k))
        cols[key] = v
        return v

    def emit_pack(u):
        ids = plist[u]
        op, dt, args, param = nodes[ids[0]]
        if op in _MEMORY:
            arr = vals[args[0]]
            if op == "arrst":
                ptr = builder.gep(arr.ary.data, [ir.Constant(ir.IntType(64), param)])
            else:
                ptr = _row_pointer(context, builder, memo, arr, get(args[1]), param)
            ptr = builder.bitcast(ptr, ir.VectorType(_lltype(dt), len(ids)).as_pointer())
            if op == "rowld":
                pvals[u] = builder.load(ptr, align=dt.itemsize)
            else:
                builder.store(column([nodes[i][2][-1] for i in ids]), ptr, align=dt.itemsize)
                for i in ids:
                    vals[i] = None
            return
        a = [column([nodes[i][2][k] for i in ids]) for k in range(len(args))]
        if op == "sqrt" or (op == "abs" and dt.kind == "f"):  # (numba's: ``sqrt``, ``llvm.fabs``)
            t = a[0].type
            name = f"llvm.{'sqrt' if op == 'sqrt' else 'fabs'}.v{t.count}f{dt.itemsize * 8}"
            pvals[u] = builder.call(cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(t, [t]), name), a)
        elif op == "abs":           # (numba's ``int_abs_impl``)
            x = a[0]
            pvals[u] = builder.select(builder.icmp_signed("<", x, ir.Constant(x.type, None)),
                                      builder.neg(x), x)
        elif op == "isfinite":
            from numba.cpython import mathimpl
            pvals[u] = mathimpl.is_finite(builder, a[0])
        elif op == "cast":
            pvals[u] = _cast_lanes(builder, a[0], param, dt)
        else:
            pvals[u] = _OP_IR[op](context, builder, f, memo, dt, a,
                                  nodes[args[0]][1] if args else dt)

    # (each pack where its lane last in ``order`` is, as ``_lane_plan`` scheduled it)
    where = {i: t for t, i in enumerate(order)}
    last = {u: max(p, key=where.__getitem__) for u, p in enumerate(plist) if p}
    for i in order:
        u = unit.get(i)
        if u is None:
            _emit_node(context, builder, f, memo, nodes, vals, i, get)
        elif i == last[u]:
            emit_pack(u)
    for i in out_ids:
        if i in unit:
            get(i)


def _cast_lanes(builder, v, src, dst):
    """``_cast_ir`` of a vector (numba's casts between numbers, ``_lanes_ok``'s)."""
    t = ir.VectorType(_lltype(dst), v.type.count)
    zero = ir.Constant(v.type, None)
    if dst.kind == "b":
        if src.kind == "f":
            return builder.fcmp_unordered("!=", v, zero)
        return builder.icmp_unsigned("!=", v, zero)
    if src.kind == "f":
        return builder.fpext(v, t) if dst.itemsize > src.itemsize else builder.fptrunc(v, t)
    if dst.kind == "f":
        return builder.sitofp(v, t) if src.kind == "i" else builder.uitofp(v, t)
    if dst.itemsize == src.itemsize:
        return v
    if dst.itemsize < src.itemsize:
        return builder.trunc(v, t)
    return builder.sext(v, t) if src.kind == "i" else builder.zext(v, t)


def _row_pointer(context, builder, memo, arr, i, param):
    """The address of element ``e`` (C order) of row ``stack[j, i]``, of shape ``shape``
    (``param``: ``(j, e, shape)``), of the stack ``arr`` (an ``_ArrIn``, C-contiguous: a
    scan allocates its stacks; ``i`` in range: the scan's step).  The row's address is
    computed once per function (``memo``; it holds ``arr`` and ``i``, so their ids stay
    theirs), each element's is one ``gep`` from it."""
    j, e, shape = param
    key = ("row", id(arr), id(i), j)
    hit = memo.get(key)
    if hit is None:
        if arr.aty.layout != "C":
            raise TypeError(f"irblock: a stack of rows must be C-contiguous, got {arr.aty}")
        i64 = ir.IntType(64)
        steps = builder.extract_value(arr.ary._getvalue(), [5, 1])   # (shape[1])
        row = builder.add(builder.mul(ir.Constant(i64, j), steps), i)
        hit = memo[key] = (arr, i, builder.gep(arr.ary.data,
                                               [builder.mul(row, ir.Constant(i64, _size(shape)))]))
    return builder.gep(hit[2], [ir.Constant(ir.IntType(64), e)]) if e else hit[2]


_LOOP_INIT = {"dot": "add", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _loop_init(name, dt):
    """The start of a fold by ``name``: its identity, so the loop computes what the
    unrolled terms do (``max(-inf, t)`` is ``t`` with ``_extremum``'s NaN rule) -- but
    a sum starts at +0.0, as XLA's, NumPy's and the statements' reductions do: a sum
    of terms that are all -0.0 is +0.0 (the unrolled terms, from the first term, gave
    -0.0)."""
    op = _LOOP_INIT[name]
    if op == "add":
        v = 0
    elif op == "mul":
        v = 1
    elif dt.kind == "f":
        v = -np.inf if op == "max" else np.inf
    else:
        info = np.iinfo(dt)
        v = info.min if op == "max" else info.max
    return _llconst(v, dt)


def _loop_ir(context, builder, f, memo, dt, args, param):
    """Emit a loop node (``_loop``): returns its values, one per output element.

    The step ``c`` runs from 0 to ``steps``; each output element keeps its
    accumulator in a register (a phi).  Operands passed as values are stored once
    in a stack buffer; an array in memory is read in place (C-contiguous: an element
    offset, else the array's strides).  The loop carries ``llvm.loop.unroll.disable``:
    unrolled by LLVM, its buffers would become scalars again, and so would the code
    size this form avoids."""
    name, n_out, steps, specs = param
    i64 = ir.IntType(64)
    T = _lltype(dt)
    nbt_dt = _nbtype(dt)

    def const(v):
        return ir.Constant(i64, int(v))

    readers = []        # per operand: (per output, a key), and a function (key, c) -> value
    for spec in specs:
        if spec[0] == "vals":
            _, first, count, starts, inner = spec
            buf = cgutils.alloca_once(builder, T, size=count)
            for k in range(count):
                builder.store(args[first + k], builder.gep(buf, [const(k)]))

            def read_buffer(key, c, buf=buf, inner=inner, base=[]):  # noqa: B006 - (one per operand)
                return builder.load(_step_pointer(builder, base, buf, c, inner, key))
            readers.append((list(starts), read_buffer))
            continue
        _, pos, src_str, shape, starts, axes = spec
        arr = args[pos]
        src = np.dtype(src_str)
        cast = (lambda v: v) if src == dt else \
            (lambda v, s=_nbtype(src): context.cast(builder, v, s, nbt_dt))
        data = arr.ary.data
        if arr.aty.layout == "C":
            inner = _size(shape[axes[-1] + 1:])

            def read_c(key, c, data=data, inner=inner, cast=cast, base=[]):  # noqa: B006
                return cast(builder.load(_step_pointer(builder, base, data, c, inner, key)))
            readers.append(([_ravel(s, shape) for s in starts], read_c))
            continue
        strides = cgutils.unpack_tuple(builder, arr.ary.strides)
        bases = {}
        keys = []
        for s in starts:        # the byte offsets of the starting elements, once
            if s not in bases:
                off = const(0)
                for d, v in enumerate(s):
                    if v:
                        off = builder.add(off, builder.mul(strides[d], const(v)))
                bases[s] = off
            keys.append(s)
        sizes = [shape[a] for a in axes]

        def read_strided(key, c, data=data, strides=strides, bases=bases, axes=axes, sizes=sizes,
                         cast=cast):
            off, rest = bases[key], c
            for a, n in zip(reversed(axes), reversed(sizes)):
                ia = builder.urem(rest, const(n)) if len(axes) > 1 else rest
                off = builder.add(off, builder.mul(ia, strides[a]))
                if len(axes) > 1:
                    rest = builder.udiv(rest, const(n))
            ptr = cgutils.pointer_add(builder, data, off)
            return cast(builder.load(ptr))
        readers.append((keys, read_strided))

    pre, body, end, c = reroll.loop_head(builder, "tangentia.loop")
    init = _loop_init(name, dt)
    accs = []
    for _ in range(n_out):
        p = builder.phi(T)
        p.add_incoming(init, pre)
        accs.append(p)
    loaded = [{} for _ in readers]
    new = []
    for o in range(n_out):
        terms = []
        for (keys, read), cache in zip(readers, loaded):
            key = keys[o]
            v = cache.get(key)
            if v is None:
                v = cache[key] = read(key, c)
            terms.append(v)
        if name == "dot":
            t = _OP_IR["mul"](context, builder, f, memo, dt, terms, dt)
            new.append(_OP_IR["add"](context, builder, f, memo, dt, [accs[o], t], dt))
        else:
            new.append(_OP_IR[name](context, builder, f, memo, dt, [accs[o], terms[0]], dt))
    nxt = builder.add(c, const(1))
    last = builder.block
    c.add_incoming(nxt, last)
    for p, v in zip(accs, new):
        p.add_incoming(v, last)
    br = builder.cbranch(builder.icmp_unsigned("<", nxt, const(steps)), body, end)
    br.set_metadata("llvm.loop", _no_unroll(builder.module))
    builder.position_at_end(end)
    return new


def _step_pointer(builder, base, data, c, inner, key):
    """The address of element ``c * inner + key`` of ``data``: ``c * inner`` computed once
    per loop and operand (``base``, a list holding it once made), then one ``gep`` per
    element (8 outputs of an 8x8 product: 16 instructions instead of 32)."""
    if not base:
        step = c if inner == 1 else builder.mul(c, ir.Constant(c.type, inner))
        base.append(builder.gep(data, [step]))
    return builder.gep(base[0], [ir.Constant(c.type, key)]) if key else base[0]


def _no_unroll(module):
    """A new loop id (``!{self, !{"llvm.loop.unroll.disable"}}``) of ``module``."""
    opt = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    md = ir.values.MDValue(module, [opt], name=str(len(module.metadata)))
    md.operands = (md, opt)
    return md


def _cast_ir(context, builder, v, src, dst):
    if dst.kind == "b":     # (the generator's ``(x != 0)``)
        if src.kind == "f":
            return builder.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return builder.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
    return context.cast(builder, v, _nbtype(src), _nbtype(dst))


def _arith(fop, iop):
    def emit(context, builder, f, memo, dt, a, in_dt):
        return getattr(builder, fop if dt.kind == "f" else iop)(a[0], a[1])
    return emit


def _neg(context, builder, f, memo, dt, a, in_dt):
    if dt.kind == "f":
        from numba.cpython import mathimpl
        return mathimpl.negate_real(builder, a[0])
    return builder.neg(a[0])


def _extremum(cmp):
    def emit(context, builder, f, memo, dt, a, in_dt):
        x, y = a
        if dt.kind == "f":      # (``helpers._fmax``: NaN propagates, -0.0 below 0.0, as JAX's)
            p = builder.or_(builder.fcmp_ordered(cmp, x, y), builder.fcmp_unordered("uno", x, x))
            it = ir.IntType(dt.itemsize * 8)
            if isinstance(x.type, ir.VectorType):       # (``_emit_lanes``)
                it = ir.VectorType(it, x.type.count)
            bits = builder.bitcast(y if cmp == ">" else x, it)
            p = builder.or_(p, builder.and_(builder.fcmp_ordered("==", x, y), builder.icmp_signed(
                "<", bits, ir.Constant(bits.type, 0))))
        elif dt.kind == "i":
            p = builder.icmp_signed(cmp, x, y)
        else:
            p = builder.icmp_unsigned(cmp, x, y)
        return builder.select(p, x, y)
    return emit


def _compare(cmp):
    def emit(context, builder, f, memo, dt, a, in_dt):
        x, y = a
        if in_dt.kind == "f":
            return (builder.fcmp_unordered if cmp == "!=" else builder.fcmp_ordered)(cmp, x, y)
        if in_dt.kind == "i":
            return builder.icmp_signed(cmp, x, y)
        return builder.icmp_unsigned(cmp, x, y)
    return emit


def _select(context, builder, f, memo, dt, a, in_dt):
    return builder.select(a[0], a[1], a[2])


def _unary_fn(ir_fn):
    def emit(context, builder, f, memo, dt, a, in_dt):
        x = a[0]
        if dt.itemsize == 8:
            return ir_fn(f, x)
        return builder.fptrunc(ir_fn(f, builder.fpext(x, ir.DoubleType())), x.type)
    return emit


def _numba_impl(key):
    """numba's own lowering of ``key`` (``math.sqrt``, ``operator.pow``, ``abs``, ...)
    on operands of the first operand's type."""
    def emit(context, builder, f, memo, dt, a, in_dt):
        ty, res = _nbtype(in_dt), _nbtype(dt)
        mk = (key, ty, res, len(a))
        impl = memo.get(mk)
        if impl is None:
            impl = memo[mk] = context.get_function(key, signature(res, *([ty] * len(a))))
        return impl(builder, a)
    return emit


def _logic(name):
    """``&``, ``|``, ``^`` and ``~`` (``not`` of a boolean) of booleans or integers."""
    def emit(context, builder, f, memo, dt, a, in_dt):
        if name == "not":
            return builder.not_(a[0])
        return getattr(builder, name if name == "xor" else name + "_")(a[0], a[1])
    return emit



_OP_IR = {
    "add": _arith("fadd", "add"), "sub": _arith("fsub", "sub"), "mul": _arith("fmul", "mul"),
    "div": _arith("fdiv", "sdiv"), "neg": _neg,
    "max": _extremum(">"), "min": _extremum("<"),
    **{name: _compare(c) for name, c in _COMPARE.items()},
    "and": _logic("and"), "or": _logic("or"), "not": _logic("not"), "xor": _logic("xor"),
    "band": _logic("and"), "bor": _logic("or"), "bxor": _logic("xor"), "bnot": _logic("not"),
    "select": _select,
    "sqrt": _numba_impl(math.sqrt), "abs": _numba_impl(abs),
    **{name: _numba_impl(fn) for name, (_, fn, _) in _CALLS.items()},
    **{name: _unary_fn(fn) for name, fn in vecmath.SCALAR_IR.items()},
    **{name: _unary_fn(fn) for name, fn in vecmath_trig.SCALAR_IR.items()},
}


# what ``reroll.emit`` emits with (it imports nothing of this module)
_ROLL_OPS = reroll.Ops(_value, _emit_nodes, _emit_lanes, _no_unroll, _Lazy, _ArrIn, _View, SPLIT_NODES)
