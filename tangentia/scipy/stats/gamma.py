"""The gamma distribution (``jax.scipy.stats.gamma``); ``chi2`` reuses it.

The cdf and sf are the regularized incomplete gamma functions
(differentiable in ``x``, ``loc`` and ``scale``; not in the shape ``a``).
"""
from __future__ import annotations

import numpy as _np

from ... import numpy as tnp
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
    return tnp.maximum((x - loc) / scale, 0.0)


def _cdf(x, a, loc, scale):
    # a shape a <= 0 is NaN, as SciPy's gamma.cdf and JAX's (SciPy's gammainc(0, x) is 1 for
    # x > 0: the cdf was 1 and the sf 0 for a = 0, chi2's df = 0)
    return tnp.where(a <= 0, _np.nan, sp.gammainc(a, _y(x, loc, scale)))


def _sf(x, a, loc, scale):
    return tnp.where(a <= 0, _np.nan, sp.gammaincc(a, _y(x, loc, scale)))


def logpdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _logpdf(*promote("gamma.logpdf", _NAMES, (x, a, loc, scale)))


def pdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(_logpdf(*promote("gamma.pdf", _NAMES, (x, a, loc, scale))))


def cdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _cdf(*promote("gamma.cdf", _NAMES, (x, a, loc, scale)))


def logcdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.log(_cdf(*promote("gamma.logcdf", _NAMES, (x, a, loc, scale))))


def sf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _sf(*promote("gamma.sf", _NAMES, (x, a, loc, scale)))


def logsf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.log(_sf(*promote("gamma.logsf", _NAMES, (x, a, loc, scale))))
