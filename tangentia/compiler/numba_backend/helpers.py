"""Scalar functions called from generated numba programs, with NumPy's semantics
where Python's (or numba's) differ.

``_where``, ``_fmax`` and ``_fmin`` are intrinsics (an LLVM ``select``): a call
costs numba almost nothing to compile, while a conditional expression adds
basic blocks (and SSA work) and a call of an njit function adds ~2 ms each.

**Ctrl-C in compiled loops.**  Loops of generated programs poll ``_interrupted()`` -- an
atomic load of the C ``int`` that ``sigint`` registers with LLVM's linker as
``tangentia_sigint_flag``, and where it is set a call running Python's signal handlers --
every few thousand iterations (``rules``: about ``CHECK_WORK`` scalar operations apart),
and raise ``CompiledLoopInterrupted`` when a handler raised; ``sigint.call_interruptible``
runs such a program (see ``sigint``).
"""
import cmath
import ctypes
import math
import sys

import numba
import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic

from . import special


def _unified(typingctx, a, b):
    ty = typingctx.unify_types(a, b)
    if not isinstance(ty, (types.Integer, types.Float, types.Boolean)):
        return None
    return ty


def _select_codegen(make_pred):
    def codegen(context, builder, sig, args):
        ty = sig.return_type
        a = context.cast(builder, args[-2], sig.args[-2], ty)
        b = context.cast(builder, args[-1], sig.args[-1], ty)
        pred = make_pred(context, builder, sig, args, a, b, ty)
        return builder.select(pred, a, b)
    return codegen


@intrinsic
def _where(typingctx, p, a, b):
    """``a if p else b`` without a branch."""
    ty = _unified(typingctx, a, b)
    if ty is None:
        return None

    def pred(context, builder, sig, args, a, b, ty):
        return context.cast(builder, args[0], sig.args[0], types.boolean)
    return ty(p, a, b), _select_codegen(pred)


def _extremum(op):
    def typer(typingctx, a, b):
        ty = _unified(typingctx, a, b)
        if ty is None:
            return None

        def pred(context, builder, sig, args, a, b, ty):
            if isinstance(ty, types.Float):
                # JAX's (XLA's): a if (a > b or a is NaN) else b -- NaN propagates --, and of
                # two equal values a where b (max) or a (min) is -0.0: -0.0 orders below 0.0
                # (NumPy returns the second, so max(0., -0.) was -0.; eager does the same)
                neg = b if op == ">" else a
                bits = builder.bitcast(neg, ir.IntType(ty.bitwidth))
                tie = builder.and_(builder.fcmp_ordered("==", a, b),
                                   builder.icmp_signed("<", bits, ir.Constant(bits.type, 0)))
                return builder.or_(builder.or_(builder.fcmp_ordered(op, a, b),
                                               builder.fcmp_unordered("uno", a, a)), tie)
            if isinstance(ty, types.Integer) and ty.signed:
                return builder.icmp_signed(op, a, b)
            return builder.icmp_unsigned(op, a, b)
        return ty(a, b), _select_codegen(pred)
    return typer


_fmax = intrinsic(_extremum(">"))
_fmax.__doc__ = "JAX's maximum (NaN propagates, -0 < 0), without a branch."
_fmin = intrinsic(_extremum("<"))
_fmin.__doc__ = "JAX's minimum (NaN propagates, -0 < 0), without a branch."


@numba.njit(cache=True)
def _ifloordiv(a, b):
    """Integer floor division as JAX's: MIN // -1 wraps to MIN, and a zero divisor gives every
    bit set (XLA's quotient: -1, the unsigned maximum), -2 for a signed ``a != 0`` (JAX's
    floor division corrects the quotient by the remainder ``a``'s sign), as eager
    (``elementwise._int_quotient_by_zero``).  NumPy's is 0."""
    if b == 0:
        ones = ~(a ^ a)   # (-1 of int64, or the maximum of uint64: the caller casts)
        return ones if ones > 0 or a == 0 else ones + ones
    if b == -1:
        return -a
    return a // b


