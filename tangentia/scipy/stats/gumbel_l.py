"""The Gumbel distribution of minima (``jax.scipy.stats.gumbel_l``: ``logpdf``, ``pdf``,
``logcdf``, ``cdf``, ``logsf``, ``sf``, ``ppf``); NaN where ``scale <= 0``.

It is ``gumbel_r`` mirrored: its variable is minus a ``gumbel_r`` variable, so its
cdf is ``gumbel_r``'s survival function at ``-x`` and vice versa."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from . import gumbel_r as _r
from ._util import promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def _mirrored(fname, x, loc, scale):
    z, scale = _r._standard(f"gumbel_l.{fname}", x, loc, scale)
    return -z, scale


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log density at ``x`` with location ``loc`` and scale ``scale``."""
    return _r._logpdf(*_mirrored("logpdf", x, loc, scale))


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density at ``x`` with location ``loc`` and scale ``scale``."""
    return tnp.exp(logpdf(x, loc, scale))


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log cumulative distribution at ``x`` with location ``loc`` and scale ``scale``."""
    return _r._logsf(*_mirrored("logcdf", x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The cumulative distribution at ``x`` with location ``loc`` and scale ``scale``."""
    return tnp.exp(logcdf(x, loc, scale))


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The log survival function at ``x`` with location ``loc`` and scale ``scale``."""
    return _r._logcdf(*_mirrored("logsf", x, loc, scale))


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function at ``x`` with location ``loc`` and scale ``scale``."""
    return tnp.exp(logsf(x, loc, scale))


def ppf(p: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile at probability ``p`` with location ``loc`` and scale ``scale``."""
    p, loc, scale = promote("gumbel_l.ppf", ("p", "loc", "scale"), (p, loc, scale))
    ok = (p > 0) & (p < 1)
    return tnp.where(ok, loc + scale * tnp.log(-tnp.log1p(-safe(ok, p, 0.5))), np.nan)
