"""The multivariate normal distribution (``jax.scipy.stats.multivariate_normal``).

``x`` and ``mean`` have shape ``(..., n)`` and ``cov`` ``(..., n, n)``
(batch axes broadcast), or ``cov`` is a scalar (``cov * I``); with a scalar
``mean`` the distribution is univariate.  The density uses the Cholesky
factor of ``cov``.
"""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import linalg as sla
from ._util import promote

_LOG_2PI = float(np.log(2 * np.pi))


def logpdf(x, mean, cov, allow_singular=None):
    fname = "multivariate_normal.logpdf"
    if allow_singular is not None:
        raise NotImplementedError(f"{fname}: argument 'allow_singular' is not supported")
    x, mean, cov = promote(fname, ("x", "mean", "cov"), (x, mean, cov))
    if tnp.ndim(mean) == 0:
        if tnp.ndim(cov) != 0:
            raise ValueError(f"{fname}: argument 'cov' must be a scalar when 'mean' is a "
                             f"scalar, got shape {tnp.shape(cov)}")
        return -0.5 * (x - mean) ** 2 / cov - 0.5 * (_LOG_2PI + tnp.log(cov))
    n = tnp.shape(mean)[-1]
    if tnp.ndim(x) == 0 or tnp.shape(x)[-1] != n:
        raise ValueError(f"{fname}: argument 'x' of shape {tnp.shape(x)} must end in the "
                         f"dimension {n} of 'mean' (shape {tnp.shape(mean)})")
    y = x - mean
    if tnp.ndim(cov) == 0:
        return -0.5 * tnp.sum(y * y, axis=-1) / cov - 0.5 * n * (_LOG_2PI + tnp.log(cov))
    if tnp.ndim(cov) < 2 or tnp.shape(cov)[-2:] != (n, n):
        raise ValueError(f"{fname}: argument 'cov' must have shape (..., {n}, {n}) to match "
                         f"'mean' of shape {tnp.shape(mean)}, got {tnp.shape(cov)}")
    try:
        batch = np.broadcast_shapes(tnp.shape(y)[:-1], tnp.shape(cov)[:-2])
    except ValueError:
        raise ValueError(f"{fname}: the batch shapes of 'x' - 'mean' {tnp.shape(y)[:-1]} and "
                         f"'cov' {tnp.shape(cov)[:-2]} do not broadcast") from None
    L = tnp.linalg.cholesky(cov)
    if tnp.shape(L)[:-2] != batch:
        L = tnp.broadcast_to(L, batch + (n, n))
    if tnp.shape(y)[:-1] != batch:
        y = tnp.broadcast_to(y, batch + (n,))
    z = sla.solve_triangular(L, y[..., None], lower=True)[..., 0]
    half_logdet = tnp.sum(tnp.log(tnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * tnp.sum(z * z, axis=-1) - 0.5 * n * _LOG_2PI - half_logdet


def pdf(x, mean, cov):
    return tnp.exp(logpdf(x, mean, cov))
