"""Elementwise functions: arithmetic, exponentials and logarithms,
trigonometry, rounding, comparisons and logic, ``where`` and ``clip``.

Most are the primitives' own functions (``tangentia.primitives.elementwise``);
the rest are compositions of them with NumPy's semantics."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from .. import dtypes as _dtypes
from ..custom_derivatives import custom_jvp
from ..primitives import elementwise as _E
from ..primitives import misc as _M
from ..primitives import prng_keys as _keys
from ..primitives import special as _SP
from ..primitives import structural as _S
from ._constants import complex128, float64, pi
from ._conversion import _checked, _in, _inexact, asarray, astype
from ._indexing import nonzero
from ._util import _Tracer, _aval, _eager, _no_out

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike, _Binary, _Unary

    # The primitives' own functions (below), as a type checker sees them
    negative: _Unary; exp: _Unary; log: _Unary; expm1: _Unary; sin: _Unary
    cos: _Unary; tan: _Unary; arcsin: _Unary; arccos: _Unary; arctan: _Unary; asin: _Unary
    acos: _Unary; atan: _Unary; sinh: _Unary; cosh: _Unary; tanh: _Unary; arcsinh: _Unary
    arccosh: _Unary; arctanh: _Unary; asinh: _Unary; acosh: _Unary; atanh: _Unary; sqrt: _Unary
    cbrt: _Unary; abs: _Unary; absolute: _Unary; sign: _Unary; floor: _Unary; ceil: _Unary
    rint: _Unary; signbit: _Unary
    add: _Binary; subtract: _Binary; multiply: _Binary; divide: _Binary; true_divide: _Binary
    power: _Binary; pow: _Binary; arctan2: _Binary; atan2: _Binary; maximum: _Binary
    minimum: _Binary; remainder: _Binary; mod: _Binary; floor_divide: _Binary; equal: _Binary
    not_equal: _Binary; less: _Binary; less_equal: _Binary; greater: _Binary
    greater_equal: _Binary; copysign: _Binary


# ---------------------------------------------------------------------------
# Arithmetic, powers, exponentials and trigonometry (the primitives)


add = _E.add
subtract = _E.sub
multiply = _E.mul
divide = true_divide = _E.div
negative = _E.neg
power = _E.power
pow = power  # noqa: A001 - NumPy's name
exp = _E.exp
log = _E.log
expm1 = _E.expm1
sin, cos, tan = _E.sin, _E.cos, _E.tan
arcsin, arccos, arctan = _E.arcsin, _E.arccos, _E.arctan
asin, acos, atan = arcsin, arccos, arctan
sinh, cosh, tanh = _E.sinh, _E.cosh, _E.tanh
arcsinh, arccosh, arctanh = _E.arcsinh, _E.arccosh, _E.arctanh
asinh, acosh, atanh = arcsinh, arccosh, arctanh
arctan2 = atan2 = _E.arctan2
sqrt = _E.sqrt
cbrt = _E.cbrt
abs = absolute = _E.abs
sign = _E.sign
maximum = _E.maximum
minimum = _E.minimum
floor = _E.floor
ceil = _E.ceil
rint = _E.round
remainder = mod = _E.remainder
floor_divide = _E.floor_divide
_PLAIN = frozenset({_np.ndarray, int, float, bool, complex, _np.float64, _np.float32,
                    _np.int64, _np.int32, _np.bool_, _np.complex128})


def _compared(name, x, y):
    """JAX's TypeError when ``x`` or ``y`` is no array or number (NumPy compares them as
    Python objects: ``equal(x, object())`` was an array of False)."""
    for i, (v, path) in enumerate(((x, "x"), (y, "y"))):
        if type(v) in _PLAIN or isinstance(v, (_np.ndarray, _np.generic, _Tracer)) \
                or hasattr(v, "__jax_array__"):
            continue
        if v is None or isinstance(v, dict):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(v)} at "
                            f"position {i}.")
        try:
            kind = _np.asarray(v).dtype.kind
        except Exception:  # noqa: BLE001  (not convertible at all: the same error)
            kind = "O"
        if kind in "OUS":
            raise TypeError(f"Error interpreting argument to {name} as an abstract array. The "
                            f"problematic value is of type {type(v)} and was passed to the "
                            f"function at path {path}. (tangentia.numpy.{name} compares arrays "
                            "and numbers.)")


def _equal(x: ArrayLike, y: ArrayLike) -> Array:
    """Elementwise ``x == y`` (the primitive ``eq``; of typed PRNG keys ``eq`` of their
    data, ``prng_keys.keys_equal``: a dtype of kind "V" is checked first)."""
    if type(x) not in _PLAIN or type(y) not in _PLAIN:
        _compared("equal", x, y)
        if getattr(x, "dtype", _F).kind == "V" or getattr(y, "dtype", _F).kind == "V":
            return _keys.keys_equal(x, y, "equal")
    elif (type(x) is _nd and x.dtype.kind == "V") or (type(y) is _nd and y.dtype.kind == "V"):
        return _keys.keys_equal(x, y, "equal")
    return _E.eq(x, y)


def _not_equal(x: ArrayLike, y: ArrayLike) -> Array:
    """Elementwise ``x != y`` (the primitive ``ne``; typed PRNG keys as in ``_equal``)."""
    if type(x) not in _PLAIN or type(y) not in _PLAIN:
        _compared("not_equal", x, y)
        if getattr(x, "dtype", _F).kind == "V" or getattr(y, "dtype", _F).kind == "V":
            return _keys.keys_equal(x, y, "not_equal", negate=True)
    elif (type(x) is _nd and x.dtype.kind == "V") or (type(y) is _nd and y.dtype.kind == "V"):
        return _keys.keys_equal(x, y, "not_equal", negate=True)
    return _E.ne(x, y)


_F = _np.dtype(float)   # (the kind of what has no dtype: a Python scalar, a list)
_nd = _np.ndarray


# public functions of eq and ne through the one eager-dispatch point (with the check above
# on both of its paths); ``ufunc``: the NumPy ufunc each computes (read by the registry's
# tests, which check elementwise fast paths against their primitive)
_equal.ufunc, _not_equal.ufunc = _np.equal, _np.not_equal  # type: ignore[attr-defined]
equal = _core.eager_dispatch(_E.eq_p, _equal, traced=_equal, name="equal")
not_equal = _core.eager_dispatch(_E.ne_p, _not_equal, traced=_not_equal, name="not_equal")


less, less_equal, greater, greater_equal = _E.lt, _E.le, _E.gt, _E.ge
signbit = _M.signbit
copysign = _M.copysign


# ---------------------------------------------------------------------------
# Arithmetic compositions


def _ufunc_dtype(ufunc, *xs):
    """The dtype of NumPy's ``ufunc`` applied to ``xs`` (weakly typed ones as Python scalars)."""
    return _E.ufunc_result(ufunc, tuple((a.dtype, a.weak_type) for a in map(_aval, xs)))[0]


