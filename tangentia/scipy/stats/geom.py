"""The geometric distribution (``jax.scipy.stats.geom``: ``logpmf``, ``pmf``) on
``1, 2, ...`` (shifted by ``loc``)."""
from __future__ import annotations

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpmf(k: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """The log pmf at ``k`` with success probability ``p``, shifted by ``loc``."""
    k, p, loc = promote("geom.logpmf", ("k", "p", "loc"), (k, p, loc))
    x = k - loc
    return tnp.where(x <= 0, NEG_INF, sp.xlog1py(x - 1.0, -p) + tnp.log(p))


def pmf(k: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """The pmf at ``k`` (``p``, ``loc`` as :func:`logpmf`)."""
    return tnp.exp(logpmf(k, p, loc))
