"""Primitives on the bits of numbers, as JAX's: ``bitcast_convert_type`` (the bits read as
another dtype), ``reduce_precision`` (rounded to a narrower float format, bit for bit as
XLA's) and ``reduce_xor`` (the bitwise XOR of the entries over axes; ``reduce_and`` and
``reduce_or``, which tangentia.numpy's ``all``/``any`` bind on booleans, live in
``primitives.reductions``).

Each is declared once here with all its rules: impl, shape rule, batching, JVP (zero for
``bitcast_convert_type`` and ``reduce_xor``; ``reduce_precision`` is linear, its tangent and
cotangent rounded the same way, as JAX's).  The NumPy backend runs their impl; the numba
backend its fallback.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Primitive, ShapedArray
from ..interpreters.ad import deflinear, defjvp_zero
from ..interpreters.base_ops import check_axes, move_to_front, reduced_shape
from ..interpreters.batching import primitive_batchers

# ---------------------------------------------------------------------------
# bitcast_convert_type


def bit_width(dtype) -> int:
    """The width of ``dtype`` in bits (4 for ml_dtypes' int4/uint4, which NumPy stores in a
    byte)."""
    dtype = np.dtype(dtype)
    return 4 if dtype.name in ("int4", "uint4") else 8 * dtype.itemsize


def bitcast_shape(shape: tuple[int, ...], old: np.dtype, new: np.dtype) -> tuple[int, ...]:
    """The result shape of reading ``shape`` of ``old`` as ``new`` (XLA's rule: a narrower
    type adds a trailing axis of the size ratio, a wider one consumes it), with JAX's
    errors."""
    bo, bn = bit_width(old), bit_width(new)
    if bo == bn:
        out = tuple(shape)
    elif bo > bn:
        out = tuple(shape) + (bo // bn,)
    elif not shape or shape[-1] * bo != bn:
        last = shape[-1] if shape else 1
        raise ValueError(
            f"Attempting to convert array of shape {tuple(shape)} from {old} of size {bo} bits "
            f"to {new} of size {bn}, bits but {last} * {bo} != {bn}"
            " (bitcast_convert_type: a wider type merges a trailing axis of the size ratio)")
    else:
        out = tuple(shape[:-1])
    if old != new and (dtypes.kind(old) in "bc" or dtypes.kind(new) in "bc"):
        raise TypeError(
            "lax.bitcast_convert_type does not support bool or complex values unless the "
            f"operand and destination types match. Got operand dtype={old}, new_dtype={new!r}."
            " Consider using the arr.view() method instead.")
    return out


def _nibbles_to(nib, dtype):
    """Values 0..15 (uint8) as the 4-bit ``dtype`` (int4 sign-extends)."""
    if np.dtype(dtype).name == "int4":
        nib = np.where(nib >= 8, nib.astype(np.int8) - 16, nib.astype(np.int8))
    return nib.astype(dtype)


def _bitcast_impl(x, new_dtype):
    """The bits of ``x`` read as ``new_dtype``; 4-bit values packed two to a byte, the first
    in the low half."""
    a = np.asarray(x)
    new_dtype = np.dtype(new_dtype)
    out = bitcast_shape(a.shape, a.dtype, new_dtype)
    a = np.ascontiguousarray(a).reshape(a.shape)   # (ascontiguousarray makes 0-d 1-d)
    bo, bn = bit_width(a.dtype), bit_width(new_dtype)
    if bo != 4 and bn != 4:  # NumPy views 0-d arrays only at one itemsize: view 1-d
        return a.reshape(-1).view(new_dtype).reshape(out)
    if bo == 4:
        nib = a.astype(np.int8).view(np.uint8) & 0xF
        if bn == 4:
            return _nibbles_to(nib, new_dtype)
        packed = nib[..., 0::2] | (nib[..., 1::2] << 4)
        return np.ascontiguousarray(packed).reshape(-1).view(new_dtype).reshape(out)
    b = a.reshape(-1).view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))
    nib = np.stack([b & 0xF, b >> 4], axis=-1).reshape(out)
    return _nibbles_to(nib, new_dtype)


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.impl = _bitcast_impl
bitcast_convert_type_p.abstract_eval = lambda x, new_dtype: ShapedArray(
    bitcast_shape(x.shape, x.dtype, new_dtype), new_dtype, False)
defjvp_zero(bitcast_convert_type_p)   # JAX's: the bits of a value have no derivative


def _bitcast_batch(args, dims, new_dtype):
    return bitcast_convert_type_p.bind(move_to_front(args[0], dims[0]), new_dtype=new_dtype), 0


primitive_batchers[bitcast_convert_type_p] = _bitcast_batch


def bitcast_convert_type(x, new_dtype):
    return bitcast_convert_type_p.bind(x, new_dtype=np.dtype(new_dtype))


# ---------------------------------------------------------------------------
# reduce_precision

_IEEE = ("float16", "float32", "float64", "bfloat16")


def _reduce_precision_bits(x, exponent_bits, mantissa_bits):
    """XLA's ReducePrecision on the bits of ``x`` (float16/32/64, bfloat16): the mantissa
    rounded half to even to ``mantissa_bits`` bits, then exponents past the narrower
    format's range made infinite (overflow) or signed zero (its subnormals and below), NaN
    kept (with ``mantissa_bits`` 0 too, as JAX 0.10.2's)."""
    fi = dtypes.finfo(x.dtype)
    nbits, src_m, src_e = 8 * x.dtype.itemsize, int(fi.nmant), int(fi.nexp)
    u = np.dtype(f"u{x.dtype.itemsize}").type
    bits = np.ascontiguousarray(x).reshape(x.shape).view(u).copy()
    if mantissa_bits < src_m:
        shift = src_m - mantissa_bits
        last = u(1 << shift)
        lastbit = (bits & last) >> u(shift)
        bits = (bits + lastbit + u((1 << (shift - 1)) - 1)) & ~u((1 << shift) - 1)
    if exponent_bits < src_e:
        exp_mask = u(((1 << src_e) - 1) << src_m)
        bias = (1 << (src_e - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        over = exponent > u((bias + reduced_bias) << src_m)
        under = exponent <= u((bias - reduced_bias) << src_m)
        signed_zero = bits & u(1 << (nbits - 1))
        bits = np.where(over, signed_zero | exp_mask, np.where(under, signed_zero, bits))
    out = np.asarray(bits).view(x.dtype).reshape(x.shape)
    return np.where(np.isnan(x), x, out)


def _reduce_precision_impl(x, exponent_bits, mantissa_bits):
    x = np.asarray(x)
    if x.dtype.name in _IEEE:
        return _reduce_precision_bits(x, exponent_bits, mantissa_bits)
    # the float8/6/4 formats: rounded in float16 (float32 past its exponents), which holds
    # all their values, as XLA's CPU backend does
    wide = np.float16 if int(dtypes.finfo(x.dtype).nexp) <= 5 else np.float32
    return _reduce_precision_bits(x.astype(wide), exponent_bits, mantissa_bits).astype(x.dtype)


reduce_precision_p = Primitive("reduce_precision")
reduce_precision_p.impl = _reduce_precision_impl
reduce_precision_p.abstract_eval = lambda x, exponent_bits, mantissa_bits: x
deflinear(reduce_precision_p, lambda ct, x, exponent_bits, mantissa_bits: (
    reduce_precision_p.bind(ct, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits),))
primitive_batchers[reduce_precision_p] = lambda args, dims, **params: (
    reduce_precision_p.bind(args[0], **params), dims[0])


def reduce_precision(x, exponent_bits: int, mantissa_bits: int):
    return reduce_precision_p.bind(x, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)


# ---------------------------------------------------------------------------
# reduce_xor: the bitwise XOR over axes, of booleans or integers


def _reduce_xor_abstract_eval(x, axes):
    if dtypes.kind(x.dtype) not in "biu":
        raise TypeError(f"logical reduction requires operand dtype bool or int, got "
                        f"{x.dtype}. (reduce_xor: argument 'operand')")
    check_axes("reduce_xor", x, axes)
    return ShapedArray(reduced_shape(x.shape, axes), x.dtype, x.weak_type)


def _reduce_xor_impl(x, axes):
    x = np.asarray(x)
    if dtypes.kind(x.dtype) != x.dtype.kind:   # int4/uint4: XOR of the values in a byte
        wide = np.int8 if x.dtype.name == "int4" else np.uint8
        return np.asarray(np.bitwise_xor.reduce(x.astype(wide), axis=axes)).astype(x.dtype)
    return np.asarray(np.bitwise_xor.reduce(x, axis=axes))


reduce_xor_p = Primitive("reduce_xor")
reduce_xor_p.impl = _reduce_xor_impl
reduce_xor_p.abstract_eval = _reduce_xor_abstract_eval
defjvp_zero(reduce_xor_p)


def _reduce_xor_batch(args, dims, axes):
    d = dims[0]
    new_axes = tuple(a if a < d else a + 1 for a in axes)
    return reduce_xor_p.bind(args[0], axes=new_axes), d - sum(1 for a in axes if a < d)


primitive_batchers[reduce_xor_p] = _reduce_xor_batch


def reduce_xor(x, axes):
    return reduce_xor_p.bind(x, axes=tuple(sorted(int(a) for a in axes)))


__all__ = ["bit_width", "bitcast_convert_type", "bitcast_convert_type_p", "bitcast_shape",
           "reduce_precision", "reduce_precision_p", "reduce_xor", "reduce_xor_p"]