def _ufunc_inexact(x, ufunc):
    """``x`` cast to the floating dtype NumPy's ``ufunc`` computes an integer or boolean ``x`` in
    (``int8`` and ``bool`` -> ``float16``, wider integers -> ``float64``); inexact ``x`` as is."""
    if _aval(x).dtype.kind in "fc":
        return x
    return astype(x, _ufunc_dtype(ufunc, x))


def log1p(x: ArrayLike) -> Array:
    """``log(1 + x)``; for complex ``x`` accurate near 0, as JAX's (NumPy's complex ``log1p``
    forms ``1 + x`` first: ``log1p(1e-5 + 0j)`` in complex64 was 1.00135e-05, 1353 ULPs off):
    ``tangentia.lax.log1p``'s composition."""
    dt = getattr(x, "dtype", None)
    if dt is None and not isinstance(x, (int, float)):
        dt = _aval(x).dtype
    if dt is not None and dt.kind == "c":
        return _complex_log1p(x)
    return _E.log1p(x)


def _complex_log1p(x):
    """``log(1 + x)`` of complex ``x``, as ``tangentia.lax.log1p``: the real part is
    ``log1p(x (2 + x) + y^2) / 2`` where ``|1 + z|^2`` is within [1/4, 4] (no cancellation
    near 0), else ``log |1 + z|``; the imaginary part ``atan2(y, 1 + x)``."""
    re, im = _E.real(x), _E.imag(x)
    rdt = _aval(re).dtype
    one = _np.ones((), rdt)
    xp1 = _E.add(re, one)
    u = _E.add(_E.mul(re, _E.add(xp1, one)), _E.mul(im, im))      # |1 + z|^2 - 1
    near = _E.and_p.bind(_E.ge(u, _np.asarray(-0.75, rdt)), _E.le(u, _np.asarray(3.0, rdt)))
    safe_u = where(near, u, _np.zeros((), rdt))
    real = where(near, _E.mul(_np.asarray(0.5, rdt), _E.log1p(safe_u)),
                 _E.log(hypot(xp1, im)))
    return _E.complex_(real, _E.arctan2(im, xp1))


