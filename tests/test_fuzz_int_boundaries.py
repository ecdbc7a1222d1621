"""Integer dtypes at their overflow boundaries against JAX 0.10.2 (x64) and NumPy (session 18's
sweep: int8..int64, uint8..uint64 at min, min+1, -1, 0, 1, max-1, max through 23 elementwise
functions, 8 reductions, clip/round/astype, and float -> int conversions of NaN, inf and
out-of-range values).  Each test here failed before its fix; the sweep's other differences
are NumPy's dtype semantics (cumsum/cumprod of small integers in int64, means and true
division in float64), deliberate."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

_CASES = [np.array([2**62, 2**62, 2**62]), np.array([2**64 - 1, 2**64 - 2, 5], np.uint64),
          np.array([[2**63 - 1, 2**63 - 1], [-2**63, 7]]), np.array([2**31 - 1] * 4, np.int32)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["mean", "var", "std", "average", "nanmean", "nanvar"])
def test_means_of_integers_whose_sum_overflows_as_numpy_and_jax(name) -> None:
    """The mean of integers is summed in float64 (NumPy's and JAX's): ours summed in the
    integer dtype, which wraps, so mean([2**62] * 3) was -1.54e18 (NumPy and JAX 4.61e18),
    var of it 3.8e37 (0), and the mean of two uint64 maxima 9.2e18 (1.8e19).  Eagerly and
    under jit, over all axes and per axis."""
    for a in _CASES:
        for axis in (None, 0):
            want_np = getattr(np, name)(a, axis=axis)
            want_jax = np.asarray(getattr(jnp, name)(a, axis=axis))
            # (JAX's mean of int32 is float32: NumPy's float64 is ours, deliberately)
            np.testing.assert_allclose(want_jax, want_np, rtol=1e-12 if a.itemsize == 8 else 1e-6)

            def f(x, axis=axis):
                return getattr(tnp, name)(x, axis=axis)
            for got in (f(a), tg.jit(f)(a)):
                assert got.dtype == np.float64
                np.testing.assert_allclose(got, want_np, rtol=1e-12, err_msg=f"{name}{a}")
