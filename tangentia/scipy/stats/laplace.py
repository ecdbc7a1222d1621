"""The Laplace distribution (``jax.scipy.stats.laplace``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ._util import promote

_LOG2 = float(np.log(2.0))


def _y(fname, x, loc, scale):
    x, loc, scale = promote(f"laplace.{fname}", ("x", "loc", "scale"), (x, loc, scale))
    return (x - loc) / scale, scale


def logpdf(x, loc=0, scale=1):
    y, scale = _y("logpdf", x, loc, scale)
    return -tnp.abs(y) - tnp.log(scale) - _LOG2


def pdf(x, loc=0, scale=1):
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, _ = _y("cdf", x, loc, scale)
    half_tail = 0.5 * tnp.exp(-tnp.abs(y))
    return tnp.where(y < 0, half_tail, 1.0 - half_tail)