def fabs(x: ArrayLike) -> Array:
    """Elementwise absolute value of a real ``x``, in a floating dtype (as NumPy's)."""
    if _aval(x).dtype.kind == "c":
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return _E.abs(_ufunc_inexact(x, _np.fabs))


def positive(x: ArrayLike) -> Array:
    """Elementwise ``+x`` (the value itself)."""
    return _S.unchanged(_checked(x, "positive"))


def square(x: ArrayLike) -> Array:
    """Elementwise ``x**2`` (booleans square as ``int8``, as NumPy's)."""
    return _E.integer_pow(astype(x, _np.int8) if _aval(x).dtype == bool else x, 2)


def reciprocal(x: ArrayLike) -> Array:
    """Elementwise ``1 / x``."""
    return _E.div(1.0, x) if _aval(x).dtype.kind in "fc" else _E.div(1, x)


def exp2(x: ArrayLike) -> Array:
    """Elementwise ``2**x``."""
    return _E.power(2.0, _ufunc_inexact(x, _np.exp2))


def _log_base(x, base):
    # log(x) times 1 / log(base), as JAX's (XLA multiplies by the reciprocal: a division gave
    # another last bit for a third of float64 values); a complex log part by part: a complex
    # product would turn log(inf + 1j) = inf + 0j into inf + nanj
    y, k = _E.log(x), (1.4426950408889634 if base == 2.0 else 0.4342944819032518)
    if _aval(y).dtype.kind == "c":
        return _E.complex_(_E.mul(_E.real(y), k), _E.mul(_E.imag(y), k))
    return _E.mul(y, k)


def log2(x: ArrayLike) -> Array:
    """Elementwise base-2 logarithm."""
    return _log_base(x, 2.0)


def log10(x: ArrayLike) -> Array:
    """Elementwise base-10 logarithm."""
    return _log_base(x, 10.0)


def _logaddexp_shift(x, y):
    """The shift of a stable ``logaddexp``: the larger (real part) of ``x`` and ``y``, 0 where
    it is not finite, with no derivative.  Of complex values only the real parts shift, so
    that the logarithm itself gives the imaginary part on its principal branch, as NumPy's
    ``log(exp(x) + exp(y))`` and JAX's (shifting by the complex maximum left its imaginary
    part unwrapped: ``logaddexp(100+100j, 0)`` was ``100+100j``, not ``100-0.53j``)."""
    if "c" in (_aval(x).dtype.kind, _aval(y).dtype.kind):
        amax = _E.maximum(_E.real(x), _E.real(y))
    else:
        amax = _E.maximum(x, y)
    return _S.stop_gradient(where(isfinite(amax), amax, 0.0))


def _shift_and_gap(x, y):
    """``max(x, y)`` and ``-|x - y|`` (0 where both are the same infinity: inf - inf), each as
    one smooth branch chosen by ``x >= y`` (``x`` and ``y - x``, else ``y`` and ``x - y``), so
    that ``max + f(gap)`` has the smooth function's derivatives at ties: through ``maximum``
    and ``abs`` (kinks there, whose derivatives split evenly or vanish) the first derivative
    of ``logaddexp(x, y)`` at ``x == y`` was right (1/2) but the second 0, not 1/4 (the
    Hessian of a logistic loss at w = 0 was the zero matrix)."""
    first = _E.ge(x, y)
    inf_tie = _S.stop_gradient(_E.and_p.bind(_E.eq(x, y), _E.eq(_E.abs(x), _np.inf)))
    gap = where(first, _E.sub(y, x), _E.sub(x, y))
    # (a tie of infinities splits the derivative evenly, as ``maximum``)
    hi = where(inf_tie, _E.mul(0.5, _E.add(x, y)), where(first, x, y))
    return hi, where(inf_tie, 0.0, gap)


