"""Sorting and searching (``sort``, ``argsort``, ``searchsorted``, ...), set
operations (``unique``, ``isin``, ...) and ``bincount``.

Functions whose result shape depends on the values (``unique``, ``union1d``,
``bincount``, ...) run eagerly; ``unique`` and ``bincount`` also work under
jit/vmap given a static size."""
from __future__ import annotations

import builtins
import collections as _collections
import operator
from typing import TYPE_CHECKING

import numpy as _np

from .. import dtypes as _dtypes
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import sorting as _SO
from ._constants import float64, int64
from ._conversion import _in, astype
from ._creation import full
from ._elementwise import isnan, logical_and, logical_not, where
from ._indexing import flip, take, take_along_axis
from ._reductions import any, cumsum, min
from ._reductions import max as _max
from ._reductions import min as _min
from ._reductions import sum as _sum
from ._shapes import broadcast_to, concatenate, ndim, ravel, reshape, shape
from ._util import _aval, _axis, _concrete, _eager, _is_tracer, _value_dependent

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike


# ---------------------------------------------------------------------------
# Sorting


def _no_kind_or_order(fname: str, kind: Any, order: Any) -> None:
    """JAX's TypeErrors for ``kind=`` and ``order=`` (a ``kind`` was accepted and ignored)."""
    if kind is not None:
        raise TypeError(f"'kind' argument to {fname} is not supported. Use stable=True or "
                        f"stable=False to specify sort stability.")
    if order is not None:
        raise TypeError(f"'order' argument to {fname} is not supported. (tangentia: {fname}: "
                        f"structured arrays are not supported)")


def sort(a: ArrayLike, axis: int | None = -1, *, kind: None = None, order: None = None,
         stable: bool = True, descending: bool = False) -> Array:
    """Sorted copy of ``a`` (always stable); differentiable: the tangent of each
    sorted entry is that of the input entry that landed there."""
    _no_kind_or_order("sort", kind, order)
    a = _in(a, "sort")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a, "sort")
    out = _SO.sort(a, ax)
    return flip(out, ax) if descending else out


def argsort(a: ArrayLike, axis: int | None = -1, *, kind: None = None, order: None = None,
            stable: bool = True, descending: bool = False, dtype: DTypeLike | None = None
            ) -> Array:
    """Indices that sort ``a`` along ``axis`` (stable; zero derivative), of integer
    ``dtype`` if given (JAX's)."""
    _no_kind_or_order("argsort", kind, order)
    if dtype is not None and not _dtypes.is_integer(_np.dtype(dtype)):
        raise ValueError(f"argsort: argument 'dtype' must be an integer dtype, got {dtype!r}")
    a = _in(a, "argsort")
    if axis is None:
        a, axis = ravel(a), 0
    out = _SO.argsort(a, _axis(axis, a, "argsort"), descending)
    return out if dtype is None else astype(out, dtype)


def partition(a: ArrayLike, kth: int, axis: int = -1) -> Array:
    """Like NumPy's: entry ``kth`` is in sorted position, smaller ones before it
    and larger ones after (here the whole axis is sorted)."""
    a = _in(a, "partition")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a, "partition")
    _check_kth(kth, shape(a)[ax], "partition")
    return _SO.sort(a, ax)


def argpartition(a: ArrayLike, kth: int, axis: int = -1) -> Array:
    """Indices that partition ``a`` (here: that sort it along ``axis``)."""
    a = _in(a, "argpartition")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a, "argpartition")
    _check_kth(kth, shape(a)[ax], "argpartition")
    return _SO.argsort(a, ax)


def _check_kth(kth, n, fname):
    ks = _np.atleast_1d(_np.asarray(_concrete(kth, fname, "kth")))
    if ks.dtype.kind not in "iu":
        raise TypeError(f"{fname}: argument 'kth' must be an integer or integers, got {kth!r}")
    if ks.size and (ks.min() < -n or ks.max() >= n):
        raise ValueError(f"{fname}: kth={kth!r} is out of bounds for an axis of size {n}")


