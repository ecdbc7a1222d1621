"""Special functions whose cost grows with a parameter end quickly or raise as JAX's do, and
never return SciPy's NaN as a value (session 19).

``sph_harm_y`` with ``n_max=None`` ran SciPy's recurrence, as long as the degree, in one
uninterruptible call per element (``n = 2**62``: hours), and SciPy 1.17's values are NaN from
degree 646 on whatever the order and angle.  JAX 0.10.2 reads ``n_max = max(n)`` (a traced
``n`` raises its ConcretizationTypeError), builds a table of ``(n_max + 1)**3`` floats and
raises RESOURCE_EXHAUSTED near degree 1000 (16 GB; OverflowError at 2**62).  Ours: a traced
``n`` needs a static ``n_max`` as JAX's; a degree above 645 raises ValueError at once.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.special as sc

import tangentia as tg
import tangentia.scipy.special as tsp
from tangentia.core import ConcretizationTypeError

pytestmark = pytest.mark.timeout(60)

_M = np.array([1, -2, 0])
_THETA, _PHI = np.array([0.9, 0.4, 2.0]), np.array([0.7, 5.0, 0.3])


@pytest.mark.parametrize("top", [646, 700, 10**7, 2**31, 2**62, np.iinfo(np.uint64).max])
def test_sph_harm_y_huge_degree_raises_at_once(top: int) -> None:
    """A degree above 645 raises ValueError naming the argument, before any SciPy call
    (``2**62`` ran for hours, ``10**7`` 0.16 s per element; above 645 SciPy gives NaN)."""
    dtype = np.uint64 if top > np.iinfo(np.int64).max else np.int64
    n = np.array([3, top, 2], dtype)
    start = time.process_time()
    for n_max in (None, top):
        with pytest.raises(ValueError, match="^sph_harm_y: argument 'n' must hold degrees at "
                                             f"most 645 .*got degree {top} "):
            tsp.sph_harm_y(n, _M, _THETA, _PHI, n_max=n_max)
    with pytest.raises(ValueError, match="^sph_harm_y: argument 'n'"):
        tg.jit(tsp.sph_harm_y, static_argnames="n_max")(n, _M, _THETA, _PHI, n_max=top)
    assert time.process_time() - start < 5.0
    # n_max at or under the bound clips the huge degree, as JAX's does: degree n_max's values
    got = tsp.sph_harm_y(n, _M, _THETA, _PHI, n_max=645)
    want = tsp.sph_harm_y(np.array([3, 645, 2]), _M, _THETA, _PHI)
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got).all()


def test_sph_harm_y_bound_is_where_scipy_turns_nan() -> None:
    """At degree 645 the values are SciPy's and finite; at 646 SciPy's are NaN (the reason for
    the bound: if a SciPy release fixes it, this test says the bound can move)."""
    n = np.array([645, 645, 600])
    got = tsp.sph_harm_y(n, _M, _THETA, _PHI)
    np.testing.assert_array_equal(got, sc.sph_harm_y(n, _M, _THETA, _PHI))
    assert np.isfinite(got).all()
    # |Y_n^m| <= sqrt((2n + 1) / (4 pi)) (the addition theorem); at theta=0, Y_n^0 equals it
    assert (np.abs(got) <= np.sqrt((2 * n + 1) / (4 * np.pi)) + 1e-12).all()
    np.testing.assert_allclose(tsp.sph_harm_y(645, 0, 0.0, 0.0), np.sqrt(1291 / (4 * np.pi)),
                               rtol=1e-11)
    assert np.isnan(sc.sph_harm_y(646, 0, 0.0, 0.0))


@pytest.mark.filterwarnings("ignore:numba. no native lowering for sph_harm_y")
def test_sph_harm_y_traced_degree_needs_n_max_as_jax() -> None:
    """A traced ``n`` with ``n_max=None`` raises JAX's ConcretizationTypeError (ours computed
    SciPy's values at any degree); a static ``n_max`` computes them, on both backends; a traced
    ``n`` with ``n_max`` above the bound raises ValueError when traced."""
    n = np.array([3, 2, 4])
    with pytest.raises(ConcretizationTypeError, match="(?s)^Abstract tracer value encountered "
                       "where concrete value is expected.*\nThe `n_max` argument of "
                       "`jnp.scipy.special.sph_harm` must be statically specified"):
        tg.jit(tsp.sph_harm_y)(n, _M, _THETA, _PHI)
    with pytest.raises(ConcretizationTypeError, match="(?s)^Abstract tracer"):
        tg.vmap(lambda k: tsp.sph_harm_y(k, 1, 0.5, 0.3))(n)
    want = sc.sph_harm_y(n, _M, _THETA, _PHI)
    for backend in ("numba", "numpy"):
        f = tg.jit(tsp.sph_harm_y, static_argnames="n_max", backend=backend)
        np.testing.assert_allclose(f(n, _M, _THETA, _PHI, n_max=4), want, rtol=1e-13)
    with pytest.raises(ValueError, match="got degree 646 \\(n_max, for a traced 'n'\\)"):
        tg.jit(tsp.sph_harm_y, static_argnames="n_max")(n, _M, _THETA, _PHI, n_max=646)
    # a concrete n under a transformation of the angles is read as JAX reads it
    g = tg.grad(lambda t: tsp.sph_harm_y(n, _M, t, _PHI).real.sum())(_THETA)
    eps = 1e-6
    fd = [(sc.sph_harm_y(n, _M, _THETA + eps * e, _PHI).real.sum()
           - sc.sph_harm_y(n, _M, _THETA - eps * e, _PHI).real.sum()) / (2 * eps)
          for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def test_sph_harm_y_errors_as_jax() -> None:
    """``diff_n`` other than None and an empty ``n`` without ``n_max`` raise JAX's errors
    (ours accepted ``diff_n=0`` and returned an empty array)."""
    with pytest.raises(NotImplementedError, match="^The 'diff_n' argument to "
                                                  "jax.scipy.special.sph_harm_y is not supported"):
        tsp.sph_harm_y(np.array([3]), np.array([1]), 0.5, 0.3, diff_n=0)
    empty = np.array([], np.int64)
    with pytest.raises(ValueError, match="^zero-size array to reduction operation maximum"):
        tsp.sph_harm_y(empty, empty, np.array([]), np.array([]))
    assert tsp.sph_harm_y(empty, empty, np.array([]), np.array([]), n_max=2).shape == (0,)
