"""The gamma distribution (``jax.scipy.stats.gamma``); ``chi2`` reuses it.

The cdf and sf are the regularized incomplete gamma functions
(differentiable in ``x``, ``loc`` and ``scale``; not in the shape ``a``).
"""
from __future__ import annotations

import numpy as _np

from ... import numpy as tnp
from ...primitives import special as _SP
from .. import special as sp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

_NAMES = ("x", "a", "loc", "scale")


def _logpdf(x, a, loc, scale):
    y = (x - loc) / scale
    neg = y < 0
    y = safe(neg, 1.0, y)
    out = sp.xlogy(a - 1.0, y) - y - sp.gammaln(a) - tnp.log(scale)
    return tnp.where(neg, NEG_INF, out)


def _y(x, loc, scale):
    """``(x - loc) / scale`` inside the support, 1 at and beyond its ends (``below``: y <= 0,
    where the cdf is 0; ``above``: y = +inf, where it is 1).  The functions' derivatives are
    taken there, finite, and discarded by a ``where``: clamped to 0, the density's inf (a shape
    below 1) times the clamp's zero derivative gave NaN gradients left of the support, and an
    infinite x gave ``0 * inf`` for the scale's.  At the ends the derivatives are JAX's 0."""
    y = (x - loc) / scale
    below, above = y <= 0, y == _np.inf
    return below, above, (safe(below | above, loc + scale, x) - loc) / scale


def _cdf(x, a, loc, scale):
    # a shape a <= 0 is NaN, as SciPy's gamma.cdf and JAX's (SciPy's gammainc(0, x) is 1 for
    # x > 0: the cdf was 1 and the sf 0 for a = 0, chi2's df = 0)
    below, above, y = _y(x, loc, scale)
    return tnp.where(a <= 0, _np.nan, tnp.where(below, 0.0, tnp.where(above, 1.0,
                                                                      sp.gammainc(a, y))))


def _sf(x, a, loc, scale):
    below, above, y = _y(x, loc, scale)
    return tnp.where(a <= 0, _np.nan, tnp.where(below, 1.0, tnp.where(above, 0.0,
                                                                      sp.gammaincc(a, y))))


def _logcdf(x, a, loc, scale):
    below, above, y = _y(x, loc, scale)
    return tnp.where(a <= 0, _np.nan, tnp.where(below, NEG_INF, tnp.where(
        above, 0.0, tnp.log(sp.gammainc(a, y)))))


def _logsf(x, a, loc, scale):
    """At x = +inf: -inf, with the derivatives of its limit, as ``expon.logsf``'s (the gamma of
    shape 1): the log survival's slope in x is minus the hazard, which tends to ``1 / scale``
    (``logsf ~ (a - 1) log y - y``), so d/x is ``-1/scale``, d/loc ``1/scale``, d/scale +inf.
    A constant there gave 0 (JAX's: 0 for chi2, NaN for gamma).  Inside, log Q in log space
    (``log_gammaincc``): ``log(gammaincc)`` was -inf, with NaN gradients, once Q underflowed
    (a = 3, x = 800: -785.03; JAX's and SciPy's are -inf)."""
    below, above, y = _y(x, loc, scale)
    far = -(safe(above, x, loc + scale) - loc) / scale   # -inf where above, with the slopes
    return tnp.where(a <= 0, _np.nan, tnp.where(below, 0.0, tnp.where(
        above, far, _SP.log_gammaincc(a, y))))


def logpdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _logpdf(*promote("gamma.logpdf", _NAMES, (x, a, loc, scale)))


def pdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(_logpdf(*promote("gamma.pdf", _NAMES, (x, a, loc, scale))))


def cdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _cdf(*promote("gamma.cdf", _NAMES, (x, a, loc, scale)))


def logcdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _logcdf(*promote("gamma.logcdf", _NAMES, (x, a, loc, scale)))


def sf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _sf(*promote("gamma.sf", _NAMES, (x, a, loc, scale)))


def logsf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _logsf(*promote("gamma.logsf", _NAMES, (x, a, loc, scale)))
