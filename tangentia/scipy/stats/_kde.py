"""Gaussian kernel density estimation (``jax.scipy.stats.gaussian_kde``): a pytree
holding the data, weights and kernel covariance, so an estimator can be built or
evaluated inside ``jit``, ``vmap`` and ``grad``."""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ... import random
from ...tree_util import register_pytree_node_class
from .. import linalg, special

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable
    from ...typing import Array, ArrayLike, Shape


@register_pytree_node_class
class gaussian_kde:
    """A Gaussian kernel density estimate of ``dataset`` (SciPy's ``gaussian_kde``).

    Args:
      dataset: the data, shape ``(d, n)`` (or ``(n,)`` for one dimension).
      bw_method: the bandwidth factor: ``"scott"`` (default), ``"silverman"``, a
        scalar, or a function of the estimator.
      weights: optional weights of the ``n`` points.
    """
    __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

    def __init__(self, dataset: ArrayLike,
                 bw_method: None | str | ArrayLike | Callable[[Any], ArrayLike] = None,
                 weights: ArrayLike | None = None) -> None:
        dataset = tnp.atleast_2d(tnp.asarray(dataset))
        if tnp.iscomplexobj(dataset):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is not None:
            dtype = tnp.result_type(dataset, tnp.asarray(weights), 1.0)
            dataset = dataset.astype(dtype)
            weights = tnp.atleast_1d(tnp.asarray(weights, dtype))
            weights = weights / tnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            dataset = dataset.astype(tnp.result_type(dataset, 1.0))
            weights = tnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self.dataset, self.weights = dataset, weights
        self.neff = 1 / tnp.sum(weights ** 2)
        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = self.neff ** (-1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif tnp.isscalar(bw_method) and not isinstance(bw_method, str):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a "
                             "callable.")
        cov = tnp.atleast_2d(tnp.cov(dataset, rowvar=1, bias=False, aweights=weights))
        self.covariance = cov * factor ** 2
        self.inv_cov = tnp.linalg.inv(cov) / factor ** 2

    def tree_flatten(self) -> tuple[tuple[Any, ...], None]:
        """The children ``(neff, dataset, weights, covariance, inv_cov)``, no aux data."""
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data: Any, children: Any) -> gaussian_kde:
        """An estimator from the ``children`` of :meth:`tree_flatten` (``aux_data`` unused)."""
        kde = cls.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
        return kde

    @property
    def d(self) -> int:
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        """The number of data points."""
        return self.dataset.shape[1]

    def _points(self, points):
        if tnp.iscomplexobj(tnp.asarray(points)):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = tnp.atleast_2d(tnp.asarray(points))
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return points.reshape(self.d, 1)
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def _log_terms(self, points):
        """``(m, n)``: the log of each data point's weighted kernel at each point."""
        whitening = tnp.linalg.cholesky(self.inv_cov)
        data = self.dataset.T @ whitening
        xs = self._points(points).T @ whitening
        log_norm = tnp.sum(tnp.log(tnp.diag(whitening))) - 0.5 * self.d * np.log(2 * np.pi)
        sq = tnp.sum((xs[:, None, :] - data[None, :, :]) ** 2, axis=-1)
        return tnp.log(self.weights) + log_norm - 0.5 * sq

    def evaluate(self, points: ArrayLike) -> Array:
        """The estimated density at ``points`` (shape ``(d, m)``)."""
        return tnp.sum(tnp.exp(self._log_terms(points)), axis=1)

    def __call__(self, points: ArrayLike) -> Array:
        """The estimated density at ``points`` (as :meth:`evaluate`)."""
        return self.evaluate(points)

    def pdf(self, x: ArrayLike) -> Array:
        """The estimated density at the points ``x`` (as :meth:`evaluate`)."""
        return self.evaluate(x)

    def logpdf(self, x: ArrayLike) -> Array:
        """The log of the estimated density at the points ``x``."""
        return special.logsumexp(self._log_terms(x), axis=1)

    def _convolve(self, cov, target, weights, means):
        """``(k,)``: for each column of ``means`` (``(d, k)``), the sum of ``weights`` times
        the Gaussian density of covariance ``self.covariance + cov`` at ``target - mean``
        (``target``: ``(d, n)`` points), all columns in one triangular solve."""
        chol = linalg.cho_factor(self.covariance + cov)
        norm = 1.0 / (np.sqrt(2 * np.pi) ** self.d * tnp.prod(tnp.diag(chol[0])))
        diff = target[:, None, :] - means[:, :, None]
        alpha = linalg.cho_solve(chol, diff.reshape(self.d, -1)).reshape(diff.shape)
        return norm * tnp.sum(tnp.exp(-0.5 * tnp.sum(diff * alpha, axis=0)) * weights, axis=1)

    def integrate_gaussian(self, mean: ArrayLike, cov: ArrayLike) -> Array:
        """The integral of the estimate times the Gaussian with ``mean`` and ``cov``."""
        mean = tnp.atleast_1d(tnp.squeeze(tnp.asarray(mean)))
        cov = tnp.atleast_2d(tnp.asarray(cov))
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        return self._convolve(cov, self.dataset, self.weights, mean[:, None])[0]

    def integrate_box_1d(self, low: ArrayLike, high: ArrayLike) -> Array:
        """The estimate's mass between the scalars ``low`` and ``high`` (1-D only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = tnp.squeeze(tnp.sqrt(self.covariance))
        lo = tnp.squeeze((low - self.dataset) / sigma)
        hi = tnp.squeeze((high - self.dataset) / sigma)
        return tnp.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

    def integrate_kde(self, other: gaussian_kde) -> Array:
        """The integral of the product of this estimate and ``other``."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        small, large = (self, other) if self.n < other.n else (other, self)
        terms = self._convolve(other.covariance, large.dataset, large.weights, small.dataset)
        return tnp.sum(terms * small.weights)

    def resample(self, key: ArrayLike, shape: Shape = ()) -> Array:
        """``shape`` samples from the estimate (shape ``(d, *shape)``), drawn with the
        PRNG ``key``."""
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(eps_key, tnp.zeros(self.d, self.covariance.dtype),
                                         self.covariance, shape=shape,
                                         dtype=self.dataset.dtype).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds: ArrayLike, high_bounds: ArrayLike,
                      maxpts: Any = None) -> Array:
        """Not supported (as JAX): ``low_bounds``, ``high_bounds`` and ``maxpts`` are
        SciPy's; use :meth:`integrate_box_1d`."""
        raise NotImplementedError("only 1D box integrations are supported; use "
                                  "`integrate_box_1d`")

    def set_bandwidth(self, bw_method: Any = None) -> None:
        """Not supported (as JAX): ``bw_method`` cannot change after construction."""
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")
