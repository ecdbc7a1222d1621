"""The truncated normal distribution (``jax.scipy.stats.truncnorm``: ``logpdf``, ``pdf``,
``logcdf``, ``cdf``, ``logsf``, ``sf``), truncated to ``[a, b]`` in standardized units;
the normal mass of ``[a, b]`` is computed in the tail it lies in, so it stays accurate
far from the mean (as JAX and SciPy)."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ...nn import log1mexp
from .. import special as sp
from . import norm
from ._util import NEG_INF, promote, safe

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def _log_diff(x, y):
    """``log(exp(x) - exp(y))`` for ``x >= y``."""
    d = tnp.where(x == NEG_INF, 1.0, x - y)
    return tnp.where(x == NEG_INF, NEG_INF, x + log1mexp(d))


def _log_gauss_mass(a, b):
    """``log(ndtr(b) - ndtr(a))`` for ``a <= b``, in whichever tail is accurate."""
    a, b = tnp.broadcast_arrays(a, b)
    right = a > 0
    central = ~((b <= 0) | right)
    tail = _log_diff(sp.log_ndtr(tnp.where(right, -a, b)), sp.log_ndtr(tnp.where(right, -b, a)))
    return tnp.where(central, tnp.log1p(-sp.ndtr(a) - sp.ndtr(-b)), tail)


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density at ``x`` of the normal (``loc``, ``scale``) truncated to
    ``[a, b]`` (standardized bounds)."""
    x, a, b, loc, scale = promote("truncnorm.logpdf", ("x", "a", "b", "loc", "scale"),
                                  (x, a, b, loc, scale))
    a, b, bad = _valid_bounds(a, b)
    out = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    z = (x - loc) / scale
    out = tnp.where((z < a) | (z > b), NEG_INF, out)
    return tnp.where(bad, np.nan, out)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density at ``x`` (``a``, ``b``, ``loc``, ``scale`` as :func:`logpdf`)."""
    return tnp.exp(logpdf(x, a, b, loc, scale))


def _valid_bounds(a, b):
    """``(a, b, bad)``: bounds with ``a < b`` (placeholders where ``a >= b``)."""
    bad = a >= b
    return safe(bad, 0.0, a), safe(bad, 1.0, b), bad


def _inside(z, a, b):
    """A point strictly inside ``(a, b)`` where ``z`` is not (its masses stay finite)."""
    mid = tnp.where(tnp.isinf(a), tnp.where(tnp.isinf(b), 0.0, b - 1.0),
                    tnp.where(tnp.isinf(b), a + 1.0, 0.5 * (a + b)))
    return tnp.where((z <= a) | (z >= b), mid, z)


def _logcdf(x, a, b, loc, scale):
    x, a, b = tnp.broadcast_arrays(x, a, b)
    a, b, bad = _valid_bounds(a, b)
    z = (x - loc) / scale
    zi = _inside(z, a, b)
    mass = _log_gauss_mass(a, b)
    below = _log_gauss_mass(a, zi) - mass
    above = _log_gauss_mass(zi, b) - mass
    out = tnp.select([z >= b, z <= a, below > -0.1, z > a],
                     [0.0, NEG_INF, tnp.log1p(-tnp.exp(above)), below])
    return tnp.where(bad, np.nan, out)


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log cumulative distribution at ``x`` (``a``, ``b``, ``loc``, ``scale`` as
    :func:`logpdf`)."""
    args = promote("truncnorm.logcdf", ("x", "a", "b", "loc", "scale"), (x, a, b, loc, scale))
    return _logcdf(*args)


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The cumulative distribution at ``x`` (``a``, ``b``, ``loc``, ``scale`` as
    :func:`logpdf`)."""
    return tnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log survival function at ``x`` (``a``, ``b``, ``loc``, ``scale`` as
    :func:`logpdf`)."""
    x, a, b, loc, scale = promote("truncnorm.logsf", ("x", "a", "b", "loc", "scale"),
                                  (x, a, b, loc, scale))
    return _logcdf(-x, -b, -a, -loc, scale)


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function at ``x`` (``a``, ``b``, ``loc``, ``scale`` as :func:`logpdf`)."""
    return tnp.exp(logsf(x, a, b, loc, scale))
