"""The pseudo-random bits primitive behind ``tangentia.random``.

``random_bits_p(key, shape, bit_width)`` maps a key -- a uint32 array whose
last axis has size 2 -- to unsigned integer bits of ``shape`` (uint32 for
``bit_width=32``, uint64 for ``bit_width=64``).  The bits come from NumPy's
counter-based Philox generator keyed by the two key words, so they are a pure
function of the key (and the requested shape and width).

Leading key axes are a batch of keys: a key of shape ``K + (2,)`` gives bits
of shape ``K + shape``, one independent stream per key.  This is what makes
the batching rule trivial (move the batch axis of the key to the front).
The bits are integers, so their derivative is zero.
"""
from __future__ import annotations

import numpy as np

from ..core import Primitive, ShapedArray
from ..interpreters.ad import defjvp_zero
from ..interpreters.batching import move_to_front

_OUT_DTYPE = {32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}


def _bits_one(k0, k1, shape, bit_width):
    n = 1
    for d in shape:
        n *= d
    bg = np.random.Philox(key=(int(k0) << 32) | int(k1))
    if bit_width == 64:
        out = bg.random_raw(n) if n else np.zeros((0,), np.uint64)
    else:
        raw = bg.random_raw((n + 1) // 2) if n else np.zeros((0,), np.uint64)
        lo = (raw & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        hi = (raw >> np.uint64(32)).astype(np.uint32)
        out = np.stack([lo, hi], axis=-1).reshape(-1)[:n]
    return np.asarray(out, dtype=_OUT_DTYPE[bit_width]).reshape(shape)


def _random_bits_impl(key, shape, bit_width):
    key = np.asarray(key)
    batch = key.shape[:-1]
    out = np.empty(batch + tuple(shape), _OUT_DTYPE[bit_width])
    if out.size == 0:  # nothing to draw (a zero-size shape or batch of keys)
        return out
    flat_keys = key.reshape(-1, 2)
    flat_out = out.reshape((-1,) + tuple(shape))
    for i, (k0, k1) in enumerate(flat_keys):
        flat_out[i] = _bits_one(k0, k1, shape, bit_width)
    return out


def _random_bits_abstract_eval(key, shape, bit_width):
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 2:
        raise TypeError(f"random_bits: argument 'key' must be a uint32 array of shape (..., 2), "
                        f"got {key.str_short()}")
    if bit_width not in _OUT_DTYPE:
        raise ValueError(f"random_bits: bit_width must be 32 or 64, got {bit_width!r}")
    return ShapedArray(key.shape[:-1] + tuple(shape), _OUT_DTYPE[bit_width], False)


def _random_bits_batch(args, dims, shape, bit_width):
    key, = args
    d, = dims
    # A batch of keys: one independent stream per key, batch axis in front.
    return random_bits_p.bind(move_to_front(key, d), shape=shape, bit_width=bit_width), 0


random_bits_p = Primitive("random_bits")
random_bits_p.impl = _random_bits_impl
random_bits_p.abstract_eval = _random_bits_abstract_eval
random_bits_p.batch = _random_bits_batch
defjvp_zero(random_bits_p)


def random_bits(key, shape, bit_width=32):
    """Unsigned random bits of ``shape`` derived from ``key`` (uint32[..., 2])."""
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"random_bits: shape must be non-negative, got {shape}")
    return random_bits_p.bind(key, shape=shape, bit_width=int(bit_width))


__all__ = ["random_bits", "random_bits_p"]
