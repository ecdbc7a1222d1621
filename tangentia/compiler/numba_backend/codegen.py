"""Code generation for the numba backend: value representations and the
generator that walks a program's equations (the lowering rules are in
``rules``)."""
from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
import weakref

import numpy as np

import numba
from numba import types as nbt

from ...core import CustomVmapCallPrimitive, Eqn, Jaxpr, Literal, ProgramMemo, ShapedArray, Var, subjaxprs
from ...core import eval_primitive
from ...custom_derivatives import _base as CD
from ...interpreters import ad
from ...primitives import call as CL, callback, elementwise as E, indexing as I, remat
from . import plan as _plan
from .alloc import array_of
from .memo import Counts
from .plan import BLAS_MIN_FLOPS, Settings, program_plan  # noqa: F401 - (BLAS_MIN_FLOPS: read from here too)
from .rowio import copy_into, load_row, nest, read_elements, row_load_p, row_store_p, store_row, view_at

SMALL = 16          # values with at most this many elements are scalarized
UNROLL = 64         # values with at most this many elements computed from scalarized ones
                    # are written by unrolled code (no temporary arrays for the operands)


class Unsupported(Exception):
    """Raised while generating code for a program numba cannot run."""


# ---------------------------------------------------------------------------
# Scalar helpers called from generated code (NumPy's semantics)


# ---------------------------------------------------------------------------
# Dtypes and literals

_B, _I8, _F8, _F4 = np.dtype(bool), np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.float32)
_NATURAL = (_B, _I8, _F8)   # numba computes in these without explicit casts


def _check_dtype(dtype):
    if _is_float0(dtype):
        return
    if dtype.kind not in "biufc" or dtype.itemsize > 16 or (dtype.kind in "biu" and dtype.itemsize > 8) \
            or (dtype.kind == "f" and not 4 <= dtype.itemsize <= 8) or (dtype.kind == "c" and dtype.itemsize < 8):
        raise Unsupported(f"dtype {dtype} is not supported by the numba backend")


def _dt(dtype):
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def _nbtype(dtype):
    return numba.from_dtype(dtype)


def _wrap(expr, dtype):
    """``expr`` made to have numba type ``dtype`` (for dtypes numba's arithmetic changes)."""
    return expr if dtype in _NATURAL else f"{_dt(dtype)}({expr})"


def _cast(expr, src, dst):
    if src == dst:
        return expr
    if _is_number(expr) or expr in ("True", "False"):
        return _lit(expr == "True" if expr in ("True", "False") else float(expr) if src.kind == "f" else int(expr), dst)
    if dst.kind == "b":
        return f"({expr} != 0)"
    if src.kind == "c" and dst.kind != "c":
        return f"{_dt(dst)}(({expr}).real)"   # NumPy's cast: the real part
    return f"{_dt(dst)}({expr})"


def _lit(val, dtype):
    v = np.asarray(val).astype(dtype).item()
    if dtype.kind == "b":
        return "True" if v else "False"
    if dtype.kind in "iu":
        s = str(int(v))
    elif dtype.kind == "c":
        s = f"complex({_float_lit(v.real)}, {_float_lit(v.imag)})"
    else:
        s = _float_lit(v)
    if s.startswith("-"):
        s = f"({s})"
    return s if dtype in _NATURAL else f"{_dt(dtype)}({s})"


def _float_lit(v):
    v = float(v)
    if math.isnan(v):
        return "np.nan"
    if math.isinf(v):
        return "np.inf" if v > 0 else "(-np.inf)"
    return repr(v)


def _typed(expr, dtype):
    """A literal integer or boolean made a typed value (numba gives literals their own
    types, so a variable first assigned one would be typed twice)."""
    if dtype.kind in "biu" and not expr.isidentifier() and dtype in _NATURAL and not _is_item(expr):
        return f"{_dt(dtype)}({expr})"
    return expr


def _is_atom(expr):
    return expr.isidentifier() or expr in ("True", "False") or _is_number(expr)


_ITEM = re.compile(r"(ct\d+)\[(\d+)\]$")
_REF = re.compile(r"\b(ct\d+)\[")


def _is_item(expr):
    """Whether ``expr`` reads an element of a carry tuple (``_Gen.from_names``): such a
    read is left where it is used (not named: ``_Gen.named``), and is typed already
    (``_typed``: the tuple holds typed values)."""
    return _ITEM.match(expr) is not None


def _is_number(expr):
    try:
        float(expr)
        return True
    except ValueError:
        return False


def _ravel(idx, shape):
    k = 0
    for i, d in zip(idx, shape):
        k = k * d + i
    return k


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _shape_str(shape):
    return "(" + "".join(f"{d}, " for d in shape).rstrip() + ")" if len(shape) != 1 else f"({shape[0]},)"


def _bidx(idx, in_shape, out_shape):
    """Index of a broadcast operand of shape ``in_shape`` at output index ``idx``."""
    k = len(out_shape) - len(in_shape)
    return tuple(0 if d == 1 else idx[k + j] for j, d in enumerate(in_shape))


# ---------------------------------------------------------------------------
# Value representations


class SV:
    """A scalarized value: one scalar expression per element (C order)."""

    __slots__ = ("shape", "dtype", "elems", "arr")

    def __init__(self, shape, dtype, elems):
        self.shape, self.dtype, self.elems, self.arr = tuple(shape), dtype, elems, None


class AV:
    """A C-contiguous array held in a variable (or an indexing expression of one)."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype, name):
        self.shape, self.dtype, self.name = tuple(shape), dtype, name


class LV:
    """A lazy value: ``fn(index) -> element expression``, computed where it is used.
    ``static``: the index must be constant (it reads scalarized operands), so the
    value is written by unrolled code, never by a loop (``UNROLL`` elements at most)."""

    __slots__ = ("shape", "dtype", "fn", "static")

    def __init__(self, shape, dtype, fn, static=False):
        self.shape, self.dtype, self.fn, self.static = tuple(shape), dtype, fn, static


def needs_static(v):
    """Whether element access to ``v`` needs constant indices (else: an array first)."""
    return (type(v) is SV and len(v.shape) > 0) or (type(v) is LV and v.static)


class ZV:
    """A ``float0`` value (the tangent type of integers): it holds no data, so it
    is never computed or stored; program outputs of this type are made outside numba."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


class CT:
    """Elements ``offset...`` of a tuple variable holding scalarized values across
    blocks (see ``_Gen.fresh_vars``)."""

    __slots__ = ("name", "offset")

    def __init__(self, name, offset=0):
        self.name, self.offset = name, offset


def _is_float0(dtype):
    return dtype.kind == "V" and dtype.itemsize == 0   # (bfloat16 is kind V too, 2 bytes)




# ---------------------------------------------------------------------------
# The code generator

# Loop bodies and branches costing at least this many scalar operations
# (``plan.code_cost``) become separate njit functions (unless they are compile units:
# the outlining pass, ``plan.call_plan``, decides; ``native`` reads this setting once
# per compile into the ``plan.Settings``): numba's compile time grows much faster than
# linearly with function size -- above all its SSA passes (``reconstruct_ssa``,
# ``strip_phis``), which revisit the whole function for every variable assigned more
# than once, i.e. every scalarized loop carry -- but each function also costs ~0.1 s.  Cost, not equation count, decides, so a batched
# body (whose scalarized values have 8x the elements) is outlined while the same
# unbatched body stays inline.
OUTLINE_MIN_COST = 1500
# A chain of fused operations longer than this is materialized (its element
# expression is built recursively, and numba types one huge expression slowly).
MAX_FUSED = 32
# Loops and branches whose scalarized carries have more elements than this hold
# each in its own tuple; fewer share tuples (``_Gen.fresh_vars``).
CARRY_SCALARS = 64
# Elements of one such tuple at most: CPython builds longer tuple displays from a list,
# which numba cannot do for a variable assigned more than once.
TUPLE_MAX = 16


def _nested(eqn):
    """The programs ``eqn`` carries (as its primitive declares them)."""
    return subjaxprs(eqn.prim, eqn.params)


# -- repeated segments ---------------------------------------------------------
#
# A program written as a Python loop over layers (``for W, b, a in params: h = h + a *
# tanh(h @ W + b)``, and its transposition in ``grad``) repeats the same equations on
# arrays copy after copy.  Inline, each copy is a few row loops and contractions for numba
# to type, analyse and lower, and numba's analyses (variable lifetimes, scopes) grow with
# the function's blocks times its variables: jit(grad) of a 30-layer residual MLP (16x16,
# batch 8) took 126 s CPU, 278 ms per equation.  ``repeated_segments`` finds runs of at
# least ``SEG_MIN_COPIES`` copies of a period of equations whose copies have the same
# structure (primitives, parameters, types, which copy-local value each input reads, which
# values are read after the copy), mostly on arrays (values of more than ``limit``
# elements: the scalarized ones are IR blocks' work, rolled by ``reroll``); each copy is
# then emitted as a call of one outlined njit function per structure (``_Gen.outlined``),
# which numba compiles once.  The operations and their order are the copy's own, so the
# numbers are the same bit for bit.  ``TANGENTIA_NUMBA_SEGMENTS=0`` turns it off.
SEG_MIN_COPIES = 3
SEG_MIN_PERIOD = 3
_SEG_NEXT = 8          # a signature's next occurrences whose distances are tried as periods
SEG_STATS = Counts("copies", "loops")   # copies emitted as calls, and loops of them, in this process (thread-safe)


def segments_enabled():
    return os.environ.get("TANGENTIA_NUMBA_SEGMENTS", "1") != "0"


def _param_key(v):
    """A parameter as part of a key: by value where its value is plain (numbers, strings,
    dtypes, arrays, tuples of them), else the object itself where it is hashable and
    compares by ``==`` (its class says what is equal), else its identity."""
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_param_key(x) for x in v)
    if v is None or v is Ellipsis or isinstance(v, (bool, int, float, complex, str, np.generic,
                                                    np.dtype)):
        return (type(v).__name__, repr(v))
    if isinstance(v, slice):
        return ("slice", _param_key(v.start), _param_key(v.stop), _param_key(v.step))
    try:
        hash(v)
        if (v == v) is True:
            return ("obj", type(v), v)
    except Exception:
        pass
    return ("id", id(v))


def _aval_key(aval):
    return (type(aval).__name__, tuple(aval.shape), str(aval.dtype), getattr(aval, "weak_type", None))


def _liftable(a):
    """Whether the input ``a`` is a literal a segment may take as a parameter: an integer
    scalar (an offset, ``i + k`` in copy k of a Python loop), computed the same way
    whether it is a constant or a variable (no rule folds an integer literal into
    another operation)."""
    return type(a) is Literal and a.aval.dtype.kind in "iu" and not a.aval.shape


def _seg_sig(eqn):
    """An equation's structure without its variables (None: never in a segment); an
    integer literal (``_liftable``) by its type alone (``repeated_segments`` tells the
    copies' literals apart)."""
    if eqn.prim.has_effects or list(_nested(eqn)) or eqn.prim in _CALL_BODIES \
            or type(eqn.prim) in _CALL_BODIES:
        return None
    try:
        params = tuple(sorted((k, _param_key(v)) for k, v in eqn.params.items()))
        ins = tuple(("ilit", _aval_key(a.aval)) if _liftable(a)
                    else ("lit", _param_key(a.val), _aval_key(a.aval)) if type(a) is Literal
                    else _aval_key(a.aval) for a in eqn.inputs)
        sig = (eqn.prim, params, ins, tuple(_aval_key(v.aval) for v in eqn.outputs))
        hash(sig)
    except Exception:
        return None
    return sig


