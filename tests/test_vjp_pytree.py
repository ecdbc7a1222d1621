"""The function ``vjp`` returns is a pytree (``tree_util.Partial`` over its
residuals, as JAX's), and ``ensure_compile_time_eval``.

A pytree pullback can be returned from ``jit``, stored as a custom_vjp
residual, passed through ``vmap`` and called inside a later ``grad``; each
result is checked against the pullback called directly and closed forms.
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.tree_util import Partial, tree_leaves, tree_map

X = np.array([0.3, -1.2, 2.0])
CT = np.array([1.0, -2.0, 0.5])


def f(x):
    return tnp.sin(x) * x


def df(x):  # the Jacobian's diagonal of f
    return np.cos(x) * x + np.sin(x)


def test_the_pullback_is_a_partial_whose_leaves_are_the_residuals():
    _, pb = tg.vjp(f, X)
    assert isinstance(pb, Partial)
    leaves = tree_leaves(pb)
    assert leaves and all(isinstance(x, np.ndarray) for x in leaves)
    np.testing.assert_allclose(pb(CT)[0], df(X) * CT)
    # Rebuilt from (transformed) leaves, it is the same function of new residuals.
    doubled = tree_map(lambda r: 2 * r, pb)
    assert isinstance(doubled, Partial)
    with pytest.raises(ValueError, match="vjp: the cotangent has structure"):
        pb((CT, CT))


def test_returned_from_jit():
    pb = tg.jit(lambda x: tg.vjp(f, x)[1])(X)
    np.testing.assert_allclose(pb(CT)[0], df(X) * CT, rtol=1e-12)
    pb2 = tg.jit(lambda x: tg.vjp(f, x)[1])(2 * X)   # the cached program, new residuals
    np.testing.assert_allclose(pb2(CT)[0], df(2 * X) * CT, rtol=1e-12)
    # And passed into jit as an argument.
    np.testing.assert_allclose(tg.jit(lambda p, c: p(c)[0])(pb, CT), df(X) * CT, rtol=1e-12)


def test_stored_as_a_custom_vjp_residual():
    @tg.custom_vjp
    def g(x):
        return f(x)

    def g_fwd(x):
        y, pb = tg.vjp(f, x)
        return y, pb

    g.defvjp(g_fwd, lambda pb, ct: pb(ct))
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(g(x) * CT))(X), df(X) * CT)
    np.testing.assert_allclose(tg.jit(tg.grad(lambda x: tnp.sum(g(x) * CT)))(X), df(X) * CT)
    np.testing.assert_allclose(tg.vmap(tg.grad(lambda x: g(x)))(X), df(X))


def test_called_inside_a_later_grad_and_vmap():
    _, pb = tg.vjp(f, X)
    # The pullback is linear in the cotangent: its gradient is the Jacobian column sum.
    np.testing.assert_allclose(tg.grad(lambda c: tnp.sum(pb(c)[0]))(CT), df(X))
    np.testing.assert_allclose(tg.vmap(lambda c: pb(c)[0])(np.eye(3)), np.diag(df(X)))
    # Differentiating with respect to the primal through the pullback: second order.
    d2 = tg.grad(lambda x: tnp.sum(tg.vjp(f, x)[1](CT)[0]))(X)
    np.testing.assert_allclose(d2, (2 * np.cos(X) - np.sin(X) * X) * CT, rtol=1e-12)


def test_ensure_compile_time_eval_computes_while_tracing():
    seen = []

    @tg.jit
    def h(x):
        with tg.ensure_compile_time_eval():
            n = tnp.sum(tnp.arange(4.0))              # concrete: 6.0
            seen.append(type(n))
            k = 2.0 if float(n) > 5 else 3.0          # Python control flow on it
        m = tnp.sum(tnp.arange(4.0))                  # staged as usual
        return x * k + m

    np.testing.assert_allclose(h(X), 2 * X + 6.0)
    assert issubclass(seen[0], np.ndarray)
    # Values that depend on the arguments are still traced inside it.
    @tg.jit
    def bad(x):
        with tg.ensure_compile_time_eval():
            return float(tnp.sum(x))

    with pytest.raises(tg.ConcretizationTypeError):
        bad(X)
    # Outside jit it changes nothing.
    with tg.ensure_compile_time_eval():
        np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(f(x)))(X), df(X))
