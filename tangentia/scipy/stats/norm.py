"""The normal distribution (``jax.scipy.stats.norm``); log-probabilities are accurate
far in the tails (``logcdf(-40.)`` through ``log_ndtr``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import special as sp
from ._util import promote

_HALF_LOG_2PI = float(0.5 * np.log(2 * np.pi))


def _standard(fname, x, loc, scale, argname="x"):
    x, loc, scale = promote(f"norm.{fname}", (argname, "loc", "scale"), (x, loc, scale))
    return (x - loc) / scale, scale


def logpdf(x, loc=0, scale=1):
    y, scale = _standard("logpdf", x, loc, scale)
    return -0.5 * y * y - tnp.log(scale) - _HALF_LOG_2PI


def pdf(x, loc=0, scale=1):
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    return sp.ndtr(_standard("cdf", x, loc, scale)[0])


def logcdf(x, loc=0, scale=1):
    return sp.log_ndtr(_standard("logcdf", x, loc, scale)[0])


def sf(x, loc=0, scale=1):
    return sp.ndtr(-_standard("sf", x, loc, scale)[0])


def logsf(x, loc=0, scale=1):
    return sp.log_ndtr(-_standard("logsf", x, loc, scale)[0])


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote("norm.ppf", ("q", "loc", "scale"), (q, loc, scale))
    return sp.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
    q, loc, scale = promote("norm.isf", ("q", "loc", "scale"), (q, loc, scale))
    return loc - sp.ndtri(q) * scale
