"""tangentia.lax against JAX (x64), continuing tests/test_jax_suite_fixes_lax3.py: the long
tail of JAX's lax_test.py (issue 26).  Values compared with JAX's bit for bit, eagerly and
under jit (and vmap against a loop); errors begin with JAX's wording."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax

jax = pytest.importorskip("jax", reason="the tests compare with JAX (x64)")
jax.config.update("jax_enable_x64", True)

INT4, UINT4 = np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)


def _same(got, want, msg=""):
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, (msg, got.dtype, want.dtype)
    assert got.shape == want.shape, (msg, got.shape, want.shape)
    np.testing.assert_array_equal(got.astype(np.float64) if got.dtype.kind == "V" else got,
                                  want.astype(np.float64) if want.dtype.kind == "V" else want,
                                  err_msg=msg)


# ---------------------------------------------------------------------------
# int4/uint4: computed in a byte and wrapped back to 4 bits, as XLA's

# every pair of 4-bit values (overflow, division by 0 and -1, shifts of -8..7 / 0..15)
_GRID = np.arange(16)
_I4 = np.array(np.meshgrid(_GRID - 8, _GRID - 8)).reshape(2, -1)
_U4 = np.array(np.meshgrid(_GRID, _GRID)).reshape(2, -1)
BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "shift_left",
          "shift_right_arithmetic", "shift_right_logical", "bitwise_and", "bitwise_or",
          "bitwise_xor", "eq", "ne", "gt", "ge", "lt", "le", "mulhi"]
UNARY = ["neg", "sign", "bitwise_not", "population_count", "clz"]


@pytest.mark.parametrize("dtype", [INT4, UINT4], ids=["int4", "uint4"])
def test_four_bit_binary_ops_are_jax(dtype):
    x, y = (_I4 if dtype == INT4 else _U4).astype(dtype)
    for name in BINARY:
        want = getattr(jax.lax, name)(jax.numpy.asarray(x), jax.numpy.asarray(y))
        _same(getattr(lax, name)(x, y), want, name)
        _same(tg.jit(getattr(lax, name))(x, y), want, f"jit {name}")


@pytest.mark.parametrize("dtype", [INT4, UINT4], ids=["int4", "uint4"])
def test_four_bit_unary_ops_are_jax(dtype):
    x = (_GRID - 8 if dtype == INT4 else _GRID).astype(dtype)
    for name in UNARY:
        want = getattr(jax.lax, name)(jax.numpy.asarray(x))
        _same(getattr(lax, name)(x), want, name)
        _same(tg.jit(getattr(lax, name))(x), want, f"jit {name}")
    # vmap of a 4-bit op against a loop
    xs = x.reshape(4, 4)
    _same(tg.vmap(lax.neg)(xs), np.stack([lax.neg(r) for r in xs]))


@pytest.mark.parametrize("dtype", [INT4, UINT4], ids=["int4", "uint4"])
def test_four_bit_abs_raises_jax_error(dtype):
    x = lax.iota(dtype, 3)
    with pytest.raises(TypeError) as want:
        jax.lax.abs(jax.lax.iota(dtype, 3))
    with pytest.raises(TypeError, match=f"abs does not accept dtype {dtype.name}.") as got:
        lax.abs(x)
    assert str(got.value) == str(want.value)


# ---------------------------------------------------------------------------
# float to integer conversion saturates, NaN to 0 (XLA's), for every integer width

FLOATS = np.array([1e30, -1e30, 3e9, -3e9, np.nan, np.inf, -np.inf, 300.0, -300.0, 127.9,
                   -128.9, 255.5, -1.5, -0.5, 0.5, 7.9, -8.9, 15.9, 2.0**31, 2.0**63, 2.0**64,
                   -2.0**63, 65535.7])


@pytest.mark.parametrize("src", [np.float64, np.float32, np.float16, ml_dtypes.bfloat16])
def test_float_to_int_saturates_as_jax(src):
    with np.errstate(over="ignore"):   # (float16 has no 1e30: inf)
        x = FLOATS.astype(src)
    for dst in [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                np.uint64, INT4, UINT4]:
        want = jax.lax.convert_element_type(jax.numpy.asarray(x), dst)
        _same(lax.convert_element_type(x, dst), want, f"{np.dtype(src)} -> {np.dtype(dst)}")
        _same(tg.jit(lambda v, dst=dst: lax.convert_element_type(v, dst))(x), want,
              f"jit {np.dtype(src)} -> {np.dtype(dst)}")
    # a scalar, and in-range values (the fast path)
    assert int(lax.convert_element_type(np.float64(-3.7), np.int32)) == -3
    _same(tg.numpy.asarray(np.array([1.5, -2.5]), np.int8), np.array([1, -2], np.int8))