@numba.njit(cache=True, error_model="numpy")
def _frem(a, b):
    """NumPy's float remainder (Python's ``%``: C's fmod plus ``b`` where the signs differ)
    with JAX's zero: the sign of ``a`` (``remainder(-0., 1.)`` is -0.; NumPy's 0.), as eager."""
    r = a % b
    return r if r != 0 else np.copysign(r, a)


@numba.njit(cache=True, error_model="numpy")
def _ffloordiv(a, b):
    """NumPy's float floor division with JAX's zero: the sign of ``b`` (``floor_divide(-0.,
    5.)`` is 0.; NumPy's -0., the sign of ``a / b``), as eager."""
    q = a // b
    return q if q != 0 else np.copysign(q, b)


@numba.njit(cache=True)
def _ipow(a, b):
    """Signed integer ``a ** b`` wrapping as NumPy's and JAX's (repeated squaring in int64;
    the caller casts to the loop's dtype): numba's ``**`` saturated for large exponents (int64
    5 ** 2**62 was -2**63, NumPy 1).  A negative ``b`` raises NumPy's ValueError, as eager
    and the NumPy backend do (numba gave 0, 1 or -1; JAX's own values are its squaring loop's
    garbage: jnp.power(2, -1) is INT_MIN), so a tiered program does not change its answer."""
    a, b = np.int64(a), np.int64(b)
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    r, n = np.int64(1), b
    while n > 0:
        if n & 1:
            r = r * a
        a = a * a
        n >>= 1
    return r


@numba.njit(cache=True)
def _upow(a, b):
    """``_ipow`` of unsigned integers, in uint64 (numba's ``**``: uint64 7 ** 2**40 was
    2**64 - 1, NumPy 17160359449676742657)."""
    a, n = np.uint64(a), np.uint64(b)
    one = np.uint64(1)
    r = one
    while n > 0:
        if n & one:
            r = r * a
        a = a * a
        n = n >> one
    return r


@numba.njit(cache=True)
def _icmp(a, b):
    """-1, 0 or 1 as the int64 or uint64 ``a`` is less than, equal to or greater than the
    uint64 or int64 ``b``, by value (NumPy's ``qQ->?`` comparison loops); numba compared the
    bits of both as one type: int32 -1 < uint64 255 was False."""
    if a < 0 or b < 0:          # (only the signed one can be negative)
        return -1 if a < 0 else 1
    ua, ub = np.uint64(a), np.uint64(b)
    return -1 if ua < ub else (1 if ua > ub else 0)


@numba.njit(cache=True)
def _fsign(x):
    """JAX's sign of a float: +-1, the zero itself (``sign(-0.0)`` is -0.0, NumPy's 0.0),
    NaN for NaN (as float64; the caller casts float32 results back).  Eager's is the same."""
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    if x == 0:
        return math.copysign(0.0, x)
    return x + 0.0


