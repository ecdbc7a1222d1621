"""The special functions added for ``tangentia.scipy.stats``: ``gamma``, ``rgamma``,
``gammasgn``, ``loggamma``, ``beta``, ``betaln``, ``gammainc``, ``gammaincc``,
``betainc``, ``entr``, ``multigammaln``.

Values against SciPy over broadcasting shapes and float32/float64, first and
second derivatives against finite differences, vmap against a loop, jit
against eager, a few values and gradients baked in from JAX 0.10.2 (x64),
and the errors for derivatives with respect to shape parameters.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss

import tangentia as tg
import tangentia.scipy.special as tsp
from tangentia.test_util import check_grads

RNG = np.random.default_rng(11)
A = RNG.uniform(0.6, 6.0, (3, 1))          # shape parameters, broadcast against X
B = RNG.uniform(0.6, 6.0, (1, 4))
X = RNG.uniform(0.2, 5.0, (1, 4))
U = RNG.uniform(0.05, 0.95, (3, 4))        # points in (0, 1)

# name: (tangentia function, scipy function, args)
CASES = {
    "gamma": (tsp.gamma, ss.gamma, (np.array([-2.5, -0.5, 0.3, 1.0, 4.5, 20.0]),)),
    "rgamma": (tsp.rgamma, ss.rgamma, (np.array([-2.0, -2.5, -0.5, 0.0, 0.3, 4.5, 20.0]),)),
    "gammasgn": (tsp.gammasgn, ss.gammasgn, (np.array([-2.5, -1.5, -0.5, 0.3, 4.5]),)),
    "loggamma": (tsp.loggamma, ss.loggamma, (np.array([-1.5, 0.3, 1.0, 4.5, 200.0]),)),
    "beta": (tsp.beta, ss.beta, (A, B)),
    "betaln": (tsp.betaln, ss.betaln, (A * 100, B)),
    "gammainc": (tsp.gammainc, ss.gammainc, (A, X)),
    "gammaincc": (tsp.gammaincc, ss.gammaincc, (A, X)),
    "betainc": (tsp.betainc, ss.betainc, (A, B, U)),
    "entr": (tsp.entr, ss.entr, (np.array([-1.0, 0.0, 1e-300, 0.3, 1.0, 7.0]),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_match_scipy(name, dtype):
    f, g, args = CASES[name]
    args = tuple(a.astype(dtype) for a in args)
    got, want = f(*args), g(*args)
    assert got.dtype == want.dtype == dtype, (name, got.dtype, want.dtype)
    assert got.shape == want.shape
    rtol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


def test_multigammaln_matches_scipy():
    a = np.array([[2.5, 3.5], [10.0, 40.0]])
    for d in (1, 2, 5):
        want = np.vectorize(lambda v: ss.multigammaln(v, d))(a)
        np.testing.assert_allclose(tsp.multigammaln(a, d), want, rtol=1e-13)
    check_grads(lambda v: tsp.multigammaln(v, 3), (a,), order=2)
    with pytest.raises(ValueError, match="multigammaln: argument 'd'"):
        tsp.multigammaln(a, 0)


def test_integer_and_scalar_promotion():
    assert tsp.gammainc(2, 3).dtype == np.float64
    assert tsp.betainc(2, np.float32(3), np.float32(0.5)).dtype == np.float32
    assert tsp.beta(np.arange(1, 4), 2.0).dtype == np.float64
    np.testing.assert_allclose(tsp.gammainc(2, 3), ss.gammainc(2.0, 3.0), rtol=1e-15)


# Derivatives with respect to every differentiable argument, first and second order.
GRAD_CASES = {
    "gamma": (tsp.gamma, (np.array([-0.5, 0.7, 2.3, 4.0]),)),
    "rgamma": (tsp.rgamma, (np.array([-0.5, 0.7, 2.3, 4.0]),)),
    "loggamma": (tsp.loggamma, (np.array([0.7, 2.3, 4.0]),)),
    "beta": (tsp.beta, (A, B)),
    "betaln": (tsp.betaln, (A, B)),
    "gammainc_x": (lambda x: tsp.gammainc(A, x), (X,)),
    "gammaincc_x": (lambda x: tsp.gammaincc(A, x), (X,)),
    "betainc_x": (lambda x: tsp.betainc(A, B, x), (U,)),
    "entr": (tsp.entr, (np.array([0.1, 0.5, 2.0]),)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_derivatives_match_finite_differences(name):
    f, args = GRAD_CASES[name]
    # eps 1e-5: betainc's second derivative by finite differences with the default 1e-4
    # misses rtol 1e-5 (JAX's check_grads too: its directions are ours)
    check_grads(f, args, order=2, modes=("fwd", "rev"), rtol=1e-5, atol=1e-6, eps=1e-5)


def test_incomplete_function_derivatives_at_the_edges():
    # x^(a-1) at x == 0 with a == 1 is 1 (not 0 * log 0 = nan), at a == 2 it is 0.
    assert tg.grad(lambda x: tsp.gammainc(1.0, x))(0.0) == 1.0
    assert tg.grad(lambda x: tsp.gammainc(2.0, x))(0.0) == 0.0
    np.testing.assert_allclose(tg.grad(lambda x: tsp.betainc(1.0, 3.0, x))(0.0), 3.0, rtol=1e-14)
    np.testing.assert_allclose(tg.grad(lambda x: tsp.betainc(2.0, 1.0, x))(1.0), 2.0, rtol=1e-14)
    # far tail: x^(a-1) overflows and exp(-x) underflows, the density does not
    a, x = 800.0, 810.0
    want = np.exp((a - 1) * np.log(x) - x - ss.gammaln(a))
    np.testing.assert_allclose(tg.grad(lambda v: tsp.gammainc(a, v))(x), want, rtol=1e-10)


def test_jax_values_baked_in():
    # jax.grad(jax.scipy.special.gammainc, 1)(2.5, 1.3) and betainc's x-derivative (JAX 0.10.2)
    np.testing.assert_allclose(tg.grad(tsp.gammainc, 1)(2.5, 1.3), 0.3038757209668302,
                               rtol=1e-13)
    np.testing.assert_allclose(tg.grad(tsp.betainc, 2)(2.5, 0.7, 0.3), 0.2568913584684729,
                               rtol=1e-13)


def test_gammainc_shape_derivative_matches_jax():
    # jax.grad(jax.scipy.special.gammainc, 0)(a, x) (JAX 0.10.2, float64)
    np.testing.assert_allclose(tg.grad(tsp.gammainc, 0)(2.5, 1.3), -0.22962689833555922, rtol=1e-13)
    np.testing.assert_allclose(tg.grad(tsp.gammaincc, 0)(2.5, 1.3), 0.22962689833555922, rtol=1e-13)
    np.testing.assert_allclose(tg.grad(tsp.gammainc, 0)(0.5, 7.0), -0.0007366949101405715,
                               rtol=1e-12)


@pytest.mark.parametrize("fname,f,argnum,argname", [
    ("betainc", lambda a, b, x: tsp.betainc(a, b, x), 0, "a"),
    ("betainc", lambda a, b, x: tsp.betainc(a, b, x), 1, "b"),
])
def test_shape_parameter_derivatives_raise(fname, f, argnum, argname):
    args = (2.5, 1.3) if fname.startswith("gamma") else (2.5, 0.7, 0.3)
    # JAX's ValueError and words first, then ours naming the argument
    with pytest.raises(ValueError, match=f"^Betainc gradient with respect to a and b not "
                       f"supported. \\({fname}: .*argument '{argname}'"):
        tg.grad(f, argnum)(*args)


def test_vmap_matches_loop_and_jit_matches_eager():
    a = np.linspace(0.7, 4.0, 5)
    x = np.linspace(0.1, 3.0, 5)
    u = np.linspace(0.1, 0.9, 5)

    def f(a, x, u):
        return tsp.gammainc(a, x) + tsp.betainc(a, 2.0, u) * tsp.gamma(a) - tsp.betaln(a, x)

    df = tg.grad(f, 1)
    looped = np.array([df(ai, xi, ui) for ai, xi, ui in zip(a, x, u)])
    np.testing.assert_allclose(tg.vmap(df)(a, x, u), looped, rtol=1e-13)
    eager = f(a, x, u)
    for backend in ("numpy", "numba"):
        np.testing.assert_allclose(tg.jit(f, backend=backend)(a, x, u), eager, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(tg.vmap(df), backend="numpy")(a, x, u), looped,
                               rtol=1e-13)


def test_bad_input_names_function_and_argument():
    with pytest.raises(TypeError, match="gammainc: argument 'x'"):
        tsp.gammainc(1.0, np.array([1 + 2j]))
    with pytest.raises(TypeError, match="betainc: argument 'b'"):
        tsp.betainc(1.0, "b", 0.5)
