"""Iterative solvers given NaN or infinite inputs end (as JAX's: the loop stops at once,
returning ``x0``'s values) and do not report convergence: ``cg`` and ``bicgstab`` returned
SciPy's ``info`` 0 ("converged") with a NaN or infinite ``b`` or ``A`` (0 steps done read as
success; an infinite residual is within an infinite tolerance); SciPy reports ``maxiter``.
Found by probing the library's loops with NaN/inf (tests/test_fuzz_jax_special.py covers
odeint, minimize and fixed_point).
"""
from __future__ import annotations

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
