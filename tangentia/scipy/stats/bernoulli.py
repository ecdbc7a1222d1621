"""The Bernoulli distribution (``jax.scipy.stats.bernoulli``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpmf(k: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    k, p, loc = promote("bernoulli.logpmf", ("k", "p", "loc"), (k, p, loc))
    k = k - loc
    # a NaN k goes through the formula too: NaN, as SciPy's and JAX's (and JAX's NaN gradient)
    ok = (k == 0) | (k == 1) | tnp.isnan(k)
    k = tnp.where(ok, k, 0.0)
    return tnp.where(ok, sp.xlogy(k, p) + sp.xlog1py(1.0 - k, -p), NEG_INF)


def pmf(k: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    return tnp.exp(logpmf(k, p, loc))


def cdf(k: ArrayLike, p: ArrayLike) -> Array:
    k, p = promote("bernoulli.cdf", ("k", "p"), (k, p))
    bad = tnp.isnan(k) | (p < 0) | (p > 1) | tnp.isnan(p)
    out = tnp.where(k < 0, 0.0, tnp.where(k < 1, 1.0 - p, 1.0))
    return tnp.where(bad, np.nan, out)


def ppf(q: ArrayLike, p: ArrayLike) -> Array:
    q, p = promote("bernoulli.ppf", ("q", "p"), (q, p))
    bad = tnp.isnan(q) | tnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return tnp.where(bad, np.nan, tnp.where(q <= 1.0 - p, 0.0, 1.0))
