"""Polynomials (``polyval``, ``polyadd``, ``polyder``, ...), 1-D convolution
and correlation, and piecewise-linear interpolation (``interp``)."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

import numpy as _np

from .. import dtypes as _dtypes
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import sorting as _SO
from ._constants import complex128, float64
from ._conversion import _in, asarray, astype
from ._elementwise import abs, clip, where
from ._indexing import flip, take
from ._matrices import matmul
from ._padding import pad
from ._shapes import atleast_1d, broadcast_to, concatenate, ndim, reshape, shape
from ._sorting import argsort
from ._util import _aval, _eager, _is_tracer

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike


# ---------------------------------------------------------------------------
# Polynomials


def polyval(p: ArrayLike, x: ArrayLike, *, unroll: int = 16) -> Array:
    """Evaluate the polynomial with coefficients ``p`` (highest degree first) at ``x``."""
    p = _in(p, "polyval", "p")
    x = _in(x, "polyval", "x")
    if ndim(p) < 1:
        raise ValueError("polyval: argument 'p' must be an array of coefficients, got a "
                         "scalar")
    if _eager(p, x):
        return _np.asarray(_np.polyval(p, x))
    y = _np.zeros(shape(x), _aval(x).dtype)
    for i in range(shape(p)[0]):
        y = _E.add(_E.mul(y, x), p[i])
    return y


def polyadd(a1: ArrayLike, a2: ArrayLike) -> Array:
    """Sum of two polynomials (coefficients highest degree first)."""
    a1, a2 = atleast_1d(a1), atleast_1d(a2)
    n = builtins.max(shape(a1)[0], shape(a2)[0])
    return _E.add(pad(a1, (n - shape(a1)[0], 0)), pad(a2, (n - shape(a2)[0], 0)))


def polysub(a1: ArrayLike, a2: ArrayLike) -> Array:
    """Difference of two polynomials (coefficients highest degree first)."""
    return polyadd(a1, _E.neg(atleast_1d(a2)))


def polymul(a1: ArrayLike, a2: ArrayLike, *, trim_leading_zeros: bool = False) -> Array:
    """Product of two polynomials (coefficients highest degree first).  With JAX's
    ``trim_leading_zeros=True`` (concrete inputs), leading zero coefficients of the inputs
    are dropped first, as NumPy's polymul does."""
    a1, a2 = atleast_1d(a1), atleast_1d(a2)
    if trim_leading_zeros and _eager(a1, a2):
        a1 = _np.trim_zeros(_np.asarray(a1), "f") if _np.any(a1) else _np.asarray(a1)[-1:]
        a2 = _np.trim_zeros(_np.asarray(a2), "f") if _np.any(a2) else _np.asarray(a2)[-1:]
    return convolve(a1, a2)


def polyder(p: ArrayLike, m: int = 1) -> Array:
    """``m``-th derivative of a polynomial (coefficients highest degree first)."""
    p = atleast_1d(p)
    for _ in range(m):
        n = builtins.max(shape(p)[0] - 1, 0)   # a constant's derivative: the empty polynomial
        p = _E.mul(p[:n], _np.arange(n, 0, -1, dtype=float64))
    return p


def polyint(p: ArrayLike, m: int = 1, k: int | ArrayLike | None = None) -> Array:
    """``m``-th antiderivative of a polynomial with integration constants ``k``."""
    p = atleast_1d(p)
    ks = [0.0] * m if k is None else list(_np.atleast_1d(k))
    for i in range(m):
        n = shape(p)[0]
        p = concatenate([_E.div(p, _np.arange(n, 0, -1, dtype=float64)),
                         reshape(asarray(ks[i], dtype=float64), (1,))])
    return p


# ---------------------------------------------------------------------------
# Convolution


def _conv_inputs(a, v, mode, fname):
    a = _in(a, fname, "a")
    v = _in(v, fname, "v")
    for name, arr in (("a", a), ("v", v)):
        if ndim(arr) != 1:
            raise ValueError(f"{fname}: argument '{name}' must be 1-D, got shape {shape(arr)}")
        if shape(arr)[0] == 0:
            raise ValueError(f"{fname}: argument '{name}' cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{fname}: argument 'mode' must be 'full', 'same' or 'valid', got "
                         f"{mode!r}")
    return a, v


def _full_convolution(a, v):
    """Full 1-D convolution as a gather of sliding windows and a matrix-vector product."""
    n, m = shape(a)[0], shape(v)[0]
    zeros_ = _np.zeros(m - 1, _aval(a).dtype)
    ap = concatenate([zeros_, a, zeros_]) if m > 1 else a
    windows = take(ap, _np.arange(n + m - 1)[:, None] + _np.arange(m)[None, :])
    return matmul(windows, flip(v))


