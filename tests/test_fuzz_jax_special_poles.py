"""Special functions next to their poles, against JAX 0.10.2 (x64) and mpmath.

``digamma`` was SciPy's ``psi``, which loses digits just right of a pole -n (relative
error 1.0e-7 at x = -0.999999999, 8.7e-9 at -2.999999999, 2.8e-2 at -1 + 1e-15; JAX is
exact): it reduces x inexactly there.  Near a pole both backends now use the reflection
psi(1 - x) - pi / tan(pi r) with the exact remainder r = x - round(x).  It reaches
``lgamma``'s gradient, whose derivative is digamma.
"""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax
import tangentia.scipy.special as ts

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.scipy.special as jss  # noqa: E402

_R = (1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.01, 0.05, 0.0999, 0.1, 0.2, 0.4)


def _grid() -> np.ndarray:
    """Points on both sides of every pole 0, -1, ..., -50, at distances _R."""
    xs = [-n + s * r for n in range(51) for r in _R for s in (1.0, -1.0)]
    return np.array([x for x in xs if x < 0.0 and x != round(x)])


def _mp_digamma(x: float) -> float:
    with mpmath.workdps(40):
        return float(mpmath.digamma(mpmath.mpf(x)))


@pytest.mark.parametrize("x, was", [(-0.999999999, 1.0e-7), (-2.999999999, 8.7e-9),
                                    (-1.0 + 1e-15, 2.8e-2), (-49.9999999, 2.7e-10)])
def test_digamma_right_of_a_pole_is_exact(x: float, was: float) -> None:
    ref = _mp_digamma(x)
    got = float(ts.digamma(x))
    # SciPy's psi was off by ``was`` (relative); JAX is exact
    assert abs(got - ref) <= 4e-16 * abs(ref), (x, got, ref)
    assert float(jss.digamma(x)) == pytest.approx(ref, rel=4e-16)
    # lgamma's derivative is digamma
    assert abs(float(tg.grad(lax.lgamma)(x)) - ref) <= 4e-16 * abs(ref)
    assert float(tg.grad(lax.lgamma)(x)) == pytest.approx(float(jax.grad(jax.lax.lgamma)(x)),
                                                         rel=1e-15)


def test_digamma_near_every_pole_matches_jax_and_mpmath() -> None:
    x = _grid()
    got = ts.digamma(x)
    ref = np.array([_mp_digamma(v) for v in x])
    assert np.max(np.abs(got - ref) / np.abs(ref)) < 2e-14
    np.testing.assert_allclose(got, np.asarray(jss.digamma(x)), rtol=1e-13)
    # the poles themselves stay NaN (JAX's, SciPy's)
    poles = -np.arange(0.0, 51.0)
    assert np.isnan(ts.digamma(poles)).all() and np.isnan(np.asarray(jss.digamma(poles))).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_digamma_jit_is_eager_near_the_poles(dtype: type, backend: str) -> None:
    x = _grid().astype(dtype)
    eager = ts.digamma(x)
    assert eager.dtype == dtype
    np.testing.assert_array_equal(tg.jit(ts.digamma, backend=backend)(x), eager)
    # and lgamma's gradient, elementwise
    g = tg.vmap(tg.grad(lax.lgamma))
    np.testing.assert_array_equal(tg.jit(g, backend=backend)(x), g(x))
    np.testing.assert_array_equal(g(x), eager)


def test_digamma_float32_is_the_rounded_float64() -> None:
    x = _grid().astype(np.float32)
    x = x[x != np.round(x)]
    ref = np.array([_mp_digamma(float(v)) for v in x]).astype(np.float32)
    got = ts.digamma(x)
    # correctly rounded except where the float64 value lies within a few ulp of a tie
    assert np.max(np.abs(got - ref) / np.abs(ref)) <= 2 ** -23
