"""The Gumbel distribution of maxima (``jax.scipy.stats.gumbel_r``: ``logpdf``, ``pdf``,
``logcdf``, ``cdf``, ``logsf``, ``sf``, ``ppf``); NaN where ``scale <= 0``.
``gumbel_l`` is its mirror image and reuses these functions."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ...nn import log1mexp
from ._util import promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def _standard(fname, x, loc, scale):
    x, loc, scale = promote(fname, ("x", "loc", "scale"), (x, loc, scale))
    return (x - loc) / scale, scale


def _logpdf(z, scale):
    return tnp.where(scale > 0, -tnp.log(safe(scale > 0, scale, 1.0)) - (z + tnp.exp(-z)), np.nan)


def _logcdf(z, scale):
    return tnp.where(scale > 0, -tnp.exp(-z), np.nan)


def _logsf(z, scale):
    return tnp.where(scale > 0, log1mexp(tnp.exp(-z)), np.nan)


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log density at ``x`` with location ``loc`` and scale ``scale``."""
    return _logpdf(*_standard("gumbel_r.logpdf", x, loc, scale))


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density at ``x`` with location ``loc`` and scale ``scale``."""
    return tnp.exp(logpdf(x, loc, scale))


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log cumulative distribution at ``x`` with location ``loc`` and scale ``scale``."""
    return _logcdf(*_standard("gumbel_r.logcdf", x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The cumulative distribution at ``x`` with location ``loc`` and scale ``scale``."""
    return tnp.exp(logcdf(x, loc, scale))


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log survival function at ``x`` with location ``loc`` and scale ``scale``."""
    return _logsf(*_standard("gumbel_r.logsf", x, loc, scale))


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function at ``x`` with location ``loc`` and scale ``scale``."""
    z, scale = _standard("gumbel_r.sf", x, loc, scale)
    return tnp.where(scale > 0, -tnp.expm1(-tnp.exp(-z)), np.nan)


def ppf(p: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile at probability ``p`` with location ``loc`` and scale ``scale``."""
    p, loc, scale = promote("gumbel_r.ppf", ("p", "loc", "scale"), (p, loc, scale))
    ok = (p > 0) & (p < 1)
    return tnp.where(ok, loc - scale * tnp.log(-tnp.log(safe(ok, p, 0.5))), np.nan)