def repeated_segments(eqns, outvars, consumers, limit, rules=None):
    """``{start: (period, jaxpr, key, args)}``: the copies of repeated runs in ``eqns`` (a
    program's equations in order, ``consumers`` their readers, None for the program's
    outputs) to emit as calls of one function per ``key``, each copy the program
    ``jaxpr`` of the equations ``start .. start + period - 1`` (its inputs: the values
    it reads from before, in order of first use, and the integer literals that differ
    from copy to copy; its outputs: its values read after it), called with ``args`` (the
    values and literals its inputs stand for).  ``rules``: the generator's lowering
    rules (a copy of scalarized equations is taken if one of them is a call that ends
    an IR block: ``_calls_out``)."""
    n = len(eqns)
    out = {}
    if n < SEG_MIN_COPIES * SEG_MIN_PERIOD:
        return out
    table, sigs, full = {}, [], []
    for e in eqns:
        sg = _seg_sig(e)
        full.append(sg)
        sigs.append(-1 if sg is None else table.setdefault(sg, len(table)))
    if len(table) * 2 > n:
        return out
    nxt, last = [n] * n, {}
    for i in range(n - 1, -1, -1):
        if sigs[i] >= 0:
            nxt[i] = last.get(sigs[i], n)
            last[sigs[i]] = i
    pos = {id(e): i for i, e in enumerate(eqns)}
    budget = 64 * n + 1000       # comparisons: the search stays linear in the program
    k = 0
    while k < n and budget > 0:
        best = None
        j, tried = nxt[k] if sigs[k] >= 0 else n, 0
        while j < n and tried < _SEG_NEXT and budget > 0:
            d, tried = j - k, tried + 1
            if d >= SEG_MIN_PERIOD:
                m = 0
                while k + d + m < n and sigs[k + m] >= 0 and sigs[k + m] == sigs[k + d + m]:
                    m += 1
                budget -= m + 1
                copies = 1 + m // d
                if copies >= SEG_MIN_COPIES and (best is None or copies * d > best[0] * best[1]):
                    best = (copies, d, m)
            j = nxt[j]
        if best is None:
            k += 1
            continue
        copies, d, m = best
        p = _phase(eqns, k, d, d + m, pos, consumers, n)
        budget -= 3 * d
        if p:
            k += p
            copies = (d + m - p) // d
        # (the integer literals that differ between the copies: parameters of the copy)
        vary = set()
        for li in range(d):
            for ai, a in enumerate(eqns[k + li].inputs):
                if _liftable(a) and any(
                        eqns[k + c * d + li].inputs[ai].val != a.val for c in range(1, copies)):
                    vary.add((li, ai))
        found = []
        for c in range(copies):
            s = k + c * d
            found.append(_segment(eqns, s, d, pos, consumers, limit, full, vary, rules))
        counts = {}
        for f in found:
            if f is not None:
                counts[f[1]] = counts.get(f[1], 0) + 1
        for c, f in enumerate(found):
            if f is not None and counts[f[1]] >= SEG_MIN_COPIES:
                out[k + c * d] = (d, f[0], f[1], f[2])
        k += copies * d
    return out


_PHASE_NAMES = 16      # equations of a rotation compared to tell tied rotations apart


