"""The logistic distribution (``jax.scipy.stats.logistic``), stable for any ``x``."""
from __future__ import annotations

from ... import numpy as tnp
from .. import special as sp
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def _y(fname, x, loc, scale):
    x, loc, scale = promote(f"logistic.{fname}", ("x", "loc", "scale"), (x, loc, scale))
    return (x - loc) / scale, loc, scale


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, _, scale = _y("logpdf", x, loc, scale)
    a = tnp.abs(y)
    return -a - 2.0 * tnp.log1p(tnp.exp(-a)) - tnp.log(scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return sp.expit(_y("cdf", x, loc, scale)[0])


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return sp.expit(-_y("sf", x, loc, scale)[0])


def ppf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("logistic.ppf", ("x", "loc", "scale"), (x, loc, scale))
    return sp.logit(q) * scale + loc


def isf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("logistic.isf", ("x", "loc", "scale"), (x, loc, scale))
    return loc - sp.logit(q) * scale
