"""``jax.lax``'s thin operations: elementwise aliases (``acos``, ``lgamma``,
``igamma``, ...), bit operations, reductions by index or logic, ``round`` with
JAX's tie rule and ``reduce_precision``.

Each is a composition of existing primitives (so it differentiates, batches and
stages like them) or, for the integer bit manipulations that have no
derivative, a vectorized NumPy kernel called through ``pure_callback``.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from .. import core, dtypes
from ..numpy import _elementwise as NE
from ..numpy import _reductions as NR
from ..primitives import bits as BITS
from ..primitives import elementwise as E
from ..primitives import misc as M
from ..primitives import reductions as R
from ..primitives import special as SP
from ..primitives import structural as S
from ..primitives.callback import pure_callback
from .enums import RoundingMethod
from .ops import _four_bit_in_byte, _in_operand_dtype, _reduction_axes, _static_int, _tag

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, DType, DTypeLike

# ---------------------------------------------------------------------------
# Elementwise aliases (JAX's names for existing functions)

acos, asin, atan = E.arccos, E.arcsin, E.arctan
acosh, asinh, atanh = E.arccosh, E.arcsinh, E.arctanh
lgamma = _in_operand_dtype(SP.gammaln)
_digamma = _in_operand_dtype(SP.digamma)


def digamma(x: ArrayLike) -> Array:
    """The digamma function (``jax.lax.digamma``): NaN at the poles 0, -0 and the negative
    integers, as JAX's (SciPy's is -inf/+inf at -0/+0)."""
    out = _digamma(x)
    zero = np.zeros((), _dtype(out))
    return E.select(E.eq(x, zero), np.full((), np.nan, _dtype(out)), out)

_polygamma, erfc = _in_operand_dtype(SP.polygamma), _in_operand_dtype(SP.erfc)


def polygamma(m: ArrayLike, x: ArrayLike) -> Array:
    """``jax.lax.polygamma``: the ``m``-th derivative of ``digamma`` at ``x``, in ``x``'s
    dtype."""
    return _polygamma(m, x)


erf_inv, zeta = _in_operand_dtype(SP.erfinv), _in_operand_dtype(SP.zeta)
betainc = _in_operand_dtype(SP.betainc)
igamma, igammac = _in_operand_dtype(SP.gammainc), _in_operand_dtype(SP.gammaincc)
bessel_i0e, bessel_i1e = _in_operand_dtype(SP.i0e), _in_operand_dtype(SP.i1e)
is_finite = NE.isfinite


def _same_dtypes(name, fn, tip=None, accepted=None):
    """``jax.lax.<name>``: ``fn`` of two arguments of one dtype.  lax does not promote
    (``lax.add(f32, f64)`` and ``lax.add(1, 1.0)`` are TypeErrors, as in JAX); the
    ``tangentia.numpy`` functions do.  ``accepted`` (JAX's words, e.g. ``"integer,
    floating"``) names the kinds an op takes when it does not take complex (and, without
    ``bool``, booleans): JAX's TypeError for the others, where NumPy would return a
    number (``rem``, ordering comparisons)."""
    hint = f" (Tip: {tip} is a similar function that does automatic type promotion on " \
           "inputs)." if tip else ""
    rejected = "" if accepted is None else "c" + ("" if "bool" in accepted else "b")

    @functools.wraps(fn)
    def op(x, y):
        dx, dy = core.get_aval(x).dtype, core.get_aval(y).dtype
        if dx != dy:
            raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                            f"{dx}, {dy}.{hint}")
        if np.dtype(dx).kind in rejected:
            raise TypeError(f"{name} does not accept dtype {np.dtype(dx).name} at position 0. "
                            f"Accepted dtypes at position 0 are subtypes of {accepted}.")
        if dx.kind == "V" and dx.name in _FOUR_BIT:
            return _in_byte(fn, dx, x, y)
        return fn(x, y)
    op.__name__ = op.__qualname__ = name
    return op


# ---------------------------------------------------------------------------
# int4/uint4: NumPy (ml_dtypes) computes most of their operations in int8, so lax computes
# them in a byte and wraps the result back to 4 bits, as XLA's 4-bit arithmetic does.

_FOUR_BIT = ("int4", "uint4")


def _is_four_bit(dtype):
    return dtype.kind == "V" and dtype.name in _FOUR_BIT


def _byte_of(dtype):
    """The byte dtype a 4-bit ``dtype``'s values are computed in (int8, or uint8 for uint4)."""
    return np.dtype(np.int8 if dtype.name == "int4" else np.uint8)


