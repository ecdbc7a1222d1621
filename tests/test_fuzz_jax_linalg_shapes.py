"""Linear algebra against JAX 0.10.2 (x64) where shapes and dtypes decide the answer: which
right-hand sides ``scipy.linalg``'s solvers read as vectors, float32 results, stacks of matrices.

Each test found a difference from JAX (noted in its docstring) and fails on the code before it.
"""
from __future__ import annotations


import numpy as np
import pytest

import tangentia as tg
import tangentia.scipy.linalg as tsl
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jsl = pytest.importorskip("jax.scipy.linalg")


def _matrix(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    a = np.random.default_rng(seed).standard_normal(shape)
    return a + 3 * np.eye(shape[-1]) if len(shape) > 1 and shape[-1] == shape[-2] else a


_SOLVERS = {
    "solve": lambda sl, a, b: sl.solve(a, b),
    "solve_sym": lambda sl, a, b: sl.solve(a, b, assume_a="sym"),
    "solve_triangular": lambda sl, a, b: sl.solve_triangular(a, b, lower=True),
    "solve_triangular_T": lambda sl, a, b: sl.solve_triangular(a, b, trans=1),
    "lu_solve": lambda sl, a, b: sl.lu_solve(sl.lu_factor(a), b),
    "cho_solve": lambda sl, a, b: sl.cho_solve(
        sl.cho_factor(a @ np.swapaxes(a, -1, -2), lower=True), b),
}


@pytest.mark.filterwarnings("ignore::FutureWarning")   # JAX's: batched 1-D solves deprecated
@pytest.mark.parametrize("name", sorted(_SOLVERS))
@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 3, 3), (3, 3)),    # solve: one matrix b for each a (we solved a[i] x = b[i])
    ((2, 3, 3), (2, 3)),    # solve: JAX raises (we solved batched vectors)
    ((2, 3, 3), (3,)),      # the triangular solves: one vector for the stack (we raised)
    ((2, 3, 3), (3, 2)),    # the triangular solves: one matrix for the stack (we raised)
    ((2, 3, 3), (2, 3, 1)), ((3, 3), (3,)), ((3, 3), (3, 2)), ((3, 3), (2, 3, 2))])
def test_which_right_hand_sides_are_vectors_as_jax(name: str, a_shape: tuple[int, ...],
                                                    b_shape: tuple[int, ...]) -> None:
    """scipy.linalg.solve reads b as jnp.linalg.solve does (a vector only when 1-D); the
    triangular solves (solve_triangular, lu_solve, cho_solve) as JAX's: a vector when 1-D or
    when it has one dimension less than a and ends in a's order. Ours read every b with one
    dimension less than a as vectors (SciPy's old rule): solve of a (3, 3, 3) stack and a (3, 3)
    b gave (3, 3) where JAX's is (3, 3, 3), other numbers, silently."""
    a, b = _matrix(0, a_shape), _matrix(1, b_shape)
    f = _SOLVERS[name]
    want = run(f, jsl, a, b)
    assert_same(name, run(f, tsl, a, b), want, rtol=1e-10, atol=1e-12)
    assert_same(f"jit {name}", run(tg.jit(lambda a, b: f(tsl, a, b)), a, b), want, rtol=1e-10,
                atol=1e-12)


def test_block_diag_keeps_python_scalars_weak() -> None:
    """block_diag(float32 matrix, 3.0) is float32, as JAX's (ours was float64: the scalar was
    made a float64 array before promotion)."""
    x = np.ones((2, 2), np.float32)
    for args in [(x, 3.0), (x, 3), (np.ones((2, 2), np.int8), 3), (x, np.ones(2, np.float32), 2.5)]:
        want = jsl.block_diag(*args)
        assert_same("block_diag", tsl.block_diag(*args), want)
        # the scalars closed over (a jit argument is a float64 tracer, not a weak scalar)
        jitted = tg.jit(lambda m, args=args: tsl.block_diag(m, *args[1:]))
        assert_same("jit block_diag", jitted(args[0]), want)


def test_expm_frechet_and_expm_tangent_keep_float32() -> None:
    """expm_frechet of float32 matrices and the tangent of expm are float32, as JAX's (SciPy
    computes the pair in float64 and ours returned that)."""
    a = (_matrix(2, (3, 3)) * 0.2).astype(np.float32)
    e = _matrix(3, (3, 3)).astype(np.float32)
    want = jsl.expm_frechet(a, e)
    assert_same("expm_frechet", tsl.expm_frechet(a, e), want, rtol=1e-5)
    for f in (tg.jvp, tg.jit(tg.jvp, static_argnums=0)):
        assert_same("jvp expm", f(tsl.expm, (a,), (e,)), jax.jvp(jsl.expm, (a,), (e,)),
                    rtol=1e-5)


@pytest.mark.parametrize("output", ["real", "complex"])
def test_schur_of_a_stack_of_matrices(output: str) -> None:
    """schur of a (2, 3, 3) stack, as JAX's (ours raised: 2-D only); empty stacks too."""
    a = _matrix(4, (2, 3, 3))
    want = jsl.schur(a, output=output)
    for f in (tsl.schur, tg.jit(tsl.schur, static_argnums=1)):
        t, z = f(a, output)
        assert t.dtype == want[0].dtype and t.shape == want[0].shape
        np.testing.assert_allclose(z @ t @ np.conj(np.swapaxes(z, -1, -2)), a, atol=1e-12)
        np.testing.assert_allclose(np.tril(t, -2), 0)
        assert_same("eigenvalues", np.sort_complex(np.linalg.eigvals(t)),
                    np.sort_complex(np.linalg.eigvals(np.asarray(want[0]))), rtol=1e-10)
    for shape in [(2, 0, 0), (0, 2, 2)]:
        assert_same("empty", tsl.schur(np.zeros(shape), output), jsl.schur(np.zeros(shape), output))
