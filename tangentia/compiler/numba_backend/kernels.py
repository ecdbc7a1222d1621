"""Numba kernels for the primitives that are not plain elementwise math.

The numba backend (this package; its generator is ``codegen.py``) generates one
``@njit`` function per program; it fuses elementwise loops, reductions, reshapes,
``dot_general`` and control flow itself.  Every other equation is run by a
*kernel* from this module, so that it runs natively instead of through an
object-mode fallback.

Protocol (the code generator relies on it exactly)::

    KERNELS: dict[Primitive, Callable[[core.Eqn], njit function | None]]

Given an equation, the factory returns an ``@numba.njit`` function (cached per
distinct params and input/output avals) taking the equation's inputs as NumPy
arrays -- 0-d arrays for scalars, dtype and ndim exactly as ``eqn.inputs[i].aval``
says, any memory layout -- and returning the output array (a tuple of arrays
for ``multiple_results`` primitives) with exactly the shapes and dtypes of
``eqn.outputs[i].aval``.  The function is callable from another njit function
and from Python.  A factory returns ``None`` for a case it does not support;
the generator then falls back to the primitive's NumPy implementation.

Each kernel reproduces the NumPy implementation in ``tangentia/primitives``
(values and dtypes; bit for bit except where LAPACK or summation order differ).
Most kernels are generated Python source specialised on the static
shapes/params (nested loops with the index arithmetic written out), compiled
once per distinct equation signature.

Coverage (``None`` = NumPy fallback):

* ``getitem`` / ``scatter``: every spec form (slices, ``None``, ``Ellipsis``,
  integers, any number of integer-array operands, broadcast together, with
  NumPy's placement of the advanced-index block); negative indices wrap,
  out-of-bounds indices raise ``IndexError``.  ``scatter`` modes set / add /
  mul / min / max; duplicates accumulate in index order as ``ufunc.at`` does.
  ``None`` for complex operands, or an update that NumPy would not cast
  (``same_kind``) into the operand for a non-``set`` mode.
* ``cumsum`` / ``cumprod`` / ``cummax`` / ``cummin`` (axis, reverse);
  ``None`` for complex.
* ``sort``, ``argsort`` (stable, ``descending``), ``searchsorted`` (side),
  NaNs ordered as NumPy's (last ascending); ``None`` for complex.
* ``random_bits``: JAX's threefry2x32 bits, as ``tangentia.primitives.prng``.
* ``integer_pow`` (``None`` for bool and complex), ``einsum`` (explicit
  subscripts by nested loops; ``None`` for bool and complex operands).
* Linear algebra on float32/float64 (stacks of matrices by a loop):
  ``lu`` (LAPACK ``getrf``, as SciPy), ``lu_pivots_to_permutation``,
  ``triangular_solve`` and ``lu_solve`` (substitution loops), ``solve``,
  ``inv``, ``det``, ``slogdet``, ``cholesky``, ``eigh`` (float64 only: for
  float32, SciPy's and NumPy's LAPACK builds pick different eigenvector
  signs), ``eigvalsh``, ``qr`` (``None`` for the complete QR of a tall
  matrix), ``svd``; empty matrices fall back.  These kernels are compiled once
  per ranks and dtypes, not per shape.  ``expm`` and
  ``expm_frechet`` are not covered.  Note that numba's ``np.linalg`` raises
  on non-finite input where NumPy would return NaNs.
"""
from __future__ import annotations

import hashlib
import itertools
import threading

import numba
import numpy as np

from ...primitives import contraction as _C
from ...primitives import elementwise as _E
from ...primitives import indexing as _I
from ...primitives import linalg as _L
from ...primitives import misc as _M
from ...primitives import prng as _prng
from ...primitives import reductions as _R
from ...primitives import sorting as _SO
from .scipy_c import _F4, _F8, _extern, _fuse

__all__ = ["KERNELS", "kernel_names", "kernel_for"]

KERNELS = {}
_cache = {}
_cache_lock = threading.Lock()
_NONE = object()


def kernel_names():
    """Sorted names of the primitives that have a kernel factory."""
    return sorted(p.name for p in KERNELS)


def kernel_for(eqn):
    """The kernel of ``eqn`` (an njit function), or ``None`` if there is none."""
    factory = KERNELS.get(eqn.prim)
    return None if factory is None else factory(eqn)


# ---------------------------------------------------------------------------
# Registration and caching


def _freeze(v):
    """A hashable key for a params value (slices are not hashable before 3.12)."""
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_freeze(e) for e in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(e)) for k, e in v.items()))
    if v is _I.ARRAY:
        return "ARRAY"
    try:
        hash(v)
    except TypeError:
        return repr(v)
    return v


def _signature(eqn, shape_generic):
    def sig(aval):
        dims = aval.ndim if shape_generic else tuple(aval.shape)
        if shape_generic and any(d == 0 for d in aval.shape):
            dims = (dims, "empty")  # kernels may decline empty arrays
        return dims, np.dtype(aval.dtype).str
    ins = tuple(sig(a.aval) for a in eqn.inputs)
    outs = tuple(sig(v.aval) for v in eqn.outputs)
    return (eqn.prim.name, _freeze(eqn.params), ins, outs)


def _register(*prims, shape_generic=False):
    """Register ``build(prim, in_avals, out_avals, **params)`` as the factory of ``prims``.

    The factory caches the built kernel (or ``None``) per equation signature:
    per shapes, or only per ranks if the kernel is ``shape_generic``.
    """
    def deco(build):
        def factory(eqn):
            key = _signature(eqn, shape_generic)
            hit = _cache.get(key)
            if hit is None:
                with _cache_lock:
                    hit = _cache.get(key)
                    if hit is None:
                        in_avals = [a.aval for a in eqn.inputs]
                        out_avals = [v.aval for v in eqn.outputs]
                        kern = build(eqn.prim, in_avals, out_avals, **eqn.params)
                        hit = _NONE if kern is None else kern
                        _cache[key] = hit
            return None if hit is _NONE else hit
        for p in prims:
            KERNELS[p] = factory
        return build
    return deco


# ---------------------------------------------------------------------------
# Source generation helpers


class _Src:
    """Python source of one generated kernel, built line by line."""

    def __init__(self):
        self.lines = []
        self.depth = 0

    def __call__(self, line):
        self.lines.append("    " * self.depth + line)

    def indent(self):
        self.depth += 1

    def dedent(self):
        self.depth -= 1

    def text(self):
        return "\n".join(self.lines) + "\n"


_counter = itertools.count()


