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


@pytest.mark.timeout(120)
def test_integer_dtype_asked_of_mean_var_std_is_numpys():
    """``mean``/``var``/``std`` with an integer ``dtype``: summed in that dtype (wrapping as
    NumPy's), the quotient cast to it (truncated), as NumPy's; ``mean`` as JAX's too
    (``jnp.mean([1, 2], dtype=int8)`` is 1). Ours gave the float64 quotient, 1.5.
    Eagerly and under jit, on random small arrays including sums that wrap."""
    rng = np.random.default_rng(0)
    f = tg.jit(lambda a: [tnp.mean(a, dtype=np.int8), tnp.var(a, dtype=np.int16),
                          tnp.std(a, dtype=np.uint8)])
    for _ in range(100):
        a = rng.integers(-60, 60, size=int(rng.integers(1, 7))).astype(np.int8)
        with np.errstate(all="ignore"):
            want = [np.mean(a, dtype=np.int8), np.var(a, dtype=np.int16),
                    np.std(a, dtype=np.uint8)]
        for got in ([tnp.mean(a, dtype=np.int8), tnp.var(a, dtype=np.int16),
                     tnp.std(a, dtype=np.uint8)], f(a)):
            for g, w in zip(got, want):
                assert np.asarray(g).dtype == np.asarray(w).dtype and g == w, (a, g, w)
    a = np.array([1, 2], np.int8)
    assert tnp.mean(a, dtype=np.int8) == jax.numpy.mean(a, dtype=np.int8) == 1
