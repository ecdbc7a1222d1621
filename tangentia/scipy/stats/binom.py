"""The binomial distribution (``jax.scipy.stats.binom``: ``logpmf`` and ``pmf``)."""
from __future__ import annotations

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpmf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    k, n, p, loc = promote("binom.logpmf", ("k", "n", "p", "loc"), (k, n, p, loc))
    k = k - loc
    bad = (k < 0) | (k > n) | (k != tnp.floor(k))
    k = safe(bad, 0.0, k)
    comb = sp.gammaln(n + 1.0) - sp.gammaln(k + 1.0) - sp.gammaln(n - k + 1.0)
    return tnp.where(bad, NEG_INF, comb + sp.xlogy(k, p) + sp.xlog1py(n - k, -p))


def pmf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    return tnp.exp(logpmf(k, n, p, loc))
