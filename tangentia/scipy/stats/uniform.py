"""The uniform distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.uniform``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ._util import NEG_INF, promote, safe


def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("uniform.logpdf", ("x", "loc", "scale"), (x, loc, scale))
    outside = (x < loc) | (x > loc + scale)
    return tnp.where(outside, NEG_INF, -tnp.log(scale) + 0.0 * x)


def pdf(x, loc=0, scale=1):
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("uniform.cdf", ("x", "loc", "scale"), (x, loc, scale))
    return tnp.clip((x - loc) / scale, 0.0, 1.0)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote("uniform.ppf", ("q", "loc", "scale"), (q, loc, scale))
    bad = (q < 0) | (q > 1)
    return tnp.where(bad, np.nan, loc + safe(bad, 0.5, q) * scale)
