"""Probability distributions (``tangentia.scipy.stats``), mirroring ``jax.scipy.stats``.

Each distribution is a module with JAX's functions and signatures
(``norm.logpdf(x, loc=0, scale=1)``, ``poisson.logpmf(k, mu, loc=0)``, ...),
written as compositions of ``tangentia.numpy`` and
``tangentia.scipy.special`` functions, so every function works under
``grad``, ``jvp``, ``vmap`` and ``jit``.  Arguments broadcast against each
other; float32 inputs give float32 results (SciPy returns float64), integers
are promoted to float64.
"""
from . import (bernoulli, beta, binom, cauchy, chi2, dirichlet, expon, gamma, laplace,  # noqa: F401
               logistic, multivariate_normal, norm, poisson, t, uniform)
from . import (betabinom, gennorm, geom, gumbel_l, gumbel_r, multinomial, nbinom,  # noqa: F401
               pareto, truncnorm, vonmises, wrapcauchy)
from ._kde import gaussian_kde  # noqa: F401
from ._summaries import ModeResult, mode, rankdata, sem  # noqa: F401
