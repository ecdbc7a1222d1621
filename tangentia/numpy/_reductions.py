"""Reductions (``sum``, ``max``, ``mean``, ``argmax``, ...), cumulative
operations (``cumsum``, ``cumprod``, ...), their NaN-ignoring variants, and
whole-array comparisons (``allclose``, ``array_equal``, ``array_equiv``)."""
from __future__ import annotations

import builtins
import math
import operator
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from .. import dtypes as _dtypes
from ..primitives import elementwise as _E
from ..primitives import misc as _M
from ..primitives import reductions as _R
from ..primitives import structural as _S
from ._constants import float64, inf, int64, nan
from ._conversion import _arraylike, _in, asarray, astype
from ._elementwise import _equal, isclose, isnan, logical_and, logical_not, logical_or, sqrt, where
from ._shapes import broadcast_shapes, concatenate, ndim, ravel, shape
from ._util import _aval, _axes, _axis, _eager, _is_tracer, _no_out, _static_axis

if TYPE_CHECKING:
    from collections.abc import Callable
    from ..typing import Array, ArrayLike, Axis, DTypeLike

    # (below: made by core.eager_dispatch)
    sum: Callable[..., Array]; prod: Callable[..., Array]; max: Callable[..., Array]
    min: Callable[..., Array]


# ---------------------------------------------------------------------------
# Reductions


def _seq(a, fname):
    """A list or tuple argument as an array (NumPy takes them; entries may be traced)."""
    return _in(a, fname) if type(a) is list or type(a) is tuple else a


def _reduce(prim_fn, fname, a, axis, keepdims, dtype=None):
    a = _seq(a, fname)
    av = _aval(a)
    axes = _axes(axis, av.ndim, fname)
    if dtype is not None:
        a = astype(a, dtype)
    out = prim_fn(a, axes)
    if dtype is not None:
        out = _keep_dtype(out, a)
    if keepdims:
        out = _S.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(av.shape)))
    return out


def _keep_dtype(out, a):
    """``out`` in ``a``'s dtype: NumPy's add.reduce/accumulate widen integers below int64,
    while a reduction's explicit ``dtype=`` is its result's (as NumPy's and JAX's)."""
    dt = _aval(a).dtype
    return out if _aval(out).dtype == dt else astype(out, dt)


def _check_nonempty(a, axis, fname):
    av = _aval(a)
    axes = _axes(axis, av.ndim, fname)
    if builtins.any(av.shape[i] == 0 for i in axes):
        raise ValueError(f"{fname}: zero-size array to reduction operation {fname}, which has "
                         f"no identity (shape {av.shape})")


def _masked(a, where, fill):
    """``a`` with the entries outside ``where`` replaced by ``fill`` (a reduction's identity)."""
    if where is None:
        return a
    return _E.select(asarray(where) if not _is_tracer(where) else where, a, fill)


def _integer_dtype(a, dtype, promote_integers):
    """``dtype`` for a sum or product: with ``promote_integers=False`` (JAX's option) an
    integer or boolean input keeps its own dtype, where NumPy's (the default) widens it."""
    if dtype is None and not promote_integers and _aval(a).dtype.kind in "biu":
        return _aval(a).dtype
    return dtype


def _sum(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
         keepdims: bool = False, initial: ArrayLike | None = None,
         where: ArrayLike | None = None, promote_integers: bool = True) -> Array:
    """Sum along ``axis`` (of all entries if ``axis`` is None), over ``where`` only."""
    _no_out(out, "sum")
    dtype = _integer_dtype(a, dtype, promote_integers)
    out = _reduce(_R.reduce_sum, "sum", _masked(a, where, 0), axis, keepdims, dtype)
    # ``initial`` in the result's dtype, as NumPy's and JAX's: sum(arange(4), initial=0.5) was
    # 6.5 (float64); theirs 6 (int64)
    return out if initial is None else _E.add(out, astype(initial, _aval(out).dtype))


def _prod(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
          keepdims: bool = False, initial: ArrayLike | None = None,
          where: ArrayLike | None = None, promote_integers: bool = True) -> Array:
    """Product along ``axis`` (of all entries if ``axis`` is None), over ``where`` only."""
    _no_out(out, "prod")
    dtype = _integer_dtype(a, dtype, promote_integers)
    out = _reduce(_R.reduce_prod, "prod", _masked(a, where, 1), axis, keepdims, dtype)
    return out if initial is None else _E.mul(out, astype(initial, _aval(out).dtype))


