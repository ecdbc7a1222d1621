"""Discrete differences (``diff``, ``ediff1d``, ``unwrap``) and integration (``trapezoid``)."""
from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING

import numpy as _np

from .. import dtypes as _dtypes
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import structural as _S
from ._conversion import _in, _inexact, asarray, astype
from ._elementwise import _ufunc_dtype, logical_and, where
from ._indexing import take
from ._reductions import cumsum, sum
from ._shapes import broadcast_to, concatenate, ndim, ravel, reshape, shape
from ._util import _aval, _axis, _is_tracer, _static_axis

if TYPE_CHECKING:
    from collections.abc import Sequence
    from ..typing import Array, ArrayLike


def diff(a: ArrayLike, n: int = 1, axis: int = -1, prepend: ArrayLike | None = None,
         append: ArrayLike | None = None) -> Array:
    """n-th discrete difference along ``axis``."""
    a = _in(a, "diff")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: argument 'n' (the order) must be non-negative, got {n}")
    if ndim(a) == 0:
        raise ValueError("diff: argument 'a' must be at least one-dimensional")
    ax = _axis(axis, a, "diff")
    if n == 0:
        return _S.unchanged(a)
    parts = []
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            parts.append(None)
            continue
        extra = _in(extra, "diff", name)
        if ndim(extra) == 0:
            s = list(shape(a))
            s[ax] = 1
            extra = broadcast_to(extra, tuple(s))
        parts.append(extra)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], ax)
    is_bool = _aval(a).dtype == _dtypes.bool_
    for _ in range(n):
        m = shape(a)[ax]
        hi, lo = _I.static_slice(a, ax, 1, m), _I.static_slice(a, ax, 0, builtins.max(m - 1, 0))
        a = _E.ne(hi, lo) if is_bool else _E.sub(hi, lo)
    return a


def ediff1d(ary: ArrayLike, to_end: ArrayLike | None = None, to_begin: ArrayLike | None = None
            ) -> Array:
    """Differences of consecutive entries of the flattened ``ary``."""
    ary = ravel(_in(ary, "ediff1d", "ary"))
    n = shape(ary)[0]
    d = _E.sub(_I.static_slice(ary, 0, 1, n), _I.static_slice(ary, 0, 0, builtins.max(n - 1, 0)))
    dt = _aval(ary).dtype
    parts = []
    if to_begin is not None:
        parts.append(astype(ravel(_in(to_begin, "ediff1d", "to_begin")), dt))
    parts.append(d)
    if to_end is not None:
        parts.append(astype(ravel(_in(to_end, "ediff1d", "to_end")), dt))
    return concatenate(parts) if len(parts) > 1 else d


def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: ArrayLike = 1.0, axis: int = -1
              ) -> Array:
    """Trapezoidal rule along ``axis``."""
    y = asarray(y) if not _is_tracer(y) else y
    axis = _axis(axis, y, "trapezoid", "y")   # (axis=5: ValueError, not IndexError)
    n = shape(y)[axis]
    y1 = take(y, _np.arange(1, n), axis=axis)
    y0 = take(y, _np.arange(0, n - 1), axis=axis)
    if x is None:
        if ndim(dx) == 0:  # one spacing: factored out of the sum
            return _E.mul(sum(_E.add(y0, y1), axis=axis), dx / 2.0)
        # an array of spacings broadcasts against the pairs, before the sum (NumPy's)
        return _E.mul(sum(_E.mul(dx, _E.add(y0, y1)), axis=axis), 0.5)
    x = asarray(x) if not _is_tracer(x) else x
    d = diff(x, axis=axis if ndim(x) > 1 else -1)
    if ndim(x) == 1 and ndim(y) > 1:
        shp = [1] * ndim(y)
        shp[axis] = n - 1
        d = reshape(d, tuple(shp))
    return _E.mul(sum(_E.mul(d, _E.add(y0, y1)), axis=axis), 0.5)


def _spacings(varargs, f, axes):
    """Per-axis spacing for ``gradient``: a Python/NumPy scalar (uniform) or a
    1-D array of differences between consecutive coordinates."""
    n = len(varargs)
    if n == 0:
        return [1.0] * len(axes)
    if n == 1 and ndim(varargs[0]) == 0:
        return [varargs[0]] * len(axes)
    if n != len(axes):
        raise TypeError(f"gradient: invalid number of arguments: got {n} spacings for "
                        f"{len(axes)} axes (expected none, one scalar, or one per axis)")
    out = []
    for i, d in enumerate(varargs):
        if ndim(d) == 0:
            out.append(d)
            continue
        if ndim(d) != 1:
            raise ValueError("gradient: distances must be either scalars or 1d")
        if shape(d)[0] != shape(f)[axes[i]]:
            raise ValueError("gradient: when 1d, distances must match the length of the "
                             "corresponding dimension")
        if not _is_tracer(d):
            d = _np.asarray(d)
            if _np.issubdtype(d.dtype, _np.integer):
                d = d.astype(_np.float64)
            dd = _np.diff(d)
            out.append(dd[0] if (dd == dd[0]).all() else dd)
            continue
        if not _dtypes.is_inexact(_aval(d).dtype):
            d = astype(d, _np.float64)
        out.append(diff(d))
    return out


