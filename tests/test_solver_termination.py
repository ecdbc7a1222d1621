"""Solvers that always stop and say when they did not converge.

* ``odeint`` on a solution that blows up in finite time, on NaN-producing
  dynamics and on a stiff problem returns (within a time bound) under eager,
  ``jit``, ``grad``, ``jacfwd`` and ``vmap``, with NaN where JAX's odeint gives
  NaN and JAX's values (within tolerance) where both are finite;
* ``odeint`` with dynamics written in SciPy's ``(t, y)`` order gets a hint;
* ``fixed_point`` that stops at ``max_iter`` warns and reports its residual;
* ``minimize``'s ``success``/``status`` agree with SciPy's on the same problems.

References: ``jax.experimental.ode.odeint`` and ``jax.scipy.optimize.minimize``
(JAX 0.10.2, float64), ``scipy.optimize.minimize``, closed forms.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.experimental.ode import odeint

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.experimental.ode import odeint as jax_odeint  # noqa: E402


def lotka_volterra(m):
    def f(y, t, a, b, c, d):
        return m.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])
    return f


# With b < 0 both populations feed each other: the solution from (1, 1)
# blows up in finite time (between t = 1.1 and 1.2).
BLOWUP = np.array([0.7893, -0.3308, 0.1908, 1.2664])
TS = np.linspace(0.0, 2.0, 21)


def assert_like_jax(got, want, rtol=1e-6, atol=1e-9):
    """The same NaN pattern as JAX, and JAX's values where finite."""
    got, want = np.asarray(got), np.asarray(want)
    assert_same(np.isnan(got), np.isnan(want))
    fin = ~np.isnan(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol)


def assert_same(got, want):
    # plain ndarrays: assert_array_equal on an Array holding NaN trips over its
    # all() method (TypeError "return arrays must be of ArrayType")
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.fixture(scope="module")
def jax_blowup():
    return np.asarray(jax_odeint(lotka_volterra(jnp), jnp.array([1.0, 1.0]), TS, *BLOWUP))


# ---------------------------------------------------------------------------
# odeint: finite-time blow-up


@pytest.mark.timeout(60)
def test_blowup_returns_nan_like_jax(jax_blowup):
    # Before: the step size crept down to 1e-170, accepted steps no longer
    # advanced t and the loop (mxstep=inf) never ended.
    ys = np.asarray(odeint(lotka_volterra(tnp), np.array([1.0, 1.0]), TS, *BLOWUP))
    assert np.isnan(jax_blowup).any() and not np.isnan(jax_blowup[:12]).any()
    assert_like_jax(ys, jax_blowup)
    ys_jit = tg.jit(lambda p: odeint(lotka_volterra(tnp), np.array([1.0, 1.0]), TS, *p))(BLOWUP)
    assert_same(ys_jit, ys)


@pytest.mark.timeout(60)
def test_blowup_closed_form():
    # y' = y^2, y(0) = 1: y = 1 / (1 - t), infinite at t = 1.
    ts = np.array([0.0, 0.5, 0.9, 0.99, 1.5, 2.0])
    ys = np.asarray(odeint(lambda y, t: y * y, 1.0, ts))
    np.testing.assert_allclose(ys[:4], 1.0 / (1.0 - ts[:4]), rtol=1e-6)
    assert np.isnan(ys[4:]).all()
    want = np.asarray(jax_odeint(lambda y, t: y * y, jnp.asarray(1.0), ts))
    assert_like_jax(ys, want)


@pytest.mark.timeout(60)
def test_blowup_grad_is_nan_like_jax():
    # y' = k y^2, y(0) = 1: y = 1 / (1 - k t), dy/dk = t / (1 - k t)^2.  Past the
    # blow-up the adjoint pass starts from NaN states: NaN gradients, as JAX's.
    ts = np.array([0.0, 0.5, 0.9, 1.5])

    def loss(m, ode, ts):
        return lambda k: m.sum(ode(lambda y, t, k: k * y * y, m.asarray(1.0), ts, k)[:3])
    g = float(tg.grad(loss(tnp, odeint, ts))(1.0))
    want = float(jax.grad(loss(jnp, jax_odeint, ts))(1.0))
    assert np.isnan(want) and np.isnan(g)
    # Up to the last finite time the gradient is the closed form.
    g = float(tg.grad(loss(tnp, odeint, ts[:3]))(1.0))
    np.testing.assert_allclose(g, 0.5 / 0.5 ** 2 + 0.9 / 0.1 ** 2, rtol=1e-5)
    # Lotka-Volterra, under jit too: every gradient NaN, in bounded time.
    def lv(p):
        return tnp.sum(odeint(lotka_volterra(tnp), np.array([1.0, 1.0]), TS, *p)[:5])
    assert np.isnan(np.asarray(tg.grad(lv)(BLOWUP))).all()
    assert np.isnan(np.asarray(tg.jit(tg.grad(lv))(BLOWUP))).all()


