"""``tangentia.experimental.ode.odeint``: adaptive Dormand-Prince integration
with dense output and an adjoint (custom_vjp) reverse mode.

References used:

* values: ``scipy.integrate.odeint`` (LSODA) run at tight tolerances, and
  closed forms (exponential decay, the harmonic oscillator, a linear system
  with ``expm``);
* derivatives: central finite differences (``check_grads`` in reverse mode,
  and for the pendulum, finite differences of SciPy's solution);
* transformations: ``jit(f) == f``, ``vmap(f)(xs) == stack([f(x) for x in xs])``,
  in several orders with ``grad``.

Tolerances are loose enough (1e-9 .. 1e-6) and time spans short, except in the
pendulum test, which follows the reference example (ts = linspace(0, 10, 101)).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import odeint as sp_odeint
from scipy.linalg import expm

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.experimental.ode import odeint
from tangentia.test_util import check_grads
from tangentia.tree_util import tree_leaves, tree_map, tree_structure

TOL = dict(rtol=1e-10, atol=1e-10)


def assert_tree_close(got, want, rtol=1e-7, atol=1e-9):
    assert tree_structure(got) == tree_structure(want)
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def pend(y, t, b, c):
    """Damped pendulum: theta'' + b theta' + c sin(theta) = 0."""
    return tnp.stack([y[1], -b * y[1] - c * tnp.sin(y[0])])


def pend_np(y, t, b, c):
    return [y[1], -b * y[1] - c * np.sin(y[0])]


def sp_solve(f, y0, ts, *args):
    return sp_odeint(f, y0, ts, args=args, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# Values


def test_decay_closed_form_and_result_type():
    ts = np.linspace(0.0, 2.0, 7)
    ys = odeint(lambda y, t, k: -k * y, np.array([1.0, -2.0]), ts, 1.5)
    assert isinstance(ys, np.ndarray) and ys.shape == (7, 2) and ys.dtype == np.float64
    np.testing.assert_allclose(ys, np.exp(-1.5 * ts)[:, None] * np.array([1.0, -2.0]),
                               rtol=1e-7, atol=1e-10)
    np.testing.assert_array_equal(ys[0], [1.0, -2.0])


def test_pendulum_values_vs_scipy():
    y0, ts = np.array([np.pi - 0.1, 0.0]), np.linspace(0.0, 10.0, 101)
    ys = odeint(pend, y0, ts, 0.25, 5.0)
    ref = sp_solve(pend_np, y0, ts, 0.25, 5.0)
    np.testing.assert_allclose(ys, ref, rtol=1e-6, atol=1e-6)


def test_time_dependent_forcing_vs_scipy():
    def f(y, t, w):
        return tnp.stack([y[1], -y[0] - 0.1 * y[1] + tnp.cos(w * t)])

    y0, ts = np.array([0.5, 0.0]), np.array([0.0, 0.3, 1.1, 2.0, 4.5])
    ys = odeint(f, y0, ts, 1.3, **TOL)
    ref = sp_solve(lambda y, t, w: [y[1], -y[0] - 0.1 * y[1] + np.cos(w * t)], y0, ts, 1.3)
    np.testing.assert_allclose(ys, ref, rtol=1e-6, atol=1e-8)


def test_linear_system_vs_expm_with_default_tolerances():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 4)) * 0.5
    y0, ts = rng.standard_normal(4), np.linspace(0.0, 1.5, 4)
    ys = odeint(lambda y, t, A: A @ y, y0, ts, A)
    np.testing.assert_allclose(ys, np.stack([expm(A * t) @ y0 for t in ts]), rtol=1e-6,
                               atol=1e-8)


def test_dense_output_does_not_depend_on_output_grid():
    """Interpolated values at interior times agree with those of a coarse grid."""
    y0 = np.array([1.0, 0.0])
    fine = odeint(pend, y0, np.linspace(0.0, 3.0, 31), 0.2, 3.0, **TOL)
    coarse = odeint(pend, y0, np.array([0.0, 1.5, 3.0]), 0.2, 3.0, **TOL)
    np.testing.assert_allclose(fine[[0, 15, 30]], coarse, rtol=1e-7, atol=1e-9)
    ref = sp_solve(pend_np, y0, np.linspace(0.0, 3.0, 31), 0.2, 3.0)
    np.testing.assert_allclose(fine, ref, rtol=1e-7, atol=1e-8)