def _in_byte(fn, dtype, *args):
    """``fn`` of the 4-bit ``args`` computed in a byte; a byte result wraps back to
    ``dtype`` (its low 4 bits, sign-extended for int4), a boolean one stays."""
    wide = _byte_of(dtype)
    out = fn(*[S.convert_element_type(a, wide) for a in args])
    return S.convert_element_type(out, dtype) if _dtype(out) == wide else out


def _unary_four_bit(name, fn, signed_only=False):
    """``jax.lax.<name>``: ``fn``, with int4/uint4 computed in a byte and wrapped back
    (``signed_only``: the unsigned 4-bit type is refused, as JAX's ``abs``)."""
    @functools.wraps(fn)
    def op(x):
        dt = _dtype(x)
        if not _is_four_bit(dt):
            return fn(x)
        if name == "abs":   # JAX's words: abs takes no 4-bit type
            raise TypeError(
                f"abs does not accept dtype {dt.name}. " + (
                    "Support for narrow-width integers is platform-dependent and limited to a "
                    "few specific operations, e.g. basic arithmetic and type casting."
                    if dt.name == "int4" else
                    "Accepted dtypes are subtypes of floating, complexfloating, signedinteger."))
        return _in_byte(fn, dt, x)
    op.__name__ = op.__qualname__ = name
    return op


integer_pow = _four_bit_in_byte(E.integer_pow)   # (int4/uint4 modulo 16, as XLA's)
neg = _unary_four_bit("neg", E.neg)
sign = _unary_four_bit("sign", E.sign)
abs = _unary_four_bit("abs", E.abs)  # noqa: A001 - JAX's name


add = _same_dtypes("add", E.add, "jnp.add")
sub = _same_dtypes("sub", E.sub, "jnp.subtract")
_mul = _same_dtypes("mul", E.mul, "jnp.multiply")


def mul(x: ArrayLike, y: ArrayLike, *, out_dtype: DTypeLike | None = None) -> Array:
    """Elementwise ``mul`` (``jax.lax.mul``): the same values as NumPy's ``multiply``.

    Args:
      x: an array or scalar.
      y: an array or scalar of ``x``'s dtype (any dtype with ``out_dtype``) and shape (or
        broadcastable).
      out_dtype: JAX's: the result's dtype; the operands are converted to it before the
        product (as JAX's reference computes it).  None: the operands' (one) dtype.

    Returns:
      An array of the inputs' broadcast shape.
    """
    if out_dtype is None:
        return _mul(x, y)
    want = np.dtype(out_dtype)   # the operands may then differ in dtype, as in JAX
    return _mul(S.convert_element_type(x, want), S.convert_element_type(y, want))
def _int_divisor(x, y):
    """For integer ``x / y``: where ``y`` is 0 (and, signed, -1) a divisor of 1 that
    cannot trap or overflow, and the masks of those entries."""
    zero = E.eq(y, np.zeros((), _dtype(y)))
    bad = zero
    if _dtype(y).kind == "i":
        minus = E.eq(y, np.full((), -1, _dtype(y)))
        bad = E.or_p.bind(zero, minus)
    else:
        minus = None
    return E.select(bad, np.ones((), _dtype(y)), y), zero, minus


