"""The derivative of ``lax.rem`` / ``fmod`` / ``remainder`` with respect to the divisor where
the value is NaN, against JAX 0.10.2 (x64).

JAX's rule is d/dy = -trunc(x / y), from the quotient x / y, which is +-inf where y = 0
(x != 0) or x is infinite: JAX gives -inf (lax.rem(1., 0.)), +inf (lax.rem(-1., 0.)).  Ours
was NaN: NumPy's floor_divide is NaN there, and fmod's two branches (on x's sign bit) sent
0 * inf = NaN from the branch not taken.  Left alone: y = -0 (x != 0), where JAX's sign
comes from x / (-0) and ours from |y| (ours -inf, JAX +inf for rem(5., -0.)).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

_INF = np.inf
_POINTS = [(1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (_INF, 1.0), (-_INF, 1.0), (_INF, -1.0),
           (-_INF, -2.5), (1.0, np.nan), (np.nan, 1.0), (1.0, _INF), (-1.0, -_INF), (7.0, 2.0),
           (-7.0, 2.0), (7.0, -2.0), (-7.0, -2.0), (-0.0, 3.0), (-1e300, 3e-300), (2.5, 0.0)]


@pytest.mark.parametrize("ours, theirs", [(lax.rem, jax.lax.rem), (tnp.fmod, jnp.fmod),
                                          (tnp.remainder, jnp.remainder)])
def test_rem_gradients_are_jax(ours, theirs) -> None:
    x = np.array([p[0] for p in _POINTS])
    y = np.array([p[1] for p in _POINTS])
    for argnum in (0, 1):
        got = tg.vmap(tg.grad(ours, argnum))(x, y)
        want = np.asarray(jax.vmap(jax.grad(theirs, argnum))(x, y))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(tg.jit(tg.vmap(tg.grad(ours, argnum)))(x, y), got)
    np.testing.assert_array_equal(ours(x, y), np.asarray(theirs(x, y)))


def test_rem_gradient_by_finite_differences() -> None:
    # where the value is finite, d/dy = -trunc(x / y) (and d/dx = 1)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-10, 10, 50), rng.uniform(0.5, 3, 50) * rng.choice([-1, 1], 50)
    h = 1e-7
    fd = (np.fmod(x, y + h) - np.fmod(x, y - h)) / (2 * h)
    ok = np.abs(fd + np.trunc(x / y)) < 1e-3     # (no jump of trunc within +-h)
    np.testing.assert_allclose(tg.vmap(tg.grad(lax.rem, 1))(x, y)[ok], fd[ok], atol=1e-6)
    np.testing.assert_array_equal(tg.vmap(tg.grad(lax.rem, 0))(x, y), np.ones(50))
