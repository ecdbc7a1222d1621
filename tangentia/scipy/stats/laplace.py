"""The Laplace distribution (``jax.scipy.stats.laplace``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

_LOG2 = float(np.log(2.0))


def _y(fname, x, loc, scale):
    x, loc, scale = promote(f"laplace.{fname}", ("x", "loc", "scale"), (x, loc, scale))
    return (x - loc) / scale, scale


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, scale = _y("logpdf", x, loc, scale)
    return -tnp.abs(y) - tnp.log(scale) - _LOG2


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(logpdf(x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    y, _ = _y("cdf", x, loc, scale)
    half_tail = 0.5 * tnp.exp(-tnp.abs(y))
    return tnp.where(y < 0, half_tail, 1.0 - half_tail)