def _code_key(src, glb):
    """A name for the code of a kernel: its source and what its globals are (another
    kernel by its own key, a function by its module and name, else its repr)."""
    parts = [src]
    for k, v in sorted(glb.items()):
        desc = getattr(v, "tangentia_key", None) or (
            f"{getattr(v, '__module__', '')}.{v.__qualname__}" if hasattr(v, "__qualname__")
            else repr(v))
        parts.append(f"{k}={desc}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def _njit(*args, **opts):
    """``numba.njit`` for a kernel's function made inside a factory, named by its code and
    what it closes over (as ``_compile`` names generated kernels): the closures of one
    factory share a qualified name, and numba's symbol adds only a counter of the process,
    so a program in numba's disk cache that called ``det``'s core linked, in a process that
    had compiled ``slogdet``'s first, to that one (``det`` of a 3x3 matrix of det 18 gave
    1.0, slogdet's sign)."""
    def wrap(py):
        code = py.__code__
        cells = zip(code.co_freevars, py.__closure__ or ())
        key = _code_key(f"{py.__qualname__}\n{code.co_code.hex()}\n{code.co_consts!r}\n"
                        f"{code.co_names!r}", {k: c.cell_contents for k, c in cells})
        py.__name__ = py.__qualname__ = f"{py.__name__}_{key}"
        fn = numba.njit(**opts)(py)
        fn.tangentia_key = key
        return fn
    return wrap(args[0]) if args and callable(args[0]) else wrap


def _compile(src, name, **glb):
    """Exec the generated source ``src`` defining ``name`` and njit it.

    The function is named by its code (``_code_key``): numba names a compiled function's
    symbol by its module and name and a counter of the process, and a generated module's
    function is ``<dynamic>.name``, so the kernel of ``cumsum`` of ``f64[48]`` and that of
    ``f64[32]`` compiled in another process (its code in numba's disk cache, inside a program
    calling it) could have one symbol: a program loaded from the cache then called the
    kernel compiled first in this process (``jit(cumsum)`` of ``f64[32]`` returned 48
    elements after one of ``f64[48]``).  Equal names now mean equal code."""
    ns = {"np": np, "numba": numba}
    ns.update(_HELPERS)
    ns.update(glb)
    filename = f"<tangentia numba kernel {name} #{next(_counter)}>"
    exec(compile(src, filename, "exec"), ns)  # noqa: S102 - our own generated code
    py = ns[name]
    key = _code_key(src, glb)
    py.__name__ = py.__qualname__ = f"{name}_{key}"
    fn = numba.njit(py)
    fn.tangentia_source = src
    fn.tangentia_key = key
    return fn


def _idx(terms):
    """An index expression for an array with these per-axis index terms."""
    return "[" + ", ".join(terms) + "]" if terms else "[()]"


def _np_type(dtype):
    """Name of the NumPy scalar type of ``dtype`` (a global of generated code)."""
    return "np." + np.dtype(dtype).name.replace("bool", "bool_")


def _kind_ok(*dtypes, kinds="biuf"):
    return all(np.dtype(d).kind in kinds for d in dtypes)


def _is_float(*dtypes):
    return all(np.dtype(d) in (np.dtype(np.float32), np.dtype(np.float64)) for d in dtypes)


@numba.njit(inline="always")
def _np_min(a, b):
    # np.minimum: NaN propagates; b wins ties (so the sign of zeros is NumPy's).
    return a if (a < b or a != a) else b


@numba.njit(inline="always")
def _np_max(a, b):
    return a if (a > b or a != a) else b


@numba.njit(inline="always")
def _before(a, b, descending):
    """Strict order of NumPy's sorts: NaNs last ascending (first descending)."""
    if descending:
        return a > b or (a != a and b == b)
    return a < b or (b != b and a == a)


@numba.njit
def _stable_argsort(vals, perm, tmp, descending):
    """Stable merge sort of ``vals`` (1-d) into the permutation ``perm``."""
    n = vals.shape[0]
    for i in range(n):
        perm[i] = i
    run = 16
    for lo in range(0, n, run):  # insertion sort of short runs
        hi = min(lo + run, n)
        for i in range(lo + 1, hi):
            p = perm[i]
            v = vals[p]
            j = i
            while j > lo and _before(v, vals[perm[j - 1]], descending):
                perm[j] = perm[j - 1]
                j -= 1
            perm[j] = p
    width = run
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            if mid >= hi:
                continue
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _before(vals[perm[j]], vals[perm[i]], descending):
                    tmp[k] = perm[j]
                    j += 1
                else:
                    tmp[k] = perm[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = perm[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = perm[j]
                j += 1
                k += 1
            for t in range(lo, hi):
                perm[t] = tmp[t]
        width *= 2


@numba.njit(inline="always")
def _check_index(k, d):
    if k < 0:
        k += d
    if k < 0 or k >= d:
        raise IndexError("getitem/scatter: an index is out of bounds for its axis")
    return k


@numba.njit(inline="always")
def _clamp_index(k, d):
    if k < 0:
        k += d
    return 0 if k < 0 else (d - 1 if k >= d else k)


_HELPERS = {"_np_min": _np_min, "_np_max": _np_max, "_before": _before,
            "_stable_argsort": _stable_argsort, "_check_index": _check_index,
            "_clamp_index": _clamp_index}


def _loops(src, shape, skip=(), var="i"):
    """Open nested loops over ``shape`` (axes in ``skip`` excluded); returns
    the number of loops opened (close with ``src.dedent()`` each)."""
    n = 0
    for d, size in enumerate(shape):
        if d in skip:
            continue
        src(f"for {var}{d} in range({size}):")
        src.indent()
        n += 1
    return n


def _close(src, n):
    for _ in range(n):
        src.dedent()


# ---------------------------------------------------------------------------
# getitem / scatter


class _IndexPlan:
    """How an indexed array's elements map to the positions of the result.

    ``out_shape`` is the indexed shape; for each axis of the indexed array,
    ``axis_terms[ax]`` is ``("expr", text)`` (an expression in the loop
    variables ``i<d>`` over the indexed shape) or ``("adv", text, depth)``: a
    checked integer read from an index array, to compute once the loops up
    to ``depth`` are open.
    """

    def __init__(self, x_shape, spec, array_shapes, clamp=False):
        spec = tuple(spec)
        check = "_clamp_index" if clamp else "_check_index"   # (getitem's ``clamp``)
        has_adv = any(e is _I.ARRAY for e in spec)
        nd = len(x_shape)
        consumed = sum(1 for e in spec if e is not None and e is not Ellipsis)
        if sum(1 for e in spec if e is Ellipsis) > 1 or consumed > nd:
            raise _Unsupported
        # (kind, payload, axis, position-in-spec)
        entries = []
        ax = 0
        arrays = iter(range(len(array_shapes)))
        for pos, e in enumerate(spec):
            if e is None:
                entries.append(("none", None, None, pos))
            elif e is Ellipsis:
                for _ in range(nd - consumed):
                    entries.append(("slice", slice(None), ax, pos))
                    ax += 1
            elif isinstance(e, slice):
                entries.append(("slice", e, ax, pos))
                ax += 1
            elif e is _I.ARRAY:
                entries.append(("adv", next(arrays), ax, pos))
                ax += 1
            elif isinstance(e, (int, np.integer)) and not isinstance(e, bool):
                k = int(e)
                if not -x_shape[ax] <= k < x_shape[ax]:
                    raise _Unsupported
                k %= x_shape[ax]
                entries.append(("advconst" if has_adv else "int", k, ax, pos))
                ax += 1
            else:
                raise _Unsupported
        pos_end = len(spec)
        while ax < nd:
            entries.append(("slice", slice(None), ax, pos_end))
            ax += 1
            pos_end += 1

        adv = [e for e in entries if e[0] in ("adv", "advconst")]
        bshape = np.broadcast_shapes(*[array_shapes[e[1]] for e in adv if e[0] == "adv"]) \
            if any(e[0] == "adv" for e in adv) else ()
        r = len(bshape)
        positions = [e[3] for e in adv]
        adjacent = all(b == a + 1 for a, b in zip(positions, positions[1:]))

        out_shape = []
        self.axis_terms = [None] * nd
        block_dims = []

        def add_block():
            block_dims.extend(range(len(out_shape), len(out_shape) + r))
            out_shape.extend(bshape)

        if adv and not adjacent:
            add_block()
        placed = not adv or not adjacent
        for kind, payload, ax, _ in entries:
            if kind == "none":
                out_shape.append(1)
            elif kind == "slice":
                start, stop, step = payload.indices(x_shape[ax])
                length = len(range(start, stop, step))
                d = len(out_shape)
                out_shape.append(length)
                self.axis_terms[ax] = ("expr", f"({start} + {step} * i{d})")
            elif kind == "int":
                self.axis_terms[ax] = ("expr", str(payload))
            elif not placed:
                add_block()
                placed = True
        for kind, payload, ax, _ in entries:
            if kind == "advconst":
                self.axis_terms[ax] = ("expr", str(payload))
            elif kind == "adv":
                shp = array_shapes[payload]
                terms = []
                for t, size in enumerate(shp):
                    dim = block_dims[r - len(shp) + t]
                    terms.append("0" if size == 1 and bshape[r - len(shp) + t] != 1
                                 else f"i{dim}")
                used = [int(t[1:]) for t in terms if t != "0"]
                depth = max(used) + 1 if used else 0
                text = f"{check}(np.int64(a{payload}{_idx(terms)}), {x_shape[ax]})"
                self.axis_terms[ax] = ("adv", text, depth)
        self.out_shape = tuple(out_shape)

    def x_index(self):
        return _idx([t[1] if t[0] == "expr" else f"s{ax}"
                     for ax, t in enumerate(self.axis_terms)])

    def emit_loops(self, src):
        """Open the loops over ``out_shape``, computing each index-array read
        as soon as its loop variables exist; returns the loop count."""
        def emit_at(depth):
            for ax, t in enumerate(self.axis_terms):
                if t[0] == "adv" and t[2] == depth:
                    src(f"s{ax} = {t[1]}")
        emit_at(0)
        for d, size in enumerate(self.out_shape):
            src(f"for i{d} in range({size}):")
            src.indent()
            emit_at(d + 1)
        return len(self.out_shape)


class _Unsupported(Exception):
    """A case a kernel does not cover (the factory returns None)."""


def _plan(x_aval, spec, array_avals, indexed_shape, clamp=False):
    try:
        plan = _IndexPlan(tuple(x_aval.shape), spec, [tuple(a.shape) for a in array_avals],
                          clamp)
    except (_Unsupported, ValueError):
        return None
    return plan if plan.out_shape == tuple(indexed_shape) else None


@_register(_I.getitem_p)
def _build_getitem(prim, ins, outs, spec, unique_indices=False, indices_are_sorted=False,
                   clamp=False):
    # The hints change nothing here: one loop over the index visits every entry.
    x, *arrays = ins
    out = outs[0]
    if not _kind_ok(x.dtype, kinds="biufc") or not _kind_ok(*[a.dtype for a in arrays], kinds="iu"):
        return None
    plan = _plan(x, spec, arrays, out.shape, clamp)
    if plan is None:
        return None
    args = ", ".join(["x"] + [f"a{j}" for j in range(len(arrays))])
    src = _Src()
    src(f"def getitem({args}):")
    src.indent()
    src(f"out = np.empty({tuple(out.shape)}, {_np_type(out.dtype)})")
    n = plan.emit_loops(src)
    src(f"out{_idx([f'i{d}' for d in range(len(out.shape))])} = x{plan.x_index()}")
    _close(src, n)
    src("return out")
    return _compile(src.text(), "getitem")


_SCATTER_UPDATE = {
    "add": "o + v", "mul": "o * v", "min": "_np_min(o, v)", "max": "_np_max(o, v)",
}


@_register(_I.scatter_p)
def _build_scatter(prim, ins, outs, spec, mode, unique_indices=False,
                   indices_are_sorted=False):
    # The loop writes updates in index order (a repeated entry keeps the last, as
    # NumPy), which the derivative rules rely on; the hints change nothing.
    x, y, *arrays = ins
    if not _kind_ok(x.dtype, y.dtype) or not _kind_ok(*[a.dtype for a in arrays], kinds="iu"):
        return None
    if mode != "set" and (mode not in _SCATTER_UPDATE
                          or not np.can_cast(y.dtype, x.dtype, "same_kind")):
        return None
    indexed = _I._indexed_aval("scatter", x, spec, arrays)
    plan = _plan(x, spec, arrays, indexed)
    if plan is None:
        return None
    nd = len(indexed)
    y_terms = []
    for t, size in enumerate(y.shape):
        d = nd - y.ndim + t
        y_terms.append("0" if size == 1 and indexed[d] != 1 else f"i{d}")
    args = ", ".join(["x", "y"] + [f"a{j}" for j in range(len(arrays))])
    src = _Src()
    src(f"def scatter({args}):")
    src.indent()
    src("out = x.copy()")
    n = plan.emit_loops(src)
    target = f"out{plan.x_index()}"
    if mode == "set":
        src(f"{target} = y{_idx(y_terms)}")
    else:
        src(f"o = {target}")
        src(f"v = y{_idx(y_terms)}")
        src(f"{target} = {_SCATTER_UPDATE[mode]}")
    _close(src, n)
    src("return out")
    return _compile(src.text(), "scatter")


# ---------------------------------------------------------------------------
# Cumulative sums, products and extrema


_CUMULATIVE = {
    _R.cumsum_p: "acc + v", _M.cumprod_p: "acc * v",
    _M.cummax_p: "_np_max(acc, v)", _M.cummin_p: "_np_min(acc, v)",
}


def _line_index(nd, axis, var):
    return _idx([var if d == axis else f"i{d}" for d in range(nd)])


@_register(*_CUMULATIVE)
def _build_cumulative(prim, ins, outs, axis, reverse):
    x, out = ins[0], outs[0]
    if not _kind_ok(x.dtype, out.dtype):
        return None
    n = x.shape[axis]
    T = _np_type(out.dtype)
    src = _Src()
    src("def cumulative(x):")
    src.indent()
    src(f"out = np.empty({tuple(out.shape)}, {T})")
    if n:
        first, rest = (n - 1, f"range({n - 2}, -1, -1)") if reverse else (0, f"range(1, {n})")
        loops = _loops(src, x.shape, skip=(axis,))
        src(f"acc = {T}(x{_line_index(x.ndim, axis, str(first))})")
        src(f"out{_line_index(x.ndim, axis, str(first))} = acc")
        src(f"for k in {rest}:")
        src.indent()
        src(f"v = {T}(x{_line_index(x.ndim, axis, 'k')})")
        src(f"acc = {T}({_CUMULATIVE[prim]})")
        src(f"out{_line_index(x.ndim, axis, 'k')} = acc")
        src.dedent()
        _close(src, loops)
    src("return out")
    return _compile(src.text(), "cumulative")


# ---------------------------------------------------------------------------
# sort, argsort, searchsorted


def _build_sorting(x, out, axis, descending, write):
    if not _kind_ok(x.dtype):
        return None
    n = x.shape[axis]
    src = _Src()
    src("def sorting(x):")
    src.indent()
    src(f"out = np.empty({tuple(out.shape)}, {_np_type(out.dtype)})")
    src(f"vals = np.empty({n}, {_np_type(x.dtype)})")
    src(f"perm = np.empty({n}, np.int64)")
    src(f"tmp = np.empty({n}, np.int64)")
    loops = _loops(src, x.shape, skip=(axis,))
    src(f"for k in range({n}):")
    src(f"    vals[k] = x{_line_index(x.ndim, axis, 'k')}")
    src(f"_stable_argsort(vals, perm, tmp, {descending})")
    src(f"for k in range({n}):")
    src(f"    out{_line_index(x.ndim, axis, 'k')} = {write}")
    _close(src, loops)
    src("return out")
    return _compile(src.text(), "sorting")


@_register(_SO.sort_p)
def _build_sort(prim, ins, outs, axis):
    return _build_sorting(ins[0], outs[0], axis, False, "vals[perm[k]]")


@_register(_SO.argsort_p)
def _build_argsort(prim, ins, outs, axis, descending):
    return _build_sorting(ins[0], outs[0], axis, bool(descending), "perm[k]")


@_register(_SO.searchsorted_p)
def _build_searchsorted(prim, ins, outs, side):
    a, v = ins
    if not _kind_ok(a.dtype, v.dtype) or side not in ("left", "right"):
        return None
    T = _np_type(np.result_type(a.dtype, v.dtype))
    n = a.shape[0]
    # NumPy's binary search, including its reuse of the previous key's
    # bracket (which decides the answer when ``a`` is not sorted).
    go_right = "_before(mid, key, False)" if side == "left" else "not _before(key, mid, False)"
    src = _Src()
    src("def searchsorted(a, v):")
    src.indent()
    src(f"out = np.empty({tuple(v.shape)}, np.int64)")
    src(f"ac = np.empty({n}, {T})")
    src(f"for k in range({n}):")
    src(f"    ac[k] = {T}(a[k])")
    src("lo = 0")
    src(f"hi = {n}")
    first = _idx(["0"] * v.ndim)
    if v.size:
        src(f"last = {T}(v{first})")
    loops = _loops(src, v.shape)
    src(f"key = {T}(v{_idx([f'i{d}' for d in range(v.ndim)])})")
    src("if _before(last, key, False):")
    src(f"    hi = {n}")
    src("else:")
    src("    lo = 0")
    src(f"    hi = hi + 1 if hi < {n} else {n}")
    src("last = key")
    src("while lo < hi:")
    src("    m = lo + ((hi - lo) >> 1)")
    src("    mid = ac[m]")
    src(f"    if {go_right}:")
    src("        lo = m + 1")
    src("    else:")
    src("        hi = m")
    src(f"out{_idx([f'i{d}' for d in range(v.ndim)])} = lo")
    _close(src, loops)
    src("return out")
    return _compile(src.text(), "searchsorted")


# ---------------------------------------------------------------------------
# random_bits: JAX's threefry2x32 (partitionable counters), as prng.random_bits_p

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_PARITY = np.uint64(0x1BD11BDA)
_ROT = np.array([[13, 15, 26, 6], [17, 29, 16, 24]], np.uint64)


@numba.njit(inline="always")
def _threefry2x32(k1, k2, x1, x2):
    """Threefry-2x32, 20 rounds, on uint64 values below 2**32 (wrapped by masking)."""
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    x1 = (x1 + k1) & _M32
    x2 = (x2 + k2) & _M32
    for i in range(5):
        for j in range(4):
            r = _ROT[i % 2, j]
            x1 = (x1 + x2) & _M32
            x2 = x1 ^ (((x2 << r) | (x2 >> (_S32 - r))) & _M32)
        x1 = (x1 + ks[(i + 1) % 3]) & _M32
        x2 = (x2 + ks[(i + 2) % 3] + np.uint64(i + 1)) & _M32
    return x1, x2


@_register(_prng.random_bits_p)
def _build_random_bits(prim, ins, outs, shape, bit_width):
    key, out = ins[0], outs[0]
    if bit_width not in (8, 16, 32, 64) or key.dtype != np.uint32:
        return None
    n = int(np.prod(shape, dtype=np.int64))
    src = _Src()
    src("def random_bits(key):")
    src.indent()
    batch = key.shape[:-1]
    nkeys = int(np.prod(batch, dtype=np.int64))
    src(f"flat = np.empty(({nkeys}, {n}), {_np_type(out.dtype)})")
    src("b = 0")
    loops = _loops(src, batch)
    lead = [f"i{d}" for d in range(len(batch))]
    src(f"k1 = np.uint64(key{_idx(lead + ['0'])})")
    src(f"k2 = np.uint64(key{_idx(lead + ['1'])})")
    src(f"for j in range({n}):")
    src("    c = np.uint64(j)")
    src("    y1, y2 = _threefry2x32(k1, k2, c >> _S32, c & _M32)")
    if bit_width == 64:
        src("    flat[b, j] = (y1 << _S32) | y2")
    else:
        src(f"    flat[b, j] = {_np_type(out.dtype)}((y1 ^ y2) & np.uint64({(1 << bit_width) - 1}))")
    src("b += 1")
    _close(src, loops)
    src(f"return flat.reshape({tuple(out.shape)})")
    return _compile(src.text(), "random_bits", _threefry2x32=_threefry2x32, _S32=_S32, _M32=_M32)


# ---------------------------------------------------------------------------
# integer_pow


@numba.njit(inline="always")
def _int_pow(x, y):
    r = x - x + 1
    b = x
    while y:
        if y & 1:
            r = r * b
        b = b * b
        y >>= 1
    return r


def _map_kernel(name, x, out, expr, **glb):
    """An elementwise kernel ``out[i] = expr`` with ``v`` the element of ``x``."""
    src = _Src()
    src(f"def {name}(x):")
    src.indent()
    src(f"out = np.empty({tuple(out.shape)}, {_np_type(out.dtype)})")
    loops = _loops(src, x.shape)
    ix = _idx([f"i{d}" for d in range(x.ndim)])
    src(f"v = x{ix}")
    src(f"out{ix} = {expr}")
    _close(src, loops)
    src("return out")
    return _compile(src.text(), name, **glb)


@_register(_E.integer_pow_p)
def _build_integer_pow(prim, ins, outs, y):
    x, out = ins[0], outs[0]
    if not _kind_ok(x.dtype, kinds="iuf") or out.dtype != x.dtype:
        return None
    y = int(y)
    T = _np_type(x.dtype)
    if y == 2:
        expr = "v * v"
    elif x.dtype.kind == "f":
        expr = f"v ** {T}({float(y)!r})"  # libm pow, as NumPy's float power loop
    elif y < 0:
        return None
    else:
        expr = f"{T}(_int_pow(v, {y}))"
    return _map_kernel("integer_pow", x, out, expr, _int_pow=_int_pow)


# ---------------------------------------------------------------------------
# einsum (explicit subscripts) by nested loops


@_register(_C.einsum_p)
def _build_einsum(prim, ins, outs, subscripts):
    out = outs[0]
    if not _kind_ok(out.dtype, *[a.dtype for a in ins], kinds="iuf"):
        return None
    in_subs, out_sub = _C._parse(subscripts)
    sizes = {}
    for s, a in zip(in_subs, ins):
        for c, d in zip(s, a.shape):
            sizes[c] = max(sizes.get(c, 1), d)
    summed = [c for c in sizes if c not in out_sub]
    var = {c: f"l{k}" for k, c in enumerate(sizes)}
    T = _np_type(out.dtype)
    args = ", ".join(f"x{j}" for j in range(len(ins)))
    src = _Src()
    src(f"def einsum({args}):")
    src.indent()
    src(f"out = np.empty({tuple(out.shape)}, {T})")
    n_out = 0
    for c in out_sub:
        src(f"for {var[c]} in range({sizes[c]}):")
        src.indent()
        n_out += 1
    src(f"acc = {T}(0)")
    n_sum = 0
    for c in summed:
        src(f"for {var[c]} in range({sizes[c]}):")
        src.indent()
        n_sum += 1
    factors = []
    for j, (s, a) in enumerate(zip(in_subs, ins)):
        terms = ["0" if d == 1 and sizes[c] != 1 else var[c] for c, d in zip(s, a.shape)]
        factors.append(f"{T}(x{j}{_idx(terms)})")
    src(f"acc += {' * '.join(factors)}")
    _close(src, n_sum)
    src(f"out{_idx([var[c] for c in out_sub])} = acc")
    _close(src, n_out)
    src("return out")
    return _compile(src.text(), "einsum")


# ---------------------------------------------------------------------------
# Linear algebra: a per-matrix njit core, looped over the leading batch axes


def _batched(name, core_fn, ins, outs, core_nd, out_core_nd, as_tuple=False, **glb):
    """A kernel applying ``core_fn`` (single matrices -> one array or a tuple)
    over the common leading batch axes of the inputs.

    ``core_nd[i]`` is the number of trailing (matrix) axes of input ``i``,
    ``out_core_nd[j]`` that of output ``j``.  The kernel reads the shapes at
    run time, so one compilation serves every shape of the same ranks (the
    factories register with ``shape_generic=True``); it needs a non-empty batch.
    It returns a tuple if there are several outputs, or ``as_tuple`` (the one output of a
    primitive with ``multiple_results``, which the caller reads as ``r[0]``).
    """
    nb = ins[0].ndim - core_nd[0]
    lead = [f"i{d}" for d in range(nb)]
    multi = len(outs) > 1

    def part(var, nd_core, index):
        return var + (_idx(index + [":"] * nd_core) if nb else "")

    args = [f"x{j}" for j in range(len(ins))]
    res = [f"r{j}" for j in range(len(outs))]
    src = _Src()
    src(f"def {name}({', '.join(args)}):")
    src.indent()
    first = ["0"] * nb
    src(f"{', '.join(res)}{',' if multi else ''} = "
        f"_core({', '.join(part(a, k, first) for a, k in zip(args, core_nd))})")
    for j, (o, k) in enumerate(zip(outs, out_core_nd)):
        shape = f"x0.shape[:{nb}] + np.shape(r{j})" if nb else f"np.shape(r{j})"
        if not (nb or k):    # (one 0-d result: numba has no ``o[()] = r``)
            src(f"o{j} = np.array({_np_type(o.dtype)}(r{j}))")
            continue
        src(f"o{j} = np.empty({shape}, {_np_type(o.dtype)})")
        src(f"o{j}{_idx(first + [':'] * k)} = r{j}")
    if nb:
        for d in range(nb):
            src(f"for i{d} in range(x0.shape[{d}]):")
            src.indent()
        src(f"if {' and '.join(f'i{d} == 0' for d in range(nb))}:")
        src("    continue  # the first matrix is done")
        src(f"{', '.join(res)}{',' if multi else ''} = "
            f"_core({', '.join(part(a, k, lead) for a, k in zip(args, core_nd))})")
        for j, k in enumerate(out_core_nd):
            src(f"o{j}{_idx(lead + [':'] * k)} = r{j}")
        _close(src, nb)
    src("return " + (", ".join(f"o{j}" for j in range(len(outs))) + ","
                     if multi or as_tuple else "o0"))
    return _compile(src.text(), name, _core=core_fn, **glb)


def _linalg_ok(ins, outs, float_args=None):
    """float32/float64 matrices, nothing empty."""
    float_args = range(len(ins)) if float_args is None else float_args
    if any(a.size == 0 for a in ins) or any(o.size == 0 for o in outs):
        return False
    return _is_float(*[ins[i].dtype for i in float_args])


def _unary_linalg(prim, fn, n_out_core):
    @_register(prim, shape_generic=True)
    def build(prim, ins, outs, **params):
        if not _linalg_ok(ins, outs) or any(o.dtype != ins[0].dtype for o in outs):
            return None
        return _batched(prim.name, fn(**params), ins, outs, (2,), n_out_core)
    return build


def _singular_as_jax(prim, fast, dtype):
    """``fast`` (numba's np.linalg routine, which raises LinAlgError for a singular
    matrix) with, for a singular matrix only, JAX's values, as the NumPy backend's first
    calls give (primitives.linalg): for solve and inv, LAPACK's LU factors with a zero
    pivot and the triangular solves through them (inf and nan); for cholesky of a matrix
    that is not positive definite, NaN in the lower triangle."""
    solve = prim is _L.solve_p
    args = "a, b" if solve else "a"
    src = _Src()
    src(f"def guarded({args}):")
    src.indent()
    src("singular = False")
    src("try:")
    src(f"    x = _fast({args})")
    src("except Exception:")
    src("    singular = True")
    src(f"    x = np.empty((0, 0), {_np_type(dtype)})")
    src("if not singular:")
    src("    return x")
    if prim is _L.cholesky_p:   # not positive definite: NaN below the diagonal, zeros above
        src(f"x = np.zeros(a.shape, {_np_type(dtype)})")
        src("for i in range(a.shape[0]):")
        src("    for j in range(i + 1):")
        src("        x[i, j] = np.nan")
        src("return x")
        return _compile(src.text(), "guarded", _fast=fast)
    src("lu, piv, _ = _lu(a)")
    src(f"x = {'b.astype' if solve else 'np.eye(a.shape[0]).astype'}({_np_type(dtype)})")
    src("_lu_solve(lu, piv, x)")
    src("return x")
    return _compile(src.text(), "guarded", _fast=fast, _lu=_lu_core(dtype),
                    _lu_solve=_lu_solve_inplace)


@numba.njit
def _inv(a):
    return np.linalg.inv(np.ascontiguousarray(a))


@numba.njit
def _det(a):
    return np.linalg.det(np.ascontiguousarray(a))


@numba.njit
def _slogdet(a):
    return np.linalg.slogdet(np.ascontiguousarray(a))


@numba.njit
def _cholesky(a):
    return np.linalg.cholesky(np.ascontiguousarray(a))


@numba.njit
def _qr(a):
    return np.linalg.qr(np.ascontiguousarray(a))


@numba.njit
def _svd_full(a):
    return np.linalg.svd(np.ascontiguousarray(a), True)


@numba.njit
def _svd_reduced(a):
    return np.linalg.svd(np.ascontiguousarray(a), False)


@numba.njit
def _svd_values(a):
    return np.linalg.svd(np.ascontiguousarray(a), False)[1]


@numba.njit
def _nonfinite(a):
    """0: every entry finite; 1: an infinite one and no NaN; 2: a NaN."""
    kind = 0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            v = a[i, j]
            if v != v:
                return 2
            if v - v != 0:
                kind = 1
    return kind


def _det_nonfinite(dtype, log):
    """det (``log``: slogdet) of one matrix, for every input: numba's np.linalg routine
    raises LinAlgError for a matrix holding NaN or inf, where the NumPy backend (the
    first calls of a tiered ``jit``) gives NumPy's values, NaN where the input has a NaN
    (primitives.linalg's ``_nan_where_nan``), as JAX does.  A matrix holding inf is
    factored by LAPACK's getrf here too, and its sign and log|det| taken from the pivots
    as NumPy's umath_linalg does (an exactly zero pivot: sign 0, log|det| -inf; det =
    sign * exp(log|det|)), so both tiers give the same bits."""
    lu = _lu_core(dtype)
    fast = _slogdet if log else _det
    cast = np.float64 if np.dtype(dtype) == np.float64 else np.float32

    @_njit
    def core(a):
        kind = _nonfinite(a)
        if kind == 0:
            return fast(a)
        sign, logdet = np.nan, np.nan
        if kind == 1:
            f, piv, _ = lu(np.ascontiguousarray(a))
            sign, logdet = 1.0, 0.0
            for i in range(f.shape[0]):
                if piv[i] != i:
                    sign = -sign
            for i in range(f.shape[0]):
                if f[i, i] == 0:
                    sign, logdet = 0.0, -np.inf
                    break
                d = f[i, i]
                if d < 0:
                    sign, d = -sign, -d
                logdet += np.log(d)
        if log:
            return cast(sign), cast(logdet)
        return cast(sign * np.exp(logdet))
    return core


@_register(_L.det_p, _L.slogdet_p, shape_generic=True)
def _build_det(prim, ins, outs):
    if not _linalg_ok(ins, outs) or any(o.dtype != ins[0].dtype for o in outs):
        return None
    log = prim is _L.slogdet_p
    return _batched(prim.name, _det_nonfinite(ins[0].dtype, log), ins, outs, (2,),
                    (0, 0) if log else (0,))


@_register(_L.inv_p, _L.cholesky_p, shape_generic=True)
def _build_inv_or_cholesky(prim, ins, outs):
    if not _linalg_ok(ins, outs) or outs[0].dtype != ins[0].dtype:
        return None
    fast = _inv if prim is _L.inv_p else _cholesky
    return _batched(prim.name, _singular_as_jax(prim, fast, ins[0].dtype), ins, outs, (2,), (2,))


@_register(_L.qr_p)  # shape-specific: whether it is supported depends on m > n
def _build_qr(prim, ins, outs, full_matrices):
    m, n = ins[0].shape[-2:]
    if full_matrices and m > n:  # numba has the reduced QR only
        return None
    if not _linalg_ok(ins, outs):
        return None
    return _batched("qr", _qr, ins, outs, (2,), (2, 2))


def _svd_or_nan(fast, dtype, full_matrices, compute_uv):
    """``fast`` (numba's svd, which raises LinAlgError where LAPACK does not converge: NaN
    or inf entries) or, there, NaN of the outputs' shapes, as JAX's (and the NumPy
    backend's: primitives.linalg._svd_impl)."""
    t = _np_type(dtype)
    real = _np_type(np.empty(0, dtype).real.dtype)
    src = _Src()
    src("def guarded(a):")
    src.indent()
    src("try:")
    src("    return _fast(a)")
    src("except Exception:")
    src("    pass")
    src("m, n = a.shape")
    src("k = min(m, n)")
    src(f"s = np.full(k, np.nan, {real})")
    if not compute_uv:
        src("return s")
    else:
        src(f"u = np.full((m, {'m' if full_matrices else 'k'}), np.nan, {t})")
        src(f"vh = np.full(({'n' if full_matrices else 'k'}, n), np.nan, {t})")
        src("return u, s, vh")
    return _compile(src.text(), "guarded", _fast=fast)


@_register(_L.svd_p, shape_generic=True)
def _build_svd(prim, ins, outs, full_matrices, compute_uv):
    if not _linalg_ok(ins, outs):
        return None
    dt = ins[0].dtype
    if not compute_uv:
        # (svd_p has multiple results: the singular values alone are a tuple of one)
        return _batched("svd", _svd_or_nan(_svd_values, dt, False, False), ins, outs, (2,), (1,),
                        as_tuple=True)
    fast = _svd_full if full_matrices else _svd_reduced
    return _batched("svd", _svd_or_nan(fast, dt, full_matrices, True), ins, outs,
                    (2,), (2, 1, 2))


@_register(_L.solve_p, shape_generic=True)
def _build_solve(prim, ins, outs):
    a, b = ins
    if not _linalg_ok(ins, outs) or not a.dtype == b.dtype == outs[0].dtype:
        return None
    return _batched("solve", _singular_as_jax(prim, _solve, a.dtype), ins, outs, (2, 2), (2,))


@numba.njit
def _solve(a, b):
    return np.linalg.solve(np.ascontiguousarray(a), np.ascontiguousarray(b))


# -- LU (LAPACK getrf, the routine scipy.linalg.lu_factor calls) and solves


def _lapack(routine, dtype):
    """numba's binding of a LAPACK routine (SciPy's LAPACK, as scipy.linalg
    uses) and its type character.  ``numba.np.linalg._LAPACK`` is internal to
    numba; it is what numba's own ``np.linalg`` functions call."""
    from numba.np.linalg import _LAPACK
    fn = getattr(_LAPACK(), routine)(numba.from_dtype(np.dtype(dtype)))
    return fn, ord("d" if np.dtype(dtype) == np.float64 else "s")


def _eigh_core(dtype, lower, vectors):
    """``?syevd`` reading the ``lower`` (or upper) triangle, as np.linalg.eigh."""
    evd, kind = _lapack("numba_ez_xxxevd", dtype)
    uplo = ord("L" if lower else "U")
    jobz = ord("V" if vectors else "N")
    w_dtype = np.dtype(dtype)

    @_njit
    def eigh(a):
        n = a.shape[0]
        acpy = a.T.copy().T  # a Fortran-ordered copy for LAPACK to overwrite
        w = np.empty(n, w_dtype)
        if evd(kind, jobz, uplo, n, acpy.ctypes, n, w.ctypes) != 0:
            raise np.linalg.LinAlgError("eigh: the eigenvalue algorithm did not converge")
        return w, acpy
    return eigh


@_register(_L.eigh_p, _L.eigvalsh_p, shape_generic=True)
def _build_eigh(prim, ins, outs, lower):
    if not _linalg_ok(ins, outs) or any(o.dtype != ins[0].dtype for o in outs):
        return None
    if prim is _L.eigh_p and ins[0].dtype == np.float32:
        # SciPy's ssyevd (numba's) and NumPy's flip the signs of about a
        # quarter of the float32 eigenvectors differently: fall back.
        return None
    core = _eigh_core(ins[0].dtype, lower, prim is _L.eigh_p)
    if prim is _L.eigh_p:
        return _batched("eigh", core, ins, outs, (2,), (1, 2))

    @_njit
    def eigvalsh(a):
        return core(a)[0]
    return _batched("eigvalsh", eigvalsh, ins, outs, (2,), (1,))


def _lu_core(dtype):
    getrf, kind = _lapack("numba_xxgetrf", dtype)

    @_njit
    def lu(a):
        m, n = a.shape
        acpy = a.T.copy().T  # a Fortran-ordered copy for LAPACK to overwrite
        k = min(m, n)
        ipiv = np.empty(k, np.int32)
        getrf(kind, m, n, acpy.ctypes, m, ipiv.ctypes)  # info > 0 (singular) is not an error
        piv = ipiv - np.int32(1)
        perm = np.arange(m).astype(np.int32)
        for i in range(k):
            j = piv[i]
            t = perm[i]
            perm[i] = perm[j]
            perm[j] = t
        return np.ascontiguousarray(acpy), piv, perm
    return lu


@_register(_L.lu_p, shape_generic=True)
def _build_lu(prim, ins, outs):
    if not _linalg_ok(ins, outs, float_args=(0,)) or outs[0].dtype != ins[0].dtype:
        return None
    return _batched("lu", _lu_core(ins[0].dtype), ins, outs, (2,), (2, 1, 1))


@numba.njit(error_model="numpy")
def _tri_solve_inplace(a, x, lower, trans, unit):
    """Overwrite ``x`` (n, k) with the solution of ``op(a) x = x``, where only
    the ``lower`` (or upper) triangle of ``a`` is read and ``op`` transposes if
    ``trans``.  It divides as IEEE 754 does (a zero on the diagonal gives inf and nan,
    JAX's values; the programs calling it compile it so anyway)."""
    n, k = x.shape
    forward = lower != trans  # op(a) is lower triangular
    for c in range(k):
        for step in range(n):
            i = step if forward else n - 1 - step
            s = x[i, c]
            if forward:
                for j in range(i):
                    s -= (a[j, i] if trans else a[i, j]) * x[j, c]
            else:
                for j in range(i + 1, n):
                    s -= (a[j, i] if trans else a[i, j]) * x[j, c]
            x[i, c] = s if unit else s / a[i, i]


@_register(_L.triangular_solve_p, shape_generic=True)
def _build_triangular_solve(prim, ins, outs, lower, trans, unit_diagonal):
    if not _linalg_ok(ins, outs):
        return None
    out_dtype = np.dtype(outs[0].dtype)

    @_njit
    def tri(a, b):
        x = b.astype(out_dtype)
        _tri_solve_inplace(a, x, lower, trans != 0, unit_diagonal)
        return x
    return _batched("triangular_solve", tri, ins, outs, (2, 2), (2,))


@numba.njit(error_model="numpy")
def _swap_rows(x, i, j):
    for c in range(x.shape[1]):
        t = x[i, c]
        x[i, c] = x[j, c]
        x[j, c] = t


@numba.njit(error_model="numpy")
def _lu_solve_inplace(lu, piv, x):
    """Overwrite ``x`` (n, k) with the solution of ``a x = x`` from ``a``'s LU factors
    ``lu`` and pivots ``piv`` (LAPACK's getrf, 0-based)."""
    for i in range(piv.shape[0]):
        if piv[i] != i:
            _swap_rows(x, i, piv[i])
    _tri_solve_inplace(lu, x, True, False, True)
    _tri_solve_inplace(lu, x, False, False, False)


@_register(_L.lu_solve_p, shape_generic=True)
def _build_lu_solve(prim, ins, outs, trans):
    lu_a, piv, b = ins
    if not _linalg_ok(ins, outs, float_args=(0, 2)) or piv.dtype.kind not in "iu":
        return None
    out_dtype = np.dtype(outs[0].dtype)
    transposed = trans != 0

    @_njit
    def lu_solve(lu, piv, b):
        x = b.astype(out_dtype)
        if not transposed:
            _lu_solve_inplace(lu, piv, x)
        else:
            _tri_solve_inplace(lu, x, False, True, False)
            _tri_solve_inplace(lu, x, True, True, True)
            for i in range(piv.shape[0] - 1, -1, -1):
                if piv[i] != i:
                    _swap_rows(x, i, piv[i])
        return x
    return _batched("lu_solve", lu_solve, ins, outs, (2, 1, 2), (2,))


@_register(_L.lu_pivots_to_permutation_p, shape_generic=True)
def _build_pivots_to_permutation(prim, ins, outs, permutation_size, inverse):
    piv = ins[0]
    if piv.dtype.kind not in "iu":
        return None

    @_njit
    def p2p(piv):
        perm = np.arange(permutation_size).astype(np.int32)
        for i in range(piv.shape[0]):
            j = piv[i]
            t = perm[i]
            perm[i] = perm[j]
            perm[j] = t
        if not inverse:
            return perm
        inv = np.empty(permutation_size, np.int32)
        for i in range(permutation_size):
            inv[perm[i]] = i
        return inv
    return _batched("lu_pivots_to_permutation", p2p, ins, outs, (1,), (1,))


# ---------------------------------------------------------------------------
# random_gamma: JAX's _gamma_one (Marsaglia and Tsang's rejection sampler on threefry
# bits), as prng._gamma_one computes it for all elements at once: here one element at a
# time, which draws the same keys (an element's rejection loop consumes only its own),
# in the sample's dtype (float32 arithmetic for float32, as NumPy's).  erfinv is SciPy's C
# function (its float32 variant for float32); log and sqrt are libm's where NumPy ran its
# own SIMD loops, so a sample may differ in its last bits (and, where a rejection test
# falls within those bits, be another draw: not seen on 10^5 samples).

_GAMMA_MAX_STEPS = 1 << 20    # rejections per sample at most (then NaN): the loop ends


@numba.njit(inline="always")
def _split_key(k1, k2, i):
    """Key ``i`` of ``jax.random.split(key)`` (prng._split_np), as two uint64 words."""
    return _threefry2x32(k1, k2, np.uint64(0), np.uint64(i))


_GAMMA_SAMPLERS = {}


def _gamma_kernel_of(dtype):
    """``kernel(key, alpha, per_key, log_space)``: the samples of ``alpha``'s elements (key
    (B, 2) uint32, each split into ``per_key`` keys; alpha (B * per_key,) of ``dtype``)."""
    fn = _GAMMA_SAMPLERS.get(dtype)
    if fn is not None:
        return fn
    t = dtype.type
    finfo = np.finfo(dtype)
    wide = finfo.bits == 64
    # SciPy's C erfinv, its float32 variant for float32 (as scipy.special.erfinv's loops)
    erfinv = _extern(_fuse(0 if wide else 1, "erfinv"), [_F8 if wide else _F4])
    zero, one, two, third, c0331, half = t(0), t(1), t(2), t(1 / 3), t(0.0331), t(0.5)
    lo, sqrt2, nan = np.nextafter(t(-1), t(0)), t(np.sqrt(2)), t(np.nan)
    scale, shift = t(2.0 ** -finfo.nmant), np.uint64(finfo.bits - finfo.nmant)

    @_njit(inline="always")
    def uniform(k1, k2):
        y1, y2 = _threefry2x32(k1, k2, np.uint64(0), np.uint64(0))
        bits = ((y1 << _S32) | y2) if wide else ((y1 ^ y2) & _M32)
        return t(bits >> shift) * scale

    @_njit(error_model="numpy")
    def sample(k1, k2, alpha, log_space):
        boost = alpha >= one
        alpha_b = alpha if boost else alpha + one
        d = alpha_b - third
        c = third / np.sqrt(d)
        key1, key2 = _split_key(k1, k2, 0)
        sub1, sub2 = _split_key(k1, k2, 1)
        X, V, U = zero, one, two
        steps = 0
        while U >= one - c0331 * (X * X) and np.log(U) >= X * half + d * (one - V + np.log(V)):
            n1, n2 = _split_key(key1, key2, 0)
            x1, x2 = _split_key(key1, key2, 1)
            u1, u2 = _split_key(key1, key2, 2)
            key1, key2 = n1, n2
            x, v = zero, -one
            while v <= zero:
                steps += 1
                if steps > _GAMMA_MAX_STEPS:
                    return nan
                nx1, nx2 = _split_key(x1, x2, 0)
                s1, s2 = _split_key(x1, x2, 1)
                x1, x2 = nx1, nx2
                u = max(lo, uniform(s1, s2) * (one - lo) + lo)
                x = sqrt2 * t(erfinv(u))
                v = one + x * c
            X = x * x
            V = v * v * v
            U = uniform(u1, u2)
        last = uniform(sub1, sub2)
        if log_space:
            log_sample = np.log1p(-last)
            log_boost = zero if boost or log_sample == zero else log_sample * (one / alpha)
            return np.log(d) + np.log(V) + log_boost
        return d * V * (one if boost else (one - last) ** (one / alpha))

    @_njit(error_model="numpy")
    def kernel(key, alpha, per_key, log_space):
        out = np.empty(alpha.size, alpha.dtype)
        for b in range(key.shape[0]):
            k1, k2 = np.uint64(key[b, 0]), np.uint64(key[b, 1])
            for j in range(per_key):
                e1, e2 = _split_key(k1, k2, j)
                i = b * per_key + j
                out[i] = sample(e1, e2, alpha[i], log_space)
        return out
    _GAMMA_SAMPLERS[dtype] = kernel
    return kernel


@_register(_prng.random_gamma_p)
def _build_random_gamma(prim, ins, outs, log_space):
    key, a = ins
    dtype = np.dtype(a.dtype)
    if key.dtype != np.uint32 or dtype not in (np.float32, np.float64) or outs[0].dtype != dtype:
        return None
    batch = key.shape[:-1]
    nkeys = int(np.prod(batch, dtype=np.int64))
    per_key = int(np.prod(a.shape[len(batch):], dtype=np.int64))
    if nkeys * per_key == 0:
        return None
    kernel = _gamma_kernel_of(dtype)
    src = _Src()
    src("def random_gamma(key, a):")
    src(f"    out = _kernel(key.reshape(({nkeys}, 2)), a.reshape({nkeys * per_key}), {per_key}, "
        f"{bool(log_space)})")
    src(f"    return out.reshape({tuple(a.shape)})")
    return _compile(src.text(), "random_gamma", _kernel=kernel)
