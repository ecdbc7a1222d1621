"""The generalized normal distribution (``jax.scipy.stats.gennorm``: ``logpdf``, ``pdf``,
``cdf``), density ``beta / (2 Gamma(1/beta)) exp(-|x|**beta)``."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import special as sp
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpdf(x: ArrayLike, beta: ArrayLike) -> Array:
    """The log density at ``x`` with shape ``beta``."""
    x, beta = promote("gennorm.logpdf", ("x", "beta"), (x, beta))
    return tnp.log(0.5 * beta) - sp.gammaln(1 / beta) - tnp.abs(x) ** beta


def pdf(x: ArrayLike, beta: ArrayLike) -> Array:
    """The density at ``x`` with shape ``beta``."""
    return tnp.exp(logpdf(x, beta))


def cdf(x: ArrayLike, beta: ArrayLike) -> Array:
    """The cumulative distribution at ``x`` with shape ``beta``."""
    x, beta = promote("gennorm.cdf", ("x", "beta"), (x, beta))
    out = 0.5 * (1 + tnp.sign(x) * sp.gammainc(1 / beta, tnp.abs(x) ** beta))
    # beta <= 0 is NaN, as JAX's and SciPy's (SciPy's gammainc(inf, 1) = 0 made beta = 0 read 0.5)
    return tnp.where(beta <= 0, np.nan, out)