def _div(x: ArrayLike, y: ArrayLike) -> Array:
    """``x / y``; for integers rounded toward zero, as C's (and XLA's) integer
    division, with XLA's answers where C's has none: ``x / 0`` has every bit set (-1,
    or the unsigned maximum) and ``INT_MIN / -1`` wraps to ``INT_MIN``."""
    if _dtype(x).kind not in "iu":
        return E.div(x, y)
    safe, zero, minus = _int_divisor(x, y)
    r = NE.fmod(x, safe)
    q = E.floor_divide(E.sub(x, r), safe)  # exact: x - r is a multiple of safe
    if minus is not None:
        q = E.select(minus, E.neg(x), q)
    return E.select(zero, np.full((), -1).astype(_dtype(x)), q)


def _rem(x: ArrayLike, y: ArrayLike) -> Array:
    """C's remainder (the sign of ``x``); for integers, ``x % 0`` is ``x`` as XLA's."""
    if _dtype(x).kind not in "iu":
        return NE.fmod(x, y)
    safe, zero, _ = _int_divisor(x, y)
    return E.select(zero, x, NE.fmod(x, safe))


div = _same_dtypes("div", _div, "jnp.divide")
div.__doc__ = """Elementwise division (``jax.lax.div``): true division for floating and
complex values; for integers the quotient rounded toward zero (C's), ``x / 0`` having every
bit set and ``INT_MIN / -1`` wrapping to ``INT_MIN``, as XLA's.

Args:
  x: an array or scalar (the dividend).
  y: an array or scalar of ``x``'s dtype (the divisor).

Returns:
  An array of the inputs' broadcast shape and dtype.
"""
rem = _same_dtypes("rem", _rem, accepted="integer, floating")  # C's remainder (the sign of x), as JAX's lax.rem
rem.__doc__ = """Elementwise C-style remainder (``jax.lax.rem``): ``x - y * trunc(x / y)``,
with the sign of ``x`` (NumPy's ``fmod``), exact for floats; an integer ``x % 0`` is ``x``,
as XLA's.

Args:
  x: an array or scalar (the dividend).
  y: an array or scalar of ``x``'s dtype (the divisor).

Returns:
  An array of the inputs' broadcast shape and dtype.

Example:
  >>> from tangentia import lax
  >>> lax.rem(-7.0, 3.0)
  Array(-1.)
"""
max = _same_dtypes("max", E.maximum, "jnp.maximum")  # noqa: A001 - JAX's names
min = _same_dtypes("min", E.minimum, "jnp.minimum")  # noqa: A001
atan2 = _same_dtypes("atan2", E.arctan2, "jnp.arctan2")
_nextafter = _same_dtypes("nextafter", M.nextafter, "jnp.nextafter")


def nextafter(x1: ArrayLike, x2: ArrayLike) -> Array:
    """``jax.lax.nextafter``: the next floating-point value after ``x1`` towards ``x2`` (of
    one dtype)."""
    return _nextafter(x1, x2)


eq = _same_dtypes("eq", E.eq, "jnp.equal")
ne = _same_dtypes("ne", E.ne, "jnp.not_equal")
lt = _same_dtypes("lt", E.lt, accepted="integer, floating, bool")
le = _same_dtypes("le", E.le, accepted="integer, floating, bool")
gt = _same_dtypes("gt", E.gt, accepted="integer, floating, bool")
ge = _same_dtypes("ge", E.ge, accepted="integer, floating, bool")


def complex_(x: ArrayLike, y: ArrayLike) -> Array:
    """``x + 1j * y`` (``jax.lax.complex``); JAX's TypeError for an operand that is no array
    or number (NumPy took None as an object: ``lax.complex(x, None)`` was NaN), or is a list
    (lax takes no lists)."""
    _lax_operands("complex", (x, y), lists=False)
    return E.complex_(x, y)


