"""tangentia.lax against JAX (x64) where JAX's lax_test.py and lax_autodiff_test.py (run
through tests/external/run_jax_tests.py) found silently different numbers or missing
functions: values compared with JAX's, eagerly, under jit and vmap; derivatives against
JAX's and finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64]


def _int_pairs(dtype):
    info = np.iinfo(dtype)
    xs = [0, 1, 7, 100, int(info.max), int(info.min)]
    ys = [1, 2, 3, 7, 0, int(info.max)]
    if info.min < 0:
        xs += [-1, -7, -100]
        ys += [-1, -2, -3]
    x, y = np.meshgrid(np.array(xs, dtype), np.array(ys, dtype))
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", ["div", "rem"])
def test_integer_div_rem_match_jax(name, dtype):
    # lax.div of integers rounds toward zero (it was NumPy's true division: float64);
    # x / 0 has every bit set, INT_MIN / -1 wraps, x % 0 is x, as XLA's.
    x, y = _int_pairs(dtype)
    want = np.asarray(getattr(jax.lax, name)(x, y))
    for f in (getattr(lax, name), tg.jit(getattr(lax, name)),
              tg.vmap(getattr(lax, name))):
        got = np.asarray(f(x, y))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_div_rem_of_floats_unchanged(dtype):
    x = np.array([7.5, -7.5, 1.0, 0.0, -3.0], dtype)
    y = np.array([2.0, 2.0, 0.0, 0.0, -0.5], dtype)
    with np.errstate(all="ignore"):
        for name in ("div", "rem"):
            np.testing.assert_array_equal(getattr(lax, name)(x, y),
                                          getattr(jax.lax, name)(x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_conj_is_complex_as_jax(dtype):
    x = np.array([1.5, -2.0, 0.0], dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * np.array([0.5, -1.0, 2.0], dtype)
    want = np.asarray(jax.lax.conj(x))
    for f in (lax.conj, tg.jit(lax.conj), tg.vmap(lax.conj)):
        got = np.asarray(f(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


def test_conj_of_real_grad_and_errors():
    f = lambda L: (lambda x: L.real(L.conj(x) * L.conj(x) * 3.0))  # noqa: E731
    assert float(tg.grad(f(lax))(1.25)) == pytest.approx(float(jax.grad(f(jax.lax))(1.25)))
    for bad in (np.array([1, 2], np.int32), np.array([1.0], np.float16)):
        with pytest.raises(TypeError, match=r"^conj does not accept dtype"):
            lax.conj(bad)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16,
                                   np.uint32])
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod"])
def test_integer_sum_prod_keep_dtype(name, dtype):
    # NumPy's add/multiply.reduce widen small integers (int64/uint64); lax's keep the
    # operand's dtype, wrapping as JAX's.
    x = np.array([[100, 3, 7], [90, 5, 11]], dtype)
    want = np.asarray(getattr(jax.lax, name)(x, (1,)))
    for f in (lambda v: getattr(lax, name)(v, (1,)),
              tg.jit(lambda v: getattr(lax, name)(v, (1,)))):
        got = np.asarray(f(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan",
                                  "sqrt", "rsqrt", "logistic", "cbrt"])
def test_accuracy_keyword_accepted(name):
    x = np.array([0.3, 1.7], np.float32)
    want = getattr(jax.lax, name)(x, accuracy=None)
    got = getattr(lax, name)(x, accuracy=None)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6)
    g = tg.grad(lambda v: getattr(lax, name)(v, accuracy=None))(np.float32(0.7))
    np.testing.assert_allclose(
        g, jax.grad(lambda v: getattr(jax.lax, name)(v, accuracy=None))(np.float32(0.7)),
        rtol=1e-5)
