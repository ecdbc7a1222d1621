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


_BIG = 1e150      # beyond it 1 + y^2 is y^2 (and y^2 overflows from 1.3e154)


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    # log1p(y^2) is 2 log|y| for |y| > 1e150: y^2 overflowed, and the logpdf was -inf with a
    # NaN gradient from |y| = 1.3e154 on (JAX's too; SciPy's at 1e300: -1382.6958).
    y, scale = _y("logpdf", x, loc, scale)
    big = tnp.abs(y) > _BIG
    ys = tnp.where(big, 0.0, y)
    tail = 2.0 * tnp.log(tnp.abs(tnp.where(big, y, 1.0)))
    return -float(np.log(np.pi)) - tnp.log(scale) - tnp.where(big, tail, tnp.log1p(ys * ys))


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


def _standard_ppf(q):
    """tan(pi (q - 1/2)) with its relative accuracy in the tails: -1 / tan(pi q) below 1/4 and
    1 / tan(pi (1 - q)) above 3/4 (1 - q exact there).  tan(pi (q - 1/2)) was -1.6e16 at q = 0
    and at q = 1e-20 (the quantile is -inf and -3.18e19: pi q is lost beside pi / 2) and
    318314379919.8 at q = 1 - 1e-12 (318309893225.5); JAX's is the same formula.  NaN outside
    [0, 1], as SciPy's and every other ppf of ours (it was tan's periodic value)."""
    lo, hi = q < 0.25, q > 0.75
    mid = tnp.tan(np.pi * (tnp.where(lo | hi, 0.5, q) - 0.5))
    # (q + 0.0 is +0 at q = -0, so that -0 gives -inf too, with q's tangent; the other
    # branches' inputs stay away from their poles, so no inf reaches a discarded cotangent)
    left = -1.0 / tnp.tan(np.pi * (tnp.where(lo, q, 0.25) + 0.0))
    right = 1.0 / tnp.tan(np.pi * (1.0 - tnp.where(hi, q, 0.75)))
    out = tnp.where(lo, left, tnp.where(hi, right, mid))
    return tnp.where((q >= 0) & (q <= 1), out, np.nan)


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("cauchy.ppf", ("q", "loc", "scale"), (q, loc, scale))
    return loc + scale * _standard_ppf(q)


def isf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    q, loc, scale = promote("cauchy.isf", ("q", "loc", "scale"), (q, loc, scale))
    return loc - scale * _standard_ppf(q)
