"""Student's t distribution (``jax.scipy.stats.t``: ``logpdf`` and ``pdf``; ``cdf``
and ``logcdf`` as SciPy's, which JAX lacks).

The distribution function is the regularized incomplete beta function:
``P(|T| > |y|) = I_{df / (df + y**2)}(df / 2, 1 / 2)``, and, more accurately near
``y = 0``, ``P(|T| < |y|) = I_{y**2 / (df + y**2)}(1 / 2, df / 2)``. Each form is used
where it is accurate. ``cdf`` and ``logcdf`` are differentiable in ``x``, ``loc`` and
``scale`` (the derivative in ``x`` is the density); a derivative in ``df`` raises
``NotImplementedError``, as ``betainc``'s in its parameters (as in JAX).
"""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ...custom_derivatives import SymbolicZero, custom_jvp
from .. import special as sp
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any
    from ...typing import Array, ArrayLike

__all__ = ["logpdf", "pdf", "cdf", "logcdf"]


def logpdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    x, df, loc, scale = promote("t.logpdf", ("x", "df", "loc", "scale"), (x, df, loc, scale))
    y = (x - loc) / scale
    half = 0.5 * (df + 1.0)
    norm = (sp.gammaln(half) - sp.gammaln(0.5 * df) - 0.5 * tnp.log(df * np.pi)
            - tnp.log(scale))
    return norm - half * tnp.log1p(y * y / df)


def pdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(logpdf(x, df, loc, scale))


def _halves(y, df):
    """``(tail, inner, far)``: ``tail = P(T > |y|)`` where ``far`` (``y**2 >= df``, its
    accurate form), ``inner = P(|T| < |y|)`` elsewhere (1 - inner has no large
    cancellation there: inner < 0.96); each evaluated at a safe
    point where it is not used."""
    y2 = y * y
    far = (y2 >= df) | (y2 >= 4.0)  # where the tail is small enough for its form
    denom = df + y2
    z_tail = tnp.where(far, df / tnp.where(far, denom, 1.0), 0.5)
    z_inner = tnp.where(far, 0.5, y2 / tnp.where(far, 1.0, denom))
    tail = 0.5 * sp.betainc(0.5 * df, 0.5, z_tail)
    inner = sp.betainc(0.5, 0.5 * df, z_inner)
    return tail, inner, far


def _no_df_derivative(t_df, fname):
    if type(t_df) is not SymbolicZero:
        raise NotImplementedError(f"t.{fname}: the derivative with respect to 'df' is not "
                                  "implemented (betainc's with respect to its parameters is "
                                  "not, as in JAX)")


@custom_jvp
def _std_cdf(y, df):
    tail, inner, far = _halves(y, df)
    below = tnp.where(far, tail, 0.5 - 0.5 * inner)   # P(T < -|y|)
    return tnp.where(y < 0, below, 1.0 - below)


def _std_cdf_jvp(primals, tangents):
    y, df = primals
    t_y, t_df = tangents
    _no_df_derivative(t_df, "cdf")
    out = _std_cdf(y, df)
    if type(t_y) is SymbolicZero:
        return out, tnp.zeros_like(out)
    return out, t_y * _std_pdf(y, df)


_std_cdf.defjvp(_std_cdf_jvp, symbolic_zeros=True)


@custom_jvp
def _std_logcdf(y, df):
    tail, inner, far = _halves(y, df)
    below = tnp.where(far, tail, 0.5 - 0.5 * inner)
    # log P(T < y): log(below) for y < 0, log1p(-below) for y >= 0 (accurate near 1)
    return tnp.where(y < 0, tnp.log(below), tnp.log1p(-below))


def _std_logcdf_jvp(primals, tangents):
    y, df = primals
    t_y, t_df = tangents
    _no_df_derivative(t_df, "logcdf")
    out = _std_logcdf(y, df)
    if type(t_y) is SymbolicZero:
        return out, tnp.zeros_like(out)
    return out, t_y * tnp.exp(_std_logpdf(y, df) - out)


_std_logcdf.defjvp(_std_logcdf_jvp, symbolic_zeros=True)


def _std_logpdf(y, df):
    half = 0.5 * (df + 1.0)
    return (sp.gammaln(half) - sp.gammaln(0.5 * df) - 0.5 * tnp.log(df * np.pi)
            - half * tnp.log1p(y * y / df))


def _std_pdf(y, df):
    return tnp.exp(_std_logpdf(y, df))


def _standard(fname, x, df, loc, scale):
    x, df, loc, scale = promote(f"t.{fname}", ("x", "df", "loc", "scale"), (x, df, loc, scale))
    shape = np.broadcast_shapes(tnp.shape(x), tnp.shape(df), tnp.shape(loc), tnp.shape(scale))
    y = (x - loc) / scale
    return tnp.broadcast_to(y, shape), tnp.broadcast_to(df, shape)


def cdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Any:
    """``P(T <= x)`` (SciPy's ``t.cdf``; JAX has none)."""
    return _std_cdf(*_standard("cdf", x, df, loc, scale))


def logcdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Any:
    """``log P(T <= x)``, accurate where the probability is near 1 (SciPy's ``t.logcdf``;
    JAX has none)."""
    return _std_logcdf(*_standard("logcdf", x, df, loc, scale))
