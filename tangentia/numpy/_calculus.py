"""Discrete differences (``diff``, ``ediff1d``) and integration (``trapezoid``)."""
from __future__ import annotations

import builtins
import operator

import numpy as _np

from .. import dtypes as _dtypes
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import structural as _S
from ._conversion import _in, asarray, astype
from ._indexing import take
from ._reductions import sum
from ._shapes import broadcast_to, concatenate, ndim, ravel, reshape, shape
from ._util import _aval, _axis, _is_tracer


def diff(a, n=1, axis=-1, prepend=None, append=None):
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


def ediff1d(ary, to_end=None, to_begin=None):
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


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Trapezoidal rule along ``axis``."""
    y = asarray(y) if not _is_tracer(y) else y
    n = shape(y)[axis]
    y1 = take(y, _np.arange(1, n), axis=axis)
    y0 = take(y, _np.arange(0, n - 1), axis=axis)
    if x is None:
        return _E.mul(sum(_E.add(y0, y1), axis=axis), dx / 2.0)
    x = asarray(x) if not _is_tracer(x) else x
    d = diff(x, axis=axis if ndim(x) > 1 else -1)
    if ndim(x) == 1 and ndim(y) > 1:
        shp = [1] * ndim(y)
        shp[axis] = n - 1
        d = reshape(d, tuple(shp))
    return _E.mul(sum(_E.mul(d, _E.add(y0, y1)), axis=axis), 0.5)
