"""The uniform distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.uniform``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    x, loc, scale = promote("uniform.logpdf", ("x", "loc", "scale"), (x, loc, scale))
    outside = (x < loc) | (x > loc + scale)
    return tnp.where(outside, NEG_INF, -tnp.log(scale) + 0.0 * x)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    x, loc, scale = promote("uniform.cdf", ("x", "loc", "scale"), (x, loc, scale))
    return tnp.clip((x - loc) / scale, 0.0, 1.0)


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("uniform.ppf", ("q", "loc", "scale"), (q, loc, scale))
    bad = (q < 0) | (q > 1)
    return tnp.where(bad, np.nan, loc + safe(bad, 0.5, q) * scale)