def _extremum(fname, ufunc_name, reduce, combine) -> Callable[..., Array]:
    def fn(a: ArrayLike, axis: Axis = None, out: None = None, keepdims: bool = False,
           initial: ArrayLike | None = None, where: ArrayLike | None = None) -> Array:
        _no_out(out, fname)
        a = _seq(a, fname)
        if initial is None:
            if where is not None:
                raise ValueError(f"reduction operation {fname} does not have an identity, so to "
                                 "use a where mask one has to specify 'initial' (tangentia.numpy."
                                 f"{fname}: argument 'initial')")
            _check_nonempty(a, axis, fname)
            return _reduce(reduce, fname, a, axis, keepdims)
        av = _aval(a)
        initial = astype(initial, av.dtype)  # the array's dtype, as NumPy's and JAX's
        axes = _axes(axis, av.ndim, fname)
        if builtins.any(av.shape[i] == 0 for i in axes):  # nothing to reduce: ``initial``
            shape = tuple(1 if i in axes else d for i, d in enumerate(av.shape) if keepdims
                          or i not in axes)
            return _E.add(_np.zeros(shape, av.dtype), initial)
        out = _reduce(reduce, fname, _masked(a, where, initial), axis, keepdims)
        return combine(out, initial)
    fn.__name__ = f"_{fname}"
    fn.__doc__ = f"{ufunc_name} along ``axis`` (of all entries if ``axis`` is None), over ``where``."
    return fn


_max = _extremum("max", "Maximum", _R.reduce_max, _E.maximum)
_min = _extremum("min", "Minimum", _R.reduce_min, _E.minimum)


# Outside any transformation these are one ufunc reduction (the eager kernels
# live in primitives.reductions, the dispatch in core.eager_dispatch).
sum = _core.eager_dispatch(_R.reduce_sum_p, _R.eager_sum, traced=_sum, name="sum")
prod = _core.eager_dispatch(_R.reduce_prod_p, _R.eager_prod, traced=_prod, name="prod")
max = _core.eager_dispatch(_R.reduce_max_p, _R.eager_max, traced=_max, name="max")
min = _core.eager_dispatch(_R.reduce_min_p, _R.eager_min, traced=_min, name="min")
amax, amin = max, min


def _as_bool(a):
    return a if _aval(a).dtype.kind == "b" else _E.ne(a, 0)


def all(a: ArrayLike, axis: Axis = None, out: None = None, keepdims: bool = False, *,
        where: ArrayLike | None = None) -> Array:
    """Whether all entries along ``axis`` (within ``where``) are true."""
    _no_out(out, "all")
    a = _masked(_as_bool(_seq(a, "all")), where, True)
    return _reduce(lambda x, axes: _R.reduce_and_p.bind(x, axes=axes), "all", a, axis, keepdims)


def any(a: ArrayLike, axis: Axis = None, out: None = None, keepdims: bool = False, *,
        where: ArrayLike | None = None) -> Array:
    """Whether any entry along ``axis`` (within ``where``) is true."""
    _no_out(out, "any")
    a = _masked(_as_bool(_seq(a, "any")), where, False)
    return _reduce(lambda x, axes: _R.reduce_or_p.bind(x, axes=axes), "any", a, axis, keepdims)


def _count(a, axis, keepdims, where):
    """The number of entries reduced: a Python int, or an array with ``where``."""
    av = _aval(a)
    if where is None:
        return math.prod(av.shape[i] for i in _axes(axis, av.ndim, "mean"))
    w = _S.broadcast_to(asarray(where) if not _is_tracer(where) else where, av.shape)
    return sum(astype(w, int64), axis, keepdims=keepdims)


def mean(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
         keepdims: bool = False, *, where: ArrayLike | None = None) -> Array:
    """Arithmetic mean along ``axis`` (float64 for integer input), over ``where`` only."""
    _no_out(out, "mean")
    a = _seq(a, "mean")
    n = _count(a, axis, keepdims, where)
    if dtype is None and not _dtypes.is_inexact(_aval(a).dtype):
        a = astype(a, float64)  # summed in float64 (NumPy's, JAX's): an integer sum wraps
    s = sum(a, axis, dtype, keepdims=keepdims, where=where)
    if not _dtypes.is_inexact(_aval(s).dtype):
        s = astype(s, float64)
    if where is not None:
        m = _E.div(s, astype(n, _aval(s).dtype if _dtypes.is_real_floating(_aval(s).dtype)
                             else float64))
    else:
        m = _E.div(s, float(n)) if n else _E.mul(s, nan)
    if dtype is not None and _np.dtype(dtype).kind in "iu":
        m = astype(m, dtype)    # (NumPy's and JAX's: the quotient cast to an integer dtype asked for)
    return m