def gradient(f: ArrayLike, *varargs: ArrayLike, axis: int | Sequence[int] | None = None,
             edge_order: int | None = 1) -> Array | list[Array]:
    """Gradient of sampled values by central differences, as ``numpy.gradient``.

    Interior points use second-order central differences, the boundaries
    first- or second-order one-sided differences (``edge_order``).  Spacings
    are scalars or coordinate arrays, one per axis.  Returns one array for a
    single axis, otherwise a tuple.  Differentiable in ``f`` and in the
    spacings.
    """
    f = _in(f, "gradient", "f")
    _static_axis(axis, "gradient")
    nd = ndim(f)
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(_axis(a, f, "gradient") for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"gradient: repeated axis in argument 'axis': {axis}")
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: argument 'edge_order' must be 1 or 2, got {edge_order!r}")
    dt = _aval(f).dtype
    otype = dt if _dtypes.is_inexact(dt) else _np.dtype(_np.float64)   # (bfloat16 too)
    f = astype(f, otype)
    outs = []
    for ax, h in zip(axes, _spacings(varargs, f, axes)):
        m = shape(f)[ax]
        if m < edge_order + 1:
            raise ValueError("gradient: Shape of array too small to calculate a numerical "
                             "gradient, at least (edge_order + 1) elements are required.")

        def sl(a, b, ax=ax):
            return _I.static_slice(f, ax, a, b)

        def along(v, ax=ax):  # a 1-D coefficient array broadcast along ``ax``
            s = [1] * nd
            s[ax] = -1
            return reshape(v, tuple(s))

        def comb(a, b, c, fs):
            return _E.add(_E.add(_E.mul(a, fs[0]), _E.mul(b, fs[1])), _E.mul(c, fs[2]))

        uniform = ndim(h) == 0
        if uniform:
            mid = _E.div(_E.sub(sl(2, m), sl(0, m - 2)), _E.mul(2.0, h))
        else:
            d1, d2 = h[:-1], h[1:]
            a = _E.div(_E.neg(d2), _E.mul(d1, _E.add(d1, d2)))
            b = _E.div(_E.sub(d2, d1), _E.mul(d1, d2))
            c = _E.div(d1, _E.mul(d2, _E.add(d1, d2)))
            mid = comb(along(a), along(b), along(c), (sl(0, m - 2), sl(1, m - 1), sl(2, m)))
        if edge_order == 1:
            first = _E.div(_E.sub(sl(1, 2), sl(0, 1)), h if uniform else h[0])
            last = _E.div(_E.sub(sl(m - 1, m), sl(m - 2, m - 1)), h if uniform else h[-1])
        else:
            if uniform:
                ca, cb, cc = _E.div(-1.5, h), _E.div(2.0, h), _E.div(-0.5, h)
                ea, eb, ec = _E.div(0.5, h), _E.div(-2.0, h), _E.div(1.5, h)
            else:
                d1, d2 = h[0], h[1]
                ca = _E.div(_E.neg(_E.add(_E.mul(2.0, d1), d2)), _E.mul(d1, _E.add(d1, d2)))
                cb = _E.div(_E.add(d1, d2), _E.mul(d1, d2))
                cc = _E.div(_E.neg(d1), _E.mul(d2, _E.add(d1, d2)))
                d1, d2 = h[-2], h[-1]
                ea = _E.div(d2, _E.mul(d1, _E.add(d1, d2)))
                eb = _E.div(_E.neg(_E.add(d2, d1)), _E.mul(d1, d2))
                ec = _E.div(_E.add(_E.mul(2.0, d2), d1), _E.mul(d2, _E.add(d1, d2)))
            first = comb(ca, cb, cc, (sl(0, 1), sl(1, 2), sl(2, 3)))
            last = comb(ea, eb, ec, (sl(m - 3, m - 2), sl(m - 2, m - 1), sl(m - 1, m)))
        outs.append(astype(concatenate([first, mid, last], ax), otype))
    return outs[0] if len(axes) == 1 else tuple(outs)


def unwrap(p: ArrayLike, discont: ArrayLike | None = None, axis: int = -1,
           period: ArrayLike = 2 * _np.pi) -> Array:
    """``p`` with jumps larger than ``discont`` (``period / 2`` by default) along ``axis``
    replaced by their complement modulo ``period``, as ``numpy.unwrap``; differentiable.
    In NumPy's dtype of ``p - period``: integers with an integer period stay integers (and
    use NumPy's integer boundary rule), bfloat16 stays bfloat16, as JAX's."""
    p = _in(p, "unwrap", "p")
    dt = _ufunc_dtype(_np.subtract, p, period)
    integer = _dtypes.kind(dt) in "iu"
    if not integer:
        dt = _aval(_inexact(p)).dtype if _dtypes.is_inexact(_aval(p).dtype) else dt
    p = astype(p, dt)
    ax = _axis(axis, p, "unwrap")
    n = shape(p)[ax]
    if n == 0:
        return p
    dd = diff(p, axis=ax)
    if integer:   # NumPy's: an odd integer period has no ambiguous boundary
        high = _E.floor_divide(period, 2)
        ambiguous = _E.eq(_E.remainder(period, 2), 0)
    else:
        high, ambiguous = _E.div(period, 2), True
    if discont is None:
        discont = _E.div(period, 2)
    low = _E.neg(high)
    ddmod = _E.add(_E.remainder(_E.sub(dd, low), period), low)
    # NumPy's boundary rule: a jump of exactly +period/2 stays +period/2.
    at_boundary = logical_and(_E.eq(ddmod, low), _E.gt(dd, 0))
    ddmod = where(logical_and(at_boundary, ambiguous), high, ddmod)
    correct = where(_E.lt(_E.abs(dd), discont), 0, _E.sub(ddmod, dd))
    first = take(p, _np.arange(1), axis=ax)
    rest = _E.add(take(p, _np.arange(1, n), axis=ax), cumsum(correct, axis=ax))
    return concatenate([first, astype(rest, dt)], ax)
