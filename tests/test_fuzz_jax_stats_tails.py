"""Far tails of ``tangentia.scipy.stats`` (session 22): where JAX's and SciPy's log
functions underflow, ours stay finite, and match JAX wherever JAX's are finite.

``gamma``/``chi2``.``logsf`` was ``log(gammaincc(a, y))``, as JAX's: -inf, with NaN
gradients, once the upper incomplete gamma underflows (a = 3, x = 800: -787.32142372782,
ours -inf before).  Now log Q is summed in log space (``primitives.special.log_gammaincc``);
it is checked here against closed forms (integer shapes: Q = e^-x sum_k<a x^k / k!; a = 1/2:
Q = erfc(sqrt x)), against finite differences for the shape's derivative, and against JAX
below the underflow.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss

import tangentia as tg
import tangentia.scipy.stats as ts

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.scipy.stats as js  # noqa: E402

# (a, x): underflowing Q from x ~ 745 on, up to magnitudes where log density - log Q is
# all rounding (the hazard from the continued fraction instead)
_FAR_X = np.array([760.0, 800.0, 2e3, 1e5, 1e10, 1e200])


def _log_q_closed(a, x):
    """log Q(a, x) and its d/dx, d2/dx2 for a in {1, 2, 3} (polynomial times e^-x) and 1/2."""
    if a == 0.5:
        v = np.log(2.0) + ss.log_ndtr(-np.sqrt(2 * x))
        h = 1 / (np.sqrt(np.pi * x) * ss.erfcx(np.sqrt(x)))     # the hazard, density / Q
        return v, -h, -h * (-0.5 / x - 1 + h)
    # Q = e^-x p(x), p = sum_k<a x^k / k!; log Q = -x + log p (p, p', p'' over x^(a-1))
    coeffs = [1.0, 1.0, 0.5][:int(a)]
    n = len(coeffs) - 1
    p = sum(c * x ** float(k - n) for k, c in enumerate(coeffs))
    dp = sum(k * c * x ** float(k - 1 - n) for k, c in enumerate(coeffs) if k)
    d2p = sum(k * (k - 1) * c * x ** float(k - 2 - n) for k, c in enumerate(coeffs) if k > 1)
    return -x + (n * np.log(x) + np.log(p)), -1 + dp / p, d2p / p - (dp / p) ** 2


@pytest.mark.parametrize("a", [0.5, 1.0, 2.0, 3.0])
def test_gamma_logsf_beyond_the_underflow_of_gammaincc(a):
    x = _FAR_X
    want, d1, d2 = _log_q_closed(a, x)
    f = tg.vmap(lambda x: ts.gamma.logsf(x, a))
    got = f(x)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(lambda x: ts.gamma.logsf(x, a)))(x), d1,
                               rtol=1e-12)
    # the second derivative is minus the hazard's slope, r ((1 - a) / x + 1 - r) ~ (a - 1) / x^2:
    # a difference of numbers near 1, right to the hazard's rounding in absolute terms
    h2 = tg.vmap(tg.grad(tg.grad(lambda x: ts.gamma.logsf(x, a))))(x)
    np.testing.assert_allclose(h2, d2, rtol=1e-6, atol=1e-13)
    # scale and loc move through y = (x - loc) / scale
    np.testing.assert_allclose(ts.gamma.logsf(2 * x + 1, a, loc=1.0, scale=2.0), want,
                               rtol=1e-14)
    np.testing.assert_allclose(tg.grad(lambda s: ts.gamma.logsf(1601.0, a, 1.0, s))(2.0),
                               -d1[1] * 800.0 / 2.0, rtol=1e-12)


def test_chi2_logsf_beyond_the_underflow():
    # chi2(df) is gamma(df / 2, scale 2): df = 6 at x = 1600 is log Q(3, 800)
    want, d1, _ = _log_q_closed(3.0, np.array([800.0]))
    np.testing.assert_allclose(ts.chi2.logsf(1600.0, 6.0), want[0], rtol=1e-14)
    np.testing.assert_allclose(tg.grad(ts.chi2.logsf)(1600.0, 6.0), d1[0] / 2, rtol=1e-12)


def test_gamma_logsf_shape_derivative_in_the_far_tail():
    # d/da by central differences of the log-space values (smooth in a; step 1e-5, where
    # the differences' error is ~1e-9 relative) and its d/dx by differences of the gradient
    a = np.array([0.5, 3.0, 20.0, 300.0])
    x = np.array([800.0, 1e4, 900.0, 1200.0])
    da = tg.vmap(tg.grad(ts.gamma.logsf, 1))(x, a)
    h = 1e-5
    fd = (ts.gamma.logsf(x, a + h) - ts.gamma.logsf(x, a - h)) / (2 * h)
    np.testing.assert_allclose(da, fd, rtol=1e-7)
    dax = tg.vmap(tg.grad(tg.grad(ts.gamma.logsf, 1), 0))(x, a)
    gx = tg.vmap(tg.grad(ts.gamma.logsf, 0))
    fd2 = (gx(x, a + h) - gx(x, a - h)) / (2 * h)
    np.testing.assert_allclose(dax, fd2, rtol=1e-6)


def test_gamma_logsf_matches_jax_where_jax_is_finite():
    # both sides of the switch to the fraction (Q = 1e-280 at x ~ 650 for a = 3), and a
    # large shape where Q underflows only far out
    a = np.array([0.5, 1.0, 3.0, 3.0, 3.0, 7.5, 300.0, 300.0])
    x = np.array([0.3, 5.0, 2.0, 640.0, 700.0, 30.0, 350.0, 600.0])
    ours = [tg.vmap(f)(x, a) for f in (
        ts.gamma.logsf, tg.grad(ts.gamma.logsf, 0), tg.grad(ts.gamma.logsf, 1),
        tg.grad(tg.grad(ts.gamma.logsf, 0), 0), tg.grad(tg.grad(ts.gamma.logsf, 0), 1))]
    jf = js.gamma.logsf
    theirs = [jax.vmap(f)(x, a) for f in (
        jf, jax.grad(jf, 0), jax.grad(jf, 1), jax.grad(jax.grad(jf, 0), 0),
        jax.grad(jax.grad(jf, 0), 1))]
    for k, (o, t) in enumerate(zip(ours, theirs)):
        t = np.asarray(t)
        # JAX's second derivative in x is already -inf at x = 640, 700 (a = 3); ours finite
        fin = np.isfinite(t)
        assert fin.sum() >= 6 and np.all(np.isfinite(o)), k
        np.testing.assert_allclose(o[fin], t[fin], rtol=1e-9, atol=1e-14, err_msg=str(k))


def test_gamma_logsf_at_the_ends_is_unchanged():
    # below the support 0, at +inf -inf with the limit's slope, invalid shape NaN
    np.testing.assert_array_equal(ts.gamma.logsf(np.array([-1.0, 0.0, np.inf]), 3.0),
                                  [0.0, 0.0, -np.inf])
    assert np.isnan(ts.gamma.logsf(5.0, -1.0))
    assert tg.grad(ts.gamma.logsf)(np.inf, 3.0, 0.0, 2.0) == -0.5


def test_cauchy_ppf_and_isf_in_the_tails():
    # tan(pi (q - 1/2)), JAX's formula too, lost pi q beside pi / 2: ppf(0) and ppf(1e-20) were
    # -1.633123935319537e16 (-inf and -3.183098861837907e19, SciPy's), ppf(1 - 1e-12)
    # 318314379919.7918 (SciPy's 318316927901.77966); q outside [0, 1] gave tan's periodic
    # value (NaN, as SciPy's and every other ppf of ours)
    import scipy.stats as ss
    q = np.array([-0.0, 0.0, 1e-300, 1e-20, 0.1, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 1 - 1e-12, 1.0,
                  -0.5, 1.5, np.nan])
    want = ss.cauchy.ppf(q)
    want[0] = -np.inf                                    # (SciPy: NaN at -0)
    np.testing.assert_allclose(ts.cauchy.ppf(q), want, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(ts.cauchy.isf(q), -want, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(ts.cauchy.ppf(q, 1.0, 2.0), 1.0 + 2.0 * want, rtol=1e-15)
    # d/dq = pi / sin(pi q)^2 = pi (1 + ppf^2): +inf at 0 and 1 (JAX's 8.4e32)
    inside = (q >= 0) & (q <= 1)
    with np.errstate(over="ignore"):
        dq = np.pi * (1 + want ** 2)
    for f in (tg.vmap(tg.grad(ts.cauchy.ppf)), tg.jit(tg.vmap(tg.grad(ts.cauchy.ppf)))):
        np.testing.assert_allclose(f(q)[inside], dq[inside], rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(ts.cauchy.isf))(q)[inside], -dq[inside],
                               rtol=1e-14)
    # where JAX's formula is accurate (the middle), the same numbers and gradients as JAX's
    mid = np.array([0.26, 0.4, 0.5, 0.6, 0.74])
    np.testing.assert_allclose(ts.cauchy.ppf(mid), np.asarray(js.cauchy.ppf(mid)), rtol=1e-15)
    np.testing.assert_allclose(tg.vmap(tg.grad(ts.cauchy.ppf))(mid),
                               np.asarray(jax.vmap(jax.grad(js.cauchy.ppf))(mid)), rtol=1e-14)


def test_cauchy_logpdf_where_y_squared_overflows():
    # log1p(y^2) overflowed from |y| = 1.3e154: the logpdf was -inf (JAX's too) with a NaN
    # gradient; SciPy's -1382.6957856822767 at 1e300
    import scipy.stats as ss
    x = np.array([-np.inf, -1e300, -1e160, -1e150, -2.0, 0.0, 3.0, 1e154, 1e200, np.inf])
    np.testing.assert_allclose(ts.cauchy.logpdf(x), ss.cauchy.logpdf(x), rtol=1e-15)
    np.testing.assert_allclose(ts.cauchy.logpdf(x, 1.0, 2.0), ss.cauchy.logpdf(x, 1.0, 2.0),
                               rtol=1e-15)
    # d/dx = -2 y / (1 + y^2) = -2 (1/y) / (1 + 1/y^2), 0 at 0 and +-inf
    g = tg.vmap(tg.grad(ts.cauchy.logpdf))(x)
    with np.errstate(all="ignore"):
        inv = 1 / x
        want = np.where(x == 0, 0.0, -2 * inv / (1 + inv * inv))
    np.testing.assert_allclose(g, want, rtol=1e-15)
    fin = np.abs(x) < 1e150
    np.testing.assert_allclose(g[fin], np.asarray(jax.vmap(jax.grad(js.cauchy.logpdf))(x[fin])),
                               rtol=1e-15)