def _conv_mode(full, n, m, mode, start_same):
    L, mn = builtins.max(n, m), builtins.min(n, m)
    if mode == "full":
        return full
    if mode == "same":
        return _I.static_slice(full, 0, start_same, start_same + L)
    return _I.static_slice(full, 0, mn - 1, L)


def convolve(a: ArrayLike, v: ArrayLike, mode: str = "full", *, precision: Any = None,
             preferred_element_type: DTypeLike | None = None) -> Array:
    """1-D discrete convolution (modes 'full', 'same' and 'valid')."""
    a, v = _conv_inputs(a, v, mode, "convolve")
    if _eager(a, v):
        return _np.asarray(_np.convolve(a, v, mode))
    n, m = shape(a)[0], shape(v)[0]
    return _conv_mode(_full_convolution(a, v), n, m, mode, (builtins.min(n, m) - 1) // 2)


def correlate(a: ArrayLike, v: ArrayLike, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: DTypeLike | None = None) -> Array:
    """1-D cross-correlation (modes 'full', 'same' and 'valid')."""
    a, v = _conv_inputs(a, v, mode, "correlate")
    if _eager(a, v):
        return _np.asarray(_np.correlate(a, v, mode))
    n, m = shape(a)[0], shape(v)[0]
    start = (builtins.min(n, m) - 1) // 2 if m <= n else n // 2
    if _aval(v).dtype.kind == "c":   # NumPy's (and JAX's) sum of a[n + k] * conj(v[n])
        v = _E.conj(v)
    return _conv_mode(_full_convolution(a, flip(v)), n, m, mode, start)


# ---------------------------------------------------------------------------
# Interpolation


def interp(x: ArrayLike, xp: ArrayLike, fp: ArrayLike, left: ArrayLike | str | None = None,
           right: ArrayLike | str | None = None, period: ArrayLike | None = None) -> Array:
    """1-D piecewise-linear interpolation; differentiable in ``x``, ``xp`` and ``fp``."""
    x = _in(x, "interp", "x")
    xp = _in(xp, "interp", "xp")
    fp = _in(fp, "interp", "fp")
    if ndim(xp) != 1 or ndim(fp) != 1 or shape(xp)[0] != shape(fp)[0]:   # JAX's words first
        raise ValueError(f"xp and fp must be one-dimensional arrays of equal size (interp: "
                         f"arguments 'xp' and 'fp' have shapes {shape(xp)} and {shape(fp)})")
    if shape(xp)[0] == 0:
        raise ValueError("interp: arguments 'xp' and 'fp' cannot be empty")
    extrapolate = []
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but "
                             f"got: {v!r} (tangentia.numpy.interp: argument '{name}')")
        extrapolate.append(isinstance(v, str))
    if _dtypes.kind(_aval(x).dtype) == "c":
        raise ValueError("jnp.interp: complex x values not supported. (tangentia.numpy.interp: "
                         f"argument 'x' has dtype {_aval(x).dtype})")
    if period is not None and ndim(period) != 0:
        raise ValueError(f"period must be a scalar; got {period} (tangentia.numpy.interp: "
                         f"argument 'period' has shape {shape(period)})")
    if not builtins.any(extrapolate) and _eager(x, xp, fp, left, right, period):
        return _np.asarray(_np.interp(x, xp, fp, left, right, period))
    out_dt = complex128 if _dtypes.kind(_aval(fp).dtype) == "c" else float64   # NumPy's
    x, xp, fp = astype(x, float64), astype(xp, float64), astype(fp, out_dt)
    if period is not None:
        if not _is_tracer(period) and period == 0:
            raise ValueError("interp: argument 'period' must be non-zero")
        period = abs(period)
        left = right = None
        x = _E.remainder(x, period)
        xp = _E.remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([_E.sub(xp[-1:], period), xp, _E.add(xp[0:1], period)])
        fp = concatenate([fp[-1:], fp, fp[0:1]])
    n = shape(xp)[0]
    if n == 1:
        f = broadcast_to(fp[0], shape(x))
    else:
        i = clip(_SO.searchsorted(xp, x, "right"), 1, n - 1)
        x0, x1 = take(xp, _E.sub(i, 1)), take(xp, i)
        f0, f1 = take(fp, _E.sub(i, 1)), take(fp, i)
        dx = _E.sub(x1, x0)
        eps = _np.spacing(_np.finfo(float64).eps)
        flat = _E.le(abs(dx), eps)
        t = _E.div(_E.sub(x, x0), where(flat, 1.0, dx))
        f = where(flat, f0, _E.add(f0, _E.mul(t, _E.sub(f1, f0))))
    if not extrapolate[0]:   # 'extrapolate': the end segments' lines continue (JAX's)
        f = where(_E.lt(x, xp[0]), fp[0] if left is None else left, f)
    if not extrapolate[1]:
        f = where(_E.gt(x, xp[-1]), fp[-1] if right is None else right, f)
    return astype(f, out_dt)