def _ddof(ddof, correction):
    """``ddof``, or JAX's (and the array API's) other name for it, ``correction``."""
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def var(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
        ddof: int = 0,
        keepdims: bool = False, *, where: ArrayLike | None = None, mean: ArrayLike | None = None,
        correction: int | float | None = None) -> Array:
    """Variance along ``axis`` (``ddof`` delta degrees of freedom, or ``correction``), over
    ``where`` only; ``mean``: the mean, if known (of ``keepdims`` shape), as JAX's."""
    _no_out(out, "var")
    ddof = _ddof(ddof, correction)
    a = _seq(a, "var")
    if dtype is not None and _np.dtype(dtype).kind in "fc" and _aval(a).dtype != dtype:
        if _aval(a).dtype.kind == "c" and _np.dtype(dtype).kind != "c":
            raise ValueError(
                "jax.numpy.var does not yet support real dtype parameters when computing the "
                "variance of an array of complex values. (tangentia.numpy.var/std: dtype "
                f"{_np.dtype(dtype)} for {_aval(a).dtype} values; pass a complex dtype or None)")
        # as JAX's: computed in ``dtype`` (float16 in float32): NumPy's mixes the float64
        # deviations of a float64 ``a`` with a float32 mean, so equal entries had a variance
        # of 2e-15, JAX's 0
        low = _np.dtype(dtype).kind == "f" and _np.dtype(dtype).itemsize < 4
        v = var(astype(a, _np.float32 if low else dtype), axis, None, ddof=ddof,
                keepdims=keepdims, where=where, mean=mean)
        return astype(v, dtype)
    n = _count(a, axis, keepdims, where)
    m = _mean(a, axis, dtype, keepdims=True, where=where) if mean is None else mean
    s = sum(_abs2(_E.sub(a, m)), axis, dtype, keepdims=keepdims, where=where)
    if where is not None:
        v = _over_dof(s, _E.sub(astype(n, _aval(s).dtype), ddof))
    else:
        v = _E.div(s, float(n - ddof)) if n > ddof else _E.mul(s, nan)
    if dtype is not None and _np.dtype(dtype).kind in "iu":
        v = astype(v, dtype)    # (NumPy's: the quotient cast to the integer dtype asked for)
    return v


def _abs2(d):
    """``|d|**2``, real for complex ``d`` (variances of complex values are real)."""
    return _E.real(_E.mul(d, _E.conj(d))) if _aval(d).dtype.kind == "c" else _E.mul(d, d)


def _over_dof(s, dof):
    """``s / dof``, NaN where ``dof <= 0`` (no degrees of freedom left: JAX's value;
    NumPy's var gives inf there, its nanvar NaN)."""
    return where(_E.gt(dof, 0), _E.div(s, _E.maximum(dof, 1)), nan)


def std(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
        ddof: int = 0,
        keepdims: bool = False, *, where: ArrayLike | None = None, mean: ArrayLike | None = None,
        correction: int | float | None = None) -> Array:
    """Standard deviation along ``axis`` (``ddof`` delta degrees of freedom, or
    ``correction``), over ``where``; ``mean``: the mean, if known, as ``var``'s."""
    _no_out(out, "std")
    v = var(a, axis, dtype, ddof=_ddof(ddof, correction), keepdims=keepdims, where=where,
            mean=mean)
    if dtype is not None and _np.dtype(dtype).kind in "iu":   # (NumPy's: truncated again)
        return astype(sqrt(astype(v, float64)), dtype)
    return sqrt(v)


