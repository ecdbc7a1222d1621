"""``tangentia.scipy.stats`` against JAX 0.10.2 (x64) at the ends of each distribution's support
and parameters (session 21's sweep: every function of the 25 univariate distributions JAX
has, on grids of x at -inf, below, at and inside the support, +inf and NaN, with valid
and invalid shapes and scales; values eagerly and under jit, and the gradient with respect to
each argument).  Each test here failed before its fix.

Left alone (ours is SciPy's or the limit, JAX's is not):

* invalid parameters (``scale <= 0``, ``a <= 0``, ``p`` outside [0, 1], ``wrapcauchy``'s
  ``c = 0``) and a NaN ``x`` give NaN, as SciPy's; JAX's formulas give numbers (``uniform.pdf(nan)``
  is 1, ``expon.cdf(-2, scale=-1)`` 0, ``gamma.pdf(nan)`` 0);
* ``binom.pmf`` at a non-integer ``k`` is 0, as SciPy's (JAX's continuous extension);
  ``betabinom.logpmf(0, 5, 0.5, 3)`` is SciPy's to the last digits, JAX's off at 1e-6;
* gradients where JAX's ``where`` leaks a NaN from the branch it discards (``pareto``,
  ``truncnorm``, ``betabinom``, ``poisson``/``bernoulli`` d/loc outside the support): ours 0;
* ``binom.logpmf`` d/n at ``k = n = 0`` is ``log1p(-p)`` (the formula's derivative; JAX's 0);
* at a kink (``uniform.cdf`` at ``loc`` and ``loc + scale``) ours is the mean of the one-sided
  derivatives (``clip``'s convention), JAX's the inner one;
* ``norm.ppf`` d/q at q = 0 and 1 is +-inf (ours, the limit), JAX's 0;
* ``gamma``/``chi2``.``logsf`` d/x at x = +inf is NaN (ours: 0 / 0) where the limit is the hazard
  ``-1/scale`` and JAX's 0.
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.scipy.special as tsp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)

inf, nan = np.inf, np.nan

def test_gammainc_x_derivative_at_infinity():
    """d/dx gammainc(a, x) at x = +inf is the density's limit 0 (and gammaincc's -0), and the
    mixed derivative d/dx d/da is 0 where the density is (x = +inf; x = 0 for a > 1): ours
    were NaN (``(a - 1) log x - x`` is ``inf - inf``; ``0 * log 0``).  JAX's are NaN too at
    x = +inf for a >= 1; elsewhere they agree, and with finite differences."""
    a = np.array([0.5, 1.0, 3.0, 0.5, 1.0, 3.0, 3.0, 0.5, 1.0, 3.0])
    x = np.array([inf, inf, inf, 2.0, 2.0, 2.0, 0.0, 0.7, 0.7, 0.7])
    dp = tg.vmap(tg.grad(tsp.gammainc, 1))(a, x)
    dq = tg.vmap(tg.grad(tsp.gammaincc, 1))(a, x)
    dpda_dx = tg.vmap(tg.grad(tg.grad(tsp.gammainc, 0), 1))(a, x)
    assert np.all(dp[:3] == 0) and np.all(dq[:3] == 0) and np.all(dpda_dx[:3] == 0)
    assert dpda_dx[6] == 0
    import jax.scipy.special as jsp
    jdp = jax.vmap(jax.grad(jsp.gammainc, 1))(a, x)
    np.testing.assert_allclose(dp[3:], jdp[3:], rtol=1e-12)
    np.testing.assert_allclose(dq[3:], -jdp[3:], rtol=1e-12)
    h = 1e-6
    fd = (tsp.gammainc(a + h, x) - tsp.gammainc(a - h, x)) / (2 * h)
    h = 1e-4
    fd2 = ((tsp.gammainc(a + h, x + h) - tsp.gammainc(a - h, x + h))
           - (tsp.gammainc(a + h, x - h) - tsp.gammainc(a - h, x - h))) / (4 * h * h)
    np.testing.assert_allclose(tg.vmap(tg.grad(tsp.gammainc, 0))(a, x)[7:], fd[7:], rtol=1e-6)
    np.testing.assert_allclose(dpda_dx[7:], fd2[7:], rtol=1e-6)
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(tsp.gammainc, 1)))(a, x), dp, rtol=1e-12)
