"""autograd's idioms that are also NumPy's or SciPy's (issue 26), under grad/jit/vmap.

* ``tnp.mean``/``std``/``var`` (and the other reductions) of a list of traced scalars;
* ``tnp.r_``/``tnp.c_`` with traced entries;
* ``scipy.stats.t.cdf``/``logcdf`` (SciPy's; JAX has none);
* ``multivariate_normal`` with SciPy's ``allow_singular`` and ``entropy``;
* ``scipy.special.erf``/``erfc`` of complex arguments (SciPy's; JAX rejects them).

Values are compared with NumPy, SciPy or JAX; derivatives with finite differences or
closed forms.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ssp
import scipy.stats as sst

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.special as tsp
import tangentia.scipy.stats as tst


def close(a, b, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# ---------------------------------------------------------------------------
# Reductions of lists of traced scalars


@pytest.mark.parametrize("name", ["mean", "std", "var", "sum", "prod", "max", "min"])
def test_reduction_of_a_list_of_traced_scalars(name):
    f = getattr(tnp, name)
    npf = getattr(np, name)

    def h(x, y):
        return f([x, y, 2.0]) * 1.5

    x, y = 1.0, 3.5
    close(h(x, y), npf([x, y, 2.0]) * 1.5)
    close(tg.jit(h)(x, y), npf([x, y, 2.0]) * 1.5)
    gx, gy = tg.grad(h, (0, 1))(x, y)
    close(gx, fd(lambda v: npf([v, y, 2.0]) * 1.5, x), rtol=1e-7)
    close(gy, fd(lambda v: npf([x, v, 2.0]) * 1.5, y), rtol=1e-7)
    # a tuple, under vmap, and nested lists with an axis
    xs = np.array([0.5, 1.0, 4.0])
    close(tg.vmap(lambda v: f((v, 2.0 * v, 1.0)))(xs), [npf((v, 2.0 * v, 1.0)) for v in xs])
    got = tg.jit(lambda v: f([[v, 1.0], [2.0, v * v]], axis=0))(3.0)
    close(got, npf([[3.0, 1.0], [2.0, 9.0]], axis=0))


def test_std_var_ddof_and_all_any_of_traced_lists():
    g = tg.grad(lambda x: tnp.std([x, 1.0, 2.0], ddof=1))(0.5)
    close(g, fd(lambda v: np.std([v, 1.0, 2.0], ddof=1), 0.5), rtol=1e-7)
    assert bool(tg.jit(lambda x: tnp.all([x > 0, True]))(1.0))
    assert not bool(tg.jit(lambda x: tnp.any((x > 0, False)))(-1.0))


# ---------------------------------------------------------------------------
# r_ and c_ with traced entries


def test_r_and_c_with_traced_entries_match_numpy():
    def r(x):
        return tnp.r_[x, 2.0, tnp.array([x, x * x]), 0:3]

    want = np.r_[1.5, 2.0, np.array([1.5, 2.25]), 0:3]
    close(r(1.5), want)
    close(tg.jit(r)(1.5), want)
    # d/dx sum(r(x)**2) = 2x + 2x + 4x**3
    close(tg.grad(lambda x: tnp.sum(r(x) ** 2))(1.5), 4 * 1.5 + 4 * 1.5 ** 3)
    close(tg.vmap(r)(np.array([1.0, 2.0])), [np.r_[v, 2.0, [v, v * v], 0:3] for v in (1., 2.)])

    def c(x):
        return tnp.c_[tnp.array([x, 1.0]), tnp.array([2.0, x])]
    close(tg.jit(c)(1.5), np.c_[np.array([1.5, 1.0]), np.array([2.0, 1.5])])
    close(tg.jacfwd(lambda x: tnp.c_[x, x ** 2])(np.arange(2.0)),
          [[[1, 0], [0, 0]], [[0, 1], [0, 2]]])  # d c_[x, x**2][i, k] / d x[j]


@pytest.mark.parametrize("key", [
    ("0,2", [1.0, 2.0], [3.0, 4.0]), ("1,2,0", [1, 2, 3], [4, 5, 6]), ("0,2,0", [1, 2], [3, 4]),
    ("-1", np.ones((2, 2)), np.zeros((2, 1))), ("r", 1, 2), ("c", 1.0, 2.0),
    ("0,3,1", np.ones((2, 2)), np.ones((2, 2))),
    (slice(0, 1, 5j),), (np.ones(2, dtype=np.float32), 2.0), (1, 2, np.arange(2)),
])
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # NumPy's np.matrix
def test_r_directives_match_numpy(key):
    want = np.r_[key]
    if isinstance(want, np.matrix):   # NumPy's matrix directives: JAX's 2-d arrays
        want = np.asarray(want)
    got = tnp.r_[key]
    assert isinstance(got, tg.Array)
    assert got.shape == want.shape and got.dtype == want.dtype
    close(got, want)


@pytest.mark.parametrize("key", [(np.ones((2, 2)), np.arange(2.0)), (1, 2, 3),
                                 (np.arange(3.0), np.arange(3.0) * 2)])
def test_c_matches_numpy(key):
    want, got = np.c_[key], tnp.c_[key]
    assert got.shape == want.shape and got.dtype == want.dtype
    close(got, want)


def test_r_errors():
    with pytest.raises(ValueError, match="special directives must be the first entry"):
        tnp.r_[1, "0"]
    with pytest.raises(ValueError, match="need at least one array to concatenate"):
        tnp.r_[()]
    with pytest.raises(TypeError, match="slice entry must be concrete"):
        tg.jit(lambda n: tnp.r_[0:n])(3.0)


# ---------------------------------------------------------------------------
# t.cdf and t.logcdf

_X = np.array([-1e3, -30.0, -3.0, -1.9, -0.5, -1e-9, 0.0, 1e-9, 0.3, 2.0, 8.0, 40.0, 1e3])


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")  # log(0) = -inf
@pytest.mark.parametrize("df", [0.7, 1.0, 3.0, 30.0, 1e4])
def test_t_cdf_logcdf_match_scipy(df):
    # exact for df=1: 0.5 + arctan(x)/pi (SciPy's own stdtr is off by 6e-10 there)
    want = 0.5 + np.arctan(_X) / np.pi if df == 1.0 else sst.t.cdf(_X, df)
    close(tst.t.cdf(_X, df), want, rtol=5e-13, atol=0)
    with np.errstate(divide="ignore"):
        want_log = np.log(want) if df == 1.0 else sst.t.logcdf(_X, df)
    close(tst.t.logcdf(_X, df), want_log, rtol=5e-13, atol=0)
    close(tg.jit(tst.t.cdf)(_X, df), tst.t.cdf(_X, df), rtol=1e-15)


def test_t_cdf_loc_scale_dtype_and_broadcasting():
    close(tst.t.cdf(1.5, 3.0, loc=0.5, scale=2.0), sst.t.cdf(1.5, 3.0, loc=0.5, scale=2.0),
          rtol=1e-14)
    got = tst.t.cdf(np.array([[0.1], [2.0]]), np.array([1.0, 5.0]))
    close(got, sst.t.cdf(np.array([[0.1], [2.0]]), np.array([1.0, 5.0])), rtol=1e-13)
    assert tst.t.cdf(np.float32(0.3), np.float32(3.0)).dtype == np.float32
    assert tst.t.logcdf(np.float32(0.3), np.float32(3.0)).dtype == np.float32


def test_t_cdf_logcdf_derivatives():
    df = 3.0
    g = tg.vmap(tg.grad(tst.t.cdf), (0, None))(_X, df)
    close(g, sst.t.pdf(_X, df), rtol=1e-13, atol=1e-300)
    g = tg.vmap(tg.grad(tst.t.logcdf), (0, None))(_X, df)
    close(g, sst.t.pdf(_X, df) / sst.t.cdf(_X, df), rtol=1e-12)
    # loc and scale by finite differences
    gl, gs = tg.grad(tst.t.cdf, (2, 3))(1.5, df, 0.5, 2.0)
    close(gl, fd(lambda v: sst.t.cdf(1.5, df, v, 2.0), 0.5), rtol=1e-7)
    close(gs, fd(lambda v: sst.t.cdf(1.5, df, 0.5, v), 2.0), rtol=1e-7)
    # d/ddf: not implemented, as betainc's in its parameters (JAX's too)
    with pytest.raises(NotImplementedError, match="'df'"):
        tg.grad(tst.t.cdf, 1)(1.5, df)


# ---------------------------------------------------------------------------
# multivariate_normal: allow_singular and entropy

_C = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])   # rank 2
_M = np.array([0.1, 0.2, -0.3])
_XS = np.array([[1.1, 1.2, 0.5], [1.0, 0.0, 0.0], [0.1, 0.2, -0.3]])  # 2nd: off the support
_A = np.array([[2.0, 0.3], [0.3, 1.0]])


def test_mvn_allow_singular_matches_scipy():
    mvn = tst.multivariate_normal
    want = sst.multivariate_normal.logpdf(_XS, _M, _C, allow_singular=True)
    close(mvn.logpdf(_XS, _M, _C, allow_singular=True), want, rtol=1e-13)
    close(mvn.pdf(_XS, _M, _C, allow_singular=True),
          sst.multivariate_normal.pdf(_XS, _M, _C, allow_singular=True), rtol=1e-13)
    close(tg.jit(lambda x: mvn.logpdf(x, _M, _C, allow_singular=True))(_XS), want, rtol=1e-13)
    # a regular cov: the same density as the Cholesky path (and SciPy's)
    x = np.array([1.0, -0.5])
    close(mvn.logpdf(x, np.zeros(2), _A, allow_singular=True), mvn.logpdf(x, np.zeros(2), _A),
          rtol=1e-13)
    close(mvn.logpdf(x, np.zeros(2), _A, allow_singular=False),
          sst.multivariate_normal.logpdf(x, np.zeros(2), _A), rtol=1e-13)
    # on the support, d/dx logpdf = -pinv(C) (x - mean)
    g = tg.grad(lambda v: mvn.logpdf(v, _M, _C, allow_singular=True))(_XS[0])
    close(g, -np.linalg.pinv(_C) @ (_XS[0] - _M), rtol=1e-12)
    # not positive semidefinite: NaN (SciPy raises)
    assert np.isnan(mvn.logpdf(x, np.zeros(2), -_A, allow_singular=True))
    with pytest.raises(TypeError, match="allow_singular"):
        mvn.logpdf(x, np.zeros(2), _A, allow_singular="yes")


def test_mvn_entropy_matches_scipy():
    mvn = tst.multivariate_normal
    for args, kw in [((), dict(cov=_C)), ((), dict(cov=_A)), ((_M, 2.0), {}), ((), dict(cov=2.0)),
                     ((np.zeros(2), _A), {})]:
        close(mvn.entropy(*args, **kw), sst.multivariate_normal.entropy(*args, **kw), rtol=1e-13)
    # d/dcov of the entropy: inv(cov) / 2
    close(tg.grad(lambda c: mvn.entropy(cov=c))(_A), 0.5 * np.linalg.inv(_A), rtol=1e-12)


# ---------------------------------------------------------------------------
# erf and erfc of complex arguments

_Z = np.array([1 + 1j, 0.5 - 2j, -3 + 0.1j, 4j, 6 + 6j, -0.2 - 0.3j, 2.0 + 0j])


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_erf_erfc_complex_match_scipy(name):
    f, sf = getattr(tsp, name), getattr(ssp, name)
    got = f(_Z)
    assert got.dtype == np.complex128
    close(got, sf(_Z), rtol=1e-15)
    close(tg.jit(f)(_Z), sf(_Z), rtol=1e-15)
    assert f(_Z.astype(np.complex64)).dtype == np.complex64
    # holomorphic: the derivative is -+2/sqrt(pi) exp(-z**2)
    sign = 1.0 if name == "erf" else -1.0
    d = tg.vmap(tg.grad(f, holomorphic=True))(_Z)
    close(d, sign * 2 / np.sqrt(np.pi) * np.exp(-_Z ** 2), rtol=1e-14)


def test_erf_complex_real_loss_grad_by_finite_differences():
    def loss(z):
        return tnp.abs(tsp.erf(z)) ** 2 + tnp.real(tsp.erfc(z))
    z0 = 0.3 + 0.7j
    g = tg.grad(loss)(z0)   # JAX's convention: d/dRe - i d/dIm
    eps = 1e-6
    f = lambda z: np.abs(ssp.erf(z)) ** 2 + np.real(ssp.erfc(z))  # noqa: E731
    close(np.real(g), fd(lambda v: f(v + 0.7j), 0.3), rtol=1e-7)
    close(-np.imag(g), (f(z0 + 1j * eps) - f(z0 - 1j * eps)) / (2 * eps), rtol=1e-7)