def ptp(a: ArrayLike, axis: Axis = None, out: None = None, keepdims: bool = False) -> Array:
    """Range (maximum minus minimum) along ``axis``."""
    _no_out(out, "ptp")
    a = _in(a, "ptp")
    return _E.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def count_nonzero(a: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """Number of nonzero entries along ``axis``."""
    _arraylike("count_nonzero", a)   # (NumPy counts None, a dict, an object as 1)
    _static_axis(axis, "count_nonzero")
    return sum(astype(_E.ne(a, 0), int64), axis, keepdims=keepdims)


def _one_axis(axis, fname):
    """One axis, as JAX's (operator.index): argmax's axis (0, 2) reduced over its first entry
    alone, a silently wrong answer where JAX raises JAX's TypeError."""
    if axis is None:
        return None
    try:
        return operator.index(axis)
    except TypeError as e:
        raise TypeError(f"{e} ({fname}: argument 'axis' must be an int or None, got "
                        f"{axis!r:.60})") from None


def _arg(prim, fname, a, axis, keepdims):
    axis = _one_axis(axis, fname)
    av = _aval(a)
    if axis is None:
        a = ravel(a)
        axis_n = 0
    else:
        axis_n = _axes(axis, av.ndim, fname)[0]
    if _aval(a).shape[axis_n] == 0:
        raise ValueError(f"{fname}: attempt to get {fname} of an empty sequence")
    out = prim.bind(a, axis=axis_n)
    if keepdims:
        shp = [1] * av.ndim if axis is None else [d if i != axis_n else 1
                                                  for i, d in enumerate(av.shape)]
        out = _S.reshape(out, tuple(shp))
    return out


def argmax(a: ArrayLike, axis: int | None = None, out: None = None,
           keepdims: bool | None = False) -> Array:
    """Indices of the maxima along ``axis`` (of the flattened array if ``axis`` is None)."""
    _no_out(out, "argmax")
    return _arg(_R.argmax_p, "argmax", a, axis, keepdims)


def argmin(a: ArrayLike, axis: int | None = None, out: None = None,
           keepdims: bool | None = False) -> Array:
    """Indices of the minima along ``axis`` (of the flattened array if ``axis`` is None)."""
    _no_out(out, "argmin")
    return _arg(_R.argmin_p, "argmin", a, axis, keepdims)


# ---------------------------------------------------------------------------
# Cumulative operations


def cumsum(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None,
           out: None = None) -> Array:
    """Cumulative sum along ``axis`` (of the flattened array if ``axis`` is None)."""
    _no_out(out, "cumsum")
    _static_axis(axis, "cumsum")
    if axis is None:
        a = ravel(a)
        axis = 0
    if dtype is not None:
        a = astype(a, dtype)
    ax = _axes(axis, ndim(a), "cumsum")[0]
    if _low_float(_aval(a).dtype):
        # float16/bfloat16 accumulate in float32, as JAX's (XLA on the CPU): NumPy rounds
        # every partial sum, 137 off JAX's after 3000 float16 terms of about 1
        return astype(_R.cumsum(astype(a, _np.float32), ax), _aval(a).dtype)
    out = _R.cumsum(a, ax)   # (integers below int64 widen, as NumPy's: deliberate)
    return out if dtype is None else _keep_dtype(out, a)


def _low_float(dt):
    return (dt.kind == "f" and dt.itemsize < 4) or _dtypes.is_ml_float(dt)


def _cum_prep(a, axis, dtype, fname):
    a = _in(a, fname)
    if axis is None:
        a, axis = ravel(a), 0
    if dtype is not None:
        a = astype(a, dtype)
    return a, _axis(axis, a, fname)


def cumprod(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None,
            out: None = None) -> Array:
    """Cumulative product; differentiable (exactly, also where ``a`` has zeros)."""
    _no_out(out, "cumprod")
    a, ax = _cum_prep(a, axis, dtype, "cumprod")
    out = _M.cumprod(a, ax)
    return out if dtype is None else _keep_dtype(out, a)


def cummax(a: ArrayLike, axis: int | None = None, reverse: bool = False) -> Array:
    """Running maximum along ``axis`` (NumPy's ``maximum.accumulate``)."""
    a, ax = _cum_prep(a, axis, None, "cummax")
    return _M.cummax(a, ax, reverse)


def cummin(a: ArrayLike, axis: int | None = None, reverse: bool = False) -> Array:
    """Running minimum along ``axis`` (NumPy's ``minimum.accumulate``)."""
    a, ax = _cum_prep(a, axis, None, "cummin")
    return _M.cummin(a, ax, reverse)


def _cumulative_api(fname, fn, initial) -> Callable[..., Array]:
    def f(x: ArrayLike, /, *, axis: int | None = None, dtype: DTypeLike | None = None,
          include_initial: bool = False) -> Array:
        x = _in(x, fname, "x")
        if axis is None:
            if ndim(x) > 1:
                raise ValueError(f"{fname}: argument 'axis' must be given for an array of rank "
                                 f"{ndim(x)}")
            if ndim(x) == 0:
                raise ValueError(f"{fname}: argument 'x' must have at least one dimension")
            axis = 0
        ax = _axis(axis, x, fname, "x")
        out = fn(x, ax, dtype)
        if include_initial:
            s = list(shape(out))
            s[ax] = 1
            out = concatenate([_np.full(s, initial, _aval(out).dtype), out], ax)
        return out
    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"NumPy 2's ``{fname}`` (the array API's cumulative function)."
    return f


cumulative_sum = _cumulative_api("cumulative_sum", lambda x, ax, dt: cumsum(x, ax, dt), 0)
cumulative_prod = _cumulative_api("cumulative_prod", lambda x, ax, dt: cumprod(x, ax, dt), 1)


# ---------------------------------------------------------------------------
# Ignoring NaNs


def _nan_to(a, value):
    return where(isnan(a), value, a) if _dtypes.is_inexact(_aval(a).dtype) else a


_choose = where   # (the functions below take a ``where=`` argument)


def _nan_count(a, axis, keepdims, mask=None):
    """The number of entries that are not NaN (and inside ``mask``) along ``axis``."""
    keep = logical_not(isnan(a))
    if mask is not None:
        keep = logical_and(keep, mask)
    return sum(astype(keep, int64), axis, keepdims=keepdims)


def nansum(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
           keepdims: bool = False,
           initial: ArrayLike | None = None, where: ArrayLike | None = None) -> Array:
    """Sum along ``axis`` treating NaNs as zero."""
    _no_out(out, "sum", "nansum")
    _static_axis(axis, "nansum")
    return sum(_nan_to(_in(a, "nansum"), 0), axis, dtype, None, keepdims, initial, where)


def nanprod(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
            keepdims: bool = False,
            initial: ArrayLike | None = None, where: ArrayLike | None = None) -> Array:
    """Product along ``axis`` treating NaNs as one, over ``where`` only."""
    _no_out(out, "prod", "nanprod")
    _static_axis(axis, "nanprod")
    return prod(_nan_to(_in(a, "nanprod"), 1), axis, dtype, None, keepdims, initial, where)


_mean = mean   # (var's and std's parameter ``mean`` hides the function there)


def nanmean(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
            keepdims: bool = False, where: ArrayLike | None = None) -> Array:
    """Mean along ``axis`` ignoring NaNs, over ``where`` only (JAX's ``where=``)."""
    _no_out(out, "nanmean")
    _static_axis(axis, "nanmean")
    a = _in(a, "nanmean")
    if not _dtypes.is_inexact(_aval(a).dtype):
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    s = sum(_nan_to(a, 0), axis, dtype, keepdims=keepdims, where=where)
    return _E.div(s, astype(_nan_count(a, axis, keepdims, where), _aval(s).dtype))


def nanvar(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
           ddof: int = 0, keepdims: bool = False, where: ArrayLike | None = None,
           mean: ArrayLike | None = None) -> Array:
    """Variance along ``axis`` ignoring NaNs, over ``where`` only (JAX's ``where=``);
    ``mean``: the NaN-ignoring mean, if known (of ``keepdims`` shape), as JAX's."""
    _no_out(out, "nanvar")
    _static_axis(axis, "nanvar")
    a = _in(a, "nanvar")
    if not _dtypes.is_inexact(_aval(a).dtype):
        return var(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean)
    m = nanmean(a, axis, dtype, keepdims=True, where=where) if mean is None else mean
    d = _choose(isnan(a), 0, _E.sub(a, m))  # NaN entries only (inf - inf stays NaN)
    s = sum(_abs2(d), axis, dtype, keepdims=keepdims, where=where)
    n = _nan_count(a, axis, keepdims, where)
    return _over_dof(s, _E.sub(astype(n, _aval(s).dtype), ddof))


def nanstd(a: ArrayLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
           ddof: int = 0, keepdims: bool = False, where: ArrayLike | None = None,
           mean: ArrayLike | None = None) -> Array:
    """Standard deviation along ``axis`` ignoring NaNs, over ``where`` only (``mean`` as
    ``nanvar``'s)."""
    _no_out(out, "nanstd")
    _static_axis(axis, "nanstd")
    return sqrt(nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean))


