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
