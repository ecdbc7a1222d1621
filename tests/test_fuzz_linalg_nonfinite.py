"""Linear algebra on matrices with NaN and infinite entries, against JAX 0.10.2 (x64), eagerly,
under jit on both backends and under vmap (session 18's sweep of det/slogdet/inv/cholesky/eigh/
eigvalsh/svd/qr/pinv/matrix_rank/norm/cond/eigvals/lstsq/matrix_power/solve on general,
SPD, singular, zero, NaN, inf, ill-conditioned, repeated-eigenvalue, float32, batched, wide,
tall and empty matrices, values and grads).  Each test here failed before its fix.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.linalg as tsl

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

_A = np.random.default_rng(0).normal(size=(3, 3))
_A = _A + _A.T
_BATCH = np.stack([np.where(np.eye(3) > 0, np.nan, _A), _A, np.where(np.eye(3) > 0, np.inf, _A)])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_eigh_of_non_finite_matrices_is_nan_as_jax(dtype) -> None:
    """``eigh``/``eigvalsh`` of a matrix with NaN or inf entries: NaN eigenvalues (JAX's; NumPy
    raised LinAlgError 'Eigenvalues did not converge', eagerly and inside a compiled program,
    so one bad matrix of a batch stopped the program); the batch's other matrices keep their
    values.  Eagerly, under jit on both backends, under vmap, and scipy.linalg.eigh."""
    b = _BATCH.astype(dtype)
    want_w = np.asarray(jnp.linalg.eigvalsh(b))
    assert np.isnan(want_w[[0, 2]]).all() and not np.isnan(want_w[1]).any()
    good_w, good_v = np.linalg.eigh(b[1])
    fns: list[Callable[..., Any]] = [tnp.linalg.eigh, tg.jit(tnp.linalg.eigh), tg.jit(tnp.linalg.eigh, backend="numpy"),
           tg.vmap(tnp.linalg.eigh), tsl.eigh, tnp.linalg.eigvalsh, tg.jit(tnp.linalg.eigvalsh),
           tg.vmap(tnp.linalg.eigvalsh)]
    for f in fns:
        out = f(b)
        w = out[0] if isinstance(out, tuple) else out
        assert w.dtype == want_w.dtype, (f, w.dtype)
        np.testing.assert_array_equal(np.isnan(w), np.isnan(want_w))
        np.testing.assert_allclose(w[1], good_w, rtol=1e-5)
        if isinstance(out, tuple):
            assert np.isnan(out[1][0]).all()       # (no eigenvector of a NaN matrix)
            np.testing.assert_allclose(np.abs(out[1][1]), np.abs(good_v), rtol=1e-5, atol=1e-6)
    g = tg.grad(lambda a: tnp.sum(tnp.linalg.eigvalsh(a)))(_BATCH[0])
    assert np.isnan(g).all()
