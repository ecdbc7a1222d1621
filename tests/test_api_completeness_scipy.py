"""tangentia.scipy.optimize, signal, integrate, fft and ndimage against JAX 0.10.2 (x64)
and SciPy: the same iterates, values and errors; gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.scipy import optimize as topt

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
import jax.scipy.optimize  # noqa: E402  (a lazily loaded submodule)


def _rosen(np_):
    return lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def _same_results(ours, theirs, rtol=1e-7):
    assert ours._fields == theirs._fields
    for field in ours._fields:
        a, b = getattr(ours, field), getattr(theirs, field)
        if b is None:
            assert a is None, field
        else:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-9,
                                       err_msg=field)


@pytest.mark.parametrize("method", ["BFGS", LBFGS])
def test_minimize_takes_jaxs_steps(method):
    """Same iterates: the same number of iterations and evaluations, the same
    point, gradient and inverse-Hessian estimate."""
    x0 = np.array([-1.2, 1.0, 0.5])
    ours = topt.minimize(_rosen(tnp), x0, method=method, options={"maxiter": 15})
    theirs = jax.scipy.optimize.minimize(_rosen(jnp), jnp.asarray(x0), method=method,
                                         options={"maxiter": 15})
    _same_results(ours, theirs, rtol=1e-6)
    assert int(ours.nit) == int(theirs.nit) and int(ours.nfev) == int(theirs.nfev)


def test_minimize_converges_with_args_under_jit():
    def f(x, a, b):
        return tnp.sum((x - a) ** 2 * b) + tnp.sum(x) ** 2

    a, b = np.array([1.0, -2.0]), np.array([2.0, 3.0])
    r = tg.jit(lambda x0: topt.minimize(f, x0, (a, b), method="bfgs"))(np.zeros(2))
    # the minimizer of the quadratic: (diag(b) + 1 1^T) x = b * a
    expected = np.linalg.solve(np.diag(b) + 1.0, b * a)
    np.testing.assert_allclose(r.x, expected, atol=1e-6)
    assert bool(r.success) and int(r.status) == 0
    np.testing.assert_allclose(r.jac, 0.0, atol=1e-5)
    # BFGS's inverse-Hessian estimate approaches the inverse Hessian on a quadratic
    np.testing.assert_allclose(r.hess_inv, np.linalg.inv(2 * (np.diag(b) + 1.0)), atol=1e-4)


def test_minimize_status_when_maxiter_is_reached():
    ours = topt.minimize(_rosen(tnp), np.array([-1.2, 1.0]), method="BFGS",
                         options={"maxiter": 3})
    assert int(ours.status) == 1 and not bool(ours.success) and int(ours.nit) == 3


def test_minimize_under_vmap_matches_each_start():
    starts = np.array([[0.0, 0.0], [2.0, -1.0], [-1.0, 3.0]])
    f = lambda x: tnp.sum((x - np.array([0.5, 1.5])) ** 4) + tnp.sum(x ** 2)
    batched = tg.vmap(lambda x0: topt.minimize(f, x0, method="BFGS").x)(starts)
    for x0, xb in zip(starts, batched):
        np.testing.assert_allclose(xb, topt.minimize(f, x0, method="BFGS").x, rtol=1e-9)


def test_line_search_matches_jax():
    from jax._src.scipy.optimize.line_search import line_search as jax_line_search
    x0, p = np.array([-1.2, 1.0]), np.array([1.0, 0.2])
    ours = topt.line_search(_rosen(tnp), x0, p)
    theirs = jax_line_search(_rosen(jnp), jnp.asarray(x0), jnp.asarray(p))
    _same_results(ours, theirs)
    # the strong Wolfe conditions hold at the step found
    f = _rosen(np)
    g = tg.grad(_rosen(tnp))
    a = float(ours.a_k)
    assert f(x0 + a * p) <= f(x0) + 1e-4 * a * g(x0) @ p
    assert abs(g(x0 + a * p) @ p) <= 0.9 * abs(g(x0) @ p)


def test_minimize_errors_use_jaxs_wording():
    with pytest.raises(TypeError, match="args argument to jax.scipy.optimize.minimize must be "
                                        "a tuple"):
        topt.minimize(_rosen(tnp), np.zeros(2), args=[1], method="BFGS")
    with pytest.raises(ValueError, match="Method nelder-mead not recognized"):
        topt.minimize(_rosen(tnp), np.zeros(2), method="nelder-mead")