def logaddexp(x, y) -> Any:
    """``log(exp(x) + exp(y))``, computed stably, in NumPy's dtype (float16 for small
    integers and booleans).  As ``max + log1p(exp(min - max))``, NumPy's form:
    ``log(1 + tiny)`` rounded the smaller term away (``logaddexp(-128, 0)`` was 0, not
    2.6e-56); equal values (infinities too) give ``x + log 2``; derivatives of every order are
    the smooth function's, at ties too (see ``_shift_and_gap``)."""
    if "c" in (_aval(x).dtype.kind, _aval(y).dtype.kind):
        # the same with the larger real part first; the imaginary part then wrapped into
        # (-pi, pi], the principal branch of NumPy's log(exp(x) + exp(y))
        dt = _ufunc_dtype(_np.add, x, y)
        x, y = astype(x, dt), astype(y, dt)
        first = _E.ge(_E.real(x), _E.real(y))
        hi, lo = where(first, x, y), where(first, y, x)
        w = _E.exp(where(_E.eq(x, y), 0.0, _E.sub(lo, hi)))
        # NumPy's complex log1p is 0 for tiny arguments: its series there (error below
        # |w|**3 / 4 relative, 2.5e-16 at |w| = 1e-5)
        small = _E.lt(_E.abs(w), 1e-5)
        ws = where(small, w, 0.0)
        series = _E.mul(ws, _E.add(1.0, _E.mul(ws, _E.add(-0.5, _E.div(ws, 3.0)))))
        out = _E.add(hi, where(small, series, _E.log1p(where(small, 0.0, w))))
        im = _E.imag(out)
        turns = _S.stop_gradient(_E.round(_E.div(im, 2 * math.pi)))
        return _E.complex_(_E.real(out), _E.sub(im, _E.mul(turns, 2 * math.pi)))
    dt = _ufunc_dtype(_np.logaddexp, x, y)
    x, y = astype(x, dt), astype(y, dt)
    hi, delta = _shift_and_gap(x, y)
    out = _E.add(hi, _E.log1p(_E.exp(delta)))
    return _nan_derivative_at_neginf_tie(out, x, y)


def _nan_derivative_at_neginf_tie(out, x, y):
    """``out``, whose derivative at (-inf, -inf) is NaN, as JAX's (the even split of a tie
    there made cumlogsumexp's derivative over -infs depend on its scan's tree: 1/4 and 1/8 for
    1/5).  The term added is 0 with a NaN derivative there (sqrt(exp(-inf)): 0 / 0), else 0."""
    if _eager(x, y):
        return out
    both = _S.stop_gradient(_E.and_p.bind(isneginf(x), isneginf(y)))
    nan = _E.add(_E.sqrt(_E.exp(where(both, x, -_np.inf))),
                 _E.sqrt(_E.exp(where(both, y, -_np.inf))))
    return _E.add(out, where(both, nan, 0.0))


def logaddexp2(x1, x2) -> Any:
    """log2(2**x1 + 2**x2), computed stably (of complex values too, as JAX's)."""
    if "c" not in (_aval(x1).dtype.kind, _aval(x2).dtype.kind):
        return _real_logaddexp2(x1, x2)   # (eagerly too: the numbers of jit)
    amax = _logaddexp_shift(x1, x2)
    return _E.add(amax, log2(_E.add(exp2(_E.sub(x1, amax)), exp2(_E.sub(x2, amax)))))


def _real_logaddexp2(x1, x2):
    """JAX's form, ``max + log1p(2**-|x1 - x2|) / log(2)``, NaN with NaN derivatives where
    either is NaN (``x1 + x2`` there had the derivatives 1, 1: a jvp at ``(nan, 0)`` was 1),
    with NumPy's exact ``max + 1`` at ties (JAX: ``logaddexp2(-1., -1.)`` is -4.8e-17);
    float16 and bfloat16 in float32, as NumPy's loops.  Under jit, ``log2`` of a sum of powers
    lost the smaller term (bfloat16 ``logaddexp2(0, -8)`` was 0; eager and JAX 0.0056), and
    eager (NumPy's loop) differed from JAX in the last bit for a sixth of the pairs."""
    dt = _ufunc_dtype(_np.logaddexp2, x1, x2)
    wide = _np.dtype(_np.float32) if dt.itemsize < 4 else dt
    x, y = astype(x1, wide), astype(x2, wide)
    hi, gap = _shift_and_gap(x, y)
    term = _E.mul(1.4426950408889634, _E.log1p(exp2(gap)))
    out = _E.add(hi, term)
    # at ties exactly hi + 1, with the smooth term's derivatives (term - term is 0)
    tie = _E.add(_E.add(hi, 1.0), _E.sub(term, _S.stop_gradient(term)))
    out = where(_E.eq(x, y), tie, out)
    return astype(_nan_derivative_at_neginf_tie(out, x, y), dt)