@numba.njit(cache=True, error_model="numpy")
def _cdiv_parts(ar, ai, br, bi, one):
    """``(ar + ai j) / (br + bi j)`` in the precision of ``one`` (float64 or float32), as eager
    division (``primitives.elementwise._complex_quotient``), bit for bit: NumPy's loop (Smith's
    algorithm: the larger part of the divisor scales, the quotient multiplied by ``1 /
    denominator``), and JAX's (C99 Annex G's) limits where that is not one: a zero divisor
    gives ``copysign(inf, br)`` times each part, and where both parts come out NaN, an infinite
    numerator over a finite divisor ``inf * (a' conj(b))``, a finite one over an infinite
    divisor ``0 * (a conj(b'))`` (``a'``, ``b'``: the signed 1 of an infinite part, 0 of a
    finite one).  numba's ``a / b`` raises ZeroDivisionError for a zero ``b`` whatever the
    error model, and divides by the denominator (last bits differ)."""
    zero = one - one
    abr, abi = abs(br), abs(bi)
    if abr == zero and abi == zero:
        signed = np.copysign(one / zero, br)
        return signed * ar, signed * ai
    if abr >= abi:
        rat = bi / br
        scl = one / (br + bi * rat)
        re, im = (ar + ai * rat) * scl, (ai - ar * rat) * scl
    else:
        rat = br / bi
        scl = one / (bi + br * rat)
        re, im = (ar * rat + ai) * scl, (ai * rat - ar) * scl
    if not (math.isnan(re) and math.isnan(im)):
        return re, im
    if (math.isinf(ar) or math.isinf(ai)) and math.isfinite(br) and math.isfinite(bi):
        a1 = np.copysign(one if math.isinf(ar) else zero, ar)
        b1 = np.copysign(one if math.isinf(ai) else zero, ai)
        inf = one / zero
        return inf * (a1 * br + b1 * bi), inf * (b1 * br - a1 * bi)
    if math.isfinite(ar) and math.isfinite(ai) and (math.isinf(br) or math.isinf(bi)):
        c1 = np.copysign(one if math.isinf(br) else zero, br)
        d1 = np.copysign(one if math.isinf(bi) else zero, bi)
        return zero * (ar * c1 + ai * d1), zero * (ai * c1 - ar * d1)
    return re, im


@numba.njit(cache=True, error_model="numpy")
def _cdiv(a, b):
    """Complex128 division: ``_cdiv_parts`` in float64."""
    re, im = _cdiv_parts(a.real, a.imag, b.real, b.imag, 1.0)
    return complex(re, im)


@numba.njit(cache=True, error_model="numpy")
def _cdiv64(a, b):
    """``_cdiv`` for complex64, in float32 arithmetic as NumPy's loop (no float64 step)."""
    one = np.float32(1.0)
    re, im = _cdiv_parts(np.float32(a.real), np.float32(a.imag), np.float32(b.real),
                         np.float32(b.imag), one)
    return np.complex64(complex(re, im))


# Complex exp, log, sqrt and the trigonometric and hyperbolic functions and their inverses:
# NumPy's values, bit for bit.  On Linux x86-64 NumPy's loops call glibc's libm (cexp,
# clog, ..., cexpf, ...), and so does compiled code (``_libm_complex``: the function's address
# registered with LLVM's linker, so cached machine code finds it in any process).  numba's
# cmath differed where C99's Annex G defines special values and where a product overflows
# before its last factor: exp(710+1j) was inf+infj (NumPy, glibc: 1.2e308+infj), exp(710+0j)
# inf+nanj (inf+0j), sin(1000j) nan+infj (0+infj), tan(inf+0j) nan+nanj (nan+0j),
# arctan(nanj) 1.57+nanj (nan+nanj), and complex64 exp(89+1j) inf+infj.  Elsewhere (no
# glibc, another ABI) the ``_fb`` functions below: cmath, with NumPy's values where a part
# of the argument is zero or past e^709.


def _glibc_libm():
    """glibc's libm, whose complex functions compiled code can call with x86-64's calling
    convention (complex128 in two SSE registers, complex64 packed in one); None elsewhere."""
    import platform
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return None
    try:
        ctypes.CDLL(None).gnu_get_libc_version   # (glibc, not musl)
        return ctypes.CDLL("libm.so.6")
    except (OSError, AttributeError):
        return None


