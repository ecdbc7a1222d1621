"""The pseudo-random primitives behind ``tangentia.random``: JAX's threefry2x32 PRNG.

``random_bits_p(key, shape, bit_width)`` maps a key -- a uint32 array whose
last axis has size 2 -- to unsigned integer bits of ``shape`` (uint8/16/32/64
for ``bit_width`` 8/16/32/64), exactly as ``jax.random.bits`` with JAX's
default PRNG (threefry2x32) and its default ``jax_threefry_partitionable=True``:
element ``i`` (row-major) of the output hashes the 64-bit counter ``i``, split
into two uint32 words ``(i >> 32, i & 0xFFFFFFFF)``, with the 20-round
Threefry-2x32 block cipher keyed by the two key words, giving ``(b1, b2)``;
64-bit outputs are ``b1 << 32 | b2``, 32-bit ones ``b1 ^ b2`` and 8/16-bit ones
the low bits of ``b1 ^ b2``.  ``jax.random.split(key, shape)`` is the pair
``(b1, b2)`` itself, i.e. the two halves of the 64-bit bits.

Leading key axes are a batch of keys: a key of shape ``K + (2,)`` gives bits
of shape ``K + shape``, one independent stream per key, so the batching rule
only moves the batch axis of the key to the front.  The bits are integers:
their derivative is zero.

``random_gamma_p(key, a, log_space)`` draws Gamma(a, 1) samples (or their
logs) with JAX's algorithm (``jax.random.gamma``: one key per element split
from ``key``, Marsaglia-Tsang rejection with JAX's sub-draws, boosting for
``a < 1``), vectorized over the elements; its JVP with respect to ``a`` is the
implicit reparameterization gradient ``-dP(a, x)/da / p(x; a)`` (JAX's
``random_gamma_grad``).

``threefry2x32`` is the hash itself, written with operators only so that
``tangentia.random.fold_in`` can trace it.
"""
from __future__ import annotations

import numpy as np

from ..core import Primitive, ShapedArray
from ..interpreters.ad import defjvp, defjvp_zero
from ..interpreters.batching import materialize, move_to_front, primitive_batchers
from ._lazy import LazyModule
from .elementwise import div, exp, maximum, mul, neg, sub
from .special import _xpow_density, gammaln, igamma_grad_a_p

_sc = LazyModule("scipy.special", globals(), "_sc")  # (imported at its first use: _lazy)

_OUT_DTYPE = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
              64: np.dtype(np.uint64)}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl_np(x, r):
    """Rotate the uint32 array ``x`` left by ``r``, in place."""
    t = x >> np.uint32(32 - r)
    x <<= np.uint32(r)
    x |= t
    return x


def threefry2x32(k1, k2, x1, x2, rotl=_rotl_np):
    """The Threefry-2x32 hash (20 rounds) of counters ``(x1, x2)`` under key ``(k1, k2)``.

    All four are uint32 and broadcast together; ``rotl(x, r)`` rotates left by
    the int ``r`` (the default works on NumPy arrays, in place).  Returns
    ``(y1, y2)``.  After the first (out-of-place) key addition both words are
    fresh arrays of the full shape, so the augmented assignments update NumPy
    arrays in place (fast for millions of counters) and rebind tracers.
    """
    with np.errstate(over="ignore"):    # uint32 arithmetic wraps by design
        ks = (k1, k2, k1 ^ k2 ^ _PARITY)
        x1 = x1 + ks[0] + (x2 ^ x2)     # both words get the full broadcast shape
        x2 = x2 + ks[1] + (x1 ^ x1)
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                x1 += x2
                x2 = rotl(x2, r)
                x2 ^= x1
            x1 += ks[(i + 1) % 3]
            x2 += ks[(i + 2) % 3] + np.uint32(i + 1)
    return x1, x2


