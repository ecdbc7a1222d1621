"""The exponential distribution (``jax.scipy.stats.expon``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ...nn import log1mexp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def _y(fname, x, loc, scale, argname="x"):
    x, loc, scale = promote(f"expon.{fname}", (argname, "loc", "scale"), (x, loc, scale))
    y = (x - loc) / scale
    neg = y < 0
    return safe(neg, 0.0, y), neg, scale


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, neg, scale = _y("logpdf", x, loc, scale)
    return tnp.where(neg, NEG_INF, -y - tnp.log(scale))


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, neg, _ = _y("cdf", x, loc, scale)
    return tnp.where(neg, 0.0, -tnp.expm1(-y))


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, neg, _ = _y("logcdf", x, loc, scale)
    return tnp.where(neg, NEG_INF, log1mexp(y))


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, neg, _ = _y("sf", x, loc, scale)
    return tnp.where(neg, 1.0, tnp.exp(-y))


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, neg, _ = _y("logsf", x, loc, scale)
    return tnp.where(neg, 0.0, -y)


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("expon.ppf", ("q", "loc", "scale"), (q, loc, scale))
    bad = (q < 0) | (q > 1)
    return tnp.where(bad, np.nan, -tnp.log1p(-safe(bad, 0.5, q)) * scale + loc)
