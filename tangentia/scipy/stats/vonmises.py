"""The von Mises distribution (``jax.scipy.stats.vonmises``: ``logpdf``, ``pdf``) on the
circle, concentration ``kappa > 0`` (NaN otherwise)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import special as sp
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpdf(x: ArrayLike, kappa: ArrayLike) -> Array:
    """The log density at angle ``x`` with concentration ``kappa``."""
    x, kappa = promote("vonmises.logpdf", ("x", "kappa"), (x, kappa))
    out = kappa * (tnp.cos(x) - 1) - tnp.log(2 * np.pi * sp.i0e(kappa))
    return tnp.where(kappa > 0, out, np.nan)


def pdf(x: ArrayLike, kappa: ArrayLike) -> Array:
    """The density at angle ``x`` with concentration ``kappa``."""
    return tnp.exp(logpdf(x, kappa))
