"""The Pareto distribution (``jax.scipy.stats.pareto``: ``logpdf``, ``pdf``, ``logcdf``,
``cdf``, ``logsf``, ``sf``, ``ppf``) with shape ``b`` on ``x >= loc + scale``."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def _scaled(fname, x, b, loc, scale):
    x, b, loc, scale = promote(f"pareto.{fname}", ("x", "b", "loc", "scale"), (x, b, loc, scale))
    below = x < loc + scale
    return safe(below, 1.0, (x - loc) / scale), b, scale, below


def logpdf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log density at ``x`` with shape ``b``, location ``loc`` and scale ``scale``."""
    y, b, scale, below = _scaled("logpdf", x, b, loc, scale)
    return tnp.where(below, NEG_INF, -(tnp.log(scale / b) + (b + 1) * tnp.log(y)))


def pdf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density at ``x`` (``b``, ``loc``, ``scale`` as :func:`logpdf`)."""
    return tnp.exp(logpdf(x, b, loc, scale))


def cdf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The cumulative distribution at ``x`` (``b``, ``loc``, ``scale`` as :func:`logpdf`)."""
    y, b, _, below = _scaled("cdf", x, b, loc, scale)
    return tnp.where(below, 0.0, 1 - y ** -b)


def logcdf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log cumulative distribution at ``x`` (``b``, ``loc``, ``scale`` as :func:`logpdf`)."""
    y, b, _, below = _scaled("logcdf", x, b, loc, scale)
    return tnp.where(below, NEG_INF, tnp.log1p(-(y ** -b)))


def logsf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log survival function at ``x`` (``b``, ``loc``, ``scale`` as :func:`logpdf`)."""
    y, b, _, below = _scaled("logsf", x, b, loc, scale)
    return tnp.where(below, 0.0, -b * tnp.log(y))


def sf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function at ``x`` (``b``, ``loc``, ``scale`` as :func:`logpdf`)."""
    return tnp.exp(logsf(x, b, loc, scale))


def ppf(q: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile at probability ``q`` (``b``, ``loc``, ``scale`` as :func:`logpdf`)."""
    q, b, loc, scale = promote("pareto.ppf", ("q", "b", "loc", "scale"), (q, b, loc, scale))
    bad = tnp.isnan(q) | (q < 0) | (q > 1)
    out = loc + scale * (1 - safe(bad, 0.0, q)) ** (-1 / b)
    return tnp.where(bad, np.nan, out)