def _lax_operands(name, args, lists=True):
    """JAX's TypeError for an operand of ``lax.<name>`` that is no array or number (None, a
    str, an object: NumPy computes with them as objects, NaN), or a list unless ``lists``."""
    for i, v in enumerate(args):
        if isinstance(v, (list, tuple)):
            ok = lists
        else:
            try:
                core.get_aval(v)
                ok = True
            except TypeError:
                ok = False
        if not ok:
            raise TypeError(f"Error interpreting argument to {name} as a JAX value. The "
                            f"problematic value is of type {type(v)} and was passed to "
                            f"{name} at position {i}.")


def conj(x: ArrayLike) -> Array:
    """The complex conjugate (``jax.lax.conj``): complex for real operands too
    (float32 -> complex64, float64 -> complex128), as JAX's; ``tnp.conj`` keeps a real
    dtype, as NumPy's."""
    dt = _dtype(x)
    if dt.kind != "c":
        if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"conj does not accept dtype {dt.name}. Accepted dtypes are "
                            "subtypes of float32, complexfloating, float64."
                            + _tag("conj", "argument 'x' must be float32, float64 or "
                                   "complex"))
        return E.complex_(x, np.zeros((), dt))  # imaginary part +0, as JAX's
    return E.conj(x)


def _with_accuracy(fn):
    """``fn`` taking JAX's keyword ``accuracy`` (a tolerance or ``AccuracyMode`` for
    XLA's transcendental kernels), accepted and ignored: NumPy's are accurate to ~1 ULP."""
    @functools.wraps(fn)
    def op(x, *, accuracy=None):   # (keyword-only, as JAX's: lax.sin(x, 2) ran)
        return fn(x)
    op.__doc__ = (f"{fn.__doc__ or fn.__name__}\n\n``accuracy`` (JAX's) is accepted and "
                  "ignored.")
    return op


def _log1p(x: ArrayLike) -> Array:
    """``log(1 + x)``; for complex ``x`` accurate near 0 (NumPy's complex ``log1p`` forms
    ``1 + x`` first: ``log1p(1e-5 + 0j)`` in complex64 was 1.00135e-05, 1353 ULPs off): the
    real part is ``log1p(x (2 + x) + y^2) / 2`` where ``|1 + z|`` is within [1/2, 2] (else
    ``log |1 + z|``), the imaginary part ``atan2(y, 1 + x)``."""
    if _dtype(x).kind != "c":
        return E.log1p(x)
    re, im = E.real(x), E.imag(x)
    one = np.ones((), _dtype(re))
    xp1 = E.add(re, one)
    u = E.add(E.mul(re, E.add(xp1, one)), E.mul(im, im))   # |1 + z|^2 - 1
    near = E.and_p.bind(E.ge(u, np.asarray(-0.75, _dtype(re))),
                        E.le(u, np.asarray(3.0, _dtype(re))))
    safe_u = E.select(near, u, np.zeros((), _dtype(re)))
    half = np.asarray(0.5, _dtype(re))
    real = E.select(near, E.mul(half, E.log1p(safe_u)), E.log(NE.hypot(xp1, im)))
    return E.complex_(real, E.arctan2(im, xp1))


exp, log, log1p, expm1, tanh, sin, cos, tan, sqrt = (
    _with_accuracy(f) for f in (E.exp, E.log, _log1p, E.expm1, E.tanh, E.sin, E.cos, E.tan,
                                E.sqrt))
log1p.__name__ = log1p.__qualname__ = "log1p"


def cbrt(x: ArrayLike, *, accuracy: Any = None) -> Array:
    """The real cube root (``jax.lax.cbrt``); ``accuracy`` is accepted and ignored."""
    return E.cbrt(x)


def exp2(x: ArrayLike, *, accuracy: Any = None) -> Array:
    """``2 ** x`` (``jax.lax.exp2``); ``accuracy`` is accepted and ignored."""
    return NE.exp2(x)


