"""Derivatives at ties and kinks against JAX 0.10.2 (x64) and the closed forms (session 21): the
functions that are smooth through a tie of their arguments keep every order of derivative
there.  Each test here failed before its fix.
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


@pytest.mark.parametrize("name,base", [("logaddexp", np.e), ("logaddexp2", 2.0)])
def test_logaddexp_second_derivative_at_ties(name, base):
    """``logaddexp(x, y)`` is smooth through ``x == y``: its Hessian there is
    ``s (1 - s) [[1, -1], [-1, 1]]`` with ``s = 1/2`` (times ``log 2`` for logaddexp2).  Ours was
    0: the first derivative, through ``maximum`` and a ``where`` at ties, is piecewise constant
    (found by C's survey: the Hessian of a logistic loss at w = 0 was the zero matrix).  Against
    JAX and the closed form, at ties and off them, eagerly, under jit, in both modes."""
    f, jf = getattr(tnp, name), getattr(jnp, name)
    ln = np.log(base)
    pts = np.array([[0.0, 0.0], [-3.0, -3.0], [2.5, 2.5], [1e-300, 1e-300], [0.3, -1.2],
                    [-40.0, 2.0], [7.0, 7.0 + 1e-12]])

    def g(p):
        return f(p[0], p[1])

    def closed(p):
        s = 1.0 / (1.0 + base ** (p[1] - p[0]))
        return ln * s * (1.0 - s) * np.array([[1.0, -1.0], [-1.0, 1.0]])

    for k, p in enumerate(pts):
        want = closed(p)
        for h in (tg.hessian(g)(p), tg.jit(tg.hessian(g))(p), tg.jacrev(tg.jacfwd(g))(p)):
            np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-300, err_msg=str(p))
        if k < 4:   # (far from ties JAX's exp(x - out) loses digits: 5e-4 at (-40, 2))
            np.testing.assert_allclose(tg.hessian(g)(p),
                                       jax.hessian(lambda q: jf(q[0], q[1]))(p), rtol=1e-12)
        # first derivatives and values unchanged: JAX's
        np.testing.assert_allclose(tg.grad(g)(p), jax.grad(lambda q: jf(q[0], q[1]))(p),
                                   rtol=1e-14)
        np.testing.assert_allclose(g(p), jf(p[0], p[1]), rtol=1e-15)


def test_logistic_loss_hessian_at_zero():
    """The Hessian of a logistic regression's loss at w = 0 is ``X^T X / 4`` (C's case)."""
    X = np.random.default_rng(0).normal(size=(6, 3))

    def loss(w):
        return tnp.sum(tnp.logaddexp(0.0, X @ w))

    np.testing.assert_allclose(tg.hessian(loss)(np.zeros(3)), X.T @ X / 4, rtol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.hessian(loss))(np.zeros(3)), X.T @ X / 4, rtol=1e-12)


def test_logaddexp_ties_of_infinities():
    """At (inf, inf) the derivative splits evenly (1/2 each; JAX's 1 each sums to 2); at
    (-inf, -inf) it is NaN, as JAX's, for logaddexp2 too (it was NaN at (inf, inf) and 1/2 at
    (-inf, -inf) in forward mode, NaN in reverse)."""
    for f in (tnp.logaddexp, tnp.logaddexp2):
        for mode in (tg.grad(f, (0, 1)), tg.jit(tg.grad(f, (0, 1)))):
            assert [float(v) for v in mode(np.inf, np.inf)] == [0.5, 0.5]
            assert all(np.isnan(v) for v in mode(-np.inf, -np.inf))
        assert float(tg.jvp(f, (np.inf, np.inf), (1.0, 2.0))[1]) == 1.5
        assert np.isnan(tg.jvp(f, (-np.inf, -np.inf), (1.0, 2.0))[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logaddexp_nan_and_infinity_pairs(dtype):
    """Every pair of -inf, inf, NaN, -1, 0, 1: where either argument is NaN the value and every
    derivative is NaN, as JAX's (logaddexp2's jvp at (-inf, NaN) with tangents (1, 2) was 3,
    the derivative of ``x + y``, its NaN branch); elsewhere JAX's, except beside +inf against a
    finite value, where ours is the limit of the smooth derivative (1 and 0: JAX's custom jvp
    gives e.g. (1, e) at (inf, 1), a weight above 1) and at (inf, inf) (1/2 each, above).
    Eagerly, under jit, vmapped, forward and reverse."""
    vals = np.array([-np.inf, np.inf, np.nan, -1.0, 0.0, 1.0], dtype)
    a, b = (v.ravel() for v in np.meshgrid(vals, vals))
    ta, tb = np.ones_like(a), np.full_like(b, 2.0)
    nan = np.isnan(a) | np.isnan(b)
    pinf = ~nan & ((a == np.inf) ^ (b == np.inf))
    for name in ("logaddexp", "logaddexp2"):
        f, jf = getattr(tnp, name), getattr(jnp, name)
        want_v, want_t = jax.jvp(jf, (a, b), (ta, tb))
        want_g = jax.vmap(jax.grad(jf, (0, 1)))(a, b)
        # beside +inf: d/dx is 1 where x is +inf, else 0 (and likewise in y)
        want_t = np.where(pinf, np.where(a == np.inf, ta, tb), want_t)
        want_g = [np.where(pinf, (a == np.inf) * 1.0, want_g[0]),
                  np.where(pinf, (b == np.inf) * 1.0, want_g[1])]
        both = (a == np.inf) & (b == np.inf)   # the even split
        want_t = np.where(both, (ta + tb) / 2, want_t)
        want_g = [np.where(both, 0.5, w) for w in want_g]

        def jvp(a, b, ta, tb, f=f):
            return tg.jvp(f, (a, b), (ta, tb))

        grad = tg.vmap(tg.grad(f, (0, 1)))
        for (v, t), g in ((jvp(a, b, ta, tb), grad(a, b)),
                          (tg.jit(jvp)(a, b, ta, tb), tg.jit(grad)(a, b))):
            for got, want in ((v, want_v), (t, want_t), (g[0], want_g[0]), (g[1], want_g[1])):
                assert np.asarray(got).dtype == dtype
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
                # (atol: JAX's logaddexp2(-1., -1.) is -4.8e-17, -1.1e-8 in float32;
                # NumPy's and ours 0)
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-8, err_msg=name)
            assert np.isnan(np.asarray(t)[nan]).all() and np.isnan(np.asarray(g[0])[nan]).all()