def test_pytree_state_and_args():
    def f(s, t, p):
        return {"x": s["v"], "v": -p["k"] * s["x"] - p["c"] * s["v"]}

    x0 = np.array([1.0, 0.5, -0.3])
    ts = np.linspace(0.0, 2.0, 5)
    out = odeint(f, {"x": x0, "v": np.zeros(3)}, ts, {"k": 2.0, "c": 0.1}, **TOL)
    assert set(out) == {"x", "v"} and out["x"].shape == (5, 3)
    for i in range(3):
        ref = sp_solve(lambda y, t: [y[1], -2.0 * y[0] - 0.1 * y[1]], [x0[i], 0.0], ts)
        np.testing.assert_allclose(out["x"][:, i], ref[:, 0], rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(out["v"][:, i], ref[:, 1], rtol=1e-7, atol=1e-9)


def test_scalar_state_int_inputs_and_single_time():
    ys = odeint(lambda y, t: -y, 1, np.array([0, 1, 2]))   # ints become floats
    assert ys.dtype == np.float64
    np.testing.assert_allclose(ys, np.exp(-np.arange(3.0)), rtol=1e-7)
    one = odeint(pend, np.array([1.0, 0.0]), np.array([0.5]), 0.1, 1.0)
    np.testing.assert_array_equal(one, [[1.0, 0.0]])


def test_float32_state_keeps_its_dtype():
    ts = np.linspace(0.0, 1.0, 3)
    ys = odeint(lambda y, t: -y, np.float32([1.0, 2.0]), ts, rtol=1e-5, atol=1e-5)
    assert ys.dtype == np.float32
    np.testing.assert_allclose(ys, np.exp(-ts)[:, None] * [1.0, 2.0], rtol=1e-4)
    g = tg.grad(lambda y0: tnp.sum(odeint(lambda y, t: -y, y0, ts, rtol=1e-5, atol=1e-5)))(
        np.float32([1.0, 2.0]))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.exp(-ts).sum(), rtol=1e-4)


def test_hmax_and_mxstep():
    ts = np.linspace(0.0, 1.0, 3)
    f = lambda y, t: -y  # noqa: E731
    np.testing.assert_allclose(odeint(f, 1.0, ts, hmax=0.01), np.exp(-ts), rtol=1e-8)
    # Too few steps allowed per interval: a time not reached is NaN, not an
    # extrapolation (JAX's extrapolated 0.82 for exp(-5) here); the next
    # interval goes on from the state reached.
    bad = np.asarray(odeint(f, 1.0, np.linspace(0.0, 10.0, 3), mxstep=2))
    assert bad[0] == 1.0 and np.isnan(bad[1:]).all()
    ts = np.array([0.0, 0.5, 0.500001, 0.6])
    some = np.asarray(odeint(f, 1.0, ts, mxstep=3))
    assert np.isnan(some[1])
    np.testing.assert_allclose(some[2:], np.exp(-ts[2:]), rtol=1e-3)
    # grad through an output not reached is NaN, not a wrong number.
    g = tg.grad(lambda y0: odeint(f, y0, np.linspace(0.0, 10.0, 3), mxstep=2)[1])(1.0)
    assert np.isnan(g)


# ---------------------------------------------------------------------------
# Derivatives


def test_grad_closed_form_decay():
    ts = np.linspace(0.0, 1.0, 3)

    def f(y0, k):
        return odeint(lambda y, t, k: -k * y, y0, ts, k, **TOL)[-1]

    gy, gk = tg.grad(f, (0, 1))(2.0, 0.7)
    np.testing.assert_allclose(gy, np.exp(-0.7), rtol=1e-8)
    np.testing.assert_allclose(gk, -2.0 * np.exp(-0.7), rtol=1e-8)


def test_check_grads_y0_args_and_times():
    ts = np.array([0.0, 0.4, 1.0])

    def f(y0, b, c, ts):
        return odeint(pend, y0, ts, b, c, **TOL)

    check_grads(f, (np.array([1.0, -0.5]), 0.3, 2.0, ts), 1, modes=("rev",), atol=1e-6,
                rtol=1e-6)