def _phase(eqns, k, d, length, pos, consumers, n):
    """Where in the periodic stretch ``eqns[k:k + length]`` (period ``d``) its copies start:
    the offset ``p < d`` that fits the most copies, among those the rotation of the period
    that the fewest values cross from a copy to the next, then the rotation first by its
    equations' primitives and types.  These are properties of the period (and of how many
    copies fit), not of where the stretch begins, so the copies and their unit stay the
    same when an edit outside the stretch puts an equation of the period's kind before it:
    an edited loss (``mean(h ** 2) + 0.1 * mean(h)``) makes ``grad``'s first cotangent an
    ``add_any`` of two, and the greedy start (``p = 0``) began the backward copies one
    equation earlier, a unit of another structure compiled again instead of loaded."""
    if length < 3 * d:
        return 0
    # a value made at i and last read at r crosses the boundaries b of i < b <= min(r, i + d)
    # (copies of the period: measured at the boundaries k + d .. k + 2d - 1, between full copies)
    lo, hi = k + d, k + 2 * d
    diff = [0] * (d + 1)
    for i in range(k, hi):
        for v in eqns[i].outputs:
            r = i
            for u in consumers.get(v, ()):
                r = max(r, n if u is None else pos.get(id(u), n))
            a, b = max(i + 1, lo), min(r, i + d, hi - 1)
            if a <= b:
                diff[a - lo] += 1
                diff[b - lo + 1] -= 1
    cross, c = [], 0
    for t in range(d):
        c += diff[t]
        cross.append(c)
    names = [repr((e.prim.name, tuple(_aval_key(a.aval) for a in e.inputs),
                   tuple(_aval_key(v.aval) for v in e.outputs))) for e in eqns[k:k + d]]
    w = min(d, _PHASE_NAMES)
    best = None
    for p in range(d):
        cand = (-((length - p) // d), cross[p], tuple(names[(p + t) % d] for t in range(w)), p)
        if best is None or cand[:3] < best[:3]:
            best = cand
    return best[3]


def _segments_of(eqns, outvars, consumers, limit, rules, wide_from, inline=None):
    """``(eqns, segments, wide_from, consumers)``: ``repeated_segments`` of a program's equations
    found with its row loads set aside (``rowio.row_load_p``: a scan body's reads of the
    residual rows an earlier scan stored, one row per copy, ``params["j"]`` its own), and
    the equations in the order they are emitted: each copy's row loads moved before it
    (a row load reads only the stack and the step, so it may run earlier), its rows
    inputs of the copy.  ``wide_from`` (``plan.Plan.wide_from``) follows the order."""
    if not any(e.prim is row_load_p for e in eqns):
        segs = repeated_segments(eqns, outvars, consumers, limit, rules)
        if inline is not None and _covered(segs, len(eqns)) < 0.9:
            # (copies whose index arithmetic common-subexpression elimination shared: copy
            # k's offset ``(i + 2k) % n`` is copy 2k's ``(i + k') % n``.  Found without the
            # split, such copies were pairs of different structures (the odd offsets
            # computed, the even ones read from an earlier copy), each reading a value of
            # the copy before the last: no run of them was a loop)
            split = _split_scalars(eqns, outvars, inline)
            if split is not None:
                users = _users(split, outvars)
                found = repeated_segments(split, outvars, users, limit, rules)
                if found and _covered(found, len(split)) > _covered(segs, len(eqns)):
                    at = {id(e): k for k, e in enumerate(eqns)}
                    return split, found, _follow(split, at, wide_from), users
        return eqns, segs, wide_from, consumers
    rest = [e for e in eqns if e.prim is not row_load_p]
    segs = repeated_segments(rest, outvars, consumers, limit, rules)
    if not segs:
        return eqns, segs, wide_from, consumers
    before, pending = [], []    # per equation of ``rest``: the row loads just before it
    for e in eqns:
        if e.prim is row_load_p:
            pending.append(e)
        else:
            before.append(pending)
            pending = []
    order, moved, i = [], {}, 0
    while i < len(rest):
        seg = segs.get(i)
        if seg is None:
            order.extend(before[i])
            order.append(rest[i])
            i += 1
            continue
        for j in range(i, i + seg[0]):
            order.extend(before[j])
        moved[len(order)] = seg
        order.extend(rest[i:i + seg[0]])
        i += seg[0]
    order.extend(pending)
    return order, moved, _follow(order, {id(e): k for k, e in enumerate(eqns)}, wide_from), consumers


def _covered(segs, n):
    """The fraction of ``n`` equations in the copies ``segs`` (``repeated_segments``)."""
    return sum(d for d, *_ in segs.values()) / n if n else 0.0


def _follow(order, at, wide_from):
    """``plan.Plan.wide_from`` for the equations reordered (or added: never wide) as
    ``order`` (``at``: an equation's position in the plan's order)."""
    wide = [False] * (len(order) + 1)
    for k in range(len(order) - 1, -1, -1):
        p = at.get(id(order[k]))
        wide[k] = wide[k + 1] or (p is not None and wide_from[p])
    return wide


_users = _plan.consumers_of     # the consumers of each value (None: a program output)


_SPLIT_MAX = 16     # equations of a scalar's computation copied for one reader at most


def _split_scalars(eqns, outvars, inline):
    """``eqns`` with each integer or boolean scalar computed from scalars (index
    arithmetic: ``(i + k) % n`` clamped) computed again, by copies of its equations, for
    each reader after the first, or None if there is none to split.  Integer operations
    give the same values however often they run, and the IR blocks computing them are
    one LLVM function each, whose optimizer shares them again."""
    cheap = {}
    for e in eqns:
        if (len(e.outputs) == 1 and e.prim in inline and not e.prim.has_effects
                and not e.outputs[0].aval.shape and e.outputs[0].aval.dtype.kind in "biu"
                and all(not a.aval.shape for a in e.inputs)):
            cheap[e.outputs[0]] = e
    if not cheap:
        return None
    read, out, split = set(), [], False
    # (a value the program returns keeps its computation for that, and each scalar computed
    # from it takes a copy: a fori_loop's ``i + 1``, which copy 1's offset ``(i + 1) % n``
    # shares, is computed again in copy 1, which then has the structure of the others)
    returned = {v for v in outvars if type(v) is Var and v in cheap}

    def cone(v, acc, memo):
        w = memo.get(v)
        if w is not None:
            return w
        e = cheap[v]
        if len(acc) >= _SPLIT_MAX:
            raise OverflowError
        ins = [cone(a, acc, memo) if type(a) is Var and a in cheap else a for a in e.inputs]
        w = memo[v] = Var(v.aval)
        acc.append(Eqn(e.prim, ins, [w], e.params, e.source))
        return w
    def give(ins, ai, a):
        # ``ins[ai]`` reads its own copy of ``a``'s computation (False: too large to copy)
        acc = []
        try:
            ins[ai] = cone(a, acc, {})
        except OverflowError:
            return False
        out.extend(acc)
        return True
    for e in eqns:
        ins = list(e.inputs)
        if e.outputs and e.outputs[0] in cheap:
            # (a scalar's own computation is split only with its reader's)
            for ai, a in enumerate(ins):
                if type(a) is Var and a in returned and give(ins, ai, a):
                    split = True
            out.append(e if ins == list(e.inputs) else Eqn(e.prim, ins, e.outputs, e.params, e.source))
            continue
        for ai, a in enumerate(ins):
            if type(a) is not Var or a not in cheap:
                continue
            if a not in read:
                read.add(a)
                continue
            if give(ins, ai, a):
                split = True
        out.append(e if ins == list(e.inputs) else Eqn(e.prim, ins, e.outputs, e.params, e.source))
    return out if split else None


def _calls_out(eqn, rules):
    """Whether ``eqn`` is emitted as a call that no IR block takes (a kernel: a gather or
    scatter at index arrays, a primitive without a lowering rule), so that a copy of
    scalarized equations holding it is not one block but several, with calls between."""
    if eqn.prim is I.getitem_p or eqn.prim is I.scatter_p:
        idx = eqn.inputs[1 if eqn.prim is I.getitem_p else 2:]
        return any(type(a) is not Literal and len(a.aval.shape) > 0 for a in idx)
    return rules is not None and rules.get(eqn.prim) is None and rules.get(type(eqn.prim)) is None


def _segment(eqns, s, d, pos, consumers, limit, sigs, vary=(), rules=None):
    """``(jaxpr, key, args)`` of the copy ``eqns[s:s + d]`` (``repeated_segments``; its
    literals at the positions ``vary``, ``(equation, input)``, made inputs), or None if
    most of its equations are on scalarized values and none of them calls out of the IR
    blocks (``_calls_out``): those are the blocks' work (rolled by ``reroll``)."""
    body = eqns[s:s + d]
    if 2 * sum(any(_size(v.aval.shape) > limit for v in e.outputs) for e in body) < d \
            and not any(_calls_out(e, rules) for e in body):
        return None
    if vary:
        lifted = {}     # fresh variable -> the literal it stands for
        new = []
        for li, e in enumerate(body):
            ins = list(e.inputs)
            for ai, a in enumerate(ins):
                if (li, ai) in vary:
                    ins[ai] = Var(a.aval)
                    lifted[ins[ai]] = a
            new.append(Eqn(e.prim, ins, e.outputs, e.params, e.source) if ins != e.inputs else e)
        body = new
    local, ext, ext_ix, ins_key, outvars, out_key, fixed = {}, [], {}, [], [], [], []
    for li, e in enumerate(body):
        for ai, a in enumerate(e.inputs):
            if type(a) is Literal:
                ins_key.append(None)
                if _liftable(a):
                    fixed.append((li, ai, int(a.val)))
            elif a in local:
                ins_key.append(local[a])
            else:
                if a not in ext_ix:
                    ext_ix[a] = len(ext)
                    ext.append(a)
                ins_key.append(("x", ext_ix[a]))
        for oi, v in enumerate(e.outputs):
            local[v] = (li, oi)
    for e in body:
        for v in e.outputs:
            users = consumers.get(v, ())
            if any(u is None or not s <= pos.get(id(u), -1) < s + d for u in users):
                outvars.append(v)
                out_key.append(local[v])
    if not outvars:
        return None
    # (the signatures themselves, not this program's numbering of them: one generator's
    # outlined functions are shared by all the programs it lowers, nested ones included)
    key = (tuple(sigs[s:s + d]), tuple(ins_key), tuple(out_key), tuple(fixed))
    args = [lifted.get(a, a) for a in ext] if vary else ext
    return Jaxpr([], ext, body, outvars), key, args


# -- a run of copies as one loop --------------------------------------------------
#
# Consecutive copies of one segment (a network's layers, their transposed copies in
# ``grad``) were each a call of the segment's unit with that copy's own arguments: the
# caller's source, numba's typing and lowering of it, and LLVM's work over it grew with the
# number of copies (jit(grad) of a 100-layer residual MLP: 17 s, most of it LLVM over the
# caller and its wrapper).  ``_Gen.run_plans`` finds the runs whose copies' inputs are
# each, from copy to copy, the same value, an integer literal at a constant step, the
# previous copy's output (a carry), a row of an earlier run's stack at a constant step
# (the forward pass's values read by the backward pass), or an input packed in a buffer
# at a constant stride (a params list's matrices, biases and gains); ``_Gen.emit_run``
# emits such a run as one loop calling the unit once per copy, the outputs read after
# the run written into stacks (one array per output, a row per copy).  A program
# output that is a stack's row is returned as a view of the stack, which the program
# returns once (``_Gen.returned``, ``objcache.runner``'s ``split``): numba's code for a
# returned tuple grows faster than linearly with its length (300 arrays: 5-50 s).  The
# operations are the copies' own, in their order: the numbers are the same bit for bit.
# ``TANGENTIA_NUMBA_SEG_LOOPS=0`` turns it off.
SEG_LOOP_MIN = 2    # consecutive copies emitted as one loop, at least
_RUN_SEGMENT_MIN = 8    # elements of a copy's packed inputs passed to its unit as one view


def seg_loops_enabled():
    return os.environ.get("TANGENTIA_NUMBA_SEG_LOOPS", "1") != "0"


class RV:
    """A program output that is row ``row`` of the stack named ``stack`` (see above)."""

    __slots__ = ("shape", "dtype", "stack", "row")

    def __init__(self, shape, dtype, stack, row):
        self.shape, self.dtype, self.stack, self.row = tuple(shape), dtype, stack, row


class _Run:
    """A run of ``k`` consecutive copies (``subs``, ``args``: each copy's program and
    arguments; ``starts``: where each begins, the equations between two copies, if any,
    row loads of a scan body's stacks) emitted as one loop: ``ins`` per input, how it is
    read (``("same",)``, ``("lit", first, step)``, ``("carry", q)``, ``("stack", run, q,
    first, step)``, ``("packed", buffer, first offset, stride)``, ``("tuple",)``: arrays
    of the program, one per copy, in a tuple indexed by the copy; ``("address", function,
    table, first, stride)``: arrays the program takes by address (``native._addressed``),
    ``function(table, first + stride * copy)``; ``("rowld", stack,
    step, first, stride)``: the row ``stack[first + stride * copy, step]`` a scan body
    loads, ``rowio.row_load_p``); ``stacked``: the outputs written into stacks;
    ``names``: their stacks' names once emitted; ``stores``: per output written by the
    body into a row of a scan's stack (``rowio.row_store_p``), ``(stack, step, first,
    stride)``, as ``rowld``; ``absorbed``: the row loads and stores the loop does."""

    __slots__ = ("start", "k", "d", "key", "subs", "args", "ins", "stacked", "names",
                 "readers", "starts", "stores", "absorbed")

    def __init__(self, starts, d, key, subs, args):
        self.start, self.k, self.d, self.key, self.subs, self.args = starts[0], len(starts), d, key, subs, args
        self.starts = starts
        self.ins, self.stacked, self.names, self.readers = [], set(), {}, {}
        self.stores, self.absorbed = {}, []


def _same_arg(a, b):
    return a is b or (type(a) is Literal and type(b) is Literal and a.aval == b.aval
                      and type(a.val) is type(b.val) and a.val == b.val)


def _affine(xs):
    """``(first, step)`` if the integers ``xs`` step evenly, else None."""
    step = xs[1] - xs[0]
    return (xs[0], step) if all(x == xs[0] + c * step for c, x in enumerate(xs)) else None


_WEIGHT = ProgramMemo("numba backend: equations, nested ones included")


def _absorb(eqns, segs, runs, wide_from):
    """``(eqns, segs, runs, wide_from)`` without the row loads and stores the runs'
    loops do (``_Run.absorbed``), positions renumbered: a run's copies are then
    consecutive."""
    drop = {id(e) for r in runs.values() for e in r.absorbed}
    new_at, out, wide = [], [], []
    for i, e in enumerate(eqns):
        new_at.append(len(out))
        if id(e) not in drop:
            out.append(e)
            wide.append(wide_from[i])
    wide.extend(wide_from[len(eqns):])
    for r in runs.values():
        r.starts = [new_at[t] for t in r.starts]
        r.start = r.starts[0]
        assert r.starts[-1] - r.start == (r.k - 1) * r.d
    return (out, {new_at[t]: v for t, v in segs.items()}, {r.start: r for r in runs.values()},
            wide)


def _weight(jaxpr):
    """Number of equations of a program, nested programs included (memoized)."""
    w = _WEIGHT.get(jaxpr)
    if w is None:
        w = _WEIGHT.set(jaxpr, sum(1 + sum(_weight(q) for q in _nested(eqn))
                                   for eqn in jaxpr.eqns))
    return w


class _Gen:
    """Generates one program's source: ``lower_jaxpr`` emits the code of a
    program's equations into ``lines`` and returns its output values."""

    def __init__(self, rules, fusible, inline, rows=None, limit=SMALL, blocks=None, units=None,
                 settings=None, kernels=None):
        # rules: {primitive: rule} (``rules.RULES``: a primitive made above the backends
        # by its class, ``rules.rule_of``); fusible: the primitives of consumers that keep
        # a lazy operand lazy; inline: those of consumers that take single-use scalar
        # expressions inline; rows: {primitive: row rule} (``rules.ROWS``) for batched values;
        # limit: values of at most this many elements are scalarized;
        # blocks: ``lower_run(g, eqns, k, env, consumers) -> next k`` emitting runs of
        # scalarized equations as one call (``irblock``), or None;
        # units: ``lower(g, jaxpr, in_vals, ident=None) -> output values`` emitting a
        # nested program as a call of a separately compiled and cached unit (``native``;
        # ``ident``: what makes two programs one unit, default the program), or None;
        # settings: the ``plan.Settings`` the passes follow (by default: ``limit``,
        # ``OUTLINE_MIN_COST``, units if ``units`` is given, at ``native``'s threshold);
        # kernels: ``call(g, fn, argtys, args, prefix) -> expression`` calling a precompiled
        # kernel through its address (``native._kernel_call``), or None (``call_compiled``).
        if settings is None:
            settings = Settings(limit, OUTLINE_MIN_COST, None, blocks is not None)
        if units is None and settings.unit_min_cost is not None:
            settings = settings._replace(unit_min_cost=None)
        self.settings = settings
        limit = settings.limit
        self.rules, self.fusible, self.inline, self.limit = rules, fusible, inline, limit
        self.rows = rows or {}
        self.blocks = blocks
        self.lines = []
        self.depth = 1
        self.counter = itertools.count()
        self.globals = {}       # generated-name -> Python object (kernels, fallbacks, types)
        self.notes = []         # comments making the source (the cache key) unique
        self.objmode = False
        self.fallbacks = set()  # primitives with no native lowering (run in object mode)
        self.scopes = [0]
        self.scope_ids = itertools.count(1)
        self.functions = []     # sources of outlined bodies (see ``call_jaxpr``)
        self.helpers = {}       # (program, input representation) -> (name, output template)
        self.vector_loop = False  # lowering a loop body LLVM vectorizes (elementwise_loop, rows)
        self.in_rows = False    # lowering the equations of a row loop (``lower_rows``)
        self.units = units
        self.kernels = kernels
        self.deps = []          # the units this code calls, directly or not (``unit_ptr``)
        self.ptr_format = "_up[{}]"   # the expression of ``deps[k]``'s address
        self.plans = []         # the passes' plans of the programs being lowered (innermost last)
        self.tuple_lens = {}    # carry tuple name -> its number of elements
        self.stacked = {}       # name of a scan's ys in a stack -> (the stack's AV, its index)
        self.loop_bodies = 0    # loops around the code being lowered (``rules.loop_body``)
        self.loop_keys = {}     # per plan: its ``while`` loops' keys (``rules._repeated_loop``)
        self.loop_units = []    # the programs of ``while`` units, alive while generating
        self.split = False      # program outputs may be rows of stacks (``RV``: the program's own
                                # generator, whose caller splits them, ``returned``)

    def is_small(self, aval_or_shape):
        """Whether values of this shape are scalarized (``SV``)."""
        return _size(getattr(aval_or_shape, "shape", aval_or_shape)) <= self.limit

    # -- emission ---------------------------------------------------------
    def name(self, prefix="v"):
        return f"{prefix}{next(self.counter)}"

    def emit(self, line):
        self.lines.append("    " * self.depth + line)

    def push(self):
        self.depth += 1
        self.scopes.append(next(self.scope_ids))

    def pop(self):
        self.depth -= 1
        self.scopes.pop()

    def scalar(self, expr):
        """A name (or literal) holding the scalar ``expr``."""
        if _is_atom(expr):
            return expr
        n = self.name("s")
        self.emit(f"{n} = {expr}")
        return n

    def named(self, v):
        """``v`` with every element a name or literal (expressions are computed here)."""
        if type(v) is SV and not all(_is_atom(e) or _is_item(e) for e in v.elems):
            return SV(v.shape, v.dtype, [e if _is_item(e) else self.scalar(e) for e in v.elems])
        return v

    def packed(self, args):
        """``args`` (argument expressions, flattened by the callee: an IR block, a compile
        unit) with each run of all the elements of a carry tuple, in order, replaced by
        the tuple.  The while loop of ``jit(vmap(grad))`` of the pendulum's ODE carries
        432 scalars in 40 tuples: 864 of its 2,225 statements read them element by
        element (``s5 = ct3[0]``) before the calls took them back as tuples."""
        out, i = [], 0
        while i < len(args):
            m = _ITEM.match(args[i])
            if m is not None and m.group(2) == "0":
                t = m.group(1)
                n = self.tuple_lens.get(t)
                if n and args[i:i + n] == [f"{t}[{k}]" for k in range(n)]:
                    out.append(t)
                    i += n
                    continue
            out.append(args[i])
            i += 1
        return out

    def glob(self, obj, prefix):
        n = self.name(prefix)
        self.globals[n] = obj
        return n

    def call_compiled(self, fn, argtys, args, prefix="_k"):
        """The expression calling ``fn``, a precompiled numba function (``gemm._gemm``), on
        ``args`` (their source, comma-separated) of the numba types ``argtys``: through its
        address, as a compile unit is called (``kernels``: the program's module does not
        link the kernel's code, which LLVM would optimize again in every program calling
        it), else as a global."""
        if self.kernels is not None:
            return self.kernels(self, fn, tuple(argtys), args, prefix)
        name = self.glob(fn, prefix)
        self.notes.append(f"# {name}: {fn.py_func.__module__}.{fn.py_func.__qualname__}")
        return f"{name}({args})"

    def loops(self, shape):
        """Open a loop nest over ``shape``; returns the index expressions."""
        idx = []
        for d in shape:
            if d == 1:
                idx.append(0)
                continue
            i = self.name("i")
            self.emit(f"for {i} in range({d}):")
            self.push()
            idx.append(i)
        return idx

    def close(self, idx):
        for i in idx:
            if i != 0:
                self.pop()

    # -- element access and materialization -------------------------------
    def elem(self, v, idx):
        if type(v) is ZV:
            return "False"
        if type(v) is SV:
            if all(type(i) is int for i in idx):
                return v.elems[_ravel(idx, v.shape)]
            v = self.array(v)
        if type(v) is AV:
            return f"{v.name}[{', '.join(map(str, idx))}]" if idx else f"{v.name}[()]"
        return v.fn(tuple(idx))

    def array(self, v, dtype=None):
        """``v`` as an ``AV`` (a fresh or input C-contiguous array), cast to ``dtype``."""
        if dtype is not None and dtype != v.dtype:
            src = v
            v = LV(v.shape, dtype, lambda idx: _cast(self.elem(src, idx), src.dtype, dtype),
                   needs_static(src))
        if type(v) is AV:
            return v
        if type(v) is ZV:
            raise Unsupported("a float0 value is used as an array")
        if type(v) is SV and v.arr is not None and v.arr[0] in self.scopes:
            return v.arr[1]
        n = self.name("a")
        out = AV(v.shape, v.dtype, n)
        if type(v) is SV:
            # (a fresh array of its elements made by one call, ``alloc.array_of``: numba
            # types and lowers one statement, not one ``a[i, j] = e`` each, at ~2 ms of
            # compile per element stored, nor an allocation, a row store and a view)
            els = [_typed(e, v.dtype) for e in v.elems]
            make = array_of(v.shape, v.dtype)
            mk = self.glob(make, "_mk")
            self.notes.append(f"# {mk}: {make.__name__}")
            self.emit(f"{n} = {mk}({nest(self.packed(els))})")
            v.arr = (self.scopes[-1], out)
            return out
        self.emit(f"{n} = _empty({_shape_str(v.shape)}, {_dt(v.dtype)})")
        if v.static:
            for idx in np.ndindex(*v.shape):
                self.emit(f"{self.elem(out, idx)} = {v.fn(idx)}")
            return out
        idx = self.loops(v.shape)
        self.emit(f"{self.elem(out, idx)} = {v.fn(tuple(idx))}")
        self.close(idx)
        return out

    def small(self, v):
        """``v`` (of a small shape) as an ``SV``."""
        if type(v) is SV or type(v) is ZV:
            return v
        if type(v) is AV and _size(v.shape) > 1:
            # (an array's elements read by one call, ``rowio.read_elements``: numba types and
            # lowers one statement, not one ``s5 = a3[7]`` each, at ~5 ms of compile per
            # element; a kernel's small result, a program's small integer input)
            sv = SV(v.shape, v.dtype, read_elements(self, v.name, list(np.ndindex(*v.shape))))
            sv.arr = (self.scopes[-1], v)
            return sv
        sv = SV(v.shape, v.dtype, [self.scalar(self.elem(v, idx)) for idx in np.ndindex(*v.shape)])
        if type(v) is AV:
            sv.arr = (self.scopes[-1], v)
        return sv

    def settle(self, v):
        """The representation a value keeps once its block ends: SV if small, else AV."""
        if type(v) is ZV:
            return v
        return self.small(v) if self.is_small(v.shape) else self.array(v)

    def dynamic_ready(self, v):
        """``v`` ready for element access with loop indices (no SV with dimensions)."""
        return self.array(v) if needs_static(v) else v

    def assign(self, names, v):
        """Assign ``v`` to the variables ``names`` (from ``fresh_vars``: a list of
        scalar names or an array's name; ``assign_all`` writes tuples)."""
        if type(names) is list:
            v = self.small(v)
            for n, e in zip(names, v.elems):
                if n != e:
                    self.emit(f"{n} = {_typed(e, v.dtype)}")
        else:
            a = self.array(v)
            if a.name != names:
                self.emit(f"{names} = {a.name}")

    def fresh_vars(self, avals):
        """Variables to hold values of ``avals`` across blocks (loop carries, branch
        results): per value, a list of names (scalarized), a name (an array) or None
        (float0).  Scalarized values are held in tuples (``CT``): one variable
        assigned once per block, where separate names are one per element --
        numba's SSA reconstruction costs (variables assigned more than once) x
        (function size); pendulum gradient: 15% less compile time.  Up to
        ``CARRY_SCALARS`` elements in all share tuples of at most ``TUPLE_MAX``
        elements; past it each value of several elements is its own tuple (a batched
        state).  A single scalar stays a name.  A tuple's elements are not read into
        names (``from_names``): each is the expression ``ct5[k]`` where it is used,
        and a call taking all of a tuple's elements in order takes the tuple
        (``packed``)."""
        n = sum(_size(a.shape) for a in avals if not _is_float0(a.dtype) and self.is_small(a.shape))
        tuples = n > CARRY_SCALARS
        shared, offset = (self.tuple_name() if 1 < n <= CARRY_SCALARS else None), 0
        out = []
        for aval in avals:
            if _is_float0(aval.dtype):
                out.append(None)
                continue
            base = self.name("c")
            if not self.is_small(aval.shape):
                out.append(base)
            elif tuples and _size(aval.shape) > 1:
                out.append(CT("ct" + base[1:]))
            elif shared is not None:
                if offset + _size(aval.shape) > TUPLE_MAX:
                    shared, offset = self.tuple_name(), 0
                out.append(CT(shared, offset))
                offset += _size(aval.shape)
            else:
                out.append([f"{base}_{k}" for k in range(_size(aval.shape))])
        return out

    def tuple_name(self):
        """A fresh name of a tuple variable holding scalarized values (``CT``)."""
        return "ct" + self.name("c")[1:]

    def from_names(self, names, aval):
        if names is None:
            return ZV(aval.shape, aval.dtype)
        if type(names) is CT:
            return SV(aval.shape, aval.dtype, [f"{names.name}[{names.offset + k}]"
                                               for k in range(_size(aval.shape))])
        if type(names) is list:
            return SV(aval.shape, aval.dtype, list(names))
        return AV(aval.shape, aval.dtype, names)

    def assign_all(self, names_list, vals):
        """Simultaneous assignment of loop carries (sources may be other carries)."""
        keep = [n is not None for n in names_list]
        names_list = [n for n, k in zip(names_list, keep) if k]
        vals = [v for v, k in zip(vals, keep) if k]
        vals = [self.array(v) if type(n) is str else self.small(v) for n, v in zip(names_list, vals)]
        targets = set()
        # (a tuple given back its own elements, in order, is left as it is: a carry the
        # body passes through unchanged; the others are assigned after every read of them)
        own = {}
        for n, v in zip(names_list, vals):
            if type(n) is CT:
                own.setdefault(n.name, []).extend(v.elems)
        reassigned = {t for t, els in own.items() if self.tuple_lens.get(t) != len(els)
                      or els != [f"{t}[{k}]" for k in range(len(els))]}
        for n in names_list:
            if type(n) is not CT:   # (tuple elements are read into fresh names)
                targets.update(n if type(n) is list else [n])
        srcs = []
        for v in vals:
            if type(v) is SV:
                els = []
                for e in v.elems:
                    if not _is_atom(e) and any(t in reassigned for t in _REF.findall(e)):
                        e = self.scalar(e)      # (read before the tuple is assigned again)
                    if e in targets:
                        t = self.name("t")
                        self.emit(f"{t} = {e}")
                        e = t
                    els.append(e)
                srcs.append(SV(v.shape, v.dtype, els))
            else:
                if v.name in targets:
                    t = self.name("t")
                    self.emit(f"{t} = {v.name}")
                    v = AV(v.shape, v.dtype, t)
                srcs.append(v)
        tuples = {}   # tuple variable -> its elements
        for n, v in zip(names_list, srcs):
            if type(n) is CT:
                v = self.small(v)
                els = tuples.setdefault(n.name, [])
                assert len(els) == n.offset
                els.extend(_wrap(_typed(e, v.dtype), v.dtype) for e in v.elems)
            else:
                self.assign(n, v)
        for name, els in tuples.items():
            if name not in reassigned:
                continue
            self.tuple_lens[name] = len(els)
            items = self.packed(els)    # (a copy of a whole tuple: the tuple)
            self.emit(f"{name} = {items[0]}" if len(items) == 1 and items[0] != els[0]
                      else f"{name} = ({''.join(e + ', ' for e in els)})")

    def read(self, env, a):
        if type(a) is Literal:
            _check_dtype(a.aval.dtype)
            return SV((), a.aval.dtype, [_lit(a.val, a.aval.dtype)])
        return env[a]

    # -- programs ---------------------------------------------------------
    def lower_jaxpr(self, jaxpr, in_vals):
        plan = program_plan(jaxpr, self.settings, self.rows, self.fusible)   # (the passes: ``plan``)
        self.plans.append(plan)
        try:
            return self._lower_planned(jaxpr, plan, in_vals)
        finally:
            self.plans.pop()

    def dot_plan(self, eqn):
        """The contraction pass's ``plan.DotPlan`` of ``eqn`` (decided now for an
        equation outside the programs' plans: a row equation)."""
        p = self.plans[-1].dots.get(eqn) if self.plans else None
        return p if p is not None else _plan.dot_plan(eqn, self.limit)

    def _lower_planned(self, jaxpr, plan, in_vals):
        eqns, outvars, consumers = plan.eqns, plan.outvars, plan.consumers
        env = dict(zip(jaxpr.invars, in_vals))
        depth = {}   # lazy value -> length of its chain of fused operations
        wide_from = plan.wide_from
        segs = {}
        if segments_enabled() and not self.vector_loop and not self.in_rows:
            eqns, segs, wide_from, consumers = _segments_of(
                eqns, outvars, consumers, self.limit, self.rules, wide_from, self.inline)
        runs = self.run_plans(eqns, segs, consumers, env, self.split and len(self.plans) == 1) \
            if segs and seg_loops_enabled() else {}
        if any(r.absorbed for r in runs.values()):
            eqns, segs, runs, wide_from = _absorb(eqns, segs, runs, wide_from)
        starts = sorted(segs, reverse=True)
        upto = eqns         # (the equations before the next copy: no block or row loop spans one)
        k = 0
        while k < len(eqns):
            run = runs.get(k)
            if run is not None:
                # consecutive copies of a segment: one loop calling its function
                self.emit_run(run, env)
                SEG_STATS.add("copies", run.k)
                SEG_STATS.add("loops")
                k += run.k * run.d
                continue
            seg = segs.get(k)
            if seg is not None:
                # a copy of a repeated run: a call of the one function of its structure
                d, sub, key, args = seg
                outs = self.seg_call(sub, key, [self.read(env, a) for a in args])
                env.update(zip(sub.outvars, outs))
                SEG_STATS.add("copies")
                k += d
                continue
            if starts:
                while starts and starts[-1] < k:
                    starts.pop()
                if starts and len(upto) != starts[-1]:
                    upto = eqns[:starts[-1]]
                elif not starts:
                    upto = eqns
            if self.blocks is not None and not self.vector_loop:
                j = self.blocks(self, upto, k, env, consumers)
                if j > k:
                    k = j
                    continue
            run = self.row_run(upto, k, plan.rows) if wide_from[k] else None
            if run is None:
                self.lower_one(eqns[k], env, consumers, depth)
                k += 1
                continue
            b, hoisted, rows, k = run
            for eqn in hoisted:
                self.lower_one(eqn, env, consumers, depth)
            self.lower_rows(b, rows, env, consumers)
        return [self.read(env, a) for a in outvars]

    def seg_call(self, sub, key, vals):
        """Emit a call of the function of the segment ``key`` (``sub``: a copy's program)
        on ``vals``; its output values."""
        if self.units is not None and self.settings.unit_min_cost is not None:
            # (a compile unit, cached by its structure: a changed program, one
            # more layer or an edited loss, loads the copies' code from disk)
            return self.units(self, sub, vals, ("segment", key))
        return self.outlined(("segment", key), vals, lambda vals, sub=sub: self.lower_jaxpr(sub, vals))

    # -- a run of copies as one loop (see ``_Run``) ---------------------------
    def run_plans(self, eqns, segs, consumers, env, top):
        """``{start: _Run}``: the runs of consecutive copies among the segments ``segs``
        (``repeated_segments``) that are emitted as loops; ``top``: program outputs may
        be rows of stacks (``RV``)."""
        at = {id(e): i for i, e in enumerate(eqns)}
        starts = sorted(segs)
        runs, made = {}, {}
        loads = {e.outputs[0]: e for e in eqns if e.prim is row_load_p}
        i = 0
        while i < len(starts):
            s = starts[i]
            d, _, key, _ = segs[s]
            j = i + 1
            while j < len(starts) and segs[starts[j]][0] == d and segs[starts[j]][2] == key \
                    and starts[j] >= starts[j - 1] + d and all(
                        eqns[t].prim is row_load_p for t in range(starts[j - 1] + d, starts[j])):
                j += 1

            def planned(a, b, d=d, key=key):
                if b - a < SEG_LOOP_MIN:
                    return False
                run = _Run(starts[a:b], d, key, [segs[t][1] for t in starts[a:b]],
                           [segs[t][3] for t in starts[a:b]])
                if not (self._plan_run(run, consumers, at, env, made, loads) and all(
                        any(x is eqns[t] for x in run.absorbed) for c in range(1, run.k)
                        for t in range(run.starts[c - 1] + d, run.starts[c]))):
                    return False
                runs[run.start] = run
                for c, sub in enumerate(run.subs):
                    for q, v in enumerate(sub.outvars):
                        made[v] = (run, c, q)
                return True
            # (the whole run, else without its last or its first copy: the copy next to a
            # different layer may read that layer's value where the others read a stack)
            if not any(planned(a, b) for a, b in ((i, j), (i, j - 1), (i + 1, j))) \
                    and j - i >= 2 * SEG_LOOP_MIN:
                # else one loop per piece of copies whose inputs arrive alike: past
                # ``native.PACK_MAX_ELEMENTS`` the later layers' weights are addressed or
                # buffered, not packed, and their gradients read the stacks of two loops
                lo, pieces = i, self._arrival_pieces(starts, segs, i, j, env, made, loads)
                for a, b in pieces if len(pieces) > 1 else ():
                    for a2, b2 in ((max(a - 1, lo), b), (a, b), (a, b - 1), (a + 1, b)):
                        if planned(a2, b2):
                            lo = b2
                            break
            i = j
        if not runs:
            return runs
        # (what each stacked output is read as after its loop: a later loop's row of the
        # stack, a program output returned as a row (``RV``), else a value named here)
        spans = sorted((r.start, r.starts[-1] + r.d, r) for r in runs.values())
        through = {}    # run -> (values it reads from stacks only)
        for r in runs.values():
            st = {a for kind, args in zip(r.ins, zip(*r.args)) if kind[0] == "stack" for a in args}
            other = {a for kind, args in zip(r.ins, zip(*r.args)) if kind[0] != "stack"
                     for a in args if type(a) is Var}
            through[r] = st - other

        def in_run(u):
            pos = at.get(id(u))
            for lo, hi, r in spans:
                if pos is not None and lo <= pos < hi:
                    return r
            return None
        for r in runs.values():
            for (c, q), users in r.readers.items():
                v = r.subs[c].outvars[q]
                named = any(u is not None and v not in through.get(in_run(u), ()) for u in users)
                out = any(u is None for u in users)
                r.readers[(c, q)] = "env" if named or (out and not (top and q in r.stacked)) else "rv"
        return runs

    def _arrival_pieces(self, starts, segs, i, j, env, made, loads):
        """The pieces ``(a, b)`` of the copies ``starts[i:j]`` (``run_plans``) within which
        each input arrives alike from copy to copy: a literal, the previous copy's output,
        an output of one earlier loop, a view of one buffer (``_packed_at``), an array of
        one address table (``_addressed_at``), a row load of one stack, or another value;
        a piece starts where any input of a copy arrives otherwise than the copy's before."""
        def how(v, prev):
            if type(v) is not Var:
                return ("lit",)
            if v in prev:
                return ("prev",)
            m = made.get(v)
            if m is not None:
                return ("made", id(m[0]), m[2])
            at = self._packed_at(env, v)
            if at is not None:
                return ("packed", at[0])
            at = self._addressed_at(env, v)
            if at is not None:
                return ("address",) + at[:2]
            ld = loads.get(v)
            return ("value",) if ld is None else ("rowld", id(ld.inputs[0]))
        pieces, a, last, prev = [], i, None, set()
        for t in range(i, j):
            sub, args = segs[starts[t]][1], segs[starts[t]][3]
            sig = tuple(how(v, prev) for v in args)
            if t > i and sig != last:
                pieces.append((a, t))
                a = t
            last, prev = sig, set(sub.outvars)
        pieces.append((a, j))
        return pieces

    def _packed_at(self, env, v):
        """``(buffer name, offset)`` of ``v`` if it is a view of a buffer (``native``: a
        program's packed inputs, a unit's segments of its caller's buffer), else None."""
        if type(v) is not Var:
            return None
        val = env.get(v)
        if type(val) is SV and val.arr is not None and val.arr[1].shape == val.shape:
            val = val.arr[1]        # (a small value read from a view, ``native._Views.scalars``)
        return (getattr(self, "views", None) or {}).get(val.name) if type(val) is AV else None

    def _addressed_at(self, env, v):
        """``(function, table, index)`` if ``v`` is an array the program rebuilds as
        ``function(table, index)`` (``native._addressed``: ``g.addressed``), else None."""
        val = env.get(v) if type(v) is Var else None
        return (getattr(self, "addressed", None) or {}).get(val.name) if type(val) is AV else None

    def _plan_run(self, run, consumers, at, env, made, loads):
        """Fill in ``run``'s plan (``_Run``); whether its copies can be one loop.
        ``loads``: the row loads (``rowio.row_load_p``) by their output."""
        k, d, s, subs, argss = run.k, run.d, run.start, run.subs, run.args
        starts = run.starts
        for v in list(subs[0].invars) + list(subs[0].outvars):
            if _is_float0(v.aval.dtype) or _size(v.aval.shape) == 0:
                return False
        outpos = [{v: q for q, v in enumerate(sub.outvars)} for sub in subs]
        carry = {}
        for p in range(len(argss[0])):
            vals = [a[p] for a in argss]
            if all(_same_arg(v, vals[0]) for v in vals[1:]):
                run.ins.append(("same",))
                continue
            if any(type(v) is Literal for v in vals):
                if not all(_liftable(v) for v in vals):
                    return False
                aff = _affine([int(v.val) for v in vals])
                if aff is None:
                    return False
                run.ins.append(("lit",) + aff)
                continue
            q = outpos[0].get(vals[1])
            if q is not None and not any(vals[0] in o for o in outpos) \
                    and all(outpos[c - 1].get(vals[c]) == q for c in range(1, k)):
                run.ins.append(("carry", q))
                carry[p] = q
                continue
            src = [made.get(v) for v in vals]
            if all(r is not None and r[0] is src[0][0] and r[2] == src[0][2] for r in src):
                aff = _affine([r[1] for r in src])
                if aff is not None and src[0][2] in src[0][0].stacked:
                    run.ins.append(("stack", src[0][0], src[0][2]) + aff)
                    continue
            rows = self._row_reads(vals, loads, consumers, at, run)
            if rows is not None:
                run.ins.append(rows)
                continue
            offs = [self._packed_at(env, v) for v in vals]
            if all(o is not None and o[0] == offs[0][0] for o in offs):
                aff = _affine([o[1] for o in offs])
                if aff is not None:
                    run.ins.append(("packed", offs[0][0]) + aff)
                    continue
            offs = [self._addressed_at(env, v) for v in vals]
            if all(o is not None and o[:2] == offs[0][:2] for o in offs):
                aff = _affine([o[2] for o in offs])
                if aff is not None:     # (arrays the program takes by address, ``native._addressed``)
                    run.ins.append(("address",) + offs[0][:2] + aff)
                    continue
            if all(type(v) is Var and type(env.get(v)) is AV and env[v].name.isidentifier()
                   for v in vals):
                # (arrays the program takes, one per copy, not packed: a tuple of them)
                run.ins.append(("tuple",))
                continue
            return False
        lo, hi = s, starts[-1] + d
        for c in range(k):
            nxt = argss[c + 1] if c + 1 < k else ()
            for q, v in enumerate(subs[c].outvars):
                outside = []
                for u in consumers.get(v, ()):
                    pos = None if u is None else at.get(id(u))
                    if pos is not None and lo <= pos < hi:
                        # (inside the run: its own copy, or the next through a carry)
                        if starts[c] <= pos < starts[c] + d:
                            continue
                        if c + 1 >= k or not starts[c + 1] <= pos < starts[c + 1] + d or any(
                                a is v and carry.get(p) != q for p, a in enumerate(nxt)):
                            return False
                        continue
                    outside.append(u)
                if outside:
                    run.readers[(c, q)] = outside
                    if c < k - 1 or q not in carry.values():
                        run.stacked.add(q)
        self._row_writes(run, consumers)
        return True

    def _row_reads(self, vals, loads, consumers, at, run):
        """``("rowld", stack, step, first, stride)`` if the copies' inputs ``vals`` are
        rows a scan body loads (``loads``) from one stack at one step, at stack indices
        stepping evenly, each read by its own copy alone; else None.  The loads are
        then the loop's (``_Run.absorbed``)."""
        eqs = [loads.get(v) if type(v) is Var else None for v in vals]
        if any(e is None for e in eqs):
            return None
        st, step = eqs[0].inputs[0], eqs[0].inputs[1]
        if type(st) is not Var or any(e.inputs[0] is not st or not _same_arg(e.inputs[1], step)
                                      for e in eqs):
            return None
        aff = _affine([int(e.params["j"]) for e in eqs])
        if aff is None:
            return None
        for c, v in enumerate(vals):
            for u in consumers.get(v, ()):
                pos = None if u is None else at.get(id(u))
                if pos is None or not run.starts[c] <= pos < run.starts[c] + run.d:
                    return None
        run.absorbed.extend(e for e in eqs if not any(x is e for x in run.absorbed))
        return ("rowld", st, step) + aff

    def _row_writes(self, run, consumers):
        """Plan the outputs of ``run`` whose only reader outside their copy is a scan
        body's store of them into a row of a stack that nothing else reads
        (``rowio.row_store_p``), at one step and stack indices stepping evenly: the loop
        stores them (``_Run.stores``), rather than stacking them for the stores after
        it.  (Storing a row earlier changes nothing: only the scan reads its stacks, once
        the body has run.)"""
        for q in sorted(run.stacked):
            eqs = []
            for c in range(run.k):
                users = run.readers.get((c, q), ())
                v = run.subs[c].outvars[q]
                if len(users) != 1 or users[0] is None or users[0].prim is not row_store_p \
                        or users[0].inputs[2] is not v:
                    break
                eqs.append(users[0])
            else:
                st, step = eqs[0].inputs[0], eqs[0].inputs[1]
                if type(st) is not Var or any(
                        e.inputs[0] is not st or not _same_arg(e.inputs[1], step) for e in eqs) \
                        or any(u is None or u.prim is not row_store_p for u in consumers.get(st, ())):
                    continue
                aff = _affine([int(e.params["j"]) for e in eqs])
                if aff is None:
                    continue
                run.stores[q] = (st, step) + aff
                run.stacked.discard(q)
                for c in range(run.k):
                    del run.readers[(c, q)]
                run.absorbed.extend(eqs)

    def _helper(self, key, make, prefix):
        """The global name of the intrinsic ``make()`` (one per ``key`` and generator)."""
        name = self.helpers.get(key)
        if name is None:
            name = self.helpers[key] = self.glob(make(), prefix)
        return name

    def _view(self, buf, off, shape):
        """The expression of the array of ``shape`` at element ``off`` of ``buf``."""
        return f"{self._helper(('view', tuple(shape)), lambda: view_at(shape), '_v')}({buf}, {off})"

    def _read_at(self, buf, off, aval, row):
        """The value of ``aval`` at element ``off`` of the 1-D buffer ``buf`` (``row``:
        row ``off`` of a stack, ``emit_run``), in its settled representation (``settle``)."""
        n = _size(aval.shape)
        two_d = row and self.is_small(aval.shape)      # (a stack of small values: (copies, n))
        if not self.is_small(aval.shape):
            name = self.name("a")
            self.emit(f"{name} = {self._view(buf, f'{off} * {n}' if row else off, aval.shape)}")
            return AV(aval.shape, aval.dtype, name)
        names = [self.name("s") for _ in range(n)]
        if two_d and n == 1:
            self.emit(f"{names[0]} = {buf}[{off}, 0]")
        elif n == 1:
            self.emit(f"{names[0]} = {buf}[{off}]")
        else:
            ld = self._helper(("load", (n,)), lambda: load_row((n,)), "_ld")
            row = (buf, off) if two_d else (self._view(buf, off, (1, n)), 0)
            self.emit(f"{nest(names)} = {ld}({row[0]}, {row[1]})")
        return SV(aval.shape, aval.dtype, names)

    def _write_row(self, stack, row, aval, o):
        n = _size(aval.shape)
        if self.is_small(aval.shape):
            o = self.small(o)
            els = [_typed(e, o.dtype) for e in o.elems]
            if n == 1:
                self.emit(f"{stack}[{row}, 0] = {els[0]}")
            else:
                st = self._helper(("store", (n,)), lambda: store_row((n,)), "_st")
                self.emit(f"{st}({stack}, {row}, {nest(self.packed(els))})")
            return
        cp = self._helper(("copy",), copy_into, "_cp")
        self.emit(f"{cp}({self._view(stack, f'{row} * {n}', aval.shape)}, {self.array(o).name})")

    def emit_run(self, run, env):
        """Emit the copies of ``run`` as one loop (``_Run``), and bind the outputs read
        after it in ``env``."""
        k, sub = run.k, run.subs[0]
        for q in sorted(run.stacked):
            a = sub.outvars[q].aval
            n = _size(a.shape)
            name = run.names[q] = self.name("st")
            shape = (k, n) if self.is_small(a.shape) else (k * n,)
            self.emit(f"{name} = _empty({_shape_str(shape)}, {_dt(a.dtype)})")
        fixed, carries = {}, {}
        for p, kind in enumerate(run.ins):
            if kind[0] == "same":
                fixed[p] = self.read(env, run.args[0][p])
            elif kind[0] == "tuple":
                t = fixed[p] = self.name("t")
                self.emit(f"{t} = ({''.join(env[a[p]].name + ', ' for a in run.args)})")
            elif kind[0] == "carry":
                v = self.settle(self.read(env, run.args[0][p]))
                if type(v) is AV:
                    h = self.name("h")
                    self.emit(f"{h} = {v.name}" if v.name.isidentifier()
                              else f"{h} = np.ascontiguousarray({v.name})")
                    carries[p] = AV(v.shape, v.dtype, h)
                else:
                    hs = [self.name("h") for _ in v.elems]
                    for h, e in zip(hs, v.elems):
                        self.emit(f"{h} = {_wrap(_typed(e, v.dtype), v.dtype)}")
                    carries[p] = SV(v.shape, v.dtype, hs)
        c = self.name("c")
        self.emit(f"for {c} in range({k}):")
        self.push()
        segs = self._run_segments(run, c)
        vals = []
        for p, kind in enumerate(run.ins):
            a = sub.invars[p].aval
            if kind[0] == "same":
                vals.append(fixed[p])
            elif kind[0] == "carry":
                vals.append(carries[p])
            elif kind[0] == "lit":
                vals.append(SV(a.shape, a.dtype, [f"({kind[1]} + ({kind[2]}) * {c})"]))
            elif kind[0] == "tuple":
                name = self.name("a")
                self.emit(f"{name} = {fixed[p]}[{c}]")
                vals.append(AV(a.shape, a.dtype, name))
            elif kind[0] == "address":
                name = self.name("a")
                self.emit(f"{name} = {kind[1]}({kind[2]}, ({kind[3]} + ({kind[4]}) * {c}))")
                vals.append(AV(a.shape, a.dtype, name))
            elif kind[0] == "stack":
                src, q = kind[1], kind[2]
                vals.append(self._read_at(src.names[q], f"({kind[3]} + ({kind[4]}) * {c})", a, True))
            elif kind[0] == "rowld":
                vals.append(self._stack_row(env, kind, c, a))
            elif p in segs:
                vals.append(segs[p])
            else:
                vals.append(self._read_at(kind[1], f"({kind[2]} + ({kind[3]}) * {c})", a, False))
        outs = self.seg_call(sub, run.key, vals)
        for q in sorted(run.stacked):
            self._write_row(run.names[q], c, sub.outvars[q].aval, outs[q])
        for q, where in sorted(run.stores.items()):
            self._stack_row(env, ("rowst",) + where, c, sub.outvars[q].aval, outs[q])
        for p, kind in enumerate(run.ins):
            if kind[0] == "carry":
                h, o = carries[p], outs[kind[1]]
                if type(h) is AV:
                    self.emit(f"{h.name} = {self.array(o).name}")
                else:
                    for n, e in zip(h.elems, self.small(o).elems):
                        self.emit(f"{n} = {_typed(e, h.dtype)}")
        self.pop()
        last = {kind[1]: carries[p] for p, kind in enumerate(run.ins) if kind[0] == "carry"}
        for (c, q), how in sorted(run.readers.items()):
            v = run.subs[c].outvars[q]
            if how == "rv":
                env[v] = RV(v.aval.shape, v.aval.dtype, run.names[q], c)
            elif q in run.stacked:
                env[v] = self._read_at(run.names[q], str(c), v.aval, True)
            else:
                env[v] = last[q]

    def _run_segments(self, run, c):
        """``{input: value}``: in the loop of ``run`` (copy ``c``), its small inputs packed
        in one buffer at one stride, as one view of the buffer per copy that the unit
        takes (``native._segments``) rather than its elements as arguments each (where
        they are at least ``_RUN_SEGMENT_MIN`` elements: a fori_loop body's index arrays,
        which as elements made the backward unit's 66 parameters)."""
        views = getattr(self, "views", None)
        if views is None or self.units is None or self.settings.unit_min_cost is None:
            return {}
        by_buf = {}
        for p, kind in enumerate(run.ins):
            if kind[0] == "packed" and self.is_small(run.subs[0].invars[p].aval.shape):
                by_buf.setdefault((kind[1], kind[3]), []).append(p)
        out = {}
        for (buf, stride), ps in by_buf.items():
            avals = {p: run.subs[0].invars[p].aval for p in ps}
            if len({avals[p].dtype for p in ps}) != 1:
                continue
            lo = min(run.ins[p][2] for p in ps)
            hi = max(run.ins[p][2] + _size(avals[p].shape) for p in ps)
            if hi - lo < _RUN_SEGMENT_MIN:
                continue        # (a layer's gain: one element read, not a view made)
            x = self.name("x")
            self.emit(f"{x} = {self._view(buf, f'({lo} + ({stride}) * {c})', (hi - lo,))}")
            for p in ps:
                a, r = avals[p], run.ins[p][2] - lo
                name = self.name("a")
                views[name] = (x, r)
                v = out[p] = SV(a.shape, a.dtype, [f"{x}[{r + e}]" for e in range(_size(a.shape))])
                v.arr = (self.scopes[-1], AV(a.shape, a.dtype, name))
        return out

    def _stack_row(self, env, where, c, aval, o=None):
        """Load (``o`` None) or store ``o``, the row ``stack[first + stride * c, step]``
        of a scan's stack (``where``: ``(kind, stack, step, first, stride)``, ``_Run``),
        as ``rowio.row_load_p``/``row_store_p`` do outside IR blocks: by its index among
        the stack's rows (``rowio.load_row``'s ``flat``), no view of ``stack[j]`` made."""
        _, st, step, first, stride = where
        stack, i = self.read(env, st), self.elem(self.read(env, step), ())
        j = f"({first} + ({stride}) * {c})"
        n = _size(aval.shape)
        if n == 1:
            at = self.elem(stack, (j, i) + (0,) * len(aval.shape))
            if o is None:
                name = self.name("s")
                self.emit(f"{name} = {at}")
                return SV(aval.shape, aval.dtype, [name])
            self.emit(f"{at} = {_typed(self.small(o).elems[0], o.dtype)}")
            return None
        row = f"{j} * {stack.shape[1]} + {i}"
        if o is not None:
            o = self.small(o)
            st_ = self._helper(("store", tuple(aval.shape), "flat"),
                               lambda: store_row(aval.shape, flat=True), "_st")
            self.emit(f"{st_}({stack.name}, {row}, {nest([_typed(e, o.dtype) for e in o.elems])})")
            return None
        names = [self.name("s") for _ in range(n)]
        ld = self._helper(("load", tuple(aval.shape), "flat"), lambda: load_row(aval.shape, flat=True), "_ld")
        self.emit(f"{nest(names)} = {ld}({stack.name}, {row})")
        return SV(aval.shape, aval.dtype, names)

    def returned(self, outs):
        """``(names, split)`` of a program returning the values ``outs``: the arrays it
        returns, and where each output is in them (``objcache.runner``): per output not
        ``float0``, ``(index, None, None)`` (the array returned there) or ``(index, row,
        shape)`` (row ``row`` of the stack returned there, as a view of ``shape``: an
        ``RV``); ``split`` None if no output is a row."""
        names, split, stacks = [], [], {}
        for o in outs:
            if type(o) is ZV:
                continue
            if type(o) is RV:
                j = stacks.get(o.stack)
                if j is None:
                    j = stacks[o.stack] = len(names)
                    names.append(o.stack)
                split.append((j, o.row, o.shape))
            else:
                split.append((len(names), None, None))
                names.append(self.array(o).name)
        return names, (tuple(split) if stacks else None)

    def lower_one(self, eqn, env, consumers, depth):
        for v in eqn.outputs:
            _check_dtype(v.aval.dtype)
        ins = [self.read(env, a) for a in eqn.inputs]
        outs = self.lower_eqn(eqn, ins)
        fusible = self.plans[-1].fusible    # (the fusion pass: ``plan.Plan.fusible``)
        for v, o in zip(eqn.outputs, outs):
            if type(o) is LV and self.in_rows and self.is_small(o.shape):
                o = self.small(o)       # (a row: scalarized, never an array per row)
            if type(o) is LV:
                d = 1 + max([depth.get(a, 0) for a in eqn.inputs if type(a) is Var] + [0])
                if v not in fusible or d > MAX_FUSED:
                    o = self.array(o)
                else:
                    depth[v] = d
            if type(o) is SV:
                users = consumers.get(v, ())
                user = users[0] if len(users) == 1 else None
                o = self.inlined_or_named(o, v, user, user.outputs[0].aval.shape
                                          if user is not None and user.outputs else None)
            env[v] = o

    def inlined_or_named(self, o, v, user, user_shape):
        """A scalar expression stays unnamed (inlined into its consumer's expression)
        only for one elementwise consumer using each element once."""
        if (user is None or user.prim not in self.inline or user_shape != o.shape
                or sum(a is v for a in user.inputs) != 1 or any(len(e) > 160 for e in o.elems)):
            return self.named(o)
        return o

    # -- batched values, row by row -----------------------------------------
    def row_run(self, eqns, k, row_plans):
        """A run of equations from ``eqns[k]`` computed in one loop over the rows of a
        batch: ``(B, hoisted, rows, next k)``, where ``hoisted`` are equations in between
        that do not depend on the run (computed before the loop) and ``rows`` the
        (equation, plan) pairs; None if fewer than two equations qualify.  Which
        equations may be computed row by row, and how, the row pass decided
        (``row_plans``: ``plan.Plan.rows``)."""
        plan = row_plans.get(eqns[k])
        if plan is None:
            return None
        b = plan[0]
        produced, rows, hoisted, end = set(), [], [], k
        for j in range(k, len(eqns)):
            eqn = eqns[j]
            plan = row_plans.get(eqn) if j > k else plan
            uses = [a for a in eqn.inputs if type(a) is Var and a in produced]
            if plan is not None and plan[0] == b and not any(
                    r == "w" for a, r in zip(eqn.inputs, plan[1]) if a in uses):
                rows.append((eqn, plan))
                produced.update(eqn.outputs)
                end = j + 1
            elif not uses and not eqn.prim.has_effects and not any(True for _ in _nested(eqn)):
                hoisted.append((j, eqn))
            else:
                break
        # (a run over a vector (rows of one element) gains nothing over fused loops,
        # and would keep its result from fusing into the reduction consuming it)
        if len(rows) < 2 or all(len(eqn.outputs[0].aval.shape) < 2 for eqn, _ in rows):
            return None
        return b, [e for j, e in hoisted if j < end], rows, end

    def lower_rows(self, b, rows, env, consumers):
        """Emit one loop over the ``b`` rows computing every equation of ``rows`` on
        scalarized rows; values used after the run are written to arrays.  Each row of
        an array is read and written by one call (``rowio``), and runs of the row
        equations that an IR block takes (``irblock``, ``row_blocks``) are one block
        per row: numba types and lowers one call where it typed a statement per
        element of each row equation."""
        in_run = {id(eqn) for eqn, _ in rows}
        bufs = {}
        views = {}
        for eqn, (_, roles, _) in rows:
            for a, r in zip(eqn.inputs, roles):
                if r != "w" and type(a) is Var and a in env and a not in views:
                    views[a] = self.dynamic_ready(env[a])
            v = eqn.outputs[0]
            if any(u is None or id(u) not in in_run for u in consumers.get(v, ())):
                n = self.name("a")
                self.emit(f"{n} = _empty({_shape_str(v.aval.shape)}, {_dt(v.aval.dtype)})")
                bufs[v] = AV(v.aval.shape, v.aval.dtype, n)
        # the run on rows: one variable per value computed row by row (``plan._RowVar``,
        # of the row's type), equations linked through them, as a program's are
        row_of = {}

        def row_var(a):
            w = row_of.get(a)
            if w is None:
                w = row_of[a] = _plan._RowVar(ShapedArray(a.aval.shape[1:], a.aval.dtype))
            return w
        eqns, users = [], {}
        for eqn, (_, roles, row_eqn) in rows:
            ins = [a if r == "w" else row_var(a) for a, r in zip(eqn.inputs, roles)]
            e = _plan._RowEqn(row_eqn.prim, row_eqn.params, ins, [row_var(eqn.outputs[0])])
            eqns.append(e)
            for a in ins:
                if type(a) is not Literal:
                    users.setdefault(a, []).append(e)
        for v in bufs:
            users.setdefault(row_var(v), []).append(None)
        blocks = self.blocks if self.blocks is not None and self.row_blocks(eqns) else None
        i = self.name("i")
        self.emit(f"for {i} in range({b}):")
        self.push()
        outer, self.vector_loop = self.vector_loop, True   # (rows are independent: LLVM vectorizes)
        outer_rows, self.in_rows = self.in_rows, True
        local = {}
        for a, v in views.items():
            row = a.aval.shape[1:]
            r = i if a.aval.shape[0] == b else 0
            if type(v) is AV and _size(row) > 1:
                els = [self.name("s") for _ in range(_size(row))]
                self.emit(f"{nest(els)} = {self.glob(load_row(row), '_ld')}({v.name}, {r})")
            else:
                els = [self.elem(v, (r,) + idx) for idx in np.ndindex(*row)]
            local[row_var(a)] = SV(row, v.dtype, els)
        for a in {a for e in eqns for a in e.inputs if type(a) is Var}:
            local[a] = self.read(env, a)        # (the values each row reads whole)
        buf_of = {row_var(v): buf for v, buf in bufs.items()}
        k = 0
        while k < len(eqns):
            j = blocks(self, eqns, k, local, users) if blocks is not None else k
            if j == k:
                e = eqns[k]
                o = self.small(self.lower_eqn(e, [self.read(local, a) for a in e.inputs])[0])
                v = e.outputs[0]
                us = users.get(v, ())
                user = us[0] if len(us) == 1 else None
                local[v] = self.inlined_or_named(o, v, user, user and user.outputs[0].aval.shape)
                j = k + 1
            for e in eqns[k:j]:     # (stored at once: a value kept to the end of the row
                v = e.outputs[0]    # lives longer, and spills; 5% slower)
                if v in buf_of:
                    self.write_row(buf_of[v], i, local[v])
            k = j
        self.vector_loop, self.in_rows = outer, outer_rows
        self.pop()
        env.update(bufs)

    def write_row(self, buf, i, o):
        """Write the scalarized row ``o`` to row ``i`` of the array ``buf`` (``AV``)."""
        if len(o.elems) > 1:
            self.emit(f"{self.glob(store_row(o.shape), '_st')}({buf.name}, {i}, "
                      f"{nest([_typed(e, o.dtype) for e in o.elems])})")
        else:
            self.emit(f"{self.elem(buf, (i,) + (0,) * len(o.shape))} = {o.elems[0]}")

    def row_blocks(self, eqns):
        """Whether runs of the row equations ``eqns`` may be IR blocks: not if one
        computes a function that a block calls out of line (``tanh``, ``expm1``,
        ``sin``, ``cos``: ``vecmath.SCALAR_IR``), which would keep LLVM from
        vectorizing the loop over the rows."""
        return not any(e.prim in _OUT_OF_LINE_IN_BLOCKS for e in eqns)

    def call_plan(self, jaxpr):
        """The outlining pass's ``plan.CallPlan`` of the nested program ``jaxpr``: from
        the plan of the program carrying it, or decided now (a program outside the
        plans being lowered)."""
        p = self.plans[-1].calls.get(jaxpr) if self.plans else None
        return p if p is not None else _plan.call_plan(jaxpr, self.settings)

    def call_jaxpr(self, jaxpr, in_vals, like=None):
        """Lower a nested program (a loop body, a branch) as the outlining pass decided
        (``plan.CallPlan``): inlined; a separate njit function (``outlined``: numba's
        compile time grows faster than linearly with function size), shared by every
        call with the same program and input representation; or a compile unit of
        its own, cached across programs (``units``: ``native._lower_unit``).  ``like``:
        the program whose plan decides (``jaxpr`` made from it: ``rules._scan``'s body
        with its rows in stacks)."""
        p = self.call_plan(jaxpr if like is None else like)
        kind = p.vector_kind if self.vector_loop else p.kind
        if kind == "unit":
            return self.units(self, jaxpr, in_vals)
        if kind == "inline":
            return self.lower_jaxpr(jaxpr, in_vals)
        return self.outlined(id(jaxpr), in_vals, lambda vals: self.lower_jaxpr(jaxpr, vals))

    def outlined(self, what, in_vals, body):
        """Emit ``body(in_vals)`` as a call of a separate njit function, generated once
        per ``what`` (a hashable key of the code) and input representation."""
        in_vals = [self.settle(v) for v in in_vals]
        key = (what, tuple((type(v), v.shape, v.dtype) for v in in_vals))
        hit = self.helpers.get(key)
        if hit is None:
            hit = self.helpers[key] = self._outline(body, in_vals)
        fname, template = hit
        args = []
        for v in in_vals:
            if type(v) is not ZV:
                args.extend([_typed(e, v.dtype) for e in v.elems] if type(v) is SV else [v.name])
        outs, names = self.template_outputs(template, grouped=True)
        call = f"{fname}({''.join(a + ', ' for a in args)})"
        self.emit(f"({''.join(n + ', ' for n in names)}) = {call}" if names else call)
        return outs

    def unit_ptr(self, unit):
        """The expression of ``unit``'s address here: a program reads the addresses of
        the units it calls from one array argument (``_up``), a unit from parameters
        of its own, numbered in the order of first use (so its source names no other
        program's numbering)."""
        for k, u in enumerate(self.deps):
            if u is unit:
                return self.ptr_format.format(k)
        self.deps.append(unit)
        return self.ptr_format.format(len(self.deps) - 1)

    def template_outputs(self, template, grouped=False):
        """``(values, names)`` for the results of a call to an outlined body or a compile
        unit, from its ``template`` (``(kind, shape, dtype)`` per output): fresh scalar
        names for each element of a scalarized output, one array name per array output,
        none for a float0 zero; ``names`` in the order the callee returns them.
        ``grouped`` (the callee returns ``result_items``): a scalarized output of several
        elements is one tuple variable, its elements read ``ct<N>[k]`` where they are used
        (a loop carry's form, ``from_names``): a loop's body returning its carries gives
        them whole (``ct5 = ct9``), not unpacked into names and packed again."""
        outs, names = [], []
        for kind, shape, dtype in template:
            if kind is ZV:
                outs.append(ZV(shape, dtype))
            elif kind is SV and grouped and _size(shape) > 1:
                t = self.tuple_name()
                self.tuple_lens[t] = _size(shape)
                names.append(t)
                outs.append(SV(shape, dtype, [f"{t}[{k}]" for k in range(_size(shape))]))
            elif kind is SV:
                els = [self.name("s") for _ in range(_size(shape))]
                names.extend(els)
                outs.append(SV(shape, dtype, els))
            else:
                names.append(self.name("a"))
                outs.append(AV(shape, dtype, names[-1]))
        return outs, names

    def result_items(self, outs):
        """The items a called body returns for its outputs ``outs`` (settled values), as
        ``template_outputs(..., grouped=True)`` reads them: an array's name, a scalar, or
        the tuple of a scalarized output's elements (``(a, b, )``; a whole carry tuple
        read in order is that tuple, ``packed``)."""
        ret = []
        for o in outs:
            if type(o) is AV:
                ret.append(o.name)
            elif type(o) is SV:
                els = [_typed(e, o.dtype) for e in o.elems]
                if len(els) <= 1:
                    ret.extend(els)
                else:
                    items = self.packed(els)
                    ret.append(items[0] if len(items) == 1 and items[0] != els[0]
                               else "(" + "".join(e + ", " for e in els) + ")")
        return ret

    def _outline(self, body, in_vals):
        saved = self.lines, self.depth, self.scopes
        self.lines, self.depth, self.scopes = [], 1, [next(self.scope_ids)]
        params, vals = [], []
        for v in in_vals:
            if type(v) is ZV:
                vals.append(v)
            elif type(v) is SV:
                els = [self.name("p") for _ in v.elems]
                params.extend(els)
                vals.append(SV(v.shape, v.dtype, els))
            else:
                n = self.name("p")
                params.append(n)
                vals.append(AV(v.shape, v.dtype, n))
        outs = [self.settle(o) for o in body(vals)]
        ret = self.result_items(outs)
        self.emit(f"return ({''.join(r + ', ' for r in ret)})")
        body = self.lines
        self.lines, self.depth, self.scopes = saved
        fname = self.name("_f")
        self.functions.append("\n".join(["@_jit", f"def {fname}({', '.join(params)}):"] + body))
        return fname, [(type(o), o.shape, o.dtype) for o in outs]

    def lower_eqn(self, eqn, ins):
        prim = eqn.prim
        if eqn.outputs and all(_is_float0(v.aval.dtype) for v in eqn.outputs) and \
                not eqn.prim.has_effects:
            return [ZV(v.aval.shape, v.aval.dtype) for v in eqn.outputs]
        body = _CALL_BODIES.get(prim) or _CALL_BODIES.get(type(prim))
        if body is not None:
            # a called program (a jit, checkpoint or custom rule's body): a compile unit
            # if the outlining pass made it one, else inlined (by its rule; here, without
            # the outputs no one reads, if the plan says some are: ``plan.Plan.pruned``)
            ins = [self.settle(v) if type(v) is LV else v for v in ins]
            if not self.vector_loop and self.call_plan(eqn.params[body]).unit:
                return self.units(self, eqn.params[body], ins)
            live = self.plans[-1].pruned.get(eqn) if self.plans else None
            if live is not None:
                outs = iter(self.lower_jaxpr(_plan.pruned(eqn.params[body], live), ins))
                return [next(outs) if keep else ZV(v.aval.shape, v.aval.dtype)
                        for v, keep in zip(eqn.outputs, live)]
        rule = self.rules.get(prim) or self.rules.get(type(prim))
        if rule is not None:
            out = rule(self, eqn, ins)
            if out is not NotImplemented:
                return out
        # (the kernels are written for real and integer dtypes)
        if not any(a.aval.dtype.kind == "c" for a in list(eqn.inputs) + list(eqn.outputs)):
            kern = _kernel(eqn)
            if kern is not None:
                return self.call_kernel(eqn, kern, ins)
        if prim not in _CALLS_PYTHON and not prim.has_effects:
            self.fallbacks.add(prim.name)
        return self.objmode_call(eqn, ins)

    def call_kernel(self, eqn, kern, ins):
        k = self.glob(kern, "_k")
        self.notes.append(f"# {k}: {_eqn_key(eqn)}")
        args = []
        for v in ins:
            args.append(self.array(v).name)
        res = self.name("r")
        self.emit(f"{res} = {k}({', '.join(args)})")
        return self._unpack_results(eqn, res, kernel=True)

    def _unpack_results(self, eqn, res, kernel):
        outs = []
        multi = eqn.prim.multiple_results
        for j, v in enumerate(eqn.outputs):
            src = f"{res}[{j}]" if multi else res
            n = self.name("a")
            # (a 0-d result is contiguous; np.ascontiguousarray would make it 1-d)
            self.emit(f"{n} = np.ascontiguousarray({src})" if kernel and v.aval.shape
                      else f"{n} = {src}")
            o = AV(v.aval.shape, v.aval.dtype, n)
            outs.append(self.small(o) if self.is_small(v.aval.shape) else o)
        return outs

    def objmode_call(self, eqn, ins):
        """Run the primitive's NumPy implementation for this equation alone."""
        self.objmode = True
        fb = self.glob(_fallback(eqn), "_fb")
        self.notes.append(f"# {fb}: {_eqn_key(eqn)}")
        args = []
        for v in ins:
            if type(v) is SV and not v.shape and v.elems[0].isidentifier():
                args.append(v.elems[0])
            else:
                args.append(self.array(v).name)
        outs = [self.name("o") for _ in eqn.outputs]
        annots = []
        for n, v in zip(outs, eqn.outputs):
            annots.append(f"{n}={self.glob(nbt.Array(_nbtype(v.aval.dtype), v.aval.ndim, 'C'), '_t')}")
        self.emit(f"with numba.objmode({', '.join(annots)}):")
        self.push()
        lhs = "".join(o + ", " for o in outs)
        self.emit(f"({lhs}) = {fb}({''.join(a + ', ' for a in args)})" if outs
                  else f"{fb}({''.join(a + ', ' for a in args)})")
        self.pop()
        if outs:   # numba refuses an annotated output no later line reads (one left unused)
            self.emit(f"{self.name('u')} = ({lhs})")
        res = []
        for n, v in zip(outs, eqn.outputs):
            o = AV(v.aval.shape, v.aval.dtype, n)
            res.append(self.small(o) if self.is_small(v.aval.shape) else o)
        return res


_CALL_BODIES = _plan.CALL_BODIES

# The primitives an IR block computes by calling a function out of line (``lower_rows``)
_OUT_OF_LINE_IN_BLOCKS = frozenset((E.tanh_p, E.expm1_p, E.sin_p, E.cos_p))


# Primitives whose implementation calls the user's Python (host callbacks, a custom_vjp's
# bwd): object mode is what they are, not a missing lowering, so no warning names them.
# So do the effectful ones (``jax.debug``'s print and callback, made above the backends).
_CALLS_PYTHON = frozenset((callback.pure_callback_p, ad.custom_lin_p))


def _eqn_key(eqn):
    """Text identifying an equation run by a kernel or fallback (part of the cache key)."""
    params = " ".join(f"{k}={v!r}" for k, v in sorted(eqn.params.items()))
    digest = hashlib.sha256(params.encode()).hexdigest()[:16]
    return f"{eqn.prim.name} {digest} {[a.aval.str_short() for a in eqn.inputs]}"


def _fallback(eqn):
    prim, params = eqn.prim, dict(eqn.params)
    avals = [v.aval for v in eqn.outputs]

    def run(*args):
        arrays = [np.asarray(a, v.aval.dtype) for a, v in zip(args, eqn.inputs)]
        out = eval_primitive(prim, arrays, params)
        outs = list(out) if prim.multiple_results else [out]
        return tuple(np.ascontiguousarray(np.asarray(o), a.dtype).reshape(a.shape)
                     for o, a in zip(outs, avals))
    run.__name__ = f"fallback_{prim.name}"
    return _Fallback(run)


# Fallbacks by token, held weakly: a fallback lives as long as the generated module whose
# globals hold it (the compiled code is called only through that module's dispatcher).
_FALLBACKS: "weakref.WeakValueDictionary[int, _Fallback]" = weakref.WeakValueDictionary()
_FALLBACK_TOKENS = itertools.count()


class _Fallback:
    """An object-mode fallback as numba sees it: numba serializes whatever an object-mode
    block reads (the lifted block's IR, its globals) into the compiled code, and a closure
    over the equation pickles its params by value (programs, rules, arrays: a custom_lin's
    transposed backward pass was ~3 s of cloudpickle per compile).  This handle pickles as
    a lookup of itself by a process-local token instead.  Object-mode programs are never
    kept on disk, so the token never outlives the process."""

    __slots__ = ("fn", "token", "__weakref__")

    def __init__(self, fn):
        self.fn = fn
        self.token = next(_FALLBACK_TOKENS)
        _FALLBACKS[self.token] = self

    def __call__(self, *args):
        return self.fn(*args)

    def __reduce__(self):
        return (_fallback_by_token, (self.token,))

    def __repr__(self):
        return f"<{self.fn.__name__} #{self.token}>"


def _fallback_by_token(token):
    """The live fallback ``token`` names (unpickling a ``_Fallback``)."""
    fb = _FALLBACKS.get(token)
    if fb is None:
        raise RuntimeError(f"numba backend: object-mode fallback #{token} is gone (its "
                           "program was released); compile the program again")
    return fb


_KERNELS = None


def _kernel(eqn):
    global _KERNELS
    if _KERNELS is None:
        try:
            from . import kernels
            _KERNELS = kernels.KERNELS
        except Exception:  # noqa: BLE001 - the kernels module is optional
            _KERNELS = {}
    factory = _KERNELS.get(eqn.prim)
    if factory is None:
        return None
    try:
        return factory(eqn)
    except Exception:  # noqa: BLE001 - an unsupported case: use the NumPy implementation
        return None


# ---------------------------------------------------------------------------
# Elementwise operations


def _kernel_table():
    """``kernels.KERNELS`` (empty if that module cannot be imported)."""
    if _KERNELS is None:
        class _Probe:
            prim = None
        _kernel(_Probe)
    return _KERNELS
