"""The beta distribution (``jax.scipy.stats.beta``).

The cdf is the regularized incomplete beta function (differentiable in ``x``,
``loc`` and ``scale``; not in the shapes ``a`` and ``b``, as in JAX); the sf
is ``betainc(b, a, 1 - y)``, accurate near ``y = 1``.
"""
from __future__ import annotations

import numpy as _np

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

_NAMES = ("x", "a", "b", "loc", "scale")


def _logpdf(x, a, b, loc, scale):
    y = (x - loc) / scale
    out_of = (y < 0) | (y > 1)
    y = safe(out_of, 0.5, y)
    out = sp.xlogy(a - 1.0, y) + sp.xlog1py(b - 1.0, -y) - sp.betaln(a, b) - tnp.log(scale)
    # shapes and scale must be positive: NaN otherwise, as JAX's and SciPy's (a = 1, b = -1 gave
    # a density of 2.04 at 0.3, and 0 outside [0, 1])
    bad = (a <= 0) | (b <= 0) | (scale <= 0)
    return tnp.where(bad, _np.nan, tnp.where(out_of, NEG_INF, out))


def _y(x, loc, scale):
    """``(x - loc) / scale`` inside ``(0, 1)``, 0.5 at and beyond the support's ends (``below``,
    ``above``, where the cdf is 0 or 1).  The incomplete beta's derivatives are taken there,
    finite, and discarded by a ``where``: a clip to [0, 1] met the density's inf at 0 or 1 (a
    shape below 1) with the clip's zero derivative, NaN gradients outside the support, and an
    infinite x gave ``0 * inf`` for the scale's.  At the ends the derivatives are JAX's 0."""
    y = (x - loc) / scale
    below, above = y <= 0, y >= 1
    return below, above, (safe(below | above, loc + 0.5 * scale, x) - loc) / scale


def _cdf(x, a, b, loc, scale):
    below, above, y = _y(x, loc, scale)
    return tnp.where(below, 0.0, tnp.where(above, 1.0, sp.betainc(a, b, y)))


def _sf(x, a, b, loc, scale):
    below, above, y = _y(x, loc, scale)
    return tnp.where(below, 1.0, tnp.where(above, 0.0, sp.betainc(b, a, 1.0 - y)))


def _logcdf(x, a, b, loc, scale):
    below, above, y = _y(x, loc, scale)
    return tnp.where(below, NEG_INF, tnp.where(above, 0.0, tnp.log(sp.betainc(a, b, y))))


def _logsf(x, a, b, loc, scale):
    below, above, y = _y(x, loc, scale)
    return tnp.where(below, 0.0, tnp.where(above, NEG_INF, tnp.log(sp.betainc(b, a, 1.0 - y))))


def logpdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
           scale: ArrayLike = 1) -> Array:
    return _logpdf(*promote("beta.logpdf", _NAMES, (x, a, b, loc, scale)))


def pdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
        scale: ArrayLike = 1) -> Array:
    return tnp.exp(_logpdf(*promote("beta.pdf", _NAMES, (x, a, b, loc, scale))))


def cdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
        scale: ArrayLike = 1) -> Array:
    return _cdf(*promote("beta.cdf", _NAMES, (x, a, b, loc, scale)))


def logcdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
           scale: ArrayLike = 1) -> Array:
    return _logcdf(*promote("beta.logcdf", _NAMES, (x, a, b, loc, scale)))


def sf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _sf(*promote("beta.sf", _NAMES, (x, a, b, loc, scale)))


def logsf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
          scale: ArrayLike = 1) -> Array:
    return _logsf(*promote("beta.logsf", _NAMES, (x, a, b, loc, scale)))
