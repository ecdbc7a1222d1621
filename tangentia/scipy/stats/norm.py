"""The normal distribution (``jax.scipy.stats.norm``); log-probabilities are accurate
far in the tails (``logcdf(-40.)`` through ``log_ndtr``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import special as sp
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

_HALF_LOG_2PI = float(0.5 * np.log(2 * np.pi))


def _standard(fname, x, loc, scale, argname="x"):
    x, loc, scale = promote(f"norm.{fname}", (argname, "loc", "scale"), (x, loc, scale))
    return (x - loc) / scale, scale


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, scale = _standard("logpdf", x, loc, scale)
    return -0.5 * y * y - tnp.log(scale) - _HALF_LOG_2PI


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return sp.ndtr(_standard("cdf", x, loc, scale)[0])


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return sp.log_ndtr(_standard("logcdf", x, loc, scale)[0])


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return sp.ndtr(-_standard("sf", x, loc, scale)[0])


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return sp.log_ndtr(-_standard("logsf", x, loc, scale)[0])


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("norm.ppf", ("q", "loc", "scale"), (q, loc, scale))
    return sp.ndtri(q) * scale + loc


def isf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("norm.isf", ("q", "loc", "scale"), (q, loc, scale))
    return loc - sp.ndtri(q) * scale
