"""Iterative solvers given NaN or infinite inputs end (as JAX's: the loop stops at once,
returning ``x0``'s values) and do not report convergence: ``cg`` and ``bicgstab`` returned
SciPy's ``info`` 0 ("converged") with a NaN or infinite ``b`` or ``A`` (0 steps done read as
success; an infinite residual is within an infinite tolerance); SciPy reports ``maxiter``.
Found by probing the library's loops with NaN/inf (tests/test_fuzz_jax_special.py covers
odeint, minimize and fixed_point).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.scipy.sparse.linalg as ssl

A = np.array([[4.0, 1.0], [1.0, 3.0]])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["b", "A"])
@pytest.mark.parametrize("name", ["cg", "bicgstab"])
def test_nonfinite_input_is_not_reported_converged(name: str, where: str, bad: float) -> None:
    M, b = A.copy(), np.array([1.0, 2.0])
    if where == "b":
        b[1] = bad
    else:
        M[0, 1] = M[1, 0] = bad
    solve = getattr(ssl, name)
    with np.errstate(all="ignore"):
        for f in (solve, tg.jit(lambda M, b: solve(M, b))):
            x, info = f(M, b)
            assert int(info) == 20, (name, where, bad, info)     # SciPy's: maxiter (10 * size)
            np.testing.assert_array_equal(np.asarray(x), [0.0, 0.0])   # JAX's x
        x, info = solve(A, np.array([1.0, 2.0]))               # a finite solve still converges
        assert int(info) == 0
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(A, [1.0, 2.0]), rtol=1e-5)


@pytest.mark.parametrize("lower", [False, True])
def test_complex_cho_solve_and_its_derivatives_match_jax(lower: bool) -> None:
    """``scipy.linalg.cho_solve`` of a complex Hermitian matrix solved ``L L^T x = b`` (the
    transpose, not the conjugate transpose): a wrong x eagerly and under jit (found by a wide
    run of test_fuzz_jax_linalg); the triangular solve's trans=2 (conjugate transpose) JVP
    transposed ``da`` without conjugating and its transpose rule solved with ``a`` where it
    needs ``conj(a)``: solve_triangular(trans='C') derivatives of complex matrices differed too."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.linalg as jsl

    import tangentia.scipy.linalg as sl
    rng = np.random.default_rng(0)
    m = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    a = m @ m.conj().T + 2 * np.eye(3)
    b = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    ct = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    c = np.asarray(jsl.cho_factor(a, lower=lower)[0])

    def f(S: Any) -> Any:
        return lambda c, b: S.cho_solve((c, lower), b)

    def g(S: Any) -> Any:
        return lambda c, b: S.solve_triangular(c, b, trans="C", lower=lower)
    for h in (f, g):
        want = jax.vjp(h(jsl), c, b)
        np.testing.assert_allclose(h(sl)(c, b), want[0], rtol=1e-12)
        np.testing.assert_allclose(tg.jit(h(sl))(c, b), want[0], rtol=1e-12)
        np.testing.assert_allclose(h(sl)(c, b), np.linalg.solve(a, b) if h is f else
                                   np.linalg.solve(np.tril(c).conj().T if lower else
                                                   np.triu(c).conj().T, b), rtol=1e-10)
        for x, y in zip(tg.vjp(h(sl), c, b)[1](ct), want[1](ct)):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-14)
        dc = rng.normal(size=c.shape) + 1j * rng.normal(size=c.shape)
        np.testing.assert_allclose(tg.jvp(h(sl), (c, b), (dc, ct))[1],
                                   jax.jvp(h(jsl), (c, b), (dc, ct))[1], rtol=1e-10, atol=1e-14)