def reciprocal(x: ArrayLike) -> Array:
    """``1 / x`` in the dtype of ``x`` (``jax.lax.reciprocal``)."""
    return E.div(np.ones((), _dtype(x)), x)


def igamma_grad_a(a: ArrayLike, x: ArrayLike) -> Array:
    """The derivative of the regularized lower incomplete gamma function in ``a``."""
    _lax_operands("igamma_grad_a", (a, x))   # (igamma_grad_a(x, None) was NaN)
    return SP.igamma_grad_a_p.bind(a, x)


def round(x: ArrayLike,  # noqa: A001 - JAX's name
          rounding_method: int | RoundingMethod = RoundingMethod.AWAY_FROM_ZERO) -> Array:
    """``x`` rounded to an integral value; ties away from zero by default, as in
    JAX (``rounding_method=RoundingMethod.TO_NEAREST_EVEN`` rounds half to even)."""
    method = RoundingMethod(int(rounding_method))
    if method == RoundingMethod.TO_NEAREST_EVEN:
        return E.round(x)
    t = NE.trunc(x)
    return E.select(E.eq(E.abs(E.sub(x, t)), 0.5), E.add(t, E.sign(x)), E.round(x))


def _dtype(x):
    return np.dtype(core.get_aval(x).dtype)


def dtype(x: Any) -> DType:
    """The dtype of ``x`` (``jax.lax.dtype``: Python scalars take the default
    float64/int64/complex128/bool dtypes)."""
    if isinstance(x, (type, np.dtype, str)):
        return np.dtype(x)
    return _dtype(x)


# ---------------------------------------------------------------------------
# reduce_precision: round to a floating-point format of fewer bits


def reduce_precision(operand: float | ArrayLike, exponent_bits: int, mantissa_bits: int) -> Array:
    """``operand`` rounded to a float format with ``exponent_bits`` exponent and
    ``mantissa_bits`` mantissa bits, kept in its own dtype (``jax.lax.reduce_precision``),
    bit for bit as XLA's: the mantissa rounded half to even, values past the format's
    largest finite number infinite, those below its smallest normal number signed zero,
    NaN kept.  It is linear as JAX's: its tangent and cotangent are rounded the same way.

    Args:
      operand: a floating array or scalar (any float dtype, bfloat16 and float8 too).
      exponent_bits: the exponent bits of the format (at least 1).
      mantissa_bits: the mantissa (fraction) bits of the format (at least 0).
    """
    exponent_bits = _static_int("reduce_precision", "exponent_bits", exponent_bits)
    mantissa_bits = _static_int("reduce_precision", "mantissa_bits", mantissa_bits)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: exponent_bits must be >= 1 and mantissa_bits >= 0, "
                         f"got {exponent_bits} and {mantissa_bits}")
    x = operand if isinstance(operand, core.Tracer) else np.asarray(operand)
    if not dtypes.is_real_floating(_dtype(x)):
        raise TypeError(f"reduce_precision: argument 'operand' must be floating, got {_dtype(x)}")
    return BITS.reduce_precision(x, exponent_bits, mantissa_bits)


# ---------------------------------------------------------------------------
# Bit operations on integers (NumPy kernels; they have no derivative)


def _bits_call(fname, kernel, out_dtype, *args):
    """``kernel`` of integer ``args`` through ``pure_callback`` (the kernels take int4/uint4
    too, as 4-bit values)."""
    args = [a if isinstance(a, core.Tracer) else np.asarray(a) for a in args]
    for a in args:
        if dtypes.kind(_dtype(a)) not in "iub":
            raise TypeError(f"{fname}: arguments must be integers, got {_dtype(a)}")
    shapes = [core.get_aval(a).shape for a in args]
    shape = np.broadcast_shapes(*shapes)
    args = [a if s == shape else S.broadcast_to(a, shape) for a, s in zip(args, shapes)]
    out = core.ShapedArray(shape, np.dtype(out_dtype or _dtype(args[0])))
    return pure_callback(kernel, out, *args, vmap_method="expand_dims")


