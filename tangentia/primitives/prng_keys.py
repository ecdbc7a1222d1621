"""Typed PRNG keys: the two primitives between a key array and its raw data.

A typed key array (``tangentia.random.key``, JAX's ``key<fry>`` arrays) has the
dtype ``dtypes.key_fry``: a NumPy structured dtype whose one element is a whole
threefry2x32 key (two uint32 words), so a scalar key has shape ``()`` and an
array of keys the shape of the array.  Everything structural (reshape,
indexing, broadcasting, concatenation, ``where``, loop carries) works on keys as
on any array; the random functions go through the raw data:

* ``random_unwrap_p(keys)``: ``key<fry>[*s]`` -> ``uint32[*s, 2]`` (JAX's
  ``random_unwrap``, ``jax.random.key_data``);
* ``random_wrap_p(data)``: ``uint32[*s, 2]`` -> ``key<fry>[*s]`` (JAX's
  ``random_wrap``, ``jax.random.wrap_key_data``).

Both are bit-preserving views (copied, as values are immutable), so the
numbers of a typed key are those of its raw key.  Keys are not differentiable:
their tangents are ``float0`` zeros and so are those of their data (integers).
Batching keeps the batch axis where it is (moved to the front when it is the
data's trailing key axis).  Neither has a native numba lowering: a program
holding a key value (dtype kind 'V') runs on the NumPy backend.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Primitive, ShapedArray
from ..interpreters.ad import defjvp_zero
from ..interpreters.batching import move_to_front, primitive_batchers

_U32 = np.dtype(np.uint32)
KEY = dtypes.key_fry


def _unwrap_impl(keys):
    return np.array(np.asarray(keys)[dtypes.KEY_FIELD], dtype=_U32)


def _unwrap_abstract_eval(keys):
    if not dtypes.is_key(keys.dtype):
        raise TypeError(f"random_unwrap takes key array operand, got {keys.str_short()} "
                        "(key_data: argument 'keys' must be a typed PRNG key array, "
                        "e.g. tangentia.random.key(0))")
    return ShapedArray(keys.shape + (2,), _U32, False)


def _unwrap_batch(args, dims):
    (keys,), (d,) = args, dims
    return random_unwrap_p.bind(keys), d


random_unwrap_p = Primitive("random_unwrap")
random_unwrap_p.impl = _unwrap_impl
random_unwrap_p.abstract_eval = _unwrap_abstract_eval
primitive_batchers[random_unwrap_p] = _unwrap_batch
defjvp_zero(random_unwrap_p)


def _wrap_impl(data):
    data = np.ascontiguousarray(data, dtype=_U32)
    out = np.empty(data.shape[:-1], KEY)
    out[dtypes.KEY_FIELD] = data
    return out


def check_key_data(aval):
    """JAX's error for data that is not raw threefry2x32 key data (uint32[..., 2])."""
    if aval.dtype != _U32:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={aval.dtype} (wrap_key_data: argument "
                        "'key_bits_array' must be uint32 data whose last axis has size 2)")
    if aval.ndim < 1 or aval.shape[-1] != 2:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to "
                        f"end with (2,); got shape={aval.shape} for impl=threefry2x32 "
                        "(wrap_key_data: argument 'key_bits_array' must be uint32 data whose "
                        "last axis has size 2)")


def _wrap_abstract_eval(data):
    check_key_data(data)
    return ShapedArray(data.shape[:-1], KEY, False)


def _wrap_batch(args, dims):
    (data,), (d,) = args, dims
    if d == data.ndim - 1:     # the key words' axis must stay last
        data, d = move_to_front(data, d), 0
    return random_wrap_p.bind(data), d


random_wrap_p = Primitive("random_wrap")
random_wrap_p.impl = _wrap_impl
random_wrap_p.abstract_eval = _wrap_abstract_eval
primitive_batchers[random_wrap_p] = _wrap_batch
defjvp_zero(random_wrap_p)


def random_wrap(data):
    """A typed key array from raw uint32[..., 2] key data."""
    return random_wrap_p.bind(data)


def random_unwrap(keys):
    """The raw uint32[..., 2] data of a typed key array."""
    return random_unwrap_p.bind(keys)


def is_key_array(x):
    """Whether ``x`` (a value or tracer) is a typed key array."""
    dt = getattr(x, "dtype", None)
    return isinstance(dt, np.dtype) and dt.kind == "V" and dtypes.is_key(dt)


def keys_equal(x, y, name="equal", negate=False):
    """``x == y`` (``x != y`` if ``negate``) of two typed key arrays, elementwise over the
    keys (as JAX's ``jnp.equal`` of keys, which its lowering unwraps): both words of the
    keys' data compared, ``eq`` (``ne``) of ``random_unwrap``'s data reduced over the words.
    A key with a value that is no key: JAX's TypeError ("equal does not accept dtypes
    key<fry>, int64."); neither a key (other structured dtypes): ``eq`` (``ne``) itself.
    ``tangentia.numpy.equal``/``not_equal`` call it for operands of dtype kind "V"."""
    from . import elementwise as E
    from .reductions import reduce_and_p, reduce_or_p
    if not (is_key_array(x) or is_key_array(y)):
        return E.ne(x, y) if negate else E.eq(x, y)
    if not (is_key_array(x) and is_key_array(y)):
        raise dtypes.key_comparison_error(name, [dtypes.operand_dtype(a) for a in (x, y)])
    a, b = random_unwrap(x), random_unwrap(y)
    axes = (max(a.ndim, b.ndim) - 1,)
    if negate:
        return reduce_or_p.bind(E.ne(a, b), axes=axes)
    return reduce_and_p.bind(E.eq(a, b), axes=axes)
