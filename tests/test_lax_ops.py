"""jax.lax-style operations: dynamic slicing (starts clamped as in JAX),
slices, reductions and small elementwise helpers."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.test_util import check_grads

X = np.arange(20.0).reshape(4, 5) / 7.0 + 0.1


def _np_dynamic_slice(x, starts, sizes):
    # JAX's rule: a negative start counts from the end, then the window is clamped
    starts = [min(max(s + d if s < 0 else s, 0), d - n) for s, n, d in zip(starts, sizes, x.shape)]
    return x[tuple(slice(s, s + n) for s, n in zip(starts, sizes))]


@pytest.mark.parametrize("starts", [(0, 0), (1, 3), (3, 4), (-2, 1), (9, 9)])
def test_dynamic_slice_matches_numpy_with_clamping(starts):
    want = _np_dynamic_slice(X, starts, (2, 2))
    np.testing.assert_array_equal(lax.dynamic_slice(X, starts, (2, 2)), want)
    np.testing.assert_array_equal(
        tg.jit(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 2)))(X, *starts), want)


def test_dynamic_slice_derivatives_and_vmap():
    check_grads(lambda x: lax.dynamic_slice(x, (1, 2), (2, 3)) ** 2, (X,), 2)
    starts = np.array([0, 2, 3, 7])
    got = tg.vmap(lambda i: lax.dynamic_slice_in_dim(X[0], i, 2))(starts)
    want = np.stack([_np_dynamic_slice(X[0], (int(i),), (2,)) for i in starts])
    np.testing.assert_array_equal(got, want)
    g = tg.grad(lambda x, i: tnp.sum(lax.dynamic_slice(x, (i, 0), (2, 5)) ** 2))(X, 1)
    want_g = np.zeros_like(X)
    want_g[1:3] = 2 * X[1:3]
    np.testing.assert_allclose(g, want_g, rtol=1e-15)


def test_dynamic_update_slice():
    u = np.full((2, 2), -1.0)
    want = X.copy()
    want[2:4, 3:5] = u
    np.testing.assert_array_equal(lax.dynamic_update_slice(X, u, (3, 4)), want)  # clamped
    check_grads(lambda x, v: lax.dynamic_update_slice(x, v * 2.0, (1, 1)), (X, u), 2)
    out = tg.vmap(lambda i: lax.dynamic_update_index_in_dim(X, np.zeros(5), i, 0))(np.arange(4))
    for i in range(4):
        w = X.copy()
        w[i] = 0.0
        np.testing.assert_array_equal(out[i], w)


def test_static_slices_and_shapes():
    np.testing.assert_array_equal(lax.slice(X, (0, 1), (4, 5), (2, 2)), X[0:4:2, 1:5:2])
    np.testing.assert_array_equal(lax.slice_in_dim(X, 1, 4, axis=1), X[:, 1:4])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(X, 2, 1, keepdims=False), X[:, 2])
    np.testing.assert_array_equal(lax.squeeze(X[None, :, None], (0, 2)), X)
    assert lax.expand_dims(X, (0, 3)).shape == (1, 4, 5, 1)
    np.testing.assert_array_equal(lax.concatenate([X, X], 1), np.concatenate([X, X], 1))


def test_reductions_and_elementwise_helpers():
    np.testing.assert_allclose(lax.reduce_sum(X, (0,)), X.sum(0), rtol=1e-15)
    np.testing.assert_allclose(lax.reduce_max(X, (1,)), X.max(1), rtol=1e-15)
    np.testing.assert_allclose(lax.reduce_prod(X, (0, 1)), X.prod(), rtol=1e-13)
    np.testing.assert_allclose(lax.cumprod(X, 1), np.cumprod(X, 1), rtol=1e-14)
    np.testing.assert_allclose(lax.cummax(X[::-1], 0), np.maximum.accumulate(X[::-1], 0))
    np.testing.assert_allclose(lax.clamp(0.5, X, 2.0), np.clip(X, 0.5, 2.0))
    np.testing.assert_allclose(lax.rsqrt(X), 1 / np.sqrt(X), rtol=1e-15)
    np.testing.assert_allclose(lax.logistic(X), 1 / (1 + np.exp(-X)), rtol=1e-14)
    np.testing.assert_allclose(lax.dot(X, X.T), X @ X.T, rtol=1e-14)
    np.testing.assert_allclose(lax.sort(X[:, ::-1], 1), np.sort(X, 1))
    check_grads(lambda x: lax.rsqrt(x) * lax.logistic(x) + lax.square(x), (X,), 2)


def test_errors_name_the_function_and_argument():
    with pytest.raises(ValueError, match=r"dynamic_slice: start_indices has 1 entries .*rank 2"):
        lax.dynamic_slice(X, (1,), (2, 2))
    with pytest.raises(TypeError, match=r"dynamic_slice: slice_sizes\[1\] = 9 is out of range"):
        lax.dynamic_slice(X, (0, 0), (2, 9))
    with pytest.raises(TypeError, match=r"dynamic_update_slice: update of shape \(2,\)"):
        lax.dynamic_update_slice(X, np.ones(2), (0, 0))
