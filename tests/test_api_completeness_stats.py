"""The distributions and summaries tangentia.scipy.stats adds for JAX 0.10.2 parity
(betabinom, gennorm, geom, gumbel_l/r, multinomial, nbinom, pareto, truncnorm, vonmises,
wrapcauchy, gaussian_kde, mode, rankdata, sem): values against JAX (x64) and SciPy,
gradients against finite differences, errors in JAX's words."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss

import tangentia as tg
import tangentia.random as trandom
import tangentia.scipy.stats as T
from tangentia.test_util import check_grads

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.scipy.stats as J  # noqa: E402

RNG = np.random.default_rng(0)
X = np.linspace(-3, 8, 23)
K = np.arange(-2, 12).astype(float)
P = np.linspace(-0.1, 1.1, 13)
FUNCS = ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf")

CASES = {
    "gennorm": [(f, (X, b)) for f in ("logpdf", "pdf", "cdf") for b in (0.5, 1.5, 3.0)],
    "geom": [("logpmf", (K, 0.3)), ("pmf", (K, 0.6, 2))],
    "gumbel_l": [(f, (X, 1.0, 2.0)) for f in FUNCS] + [("ppf", (P, 1.0, 2.0)),
                                                       ("logpdf", (X, 0, -1.0))],
    "gumbel_r": [(f, (X, 1.0, 2.0)) for f in FUNCS] + [("ppf", (P, 1.0, 2.0)),
                                                       ("sf", (X, 0, -1.0))],
    "nbinom": [("logpmf", (K, 3.5, 0.4)), ("pmf", (K, 2, 0.7, 1))],
    "pareto": [(f, (X, 2.5, -1.0, 1.5)) for f in FUNCS] + [("ppf", (P, 2.5, 1.0, 2.0))],
    # (all bounds at once: one JAX compilation per function; SciPy below case by case)
    "truncnorm": [(f, (X[:, None], np.array([-1.0, 3.0, -12.0, 2.0]),
                       np.array([2.0, 9.0, -8.0, 1.0]), 1.0, 2.0)) for f in ("logcdf",)],
    "vonmises": [("logpdf", (X, 2.0)), ("pdf", (X, 0.5)), ("logpdf", (X, -1.0))],
    "wrapcauchy": [("logpdf", (X, 0.3)), ("pdf", (X, 0.8)), ("logpdf", (X, 1.2))],
}


def _close(ours, theirs, rtol=1e-9):
    assert np.shape(ours) == np.shape(theirs)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=rtol, atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # log(0) at the supports' edges
@pytest.mark.parametrize("dist", sorted(CASES))
def test_distributions_match_jax(dist):
    for fname, args in CASES[dist]:
        ours = getattr(getattr(T, dist), fname)(*args)
        theirs = jax.jit(getattr(getattr(J, dist), fname))(*args)
        _close(ours, theirs)


def test_betabinom_matches_scipy_and_jax():
    """SciPy's values to the last bit; JAX's ``betaln`` loses ~1e-7 relative here."""
    k = np.arange(-2, 13).astype(float)
    with np.errstate(all="ignore"):
        for n, a, b, loc in ((10, 2.5, 1.5, 0), (10, 0.7, 3.0, 1), (0, 2.0, 1.0, 0)):
            _close(T.betabinom.logpmf(k, n, a, b, loc), ss.betabinom.logpmf(k, n, a, b, loc))
            _close(T.betabinom.pmf(k, n, a, b, loc), J.betabinom.pmf(k, n, a, b, loc), 1e-5)
        assert np.isnan(T.betabinom.logpmf(k, -1, 2.0, 1.0)).all()


@pytest.mark.parametrize("fname", FUNCS)
def test_truncnorm_matches_scipy(fname):
    """Central, right-tail, far-left-tail and empty (a >= b: NaN) truncations."""
    with np.errstate(all="ignore"):
        for a, b in ((-1.0, 2.0), (3.0, 9.0), (-12.0, -8.0), (2.0, 1.0)):
            _close(getattr(T.truncnorm, fname)(X, a, b, 1.0, 2.0),
                   getattr(ss.truncnorm, fname)(X, a, b, 1.0, 2.0))


def test_more_against_scipy():
    with np.errstate(all="ignore"):
        _close(T.truncnorm.logcdf(X, -1.0, 2.0, 1.0, 2.0), ss.truncnorm.logcdf(X, -1, 2, 1, 2))
        _close(T.truncnorm.logpdf(X, 3.0, 9.0, 1.0, 2.0), ss.truncnorm.logpdf(X, 3, 9, 1, 2))
        _close(T.gumbel_l.logsf(X, 1.0, 2.0), ss.gumbel_l.logsf(X, 1, 2))
        _close(T.gumbel_r.ppf(P[1:-1], 1.0, 2.0), ss.gumbel_r.ppf(P[1:-1], 1, 2))
        _close(T.pareto.logsf(X, 2.5, -1.0, 1.5), ss.pareto.logsf(X, 2.5, -1, 1.5))
        _close(T.vonmises.logpdf(X, 2.0), ss.vonmises.logpdf(X, 2.0))
        _close(T.gennorm.cdf(X, 1.5), ss.gennorm.cdf(X, 1.5))
        _close(T.nbinom.logpmf(K, 3.5, 0.4), ss.nbinom.logpmf(K, 3.5, 0.4))


def test_multinomial_matches_jax_and_checks_integers():
    xs, p = np.array([[2, 3, 5], [0, 10, 0], [1, 1, 1]]), np.array([0.2, 0.3, 0.5])
    _close(T.multinomial.logpmf(xs, 10, p), J.multinomial.logpmf(xs, 10, p))
    _close(T.multinomial.pmf(xs[0], 10, p), ss.multinomial.pmf(xs[0], 10, p))
    with pytest.raises(ValueError, match="x and n must be of integer type; got "
                                         "x.dtype=float64, n.dtype=int64"):
        T.multinomial.logpmf(xs.astype(float), 10, p)


@pytest.mark.parametrize("f", [
    lambda t: T.truncnorm.logcdf(0.3, -1.0, 2.0, t, 1.5),
    lambda t: T.truncnorm.logpdf(t, -1.0, 2.0, 0.2, 1.5),
    lambda t: T.gumbel_r.logsf(1.0, t, 2.0),
    lambda t: T.gumbel_l.ppf(0.3, 0.5, t),
    lambda t: T.pareto.logcdf(3.0, t, 0.0, 1.0),
    lambda t: T.gennorm.cdf(0.7, t),
    lambda t: T.vonmises.logpdf(0.4, t),
    lambda t: T.wrapcauchy.logpdf(t, 0.4),
    lambda t: T.betabinom.logpmf(3.0, 8.0, t, 1.5),
    lambda t: T.nbinom.logpmf(4.0, t, 0.3),
    lambda t: T.geom.logpmf(4.0, t / 4),
])
def test_gradients_match_finite_differences(f):
    check_grads(f, (1.3,), order=1)


def test_gumbel_tail_gradients_match_jax():
    """Far in the tail ``exp(-z)`` is below 1e-16: ``log(1 - exp(-t))``'s discarded branch
    is infinite there, and must not make the gradient NaN."""
    for z in (40.0, 100.0):
        _close(tg.grad(T.gumbel_r.logsf)(z), jax.grad(J.gumbel_r.logsf)(z))
        _close(tg.grad(T.gumbel_l.logcdf)(-z), jax.grad(J.gumbel_l.logcdf)(-z))


@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": None}, {"keepdims": True},
                                {"axis": None, "keepdims": True}])
def test_mode_matches_jax(kw):
    a = RNG.integers(0, 4, size=(7, 5)).astype(float)
    ours, theirs = T.mode(a, **kw), J.mode(a, **kw)
    _close(ours.mode, theirs.mode)
    _close(ours.count, theirs.count)
    assert ours._fields == ("mode", "count")


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata_matches_scipy(method):
    a = RNG.integers(0, 4, size=(7, 5)).astype(float)
    _close(T.rankdata(a, method), ss.rankdata(a, method))
    _close(T.rankdata(a, method, axis=1), ss.rankdata(a, method, axis=1))
    a[0, 0] = np.nan
    assert np.isnan(T.rankdata(a, method)).all()   # JAX's nan_policy="propagate"


def test_sem_matches_jax():
    a = RNG.normal(size=(7, 5))
    for kw in ({}, {"axis": 1, "ddof": 0}, {"axis": None}, {"keepdims": True}):
        _close(T.sem(a, **kw), J.sem(a, **kw))
    a[0, 0] = np.nan
    _close(T.sem(a, nan_policy="omit"), ss.sem(a, nan_policy="omit"))


def test_summaries_errors_use_jaxs_wording():
    with pytest.raises(ValueError, match="Illegal nan_policy value 'x'"):
        T.mode(np.ones(3), nan_policy="x")
    with pytest.raises(NotImplementedError, match="Logic for `nan_policy` of omit is not "
                                                  "implemented"):
        T.rankdata(np.ones(3), nan_policy="omit")
    with pytest.raises(ValueError, match="unknown method 'first'"):
        T.rankdata(np.ones(3), "first")
    with pytest.raises(ValueError, match="raise is not supported"):
        T.sem(np.ones(3), nan_policy="raise")


@pytest.mark.parametrize("bw", [None, "silverman", 0.4])
def test_gaussian_kde_matches_scipy(bw):
    data, w, pts = RNG.normal(size=(2, 30)), RNG.uniform(size=30), RNG.normal(size=(2, 7))
    for weights in (None, w):
        ours, theirs = T.gaussian_kde(data, bw, weights), ss.gaussian_kde(data, bw, weights)
        _close(ours(pts), theirs(pts))
        _close(ours.logpdf(pts), theirs.logpdf(pts))
        _close(ours.integrate_gaussian(np.zeros(2), np.eye(2)),
               theirs.integrate_gaussian(np.zeros(2), np.eye(2)))
        _close(ours.integrate_kde(T.gaussian_kde(pts)),
               theirs.integrate_kde(ss.gaussian_kde(pts)))


def test_gaussian_kde_matches_jax():
    data, w, pts = RNG.normal(size=(2, 30)), RNG.uniform(size=30), RNG.normal(size=(2, 7))
    ours, theirs = T.gaussian_kde(data, "silverman", w), J.gaussian_kde(data, "silverman", w)
    _close(ours.logpdf(pts), jax.jit(lambda k, p: k.logpdf(p))(theirs, pts))


def test_gaussian_kde_1d_methods_pytree_and_gradient():
    data = RNG.normal(size=25)
    ours, theirs = T.gaussian_kde(data), J.gaussian_kde(data)
    _close(ours.integrate_box_1d(-0.5, 1.0), ss.gaussian_kde(data).integrate_box_1d(-0.5, 1.0))
    _close(ours.integrate_kde(T.gaussian_kde(data[:10])),
           ss.gaussian_kde(data).integrate_kde(ss.gaussian_kde(data[:10])))
    _close(ours.resample(trandom.PRNGKey(3), (5,)), theirs.resample(jax.random.PRNGKey(3), (5,)))
    assert ours.d == 1 and ours.n == 25
    # a pytree: through jit, and differentiable in the data
    _close(tg.jit(lambda k, x: k.logpdf(x))(ours, np.array([0.1, 0.5])),
           ours.logpdf(np.array([0.1, 0.5])))
    f = lambda d: T.gaussian_kde(d).logpdf(np.array([0.3]))[0]
    g = tg.grad(f)(data)
    e = np.zeros_like(data)
    e[4] = 1e-6
    np.testing.assert_allclose(g[4], (float(f(data + e)) - float(f(data - e))) / 2e-6,
                               rtol=1e-5)
    with pytest.raises(ValueError, match="points have dimension 3, dataset has dimension 1"):
        ours.evaluate(np.ones((3, 2)))
    with pytest.raises(NotImplementedError, match="only 1D box integrations are supported"):
        ours.integrate_box(0.0, 1.0)
