"""The multinomial distribution (``jax.scipy.stats.multinomial``: ``logpmf``, ``pmf``);
counts on the last axis."""
from __future__ import annotations

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpmf(x: ArrayLike, n: ArrayLike, p: ArrayLike) -> Array:
    """The log pmf of the integer counts ``x`` (last axis) for ``n`` trials with
    category probabilities ``p``."""
    (p,) = promote("multinomial.logpmf", ("p",), (p,))
    x, n = tnp.asarray(x), tnp.asarray(n)
    if not (tnp.issubdtype(x.dtype, tnp.integer) and tnp.issubdtype(n.dtype, tnp.integer)):
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                         f"n.dtype={n.dtype} (multinomial.logpmf)")
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    out = sp.gammaln(n + 1) + tnp.sum(sp.xlogy(x, p) - sp.gammaln(x + 1), axis=-1)
    return tnp.where(tnp.sum(x) == n, out, NEG_INF)


def pmf(x: ArrayLike, n: ArrayLike, p: ArrayLike) -> Array:
    """The pmf of the counts ``x`` (``n``, ``p`` as :func:`logpmf`)."""
    return tnp.exp(logpmf(x, n, p))
