"""The Poisson distribution (``jax.scipy.stats.poisson``: ``logpmf``, ``pmf``, ``cdf``).

``k`` may be any real: the pmf is 0 off the non-negative integers; the cdf is
``gammaincc(floor(k) + 1, mu)``, differentiable in ``mu``.
"""
from __future__ import annotations

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpmf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    k, mu, loc = promote("poisson.logpmf", ("k", "mu", "loc"), (k, mu, loc))
    k = k - loc
    bad = (k < 0) | (k != tnp.floor(k))
    k = safe(bad, 0.0, k)
    return tnp.where(bad, NEG_INF, sp.xlogy(k, mu) - sp.gammaln(k + 1.0) - mu)


def pmf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    return tnp.exp(logpmf(k, mu, loc))


def cdf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    k, mu, loc = promote("poisson.cdf", ("k", "mu", "loc"), (k, mu, loc))
    k = k - loc
    neg = k < 0
    return tnp.where(neg, 0.0, sp.gammaincc(tnp.floor(safe(neg, 0.0, k)) + 1.0, mu))
