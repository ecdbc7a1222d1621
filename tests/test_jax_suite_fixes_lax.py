"""tangentia.lax against JAX where JAX's own lax_test.py found gaps (run through
tests/external/run_jax_tests.py): the special functions keep a float16/bfloat16 operand's
dtype (SciPy's kernels compute those in float32/float64).  Compared with JAX (x64),
eagerly and under jit."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

UNARY = ["lgamma", "digamma", "erf", "erfc", "erf_inv", "bessel_i0e", "bessel_i1e"]
BINARY = ["igamma", "igammac", "zeta"]
DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
TOL = {np.dtype(np.float16): 1e-2, np.dtype(ml_dtypes.bfloat16): 5e-2,
       np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


def _check(got, want):
    assert got.dtype == want.dtype
    tol = TOL[np.dtype(want.dtype)]
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_special_unary_keeps_dtype(name, dtype):
    x = np.array([0.1, 0.5, 0.9, 2.5 if name != "erf_inv" else -0.3], dtype)
    want = getattr(jax.lax, name)(x)
    _check(getattr(lax, name)(x), want)
    _check(tg.jit(getattr(lax, name))(x), want)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_special_binary_keeps_dtype(name, dtype):
    a = np.array([1.5, 2.0, 3.0], dtype)
    x = np.array([0.5, 1.5, 2.5], dtype)
    want = getattr(jax.lax, name)(a, x)
    _check(getattr(lax, name)(a, x), want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_betainc_keeps_dtype(dtype):
    a, b, x = (np.array(v, dtype) for v in ([1.5, 2.0], [2.0, 0.5], [0.3, 0.7]))
    _check(lax.betainc(a, b, x), jax.lax.betainc(a, b, x))


def test_lgamma_grad_keeps_dtype():
    g = tg.grad(lax.lgamma)(np.float32(2.5))
    assert g.dtype == jax.grad(jax.lax.lgamma)(np.float32(2.5)).dtype
    np.testing.assert_allclose(g, jax.grad(jax.lax.lgamma)(np.float32(2.5)), rtol=1e-5)


@pytest.mark.parametrize("dtype,out_dtype", [(np.int8, np.int16), (np.int8, np.float16),
                                             (np.float16, np.float32),
                                             (ml_dtypes.bfloat16, np.float64),
                                             (np.complex64, np.complex128),
                                             (np.int8, ml_dtypes.bfloat16),
                                             (np.float32, np.float32)])
def test_mul_out_dtype(dtype, out_dtype):
    a, b = np.array([3, -4, 100], dtype), np.array([50, 7, 100], dtype)
    want = jax.lax.mul(a, b, out_dtype=out_dtype)
    for f in (lax.mul, tg.jit(lax.mul, static_argnames="out_dtype")):
        got = f(a, b, out_dtype=out_dtype)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    g = tg.grad(lambda x: lax.mul(x, x, out_dtype=np.float64))(np.float32(3.0))
    assert g == jax.grad(lambda x: jax.lax.mul(x, x, out_dtype=np.float64))(np.float32(3.0))


def test_mul_out_dtype_mixed_operands():
    # with out_dtype, JAX's mul takes operands of different dtypes (lax_autodiff_test's
    # testOpGradOutDtype); without it they must agree
    a, b = np.array([1.5, 2.0], np.float32), np.array([3.0, -1.0], np.float64)
    for od in (np.float32, np.float64, np.float16):
        want = jax.lax.mul(a, b, out_dtype=od)
        got = lax.mul(a, b, out_dtype=od)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.mul(a, b)


@pytest.mark.parametrize("shape,new,dims", [((2, 3), (3, 2), (1, 0)),
                                            ((2, 3, 4), (4, 6), (2, 0, 1)),
                                            ((2, 3), (6,), (0, 1)), ((2, 3), (6,), None)])
def test_reshape_dimensions(shape, new, dims):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    want = jax.lax.reshape(x, new, dims)
    np.testing.assert_array_equal(np.asarray(lax.reshape(x, new, dims)), np.asarray(want))
    w = np.arange(np.prod(new)).reshape(new)
    g = tg.grad(lambda x: (lax.reshape(x, new, dims) * w).sum())(x)
    gj = jax.grad(lambda x: (jax.lax.reshape(x, new, dims) * w).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(gj))
    with pytest.raises(TypeError):
        lax.reshape(x, new, (0,) * len(shape))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.float16, np.float64])
def test_cumulative_keep_dtype_and_default_axis(name, dtype):
    # JAX's lax.cumsum/cumprod keep the operand's dtype (NumPy's accumulate widens small
    # integers) and axis defaults to 0
    x = (np.arange(1, 7) % 4 + 1).reshape(2, 3).astype(dtype)
    for kw in ({}, {"axis": 1}, {"axis": 1, "reverse": True}):
        want = getattr(jax.lax, name)(x, **kw)
        for f in (getattr(lax, name), tg.jit(getattr(lax, name), static_argnames=tuple(kw))):
            got = f(x, **kw)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64))