def _hash_counts(key, shape):
    """``(b1, b2)`` of shape ``key.shape[:-1] + shape``: the hashed row-major counters."""
    key = np.asarray(key, np.uint32)
    n = int(np.prod(shape, dtype=np.int64))
    count = np.arange(n, dtype=np.uint64)
    hi = (count >> np.uint64(32)).astype(np.uint32).reshape(shape)
    lo = count.astype(np.uint32).reshape(shape)
    expand = (Ellipsis,) + (None,) * len(shape)
    return threefry2x32(key[..., 0][expand], key[..., 1][expand], hi, lo)


def _random_bits_impl(key, shape, bit_width):
    b1, b2 = _hash_counts(key, tuple(shape))
    if bit_width == 64:
        return (b1.astype(np.uint64) << np.uint64(32)) | b2.astype(np.uint64)
    return (b1 ^ b2).astype(_OUT_DTYPE[bit_width])


def _random_bits_abstract_eval(key, shape, bit_width):
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 2:
        raise TypeError(f"random_bits: argument 'key' must be a uint32 array of shape (..., 2), "
                        f"got {key.str_short()}")
    if bit_width not in _OUT_DTYPE:
        raise ValueError(f"random_bits: bit_width must be 8, 16, 32 or 64, got {bit_width!r}")
    return ShapedArray(key.shape[:-1] + tuple(shape), _OUT_DTYPE[bit_width], False)


def _random_bits_batch(args, dims, shape, bit_width):
    key, = args
    d, = dims
    # A batch of keys: one independent stream per key, batch axis in front.
    return random_bits_p.bind(move_to_front(key, d), shape=shape, bit_width=bit_width), 0


random_bits_p = Primitive("random_bits")
random_bits_p.impl = _random_bits_impl
random_bits_p.abstract_eval = _random_bits_abstract_eval
primitive_batchers[random_bits_p] = _random_bits_batch
defjvp_zero(random_bits_p)


def random_bits(key, shape, bit_width=32):
    """Unsigned random bits of ``shape`` derived from ``key`` (uint32[..., 2])."""
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"random_bits: shape must be non-negative, got {shape}")
    return random_bits_p.bind(key, shape=shape, bit_width=int(bit_width))


# ---------------------------------------------------------------------------
# Gamma samples (JAX's _gamma_one, run for all elements at once)


def _split_np(keys, num):
    """``jax.random.split`` of each key of ``keys`` (N, 2): (num, N, 2)."""
    b1, b2 = _hash_counts(keys, (num,))
    return np.stack([b1, b2], axis=-1).swapaxes(0, 1)


def _uniform_np(keys, dtype):
    """One ``jax.random.uniform(key, (), dtype)`` per key (N, 2), in [0, 1)."""
    finfo = np.finfo(dtype)
    bits = _random_bits_impl(keys, (), finfo.bits)
    return (bits >> (finfo.bits - finfo.nmant)).astype(dtype) * dtype.type(2.0 ** -finfo.nmant)


def _normal_np(keys, dtype):
    """One ``jax.random.normal(key, (), dtype)`` per key: sqrt(2) erfinv(U(-1, 1))."""
    lo = np.nextafter(dtype.type(-1), dtype.type(0))
    u = np.maximum(lo, _uniform_np(keys, dtype) * (dtype.type(1) - lo) + lo)
    return dtype.type(np.sqrt(2)) * _sc.erfinv(u).astype(dtype)


