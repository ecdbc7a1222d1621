"""Statistics: weighted averages, covariance and correlation, quantiles,
percentiles and medians (also ignoring NaNs)."""
from __future__ import annotations

import builtins
import math
import operator
from typing import TYPE_CHECKING

import numpy as _np

from .. import dtypes as _dtypes
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import sorting as _SO
from ._constants import float64, int64, nan
from ._conversion import _in, _inexact, astype
from ._creation import linspace, zeros
from ._indexing import at
from ._sorting import searchsorted
from ._elementwise import clip, isnan, logical_not, sqrt, where
from ._matrices import diagonal, matmul
from ._reductions import any, max, mean, min, sum
from ._shapes import atleast_2d, broadcast_to, concatenate, ndim, ravel, reshape, shape, squeeze, \
    stack, transpose
from ._util import _aval, _axes, _concrete, _eager, _is_tracer, _static_axis

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, Axis, DTypeLike


# ---------------------------------------------------------------------------
# Averages, covariance and correlation


def average(a: ArrayLike, axis: Axis = None, weights: ArrayLike | None = None,
            returned: bool = False, keepdims: bool = False) -> Array | tuple[Array, Array]:
    """Weighted average; with ``returned``, also the sum of the weights."""
    a = _in(a, "average")
    nd = ndim(a)
    axes = _axes(axis, nd, "average")
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        count = math.prod(shape(a)) // builtins.max(math.prod(shape(avg)), 1)
        scl = _np.asarray(count, _aval(avg).dtype)
    else:
        w = _in(weights, "average", "weights")
        a_dt, w_dt = _aval(a).dtype, _aval(w).dtype
        if a_dt.kind in "iub":
            rdt = _np.result_type(a_dt, w_dt, float64)
        else:
            rdt = _np.result_type(a_dt, w_dt)
        if shape(w) != shape(a):
            if axis is None:
                raise TypeError("average: argument 'axis' must be given when the shapes of "
                                f"'a' {shape(a)} and 'weights' {shape(w)} differ")
            if shape(w) != tuple(shape(a)[i] for i in axes):
                raise ValueError(f"average: the shape of argument 'weights' {shape(w)} must "
                                 f"match that of 'a' {shape(a)} along axis {axis}")
            w = reshape(w, tuple(shape(a)[i] if i in axes else 1 for i in range(nd)))
        w = astype(w, rdt)
        scl = sum(broadcast_to(w, shape(a)) if shape(w) != shape(a) else w, axes,
                  keepdims=keepdims)
        if _eager(scl) and _np.any(scl == 0.0):
            raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
        avg = _E.div(sum(_E.mul(astype(a, rdt), w), axes, keepdims=keepdims), scl)
    if returned:
        if shape(scl) != shape(avg):
            scl = broadcast_to(scl, shape(avg))
        return avg, scl
    return avg


