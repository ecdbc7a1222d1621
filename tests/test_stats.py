"""``tangentia.scipy.stats``: values against ``scipy.stats`` over broadcasting shapes
(float64, and float32 where results keep float32 -- SciPy returns float64 there),
first derivatives against finite differences and second order where smooth
(``check_grads``), vmap against a loop, jit against eager, the far tails, a few
values and gradients baked in from JAX 0.10.2 (x64), and bad input."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss

import tangentia as tg
import tangentia.scipy.stats as ts
from tangentia.test_util import check_grads

RNG = np.random.default_rng(5)
X = RNG.uniform(-3, 3, (4, 1))
Q = RNG.uniform(0.02, 0.98, (4, 1))
LOC = np.array([0.0, 0.5, -1.0])
SCALE = np.array([1.0, 2.0, 0.5])
SHAPE = np.array([0.7, 2.0, 5.0])
K = np.array([[-1.0], [0.0], [1.0], [2.5], [3.0], [7.0]])

CONT = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf")


def _funcs(dist, names):
    return [n for n in names if hasattr(getattr(ts, dist), n)]


# (distribution, function, args): continuous families with loc/scale
VALUE_CASES = (
    [("norm", f, (X, LOC, SCALE)) for f in CONT]
    + [(d, f, (X, LOC, SCALE)) for d in ("expon", "laplace", "logistic", "cauchy", "uniform")
       for f in _funcs(d, CONT)]
    + [(d, f, (Q, LOC, SCALE)) for d in ("norm", "expon", "logistic", "cauchy", "uniform")
       for f in _funcs(d, ("ppf", "isf"))]
    + [(d, f, (X + 2.0, SHAPE, LOC, SCALE)) for d in ("gamma", "chi2") for f in CONT]
    + [("beta", f, ((X + 3.0) / 6.0, SHAPE, SHAPE[::-1], LOC / 4, SCALE)) for f in CONT]
    + [("t", f, (X, SHAPE, LOC, SCALE)) for f in ("pdf", "logpdf")]
    + [("poisson", f, (K, np.array([0.5, 2.0, 9.0]))) for f in ("pmf", "logpmf", "cdf")]
    + [("poisson", "logpmf", (K, np.array([0.5, 2.0, 9.0]), 1.0))]
    + [("binom", f, (K, 6.0, np.array([0.1, 0.3, 0.9]))) for f in ("pmf", "logpmf")]
    + [("bernoulli", f, (K, np.array([0.1, 0.3, 0.9]))) for f in ("pmf", "logpmf", "cdf")]
)


def _check_values(got, want, rtol, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dist,fn,args", VALUE_CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_values_match_scipy_float64(dist, fn, args):
    got = getattr(getattr(ts, dist), fn)(*args)
    want = getattr(getattr(ss, dist), fn)(*args)
    assert got.dtype == np.float64
    # log-survival functions near 0 are compared absolutely (their relative error is
    # that of the sf divided by log(sf))
    _check_values(got, want, rtol=1e-12, atol=1e-13 if fn.startswith("log") else 0.0)


@pytest.mark.parametrize("dist,fn,args", VALUE_CASES[::3], ids=lambda v: v if isinstance(v, str) else "")
def test_float32_inputs_give_float32(dist, fn, args):
    # SciPy computes in float64; tangentia keeps float32 (as JAX does).
    args32 = tuple(np.asarray(a, np.float32) for a in args)
    got = getattr(getattr(ts, dist), fn)(*args32)
    assert got.dtype == np.float32, (dist, fn, got.dtype)
    want = getattr(getattr(ss, dist), fn)(*args32)
    _check_values(got, want, rtol=2e-5, atol=2e-5)


def test_integer_inputs_and_scalars():
    assert ts.norm.pdf(1).dtype == np.float64
    assert ts.poisson.pmf(np.arange(4), 2).dtype == np.float64
    np.testing.assert_allclose(ts.poisson.pmf(np.arange(4), 2), ss.poisson.pmf(np.arange(4), 2),
                               rtol=1e-14)


def test_dirichlet_and_multivariate_normal_match_scipy():
    alpha = np.array([1.5, 2.0, 3.0])
    xs = RNG.dirichlet(alpha, 4).T                           # (K, batch)
    want = np.array([ss.dirichlet.logpdf(xs[:, i], alpha) for i in range(4)])
    np.testing.assert_allclose(ts.dirichlet.logpdf(xs, alpha), want, rtol=1e-13)
    np.testing.assert_allclose(ts.dirichlet.logpdf(xs[:-1], alpha), want, rtol=1e-13)
    np.testing.assert_allclose(ts.dirichlet.pdf(xs[:, 0], alpha),
                               ss.dirichlet.pdf(xs[:, 0], alpha), rtol=1e-13)
    off = np.array([0.5, 0.6, 0.2])
    assert ts.dirichlet.logpdf(off, alpha) == -np.inf

    a = RNG.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    mean = RNG.standard_normal(3)
    x = RNG.standard_normal((5, 3))
    np.testing.assert_allclose(ts.multivariate_normal.logpdf(x, mean, cov),
                               ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-13)
    np.testing.assert_allclose(ts.multivariate_normal.pdf(x, mean, cov),
                               ss.multivariate_normal.pdf(x, mean, cov), rtol=1e-13)
    np.testing.assert_allclose(ts.multivariate_normal.logpdf(x, mean, 2.0),
                               ss.multivariate_normal.logpdf(x, mean, 2.0 * np.eye(3)),
                               rtol=1e-13)
    np.testing.assert_allclose(ts.multivariate_normal.logpdf(0.3, 0.1, 2.0),
                               ss.norm.logpdf(0.3, 0.1, np.sqrt(2.0)), rtol=1e-14)
    # batched covariances broadcast against batched x
    covs = np.stack([cov, 2 * cov])
    got = ts.multivariate_normal.logpdf(x[:2], mean, covs)
    want = [ss.multivariate_normal.logpdf(x[i], mean, covs[i]) for i in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_tails():
    # norm.logcdf(-40) and its gradient phi/Phi, right to 1e-12; the expected values are
    # mpmath's at 40 digits (JAX 0.10.2 gives -804.6084420137697 and 40.02496884784338:
    # its gradient is off by 1.6e-11 relative)
    np.testing.assert_allclose(ts.norm.logcdf(-40.0), -804.6084420137537881666, rtol=1e-14)
    np.testing.assert_allclose(tg.grad(ts.norm.logcdf)(-40.0), 40.024968847207263723, rtol=1e-14)
    np.testing.assert_allclose(tg.grad(ts.norm.logsf)(40.0), -40.024968847207263723, rtol=1e-14)
    np.testing.assert_allclose(tg.grad(tg.grad(ts.norm.logcdf))(-40.0),
                               -0.99937733162140861123, rtol=1e-10)
    for x in (-1e3, -60.0):
        assert np.isfinite(tg.grad(ts.norm.logcdf)(x))
    # the other families stay finite far out
    np.testing.assert_allclose(ts.logistic.logpdf(-800.0), ss.logistic.logpdf(-800.0), rtol=1e-14)
    np.testing.assert_allclose(ts.cauchy.logcdf(-1e10), ss.cauchy.logcdf(-1e10), rtol=1e-12)
    np.testing.assert_allclose(ts.expon.logcdf(50.0), ss.expon.logcdf(50.0), rtol=1e-12, atol=1e-30)
    np.testing.assert_allclose(ts.expon.logcdf(1e-20), ss.expon.logcdf(1e-20), rtol=1e-12)
    np.testing.assert_allclose(ts.gamma.logpdf(900.0, 800.0), ss.gamma.logpdf(900.0, 800.0),
                               rtol=1e-12)
    np.testing.assert_allclose(ts.beta.sf(1 - 1e-12, 2.0, 3.0), ss.beta.sf(1 - 1e-12, 2.0, 3.0),
                               rtol=1e-6)


# Derivatives: (function of the differentiated arguments, args, order)
GRAD_CASES = {
    "norm.logpdf": (lambda x, m, s: ts.norm.logpdf(x, m, s), (X, LOC, SCALE), 2),
    "norm.logcdf": (lambda x, m, s: ts.norm.logcdf(x, m, s), (X, LOC, SCALE), 2),
    "norm.logsf": (lambda x, s: ts.norm.logsf(x, 0.3, s), (X, SCALE), 2),
    "norm.ppf": (lambda q, s: ts.norm.ppf(q, 0.2, s), (Q, SCALE), 2),
    "t.logpdf": (lambda x, df, s: ts.t.logpdf(x, df, 0.1, s), (X, SHAPE, SCALE), 2),
    "gamma.logpdf": (lambda x, a, s: ts.gamma.logpdf(x, a, 0.0, s), (X + 4, SHAPE + 1, SCALE), 2),
    "gamma.cdf": (lambda x, s: ts.gamma.cdf(x, SHAPE + 1, 0.3, s), (X + 4, SCALE), 2),
    "gamma.logsf": (lambda x: ts.gamma.logsf(x, SHAPE + 1), (X + 4,), 2),
    "chi2.logcdf": (lambda x: ts.chi2.logcdf(x, SHAPE + 2), (X + 4,), 2),
    "beta.logpdf": (lambda x, a, b: ts.beta.logpdf(x, a, b), ((X + 3.5) / 7, SHAPE + 1, SHAPE[::-1] + 1), 2),
    "beta.cdf": (lambda x: ts.beta.cdf(x, SHAPE + 1, 2.5), ((X + 3.5) / 7,), 2),
    "beta.sf": (lambda x: ts.beta.sf(x, SHAPE + 1, 2.5), ((X + 3.5) / 7,), 1),
    "expon.logcdf": (lambda x, s: ts.expon.logcdf(x, -4.0, s), (X, SCALE), 2),
    "laplace.logpdf": (lambda x, s: ts.laplace.logpdf(x, 0.05, s), (X, SCALE), 2),
    "laplace.cdf": (lambda x, s: ts.laplace.cdf(x, 0.05, s), (X, SCALE), 1),
    "logistic.logpdf": (lambda x, m, s: ts.logistic.logpdf(x, m, s), (X, LOC + 0.05, SCALE), 2),
    "logistic.isf": (lambda q, s: ts.logistic.isf(q, 0.1, s), (Q, SCALE), 2),
    "cauchy.logcdf": (lambda x, m, s: ts.cauchy.logcdf(x, m, s), (X, LOC, SCALE), 2),
    "cauchy.ppf": (lambda q: ts.cauchy.ppf(q, 0.1, 2.0), (Q,), 2),
    "uniform.cdf": (lambda x: ts.uniform.cdf(x, -5.0, 10.0), (X,), 1),
    "poisson.logpmf": (lambda mu: ts.poisson.logpmf(K[[1, 2, 4, 5]], mu), (np.array([0.5, 2.0, 9.0]),), 2),
    "poisson.cdf": (lambda mu: ts.poisson.cdf(K, mu), (np.array([0.5, 2.0, 9.0]),), 2),
    "binom.logpmf": (lambda p: ts.binom.logpmf(K[[1, 2, 4, 5]], 7.0, p), (np.array([0.1, 0.3, 0.9]),), 2),
    "bernoulli.logpmf": (lambda p: ts.bernoulli.logpmf(np.array([[0.0], [1.0]]), p),
                         (np.array([0.1, 0.3, 0.9]),), 2),
    "dirichlet.logpdf": (lambda x, a: ts.dirichlet.logpdf(x, a),
                         (np.array([0.2, 0.3]), np.array([1.5, 2.0, 3.0])), 2),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_derivatives_match_finite_differences(name):
    f, args, order = GRAD_CASES[name]
    # eps 1e-5: with the default 1e-4, finite differences of the ppf/isf second derivatives
    # near the tails miss rtol 1e-5 (JAX's check_grads too: its directions are ours)
    check_grads(f, args, order=order, modes=("fwd", "rev"), rtol=1e-5, atol=1e-6, eps=1e-5)


def test_multivariate_normal_derivatives():
    a = RNG.standard_normal((3, 3))
    base = a @ a.T + np.eye(3)

    def f(x, mean, c):
        return ts.multivariate_normal.logpdf(x, mean, base + c @ c.T)

    check_grads(f, (RNG.standard_normal((2, 3)), RNG.standard_normal(3),
                    0.3 * RNG.standard_normal((3, 3))), order=1, modes=("fwd", "rev"))


def test_jax_gradients_baked_in():
    # jax.grad of the same expressions, JAX 0.10.2 with jax_enable_x64
    g = tg.grad
    cases = [
        (g(lambda x: ts.gamma.cdf(x, 2.5, 0.3, 1.7))(2.0), 0.16278725389042922),
        (g(lambda x: ts.beta.cdf(x, 2.5, 0.7))(0.3), 0.2568913584684729),
        (g(lambda mu: ts.poisson.cdf(3.0, mu))(2.2), -0.1966386717070218),
        (g(lambda x: ts.t.logpdf(x, 3.5, 0.2, 1.5))(1.1), -0.4663212435233161),
        (ts.t.logpdf(1.1, 3.5, 0.2, 1.5), -1.6152231830757502),
        (g(lambda x: ts.logistic.logpdf(x, 0.5, 2.0))(-30.0), 0.4999997617630899),
        (g(ts.cauchy.logcdf)(-1e3), 0.0009999993333340434),
        (g(lambda p: ts.binom.logpmf(3.0, 10.0, p))(0.25), 2.666666666666668),
        (g(lambda c: ts.multivariate_normal.logpdf(np.array([0.3, -0.2]), np.array([0.1, 0.0]),
                                                    tg.numpy.array([[2.0, c], [c, 1.0]])))(0.4),
         0.17769376181474478),
        (g(lambda a: ts.dirichlet.logpdf(np.array([0.2, 0.3, 0.5]),
                                         tg.numpy.stack([a, 2.0, 3.0])))(1.5),
         0.14698344398725638),
    ]
    for got, want in cases:
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # bernoulli.ppf as JAX (SciPy returns -1 at q == 0)
    np.testing.assert_array_equal(ts.bernoulli.ppf(np.array([0.0, 0.2, 0.7, 1.0]), 0.3),
                                  [0.0, 0.0, 0.0, 1.0])


def _model(x, mu, s):
    return (ts.norm.logpdf(x, mu, s) + ts.gamma.logcdf(x + 4.0, 3.0, 0.0, s)
            + ts.t.logpdf(x, 4.0, mu, s) + ts.poisson.logpmf(3.0, s) + ts.beta.cdf(s / 3.0, 2.0, 3.0))


def test_vmap_matches_loop_and_jit_matches_eager():
    xs = np.linspace(-2.0, 2.0, 5)
    mus = np.linspace(-0.5, 0.5, 5)
    s = 1.3
    d = tg.grad(_model, argnums=(0, 2))
    looped = np.array([d(x, m, s) for x, m in zip(xs, mus)])
    np.testing.assert_allclose(np.stack(tg.vmap(d, in_axes=(0, 0, None))(xs, mus, s), -1),
                               looped, rtol=1e-13)
    eager = _model(xs, mus, s)
    for backend in ("numpy", "numba"):
        np.testing.assert_allclose(tg.jit(_model, backend=backend)(xs, mus, s), eager,
                                   rtol=1e-13)
    covs = np.stack([np.eye(2) * v for v in (1.0, 2.0, 3.0)])
    x2 = np.array([[0.3, -0.2], [1.0, 0.5], [0.0, 0.1]])
    mvn = lambda x, c: ts.multivariate_normal.logpdf(x, np.zeros(2), c)
    np.testing.assert_allclose(tg.vmap(mvn)(x2, covs),
                               [mvn(x2[i], covs[i]) for i in range(3)], rtol=1e-13)
    np.testing.assert_allclose(tg.jit(mvn, backend="numpy")(x2, covs), mvn(x2, covs), rtol=1e-13)


def test_bad_input_names_function_and_argument():
    with pytest.raises(TypeError, match="norm.logpdf: argument 'scale'"):
        ts.norm.logpdf(1.0, 0.0, "wide")
    with pytest.raises(TypeError, match="unexpected keyword argument 'sigma'"):
        ts.norm.pdf(1.0, sigma=2.0)
    with pytest.raises(ValueError, match="multivariate_normal.logpdf: argument 'cov'"):
        ts.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(2))
    with pytest.raises(ValueError, match="multivariate_normal.logpdf: argument 'x'"):
        ts.multivariate_normal.logpdf(np.zeros(2), np.zeros(3), np.eye(3))
    with pytest.raises(TypeError, match="argument 'allow_singular'"):  # True/False: SciPy's
        ts.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(3), allow_singular=2)
    with pytest.raises(ValueError, match="dirichlet.logpdf: argument 'alpha'"):
        ts.dirichlet.logpdf(np.ones(3) / 3, np.ones((3, 1)))
    with pytest.raises(ValueError, match="dirichlet.logpdf: argument 'x'"):
        ts.dirichlet.logpdf(np.ones(5) / 5, np.ones(3))
    # the shape derivative of gamma.cdf exists (through gammainc's d/da), as in JAX
    import scipy.stats
    fd = (scipy.stats.gamma.cdf(1.0, 2.0 + 1e-6) - scipy.stats.gamma.cdf(1.0, 2.0 - 1e-6)) / 2e-6
    np.testing.assert_allclose(tg.grad(lambda a: ts.gamma.cdf(1.0, a))(2.0), fd, rtol=1e-7)
