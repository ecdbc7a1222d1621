"""What flax nnx's layers need of the initializers and samplers besides typed keys
(tests/test_random_keys.py): 16-bit float samples with JAX's bits, initializers taking
float16/bfloat16 (variance scaling) and any dtype (zeros, ones, constant), against JAX."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tangentia as tg
import tangentia.random as tr

jax.config.update("jax_enable_x64", True)


def test_bfloat16_uniform_bits_as_jax():
    # JAX draws 8 random bits for a float of fewer than 8 mantissa bits (bfloat16's 7);
    # 16 bits gave other numbers (every sample differed)
    for f in (lambda m, k: m.uniform(k, (64,), jnp.bfloat16),
              lambda m, k: m.uniform(k, (64,), jnp.bfloat16, -1.0, 3.0)):
        np.testing.assert_array_equal(np.asarray(f(tr, tr.key(0)), np.float32),
                                      np.asarray(f(jax.random, jax.random.key(0)), np.float32))
    a = np.asarray(tr.normal(tr.key(1), (64,), jnp.bfloat16), np.float64)
    b = np.asarray(jax.random.normal(jax.random.key(1), (64,), jnp.bfloat16), np.float64)
    np.testing.assert_allclose(a, b, rtol=2 ** -7, atol=2 ** -7)   # one bfloat16 ulp


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16", np.float32], ids=str)
@pytest.mark.parametrize("name", ["glorot_uniform", "lecun_normal", "he_uniform"])
def test_initializers_take_16_bit_floats(name, dtype):
    dtype = jnp.bfloat16 if dtype == "bfloat16" else dtype
    a = getattr(tg.nn.initializers, name)()(tr.key(0), (4, 3), dtype)
    b = getattr(jax.nn.initializers, name)()(jax.random.key(0), (4, 3), dtype)
    assert a.dtype == b.dtype
    eps = float(jnp.finfo(dtype).eps)
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=2 * eps, atol=2 * eps)


def test_filled_initializers_take_any_dtype():
    for dt in (np.int32, np.uint8, np.bool_, np.complex64, jnp.bfloat16):
        for name in ("zeros", "ones"):
            a = getattr(tg.nn.initializers, name)(tr.key(0), (2, 2), dt)
            b = getattr(jax.nn.initializers, name)(jax.random.key(0), (2, 2), dt)
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    c = tg.nn.initializers.constant(3, np.int16)(tr.key(0), (2,))
    assert c.dtype == np.int16 and list(c) == [3, 3]


def test_out_sharding_accepted_by_dot_and_conv():
    # flax's nnx layers pass out_sharding=None to jnp.dot and lax.conv_general_dilated
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(tg.numpy.dot(a, b, out_sharding=None),
                                  jnp.dot(a, b, out_sharding=None))
    x, w = np.arange(8.0).reshape(1, 2, 4), np.arange(12.0).reshape(3, 2, 2)
    np.testing.assert_array_equal(
        tg.lax.conv_general_dilated(x, w, (1,), "SAME", out_sharding=None),
        jax.lax.conv_general_dilated(x, w, (1,), "SAME", out_sharding=None))


def test_lowered_compile_as_jax():
    # flax nnx's tabulate reads lowered.compile().cost_analysis(); nnx.jit's tests call
    # compile(compiler_options)
    lowered = tg.jit(lambda x: x * 2.0).lower(1.0)
    for compiled in (lowered.compile(), lowered.compile(None), lowered.compile({})):
        assert float(compiled(3.0)) == float(jax.jit(lambda x: x * 2.0).lower(1.0).compile()(3.0))
        assert compiled.cost_analysis() is None and lowered.cost_analysis() is None
        assert compiled.as_text() == lowered.as_text()


def test_lowered_out_info_as_jax():
    def f(x):
        return {"a": x * 2, "b": (x.sum(), x > 0)}
    x = np.ones(3)
    ours, theirs = tg.jit(f).lower(x).out_info, jax.jit(f).lower(x).out_info
    assert tg.tree_util.tree_structure(ours) == tg.tree_util.tree_structure(theirs)
    for a, b in zip(tg.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert isinstance(a, tg.ShapeDtypeStruct) and a.shape == b.shape and a.dtype == b.dtype
