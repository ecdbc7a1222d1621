"""Polynomial roots, division and least-squares fits (``poly``, ``polydiv``,
``polyfit``, ``roots``), with JAX's conventions: roots are complex, and
``polydiv`` keeps the remainder's length unless asked to trim it."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

import numpy as _np

from ..primitives import elementwise as _E
from ._constants import float64
from ._conversion import _in, astype
from ._matrices import matmul
from ._reductions import sum
from ._shapes import atleast_1d, concatenate, ndim, reshape, shape, swapaxes
from ._util import _aval, _is_tracer
from .linalg import eigvals, inv, lstsq

if TYPE_CHECKING:
    from typing import Any

    from ..typing import Array, ArrayLike


def poly(seq_of_zeros: ArrayLike) -> Array:
    """Coefficients of the monic polynomial with the given roots (or the
    characteristic polynomial of a square matrix)."""
    a = _in(seq_of_zeros, "poly", "seq_of_zeros")
    if ndim(a) == 2 and shape(a)[0] == shape(a)[1] and shape(a)[0] > 0:
        a = eigvals(a)
    elif ndim(a) != 1:
        raise ValueError("poly: input must be 1d or non-empty square 2d array.")
    dt = _aval(a).dtype if _aval(a).dtype.kind in "fc" else _np.dtype(_np.float64)
    a = astype(a, dt)
    if shape(a)[0] == 0:
        return astype(_np.ones((), dt), dt)   # JAX's 0-d 1 (NumPy's the float 1.0)
    # times (x - a_k), as NumPy's convolve with [1, -a_k]: no product with a padding zero, so an
    # infinite root leaves the leading 1 (the zero-padded convolution made it 0 * inf = NaN);
    # each sum starts from +0, as XLA's convolution accumulates (a -0.0 result becomes +0.0)
    coeffs: Any = _np.ones(1, dt)
    for k in range(shape(a)[0]):
        r = _E.neg(a[k:k + 1])
        tail = concatenate([_E.add(coeffs[1:], _E.mul(coeffs[:-1], r)), _E.mul(coeffs[-1:], r)])
        coeffs = concatenate([coeffs[:1], _E.add(tail, _np.zeros((), dt))])
    return coeffs


def polydiv(u: ArrayLike, v: ArrayLike, *, trim_leading_zeros: bool = False) -> tuple[Array, Array]:
    """Quotient and remainder of polynomial division (remainder as long as ``u``
    unless ``trim_leading_zeros``, as in JAX)."""
    u = _in(u, "polydiv", "u")
    v = _in(v, "polydiv", "v")
    dt = _np.result_type(_aval(u).dtype, _aval(v).dtype, _np.float32 if _aval(u).dtype == _np.float32
                         else _np.float64)
    u, v = astype(u, dt), astype(v, dt)
    m, n = shape(u)[0] - 1, shape(v)[0] - 1
    scale = _E.div(1.0, v[0])
    q = [None] * builtins.max(m - n + 1, 1)
    r = u
    for k in range(m - n + 1):
        d = _E.mul(scale, r[k])
        q[k] = reshape(d, (1,))
        upd = _E.sub(r[k:k + n + 1], _E.mul(d, v))
        r = concatenate([r[:k], upd, r[k + n + 1:]])
    q = concatenate([x if x is not None else _np.zeros(1, dt) for x in q])
    if trim_leading_zeros:
        rv = _np.asarray(r) if not _is_tracer(r) else None
        if rv is None:
            raise NotImplementedError("polydiv: trim_leading_zeros=True needs concrete values "
                                      "(the result's shape depends on them); call it outside jit")
        nz = _np.flatnonzero(~_np.isclose(rv, 0, rtol=0, atol=1e-14 * _np.abs(rv).max(initial=1)))
        r = rv[nz[0]:] if nz.size else rv[-1:]
    return q, r


def polyfit(x: ArrayLike, y: ArrayLike, deg: int, rcond: float | None = None, full: bool = False,
            w: ArrayLike | None = None, cov: bool = False) -> Array | tuple[Array, ...]:
    """Least-squares polynomial fit of degree ``deg`` (coefficients highest first),
    as ``numpy.polyfit``: the Vandermonde columns are scaled before the solve."""
    x = astype(_in(x, "polyfit", "x"), float64) if _aval(_in(x, "polyfit", "x")).dtype.kind \
        not in "fc" else _in(x, "polyfit", "x")
    y = _in(y, "polyfit", "y")
    deg = int(deg)
    if deg < 0:
        raise ValueError("polyfit: expected deg >= 0")
    if ndim(x) != 1 or shape(x)[0] == 0:
        raise TypeError("polyfit: expected 1D vector for x (non-empty)")
    if ndim(y) not in (1, 2) or shape(y)[0] != shape(x)[0]:
        raise TypeError("polyfit: expected 1D or 2D array for y, with as many rows as x")
    n = shape(x)[0]
    if rcond is None:
        rcond = n * float(_np.finfo(_aval(x).dtype).eps)
    powers = _np.arange(deg, -1, -1)
    lhs = _E.power(reshape(x, (n, 1)), astype(powers, _aval(x).dtype))
    rhs = y
    if w is not None:
        w = _in(w, "polyfit", "w")
        lhs = _E.mul(lhs, reshape(w, (n, 1)))
        rhs = _E.mul(rhs, reshape(w, (n, 1)) if ndim(rhs) == 2 else w)
    scale = _E.sqrt(_E.add(0.0, sum(_E.mul(lhs, lhs), axis=0)))
    lhs = _E.div(lhs, scale)
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = _E.div(c, scale if ndim(c) == 1 else reshape(scale, (deg + 1, 1)))
    if full:
        return c, resids, rank, s, _np.asarray(rcond)
    if cov:
        covar = inv(matmul(swapaxes(lhs, 0, 1), lhs))
        covar = _E.div(covar, _E.mul(reshape(scale, (deg + 1, 1)), reshape(scale, (1, deg + 1))))
        fac = 1.0 if cov == "unscaled" else _E.div(resids, float(n - deg - 1))
        if ndim(y) == 1:
            return c, _E.mul(covar, fac)
        return c, _E.mul(reshape(covar, (deg + 1, deg + 1, 1)), reshape(fac, (1, 1) + shape(fac)))
    return c


def roots(p: ArrayLike, *, strip_zeros: bool = True) -> Array:
    """Roots of the polynomial with coefficients ``p`` (complex, as in JAX), from
    the eigenvalues of its companion matrix.  Leading zeros are stripped (concrete
    ``p`` needed; with ``strip_zeros=False`` they give NaN roots)."""
    p = atleast_1d(_in(p, "roots", "p"))
    if ndim(p) != 1:
        raise ValueError("Input must be a rank-1 array. (roots: argument 'p')")
    dt = _aval(p).dtype if _aval(p).dtype.kind in "fc" else _np.dtype(_np.float64)
    p = astype(p, dt)
    cdt = _np.result_type(dt, _np.complex64)
    if shape(p)[0] < 2:
        return _np.zeros(0, cdt)
    if strip_zeros:
        if _is_tracer(p):
            try:
                pv = _np.asarray(p.concrete_value("roots"))
            except Exception:
                raise TypeError(
                    "The error occurred in the jnp.roots() function. To use this within a "
                    "JIT-compiled context, pass strip_zeros=False, but be aware that leading "
                    "zeros will result in some returned roots being set to NaN.") from None
        else:
            pv = _np.asarray(p)
        nz = _np.flatnonzero(pv)
        if not nz.size:
            return _np.zeros(0, cdt)
        p = p[int(nz[0]):]
        if shape(p)[0] < 2:
            return _np.zeros(0, cdt)
    n = shape(p)[0] - 1
    companion = concatenate([reshape(_E.neg(_E.div(p[1:], p[0])), (1, n)),
                             _np.eye(n - 1, n, dtype=dt)], 0)
    return astype(eigvals(companion), cdt)