def lexsort(keys: Any, axis: int = -1) -> Array:
    """Indices sorting by several keys; the last key is the primary one."""
    keys = [_in(k, "lexsort", f"keys[{i}]") for i, k in enumerate(keys)]
    if not keys:
        raise TypeError("lexsort: argument 'keys' needs at least one key")
    s = shape(keys[0])
    if builtins.any(shape(k) != s for k in keys):
        raise ValueError(f"lexsort: all keys need to be the same shape, got "
                         f"{[shape(k) for k in keys]}")
    if not s:   # 0-d keys: one element, whose index is 0 (NumPy's and JAX's)
        if axis not in (0, -1):
            _axis(axis, keys[0], "lexsort", "keys")
        return _np.zeros((), int64)
    ax = _axis(axis, keys[0], "lexsort", "keys")
    perm = broadcast_to(_np.arange(s[ax]).reshape([-1 if i == ax else 1 for i in range(len(s))]),
                        s)
    for k in keys:  # least significant first; each sort is stable
        perm = take_along_axis(perm, _SO.argsort(take_along_axis(k, perm, ax), ax), ax)
    return perm


# ---------------------------------------------------------------------------
# Searching


def searchsorted(a: ArrayLike, v: ArrayLike, side: str = "left", sorter: ArrayLike | None = None, *,
                 method: str = "scan") -> Array:
    """Indices where ``v`` would be inserted into the sorted 1-D ``a`` (zero derivative)."""
    a = _in(a, "searchsorted", "a")
    v = _in(v, "searchsorted", "v")
    if ndim(a) != 1:
        raise ValueError(f"searchsorted: argument 'a' must be 1-D, got shape {shape(a)}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: argument 'side' must be 'left' or 'right', got {side!r}")
    if sorter is not None:
        a = take(a, sorter)
    return _SO.searchsorted(a, v, side)


def digitize(x: ArrayLike, bins: ArrayLike, right: bool = False, *,
             method: str | None = None) -> Array:
    """Indices of the bins (monotonic, increasing or decreasing) holding ``x``.  ``method``
    (JAX's searchsorted strategy: 'scan', 'scan_unrolled', 'sort', 'compare_all') is
    accepted; every method gives the same result here."""
    if method is not None and method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"digitize: argument 'method' must be one of 'scan', 'scan_unrolled', "
                         f"'sort', 'compare_all' or None, got {method!r}")
    x = _in(x, "digitize", "x")
    bins = _in(bins, "digitize", "bins")
    if ndim(bins) != 1:
        raise ValueError(f"digitize: argument 'bins' must be 1-D, got shape {shape(bins)}")
    n = shape(bins)[0]
    if n == 0:
        return _np.zeros(shape(x), int64) if not _is_tracer(x) else astype(x, int64) * 0
    side = "left" if right else "right"
    inc = _SO.searchsorted(bins, x, side)
    # decreasing bins: bins[i-1] > x >= bins[i] (right=False), as NumPy's (the sides were
    # swapped: x equal to a bin edge landed one bin off)
    dec = _E.sub(n, _SO.searchsorted(flip(bins), x, "left" if right else "right"))
    if not _is_tracer(bins):
        return inc if bins[-1] >= bins[0] else dec
    return where(_E.ge(bins[-1], bins[0]), inc, dec)


# ---------------------------------------------------------------------------
# Sets and counting