def hypot(x, y) -> Array:
    """Elementwise ``sqrt(x**2 + y**2)``, without overflow or underflow (scaled by the larger
    magnitude; infinite where either is, even NaN), in NumPy's floating dtype."""
    if "c" in (_aval(x).dtype.kind, _aval(y).dtype.kind):
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please convert "
                         "to real values first, such as by using abs(x)")
    dt = _ufunc_dtype(_np.hypot, x, y)
    x, y = _E.abs(astype(x, dt)), _E.abs(astype(y, dt))
    hi, lo = _E.maximum(x, y), _E.minimum(x, y)
    ratio = _E.div(lo, where(_E.eq(hi, 0), 1.0, hi))
    r = _E.mul(hi, sqrt(_E.add(1.0, _E.mul(ratio, ratio))))
    return where(_E.or_p.bind(isinf(x), isinf(y)), _np.inf, r)


def float_power(x1, x2) -> Array:
    """Elementwise ``x1 ** x2`` computed in float64 (complex128 if either is complex)."""
    dt = complex128 if "c" in (_aval(x1).dtype.kind, _aval(x2).dtype.kind) else float64
    return _E.power(astype(x1, dt), astype(x2, dt) if not isinstance(x2, (int, float)) else x2)


def fmod(x1: ArrayLike, x2: ArrayLike) -> Array:
    """C-style remainder: the result has the sign of ``x1``.

    Computed from NumPy's exact ``remainder`` (sign of the divisor): of magnitudes for floats
    (so ``fmod(x, inf) == x``, and huge ``x`` keep their exact remainder), by one correction
    for integers (whose magnitudes may overflow)."""
    dt = _ufunc_dtype(_np.remainder, x1, x2)
    if dt.kind in "iu":
        r = _E.remainder(x1, x2)
        other_sign = _E.and_p.bind(_E.ne(r, 0), _E.ne(_E.lt(x1, 0), _E.lt(x2, 0)))
        return where(other_sign, _E.sub(r, x2), r)
    x1, ay = astype(x1, dt), _E.abs(astype(x2, dt))
    # s * remainder(s * x1, |x2|), s = -1 where x1's sign bit is set: one branch, so that
    # differentiation sends no 0 * inf = NaN from the other (lax.rem(1., 0.)'s d/dy: -inf)
    s = where(signbit(x1), _np.asarray(-1, dt), _np.asarray(1, dt))
    return _E.mul(s, _E.remainder(_E.mul(s, x1), ay))


def divmod(x1: ArrayLike, x2: ArrayLike, /) -> tuple[Array, Array]:  # noqa: A001 - NumPy's name
    """``floor_divide(x1, x2)`` and ``remainder(x1, x2)``, as a pair."""
    return floor_divide(x1, x2), remainder(x1, x2)


def modf(x: ArrayLike, /, out: None = None) -> tuple[Array, Array]:
    """Fractional and integral parts, both with the sign of ``x`` (floating, as NumPy's);
    ``out`` must be None."""
    _no_out(out, "modf")
    x = _ufunc_inexact(x, _np.modf)
    ipart = trunc(x)
    return _E.sub(x, ipart), ipart


def ldexp(x1: ArrayLike, x2: ArrayLike) -> Array:
    """``x1 * 2**x2`` in ``x1``'s floating dtype (float64 for integers; bfloat16 kept), for
    every exponent that keeps the result in range (JAX issue 28040)."""
    d1, d2 = _aval(x1).dtype, _aval(x2).dtype
    if _dtypes.kind(d2) not in "iub":
        raise TypeError(f"ldexp: argument 'x2' must be integers, got {d2}")
    if _eager(x1, x2) and d1.kind in "iubf":
        return _np.asarray(_np.ldexp(x1, x2))
    dt = d1 if _dtypes.is_inexact(d1) else _np.dtype(float64)
    if dt.kind == "f" and dt.itemsize < 8 or _dtypes.is_ml_float(dt):
        # narrower floats scale exactly in float64 and round once, as eager (three roundings
        # of the parts below: float16 ldexp(1e-7, -1) was 0 under jit, eager and JAX 6e-8)
        e = clip(astype(x2, _np.int64), -400, 400)
        return astype(_E.mul(astype(x1, float64), exp2(astype(e, float64))), dt)
    x1 = astype(x1, dt)
    # 2**x2 alone overflows (or underflows) where the product does not (the largest float's
    # exponent times the tiniest's 2**x2): clamp x2 to where every nonzero result saturates,
    # and scale by three powers of two that each stay in range
    info = _dtypes.finfo(dt)
    limit = int(info.maxexp - info.minexp + info.nmant + 2)
    e = clip(astype(x2, _np.int64), -limit, limit)
    third = _E.floor_divide(e, 3)
    for part in (third, third, _E.sub(e, _E.mul(third, 2))):
        x1 = _E.mul(x1, exp2(astype(part, dt)))
    return x1


