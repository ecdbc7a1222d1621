"""The chi-squared distribution (``jax.scipy.stats.chi2``): a gamma distribution with
shape ``df / 2`` and scale ``2 * scale``."""
from __future__ import annotations

from ... import numpy as tnp
from . import gamma as _g
from ._util import promote

_NAMES = ("x", "df", "loc", "scale")


def _as_gamma(fname, x, df, loc, scale):
    x, df, loc, scale = promote(f"chi2.{fname}", _NAMES, (x, df, loc, scale))
    return x, 0.5 * df, loc, 2.0 * scale


def logpdf(x, df, loc=0, scale=1):
    return _g._logpdf(*_as_gamma("logpdf", x, df, loc, scale))


def pdf(x, df, loc=0, scale=1):
    return tnp.exp(_g._logpdf(*_as_gamma("pdf", x, df, loc, scale)))


def cdf(x, df, loc=0, scale=1):
    return _g._cdf(*_as_gamma("cdf", x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    return tnp.log(_g._cdf(*_as_gamma("logcdf", x, df, loc, scale)))


def sf(x, df, loc=0, scale=1):
    return _g._sf(*_as_gamma("sf", x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    return tnp.log(_g._sf(*_as_gamma("logsf", x, df, loc, scale)))