_LIBM = _glibc_libm()
_COMPLEX_FNS = ("exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                "cosh", "tanh", "asinh", "acosh", "atanh")


def _libm_complex(name, nargs=1):
    """An intrinsic computing libm's ``c<name>`` (complex128) or ``c<name>f`` (complex64) of
    ``nargs`` arguments of one complex type."""
    def typer(typingctx, *zs):
        if zs[0] not in (types.complex128, types.complex64) or any(z != zs[0] for z in zs):
            return None

        def codegen(context, builder, sig, args):
            parts = [(builder.extract_value(z, 0), builder.extract_value(z, 1)) for z in args]
            if sig.args[0] == types.complex128:
                d = ir.DoubleType()
                fnty = ir.FunctionType(ir.LiteralStructType([d, d]), [d, d] * nargs)
                fn = _declare(builder, f"tangentia_c{name}", fnty)
                return builder.call(fn, [v for p in parts for v in p])
            vec = ir.VectorType(ir.FloatType(), 2)
            fn = _declare(builder, f"tangentia_c{name}f", ir.FunctionType(vec, [vec] * nargs))
            i0, i1 = ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)
            packed = [builder.insert_element(builder.insert_element(ir.Constant(vec, ir.Undefined), re, i0),
                                             im, i1) for re, im in parts]
            r = builder.call(fn, packed)
            out = ir.Constant(context.get_value_type(sig.return_type), ir.Undefined)
            out = builder.insert_value(out, builder.extract_element(r, i0), 0)
            return builder.insert_value(out, builder.extract_element(r, i1), 1)
        return zs[0](*zs), codegen
    if nargs == 1:
        return intrinsic(lambda typingctx, z: typer(typingctx, z))
    return intrinsic(lambda typingctx, a, b: typer(typingctx, a, b))


def _declare(builder, name, fnty):
    mod = builder.module
    try:
        return mod.get_global(name)
    except KeyError:
        fn = ir.Function(mod, fnty, name)
        fn.attributes.add("nounwind")
        return fn


_EXP_STEP = 709.0                  # e^709 is finite; a part above it is scaled


@numba.njit(cache=True, error_model="numpy")
def _exp_scaled(ax, c, s, half):
    """``(h e^ax c, h e^ax s)`` (``h`` 1 or 1/2 as ``half``) for finite ``ax > 709``, where
    e^ax overflows and the products may not: e^ax = e^709 e^709 e^(ax - 1418), the factors
    applied to ``c`` and ``s`` one at a time (above 3 * 709 every nonzero product overflows)."""
    et = math.exp(_EXP_STEP)
    first = et * 0.5 if half else et
    c, s, r = c * first, s * first, ax - _EXP_STEP
    if r > _EXP_STEP:
        c, s, r = c * et, s * et, r - _EXP_STEP
    if r > _EXP_STEP:
        big = 1.7976931348623157e308
        return c * big, s * big
    e = math.exp(r)
    return e * c, e * s


@numba.njit(cache=True, error_model="numpy")
def _big(x, y):
    """Whether ``x`` (the part whose exponential is taken) is finite and past e^709, and
    ``y`` (the part whose sine and cosine are) finite."""
    return abs(x) > _EXP_STEP and math.isfinite(x) and math.isfinite(y)