@pytest.mark.timeout(60)
def test_blowup_jacfwd():
    # Forward mode: NaN tangents from the first time not reached on, and before
    # it the derivatives of the finite part (central differences).
    def sol(p, ts=TS):
        return np.asarray(odeint(lotka_volterra(tnp), np.array([1.0, 1.0]), ts, *p))
    J = np.asarray(tg.jacfwd(
        lambda p: odeint(lotka_volterra(tnp), np.array([1.0, 1.0]), TS, *p))(BLOWUP))
    assert J.shape == (21, 2, 4)
    assert np.isnan(J[12:]).all() and not np.isnan(J[:12]).any()
    eps = 1e-6
    fd = np.stack([(sol(BLOWUP + eps * e, TS[:12]) - sol(BLOWUP - eps * e, TS[:12])) / (2 * eps)
                   for e in np.eye(4)], axis=-1)
    np.testing.assert_allclose(J[:12], fd, rtol=1e-4, atol=1e-4)


@pytest.mark.timeout(60)
def test_blowup_vmap(jax_blowup):
    # One member of the batch blows up, the others do not (y0 = 0 stays at 0).
    y0s = np.array([[1.0, 1.0], [0.0, 0.0], [0.5, 0.5]])
    ys = np.asarray(tg.vmap(lambda y0: odeint(lotka_volterra(tnp), y0, TS, *BLOWUP))(y0s))
    loop = np.stack([odeint(lotka_volterra(tnp), y0, TS, *BLOWUP) for y0 in y0s])
    np.testing.assert_allclose(ys, loop, rtol=1e-12, atol=1e-12)
    assert_like_jax(ys[0], jax_blowup)
    assert_same(ys[1], 0.0)
    want = np.asarray(jax.vmap(lambda y0: jax_odeint(lotka_volterra(jnp), y0, TS, *BLOWUP))(
        jnp.asarray(y0s)))
    assert_like_jax(ys, want)


# ---------------------------------------------------------------------------
# odeint: NaN-producing dynamics


def _count_calls(f):
    """``f`` and a list whose length counts its evaluations (also inside loops)."""
    calls = []

    def counted(y, t, *args):
        tg.debug.callback(lambda: calls.append(1))
        return f(y, t, *args)
    return counted, calls


@pytest.mark.timeout(60)
def test_nan_dynamics_stop_at_once():
    # func returns NaN past t = 0.5: the first step that sees it fails, and every
    # later output is NaN without further steps.  (Before: each failing step shrank
    # h by 0.9 until it reached 0, thousands of evaluations.)  JAX's odeint stops
    # too, but extrapolates the last step's polynomial to the remaining times
    # (finite numbers that are not the solution); ours are NaN.
    f, calls = _count_calls(lambda y, t: tnp.where(t > 0.5, np.nan, -y))
    ts = np.linspace(0.0, 1.0, 5)
    ys = np.asarray(odeint(f, 1.0, ts))
    np.testing.assert_allclose(ys[:2], np.exp(-ts[:2]), rtol=1e-7)
    assert np.isnan(ys[2:]).all()
    assert len(calls) < 200
    want = np.asarray(jax_odeint(lambda y, t: jnp.where(t > 0.5, jnp.nan, -y),
                                 jnp.asarray(1.0), ts))
    np.testing.assert_allclose(ys[:2], want[:2], rtol=1e-7)


@pytest.mark.timeout(60)
def test_nan_dynamics_transformations():
    # sqrt of a state that crosses zero: NaN once y < 0 is reached, under every
    # transformation; values before it agree with JAX's.
    def f(y, t, k):
        return -tnp.sqrt(y) - k
    ts = np.linspace(0.0, 3.0, 7)
    ys = np.asarray(odeint(f, 1.0, ts, 0.1))
    want = np.asarray(jax_odeint(lambda y, t, k: -jnp.sqrt(y) - k, jnp.asarray(1.0), ts, 0.1))
    np.testing.assert_allclose(ys[:4], want[:4], rtol=1e-6)
    assert np.isnan(ys[4:]).all()
    assert_same(tg.jit(lambda k: odeint(f, 1.0, ts, k))(0.1), ys)
    ks = np.array([0.1, 0.5])
    assert_same(tg.vmap(lambda k: odeint(f, 1.0, ts, k))(ks),
                                  np.stack([odeint(f, 1.0, ts, k) for k in ks]))
    d = np.asarray(tg.jacfwd(lambda k: odeint(f, 1.0, ts, k))(0.1))
    assert np.isnan(d[4:]).all() and not np.isnan(d[:4]).any()
    g = np.asarray(tg.grad(lambda k: odeint(f, 1.0, ts, k)[-1])(0.1))
    assert np.isnan(g)