def unique(ar: ArrayLike, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: ArrayLike | None = None, sorted: bool = True
           ) -> Any:
    """Sorted unique entries (NumPy's options).  The result's shape depends on the
    values, so under jit/vmap a static ``size`` is needed (axis=None only): the
    result is cut or padded to ``size`` entries with ``fill_value`` (default: the
    smallest entry), counts with 0 and indices with 0."""
    if size is None or not _is_tracer(ar):
        arr = _value_dependent(ar, "unique", "ar")
        out = _np.unique(arr, return_index, return_inverse, return_counts, axis,
                         equal_nan=equal_nan)
        if size is None:
            return out
        if axis is not None:
            raise NotImplementedError("unique: 'size' is only supported with axis=None")
        outs = list(out) if isinstance(out, tuple) else [out]
        size = operator.index(size)
        vals = outs[0]
        if not vals.size and size and fill_value is None:
            raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                             "fill_value must be specified")
        # JAX's default fill is the first sorted entry (min() made it NaN when one is NaN)
        fill = (vals[0] if vals.size else 0) if fill_value is None else fill_value
        outs[0] = _np.concatenate([vals, _np.full(builtins.max(size - vals.size, 0), fill,
                                                  vals.dtype)])[:size]
        k = 1
        if return_index:
            # padded with the first entry's index, as JAX's (it was 0)
            outs[k] = _np.concatenate([outs[k], _np.full(builtins.max(size - vals.size, 0),
                                                         outs[k][0] if vals.size else 0,
                                                         outs[k].dtype)])[:size]
            k += 1
        if return_inverse:
            k += 1
        if return_counts:
            outs[k] = _np.concatenate([outs[k], _np.zeros(builtins.max(size - vals.size, 0),
                                                          outs[k].dtype)])[:size]
        return tuple(outs) if len(outs) > 1 else outs[0]
    if axis is not None:
        raise NotImplementedError("unique: 'size' is only supported with axis=None")
    size = operator.index(size)
    flat = ravel(ar)
    n = shape(flat)[0]
    perm = _SO.argsort(flat, 0)
    srt = take(flat, perm)
    if n == 0:
        first = _np.zeros(0, bool)
    else:
        neq = _E.ne(srt[1:], srt[:-1])
        if equal_nan and _aval(flat).dtype.kind in "fc":
            neq = logical_and(neq, logical_not(logical_and(isnan(srt[1:]), isnan(srt[:-1]))))
        first = concatenate([_np.ones(1, bool), neq])
    group = _E.sub(cumsum(astype(first, int64)), 1)
    slot = where(logical_and(first, _E.lt(group, size)), group, size)
    fill = (srt[0] if n else 0) if fill_value is None else fill_value  # JAX's: first sorted
    buf = full((size + 1,), astype(fill, _aval(flat).dtype) if _is_tracer(fill) else
               _np.asarray(fill, _aval(flat).dtype), _aval(flat).dtype)
    outs = [_I.scatter(buf, srt, (_I.ARRAY,), (slot,), "set")[:size]]
    if return_index:
        pad = full((size + 1,), perm[0] if n else 0, int64)  # JAX's: the first entry's index
        outs.append(_I.scatter(pad, perm, (_I.ARRAY,), (slot,), "set")[:size])
    if return_inverse:
        inv = _I.scatter(_np.zeros(n, int64), group, (_I.ARRAY,), (perm,), "set")
        outs.append(reshape(inv, shape(ar)))
    if return_counts:
        grp = where(_E.lt(group, size), group, size)
        outs.append(_I.scatter(_np.zeros(size + 1, int64), _np.ones(n, int64), (_I.ARRAY,),
                               (grp,), "add")[:size])
    return tuple(outs) if len(outs) > 1 else outs[0]


