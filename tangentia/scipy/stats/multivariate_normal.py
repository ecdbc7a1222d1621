"""The multivariate normal distribution (``jax.scipy.stats.multivariate_normal``).

``x`` and ``mean`` have shape ``(..., n)`` and ``cov`` ``(..., n, n)``
(batch axes broadcast), or ``cov`` is a scalar (``cov * I``); with a scalar
``mean`` the distribution is univariate.  The density uses the Cholesky
factor of ``cov``.

``allow_singular=True`` (SciPy's argument; JAX's accepts only None) takes a
positive semidefinite ``cov``, as SciPy does: the density is the one on the
subspace ``cov`` spans, with its pseudo-determinant and rank (eigenvalues below
SciPy's cutoff, ``1e6 * eps * max|eigenvalue|``, count as zero); points off that
subspace have density 0 (``logpdf`` -inf), and a ``cov`` with an eigenvalue below
``-cutoff`` (not positive semidefinite, where SciPy raises) gives NaN.
``entropy(mean=None, cov=1)`` is SciPy's (JAX has none), with the same
pseudo-determinant and rank for a singular ``cov``.
"""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from .. import linalg as tsl
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any
    from ...typing import Array, ArrayLike

_LOG_2PI = float(np.log(2 * np.pi))


def _singular_flag(fname, allow_singular):
    if allow_singular is None or allow_singular is False or allow_singular is True:
        return bool(allow_singular)
    if isinstance(allow_singular, (bool, np.bool_)):
        return bool(allow_singular)
    raise TypeError(f"{fname}: argument 'allow_singular' must be None, True or False, got "
                    f"{allow_singular!r}")


def _cutoff(w):
    """SciPy's magnitude below which eigenvalues ``w`` (last axis) count as zero."""
    factor = 1e3 if w.dtype == np.float32 else 1e6
    return factor * np.finfo(w.dtype).eps * tnp.max(tnp.abs(w), axis=-1, keepdims=True)


def _pseudo(cov):
    """Eigen-decomposition of a semidefinite ``cov``: ``(w, V, keep, cutoff)`` with
    ``keep`` the eigenvalues above SciPy's cutoff and ``w`` 1 elsewhere (safe logs)."""
    w, V = tnp.linalg.eigh(cov)
    eps = _cutoff(w)
    keep = w > eps
    psd = tnp.all(w >= -eps, axis=-1)
    return tnp.where(keep, w, 1.0), V, keep, eps[..., 0], psd


def _logpdf_singular(y, cov, n):
    w, V, keep, eps, psd = _pseudo(cov)
    z = tnp.einsum("...ij,...i->...j", V, y)      # y in the eigenvector basis
    z2 = z * z
    rank = tnp.sum(keep, axis=-1).astype(w.dtype)
    log_pdet = tnp.sum(tnp.where(keep, tnp.log(w), 0.0), axis=-1)
    maha = tnp.sum(tnp.where(keep, z2 / w, 0.0), axis=-1)
    out = -0.5 * (rank * _LOG_2PI + log_pdet + maha)
    off = tnp.sqrt(tnp.sum(tnp.where(keep, 0.0, z2), axis=-1))  # distance from the support
    out = tnp.where(off < 1e3 * eps, out, -np.inf)
    return tnp.where(psd, out, np.nan)


def logpdf(x: ArrayLike, mean: ArrayLike, cov: ArrayLike, allow_singular: None = None) -> Array:
    fname = "multivariate_normal.logpdf"
    singular = _singular_flag(fname, allow_singular)
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
    if singular:
        if tnp.shape(cov)[:-2] != batch:
            cov = tnp.broadcast_to(cov, batch + (n, n))
        if tnp.shape(y)[:-1] != batch:
            y = tnp.broadcast_to(y, batch + (n,))
        return _logpdf_singular(y, cov, n)
    L = tnp.linalg.cholesky(cov)
    if tnp.shape(L)[:-2] != batch:
        L = tnp.broadcast_to(L, batch + (n, n))
    if tnp.shape(y)[:-1] != batch:
        y = tnp.broadcast_to(y, batch + (n,))
    z = tsl.solve_triangular(L, y[..., None], lower=True)[..., 0]
    half_logdet = tnp.sum(tnp.log(tnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * tnp.sum(z * z, axis=-1) - 0.5 * n * _LOG_2PI - half_logdet


def pdf(x: ArrayLike, mean: ArrayLike, cov: ArrayLike, allow_singular: Any = None) -> Array:
    return tnp.exp(logpdf(x, mean, cov, allow_singular))


def entropy(mean: ArrayLike | None = None, cov: ArrayLike = 1) -> Any:
    """Differential entropy ``0.5 * (rank * (log(2 pi) + 1) + log pdet(cov))``, SciPy's
    ``multivariate_normal.entropy`` (JAX has none): the dimension is ``mean``'s
    length if it is given (a scalar ``cov`` is then ``cov * I``), else ``cov``'s;
    a singular ``cov`` counts its rank and pseudo-determinant, as SciPy's."""
    fname = "multivariate_normal.entropy"
    if mean is None:
        (cov,) = promote(fname, ("cov",), (cov,))
        n = 1 if tnp.ndim(cov) == 0 else tnp.shape(cov)[-1]
    else:
        mean, cov = promote(fname, ("mean", "cov"), (mean, cov))
        n = 1 if tnp.ndim(mean) == 0 else tnp.shape(mean)[-1]
    if tnp.ndim(cov) == 0:
        cov = cov * tnp.eye(n, dtype=cov.dtype)
    elif tnp.ndim(cov) == 1:
        cov = tnp.diag(cov)
    if tnp.shape(cov)[-2:] != (n, n):
        raise ValueError(f"{fname}: argument 'cov' must have shape (..., {n}, {n}), got "
                         f"{tnp.shape(cov)}")
    w = tnp.linalg.eigvalsh(cov)
    eps = _cutoff(w)
    keep = w > eps
    rank = tnp.sum(keep, axis=-1).astype(w.dtype)
    log_pdet = tnp.sum(tnp.log(tnp.where(keep, w, 1.0)), axis=-1)
    out = 0.5 * (rank * (_LOG_2PI + 1.0) + log_pdet)
    return tnp.where(tnp.all(w >= -eps, axis=-1), out, np.nan)
