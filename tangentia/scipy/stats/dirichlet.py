"""The Dirichlet distribution (``jax.scipy.stats.dirichlet``).

``x`` has shape ``(K, ...)`` (or ``(K - 1, ...)``: the last component is
``1 - sum``), ``alpha`` shape ``(K,)``; points off the simplex have density 0.
"""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import special as sp
from ._util import NEG_INF, promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpdf(x: ArrayLike, alpha: ArrayLike) -> Array:
    x, alpha = promote("dirichlet.logpdf", ("x", "alpha"), (x, alpha))
    if tnp.ndim(alpha) != 1:
        raise ValueError(f"dirichlet.logpdf: argument 'alpha' must be one-dimensional, got "
                         f"shape {tnp.shape(alpha)}")
    K = tnp.shape(alpha)[0]
    if tnp.ndim(x) == 0 or tnp.shape(x)[0] not in (K, K - 1):
        raise ValueError(f"dirichlet.logpdf: argument 'x' must have {K} or {K - 1} entries "
                         f"along its first axis (alpha has shape {tnp.shape(alpha)}), got "
                         f"shape {tnp.shape(x)}")
    if tnp.shape(x)[0] == K - 1:
        x = tnp.concatenate([x, 1.0 - tnp.sum(x, axis=0, keepdims=True)], axis=0)
    normalize = tnp.sum(sp.gammaln(alpha)) - sp.gammaln(tnp.sum(alpha))
    a = tnp.reshape(alpha, (K,) + (1,) * (tnp.ndim(x) - 1))
    simplex = tnp.all(x > 0, axis=0) & (tnp.abs(tnp.sum(x, axis=0) - 1.0) < 1e-6)
    safe_x = tnp.where(x > 0, x, 1.0)
    log_probs = tnp.sum(sp.xlogy(a - 1.0, safe_x), axis=0) - normalize
    return tnp.where(simplex, log_probs, NEG_INF)


def pdf(x: ArrayLike, alpha: ArrayLike) -> Array:
    return tnp.exp(logpdf(x, alpha))


del np
