"""det's gradient where the determinant overflows or underflows, against JAX 0.10.2 (x64).

The gradient is the transposed adjugate, det(U~) * A~^-T from the LU factors.  Where det(U~)
overflows, inf * 0 gave NaN where the adjugate is 0 (1e200 * I: NaN off the diagonal, JAX 0)
and inf where it is finite (2x2: inf, JAX 1e200); where it underflows, 0 (1e-200 * I, 2x2:
0, JAX 1e-200).  There the product is now formed from mantissas and exponents.  The
reference is the exact adjugate (mpmath) rounded to the dtype, and JAX's gradient for n <= 3;
for 4x4 JAX 0.10.2 gives 0 everywhere (its cofactor solve zeroes a gradient whose triangular
solve overflows), not the adjugate's inf on the diagonal.
"""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


def _exact_adjugate_t(a: np.ndarray) -> np.ndarray:
    with mpmath.workdps(50):
        m = mpmath.matrix(a.astype(np.float64).tolist())
        adj_t = mpmath.det(m) * (m ** -1).T
        with np.errstate(over="ignore"):
            return np.array([[float(adj_t[i, j]) for j in range(m.cols)] for i in range(m.rows)]
                            ).astype(a.dtype)


def _matrices(n: int, s: float, dtype: type) -> list:
    a = np.eye(n)
    b = a.copy()
    b[0, 1] = 0.3
    c = a.copy()
    c[[0, 1]] = c[[1, 0]]          # a row swap: parity -1
    c[2 % n, 0] = -0.7
    return [(s * m).astype(dtype) for m in (a, b, c)]


@pytest.mark.parametrize("dtype, s", [(np.float64, 1e200), (np.float64, 1e-200),
                                      (np.float32, 1e30), (np.float32, 1e-30)])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_det_gradient_out_of_range_is_jax(n: int, s: float, dtype: type) -> None:
    for a in _matrices(n, s, dtype):
        got = tg.grad(tnp.linalg.det)(a)
        refs = [_exact_adjugate_t(a)] + ([np.asarray(jax.grad(jnp.linalg.det)(a))] if n <= 3 else [])
        rtol = 8 * float(np.finfo(dtype).eps)
        for want in refs:
            assert got.dtype == want.dtype
            assert not np.isnan(got).any(), (a, got)
            np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
            np.testing.assert_array_equal(got == 0, want == 0)
            fin = np.isfinite(want) & (want != 0)
            np.testing.assert_allclose(got[fin], want[fin], rtol=rtol)


def test_det_gradient_out_of_range_jit_is_eager() -> None:
    # (the NumPy backend: the numba backend's first compile of det's gradient takes ~9 s of CPU;
    # it gave the same numbers for every case above when this was written)
    for a in _matrices(3, 1e200, np.float64) + _matrices(3, 1e-100, np.float64):
        np.testing.assert_allclose(tg.jit(tg.grad(tnp.linalg.det), backend="numpy")(a),
                                   tg.grad(tnp.linalg.det)(a), rtol=1e-15)


def test_det_gradient_in_range_is_the_adjugate() -> None:
    # the usual path (unchanged): 1e100 * B has adjugate 1e200 adj(B) for 3x3 B
    rng = np.random.default_rng(0)
    b = rng.standard_normal((3, 3))
    adj_t = np.linalg.det(b) * np.linalg.inv(b).T
    np.testing.assert_allclose(tg.grad(tnp.linalg.det)(1e100 * b), 1e200 * adj_t, rtol=1e-12)
    # and its derivative: the hessian against JAX
    np.testing.assert_allclose(tg.hessian(tnp.linalg.det)(b),
                               np.asarray(jax.hessian(jnp.linalg.det)(b)), rtol=1e-12, atol=1e-12)
