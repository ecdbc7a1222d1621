"""The negative binomial distribution (``jax.scipy.stats.nbinom``: ``logpmf``, ``pmf``):
failures before the ``n``-th success."""
from __future__ import annotations

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpmf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """The log pmf at ``k`` with ``n`` successes of probability ``p``, shifted by ``loc``."""
    k, n, p, loc = promote("nbinom.logpmf", ("k", "n", "p", "loc"), (k, n, p, loc))
    y = safe(k < loc, 0.0, k - loc)
    out = (sp.gammaln(y + n) - sp.gammaln(n) - sp.gammaln(y + 1.0)
           + sp.xlogy(n, p) + sp.xlogy(y, 1.0 - p))
    return tnp.where(k < loc, NEG_INF, out)


def pmf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """The pmf at ``k`` (``n``, ``p``, ``loc`` as :func:`logpmf`)."""
    return tnp.exp(logpmf(k, n, p, loc))