def frexp(x: ArrayLike) -> tuple[Array, Array]:
    """Mantissa in [0.5, 1) (with ``x``'s sign) and integer exponent: ``x = m * 2**e``."""
    x = _in(x, "frexp")
    return _M.frexp_mantissa(x), _M.frexp_exponent(x)


def spacing(x: ArrayLike) -> Array:
    """Distance from ``x`` to the nearest adjacent floating-point number (derivative 0)."""
    return _M.spacing(_in(x, "spacing"))


def nextafter(x1, x2) -> Array:
    """The next floating-point value after ``x1`` towards ``x2`` (derivative 0)."""
    return _M.nextafter(x1, x2)


def gcd(x1: ArrayLike, x2: ArrayLike) -> Array:
    """Elementwise greatest common divisor of integers (JAX's argument names)."""
    return _M.gcd(x1, x2)


def lcm(x1: ArrayLike, x2: ArrayLike) -> Array:
    """Elementwise least common multiple of integers (JAX's argument names)."""
    return _M.lcm(x1, x2)


left_shift = bitwise_left_shift = _M.left_shift
right_shift = bitwise_right_shift = _M.right_shift
bitwise_count = _M.bitwise_count


def i0(x: ArrayLike) -> Array:
    """The modified Bessel function of the first kind of order 0 (``numpy.i0``)."""
    x = _in(x, "i0", "x")
    dt = _aval(x).dtype
    if (dt.kind == "f" and dt.itemsize < 4) or _dtypes.is_ml_float(dt):
        # float16, bfloat16, ...: computed in float32 and given back in their dtype, as JAX's
        # (ours gave float64)
        return astype(_SP.i0(astype(x, _np.float32)), dt)
    return _SP.i0(_inexact(x))


def fmax(x1: ArrayLike, x2: ArrayLike) -> Array:
    """Elementwise maximum that ignores NaNs (NaN only if both are NaN)."""
    if _eager(x1, x2):  # (NumPy's fmax, with JAX's ties: x2, so fmax(0., -0.) is -0.)
        out = _np.fmax(x1, x2)
        return _np.asarray(_np.where(_np.equal(x1, x2), x2, out).astype(out.dtype, copy=False))
    # JAX's selection: ties take x2 (its derivative goes to x2 alone)
    return where(_E.or_p.bind(_E.gt(x1, x2), isnan(x2)), x1, x2)


def fmin(x1: ArrayLike, x2: ArrayLike) -> Array:
    """Elementwise minimum that ignores NaNs (NaN only if both are NaN)."""
    if _eager(x1, x2):  # (ties: x2, as traced)
        out = _np.fmin(x1, x2)
        return _np.asarray(_np.where(_np.equal(x1, x2), x2, out).astype(out.dtype, copy=False))
    return where(_E.or_p.bind(_E.lt(x1, x2), isnan(x2)), x1, x2)


def heaviside(x1: ArrayLike, x2: ArrayLike) -> Array:
    """Heaviside step function: 0 for x1 < 0, ``x2`` at 0, 1 for x1 > 0."""
    dt = _ufunc_dtype(_np.heaviside, x1, x2)
    return astype(where(_E.gt(x1, 0), 1.0, where(_E.lt(x1, 0), 0.0,   # NaN at NaN, as JAX's
                                                 where(_E.eq(x1, x1), x2, x1))), dt)