UniqueAllResult = _collections.namedtuple("UniqueAllResult",
                                          ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = _collections.namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = _collections.namedtuple("UniqueInverseResult",
                                              ["values", "inverse_indices"])


def unique_all(x: ArrayLike, /, *, size: int | None = None, fill_value: ArrayLike | None = None
               ) -> tuple[Array, ...]:
    """Unique values, first indices, inverse indices and counts (the array API's
    ``unique_all``; NaNs are distinct, as there).  Under jit pass ``size``."""
    v, i, inv, c = unique(x, True, True, True, equal_nan=False, size=size, fill_value=fill_value)
    return UniqueAllResult(v, i, reshape(inv, shape(x)), c)


def unique_counts(x: ArrayLike, /, *, size: int | None = None, fill_value: ArrayLike | None = None
                  ) -> tuple[Array, ...]:
    """Unique values and their counts (the array API's ``unique_counts``)."""
    v, c = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    return UniqueCountsResult(v, c)


def unique_inverse(x: ArrayLike, /, *, size: int | None = None, fill_value: ArrayLike | None = None
                   ) -> tuple[Array, ...]:
    """Unique values and the inverse indices, shaped like ``x`` (``unique_inverse``)."""
    v, inv = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    return UniqueInverseResult(v, reshape(inv, shape(x)))


def unique_values(x: ArrayLike, /, *, size: int | None = None, fill_value: ArrayLike | None = None
                  ) -> Array:
    """Unique values (the array API's ``unique_values``)."""
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def _set_size(fname: str, size: Any) -> int:
    size = operator.index(_concrete(size, fname, "size"))
    if size < 0:
        raise ValueError(f"{fname}: argument 'size' must be >= 0, got {size}")
    return size


def _set_inputs(fname: str, ar1: ArrayLike, ar2: ArrayLike, promote: bool = True
                ) -> tuple[Any, Any]:
    a = ravel(_in(ar1, fname, "ar1"))
    b = ravel(_in(ar2, fname, "ar2"))
    if promote:
        dt = _np.result_type(_aval(a).dtype, _aval(b).dtype)
        a, b = astype(a, dt), astype(b, dt)
    return a, b


def _firsts(srt: Any) -> Any:
    """Where a sorted 1-D array's entry differs from the one before (its first copy)."""
    if shape(srt)[0] == 0:
        return _np.zeros(0, bool)
    return concatenate([_np.ones(1, bool), _E.ne(srt[1:], srt[:-1])])


def _member(x: Any, test: Any) -> Any:
    """Whether each entry of 1-D ``x`` equals one of 1-D ``test`` (NaN equals nothing)."""
    if shape(test)[0] == 0 or shape(x)[0] == 0:
        return _np.zeros(shape(x), bool)
    return any(_E.eq(reshape(x, shape(x) + (1,)), test), -1)


def _compact(vals: Any, keep: Any, size: int, fill: Any) -> Any:
    """The entries of 1-D ``vals`` where ``keep``, in order, cut or padded to ``size``
    entries with ``fill`` (None: the smallest kept entry, 0 if none, as JAX's)."""
    dt = _aval(vals).dtype
    n = shape(vals)[0]
    k = astype(keep, int64)
    count = _np.sum(k) if _eager(k) else _sum(k)
    pos = _E.sub(cumsum(k), 1) if n else _np.zeros(0, int64)
    slot = where(logical_and(keep, _E.lt(pos, size)), pos, size)
    buf = _I.scatter(_np.zeros(size + 1, dt), vals, (_I.ARRAY,), (slot,), "set")[:size]
    live = _E.lt(_np.arange(size), count)
    if fill is None:
        # JAX's: the smallest result (pads first replaced by the largest, then min)
        hi = _max(where(live, buf, buf[0])) if size else 0
        fill = _min(where(live, buf, hi)) if size else 0
    else:
        fill = astype(fill, dt) if _is_tracer(fill) else _np.asarray(fill, dt)
    return where(live, buf, fill)


def _sorted_unique(a: Any) -> tuple[Any, Any, Any]:
    """Stable sort of 1-D ``a``: (sorted values, their positions in ``a``, first-copy mask)."""
    perm = _SO.argsort(a, 0)
    srt = take(a, perm)
    return srt, perm, _firsts(srt)


def setxor1d(ar1: ArrayLike, ar2: ArrayLike, assume_unique: bool = False, *,
             size: int | None = None, fill_value: ArrayLike | None = None) -> Array:
    """Sorted values in exactly one of the arrays.  The result's shape depends on the
    values, so under jit/vmap pass a static ``size``: the first ``size`` results, padded
    with ``fill_value`` (default: the smallest result, 0 if none), as JAX's."""
    if size is None:
        return _np.setxor1d(_value_dependent(ar1, "setxor1d", "ar1"),
                            _value_dependent(ar2, "setxor1d", "ar2"), assume_unique)
    size = _set_size("setxor1d", size)
    a, b = _set_inputs("setxor1d", ar1, ar2)
    sa, _, fa = _sorted_unique(a)
    sb, _, fb = _sorted_unique(b)
    vals = concatenate([sa, sb])
    keep = concatenate([logical_and(fa, logical_not(_member(sa, b))),
                        logical_and(fb, logical_not(_member(sb, a)))])
    # the kept values in sorted order: the others replaced by the largest kept one
    if shape(vals)[0]:
        lo = _min(vals)
        top = _max(where(keep, vals, lo))
        vals = _SO.sort(where(keep, vals, top), 0)
        keep = _E.lt(_np.arange(shape(vals)[0]), _sum(astype(keep, int64)))
    return _compact(vals, keep, size, fill_value)


def sort_complex(a: ArrayLike) -> Array:
    """Sorted by real part, then imaginary part; the result is complex."""
    a = _in(a, "sort_complex")
    dt = _np.result_type(_aval(a).dtype, _np.complex64)
    a = astype(ravel(a) if _aval(a).ndim == 0 else a, dt)
    if _eager(a):
        return _np.sort_complex(a).astype(dt)
    return sort(a, axis=-1)


def union1d(ar1: ArrayLike, ar2: ArrayLike, *, size: int | None = None,
            fill_value: ArrayLike | None = None) -> Array:
    """Sorted unique values in either array.  The result's shape depends on the values,
    so under jit/vmap pass a static ``size``: the first ``size`` values, padded with
    ``fill_value`` (default: the smallest value), as JAX's."""
    if size is None:
        return _np.union1d(_value_dependent(ar1, "union1d", "ar1"),
                           _value_dependent(ar2, "union1d", "ar2"))
    size = _set_size("union1d", size)
    a, b = _set_inputs("union1d", ar1, ar2)
    return unique(concatenate([a, b]), size=size, fill_value=fill_value)


def intersect1d(ar1: ArrayLike, ar2: ArrayLike, assume_unique: bool = False,
                return_indices: bool = False, *, size: int | None = None,
                fill_value: ArrayLike | None = None) -> Array | tuple[Array, Array, Array]:
    """Sorted unique values in both arrays (and, with ``return_indices``, the index of
    each one's first copy in ``ar1`` and in ``ar2``).  Under jit/vmap pass a static
    ``size``: the first ``size`` values, padded with ``fill_value`` (default: the
    smallest value, 0 if none) and the indices with ``ar1.size``/``ar2.size``, as JAX's."""
    if size is None:
        return _np.intersect1d(_value_dependent(ar1, "intersect1d", "ar1"),
                               _value_dependent(ar2, "intersect1d", "ar2"), assume_unique,
                               return_indices)
    size = _set_size("intersect1d", size)
    a, b = _set_inputs("intersect1d", ar1, ar2)
    sa, pa, fa = _sorted_unique(a)
    keep = logical_and(fa, _member(sa, b))
    vals = _compact(sa, keep, size, fill_value)
    if not return_indices:
        return vals
    n1, n2 = shape(a)[0], shape(b)[0]
    count = _sum(astype(keep, int64))
    live = _E.lt(_np.arange(size), count)
    i1 = _compact(pa, keep, size, n1)
    if n2:
        sb, pb, _ = _sorted_unique(b)
        j = _E.minimum(_SO.searchsorted(sb, vals, "left"), n2 - 1)
        i2 = where(live, take(pb, j), n2)
    else:
        i2 = full((size,), n2, int64)
    return vals, astype(i1, int64), astype(i2, int64)


def setdiff1d(ar1: ArrayLike, ar2: ArrayLike, assume_unique: bool = False, *,
              size: int | None = None, fill_value: ArrayLike | None = None) -> Array:
    """Sorted unique values of ``ar1`` not in ``ar2`` (in ``ar1``'s order with
    ``assume_unique``).  Under jit/vmap pass a static ``size``: the first ``size``
    values, padded with ``fill_value`` (default 0), as JAX's."""
    if size is None:
        return _np.setdiff1d(_value_dependent(ar1, "setdiff1d", "ar1"),
                             _value_dependent(ar2, "setdiff1d", "ar2"), assume_unique)
    size = _set_size("setdiff1d", size)
    a, b = _set_inputs("setdiff1d", ar1, ar2, promote=False)
    fill = 0 if fill_value is None else fill_value
    if assume_unique:
        return _compact(a, logical_not(_member(a, b)), size, fill)
    sa, _, fa = _sorted_unique(a)
    return _compact(sa, logical_and(fa, logical_not(_member(sa, b))), size, fill)


_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


def isin(element: ArrayLike, test_elements: ArrayLike, assume_unique: bool = False,
         invert: bool = False, *, method: str = "auto") -> Array:
    """Whether each entry of ``element`` is in ``test_elements``.  ``method`` (JAX's
    algorithm: 'auto', 'compare_all', 'binary_search', 'sort') gives the same result
    whichever is chosen."""
    if method not in _ISIN_METHODS:
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         f"'binary_search', 'sort', and 'auto' (tangentia: isin: argument "
                         f"'method')")
    element = _in(element, "isin", "element")
    test = ravel(_in(test_elements, "isin", "test_elements"))
    if _eager(element, test):
        return _np.asarray(_np.isin(element, test, invert=invert))
    hit = any(_E.eq(reshape(element, shape(element) + (1,)), test), -1)
    return logical_not(hit) if invert else hit