def test_time_gradient_closed_form():
    # y' = -y: d y(t_i) / d t_i = -y(t_i); d y(t_i) / d t_0 = +y(t_i).
    def f(ts):
        return tnp.sum(odeint(lambda y, t: -y, 1.0, ts, **TOL))

    ts = np.array([0.0, 0.5, 1.25])
    g = tg.grad(f)(ts)
    ys = np.exp(-ts)
    np.testing.assert_allclose(g, [ys[1] + ys[2], -ys[1], -ys[2]], rtol=1e-7)


def test_pytree_gradients():
    def f(s, t, p):
        return {"x": s["v"], "v": -p["k"] * s["x"] + tnp.cos(t) * p["c"]}

    ts = np.linspace(0.0, 1.0, 3)

    def g(x0, k, c):
        return odeint(f, {"x": x0, "v": tnp.zeros_like(x0)}, ts, {"k": k, "c": c}, **TOL)

    check_grads(g, (np.array([1.0, 2.0]), 2.0, np.array([0.5, -0.5])), 1, modes=("rev",),
                atol=1e-6, rtol=1e-6)


def test_gradient_wrt_closed_over_value():
    ts = np.linspace(0.0, 1.0, 4)

    def f(c):
        return tnp.sum(odeint(lambda y, t: -c * y, np.array([1.0, 2.0]), ts, **TOL))

    want = sum(-t * np.exp(-0.7 * t) * 3.0 for t in ts)
    np.testing.assert_allclose(tg.grad(f)(0.7), want, rtol=1e-7)


def test_integer_extra_argument_is_not_differentiated():
    def f(y0, k):
        return odeint(lambda y, t, k, n: -k * y * n, y0, np.array([0.0, 1.0]), k,
                      np.array(2), **TOL)[-1]

    np.testing.assert_allclose(f(1.0, 0.5), np.exp(-1.0), rtol=1e-8)
    np.testing.assert_allclose(tg.grad(f, 1)(1.0, 0.5), -2.0 * np.exp(-1.0), rtol=1e-7)


def test_second_order_reverse():
    def f(k):
        return odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 1.0]), k, **TOL)[-1]

    np.testing.assert_allclose(tg.grad(tg.grad(f))(2.0), np.exp(-2.0), rtol=1e-6)


def test_pendulum_gradient_vs_finite_differences():
    """grad of sum(odeint(pend, y0, ts, b, c)[-1] ** 2) w.r.t. (y0, b, c)."""
    y0, ts = np.array([np.pi - 0.1, 0.0]), np.linspace(0.0, 10.0, 101)
    b, c = 0.25, 5.0

    def loss(y0, b, c):
        return tnp.sum(odeint(pend, y0, ts, b, c)[-1] ** 2)

    def loss_sp(y0, b, c):
        return float(np.sum(sp_solve(pend_np, y0, ts, b, c)[-1] ** 2))

    g_y0, g_b, g_c = tg.grad(loss, (0, 1, 2))(y0, b, c)
    eps = 1e-5
    fd_y0 = [(loss_sp(y0 + eps * e, b, c) - loss_sp(y0 - eps * e, b, c)) / (2 * eps)
             for e in np.eye(2)]
    fd_b = (loss_sp(y0, b + eps, c) - loss_sp(y0, b - eps, c)) / (2 * eps)
    fd_c = (loss_sp(y0, b, c + eps) - loss_sp(y0, b, c - eps)) / (2 * eps)
    # Both sides carry the error of the default tolerances (1.4e-8 per step,
    # accumulated over 10 s of a pendulum started near the top): compare to
    # 1e-4 relative to the gradient's size.
    got = np.concatenate([g_y0, [g_b, g_c]])
    fd = np.array(fd_y0 + [fd_b, fd_c])
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-4 * np.max(np.abs(fd)))


