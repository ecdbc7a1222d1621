"""Functions' less common parameters against JAX 0.10.2 (x64), session 23's probe: ``average``
with weights, ``histogram``/``histogram2d``/``histogramdd``, ``bincount``, every quantile method,
``cov``/``corrcoef`` weights, ``numpy.linalg``/``scipy.linalg`` options, ``lax`` parameters.
Each test here failed before its fix.

Left alone (deliberate or JAX's rounding): ``average``/``cov`` raise ZeroDivisionError for
concrete weights summing to zero (NumPy's; JAX's NaN); ``cov`` with ``ddof`` >= the
observations is inf (NumPy's clamp of the divisor; JAX's a negative variance);
``histogram`` counts are int64 and its uniform edges NumPy's (JAX's ``linspace`` puts the
middle edge of (-2, 2) in 10 bins at 5.6e-17, not 0, so a value at 0 counts one bin lower);
``nanpercentile(q=100/3)`` of 4 values rounds as NumPy's and JAX's ``percentile`` (JAX's
``nanpercentile`` differs from its own ``percentile`` there); ``linalg.matrix_rank(rtol=)`` is
relative as NumPy's and JAX's documentation say (JAX 0.10.2 compares the singular values with
``rtol`` itself); the one-triangle derivatives of ``eigh(symmetrize_input=False)``,
``scipy.linalg.cholesky`` and ``solve(assume_a='pos')`` (see test_fuzz_jax_linalg).
Found, not fixed here: ``digamma`` just right of a pole is SciPy's ``psi`` (x = -0.999999999:
relative error 1.0e-7, JAX's exact), in both backends' impls (primitives/special.py and
numba_backend/special.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

_RNG = np.random.default_rng(23)
_M = _RNG.normal(size=(3, 5))
_AW = _RNG.uniform(0.1, 1.0, size=5)


# --- cov's weights: fweights must be integer (JAX and NumPy raise: ours took 1.5 as a count);
# negative weights count by their magnitude, as JAX's (ours: [1, -1, 1, 1, 1] gave 4.5468 for
# cov[0, 0], JAX 2.3234; aweights -aw gave -inf, JAX 1.2764)

def test_cov_fweights_must_be_integer() -> None:
    with pytest.raises(TypeError, match=r"^fweights must be integer\. cov: argument 'fweights'"):
        tnp.cov(_M, fweights=np.array([1.0, 2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(TypeError, match="fweights must be integer"):
        jnp.cov(_M, fweights=np.array([1.0, 2.0, 1.0, 1.0, 1.0]))


@pytest.mark.parametrize("fw, aw", [(np.array([1, -1, 2, 1, 3]), None), (None, -_AW),
                                    (np.array([1, -2, 0, 1, 3]), _AW * [1, -1, 1, -1, 1])])
def test_cov_negative_weights_count_by_magnitude_as_jax(fw, aw) -> None:
    for ddof in (None, 0, 2):
        want = jnp.cov(_M, fweights=fw, aweights=aw, ddof=ddof)
        np.testing.assert_allclose(tnp.cov(_M, fweights=fw, aweights=aw, ddof=ddof), want,
                                   rtol=1e-12, atol=1e-14)
    f = tg.jit(lambda m: tnp.cov(m, fweights=fw, aweights=aw))
    np.testing.assert_allclose(f(_M), jnp.cov(_M, fweights=fw, aweights=aw), rtol=1e-12)
    if aw is not None:
        g = tg.grad(lambda w: tnp.sum(tnp.cov(_M, fweights=fw, aweights=w) ** 2))(aw)
        gj = jax.grad(lambda w: jnp.sum(jnp.cov(_M, fweights=fw, aweights=w) ** 2))(aw)
        np.testing.assert_allclose(g, gj, rtol=1e-10, atol=1e-13)


# --- gamma/chi2 logcdf where P underflows: log(gammainc) was -inf with NaN gradients (as JAX's
# and SciPy's) from P < 1e-308; now Kummer's series in log space (a = 30.5, x = 1e-10:
# -778.65965123106353 by mpmath at 50 digits; ours -inf before).  References: mpmath's
# log(gammainc) and its central difference in a (h = 1e-25, 50 digits).

_LOGCDF_REF = [(5.5, 1e-300, -3804.9279655000325, -692.56843922861364),
               (30.5, 1e-10, -778.65965123106353, -26.45988148414812),
               (200.5, 1.0, -866.87804274471874, -5.3033306895662771)]


def test_gamma_logcdf_where_the_cdf_underflows() -> None:
    import tangentia.scipy.stats as ts
    import jax.scipy.stats as js
    a, x, want, want_da = (np.array(c) for c in zip(*_LOGCDF_REF))
    np.testing.assert_allclose(ts.gamma.logcdf(x, a), want, rtol=1e-14)
    np.testing.assert_allclose(tg.jit(ts.gamma.logcdf)(x, a), want, rtol=1e-14)
    np.testing.assert_allclose(ts.chi2.logcdf(2 * x, 2 * a), want, rtol=1e-14)
    assert np.all(np.isneginf(js.gamma.logcdf(x, a)))     # JAX's underflow
    # d/dx is the density over P, exp(logpdf - logcdf); d/da mpmath's
    dx = tg.vmap(tg.grad(ts.gamma.logcdf))(x, a)
    np.testing.assert_allclose(dx, np.exp(ts.gamma.logpdf(x, a) - want), rtol=1e-12)
    np.testing.assert_allclose(tg.vmap(tg.grad(ts.gamma.logcdf, 1))(x, a), want_da, rtol=1e-12)
    # second derivatives: d/dx (pdf / P) = r ((a - 1) / x - 1 - r), and d/dx d/da against a
    # central difference of d/dx in a (at x = 1e-10 and 1: d2/dx2 overflows at 1e-300)
    a, x, r = a[1:], x[1:], dx[1:]
    d2 = tg.vmap(tg.grad(tg.grad(ts.gamma.logcdf)))(x, a)
    np.testing.assert_allclose(d2, r * ((a - 1) / x - 1 - r), rtol=1e-10)
    h = 1e-6
    fd = (tg.vmap(tg.grad(ts.gamma.logcdf))(x, a + h) - tg.vmap(tg.grad(ts.gamma.logcdf))(x, a - h))
    np.testing.assert_allclose(tg.vmap(tg.grad(tg.grad(ts.gamma.logcdf), 1))(x, a), fd / (2 * h),
                               rtol=1e-6)
    # continuous across the switch (P = 1e-280) and equal to JAX's above it
    xs = np.geomspace(1e-10, 1e-8, 201)
    v = np.asarray(ts.gamma.logcdf(xs, 30.0))
    assert np.all(np.diff(v) > 0)
    above = np.asarray(js.gamma.logcdf(xs, 30.0)) > -640
    np.testing.assert_allclose(v[above], js.gamma.logcdf(xs[above], 30.0), rtol=1e-13)
