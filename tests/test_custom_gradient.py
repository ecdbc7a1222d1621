"""``tangentia.custom_gradient``: ``f(*args) -> (out, pullback)``, as
``jax.custom_gradient``.

Beyond JAX: differentiated eagerly, the pullback is the Python closure itself,
called with concrete NumPy cotangents during the backward pass (it may branch
on their values and print); under jit, vmap and higher-order differentiation
it is traced, and forward mode through it is its transpose.  Pullbacks that
differ from the true derivative make it visible which derivative was used;
true ones are checked against finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import custom_derivatives as cd

X = np.array([0.3, -1.2, 2.0])


def fd_jacobian(f, x, eps=1e-6):
    x = np.asarray(x, float)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1)


@tg.custom_gradient
def sin_times_two(x):
    return tnp.sin(x), lambda g: 2.0 * g      # a deliberately custom gradient


@tg.custom_gradient
def cube(x):
    return x ** 3, lambda g: 3.0 * x ** 2 * g  # the true one


def test_value_and_gradient_use_the_pullback():
    np.testing.assert_allclose(sin_times_two(0.5), np.sin(0.5))
    assert float(tg.grad(sin_times_two)(0.5)) == 2.0
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(sin_times_two(x) * x))(X),
                               np.sin(X) + 2.0 * X)
    assert cd.custom_gradient is tg.custom_gradient


def test_eager_pullback_is_a_python_closure(capsys):
    calls = []

    @tg.custom_gradient
    def f(x):
        def pullback(g):
            calls.append((type(g), np.shape(g)))
            print("pullback got", float(g))
            return 3.0 * g if float(g) > 0 else -1.0 * g   # Python branch on the value
        return x * x, pullback

    assert float(tg.grad(f)(0.5)) == 3.0
    assert len(calls) == 1 and issubclass(calls[0][0], np.ndarray) and calls[0][1] == ()
    assert float(tg.grad(lambda x: -2.0 * f(x))(0.5)) == 2.0    # g = -2: the other branch
    assert len(calls) == 2 and issubclass(calls[1][0], np.ndarray)
    _, pb = tg.vjp(f, 0.5)
    assert float(pb(np.array(4.0))[0]) == 12.0
    assert len(calls) == 3
    assert "pullback got -2.0" in capsys.readouterr().out
    # Traced (under jit) the Python branch cannot run: the usual error.
    with pytest.raises(tg.ConcretizationTypeError):
        tg.jit(tg.grad(f))(0.5)


def test_under_jit_and_vmap_the_pullback_is_traced():
    np.testing.assert_allclose(tg.jit(tg.grad(cube))(0.7), 3 * 0.49)
    np.testing.assert_allclose(tg.vmap(tg.grad(cube))(X), 3 * X ** 2)
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(sin_times_two)))(X), [2.0] * 3)
    np.testing.assert_allclose(tg.vmap(tg.jit(tg.grad(sin_times_two)))(X), [2.0] * 3)


def test_forward_mode_is_the_transpose_of_the_pullback():
    @tg.custom_gradient
    def f(x):                                     # J = [[1, 2], [0, 3]] as a pullback
        a = np.array([[1.0, 2.0], [0.0, 3.0]])
        return a @ x, lambda g: a.T @ g

    np.testing.assert_allclose(tg.jvp(f, (np.ones(2),), (np.array([1.0, -1.0]),))[1], [-1, -3])
    np.testing.assert_allclose(tg.jacfwd(f)(np.ones(2)), [[1, 2], [0, 3]])
    np.testing.assert_allclose(tg.jacfwd(sin_times_two)(X), 2 * np.eye(3))
    np.testing.assert_allclose(tg.jvp(cube, (0.5,), (2.0,))[1], 1.5)


def test_hessian_against_differences_of_grad():
    @tg.custom_gradient
    def energy(x):
        return tnp.sum(tnp.sin(x) * x), lambda g: g * (tnp.cos(x) * x + tnp.sin(x))

    h = tg.hessian(energy)(X)
    fd = fd_jacobian(tg.grad(energy), X)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tg.jit(tg.hessian(energy))(X), h, rtol=1e-12)
    np.testing.assert_allclose(tg.grad(tg.grad(cube))(0.5), 3.0)


def test_several_arguments_and_pytrees():
    @tg.custom_gradient
    def f(x, p):
        out = (x * p["a"], p["b"] * 2.0)

        def pullback(g):
            ga, gb = g
            return ga * p["a"], {"a": ga * x, "b": gb * 2.0}
        return out, pullback

    p = {"a": np.array(3.0), "b": np.array(-1.0)}
    loss = lambda x, p: tnp.sum(f(x, p)[0]) + f(x, p)[1]  # noqa: E731
    gx, gp = tg.grad(loss, argnums=(0, 1))(2.0, p)
    assert float(gx) == 3.0 and float(gp["a"]) == 2.0 and float(gp["b"]) == 2.0
    gx_j, gp_j = tg.jit(tg.grad(loss, argnums=(0, 1)))(2.0, p)
    assert float(gx_j) == 3.0 and float(gp_j["a"]) == 2.0


def test_a_function_that_does_not_return_a_pair():
    bad = tg.custom_gradient(lambda x: x)
    with pytest.raises(TypeError, match="custom_gradient function <lambda> must return a pair "
                                        r"\(output, pullback\)"):
        tg.grad(bad)(1.0)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2 ** 31 - 1))
def test_forward_mode_is_the_adjoint_of_the_pullback(seed):
    # <u, J v> from jvp (the transposed pullback) equals <J^T u, v> from the pullback.
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(3, 4))

    @tg.custom_gradient
    def f(x):
        return a @ tnp.tanh(x), lambda g: (1 - tnp.tanh(x) ** 2) * (a.T @ g)

    x, v, u = rng.normal(size=4), rng.normal(size=4), rng.normal(size=3)
    jv = tg.jvp(f, (x,), (v,))[1]
    jtu = tg.vjp(f, x)[1](u)[0]
    np.testing.assert_allclose(np.dot(u, jv), np.dot(jtu, v), rtol=1e-10, atol=1e-12)