@pytest.mark.timeout(60)
def test_nan_initial_state_and_no_step():
    ts = np.array([0.0, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero warning from the interpolation
        ys = np.asarray(odeint(lambda y, t: -y, np.array([1.0, np.nan]), ts))
        assert np.isnan(ys[1:]).all()
        # No step allowed: nothing to interpolate, NaN as JAX's.
        ys = np.asarray(odeint(lambda y, t: -y, 1.0, ts, mxstep=0))
    assert_like_jax(ys, jax_odeint(lambda y, t: -y, jnp.asarray(1.0), ts, mxstep=0))


# ---------------------------------------------------------------------------
# odeint: a stiff problem (explicit steps, many of them, but it finishes)


@pytest.mark.timeout(60)
def test_normal_solution_like_jax():
    # The new stopping tests change nothing where the solution is smooth.
    p = np.array([1.1, 0.4, 0.4, 0.1])
    ts = np.linspace(0.0, 10.0, 21)
    ys = np.asarray(odeint(lotka_volterra(tnp), np.array([1.0, 1.0]), ts, *p))
    want = np.asarray(jax_odeint(lotka_volterra(jnp), jnp.array([1.0, 1.0]), ts, *p))
    assert not np.isnan(want).any()
    assert_like_jax(ys, want, rtol=1e-6)


@pytest.mark.timeout(60)
def test_stiff_van_der_pol_like_jax():
    def vdp(m):
        return lambda y, t, mu: m.stack([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])
    ts = np.linspace(0.0, 3.0, 4)
    y0 = np.array([2.0, 0.0])
    ys = np.asarray(odeint(vdp(tnp), y0, ts, 50.0, rtol=1e-6, atol=1e-6))
    want = np.asarray(jax_odeint(vdp(jnp), jnp.asarray(y0), ts, 50.0, rtol=1e-6, atol=1e-6))
    assert not np.isnan(want).any()
    assert_like_jax(ys, want, rtol=1e-4, atol=1e-6)


@pytest.mark.timeout(60)
def test_stiff_adjoint_fails_with_nan_forward_mode_works():
    # The adjoint pass integrates y backwards in time, where van der Pol's limit
    # cycle repels (errors grow like exp(mu t)): the backward solve blows up and
    # fails, so reverse mode gives NaN, as JAX's does.  Forward mode never
    # integrates backwards: it matches central differences.
    def vdp(m):
        return lambda y, t, mu: m.stack([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])
    ts = np.linspace(0.0, 3.0, 4)
    y0 = np.array([2.0, 0.0])

    def last(m, ode, mu, tol=1e-6):
        return ode(vdp(m), m.asarray(y0), ts, mu, rtol=tol, atol=tol)[-1, 0]
    g = float(tg.grad(lambda mu: last(tnp, odeint, mu))(10.0))
    want = float(jax.grad(lambda mu: last(jnp, jax_odeint, mu))(10.0))
    assert np.isnan(want) and np.isnan(g)
    d = float(tg.jacfwd(lambda mu: last(tnp, odeint, mu))(10.0))
    eps = 1e-4
    fd = (float(last(tnp, odeint, 10.0 + eps, 1e-10))
          - float(last(tnp, odeint, 10.0 - eps, 1e-10))) / (2 * eps)
    np.testing.assert_allclose(d, fd, rtol=1e-4)


# ---------------------------------------------------------------------------
# odeint: dynamics in SciPy's (t, y) order


def test_scipy_argument_order_hint():
    ts = np.linspace(0.0, 1.0, 3)
    y0 = np.array([1.0, 0.0])

    def oscillator(t, y):  # SciPy's solve_ivp order
        return tnp.stack([y[1], -y[0]])
    # y[1] on the scalar time: the original error first, then the hint.
    with pytest.raises(IndexError, match=r"(?s)^Too many indices.*oscillator\(y, t, \*args\), "
                                         r"state first.*solve_ivp order \(t, y\)"):
        odeint(oscillator, y0, ts)
    # An output of another shape than y0 (the time's): the same hint.
    with pytest.raises(TypeError, match=r"(?s)^odeint: the dynamics function.*f64\[\].*"
                                        r"solve_ivp order \(t, y\)"):
        odeint(lambda t, y, k: -k * y, y0, ts, 2.0)
    # The hint swap fixes it.
    ys = np.asarray(odeint(lambda y, t: oscillator(t, y), y0, ts))
    np.testing.assert_allclose(ys[:, 0], np.cos(ts), rtol=1e-7)
    # Errors about Python control flow keep their own message only.
    with pytest.raises(TypeError) as info:
        odeint(lambda y, t: -y if y[0] > 0 else y, y0, ts)
    assert "solve_ivp" not in str(info.value)


# ---------------------------------------------------------------------------
# fixed_point: non-convergence is reported


from tangentia.experimental.fixed_point import FixedPointInfo, fixed_point  # noqa: E402


def affine(a, x):
    return a * x + 1.0


def test_fixed_point_not_converged_warns():
    # x_n = 2^n - 1 diverges: after 50 iterations x = 2^50 - 1, last change 2^49.
    with pytest.warns(RuntimeWarning, match=r"fixed_point\(affine, \.\.\.\): did not converge: "
                                            r"it stopped after max_iter=50 iterations with the "
                                            r"last change max\|x_new - x\| = 5\.63e\+14 above "
                                            r"tol=1e-10") as record:
        x = fixed_point(affine, 2.0, 0.0, max_iter=50)
    assert float(x) == 2.0 ** 50 - 1
    assert record[0].filename == __file__  # points at the caller's line
    with pytest.warns(RuntimeWarning, match="did not converge"):
        x, info = fixed_point(affine, 2.0, 0.0, max_iter=50, return_info=True)
    assert isinstance(info, FixedPointInfo)
    assert int(info.iterations) == 50 and float(info.residual) == 2.0 ** 49
    assert not bool(info.converged)


def test_fixed_point_converged_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, info = fixed_point(affine, 0.5, 0.0, return_info=True)
        # tol < 0 asks for exactly max_iter iterations: nothing to report.
        y = fixed_point(affine, 0.5, 0.0, tol=-1.0, max_iter=7)
    # x_n = 2 - 2^(1-n): the change 2^(1-n) falls below 1e-10 at n = 35.
    assert float(x) == 2.0 - 2.0 ** -34
    assert int(info.iterations) == 35 and bool(info.converged)
    assert float(info.residual) == 2.0 ** -34
    assert float(y) == 2.0 - 2.0 ** -6


def test_fixed_point_nan_stops_at_once():
    with pytest.warns(RuntimeWarning, match=r"did not converge: iterate 1 was NaN"):
        x, info = fixed_point(lambda a, x: tnp.log(x - a), 2.0, 1.0, return_info=True)
    assert np.isnan(float(x)) and int(info.iterations) == 1 and np.isnan(float(info.residual))


def test_fixed_point_warns_under_grad_and_for_the_adjoint():
    # grad of the fixed point of x = a x + 1 (x* = 1 / (1 - a)): 1 / (1 - a)^2.
    g = tg.grad(lambda a: fixed_point(affine, a, 0.0))(0.5)
    np.testing.assert_allclose(float(g), 4.0, rtol=1e-8)
    with pytest.warns(RuntimeWarning) as record:
        tg.grad(lambda a: fixed_point(affine, a, 0.0, max_iter=20))(2.0)
    msgs = [str(w.message) for w in record]
    assert any(m.startswith("fixed_point(affine, ...): did not converge") for m in msgs)
    assert any(m.startswith("fixed_point(adjoint of affine, ...): did not converge")
               for m in msgs)


def test_fixed_point_info_under_jit_and_vmap():
    # Traced values cannot warn; the info says it instead, per problem.
    def solve(a):
        return fixed_point(affine, a, 0.0, max_iter=50, return_info=True)
    x, info = tg.jit(solve)(2.0)
    assert float(x) == 2.0 ** 50 - 1 and int(info.iterations) == 50
    assert not bool(info.converged)
    xs, infos = tg.vmap(solve)(np.array([0.5, 2.0]))
    np.testing.assert_allclose(np.asarray(xs), [2.0, 2.0 ** 50 - 1], rtol=1e-10)
    assert np.asarray(infos.iterations).tolist() == [35, 50]
    assert np.asarray(infos.converged).tolist() == [True, False]
    assert np.asarray(infos.residual).tolist() == [2.0 ** -34, 2.0 ** 49]


# ---------------------------------------------------------------------------
# minimize: success and status against SciPy's


import scipy.optimize as sp_optimize  # noqa: E402
import jax.scipy.optimize as jax_optimize  # noqa: E402
import tangentia.scipy.optimize as tg_optimize  # noqa: E402

LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def _weighted_quadratic(m):
    return lambda x: m.sum((x - 3.0) ** 2 * m.arange(1.0, 4.0))


def _booth(m):
    return lambda x: (x[0] + 2 * x[1] - 7) ** 2 + (2 * x[0] + x[1] - 5) ** 2


def _rosenbrock(m):
    return lambda x: m.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _unbounded(m):
    return lambda x: -m.sum(x)


def _nan_at_start(m):
    return lambda x: m.sum(m.sqrt(x))


# SciPy's BFGS status codes and ours (JAX's): 0 and 1 are the same; SciPy's 2
# (line-search failure, "precision loss") and 3 (NaN) are JAX's line-search
# failures 3 (zoom failed), 4 (saddle point) and 5 (line-search iterations).
SCIPY_TO_OURS = {0: {0}, 1: {1}, 2: {3, 4, 5}, 3: {3, 4, 5}}

PROBLEMS = [  # (objective, x0, options, SciPy's status)
    (_weighted_quadratic, np.zeros(3), {}, 0),
    (_booth, np.zeros(2), {}, 0),
    (_weighted_quadratic, np.zeros(3), {"maxiter": 1}, 1),
    (_rosenbrock, np.array([-1.2, 1.0]), {"maxiter": 5}, 1),
    (_unbounded, np.zeros(2), {}, 2),
    (_nan_at_start, np.array([-1.0, 1.0]), {}, 3),
]


@pytest.mark.parametrize("make, x0, options, scipy_status", PROBLEMS,
                         ids=["quadratic", "booth", "quadratic-maxiter", "rosenbrock-maxiter",
                              "unbounded", "nan"])
def test_bfgs_success_and_status_like_scipy(make, x0, options, scipy_status):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN objectives
        ref = sp_optimize.minimize(make(np), x0, method="BFGS",
                                   jac=lambda x, g=jax.jit(jax.grad(make(jnp))): np.asarray(g(x)),
                                   options=options)
        ours = tg_optimize.minimize(make(tnp), x0, method="BFGS", options=options)
        theirs = jax_optimize.minimize(make(jnp), jnp.asarray(x0), method="BFGS",
                                       options=options)
    assert ref.status == scipy_status
    assert bool(ours.success) == bool(ref.success) == (int(ours.status) == 0)
    assert int(ours.status) in SCIPY_TO_OURS[ref.status]
    # The same steps as JAX's (and its status, which differs only in corners).
    assert int(ours.status) == int(theirs.status) and int(ours.nit) == int(theirs.nit)
    if ref.success:
        np.testing.assert_allclose(np.asarray(ours.x), ref.x, rtol=1e-5, atol=1e-5)
        assert int(ours.nit) == ref.nit
    elif ref.status == 1:
        assert int(ours.nit) == ref.nit == options["maxiter"]


@pytest.mark.parametrize("make, x0, options, scipy_status", PROBLEMS[:3] + PROBLEMS[4:5],
                         ids=["quadratic", "booth", "quadratic-maxiter", "unbounded"])
def test_lbfgs_success_is_status_zero(make, x0, options, scipy_status):
    ours = tg_optimize.minimize(make(tnp), x0, method=LBFGS, options=options)
    theirs = jax_optimize.minimize(make(jnp), jnp.asarray(x0), method=LBFGS, options=options)
    assert bool(ours.success) == (int(ours.status) == 0) == (scipy_status == 0)
    assert int(ours.status) == int(theirs.status)
    if scipy_status == 1:
        assert int(ours.status) == 1


def test_minimize_failure_under_jit_and_vmap():
    def run(x0):
        r = tg_optimize.minimize(_rosenbrock(tnp), x0, method="BFGS", options={"maxiter": 5})
        return r.success, r.status
    success, status = tg.jit(run)(np.array([-1.2, 1.0]))
    assert not bool(success) and int(status) == 1
    success, status = tg.vmap(run)(np.array([[-1.2, 1.0], [1.0, 1.0]]))
    assert np.asarray(success).tolist() == [False, True]
    assert np.asarray(status).tolist() == [1, 0]


def test_fixed_point_info_float32():
    # The residual is float64 whatever the iterates' dtype (the loop carry).
    x, info = fixed_point(affine, np.float32(0.5), np.float32(0.0), tol=1e-6, return_info=True)
    assert x.dtype == np.float32 and info.residual.dtype == np.float64
    # x_n = 2 - 2^(1-n) exactly in float32 too: the change 2^(1-n) <= 1e-6 at n = 21.
    assert float(x) == 2.0 - 2.0 ** -20 and int(info.iterations) == 21
    assert float(info.residual) == 2.0 ** -20 and bool(info.converged)