def cov(m: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: ArrayLike | None = None,
        aweights: ArrayLike | None = None, dtype: DTypeLike | None = None) -> Array:
    """Covariance matrix of the variables in the rows (or columns) of ``m``."""
    m = _in(m, "cov", "m")
    if ndim(m) > 2:
        raise ValueError(f"cov: argument 'm' has more than 2 dimensions (shape {shape(m)})")
    if dtype is None:
        dtype = _np.result_type(_aval(m).dtype, float64) if y is None else _np.result_type(
            _aval(m).dtype, _aval(_in(y, "cov", "y")).dtype, float64)
    X = astype(atleast_2d(m), dtype)
    if not rowvar and shape(X)[0] != 1:
        X = transpose(X)
    if shape(X)[0] == 0:
        return _np.zeros((0, 0), dtype)
    if y is not None:
        y = _in(y, "cov", "y")
        if ndim(y) > 2:
            raise ValueError(f"cov: argument 'y' has more than 2 dimensions (shape {shape(y)})")
        Y = astype(atleast_2d(y), dtype)
        if not rowvar and shape(Y)[0] != 1:
            Y = transpose(Y)
        X = concatenate([X, Y], 0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = shape(X)[1]
    w = None
    if fweights is not None:
        fw = _in(fweights, "cov", "fweights")
        if ndim(fw) > 1 or shape(fw)[0] != n:
            raise ValueError(f"cov: argument 'fweights' must be 1-D of length {n}, got shape "
                             f"{shape(fw)}")
        if _aval(fw).dtype.kind not in "iu":
            raise TypeError(f"fweights must be integer. cov: argument 'fweights' has dtype "
                            f"{_aval(fw).dtype}; expected an integer dtype")
        # |w|, as JAX's (NumPy raises for negative weights)
        w = _E.abs(astype(fw, float64))
    if aweights is not None:
        aw = _in(aweights, "cov", "aweights")
        if ndim(aw) > 1 or shape(aw)[0] != n:
            raise ValueError(f"cov: argument 'aweights' must be 1-D of length {n}, got shape "
                             f"{shape(aw)}")
        aw = _E.abs(astype(aw, float64))
        w = aw if w is None else _E.mul(w, aw)
    if w is None:
        avg = mean(X, 1)
        fact = float(n - ddof)
    else:
        avg, w_sum = average(X, 1, w, returned=True)
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = _E.sub(w_sum, ddof)
        else:
            fact = _E.sub(w_sum, _E.div(_E.mul(ddof, sum(_E.mul(w, aw))), w_sum))
    if not _is_tracer(fact) and _np.all(_np.asarray(fact) <= 0):
        fact = 0.0
    X = _E.sub(X, reshape(avg, (-1, 1)))
    XT = transpose(X if w is None else _E.mul(X, w))
    if _aval(XT).dtype.kind == "c":   # X X^H, as NumPy's (X X^T was no covariance)
        XT = _E.conj(XT)
    c = _E.div(matmul(X, XT), fact)
    return squeeze(c)


def corrcoef(x: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True,
             dtype: DTypeLike | None = None) -> Array:
    """Pearson correlation coefficients (of complex data too: the real and imaginary parts
    are clipped to [-1, 1] separately, as NumPy's)."""
    if dtype is not None and not _dtypes.is_inexact(_np.dtype(dtype)):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype}")
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim(c) == 0:
        return _E.div(c, c)
    d = sqrt(_E.real(diagonal(c)))
    c = _E.div(_E.div(c, reshape(d, (-1, 1))), reshape(d, (1, -1)))
    if _aval(c).dtype.kind == "c":
        return _E.complex_(clip(_E.real(c), -1, 1), clip(_E.imag(c), -1, 1))
    return clip(c, -1, 1)


# ---------------------------------------------------------------------------
# Quantiles


_QUANTILE_ALPHA_BETA = {"hazen": (0.5, 0.5), "weibull": (0.0, 0.0),
                        "median_unbiased": (1 / 3.0, 1 / 3.0),
                        "normal_unbiased": (3 / 8.0, 3 / 8.0),
                        "interpolated_inverted_cdf": (0.0, 1.0)}
_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf") + tuple(
    _QUANTILE_ALPHA_BETA)


class _NumpyOps:
    floor, ceil, minimum, maximum, where = (
        _np.floor, _np.ceil, _np.minimum, _np.maximum, _np.where)

    @staticmethod
    def astype(x, dt):
        return _np.asarray(x).astype(dt)


class _TracedOps:
    floor, ceil, minimum, maximum = (
        staticmethod(_E.floor), staticmethod(_E.ceil),
        staticmethod(_E.minimum), staticmethod(_E.maximum))
    where = staticmethod(lambda c, x, y: where(c, x, y))
    astype = staticmethod(lambda x, dt: astype(x, dt))