@numba.njit(cache=True, error_model="numpy")
def _fb_exp(z):
    x, y = z.real, z.imag
    if y == 0:
        return complex(math.exp(x), y)
    if x > 0 and _big(x, y):
        re, im = _exp_scaled(x, math.cos(y), math.sin(y), False)
        return complex(re, im)
    return cmath.exp(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_sinh(z):
    x, y = z.real, z.imag
    if y == 0:
        return complex(math.sinh(x), y)
    if _big(x, y):      # sinh(x + iy) = sinh x cos y + i cosh x sin y
        re, im = _exp_scaled(abs(x), math.copysign(1.0, x) * math.cos(y), math.sin(y), True)
        return complex(re, im)
    return cmath.sinh(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_cosh(z):
    x, y = z.real, z.imag
    if y == 0:
        return complex(math.cosh(x), y * math.copysign(1.0, x))
    if _big(x, y):      # cosh(x + iy) = cosh x cos y + i sinh x sin y
        re, im = _exp_scaled(abs(x), math.cos(y), math.copysign(1.0, x) * math.sin(y), True)
        return complex(re, im)
    return cmath.cosh(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_tanh(z):
    return complex(math.tanh(z.real), z.imag) if z.imag == 0 else cmath.tanh(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_sin(z):
    x, y = z.real, z.imag
    if x == 0:     # sin(iy) = i sinh(y)
        return complex(x, math.sinh(y))
    if y == 0:
        return complex(math.sin(x), y * math.copysign(1.0, math.cos(x)))
    if _big(y, x):      # sin(x + iy) = sin x cosh y + i cos x sinh y
        re, im = _exp_scaled(abs(y), math.sin(x), math.copysign(1.0, y) * math.cos(x), True)
        return complex(re, im)
    return cmath.sin(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_cos(z):
    x, y = z.real, z.imag
    if x == 0:     # cos(iy) = cosh(y)
        return complex(math.cosh(y), x * math.copysign(1.0, -y))
    if y == 0:
        return complex(math.cos(x), -y * math.copysign(1.0, math.sin(x)))
    if _big(y, x):      # cos(x + iy) = cos x cosh y - i sin x sinh y
        re, im = _exp_scaled(abs(y), math.cos(x), -math.copysign(1.0, y) * math.sin(x), True)
        return complex(re, im)
    return cmath.cos(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_exp64(z):
    return np.complex64(_fb_exp(complex(z))) if z.imag == 0 or z.real > 88 else cmath.exp(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_sinh64(z):
    return np.complex64(_fb_sinh(complex(z))) if z.imag == 0 or abs(z.real) > 88 else cmath.sinh(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_cosh64(z):
    return np.complex64(_fb_cosh(complex(z))) if z.imag == 0 or abs(z.real) > 88 else cmath.cosh(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_tanh64(z):
    return np.complex64(_fb_tanh(complex(z))) if z.imag == 0 else cmath.tanh(z)


@numba.njit(cache=True, error_model="numpy")
def _fb_sin64(z):
    return (np.complex64(_fb_sin(complex(z))) if z.imag == 0 or z.real == 0 or abs(z.imag) > 88
            else cmath.sin(z))


@numba.njit(cache=True, error_model="numpy")
def _fb_cos64(z):
    return (np.complex64(_fb_cos(complex(z))) if z.imag == 0 or z.real == 0 or abs(z.imag) > 88
            else cmath.cos(z))


def _complex_helpers():
    """``{"_c<fn>": f, "_c<fn>64": f}`` for each of ``_COMPLEX_FNS``: libm's, or the fallbacks
    (``cmath``'s where none above)."""
    out = {}
    for fn in _COMPLEX_FNS:
        if _LIBM is not None:
            try:
                for sym in (f"c{fn}", f"c{fn}f"):
                    _llvm.add_symbol(f"tangentia_{sym}", ctypes.cast(getattr(_LIBM, sym), ctypes.c_void_p).value)
                out[f"_c{fn}"] = out[f"_c{fn}64"] = _libm_complex(fn)
                continue
            except AttributeError:
                pass
        g = globals()
        plain = _plain(getattr(cmath, fn))
        out[f"_c{fn}"] = g.get(f"_fb_{fn}", plain)
        out[f"_c{fn}64"] = g.get(f"_fb_{fn}64", plain)
    return out


def _plain(f):
    return numba.njit(error_model="numpy")(lambda z: f(z))


_COMPLEX_HELPERS = _complex_helpers()
globals().update(_COMPLEX_HELPERS)


# Complex power: NumPy's loop.  b = 0 gives 1; a = 0 gives 0 where Re(b) > 0, else NaN; an
# integral real b in (-100, 100) repeated products (1 / product for a negative b, Smith's
# division), rounded in the operands' precision; anything else libm's cpow (numba's ``**``
# differed at special values: (1 + 1e300j) ** (3 + 1e300j) was nan+nanj, NumPy -0+0j, and in
# complex64 (3j) ** 101 nan+infj, NumPy -inf+infj).
if _LIBM is not None and hasattr(_LIBM, "cpow") and hasattr(_LIBM, "cpowf"):
    for _sym in ("cpow", "cpowf"):
        _llvm.add_symbol(f"tangentia_{_sym}", ctypes.cast(getattr(_LIBM, _sym), ctypes.c_void_p).value)
    _cpow_general = _libm_complex("pow", 2)
else:
    _cpow_general = numba.njit(error_model="numpy")(lambda a, b: a ** b)


@numba.njit(cache=True, error_model="numpy")
def _cpow_parts(a, b, one):
    """``(done, real, imaginary)``: ``a ** b`` in the precision of ``one`` (float64 or
    float32) unless ``done`` is False (the general case: libm's cpow)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    zero = one - one
    if br == 0 and bi == 0:
        return True, one, zero
    if ar == 0 and ai == 0:
        if br > 0:
            return True, zero, zero
        return True, zero / zero, zero / zero
    if not (bi == 0 and br > -100 and br < 100 and br == math.floor(br)):
        return False, zero, zero
    n = int(abs(br))
    if br > 0 and n <= 3:   # (NumPy's products for 1, 2, 3: a, a a, a (a a))
        acc_r, acc_i = ar, ai
        if n >= 2:
            acc_r, acc_i = ar * ar - ai * ai, ar * ai + ai * ar
        if n == 3:
            acc_r, acc_i = ar * acc_r - ai * acc_i, ar * acc_i + ai * acc_r
    else:        # (by squaring, from 1 + 0j)
        acc_r, acc_i, p_r, p_i = one, zero, ar, ai
        while True:
            if n & 1:
                acc_r, acc_i = acc_r * p_r - acc_i * p_i, acc_r * p_i + acc_i * p_r
            n >>= 1
            if n == 0:
                break
            p_r, p_i = p_r * p_r - p_i * p_i, p_r * p_i + p_i * p_r
    if br > 0:
        return True, acc_r, acc_i
    # (1 + 0j) / acc: Smith's algorithm, every term kept (0 * inf is NaN there too)
    abr, abi = abs(acc_r), abs(acc_i)
    if abr >= abi:
        if abr == 0 and abi == 0:
            return True, one / abr, zero / abi
        rat = acc_i / acc_r
        scl = one / (acc_r + acc_i * rat)
        return True, (one + zero * rat) * scl, (zero - one * rat) * scl
    rat = acc_r / acc_i
    scl = one / (acc_i + acc_r * rat)
    return True, (one * rat + zero) * scl, (zero * rat - one) * scl


@numba.njit(cache=True, error_model="numpy")
def _cpow(a, b):
    done, re, im = _cpow_parts(a, b, 1.0)
    return complex(re, im) if done else _cpow_general(a, b)


@numba.njit(cache=True, error_model="numpy")
def _cipow_product(x, n):
    """``x ** n`` for ``n >= 1`` as eager ``integer_pow`` (JAX's order): repeated squaring,
    the product started from the first factor (not 1 + 0j: 1 * inf would make a NaN part)."""
    acc, base, first = x, x, True
    while n:
        if n & 1:
            acc = base if first else acc * base
            first = False
        n >>= 1
        if n:
            base = base * base
    return acc


@numba.njit(cache=True, error_model="numpy")
def _cipow(x, y):
    """``integer_pow(x, y)`` of a complex128 ``x`` (``y`` a nonzero int), as eager: cmath's
    ``x ** 3.0`` gave (-2j) ** 3 = -1.5e-15+8j (eager 0+8j) and (inf+0j) ** 3 inf+nanj."""
    acc = _cipow_product(x, abs(y))
    if y > 0:
        return acc
    return _cdiv(1.0 + 0j, acc)


@numba.njit(cache=True, error_model="numpy")
def _cipow64(x, y):
    acc = _cipow_product(x, abs(y))
    if y > 0:
        return acc
    return _cdiv64(np.complex64(1.0), acc)


@numba.njit(cache=True, error_model="numpy")
def _cpow64(a, b):
    done, re, im = _cpow_parts(a, b, np.float32(1.0))
    return np.complex64(complex(re, im)) if done else _cpow_general(a, b)


@numba.njit(cache=True)
def _index(i, n):
    """A possibly negative index into an axis of length n (IndexError when out of bounds)."""
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise IndexError("index out of bounds in a jit-compiled getitem/scatter")
    return j


@numba.njit(cache=True)
def _index_clamp(i, n):
    """A possibly negative index into an axis of length n, clamped into it (JAX's gather,
    for a getitem whose index was traced: ``clamp``)."""
    j = i + n if i < 0 else i
    return 0 if j < 0 else (n - 1 if j >= n else j)


@numba.njit(cache=True)
def _lgamma(x):
    """scipy.special.gammaln: +inf at -inf (JAX's; SciPy gives -inf) and where 1/x overflows
    (Cephes)."""
    if x == -math.inf:        # (+inf, as JAX's, C's and eager's since a030290)
        return math.inf
    if x != 0 and math.isinf(1.0 / x):   # Cephes works with 1/x there
        return math.inf
    return math.lgamma(x)


# ---------------------------------------------------------------------------
# Ctrl-C: the flag compiled loops poll, and the calls that arm it


# (the flag's symbol is registered, and the handler, arm/disarm and call_interruptible made,
# by ``sigint``, which needs no numba: the machine-code cache runs programs without it)
from .sigint import CHECK_SYMBOL, FLAG_SYMBOL, CompiledLoopInterrupted, call_interruptible  # noqa: E402


def _extern(builder, name, ty):
    """The external global ``name`` (one of ``sigint._SYMBOLS``) declared in this module."""
    mod = builder.module
    try:
        return mod.get_global(name)
    except KeyError:
        gv = ir.GlobalVariable(mod, ty, name)
        gv.linkage = "external"
        return gv


@intrinsic
def _interrupted(typingctx):
    """Whether a signal handler raised in this poll: an atomic load of the flag (a plain one
    would be hoisted out of the loop polling it), and where it is set, a call of
    ``sigint``'s poll (through the pointer ``CHECK_SYMBOL``), which runs Python's handlers."""
    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        flag = _extern(builder, FLAG_SYMBOL, i32)
        v = builder.load_atomic(flag, "monotonic", 4)
        seen = builder.icmp_signed("!=", v, ir.Constant(i32, 0))
        before = builder.basic_block
        with builder.if_then(seen, likely=False):
            ptr = builder.load(_extern(builder, CHECK_SYMBOL, ir.IntType(8).as_pointer()))
            r = builder.call(builder.bitcast(ptr, ir.FunctionType(i32, []).as_pointer()), [])
            raised = builder.icmp_signed("!=", r, ir.Constant(i32, 0))
            polled = builder.basic_block
        out = builder.phi(ir.IntType(1))
        out.add_incoming(ir.Constant(ir.IntType(1), 0), before)
        out.add_incoming(raised, polled)
        return out
    return types.boolean(), codegen


globals().update(special.FUNCTIONS)   # SciPy's special functions, imported by generated code
__all__ = HELPERS = ("_fmax", "_fmin", "_fsign", "_frem", "_ffloordiv", "_icmp", "_ipow", "_upow", "_index", "_index_clamp", "_where", "_ifloordiv", "_lgamma", "_cdiv",
                     "_cdiv64", "_cpow", "_cpow64", "_cipow", "_cipow64", "_interrupted", "CompiledLoopInterrupted") + tuple(_COMPLEX_HELPERS) \
    + special.NAMES
