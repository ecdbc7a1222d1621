"""The wrapped Cauchy distribution (``jax.scipy.stats.wrapcauchy``: ``logpdf``, ``pdf``) on
``[0, 2 pi]`` with shape ``0 < c < 1`` (NaN otherwise)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def logpdf(x: ArrayLike, c: ArrayLike) -> Array:
    """The log density at angle ``x`` with shape ``c``."""
    x, c = promote("wrapcauchy.logpdf", ("x", "c"), (x, c))
    ok = (c > 0) & (c < 1)
    c = safe(ok, c, 0.5)
    out = (tnp.log(1 - c * c) - np.log(2 * np.pi)
           - tnp.log(1 + c * c - 2 * c * tnp.cos(x)))
    out = tnp.where((x >= 0) & (x <= 2 * np.pi), out, NEG_INF)
    return tnp.where(ok, out, np.nan)


def pdf(x: ArrayLike, c: ArrayLike) -> Array:
    """The density at angle ``x`` with shape ``c``."""
    return tnp.exp(logpdf(x, c))
