"""The Cauchy distribution (``jax.scipy.stats.cauchy``).

The cdf is written ``arctan2(1, -y) / pi`` (equal to ``1/2 + arctan(y)/pi``),
which keeps its relative accuracy in the left tail.
"""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def _y(fname, x, loc, scale):
    x, loc, scale = promote(f"cauchy.{fname}", ("x", "loc", "scale"), (x, loc, scale))
    return (x - loc) / scale, scale


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, scale = _y("logpdf", x, loc, scale)
    return -float(np.log(np.pi)) - tnp.log(scale) - tnp.log1p(y * y)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, _ = _y("cdf", x, loc, scale)
    return tnp.arctan2(1.0, -y) / np.pi


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.log(cdf(x, loc, scale))


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, _ = _y("sf", x, loc, scale)
    return tnp.arctan2(1.0, y) / np.pi


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.log(sf(x, loc, scale))


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("cauchy.ppf", ("q", "loc", "scale"), (q, loc, scale))
    return loc + scale * tnp.tan(np.pi * (q - 0.5))


def isf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("cauchy.isf", ("q", "loc", "scale"), (q, loc, scale))
    return loc + scale * tnp.tan(np.pi * (0.5 - q))
