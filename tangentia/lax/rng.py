"""``lax.rng_bit_generator``: XLA's stateless bit generators, with XLA's layout.

The key is 128 bits of state: a uint32 array of shape ``(4,)`` (JAX's usual form, read as
two little-endian uint64 words ``s0 = key[0] | key[1] << 32``, ``s1 = key[2] | key[3] <<
32``) or a uint64 array of shape ``(2,)`` (``[s0, s1]``).  The bits are those XLA's
``RngBitGenerator`` gives on CPU, so they equal ``jax.lax.rng_bit_generator``'s:

* Philox-4x32-10 (``RNG_DEFAULT`` and ``RNG_PHILOX``): keyed by the two words of ``s0``,
  block ``i`` hashes the 128-bit counter ``(s0 << 64 | s1) + i``; the outputs are the
  blocks' four words in row-major order (two words ``lo | hi << 32`` per uint64 element).
* Threefry-2x32 (``RNG_THREE_FRY``): keyed by ``s0``, block ``i`` hashes the 64-bit
  counter ``s1 + i``; XLA splits the output shape in two along its first even dimension
  (else its longest), the first words of the blocks filling one half and the second words
  the other, interleaved along that dimension; a uint64 element is one block,
  ``y1 | y2 << 32``.

8- and 16-bit outputs are the low bits of 32-bit ones.  The returned key is the input with
``s1`` advanced (mod 2**64) by the number of blocks drawn (Threefry: half the elements,
rounded up along the dimension split), so a zero-size draw returns the key unchanged.

It is a composition of integer operations (no primitive of its own): it stages under
``jit``, and under ``vmap`` each key of a batch gives what it gives alone.  Its outputs are
integers: no derivative.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import core
from ..primitives import structural as S
from ..primitives.prng import threefry2x32
from .enums import RandomAlgorithm
from ..primitives.misc import left_shift as shift_left, right_shift as shift_right_logical
from .numeric import add, bitwise_and, bitwise_or, bitwise_xor, mul
from .ops import _tag, concatenate, reshape, slice as _slice

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))
_OUT_DTYPES = {np.dtype(t): t for t in (np.uint8, np.uint16, np.uint32, np.uint64)}


# Shifts by less than the bit width, so NumPy's shifts (the primitives of tnp.left_shift and
# tnp.right_shift) are XLA's.


def _rotl(x, r):
    # x is a uint32 array or tracer of at least one dimension (no scalar overflow warnings)
    return bitwise_or(shift_left(x, np.uint32(r)), shift_right_logical(x, np.uint32(32 - r)))


def _lo(x):
    return bitwise_and(x, _MASK)


def _hi(x):
    return shift_right_logical(x, _S32)


def _flat(parts, n):
    """The arrays ``parts`` (each of shape ``(n,)``) interleaved: ``p0[0], p1[0], ...``."""
    cols = [reshape(p, (n, 1)) for p in parts]
    return reshape(concatenate(cols, 1), (n * len(parts),))


def _counter(words, i):
    """``(hi << 32 | lo) + i`` for the words ``(lo, hi, ...)`` (uint64, each < 2**32) and the
    uint64 array ``i``, carried through every word: the new words, each < 2**32."""
    out = []
    carry: Any = i
    for w in words:
        t = add(w, carry)
        out.append(_lo(t))
        carry = _hi(t)
    return out


def _philox(key_words, counter_words):
    k0, k1 = key_words
    c = list(counter_words)
    for _ in range(10):
        p0 = mul(_PHILOX_M[0], c[0])
        p1 = mul(_PHILOX_M[1], c[2])
        c = [bitwise_xor(bitwise_xor(_hi(p1), c[1]), k0), _lo(p1),
             bitwise_xor(bitwise_xor(_hi(p0), c[3]), k1), _lo(p0)]
        k0 = _lo(add(k0, _PHILOX_W[0]))
        k1 = _lo(add(k1, _PHILOX_W[1]))
    return c


def _split_shape(shape):
    """XLA's SplitShapeIntoHalves: (the dimension split, the half shape with a unit
    dimension after it, the shape with that dimension rounded up to even)."""
    if not shape:
        return 0, (1, 1), (2,)
    even = [d for d, n in enumerate(shape) if n % 2 == 0]
    dim = even[0] if even else max(range(len(shape)), key=lambda d: (shape[d], -d))
    half = shape[:dim] + (-(-shape[dim] // 2), 1) + shape[dim + 1:]
    full = shape[:dim] + (2 * half[dim],) + shape[dim + 1:]
    return dim, half, full


def rng_bit_generator(key: Any, shape: Any, dtype: Any = np.uint32,
                      algorithm: Any = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding: Any = None) -> tuple[Any, Any]:
    """Random bits of ``shape`` and an unsigned ``dtype`` from a 128-bit ``key``, and the
    next key (``jax.lax.rng_bit_generator``; the same bits as JAX's on CPU).

    Args:
      key: a uint32 array of shape ``(4,)`` or a uint64 array of shape ``(2,)``.
      shape: the shape of the bits (a tuple of non-negative ints).
      dtype: uint8, uint16, uint32 (default) or uint64.
      algorithm: a ``lax.RandomAlgorithm``: ``RNG_DEFAULT`` (Philox, as XLA's CPU default),
        ``RNG_PHILOX`` or ``RNG_THREE_FRY``.
      out_sharding: accepted for JAX's signature (one device).

    Returns:
      ``(new_key, bits)``: ``new_key`` has ``key``'s shape and dtype.

    Examples:
      >>> import numpy as np, tangentia.lax as lax
      >>> new_key, bits = lax.rng_bit_generator(np.array([3, 1, 4, 2], np.uint32), (3,))
      >>> new_key.tolist(), bits.tolist()
      ([3, 1, 5, 2], [3969400555, 2697517391, 489076434])
    """
    name = "rng_bit_generator"
    try:
        aval = core.get_aval(key)
    except TypeError:
        aval = None
    if aval is None or (aval.shape, aval.dtype) not in (((4,), _U32), ((2,), _U64)):
        got = type(key).__name__ if aval is None else aval.str_short()
        raise TypeError(f"{name}: argument 'key' must be a uint32 array of shape (4,) or a "
                        f"uint64 array of shape (2,) (XLA's 128-bit state), got {got}")
    try:
        out_dtype = np.dtype(dtype)
    except TypeError:
        out_dtype = None
    if out_dtype not in _OUT_DTYPES:
        raise TypeError(f"{name}: unsupported dtype {out_dtype or dtype}"
                        + _tag(name, "dtype must be uint8, uint16, uint32 or uint64"))
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape!r:.60}." + _tag(name, "argument 'shape' must be a tuple of "
                                                 "ints")) from None
    if any(d < 0 for d in shape):
        raise TypeError(f"{name}: argument 'shape' must be non-negative, got {shape}")
    try:
        algorithm = RandomAlgorithm(algorithm)
    except ValueError:
        raise TypeError(f"{name}: argument 'algorithm' must be a lax.RandomAlgorithm, got "
                        f"{algorithm!r}") from None
    del out_sharding

    k = S.convert_element_type(key, _U64)
    if aval.dtype == _U32:
        words = [k[0], k[1], k[2], k[3]]
    else:
        words = [_lo(k[0]), _hi(k[0]), _lo(k[1]), _hi(k[1])]
    n = int(np.prod(shape, dtype=np.int64))
    wide = out_dtype == _U64
    if algorithm == RandomAlgorithm.RNG_THREE_FRY:
        if wide:
            blocks, advance, half, full, dim = n, n, (n,), None, 0
        else:
            dim, half, full = _split_shape(shape)
            blocks = advance = int(np.prod(half, dtype=np.int64))
        c0, c1 = _counter(words[2:], np.arange(blocks, dtype=_U64))
        zeros = mul(c0, np.uint64(0))   # the key words as arrays of the counters' shape
        k0, k1 = (S.convert_element_type(add(w, zeros), _U32) for w in words[:2])
        y1, y2 = threefry2x32(k0, k1, S.convert_element_type(c0, _U32),
                              S.convert_element_type(c1, _U32), rotl=_rotl)
        if wide:
            bits = bitwise_or(S.convert_element_type(y1, _U64),
                              shift_left(S.convert_element_type(y2, _U64), _S32))
            bits = reshape(bits, shape)
        elif not shape:
            bits = reshape(y1, ())
        else:
            bits = concatenate([reshape(y1, half), reshape(y2, half)], dim + 1)
            bits = reshape(bits, full)
            if full != shape:
                bits = _slice(bits, (0,) * len(shape), shape)
    else:
        per = 2 if wide else 4
        blocks = advance = -(-n // per)
        counters = _counter([words[2], words[3], words[0], words[1]],
                            np.arange(blocks, dtype=_U64))
        out = _flat(_philox(words[:2], counters), blocks)
        if wide:
            out = bitwise_or(out[0::2], shift_left(out[1::2], _S32))
        bits = reshape(_slice(out, (0,), (n,)), shape)
    bits = S.convert_element_type(bits, out_dtype)   # 8/16 bits: the low bits (wraps)

    s1 = _counter(words[2:], np.uint64(advance))
    if aval.dtype == _U32:
        new_key = concatenate([reshape(w, (1,)) for w in words[:2] + s1], 0)
    else:
        new_key = concatenate([reshape(k[0], (1,)), reshape(bitwise_or(s1[0], shift_left(s1[1], _S32)), (1,))], 0)
    return S.convert_element_type(new_key, aval.dtype), bits