def _nan_extremum(fname, reduce, fill) -> Callable[..., Array]:
    def f(a: ArrayLike, axis: Axis = None, out: None = None, keepdims: bool = False,
          initial: ArrayLike | None = None, where: ArrayLike | None = None) -> Array:
        _no_out(out, reduce.__name__, fname)    # (JAX's names the reduction: max, min)
        _static_axis(axis, fname)
        a = _in(a, fname)
        if not _dtypes.is_inexact(_aval(a).dtype):
            return reduce(a, axis, None, keepdims, initial, where)
        nans = isnan(a)
        r = reduce(_choose(nans, fill, a), axis, None, keepdims, initial, where)
        # (with where=, initial is required: reduce raised JAX's error)
        return _choose(all(nans, axis, keepdims=keepdims), nan, r) if initial is None else r
    f.__name__ = f.__qualname__ = fname
    f.__doc__ = (f"``{reduce.__name__}`` ignoring NaNs (NaN for an all-NaN slice), over "
                 "``where`` only (with ``initial``).")
    return f


nanmax = _nan_extremum("nanmax", max, -inf)
nanmin = _nan_extremum("nanmin", min, inf)


def _nan_arg(fname, arg, fill) -> Callable[..., Array]:
    def f(a: ArrayLike, axis: int | None = None, out: None = None,
          keepdims: bool = False) -> Array:
        _no_out(out, fname)
        axis = _one_axis(axis, fname)
        a = _in(a, fname)
        if not _dtypes.is_inexact(_aval(a).dtype):
            return arg(a, axis, keepdims=keepdims)
        nans = isnan(a)
        r = arg(where(nans, fill, a), axis, keepdims=keepdims)   # (JAX's error for an empty slice)
        # -1 for an all-NaN slice, as JAX's, eagerly and traced alike (NumPy raises; the
        # traced path returned 0, a valid index of a NaN)
        return where(all(nans, axis, keepdims=keepdims), -1, r)
    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"``{arg.__name__}`` ignoring NaNs (-1 for an all-NaN slice, as JAX's)."
    return f