def _gather_last(s, idx):
    """``s[..., idx]`` entry by entry: ``s`` has shape B + (n,), ``idx`` Q + B."""
    B = shape(s)[:-1]
    Q = shape(idx)[:len(shape(idx)) - len(B)]
    arrays = []
    for j, bj in enumerate(B):
        arrays.append(_np.arange(bj).reshape((1,) * len(Q) + tuple(
            bj if k == j else 1 for k in range(len(B)))))
    arrays.append(idx)
    return _I.getitem(s, (_I.ARRAY,) * (len(B) + 1), tuple(arrays))


def _quantile(a, q, axis, method, keepdims, fname, nan_aware=False, scale=1):
    a = _in(a, fname)
    if method not in _QUANTILE_METHODS and method != "_median":
        raise ValueError(f"{fname}: method {method!r} is not supported for argument 'method'; "
                         f"expected one of {', '.join(map(repr, _QUANTILE_METHODS))}")
    q = _in(q, fname, "q")
    if not _is_tracer(q):
        if q.dtype.kind not in "iuf":
            raise TypeError(f"{fname}: argument 'q' must be real numbers, got {q.dtype}")
        if not _np.all((q >= 0) & (q <= scale)):
            raise ValueError(f"{fname}: argument 'q' must be in the range [0, {scale}], got "
                             f"{q.tolist()}")
        q = _np.asarray(q, float64) / scale if scale != 1 else _np.asarray(q, float64)
    else:
        q = _E.div(astype(q, float64), float(scale)) if scale != 1 else astype(q, float64)
    av = _aval(a)
    nd = av.ndim
    axes = _axes(axis, nd, fname)
    keep = [i for i in range(nd) if i not in axes]
    bshape = tuple(av.shape[i] for i in keep)
    n = math.prod(av.shape[i] for i in axes)
    if n == 0:
        raise ValueError(f"{fname}: cannot compute a quantile of an empty axis of argument 'a' "
                         f"(shape {av.shape})")
    x = reshape(transpose(a, keep + list(axes)), bshape + (n,))
    x = _inexact(x)
    dt = _aval(x).dtype
    s = _SO.sort(x, len(bshape))
    qs = shape(q)
    nb = len(bshape)
    if nan_aware:
        count = sum(astype(logical_not(isnan(x)), int64), -1)
        nm1 = _E.sub(astype(count, float64), 1.0)
        ops = _TracedOps
    else:
        nm1 = float(n - 1)
        ops = _TracedOps if _is_tracer(q) else _NumpyOps
    qb = reshape(q, qs + (1,) * nb) if ops is _TracedOps else _np.reshape(q, qs + (1,) * nb)
    traced = ops is _TracedOps
    if method in _QUANTILE_ALPHA_BETA:
        al, be = _QUANTILE_ALPHA_BETA[method]
        n_ = _E.add(nm1, 1.0) if traced else nm1 + 1.0
        vi = n_ * qb + (al + qb * (1 - al - be)) - 1 if not traced else _E.sub(
            _E.add(_E.mul(n_, qb), _E.add(al, _E.mul(qb, 1 - al - be))), 1.0)
    elif method == "inverted_cdf":   # the first entry whose rank reaches q n: ceil(q n) - 1
        vi = _E.sub(_E.mul(qb, _E.add(nm1, 1.0)), 1.0) if traced else qb * (nm1 + 1.0) - 1.0
    else:
        vi = _E.mul(qb, nm1) if traced else qb * nm1
    upper = ops.maximum(nm1, 0.0)
    gamma = None
    if method == "lower":
        lo = ops.floor(vi)
    elif method in ("higher", "inverted_cdf"):
        lo = ops.ceil(vi)
    elif method == "nearest":   # JAX's: a tie goes to the lower entry (NumPy's to the even one)
        lo = ops.ceil(vi - 0.5 if not traced else _E.sub(vi, 0.5))
    else:
        lo = ops.floor(vi)
        # the upper entry is ceil(vi), JAX's: lo + 1 made an exact position next to an
        # infinite entry NaN (quantile([-inf, 1, inf], 0.5) is 1, we gave 1 * 1 + inf * 0)
        hi = ops.minimum(ops.maximum(ops.ceil(vi), 0.0), upper)
        if method not in ("_median", "midpoint"):
            gamma = vi - lo if ops is _NumpyOps else _E.sub(vi, lo)
    lo = ops.minimum(ops.maximum(lo, 0.0), upper)
    full = qs + bshape

    def gather(i):
        i = ops.astype(i, int64)
        if shape(i) != full:
            i = broadcast_to(i, full) if _is_tracer(i) else _np.broadcast_to(i, full)
        return _gather_last(s, i)

    res = gather(lo)
    if method in ("_median", "midpoint"):   # JAX's (a + b) / 2, a == b at an exact position
        res = _E.mul(_E.add(res, gather(hi)), 0.5)
    elif gamma is not None:
        b = gather(hi)
        t = astype(gamma, dt) if _is_tracer(gamma) else _np.asarray(gamma).astype(dt)
        # JAX's weighting: an infinite end gives it (NumPy's b - (b - a)(1 - t) gives NaN)
        res = _E.add(_E.mul(res, _E.sub(1.0, t)), _E.mul(b, t))
    if nan_aware:
        res = where(_E.eq(count, 0), nan, res)
    else:
        res = where(any(isnan(x), -1), nan, res)
    if keepdims:
        res = reshape(res, qs + tuple(1 if i in axes else d_ for i, d_ in enumerate(av.shape)))
    return res


