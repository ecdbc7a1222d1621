"""Eager ``grad`` transposes the tangent equations as linearization recorded
them (``core.Eqn``s whose known inputs are held inline, in a ``core.Jaxpr``
marked ``inline``), without building a program; ``vjp`` and ``linearize``
build the program from the same equations (``LinearBuilder.build``).  Both paths must give
the same numbers for every kind of value a recorded equation can hold: Python
and NumPy scalars, plain and tangentia arrays, lists, values of outer
interpreters (``jit``, ``vmap``), and equations with several outputs or
carried programs (custom_vjp, cond, scan).  (That the records leave no
reference cycles is checked in test_custom_derivatives.)"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax


C_ARRAY = np.array([0.5, -1.5, 2.0])


def mixed(v):
    """Tangent operations with constants of every kind."""
    c = tnp.arange(3.0) + 1.0                      # a tangentia array (ArrayImpl)
    y = v * np.float32(1.5) + v * 2 + v * True     # NumPy, Python int and bool scalars
    y = y * C_ARRAY + tnp.multiply(y, [1.0, 0.5, 0.25])  # a plain array, a list
    y = tnp.sin(y) * c - v / np.float64(3.0)
    return tnp.sum(y * y) + tnp.sum(tnp.exp(-v) * c)


def mixed_grad(v):
    """The gradient of ``mixed``, by hand."""
    c = np.arange(3.0) + 1.0
    k = (1.5 + 2 + 1) * (C_ARRAY + np.array([1.0, 0.5, 0.25]))
    y = np.sin(k * v) * c - v / 3.0
    return 2 * y * (np.cos(k * v) * c * k - 1 / 3.0) - np.exp(-v) * c


def via_program(f, x):
    """The gradient through the built program (vjp's pullback)."""
    out, pullback = tg.vjp(f, x)
    return pullback(tnp.ones_like(out))[0]


X = np.array([0.3, -0.7, 1.1])


def test_records_and_program_agree_for_every_kind_of_constant():
    g = tg.grad(mixed)(X)
    np.testing.assert_array_equal(g, via_program(mixed, X))
    np.testing.assert_allclose(g, mixed_grad(X), rtol=1e-12)
    # linearize builds the program too; its transpose is the gradient
    _, f_jvp = tg.linearize(mixed, X)
    jac = np.array([f_jvp(e) for e in np.eye(3)])
    np.testing.assert_allclose(jac, g, rtol=1e-12)


def test_values_of_outer_interpreters_in_records():
    # under jit and vmap the residuals are tracers of the outer interpreter
    np.testing.assert_allclose(tg.jit(tg.grad(mixed))(X), mixed_grad(X), rtol=1e-12)
    xs = np.stack([X, 2 * X, -X])
    np.testing.assert_allclose(tg.vmap(tg.grad(mixed))(xs),
                               np.stack([mixed_grad(x) for x in xs]), rtol=1e-12)
    np.testing.assert_allclose(tg.jit(lambda x: via_program(mixed, x))(X), mixed_grad(X),
                               rtol=1e-12)


@tg.custom_vjp
def my_sin(x):
    return tnp.sin(x)


my_sin.defvjp(lambda x: (tnp.sin(x), tnp.cos(x)), lambda c, g: (c * g,))


def carried(v):
    """Equations with several outputs (custom_vjp's linear step) and carried
    programs (cond, scan) recorded among the others."""
    y = my_sin(v) * 2.0
    y = lax.cond(tnp.sum(v) > 0, lambda a: a * a, lambda a: -a, y)

    def body(carry, xi):
        return carry * 0.5 + xi * carry, carry

    last, ys = lax.scan(body, 1.0, y)
    return last + tnp.sum(ys * v)


def test_multiple_outputs_and_carried_programs_in_records():
    for x in (X, -X):  # both branches of the cond
        g = tg.grad(carried)(x)
        np.testing.assert_allclose(g, via_program(carried, x), rtol=1e-12)
        eps = 1e-6
        fd = np.array([(carried(x + eps * e) - carried(x - eps * e)) / (2 * eps)
                       for e in np.eye(3)])
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3))
def test_grad_equals_the_built_programs_transpose(xs):
    x = np.array(xs)
    np.testing.assert_array_equal(tg.grad(mixed)(x), via_program(mixed, x))
    np.testing.assert_allclose(tg.grad(mixed)(x), mixed_grad(x), rtol=1e-10, atol=1e-12)


def test_a_nonlinear_custom_jvp_rule_is_named_from_records():
    @tg.custom_jvp
    def f(x):
        return tnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0] * t[0]))
    with pytest.raises(TypeError, match="custom_jvp rule of f is not linear"):
        tg.grad(lambda x: tnp.sum(f(x)))(X)



def test_transposes_sum_broadcast_and_promoted_cotangents_back_to_their_input():
    # The transposes of mul/add/sub hand a linear input its cotangent as is when
    # it already has that input's type, and sum/cast it down otherwise: a
    # float32 vector and a float64 scalar meeting a float64 matrix, on both sides.
    a = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    v32 = np.array([0.3, -0.7, 1.1], np.float32)

    def f(v, s):
        y = a * v + s * a - v * s        # mul with the linear input on the right and the left
        return tnp.sum(tnp.sin(y) * a) + tnp.sum(v - s)

    gv, gs = tg.grad(f, argnums=(0, 1))(v32, 0.8)
    pv, ps = tg.vjp(f, v32, 0.8)[1](1.0)
    assert gv.dtype == np.float32 and gv.shape == (3,) and np.shape(gs) == ()
    np.testing.assert_array_equal(gv, pv)
    np.testing.assert_array_equal(gs, ps)
    v, s = v32.astype(np.float64), 0.8
    c = np.cos(a * v + s * a - v * s) * a     # d/dy of the first sum
    np.testing.assert_allclose(gv, (c * (a - s)).sum(0) + 1, rtol=1e-6)
    np.testing.assert_allclose(gs, (c * (a - v)).sum() - 3, rtol=1e-6)  # (v * s is float32)