def test_forward_mode_is_the_solver_jvp():
    # Beyond JAX (which has no forward mode for odeint): jvp and jacfwd, against
    # central differences of the solution.
    ts = np.array([0.0, 0.5, 1.0])
    f = lambda k: odeint(lambda y, t, k: -k * y, np.array([1.0, 2.0]), ts, k,  # noqa: E731
                         rtol=1e-10, atol=1e-10)
    eps = 1e-5
    fd = (np.asarray(f(0.7 + eps)) - np.asarray(f(0.7 - eps))) / (2 * eps)
    np.testing.assert_allclose(tg.jvp(f, (0.7,), (1.0,))[1], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tg.jacfwd(f)(0.7), fd, rtol=1e-6, atol=1e-8)


def test_hessian_of_a_loss_through_odeint():
    # Forward mode over the adjoint pass, against central differences of grad.
    def loss(p):
        ys = odeint(pend, np.array([2.0, 0.0]), np.array([0.0, 0.5, 1.0]), p[0], p[1],
                    rtol=1e-10, atol=1e-10)
        return tnp.sum(ys[-1] ** 2) + tnp.sum(ys[1])

    p = np.array([0.25, 5.0])
    h = tg.hessian(loss)(p)
    g = tg.grad(loss)
    eps = 1e-5
    fd = np.stack([(g(p + eps * e) - g(p - eps * e)) / (2 * eps) for e in np.eye(2)], axis=1)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6 * np.max(np.abs(fd)))
    np.testing.assert_allclose(h, h.T, rtol=1e-6)
    np.testing.assert_allclose(tg.jit(tg.hessian(loss))(p), h, rtol=1e-10)
    np.testing.assert_allclose(tg.vmap(tg.hessian(loss))(np.stack([p, p]))[1], h, rtol=1e-10)


def test_dynamics_may_return_another_container():
    # As JAX's odeint: only the flattened values must match the state (a list
    # of scalars for an array state here).
    ts = np.array([0.0, 0.5, 1.0])
    ys = odeint(lambda y, t, k: [y[1], -k * y[0]], np.array([1.0, 0.0]), ts, 4.0,
                rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ys[:, 0], np.cos(2 * ts), atol=1e-8)
    g = tg.grad(lambda k: odeint(lambda y, t, k: [y[1], -k * y[0]], np.array([1.0, 0.0]), ts,
                                 k, rtol=1e-10, atol=1e-10)[-1, 0])(4.0)
    # d/dk cos(sqrt(k) t) at t = 1: -sin(sqrt(k)) / (2 sqrt(k))
    np.testing.assert_allclose(g, -np.sin(2.0) / 4.0, rtol=1e-6)
    with pytest.raises(TypeError, match="same number of values once flattened"):
        odeint(lambda y, t: [y[0]], np.array([1.0, 0.0]), ts)


# ---------------------------------------------------------------------------
# jit and vmap, in several orders with grad

TS = np.linspace(0.0, 1.0, 4)


def _loss(y0, b, c):
    return tnp.sum(odeint(pend, y0, TS, b, c, rtol=1e-9, atol=1e-9)[-1] ** 2)


Y0S = np.array([[1.0, 0.0], [0.5, 0.2], [-1.0, 0.3]])
BS = np.array([0.1, 0.2, 0.3])


def _loop(f, *xs):
    outs = [f(*[x[i] for x in xs]) for i in range(len(xs[0]))]
    return tree_map(lambda *a: np.stack(a), *outs)


def test_jit_matches_eager():
    f = lambda y0, b: odeint(pend, y0, TS, b, 2.0, rtol=1e-9, atol=1e-9)  # noqa: E731
    assert_tree_close(tg.jit(f)(Y0S[1], 0.2), f(Y0S[1], 0.2), rtol=1e-12, atol=1e-14)


def test_vmap_over_state_args_and_times():
    f = lambda y0, b: odeint(pend, y0, TS, b, 2.0, rtol=1e-9, atol=1e-9)  # noqa: E731
    assert_tree_close(tg.vmap(f)(Y0S, BS), _loop(f, Y0S, BS), rtol=1e-10, atol=1e-12)
    assert_tree_close(tg.vmap(f, (0, None))(Y0S, 0.2), _loop(lambda y: f(y, 0.2), Y0S),
                      rtol=1e-10, atol=1e-12)
    T = np.stack([TS, 2 * TS])
    h = lambda ts: odeint(lambda y, t: -y, 1.0, ts, rtol=1e-9, atol=1e-9)  # noqa: E731
    np.testing.assert_allclose(tg.vmap(h)(T), np.exp(-T), rtol=1e-7)