def _sinc_taylor(k, t):
    """The ``k``-th derivative of ``sin(t) / t`` at ``t = 0`` (``(-1)**(k/2) / (k + 1)`` for
    even ``k``, 0 for odd), shaped like ``t``; its derivative in ``t`` is the next one, so
    that ``sinc``'s derivatives of every order at 0 are right."""
    c = 0.0 if k % 2 else (-1.0) ** (k // 2) / (k + 1)
    return _E.add(_E.mul(t, 0.0), c)


def _sinc_taylor_jvp(k, primals, tangents):
    (t,), (dt,) = primals, tangents
    return _sinc_taylor_rule(k, t), _E.mul(_sinc_taylor_rule(k + 1, t), dt)


_sinc_taylor_rule = custom_jvp(_sinc_taylor, nondiff_argnums=(0,))
_sinc_taylor_rule.defjvp(_sinc_taylor_jvp)


def sinc(x: ArrayLike) -> Array:
    """Normalized sinc: ``sin(pi x) / (pi x)``, 1 at 0, with the derivatives of every order
    at 0 of its Taylor series (``d2/dx2 sinc(0) = -pi**2/3``; the bare ``where`` made
    them all 0).  An integer or boolean ``x`` is computed in float64, as NumPy's (whose ``pi * x``
    promotes it so; ``sin``'s float16 for int8 made ``sinc(1)`` 3.1e-4 where it is 0)."""
    px = _E.mul(pi, x if _aval(x).dtype.kind in "fc" else astype(x, _np.dtype(_np.float64)))
    zero = _E.eq(px, 0)
    safe = where(zero, 1.0, px)
    return where(zero, _sinc_taylor_rule(0, px), _E.div(_E.sin(safe), safe))


def deg2rad(x: ArrayLike) -> Array:
    """Angles converted from degrees to radians."""
    return _E.mul(_ufunc_inexact(x, _np.deg2rad), pi / 180)


def rad2deg(x: ArrayLike) -> Array:
    """Angles converted from radians to degrees."""
    return _E.mul(_ufunc_inexact(x, _np.rad2deg), 180 / pi)


radians, degrees = deg2rad, rad2deg


# ---------------------------------------------------------------------------
# Rounding and clipping


def trunc(x: ArrayLike) -> Array:
    """Elementwise rounding towards zero."""
    return where(_E.lt(x, 0), _E.ceil(x), _E.floor(x))


fix = trunc


def round(a: ArrayLike, decimals: int = 0, out: None = None) -> Array:
    """Round to the given number of decimals (halves to even, as NumPy); ``out`` must be
    None."""
    _no_out(out, "round")
    if _aval(a).dtype.kind in "iu":
        if decimals < 0:   # JAX's error (NumPy rounds to tens; ours gave float64 with -0.)
            raise NotImplementedError(
                "integer np.round not implemented for decimals < 0 (round: argument a has "
                f"integer dtype {_aval(a).dtype}; round a float copy, a.astype(float), instead)")
        return _S.unchanged(a)  # integers are already rounded (and keep their dtype)
    if decimals == 0:
        return _E.round(a)
    with _np.errstate(over="ignore", under="ignore"):
        f = float(_np.power(10.0, decimals))
        overflows = not _np.isfinite(_np.asarray(f).astype(_aval(a).dtype))
    if decimals > 0 and overflows:
        # more decimals than the dtype can hold: every value is already rounded (JAX issue
        # 31689; the scaled value overflowed to inf, and inf / inf is NaN)
        return _S.unchanged(a)
    dt = _aval(a).dtype
    x = astype(a, _np.float32) if dt == _np.float16 else a   # (JAX's: float16 scales in float32)
    scaled = _E.mul(x, f)
    out = _E.div(_E.round(scaled), f)
    if decimals > 0:   # values whose scaled value overflows have no digits to drop
        out = where(isfinite(scaled), out, x)
    return astype(out, dt) if dt == _np.float16 else out


around = round


def clip(arr: ArrayLike | None = None, /, min: ArrayLike | None = None,
         max: ArrayLike | None = None) -> Array:
    """Clip values to [min, max] (either bound may be None); JAX's signature (its
    ``a``/``a_min``/``a_max`` keywords are gone since JAX 0.6)."""
    if arr is None:
        raise ValueError("No input was provided to the clip function. (clip: argument 'arr' "
                         "is required)")
    a, lo, hi = arr, min, max
    for v in (a, lo, hi):
        if v is not None and _np.iscomplexobj(v if not hasattr(v, "dtype") else
                                              _np.empty(0, _aval(v).dtype)):
            raise ValueError("Clip received a complex value either through the input or the "
                             "min/max keywords. Complex values have no ordering and cannot be "
                             "clipped. Please convert to a real value or array by taking the "
                             "real or imaginary components via jax.numpy.real/imag "
                             "respectively. (clip)")
    if lo is None and hi is None:
        return asarray(a)   # JAX's: nothing to clip
    if lo is not None:
        a = _E.maximum(a, lo)
    if hi is not None:
        a = _E.minimum(a, hi)
    return a


def nan_to_num(x: ArrayLike, copy: bool = True, nan: ArrayLike = 0.0,
               posinf: ArrayLike | None = None, neginf: ArrayLike | None = None) -> Array:
    """Replace NaN and infinities by finite numbers."""
    x = _in(x, "nan_to_num", "x")
    dt = _aval(x).dtype
    ml = _dtypes.is_ml_float(dt)   # bfloat16, float8s: NaN and infinities replaced too
    if dt.kind not in "fc" and not ml:
        return _S.unchanged(x)
    if _eager(x, nan, posinf, neginf) and not ml:
        return _np.asarray(_np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf))
    info = _dtypes.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(isnan(x), astype(nan, dt), x)
    out = where(_E.and_p.bind(isinf(x), _E.gt(x, 0)), astype(posinf, dt), out)
    return where(_E.and_p.bind(isinf(x), _E.lt(x, 0)), astype(neginf, dt), out)