def _unsigned(x):
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind == "i" else x


def _nibbles(x, dtype=None):
    """The low 4 bits of each integer of ``x`` (int4/uint4 or a byte) as uint8 values 0..15,
    or read as the 4-bit ``dtype``."""
    nib = np.asarray(x).astype(np.int8 if x.dtype.kind != "u" else np.uint8).view(np.uint8) \
        & np.uint8(0xF)
    return nib if dtype is None else _nibbles_to(nib, dtype)


def _four_bit_kernel(kernel, direction=None):
    """``kernel`` for 4-bit operands: computed on their values in int8 (``direction``
    'arithmetic': sign-extended from 4 bits, uint4 too, as XLA's; 'logical': the
    unsigned 4-bit value), with the shift amounts that leave 4 bits (below 0, 4 or
    more) made the byte's own out-of-range amount, and the result's low 4 bits
    read back as the operand's dtype."""
    def run(x, *rest):
        x = np.asarray(x)
        if not _is_four_bit(x.dtype):
            return kernel(x, *rest)
        nib = _nibbles(x).astype(np.int8)
        if direction == "logical":
            v = nib
        else:   # sign-extended 4-bit values (int4's own; uint4 read as signed)
            v = np.where(nib >= 8, nib - 16, nib).astype(np.int8)
        if direction is not None:
            y = np.asarray(rest[0]).astype(np.int64)
            y = np.where((y >= 0) & (y < 4), y, 8).astype(np.int8)
            out = kernel(v, y)
        else:
            out = kernel(v, *[np.asarray(r).astype(np.int8) for r in rest])
        return _nibbles(np.asarray(out).astype(np.int8), x.dtype)
    return run


def _shift_kernel(direction):
    @functools.partial(_four_bit_kernel, direction=direction)
    def kernel(x, y):
        x = np.asarray(x)
        bits = 8 * x.dtype.itemsize
        y = np.asarray(y).astype(np.int64)
        inside = (y >= 0) & (y < bits)
        ys = np.where(inside, y, 0).astype(x.dtype)
        if direction == "left":
            out, fill = np.left_shift(x, ys), np.zeros((), x.dtype)
        elif direction == "arithmetic":   # unsigned: the bits shifted as signed (XLA's)
            v = x.view(np.dtype(f"i{x.dtype.itemsize}")) if x.dtype.kind == "u" else x
            out = np.right_shift(v, ys.astype(v.dtype)).view(x.dtype)
            fill = np.where(v < 0, -1, 0).astype(v.dtype).view(x.dtype)
        else:
            u = _unsigned(x)
            out = np.right_shift(u, ys.astype(u.dtype)).view(x.dtype)
            fill = np.zeros((), x.dtype)
        return np.where(inside, out, fill).astype(x.dtype)
    return kernel


def shift_left(x: ArrayLike, y: ArrayLike) -> Array:
    """``x << y``; shifts of the bit width or more give 0 (``jax.lax.shift_left``)."""
    return _bits_call("shift_left", _shift_kernel("left"), None, x, y)


def shift_right_arithmetic(x: ArrayLike, y: ArrayLike) -> Array:
    """``x >> y`` filling with the sign bit (``jax.lax.shift_right_arithmetic``)."""
    return _bits_call("shift_right_arithmetic", _shift_kernel("arithmetic"), None, x, y)


def shift_right_logical(x: ArrayLike, y: ArrayLike) -> Array:
    """``x >> y`` filling with zeros (``jax.lax.shift_right_logical``)."""
    return _bits_call("shift_right_logical", _shift_kernel("logical"), None, x, y)


