"""The chi-squared distribution (``jax.scipy.stats.chi2``): a gamma distribution with
shape ``df / 2`` and scale ``2 * scale``."""
from __future__ import annotations

from ... import numpy as tnp
from . import gamma as _g
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

_NAMES = ("x", "df", "loc", "scale")


def _as_gamma(fname, x, df, loc, scale):
    x, df, loc, scale = promote(f"chi2.{fname}", _NAMES, (x, df, loc, scale))
    return x, 0.5 * df, loc, 2.0 * scale


def logpdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _g._logpdf(*_as_gamma("logpdf", x, df, loc, scale))


def pdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return tnp.exp(_g._logpdf(*_as_gamma("pdf", x, df, loc, scale)))


def cdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _g._cdf(*_as_gamma("cdf", x, df, loc, scale))


def logcdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _g._logcdf(*_as_gamma("logcdf", x, df, loc, scale))


def sf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _g._sf(*_as_gamma("sf", x, df, loc, scale))


def logsf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    return _g._logsf(*_as_gamma("logsf", x, df, loc, scale))