def _gamma_one(keys, alpha, log_space):
    """JAX's ``_gamma_one`` for each (key, alpha) pair: keys (N, 2), alpha (N,)."""
    t = alpha.dtype.type
    boost = alpha >= 1
    alpha_b = np.where(boost, alpha, alpha + t(1))
    d = alpha_b - t(1 / 3)
    c = t(1 / 3) / np.sqrt(d)
    key, subkey = _split_np(keys, 2)
    X = np.zeros_like(alpha)
    V = np.ones_like(alpha)
    U = np.full_like(alpha, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        while True:
            live = np.nonzero((U >= t(1) - t(0.0331) * (X * X))
                              & (np.log(U) >= X * t(0.5) + d * (t(1) - V + np.log(V))))[0]
            if live.size == 0:
                break
            key[live], x_key, u_key = _split_np(key[live], 3)
            x = np.zeros(live.size, alpha.dtype)
            v = np.full(live.size, -1, alpha.dtype)
            todo = np.arange(live.size)
            while todo.size:
                x_key[todo], sub = _split_np(x_key[todo], 2)
                x[todo] = _normal_np(sub, alpha.dtype)
                v[todo] = t(1) + x[todo] * c[live[todo]]
                todo = todo[v[todo] <= 0]
            X[live] = x * x
            V[live] = v * v * v
            U[live] = _uniform_np(u_key, alpha.dtype)
        if log_space:
            log_samples = np.log1p(-_uniform_np(subkey, alpha.dtype))  # -exponential
            log_boost = np.where(boost | (log_samples == 0), t(0), log_samples * (t(1) / alpha))
            return np.log(d) + np.log(V) + log_boost
        samples = t(1) - _uniform_np(subkey, alpha.dtype)
        return d * V * np.where(boost, t(1), samples ** (t(1) / alpha))


def _random_gamma_impl(key, a, log_space):
    key = np.asarray(key, np.uint32)
    a = np.asarray(a)
    batch = key.shape[:-1]
    per_key = int(np.prod(a.shape[len(batch):], dtype=np.int64))
    keys = _split_np(key.reshape(-1, 2), per_key).swapaxes(0, 1).reshape(-1, 2)
    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    return _gamma_one(keys, a.reshape(-1), log_space).reshape(a.shape)


def _random_gamma_abstract_eval(key, a, log_space):
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 2:
        raise TypeError(f"random_gamma: argument 'key' must be a uint32 array of shape (..., 2), "
                        f"got {key.str_short()}")
    if a.dtype.kind != "f" or a.shape[:key.ndim - 1] != key.shape[:-1]:
        raise TypeError(f"random_gamma: argument 'a' must be a float array whose leading axes "
                        f"are the key's batch axes {key.shape[:-1]}, got {a.str_short()}")
    return ShapedArray(a.shape, a.dtype, False)


def _random_gamma_batch(args, dims, log_space):
    key, a = args
    dk, da = dims
    size = key.shape[dk] if dk is not None else a.shape[da]
    return random_gamma_p.bind(materialize(key, dk, size), materialize(a, da, size),
                               log_space=log_space), 0


def random_gamma_grad(a, x):
    """dx/da of a Gamma(a, 1) sample ``x`` at fixed CDF value: -dP(a, x)/da / p(x; a)."""
    density = _xpow_density(sub(neg(x), gammaln(a)), x, a)
    return neg(div(igamma_grad_a_p.bind(a, x), density))


def _random_gamma_jvp(t, ans, key, a, log_space):
    if not log_space:
        return mul(t, random_gamma_grad(a, ans))
    x = maximum(exp(ans), np.finfo(np.dtype(ans.dtype)).tiny)
    return mul(t, div(random_gamma_grad(a, x), x))


random_gamma_p = Primitive("random_gamma")
random_gamma_p.impl = _random_gamma_impl
random_gamma_p.abstract_eval = _random_gamma_abstract_eval
primitive_batchers[random_gamma_p] = _random_gamma_batch
defjvp(random_gamma_p, None, _random_gamma_jvp)


def random_gamma(key, a, log_space=False):
    """Gamma(a, 1) samples (their logs if ``log_space``), one per element of ``a``."""
    return random_gamma_p.bind(key, a, log_space=bool(log_space))


__all__ = ["random_bits", "random_bits_p", "random_gamma", "random_gamma_p", "random_gamma_grad",
           "threefry2x32"]
