"""The beta-binomial distribution (``jax.scipy.stats.betabinom``: ``logpmf``, ``pmf``).

``k`` is floored; the pmf is 0 off ``0..n`` and NaN for ``n < 0``, ``a <= 0`` or ``b <= 0``.
"""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpmf(k: ArrayLike, n: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0) -> Array:
    """The log of the beta-binomial pmf at ``k`` with ``n`` trials and shapes ``a``, ``b``,
    shifted by ``loc``."""
    k, n, a, b, loc = promote("betabinom.logpmf", ("k", "n", "a", "b", "loc"), (k, n, a, b, loc))
    y = tnp.floor(k) - loc
    bad = (n < 0) | (a <= 0) | (b <= 0)
    outside = (y < -loc) | (y > n) | (y + a <= 0)
    n, a, b = safe(bad, 1.0, n), safe(bad, 1.0, a), safe(bad, 1.0, b)
    y = safe(outside | bad, 0.0, y)
    log_choose = -tnp.log1p(n) - sp.betaln(n - y + 1.0, y + 1.0)
    out = log_choose + sp.betaln(y + a, n - y + b) - sp.betaln(a, b)
    out = tnp.where((y == 0) & (n == 0), 0.0, out)
    out = tnp.where(outside, NEG_INF, out)
    return tnp.where(bad, np.nan, out)


def pmf(k: ArrayLike, n: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0) -> Array:
    """The beta-binomial pmf at ``k`` (``n``, ``a``, ``b``, ``loc`` as :func:`logpmf`)."""
    return tnp.exp(logpmf(k, n, a, b, loc))