def _check_quantile_args(fname, out, weights):
    if out is not None:
        raise TypeError(f"{fname}: the 'out' argument is not supported; use the returned value")
    if weights is not None:
        raise NotImplementedError(f"{fname}: the 'weights' argument is not supported")


def quantile(a: ArrayLike, q: ArrayLike, axis: int | tuple[int, ...] | None = None,
             out: None = None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights: ArrayLike | None = None, interpolation=None
             ) -> Array:
    """q-th quantiles along ``axis`` (sort-based; differentiable in ``a``)."""
    _check_quantile_args("quantile", out, weights)
    _static_axis(axis, "quantile")
    return _quantile(a, q, axis, interpolation or method, keepdims, "quantile")


def percentile(a: ArrayLike, q: ArrayLike, axis: int | tuple[int, ...] | None = None,
               out: None = None, overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False, *, weights: ArrayLike | None = None, interpolation=None,
               out_sharding: Any = None) -> Array:
    """q-th percentiles (q in [0, 100]) along ``axis`` (``out_sharding`` changes nothing: one
    device)."""
    _check_quantile_args("percentile", out, weights)
    _static_axis(axis, "percentile")
    return _quantile(a, q, axis, interpolation or method, keepdims, "percentile", scale=100)


def median(a: ArrayLike, axis: int | tuple[int, ...] | None = None, out: None = None,
           overwrite_input: bool = False, keepdims: bool = False) -> Array:
    """Median along ``axis`` (NaN where a slice has a NaN)."""
    _check_quantile_args("median", out, None)
    _static_axis(axis, "median")
    return _quantile(a, 0.5, axis, "_median", keepdims, "median")


def nanquantile(a: ArrayLike, q: ArrayLike, axis: int | tuple[int, ...] | None = None,
                out: None = None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: ArrayLike | None = None, interpolation=None
                ) -> Array:
    """Quantiles ignoring NaNs."""
    _check_quantile_args("nanquantile", out, weights)
    _static_axis(axis, "nanquantile")
    return _quantile(a, q, axis, interpolation or method, keepdims, "nanquantile", True)


def nanpercentile(a: ArrayLike, q: ArrayLike, axis: int | tuple[int, ...] | None = None,
                  out: None = None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: ArrayLike | None = None, interpolation=None
                  ) -> Array:
    """Percentiles ignoring NaNs."""
    _check_quantile_args("nanpercentile", out, weights)
    _static_axis(axis, "nanpercentile")
    return _quantile(a, q, axis, interpolation or method, keepdims, "nanpercentile", True,
                     scale=100)