def _popcount_kernel(x):
    x = np.asarray(x)
    if _is_four_bit(x.dtype):   # XLA's (JAX 0.10.2): counted in the byte, int4 sign-extended
        return _nibbles(_popcount_kernel(x.astype(_byte_of(x.dtype))), x.dtype)
    return np.bitwise_count(_unsigned(x)).astype(x.dtype)


def _clz_kernel(x):
    x = np.asarray(x)
    if _is_four_bit(x.dtype):   # the byte's count, less the 4 bits above the nibble
        return _nibbles(_clz_kernel(_nibbles(x)) - np.uint8(4), x.dtype)
    u = _unsigned(x).astype(np.uint64)
    bits = 8 * x.dtype.itemsize
    length = np.zeros(u.shape, np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        high = (u >> np.uint64(step)) != 0
        length = np.where(high, length + step, length)
        u = np.where(high, u >> np.uint64(step), u)
    length = length + (u != 0)
    return (bits - length).astype(x.dtype)


def population_count(x: ArrayLike) -> Array:
    """The number of set bits of each integer (``jax.lax.population_count``)."""
    if _dtype(x) == np.bool_:   # JAX issue 3886
        raise TypeError("population_count does not accept dtype bool. Accepted dtypes are "
                        "subtypes of integer.")
    return _bits_call("population_count", _popcount_kernel, None, x)


def clz(x: ArrayLike) -> Array:
    """The number of leading zero bits of each integer (``jax.lax.clz``)."""
    return _bits_call("clz", _clz_kernel, None, x)


def _binary_four_bit(name, fn):
    """``jax.lax.<name>``: ``fn``, with two int4/uint4 operands computed in a byte."""
    @functools.wraps(fn)
    def op(x, y):
        dt = _dtype(x)
        if _is_four_bit(dt) and _dtype(y) == dt:
            return _in_byte(fn, dt, x, y)
        return fn(x, y)
    op.__name__ = op.__qualname__ = name
    return op


# The same primitives as tangentia.numpy's bitwise functions bind.
bitwise_and = _binary_four_bit("bitwise_and", NE.bitwise_and)
bitwise_or = _binary_four_bit("bitwise_or", NE.bitwise_or)
bitwise_xor = _binary_four_bit("bitwise_xor", NE.bitwise_xor)
bitwise_not = _unary_four_bit("bitwise_not", NE.bitwise_not)


_nibbles_to = BITS._nibbles_to


def bitcast_convert_type(operand: ArrayLike, new_dtype: DTypeLike) -> Array:
    """The bits of ``operand`` read as ``new_dtype`` (``jax.lax.bitcast_convert_type``):
    a wider type merges the trailing axis, a narrower one adds a trailing axis (4-bit
    types count as 4 bits, two to a byte, the first in the low half).  Its derivative is
    zero, as JAX's.

    Args:
      operand: an array or scalar (bool and complex only to their own dtype, as JAX's).
      new_dtype: the dtype to read the bits as.
    """
    if new_dtype is None:   # (JAX's ValueError; np.dtype(None) read the bits as float64)
        raise ValueError("dtype must be specified. (lax.bitcast_convert_type: argument "
                         "'new_dtype' is None)")
    x = operand if isinstance(operand, core.Tracer) else np.asarray(operand)
    return BITS.bitcast_convert_type(x, np.dtype(new_dtype))


# ---------------------------------------------------------------------------
# Reductions


def _arg_reduction(fname, operand, axis, index_dtype):
    """JAX's checks of ``lax.argmax``/``argmin``: ``axis`` in ``[0, ndim)`` (no counting
    from the end), an integer ``index_dtype``."""
    axis = _static_int(fname, "axis", axis)
    shape = core.get_aval(operand).shape
    if not 0 <= axis < len(shape):
        raise np.exceptions.AxisError(f"Invalid axis {axis} for operand shape {shape}" + _tag(
            fname, f"axis must be in [0, {len(shape)}); lax does not count from the end"))
    index_dtype = np.dtype(index_dtype)
    if index_dtype.kind not in "iu":
        raise TypeError(f"index_dtype must be an integer type, but got {index_dtype.name}"
                        + _tag(fname, "the indices are returned as index_dtype"))
    if shape[axis] == 0:
        raise ValueError(f"argmin and argmax require non-empty reduced dimension. "
                         f"operand.shape={shape} axis={axis}"
                         + _tag(fname, "the reduced axis has no entries"))
    return axis, index_dtype


def argmax(operand: ArrayLike, axis: int, index_dtype: DTypeLike) -> Array:
    """Index of the largest entry along ``axis``, as ``index_dtype`` (``jax.lax.argmax``)."""
    axis, index_dtype = _arg_reduction("argmax", operand, axis, index_dtype)
    return S.convert_element_type(NR.argmax(operand, axis), index_dtype)


def argmin(operand: ArrayLike, axis: int, index_dtype: DTypeLike) -> Array:
    """Index of the smallest entry along ``axis``, as ``index_dtype`` (``jax.lax.argmin``)."""
    axis, index_dtype = _arg_reduction("argmin", operand, axis, index_dtype)
    return S.convert_element_type(NR.argmin(operand, axis), index_dtype)


def _logical_reduce(fname, prim):
    def reduce(operand: ArrayLike, axes: Sequence[int]) -> Array:
        axes = _reduction_axes(fname, operand, axes)
        x = operand if isinstance(operand, core.Tracer) else np.asarray(operand)
        if _dtype(x).kind not in "iub":
            raise TypeError(f"logical reduction requires operand dtype bool or int, got "
                            f"{_dtype(x)}." + _tag(fname, "argument 'operand'"))
        return prim.bind(x, axes=tuple(sorted(axes)))
    reduce.__name__ = reduce.__qualname__ = fname
    reduce.__doc__ = (f"``jax.lax.{fname}``: the bitwise {fname[7:].upper()} of the entries "
                      "(booleans or integers) over ``axes``, in the operand's dtype.")
    return reduce


reduce_and = _logical_reduce("reduce_and", R.reduce_and_p)
reduce_or = _logical_reduce("reduce_or", R.reduce_or_p)
reduce_xor = _logical_reduce("reduce_xor", BITS.reduce_xor_p)


def _mulhi_kernel(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if _is_four_bit(x.dtype):   # XLA's (JAX 0.10.2): the byte's high half, wrapped to 4 bits
        wide = _byte_of(x.dtype)
        return _nibbles(_mulhi_kernel(x.astype(wide), y.astype(wide)), x.dtype)
    bits = 8 * x.dtype.itemsize
    if bits == 64:  # exact 128-bit product from 32-bit halves
        ux, uy = _unsigned(x).astype(np.uint64), _unsigned(y).astype(np.uint64)
        mask = np.uint64(0xFFFFFFFF)
        a, b = ux >> np.uint64(32), ux & mask
        c, d = uy >> np.uint64(32), uy & mask
        mid = (b * d >> np.uint64(32)) + (a * d & mask) + (b * c & mask)
        high = a * c + (a * d >> np.uint64(32)) + (b * c >> np.uint64(32)) + (mid >> np.uint64(32))
        if x.dtype.kind == "i":  # signed: subtract the sign corrections
            high = high - np.where(x < 0, uy, 0).astype(np.uint64) \
                - np.where(y < 0, ux, 0).astype(np.uint64)
        return high.view(x.dtype) if x.dtype.kind == "i" else high
    wide = np.int64 if x.dtype.kind == "i" else np.uint64
    return ((x.astype(wide) * y.astype(wide)) >> bits).astype(x.dtype)


def mulhi(x: ArrayLike, y: ArrayLike, /) -> Array:
    """The high half of the bits of ``x * y`` for integers (``jax.lax.mulhi``)."""
    return _bits_call("mulhi", _mulhi_kernel, None, x, y)
