"""``tangentia.scipy.special``: values against SciPy, derivatives against
closed forms and finite differences, under every composition of grad, jvp,
vmap and jit, plus the numerical-stability and error-message contracts."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.special as ss

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.special as tsp
from tangentia.test_util import check_grads

RTOL = 1e-10


def _close(got, want, rtol=RTOL, atol=0.0):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# Closed-form first and second derivatives (independent of the implementation)


def _phi(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _d_expit(x):
    return ss.expit(x) * ss.expit(-x)  # no cancellation in 1 - s


def _d2_expit(x):
    return ss.expit(x) * ss.expit(-x) * (ss.expit(-x) - ss.expit(x))


def _d_erfinv(x):
    return math.sqrt(math.pi) / 2 * np.exp(ss.erfinv(x) ** 2)


def _d_ndtri(p):
    return 1.0 / _phi(ss.ndtri(p))


def _mills(x):
    return np.exp(-0.5 * x * x - 0.5 * math.log(2 * math.pi) - ss.log_ndtr(x))


# name -> (tangentia fn, scipy fn, first derivative, second derivative, points)
UNARY = {
    "expit": (tsp.expit, ss.expit, _d_expit, _d2_expit,
              np.array([-30.0, -2.5, -0.3, 0.0, 0.7, 4.0, 30.0])),
    "logit": (tsp.logit, ss.logit, lambda p: 1 / (p * (1 - p)),
              lambda p: (2 * p - 1) / (p * (1 - p)) ** 2, np.array([1e-6, 0.1, 0.5, 0.77, 0.999])),
    "erf": (tsp.erf, ss.erf, lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x),
            lambda x: -4 * x / math.sqrt(math.pi) * np.exp(-x * x),
            np.array([-2.2, -0.4, 0.0, 0.9, 3.1])),
    "erfc": (tsp.erfc, ss.erfc, lambda x: -2 / math.sqrt(math.pi) * np.exp(-x * x),
             lambda x: 4 * x / math.sqrt(math.pi) * np.exp(-x * x),
             np.array([-2.2, -0.4, 0.0, 0.9, 5.0])),
    "erfinv": (tsp.erfinv, ss.erfinv, _d_erfinv,
               lambda x: 2 * ss.erfinv(x) * _d_erfinv(x) ** 2,
               np.array([-0.95, -0.3, 0.0, 0.5, 0.99])),
    "gammaln": (tsp.gammaln, ss.gammaln, ss.psi, lambda x: ss.polygamma(1, x),
                np.array([0.3, 1.0, 2.5, 7.0, -0.5])),
    "digamma": (tsp.digamma, ss.psi, lambda x: ss.polygamma(1, x), lambda x: ss.polygamma(2, x),
                np.array([0.3, 1.0, 2.5, 7.0, -0.5])),
    "ndtr": (tsp.ndtr, ss.ndtr, _phi, lambda x: -x * _phi(x),
             np.array([-3.0, -0.5, 0.0, 1.2, 6.0])),
    "ndtri": (tsp.ndtri, ss.ndtri, _d_ndtri, lambda p: ss.ndtri(p) * _d_ndtri(p) ** 2,
              np.array([1e-5, 0.2, 0.5, 0.8, 0.999])),
    "log_ndtr": (tsp.log_ndtr, ss.log_ndtr, _mills, lambda x: -x * _mills(x) - _mills(x) ** 2,
                 np.array([-40.0, -8.0, -1.0, 0.0, 2.0, 9.0])),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_values(name):
    f, ref, _, _, x = UNARY[name]
    out = f(x)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    _close(out, ref(x), rtol=1e-13)
    _close(tg.jit(f)(x), ref(x), rtol=1e-13)
    _close(tg.vmap(f)(x), ref(x), rtol=1e-13)
    # scalars, integer promotion and float32 preservation
    _close(f(float(x[2])), ref(x[2]), rtol=1e-13)
    assert f(np.float32(x[2])).dtype == np.float32
    if name not in ("logit", "erfinv", "ndtri"):
        assert f(np.array([1, 2])).dtype == np.float64
        _close(f(np.array([1, 2])), ref(np.array([1.0, 2.0])), rtol=1e-13)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_derivatives_under_compositions(name):
    f, _, d1, d2, x = UNARY[name]
    want, want2 = d1(x), d2(x)
    ones = np.ones_like(x)
    g = tg.grad(f)
    got = {
        "vmap(grad)": tg.vmap(g)(x),
        "jit(vmap(grad))": tg.jit(tg.vmap(g))(x),
        "vmap(jit(grad))": tg.vmap(tg.jit(g))(x),
        "vmap(grad(jit))": tg.vmap(tg.grad(tg.jit(f)))(x),
        "grad(sum(vmap))": tg.grad(lambda v: tnp.sum(tg.vmap(f)(v)))(x),
        "jit(grad(sum))": tg.jit(tg.grad(lambda v: tnp.sum(f(v))))(x),
        "jvp": tg.jvp(f, (x,), (ones,))[1],
        "jvp(jit)": tg.jvp(tg.jit(f), (x,), (ones,))[1],
        "jit(jvp)": tg.jit(lambda v: tg.jvp(f, (v,), (tnp.ones_like(v),))[1])(x),
        "vmap(jvp)": tg.vmap(lambda v: tg.jvp(f, (v,), (tnp.ones_like(v),))[1])(x),
        "jvp(vmap)": tg.jvp(tg.vmap(f), (x,), (ones,))[1],
        "diag(jacrev)": np.diag(tg.jacrev(f)(x)),
        "diag(jit(jacfwd))": np.diag(tg.jit(tg.jacfwd(f))(x)),
    }
    for k, v in got.items():
        np.testing.assert_allclose(v, want, rtol=1e-9, atol=1e-300, err_msg=k)
    second = {
        "vmap(grad(grad))": tg.vmap(tg.grad(g))(x),
        "jit(vmap(grad(grad)))": tg.jit(tg.vmap(tg.grad(g)))(x),
        "vmap(jvp(grad))": tg.vmap(lambda v: tg.jvp(g, (v,), (tnp.ones_like(v),))[1])(x),
        "grad(jit(grad))": tg.vmap(tg.grad(tg.jit(g)))(x),
    }
    for k, v in second.items():
        np.testing.assert_allclose(v, want2, rtol=1e-8, atol=1e-300, err_msg=k)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_check_grads(name):
    f, _, _, _, x = UNARY[name]
    # finite differences need moderate curvature (and stay inside the domain)
    x = x[(np.abs(x) < 10) & ((np.abs(x - 0.5) < 0.45) if name in ("logit", "ndtri") else True)]
    check_grads(f, (x,), order=2, modes=("fwd", "rev"), rtol=1e-5, atol=1e-6, eps=1e-5)


# ---------------------------------------------------------------------------
# Stability


def _no_warnings(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args)


def test_expit_stable_at_extremes():
    x = np.array([-800.0, -745.0, -40.0, 0.0, 40.0, 800.0])
    y = _no_warnings(tsp.expit, x)
    # 1 / (1 + exp(-x)) computed with mpmath at 50 digits
    want = [0.0, 5e-324, 4.248354255291589e-18, 0.5, 1.0, 1.0]
    _close(y, want, rtol=1e-15, atol=1e-323)  # exp(-745) is the smallest subnormal
    d = _no_warnings(tg.vmap(tg.grad(tsp.expit)), x)
    assert np.all(np.isfinite(d))
    _close(d, [0.0, 0.0, math.exp(-40) / (1 + math.exp(-40)) ** 2, 0.25,
               math.exp(-40) / (1 + math.exp(-40)) ** 2, 0.0], rtol=1e-14, atol=1e-323)
    d2 = _no_warnings(tg.vmap(tg.grad(tg.grad(tsp.expit))), x)
    assert np.all(np.isfinite(d2))
    _close(d2, _d2_expit(x), rtol=1e-12, atol=1e-300)
    # the rule is what runs under vmap, and under jit
    g = tg.grad(lambda v: tnp.sum(tg.vmap(tsp.expit)(v)))
    assert np.all(_no_warnings(tg.jit(g), x) == d)


def test_expit_higher_order_at_zero():
    # exact at the branch point x == 0, at every order (not just almost everywhere)
    d3 = tg.grad(tg.grad(tg.grad(tsp.expit)))(0.0)
    _close(d3, -1.0 / 8.0, rtol=1e-14)
    h = tg.hessian(lambda x: tsp.expit(x) ** 2)(0.0)
    _close(h, 2 * (1 / 16), rtol=1e-14)  # 2 s'^2 + 2 s s'' with s'' = 0


def test_logit_stable_near_0_and_1():
    p = np.array([1e-12, 1 - 1e-12])
    y = _no_warnings(tsp.logit, p)
    # log(p / (1 - p)) and 1 / (p (1 - p)) computed with mpmath at 50 digits
    want = [-27.63102111592755, 27.63104323789236]
    dwant = [1000000000001.0, 1000022122210.5028]
    _close(y, want, rtol=1e-12)
    d = _no_warnings(tg.vmap(tg.grad(tsp.logit)), p)
    _close(d, dwant, rtol=1e-12)
    d2 = tg.vmap(tg.grad(tg.grad(tsp.logit)))(p)
    assert np.all(np.isfinite(d2))
    # logit inverts expit
    x = np.array([-30.0, -1.0, 0.5, 20.0])
    _close(tsp.logit(tsp.expit(x)), x, rtol=1e-8)


def test_log_ndtr_far_tails():
    x = np.array([-40.0, -20.0, 20.0, 40.0])
    # log(ndtr(x)) and npdf(x) / ndtr(x) computed with mpmath at 150 digits
    want = [-804.6084420137538, -203.91715537109727, -2.7536241186062337e-89, 0.0]
    dwant = [40.02496884720726, 20.04975306852785, 5.520948362159764e-88, 0.0]
    _close(tsp.log_ndtr(x), want, rtol=1e-13, atol=1e-300)
    d = tg.vmap(tg.grad(tsp.log_ndtr))(x)
    assert np.all(np.isfinite(d))
    np.testing.assert_allclose(d, dwant, rtol=1e-12, atol=1e-300)
    _close(tg.jit(tg.grad(tsp.log_ndtr))(-40.0), dwant[0], rtol=1e-12)


# ---------------------------------------------------------------------------
# logsumexp


def test_logsumexp_values_against_scipy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5))
    b = rng.uniform(0.1, 2.0, (4, 5))
    for axis in (None, 0, 1, -1, (0, 2), (2, 0)):
        for keepdims in (False, True):
            _close(tsp.logsumexp(a, axis=axis, keepdims=keepdims),
                   ss.logsumexp(a, axis=axis, keepdims=keepdims), rtol=1e-13)
            _close(tsp.logsumexp(a, axis=axis, b=b, keepdims=keepdims),
                   ss.logsumexp(a, axis=axis, b=b, keepdims=keepdims), rtol=1e-13)
    bs = np.array([1.0, -2.0])
    out, sign = tsp.logsumexp(np.array([1.0, 2.0]), b=bs, return_sign=True)
    wout, wsign = ss.logsumexp(np.array([1.0, 2.0]), b=bs, return_sign=True)
    _close(out, wout, rtol=1e-14)
    assert sign == wsign == -1.0
    assert np.isnan(tsp.logsumexp(np.array([1.0, 2.0]), b=bs))
    # b == 0 removes a term, even an infinite one
    _close(tsp.logsumexp(np.array([np.inf, 1.0]), b=np.array([0.0, 1.0])), 1.0)
    # where=
    m = np.array([[True, False, True], [False, True, True]])
    x = rng.standard_normal((2, 3))
    _close(tsp.logsumexp(x, axis=1, where=m),
           [ss.logsumexp(x[0, [0, 2]]), ss.logsumexp(x[1, [1, 2]])], rtol=1e-13)
    # empty reduction, integers, scalars
    with np.errstate(divide="ignore"):
        assert tsp.logsumexp(np.zeros((0,))) == -np.inf
    _close(tsp.logsumexp(np.array([1, 2, 3])), ss.logsumexp([1.0, 2.0, 3.0]), rtol=1e-14)
    _close(tsp.logsumexp(2.0), 2.0)


def test_logsumexp_derivatives():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    b = rng.uniform(0.5, 2.0, (3, 4))
    check_grads(lambda a: tsp.logsumexp(a, axis=1), (a,), order=2, rtol=1e-5, atol=1e-6)
    check_grads(lambda a, b: tsp.logsumexp(a, axis=0, b=b), (a, b), order=2, rtol=1e-5,
                atol=1e-6)
    check_grads(lambda a: tsp.logsumexp(a, return_sign=True, b=-b)[0], (a,), order=1)
    # the gradient is the softmax
    _close(tg.grad(tsp.logsumexp)(a), ss.softmax(a), rtol=1e-13)
    # under vmap / jit in any order
    per_row = tg.vmap(tg.grad(tsp.logsumexp))(a)
    _close(per_row, ss.softmax(a, axis=1), rtol=1e-13)
    _close(tg.jit(tg.vmap(tg.grad(tsp.logsumexp)))(a), per_row, rtol=1e-14)
    _close(tg.vmap(tg.jit(tg.grad(lambda r: tsp.logsumexp(r, keepdims=True)[0])))(a), per_row,
           rtol=1e-14)
    _close(tg.vmap(lambda r, s: tsp.logsumexp(r, b=s))(a, b), ss.logsumexp(a, axis=1, b=b),
           rtol=1e-13)
    _, t = tg.jvp(lambda a: tsp.logsumexp(a, axis=1), (a,), (np.ones_like(a),))
    _close(t, np.ones(3), rtol=1e-13)


def test_logsumexp_huge_inputs():
    for a, want in [(np.array([1e308, 1e308, -1e308]), [0.5, 0.5, 0.0]),
                    (np.array([1000.0, -1000.0, 1000.0]), [0.5, 0.0, 0.5]),
                    (np.array([-1000.0, -1000.0]), [0.5, 0.5])]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # -1e308 - 1e308 overflows to -inf: harmless
            g = tg.grad(tsp.logsumexp)(a)
            gj = tg.jit(tg.grad(tsp.logsumexp))(a)
            h = tg.hessian(tsp.logsumexp)(a)
        _close(g, want, rtol=1e-15)
        _close(gj, want, rtol=1e-15)
        assert np.all(np.isfinite(h))
    _close(tsp.logsumexp(np.array([1e308, 1e308])), 1e308, rtol=1e-15)


# ---------------------------------------------------------------------------
# xlogy / xlog1py


def test_xlogy_xlog1py_values():
    x = np.array([0.0, 0.0, 1.5, 2.0, -1.0])
    y = np.array([0.0, 3.0, 0.5, 4.0, 2.0])
    _close(tsp.xlogy(x, y), ss.xlogy(x, y), rtol=1e-14)
    _close(tsp.xlog1py(x, y - 1), ss.xlog1py(x, y - 1), rtol=1e-14)
    _close(tg.jit(tsp.xlogy)(x, y), ss.xlogy(x, y), rtol=1e-14)
    _close(tg.vmap(tsp.xlog1py, (0, None))(x, 0.5), ss.xlog1py(x, 0.5), rtol=1e-14)
    assert tsp.xlogy(np.float32(2), np.float32(3)).dtype == np.float32
    assert tsp.xlogy(np.ones(2, np.float32), 3.0).dtype == np.float32  # Python scalars are weak
    assert tsp.xlogy(2, 3).dtype == np.float64


def test_xlogy_xlog1py_derivatives():
    # JAX's custom_jvp semantics: d/dx = log(y), d/dy = x/y (x/(1+y) for xlog1py)
    gxy = tg.grad(tsp.xlogy, argnums=(0, 1))
    _close(gxy(0.0, 1.0), (0.0, 0.0))
    _close(gxy(0.0, 2.0), (math.log(2.0), 0.0))
    _close(gxy(2.0, 3.0), (math.log(3.0), 2.0 / 3.0))
    with np.errstate(all="ignore"):
        gx, gy = gxy(0.0, 0.0)
    assert gx == -np.inf and np.isnan(gy)
    g1p = tg.grad(tsp.xlog1py, argnums=(0, 1))
    _close(g1p(0.0, 1.0), (math.log(2.0), 0.0))
    _close(g1p(2.0, 3.0), (math.log(4.0), 0.5))
    x = np.array([0.5, 1.5, 3.0])
    y = np.array([0.2, 2.0, 7.0])
    check_grads(tsp.xlogy, (x, y), order=2, rtol=1e-5, atol=1e-6)
    check_grads(tsp.xlog1py, (x, y), order=2, rtol=1e-5, atol=1e-6)
    # broadcasting and the rule under vmap and jit
    _close(tg.grad(lambda y: tnp.sum(tsp.xlogy(x, y)))(2.0), np.sum(x) / 2.0, rtol=1e-14)
    _close(tg.jit(tg.vmap(tg.grad(tsp.xlogy, 1)))(np.zeros(3), y), np.zeros(3))
    _close(tg.vmap(tg.jit(tg.grad(tsp.xlog1py)))(x, y), np.log1p(y), rtol=1e-14)
    _, t = tg.jvp(tsp.xlogy, (x, y), (np.ones(3), np.ones(3)))
    _close(t, np.log(y) + x / y, rtol=1e-14)


# ---------------------------------------------------------------------------
# softmax / log_softmax (SciPy signature: all axes by default)


def test_softmax_scipy_signature():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4))
    for axis in (None, 0, 1, -1, (0, 1)):
        _close(tsp.softmax(x, axis=axis), ss.softmax(x, axis=axis), rtol=1e-13)
        _close(tsp.log_softmax(x, axis=axis), ss.log_softmax(x, axis=axis), rtol=1e-13,
               atol=1e-15)
    _close(tsp.softmax(x), ss.softmax(x), rtol=1e-13)
    check_grads(lambda x: tsp.softmax(x, axis=0), (x,), order=2, rtol=1e-5, atol=1e-6)
    check_grads(tsp.log_softmax, (x,), order=2, rtol=1e-5, atol=1e-6)
    _close(tg.vmap(tsp.softmax)(x), ss.softmax(x, axis=1), rtol=1e-13)


# ---------------------------------------------------------------------------
# Errors


def test_errors_name_function_and_argument():
    with pytest.raises(ValueError, match=r"logsumexp: argument 'b' of shape \(2,\).*'a' of shape "
                                         r"\(3,\)"):
        tsp.logsumexp(np.ones(3), b=np.ones(2))
    with pytest.raises(ValueError, match="logsumexp: axis 2 .*'axis'"):
        tsp.logsumexp(np.ones((2, 2)), axis=2)
    with pytest.raises(TypeError, match="logsumexp: argument 'axis'"):
        tsp.logsumexp(np.ones(2), axis=1.5)
    with pytest.raises(ValueError, match="logsumexp: argument 'where'"):
        tsp.logsumexp(np.ones(3), where=np.ones(2, bool))
    with pytest.raises(TypeError, match="expit: argument 'x'"):
        tsp.expit("nope")
    with pytest.raises(TypeError, match="erfinv: argument 'x' has complex dtype"):
        tsp.erfinv(np.ones(2, complex))   # (erf and erfc take complex, as SciPy's)
    with pytest.raises(TypeError, match="log_ndtr: argument 'series_order'"):
        tsp.log_ndtr(1.0, series_order=2.5)
    with pytest.raises(ValueError, match="log_ndtr: argument 'series_order'"):
        tsp.log_ndtr(1.0, series_order=-1)
    with pytest.raises(TypeError, match="polygamma: argument 'n'"):
        tsp.polygamma(1.5, 2.0)
    with pytest.raises(ValueError, match="softmax: axis 3"):
        tsp.softmax(np.ones((2, 2)), axis=3)
    with pytest.raises(ValueError, match="log_softmax: argument 'axis' has repeated"):
        tsp.log_softmax(np.ones((2, 2)), axis=(0, 0))


def test_polygamma():
    x = np.array([0.4, 1.0, 3.5])
    for n in (0, 1, 2, 3):
        _close(tsp.polygamma(n, x), ss.polygamma(n, x), rtol=1e-12)
        _close(tg.vmap(tg.grad(lambda v: tsp.polygamma(n, v)))(x), ss.polygamma(n + 1, x),
               rtol=1e-12)
    _close(tg.jit(tsp.polygamma)(np.array([1, 2, 3]), x), ss.polygamma([1, 2, 3], x), rtol=1e-12)
    check_grads(lambda v: tsp.polygamma(1, v), (x,), order=2, rtol=1e-5, atol=1e-6)
