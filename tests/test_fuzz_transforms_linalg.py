"""solve and inv of singular matrices give JAX's inf and nan (LAPACK's LU with a zero pivot);
cholesky of a matrix that is not positive definite and svd of one with NaN give JAX's NaN.

Ours raised NumPy's LinAlgError ("Singular matrix"), where JAX returns the values of the
factorization it computed: code that checks ``isfinite`` afterwards stopped, and under vmap
one singular matrix failed the whole batch.  Bit-equal with JAX 0.10.2, eagerly, under jit
(the NumPy backend), vmap and grad.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.linalg  # noqa: F401

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
pytest.importorskip("jax.scipy.linalg")

S3 = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])   # rank 2
B = np.array([1.0, 2.0, 3.0])
STACK = np.stack([np.eye(3), S3])
NAN_STACK = np.stack([np.eye(2), np.full((2, 2), np.nan)])
NAN_PIVOT = np.stack([np.array([[np.nan, 1.0], [1.0, 1.0]]), np.eye(2)])

CASES: dict[str, Callable[[Any, Any], Any]] = {
    "solve": lambda api, np_: np_.linalg.solve(S3, B),
    "inv": lambda api, np_: np_.linalg.inv(S3),
    "inv of zeros": lambda api, np_: np_.linalg.inv(np.zeros((2, 2))),
    "inv float32": lambda api, np_: np_.linalg.inv(S3.astype(np.float32)),
    "solve, a stack with one singular": lambda api, np_: np_.linalg.solve(
        STACK, np.stack([B, B])[..., None]),
    "jit inv": lambda api, np_: api.jit(np_.linalg.inv)(S3),
    "vmap solve": lambda api, np_: api.vmap(np_.linalg.solve)(STACK, np.stack([B, B])),
    "grad through solve": lambda api, np_: api.grad(lambda a: np_.sum(np_.linalg.solve(a, B)))(S3),
    # NaN in the lower triangle of a failed factor (per matrix of a stack), zeros above
    "cholesky, not positive definite": lambda api, np_: np_.linalg.cholesky(
        np.stack([np.eye(2) * 4, np.array([[1.0, 2.0], [2.0, 1.0]])])),
    "cho_solve, not positive definite": lambda api, np_: api.scipy.linalg.cho_solve(
        api.scipy.linalg.cho_factor(np.array([[1.0, 2.0], [2.0, 1.0]])), np.ones(2)),
    # LAPACK's gesdd does not converge on NaN: NaN (per matrix of a stack)
    "svd with NaN": lambda api, np_: np_.linalg.svd(NAN_STACK)[0],
    "svdvals with NaN": lambda api, np_: np_.linalg.svd(NAN_STACK, compute_uv=False),
    # a matrix with NaN: NaN eigenvalues (per matrix of a stack)
    "eigvals with NaN": lambda api, np_: np_.linalg.eigvals(NAN_STACK),
    # a NaN pivot, then a zero one: LAPACK's getrf reports the matrix singular, NumPy's det
    # gave 0 and slogdet (0, -inf) (JAX: NaN), under jit, vmap and jvp (which took the LU) too
    "det with NaN": lambda api, np_: np_.linalg.det(NAN_PIVOT),
    "slogdet with NaN": lambda api, np_: np_.stack(np_.linalg.slogdet(NAN_PIVOT)),
    "det with NaN, complex": lambda api, np_: np_.linalg.det(NAN_PIVOT.astype(complex)),
    "jit det with NaN": lambda api, np_: api.jit(np_.linalg.det)(NAN_PIVOT),
    "vmap slogdet with NaN": lambda api, np_: api.vmap(np_.linalg.slogdet)(NAN_PIVOT)[1],
    "jvp det with NaN": lambda api, np_: np_.stack(api.jvp(np_.linalg.det, (NAN_PIVOT,),
                                                           (np.ones((2, 2, 2)),))),
    # a zero on the diagonal: BLAS's trsm divides by it
    "solve_triangular, singular": lambda api, np_: api.scipy.linalg.solve_triangular(
        np.array([[0.0, 0, 0], [1, 2, 0], [3, 0, 0]]), np.arange(1.0, 4.0), lower=True, trans=1),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", list(CASES))
def test_singular_solve_and_inv_match_jax(name: str) -> None:
    ours = np.asarray(CASES[name](tg, tnp))
    theirs = np.asarray(CASES[name](jax, jax.numpy))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    assert not np.all(np.isfinite(ours))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
# (one numba program of 20-30 s CPU: 286 s wall at load 12, beside pyproject's 300 s)
@pytest.mark.timeout(600)
def test_numba_backend_gives_the_same_values() -> None:
    # the numba kernels (numba's np.linalg, which raises LinAlgError there) give the NumPy
    # backend's values, so tiered jit's later calls agree with its first ones
    from _numba_util import compile_numba, program

    def f(a, b, c, d):
        return (tnp.linalg.solve(a, b), tnp.linalg.inv(a), tnp.linalg.inv(a.astype(np.float32)),
                tnp.linalg.cholesky(c), tnp.linalg.solve(STACK, tnp.stack([b, b])[..., None]),
                tnp.linalg.svd(d)[0])
    args = (S3, B, np.stack([np.eye(2) * 4, np.array([[1.0, 2.0], [2.0, 1.0]])]), NAN_STACK)
    jaxpr, full = program(f, *args)
    for got, want, name in zip(compile_numba(jaxpr)(*full), f(*args),
                               ["solve", "inv", "inv float32", "cholesky", "solve stack", "svd"]):
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