def bincount(x: ArrayLike, weights: ArrayLike | None = None, minlength: int = 0, *,
             length: int | None = None, out_sharding: Any = None) -> Array:
    """Counts (or summed weights) of each non-negative integer in ``x``.  Under
    jit/vmap pass a static ``length``; values outside [0, length) are dropped.
    ``out_sharding`` (JAX's) changes nothing on tangentia's one device."""
    x = _in(x, "bincount", "x")
    if ndim(x) != 1:
        raise ValueError(f"bincount: argument 'x' must be 1-D, got shape {shape(x)}")
    if _aval(x).dtype.kind not in "iub":
        raise TypeError(f"bincount: argument 'x' must contain integers, got "
                        f"{_aval(x).str_short()}")
    if weights is not None:
        weights = _in(weights, "bincount", "weights")
        if shape(weights) != shape(x):
            raise ValueError(f"bincount: arguments 'weights' {shape(weights)} and 'x' "
                             f"{shape(x)} must have the same shape")
    # JAX's: negative values count as 0 (NumPy raises for them)
    x = _E.maximum(x, _np.zeros((), _aval(x).dtype))
    if length is None:
        xv = _value_dependent(x, "bincount", "x")
        if _eager(x, weights):
            return _np.bincount(xv, weights, minlength)
        length = builtins.max(int(xv.max()) + 1 if xv.size else 0, minlength)
    length = operator.index(length)
    idx = where(logical_and(_E.ge(x, 0), _E.lt(x, length)), x, length)
    if weights is None:
        vals = _np.ones(shape(x), int64)
        buf = _np.zeros(length + 1, int64)
    else:
        vals = astype(weights, _np.result_type(_aval(weights).dtype, float64))
        buf = _np.zeros(length + 1, _aval(vals).dtype)
    return _I.scatter(buf, vals, (_I.ARRAY,), (idx,), "add")[:length]