def nanmedian(a: ArrayLike, axis: int | tuple[int, ...] | None = None, out: None = None,
              overwrite_input: bool = False, keepdims: bool = False) -> Array:
    """Median ignoring NaNs."""
    _check_quantile_args("nanmedian", out, None)
    _static_axis(axis, "nanmedian")
    return _quantile(a, 0.5, axis, "_median", keepdims, "nanmedian", True)


# ---------------------------------------------------------------------------
# Histograms


def histogram_bin_edges(a: ArrayLike, bins: ArrayLike = 10,  # noqa: A002 - NumPy's name
                        range: None | Array | Sequence[ArrayLike] = None,
                        weights: ArrayLike | None = None) -> Array:
    """Edges of ``histogram``'s bins: ``bins`` equal bins over ``range`` (the data's
    min and max by default), or the given edges."""
    a = _in(a, "histogram_bin_edges")
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented. "
                                  "(tangentia.numpy.histogram: pass a number of bins or the edges)")
    if ndim(bins) == 1:
        edges = _in(bins, "histogram_bin_edges", "bins")
        if not _is_tracer(edges) and _np.any(_np.diff(edges) < 0):
            raise ValueError("histogram: `bins` must increase monotonically, when an array")
        return edges
    try:
        nb = operator.index(_concrete(bins, "histogram", "bins"))
    except TypeError:
        raise TypeError(f"histogram: argument 'bins' must be an integer, a 1-D array of edges, "
                        f"got {bins!r}") from None
    if nb < 1:
        raise ValueError("histogram: `bins` must be positive, when an integer")
    dt = _aval(_inexact(a)).dtype
    if range is None:
        if _aval(a).size == 0:
            lo, hi = 0.0, 1.0
        else:
            lo, hi = min(a), max(a)
    else:
        lo, hi = range
        if not (_is_tracer(lo) or _is_tracer(hi)) and lo > hi:
            raise ValueError("histogram: max must be larger than min in range parameter.")
    lo, hi = astype(lo, dt), astype(hi, dt)
    same = _E.eq(lo, hi)
    lo, hi = where(same, _E.sub(lo, 0.5), lo), where(same, _E.add(hi, 0.5), hi)
    return linspace(lo, hi, nb + 1, dtype=dt)


def histogram(a: ArrayLike, bins: ArrayLike = 10,  # noqa: A002 - NumPy's name
              range: Sequence[ArrayLike] | None = None, weights: ArrayLike | None = None,
              density: bool | None = None) -> tuple[Array, Array]:
    """Counts (or weighted sums, or densities) of ``a`` in bins, and the bin edges,
    as ``numpy.histogram`` (its arguments in JAX's order: ``weights`` before ``density``,
    NumPy has them the other way round): each bin is half-open except the last, which includes
    its right edge; values outside the edges are not counted.  Differentiable in
    ``weights`` (and, through ``density``, in the edges)."""
    a = ravel(_in(a, "histogram"))
    edges = histogram_bin_edges(a, bins, range)
    nb = shape(edges)[0] - 1
    idx = searchsorted(edges, a, side="right")
    idx = where(_E.eq(a, edges[nb]), nb, idx)       # the last bin is closed
    if weights is None:
        w, wdt = None, _np.dtype(int64)
    else:
        w = ravel(_in(weights, "histogram", "weights"))
        if shape(w) != shape(a):
            raise ValueError("histogram: weights should have the same shape as a.")
        wdt = _aval(w).dtype
    # half-precision weights are summed in float32: a float16 running sum rounds at every
    # step, so its result depended on the order of the sum (eager and jit differed by 1e-4)
    half = _dtypes.is_inexact(wdt) and wdt.kind != "c" and wdt.itemsize < 4
    acc = _np.dtype(_np.float32) if half else wdt
    counts = at(zeros(nb + 2, acc))[idx].add(1 if w is None else w)
    counts = counts[1:nb + 1]
    if acc != wdt and not density:
        counts = astype(counts, wdt)
    if density:
        widths = _E.sub(edges[1:], edges[:-1])
        counts = _inexact(counts)
        counts = _E.div(_E.div(counts, widths), sum(counts))
    return counts, edges


