"""erfcinv, the Bessel functions and zeta in tangentia.scipy.special: values
against SciPy, first and second derivatives against finite differences,
vmap against a loop, jit against eager, float32 preserved."""
import numpy as np
import pytest
import scipy.special as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.special as sp

X = np.array([-2.5, -0.3, 0.0, 0.7, 3.2])
XPOS = np.array([0.2, 0.7, 1.9, 3.2, 8.5])
UNARY = ["i0", "i0e", "i1", "i1e", "j0", "j1", "y0", "y1"]
BINARY = ["iv", "ive", "jv", "yv", "jn", "yn"]


def _points(name):
    return XPOS if name.startswith("y") else X


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


@pytest.mark.parametrize("name", UNARY + ["erfcinv"])
def test_unary_values_and_derivatives(name):
    x = np.array([0.05, 0.3, 1.0, 1.7]) if name == "erfcinv" else _points(name)
    f, ref = getattr(sp, name), getattr(ss, name)
    np.testing.assert_allclose(f(x), ref(x), rtol=1e-14, atol=0)
    g = tg.vmap(tg.grad(f))(x)
    np.testing.assert_allclose(g, _fd(ref, x), rtol=1e-6, atol=1e-6)
    # second order: the derivative of the derivative against finite differences of it
    # (away from 0, where the scaled forms' exp(-|x|) has a kink)
    x = x[x != 0]
    g2 = tg.vmap(tg.grad(tg.grad(f)))(x)
    np.testing.assert_allclose(g2, _fd(lambda y: np.asarray(tg.vmap(tg.grad(f))(y)), x),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("v", [0, 1, 2.5, 3])
def test_order_v_values_and_derivatives(name, v):
    if name in ("jn", "yn") and v == 2.5:
        pytest.skip("jn/yn take integer orders")
    # non-integer orders are real only for x >= 0 (SciPy gives NaN below)
    x = _points(name) if float(v).is_integer() else XPOS
    f, ref = getattr(sp, name), getattr(ss, name)
    np.testing.assert_allclose(f(v, x), ref(v, x), rtol=1e-13)
    g = tg.vmap(tg.grad(f, argnums=1), in_axes=(None, 0))(float(v), x)
    np.testing.assert_allclose(g, _fd(lambda y: ref(v, y), x), rtol=1e-6, atol=1e-6)


def test_order_derivative_is_not_implemented():
    with pytest.raises(NotImplementedError, match="iv: the derivative with respect to argument 'v'"):
        tg.grad(sp.iv)(1.0, 2.0)


def test_zeta():
    np.testing.assert_allclose(sp.zeta(2.0), np.pi ** 2 / 6, rtol=1e-15)
    q = np.array([0.5, 1.0, 2.0, 7.5])
    np.testing.assert_allclose(sp.zeta(3.0, q), ss.zeta(3.0, q), rtol=1e-14)
    g = tg.vmap(tg.grad(sp.zeta, argnums=1), in_axes=(None, 0))(3.0, q)
    np.testing.assert_allclose(g, -3.0 * ss.zeta(4.0, q), rtol=1e-13)
    np.testing.assert_allclose(g, _fd(lambda y: ss.zeta(3.0, y), q), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="zeta: the derivative with respect to argument 'x'"):
        tg.grad(sp.zeta)(3.0, 2.0)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-20, 20), min_size=1, max_size=6))
def test_exponentially_scaled_identities(xs):
    x = np.array(xs)
    np.testing.assert_allclose(sp.i0e(x), ss.i0(x) * np.exp(-np.abs(x)), rtol=1e-13)
    np.testing.assert_allclose(sp.ive(1.0, x), sp.i1e(x), rtol=1e-12, atol=1e-300)
    # the derivative of the scaled form is the scaled derivative minus sign(x) * value
    g = tg.vmap(tg.grad(sp.i0e))(x)
    np.testing.assert_allclose(g, sp.i1e(x) - np.sign(x) * sp.i0e(x), rtol=1e-12, atol=1e-15)


def test_jit_float32_and_integers():
    x32 = np.array([0.5, 1.5], np.float32)
    for name in ("i0", "j1", "i1e"):
        r = tg.jit(getattr(sp, name))(x32)
        assert r.dtype == np.float32
        np.testing.assert_allclose(r, getattr(ss, name)(x32), rtol=1e-6)
    assert sp.i0(np.array([1, 2])).dtype == np.float64
    np.testing.assert_allclose(tg.jit(tg.grad(lambda x: tnp.sum(sp.jv(2.0, x))))(XPOS),
                               0.5 * (ss.jv(1, XPOS) - ss.jv(3, XPOS)), rtol=1e-13)


def test_kaiser_window_differentiable_in_beta():
    for beta in (0.0, 2.5, 14.0):
        np.testing.assert_allclose(tnp.kaiser(12, beta), np.kaiser(12, beta), rtol=1e-13)
    g = tg.grad(lambda b: tnp.sum(tnp.kaiser(9, b)))(3.0)
    np.testing.assert_allclose(g, _fd(lambda b: np.sum(np.kaiser(9, b)), 3.0), rtol=1e-6)


# d/da of the regularized incomplete gamma functions (series and continued-fraction regions,
# small and large shapes, the region boundary x == a).
A = np.array([0.5, 3.0, 3.0, 0.1, 50.0, 50.0, 1e-3, 200.0, 2.0, 5.0, 1e4])
XA = np.array([0.2, 1.0, 5.0, 10.0, 45.0, 60.0, 1e-3, 210.0, 0.5, 5.0, 1.01e4])


def test_gammainc_derivative_in_the_shape():
    g = tg.vmap(tg.grad(sp.gammainc))(A, XA)
    h = 1e-5 * np.maximum(1.0, A)
    fd = (ss.gammainc(A + h, XA) - ss.gammainc(A - h, XA)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=2e-6)
    np.testing.assert_allclose(tg.vmap(tg.grad(sp.gammaincc))(A, XA), -g, rtol=1e-15)
    # mixed second derivative d/dx d/da against finite differences in x
    d2 = tg.grad(tg.grad(sp.gammainc), argnums=1)(3.0, 5.0)
    fd2 = (tg.grad(sp.gammainc)(3.0, 5.0 + 1e-6) - tg.grad(sp.gammainc)(3.0, 5.0 - 1e-6)) / 2e-6
    np.testing.assert_allclose(d2, fd2, rtol=1e-7)
    assert tg.grad(sp.gammainc)(np.float32(3.0), np.float32(5.0)).dtype == np.float32
    # outside the domain: NaN, as the function; at x == 0 and x == inf: 0
    np.testing.assert_array_equal(tg.vmap(tg.grad(sp.gammainc))(np.array([-1.0, 2.0, 2.0]),
                                                                 np.array([1.0, 0.0, np.inf])),
                                  [np.nan, 0.0, 0.0])
