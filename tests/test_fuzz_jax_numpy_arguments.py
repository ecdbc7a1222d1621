"""``tangentia.numpy`` with unusual arguments against JAX 0.10.2 (x64), session 22: axes
negative and tuples, keepdims, where=, initial=, ddof, weights, bins, integer inputs to float
functions, NumPy-only keywords.  Each test failed before its fix.

Left alone (deliberate NumPy semantics): ``std``/``var`` with an integer ``dtype`` return
NumPy's truncated integer (JAX raises "dtype argument to jnp.std must be inexact"), ``mean`` and
``var`` of booleans are float64 (JAX's float32 under x64).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

_A = np.arange(24.0).reshape(3, 4, 2) % 7


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
def test_arg_reductions_take_one_axis(name):
    # argmax(x, axis=(0, 2)) reduced over axis 0 alone (a (4, 2) array of indices); JAX raises
    # TypeError("'tuple' object cannot be interpreted as an integer"); axis=() was an IndexError
    ours, theirs = getattr(tnp, name), getattr(jnp, name)
    for axis in [(0, 2), (1,), (), 1.0]:
        with pytest.raises(TypeError) as jax_err:
            theirs(_A, axis=axis)
        with pytest.raises(TypeError, match=f"^{jax_err.value}.*{name}.*'axis'"):
            ours(_A, axis=axis)
        with pytest.raises(TypeError, match=f"^{jax_err.value}"):
            tg.jit(lambda x: ours(x, axis=axis))(_A)
    for axis in [None, 0, -1, 2, True, np.int64(1)]:
        for kd in (False, True):
            np.testing.assert_array_equal(ours(_A, axis=axis, keepdims=kd),
                                          np.asarray(theirs(_A, axis=axis, keepdims=kd)))


def test_sum_and_prod_cast_initial_to_the_result_dtype():
    # sum(arange(4), initial=0.5) was 6.5 (float64): NumPy's and JAX's 6 (int64)
    a = np.arange(4)
    w = np.array([True, False, True, True])
    for f, g in ((tnp.sum, jnp.sum), (tnp.prod, jnp.prod), (tnp.nansum, jnp.nansum),
                 (tnp.nanprod, jnp.nanprod)):
        for kw in (dict(initial=0.5), dict(initial=2.7, where=w), dict(initial=10.0),
                   dict(initial=0.5, dtype=np.float64), dict(initial=np.float64(2.5))):
            for x in (a, a.astype(np.float32), a + 0.25):
                got, want = f(x, **kw), g(x, **kw)
                assert got.dtype == want.dtype, (f.__name__, kw, x.dtype)
                np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6)
    # still differentiable in a float input and in the initial value
    np.testing.assert_allclose(tg.grad(lambda i: tnp.sum(a + 0.5, initial=i))(0.3), 1.0)
    np.testing.assert_allclose(tg.grad(lambda i: tnp.prod(a + 0.5, initial=i))(2.0),
                               np.prod(a + 0.5))