@pytest.mark.parametrize("order", ["jit_grad", "grad_jit", "vmap_grad", "grad_vmap",
                                   "jit_vmap_grad", "vmap_jit_grad"])
def test_grad_jit_vmap_orders(order):
    g = tg.grad(_loss, (0, 1))
    want = _loop(lambda y, b: g(y, b, 2.0), Y0S, BS)
    if order == "jit_grad":
        got = _loop(lambda y, b: tg.jit(g)(y, b, 2.0), Y0S, BS)
    elif order == "grad_jit":
        got = _loop(lambda y, b: tg.grad(tg.jit(_loss), (0, 1))(y, b, 2.0), Y0S, BS)
    elif order == "vmap_grad":
        got = tg.vmap(g, (0, 0, None))(Y0S, BS, 2.0)
    elif order == "grad_vmap":
        got = tg.grad(lambda y, b: tnp.sum(tg.vmap(_loss, (0, 0, None))(y, b, 2.0)),
                      (0, 1))(Y0S, BS)
    elif order == "jit_vmap_grad":
        got = tg.jit(tg.vmap(g, (0, 0, None)))(Y0S, BS, 2.0)
    else:
        got = tg.vmap(tg.jit(g), (0, 0, None))(Y0S, BS, 2.0)
    assert_tree_close(got, want, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("ts", [np.array([0.0, 1.0, 1.0]), np.array([0.0, 2.0, 1.0])])
def test_non_increasing_times(ts):
    with pytest.raises(ValueError, match=r"odeint\(pend, \.\.\.\): the times t must be strictly "
                                         r"increasing, but t\[2\] = 1\.0"):
        odeint(pend, np.array([1.0, 0.0]), ts, 0.1, 1.0)
    # also when t is being differentiated
    with pytest.raises(ValueError, match="strictly increasing"):
        tg.grad(lambda ts: tnp.sum(odeint(pend, np.array([1.0, 0.0]), ts, 0.1, 1.0)))(ts)


def test_dynamics_structure_mismatch():
    def listy(y, t):  # three values for a state of two (another container is fine)
        return [y[1], -y[0], y[0]]

    with pytest.raises(TypeError, match=r"dynamics function listy\(y, t, \*args\) must return .*"
                                        r"y0 is f64\[2\] and listy returned \[f64\[\], f64\[\], "
                                        r"f64\[\]\]"):
        odeint(listy, np.array([1.0, 0.0]), TS)


def test_dynamics_shape_mismatch():
    def shrink(y, t):
        return {"a": y["a"][:1]}

    with pytest.raises(TypeError, match=r"y0 is \{'a': f64\[2\]\} and shrink returned "
                                        r"\{'a': f64\[1\]\}"):
        odeint(shrink, {"a": np.array([1.0, 0.0])}, TS)


def test_bad_arguments():
    with pytest.raises(TypeError, match="extra arguments \\*args must be arrays"):
        odeint(lambda y, t, f: f(y), 1.0, TS, np.sin)
    with pytest.raises(ValueError, match="non-empty 1-d array"):
        odeint(lambda y, t: -y, 1.0, np.ones((2, 2)))


def test_dynamics_with_custom_rules_compile_once():
    # The flat rules a custom_jvp/custom_vjp call makes are new closures at every
    # call; their stable key lets odeint reuse its compiled solve across calls.
    from tangentia.experimental import ode as ode_mod
    y0, ts = np.array([1.0, 2.0]), np.linspace(0.0, 1.0, 3)

    @tg.custom_vjp
    def h(y):
        return tnp.sin(y)

    h.defvjp(lambda y: (tnp.sin(y), tnp.cos(y)), lambda c, g: (c * g,))
    for dyn in (lambda y, t: -tg.nn.softplus(y), lambda y, t: h(y)):
        odeint(dyn, y0, ts)
        n = len(ode_mod._DYNAMICS)
        first = odeint(dyn, y0, ts)
        again = odeint(dyn, y0, ts)
        assert len(ode_mod._DYNAMICS) == n
        np.testing.assert_array_equal(first, again)