# ---------------------------------------------------------------------------
# Logic, tests and choosing


def logical_and(x, y) -> Any:
    """Elementwise logical AND."""
    return _E.and_p.bind(_checked(x, "logical_and"), _checked(y, "logical_and", "y"))


def logical_or(x, y) -> Any:
    """Elementwise logical OR."""
    return _E.or_p.bind(_checked(x, "logical_or"), _checked(y, "logical_or", "y"))


def logical_xor(x, y) -> Any:
    """Elementwise logical XOR."""
    return _E.xor_p.bind(_checked(x, "logical_xor"), _checked(y, "logical_xor", "y"))


def logical_not(x: ArrayLike) -> Array:
    """Elementwise logical NOT."""
    return _E.not_p.bind(_checked(x, "logical_not"))


def bitwise_and(x, y) -> Any:
    """Elementwise bitwise AND of integer or boolean arrays."""
    return _E.bitwise_and_p.bind(x, y)


def bitwise_or(x, y) -> Any:
    """Elementwise bitwise OR of integer or boolean arrays."""
    return _E.bitwise_or_p.bind(x, y)


def bitwise_xor(x, y) -> Any:
    """Elementwise bitwise XOR of integer or boolean arrays."""
    return _E.bitwise_xor_p.bind(x, y)


def bitwise_not(x: ArrayLike) -> Array:
    """Elementwise bitwise NOT of integer or boolean arrays."""
    return _E.bitwise_not_p.bind(x)


invert = bitwise_invert = bitwise_not


def isnan(x: ArrayLike) -> Array:
    """Elementwise test for NaN."""
    return _E.isnan_p.bind(x)


def isinf(x: ArrayLike) -> Array:
    """Elementwise test for positive or negative infinity."""
    return _E.isinf_p.bind(x)


def isfinite(x: ArrayLike) -> Array:
    """Elementwise test for finite values (not infinity, not NaN)."""
    return _E.isfinite_p.bind(x)


def isposinf(x, /, out: None = None) -> Array:
    """Elementwise test for positive infinity (``out`` must be None)."""
    _no_out(out, "isneginf/isposinf", "isposinf", prefix="")
    return logical_and(isinf(x), _E.gt(x, 0))


def isneginf(x, /, out: None = None) -> Array:
    """Elementwise test for negative infinity (``out`` must be None)."""
    _no_out(out, "isneginf/isposinf", "isneginf", prefix="")
    return logical_and(isinf(x), _E.lt(x, 0))


def isclose(a: ArrayLike, b: ArrayLike, rtol: ArrayLike = 1e-05, atol: ArrayLike = 1e-08,
            equal_nan: bool = False) -> Array:
    """Elementwise ``|a - b| <= atol + rtol * |b|`` where ``b`` is finite, or ``a == b``
    (NaNs equal if ``equal_nan``), as NumPy's and JAX's: an infinity is close to itself,
    and a finite value is not close to an infinite ``b`` (the bare formula made it so
    whenever ``rtol > 0``)."""
    a, b = _inexact(a), _inexact(b)
    b_finite = isfinite(b)
    fb = where(b_finite, b, 0)   # (no ``inf - inf`` warning where the formula is not used)
    out = logical_or(logical_and(_E.le(abs(_E.sub(a, fb)), _E.add(atol, _E.mul(rtol, abs(fb)))),
                                 b_finite), _E.eq(a, b))
    if equal_nan:
        out = logical_or(out, logical_and(isnan(a), isnan(b)))
    return out


def where(condition, x=None, y=None, /, *, size=None, fill_value=None) -> Any:
    """Elementwise choice; with one argument, the indices of nonzero entries (eager only,
    or under jit with JAX's static ``size`` and ``fill_value``, as nonzero)."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term where "
                         "function. (where: 'size'/'fill_value' apply to where(condition) "
                         "only)")
    if x is None or y is None:
        raise ValueError("where: either both x and y must be given, or neither")
    c = _aval(condition)
    if c.dtype != _dtypes.bool_:
        condition = _E.ne(condition, 0)
    return _E.select(condition, x, y)