nanargmax = _nan_arg("nanargmax", argmax, -inf)
nanargmin = _nan_arg("nanargmin", argmin, inf)


def nancumsum(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None,
              out: None = None) -> Array:
    """Cumulative sum treating NaNs as zero (``out`` must be None)."""
    _no_out(out, "nancumsum")
    _static_axis(axis, "nancumsum")
    return cumsum(_nan_to(_in(a, "nancumsum"), 0), axis, dtype)


def nancumprod(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None,
               out: None = None) -> Array:
    """Cumulative product treating NaNs as one (``out`` must be None)."""
    _no_out(out, "nancumprod")
    _static_axis(axis, "nancumprod")
    return cumprod(_nan_to(_in(a, "nancumprod"), 1), axis, dtype)


# ---------------------------------------------------------------------------
# Whole-array comparisons


def allclose(a: ArrayLike, b: ArrayLike, rtol: ArrayLike = 1e-05, atol: ArrayLike = 1e-08,
             equal_nan: bool = False) -> Array:
    """Whether all entries of ``a`` and ``b`` are equal within tolerances (a 0-d boolean array)."""
    return all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: ArrayLike, a2: ArrayLike, equal_nan: bool = False) -> Array:
    """True (as a 0-d array) if both arrays have the same shape and entries."""
    a1 = _in(a1, "array_equal", "a1")
    a2 = _in(a2, "array_equal", "a2")
    if shape(a1) != shape(a2):
        return _np.asarray(False)
    eq = _equal(a1, a2)
    if equal_nan and _dtypes.is_inexact(_aval(a1).dtype) and _dtypes.is_inexact(_aval(a2).dtype):
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return all(eq)


def array_equiv(a1: ArrayLike, a2: ArrayLike) -> Array:
    """True (as a 0-d array) if both arrays broadcast together and are equal."""
    a1 = _in(a1, "array_equiv", "a1")
    a2 = _in(a2, "array_equiv", "a2")
    try:
        broadcast_shapes(shape(a1), shape(a2))
    except ValueError:
        return _np.asarray(False)
    return all(_equal(a1, a2))
