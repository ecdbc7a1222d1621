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


# log P(a, y) where P underflows (below _LOG_P_TINY, for y <= (a + 1) / 2): Kummer's series
# P = y^a e^-y / Gamma(a + 1) (1 + sum_k>=1 prod_j<=k y / (a + j)) summed in log space, its terms'
# ratios at most 1/2, so that _LOG_P_TERMS terms leave a relative tail below 1e-18 (a = 30,
# y = 1e-10: log P = -765.43376425; log(gammainc) was -inf, with NaN gradients, as JAX's and
# SciPy's).  Beyond (a + 1) / 2 P underflows only for a > ~3300: -inf there, as before.
_LOG_P_TINY = 1e-280
_LOG_P_TERMS = 60


def _log_gammainc(a, y):
    a, y = tnp.broadcast_arrays(a, y)
    p = sp.gammainc(a, y)
    far = (p < _LOG_P_TINY) & (y > 0) & (y <= 0.5 * (a + 1.0)) & (a > 0) & (a < _np.inf)
    if isinstance(far, _np.ndarray) and not far.any():    # eager, none underflows
        return tnp.log(p)
    # the branch not taken sees safe arguments (its derivatives finite, discarded by the where)
    a_s, y_s = safe(far, a, 1.0), safe(far, y, 1.0)
    log_y = tnp.log(y_s)
    j = _np.arange(1.0, _LOG_P_TERMS + 1.0)
    log_terms = tnp.cumsum(log_y[..., None] - tnp.log(a_s[..., None] + j), axis=-1)
    series = (a_s * log_y - y_s - sp.gammaln(a_s + 1.0)
              + tnp.log1p(tnp.sum(tnp.exp(log_terms), axis=-1)))
    return tnp.where(far, series, tnp.log(safe(far, 1.0, p)))


def _logcdf(x, a, loc, scale):
    below, above, y = _y(x, loc, scale)
    return tnp.where(a <= 0, _np.nan, tnp.where(below, NEG_INF, tnp.where(
        above, 0.0, _log_gammainc(a, y))))


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