def histogramdd(sample: ArrayLike, bins: ArrayLike | list[ArrayLike] = 10,  # noqa: A002
                range: Sequence[None | Array | Sequence[ArrayLike]] | None = None,
                weights: ArrayLike | None = None, density: bool | None = None
                ) -> tuple[Array, list[Array]]:
    """The D-dimensional histogram of the ``(N, D)`` points ``sample`` and its bin edges (one
    array per dimension), as ``numpy.histogramdd``: ``bins`` and ``range`` are given for
    all dimensions or per dimension; the last bin of each dimension includes its right
    edge.  Differentiable in ``weights``."""
    sample = _in(sample, "histogramdd", "sample")
    if ndim(sample) == 1:
        sample = reshape(sample, (-1, 1))
    if ndim(sample) != 2:
        raise ValueError(f"histogramdd: argument 'sample' must be an (N, D) array, got shape "
                         f"{shape(sample)}")
    n, d = shape(sample)
    if isinstance(bins, (int, _np.integer)):
        bins = [bins] * d
    if len(bins) != d:
        raise ValueError(f"histogramdd: argument 'bins' must give {d} entries (one per "
                         f"dimension), got {len(bins)}")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError(f"histogramdd: argument 'range' must give {d} entries, got "
                         f"{len(ranges)}")
    flat, edges, sizes = 0, [], []
    for k in builtins.range(d):
        col = sample[:, k]
        e = histogram_bin_edges(col, bins[k], ranges[k])
        nb = shape(e)[0] - 1
        idx = searchsorted(e, col, side="right")
        idx = where(_E.eq(col, e[nb]), nb, idx)     # the last bin is closed
        flat = _E.add(_E.mul(flat, nb + 2), idx)
        edges.append(e)
        sizes.append(nb)
    if weights is None:
        w, wdt = 1, _np.dtype(float64)      # NumPy's histogramdd counts in float64
    else:
        w = ravel(_in(weights, "histogramdd", "weights"))
        if shape(w) != (n,):
            raise ValueError(f"histogramdd: argument 'weights' must have shape ({n},), got "
                             f"{shape(w)}")
        wdt = _aval(w).dtype
    counts = at(zeros(math.prod(s + 2 for s in sizes), wdt))[flat].add(w)
    counts = reshape(counts, tuple(s + 2 for s in sizes))[tuple(slice(1, s + 1) for s in sizes)]
    if density:
        counts = _inexact(counts)
        counts = _E.div(counts, sum(counts))
        for k, e in enumerate(edges):
            widths = _E.sub(e[1:], e[:-1])
            counts = _E.div(counts, reshape(widths, tuple(-1 if j == k else 1
                                                          for j in builtins.range(d))))
    return counts, edges


def histogram2d(x: ArrayLike, y: ArrayLike, bins: ArrayLike | list[ArrayLike] = 10,  # noqa: A002
                range: Sequence[None | Array | Sequence[ArrayLike]] | None = None,
                weights: ArrayLike | None = None, density: bool | None = None
                ) -> tuple[Array, Array, Array]:
    """The 2-D histogram of the points ``(x, y)`` and the bin edges along ``x`` and ``y``,
    as ``numpy.histogram2d``."""
    x, y = ravel(_in(x, "histogram2d", "x")), ravel(_in(y, "histogram2d", "y"))
    if shape(x) != shape(y):
        raise ValueError(f"histogram2d: arguments 'x' and 'y' must have the same shape, got "
                         f"{shape(x)} and {shape(y)}")
    try:
        nbins = len(bins)
    except TypeError:
        nbins = 1
    if nbins not in (1, 2):
        bins = [bins, bins]
    elif nbins == 1 and not isinstance(bins, (int, _np.integer)):
        bins = [bins[0], bins[0]]
    hist, (ex, ey) = histogramdd(stack([x, y], 1), bins, range, weights, density)
    return hist, ex, ey
