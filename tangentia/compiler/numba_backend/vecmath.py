"""Vectorizable elementary functions for the numba backend's fused loops.

This llvmlite is built without SVML, so a loop calling ``math.exp`` calls
libm's scalar ``exp`` once per element and LLVM cannot vectorize it.  The
functions here are numba intrinsics that emit their arithmetic as LLVM IR
inline, without branches or calls (``llvm.fma`` and ``llvm.rint`` become
single instructions), so LLVM's loop vectorizer turns a loop over them into
SIMD code (``<8 x double>`` on AVX-512), as NumPy's own SIMD ufuncs are.
No fast-math flags: every operation rounds as IEEE arithmetic does.

``_vexp(x)`` is ``exp`` for float64 and float32 (computed in float64 and
rounded): Cody-Waite reduction ``x = k ln2 + r``, ``|r| <= ln2/2``, with ``r``
kept as a sum of two doubles (``x - k ln2_hi`` is exact in a fused
multiply-add); ``exp(r) = 1 + r + r^2 q(r)``, summed with the rounding errors
of ``r`` and of ``1 + r`` carried to the last addition, and ``q`` a near-minimax polynomial of degree 9 (Chebyshev interpolation of
``(exp(r) - 1 - r) / r^2``, relative error 1.6e-17); the scaling ``2^k`` is
two exact powers of two built from exponent bits, so results in the subnormal
range are rounded once.  Error below 1 ulp against the correctly rounded
value; ``exp(0) == 1``, ``exp(inf) == inf``, ``exp(-inf) == 0``, NaN stays
NaN, and overflow to ``inf`` happens where IEEE rounding of the true value
overflows (NumPy's threshold).

``_vlog(x)`` is ``log`` (fdlibm's algorithm: ``x = 2^k m``, ``m`` in
``[sqrt(2)/2, sqrt(2))``, ``log(m) = 2 atanh(s)`` by a polynomial in ``s^2``;
subnormal inputs scaled first): error below 1 ulp, ``log(0) = -inf``,
``log(x < 0) = NaN``, ``log(inf) = inf``.  ``_vlog1p(x)`` is ``log(u) + c/u``
with ``u = 1 + x`` rounded and ``c`` its exact error, the correction added
inside ``log``'s last step (error below 1 ulp; ``log1p(-0.0) = -0.0``).
"""
from __future__ import annotations

import math

from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic

__all__ = INTRINSICS = ("_vexp", "_vlog", "_vlog1p")

_INV_LN2 = 1.4426950408889634
_LN2_HI = float.fromhex("0x1.62e42fefa39efp-1")      # ln 2 rounded to double
_LN2_LO = float.fromhex("0x1.abc9e3b39803fp-56")     # ln 2 - _LN2_HI
# q(r) = (exp(r) - 1 - r) / r^2, coefficients of r^0 .. r^9 on |r| <= 1.0005 ln2/2
_EXP_Q = tuple(float.fromhex(h) for h in (
    "0x1.0000000000001p-1", "0x1.5555555555556p-3", "0x1.5555555553d4fp-5",
    "0x1.11111111109adp-7", "0x1.6c16c17893833p-10", "0x1.a01a01a7c8d47p-13",
    "0x1.a019b8ef67c6cp-16", "0x1.71de0d9c145d0p-19", "0x1.2891a8c1d838dp-22",
    "0x1.af38d53857513p-26"))
# Inputs are clamped to [_X_MIN, _X_MAX] first (k stays small enough for the
# exponent arithmetic); exp(_X_MAX) overflows and exp(_X_MIN) underflows to 0.
_X_MAX, _X_MIN = 710.0, -746.0

# log: fdlibm's ln2 split (k ln2_hi is exact for |k| < 2^11) and its polynomial
# Lg1..Lg7 in s^2, s = f / (2 + f), of (log(1+f) - 2s) / s (error < 1 ulp)
_LOG_LN2_HI, _LOG_LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_LOG_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
           2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
           1.479819860511658591e-01)
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD                # the bits of sqrt(2)/2
_TINY = 2.2250738585072014e-308                     # the smallest normal double

_F64 = ir.DoubleType()
_I64 = ir.IntType(64)


def _const(v):
    return ir.Constant(_F64, v)


class _IR:
    """Short names for the few IR operations the functions use."""

    def __init__(self, builder):
        self.b = builder
        self._rint = builder.module.declare_intrinsic("llvm.rint", [_F64])
        self._fabs = builder.module.declare_intrinsic("llvm.fabs", [_F64])

    def fabs(self, a):
        return self.b.call(self._fabs, [a])

    def fma(self, a, b, c):
        return self.b.fma(a, b, c)

    def rint(self, a):
        return self.b.call(self._rint, [a])

    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def select(self, p, a, b):
        return self.b.select(p, a, b)

    def pow2(self, k):
        """``2.0 ** k`` for an int64 ``k`` in [-1022, 1023] (exponent bits)."""
        bits = self.b.shl(self.b.add(k, ir.Constant(_I64, 1023)), ir.Constant(_I64, 52))
        return self.b.bitcast(bits, _F64)


def _exp_ir(f, x):
    """The IR of ``exp`` of the double ``x`` (see the module docstring)."""
    b = f.b
    xc = f.select(f.lt(_const(_X_MIN), x), x, _const(_X_MIN))     # NaN -> _X_MIN
    xc = f.select(f.lt(xc, _const(_X_MAX)), xc, _const(_X_MAX))
    kd = f.rint(b.fmul(xc, _const(_INV_LN2)))
    nk = b.fneg(kd)
    rh = f.fma(nk, _const(_LN2_HI), xc)        # exact (|rh| < 1/2, a multiple of 2^-54)
    rl = b.fmul(nk, _const(_LN2_LO))
    r = b.fadd(rh, rl)
    r_err = b.fadd(b.fsub(rh, r), rl)          # rh + rl == r + r_err (|rh| >= |rl|)
    q = _const(_EXP_Q[-1])
    for c in reversed(_EXP_Q[:-1]):
        q = f.fma(q, r, _const(c))
    # 1 + r + r^2 q + r_err exp(r), with the rounding error of 1 + r carried in lo
    hi = b.fadd(_const(1.0), r)
    lo = f.fma(r_err, hi, b.fadd(b.fsub(_const(1.0), hi), r))
    p = b.fadd(hi, f.fma(b.fmul(r, r), q, lo))
    k = b.fptosi(kd, _I64)
    k1 = b.ashr(k, ir.Constant(_I64, 1))
    y = b.fmul(b.fmul(p, f.pow2(k1)), f.pow2(b.sub(k, k1)))
    return f.select(b.fcmp_unordered("uno", x, x), x, y)


def _i64(v):
    return ir.Constant(_I64, v)


def _log_ir(f, x, extra=None):
    """The IR of ``log`` of the double ``x`` (fdlibm's ``__ieee754_log`` without
    branches), of ``log(x) + extra`` for a small ``extra`` added before the last
    rounding."""
    b = f.b
    sub = f.lt(x, _const(_TINY))                      # subnormal inputs: scaled by 2^54 first
    bits = b.bitcast(f.select(sub, b.fmul(x, _const(2.0 ** 54)), x), _I64)
    # x = 2^k m with m in [sqrt(2)/2, sqrt(2)): the exponent field offset by the bits of sqrt(2)/2
    hx = b.add(bits, _i64(0x3FF0000000000000 - _SQRT_HALF_BITS))
    k = b.sub(b.sub(b.ashr(hx, _i64(52)), _i64(0x3FF)), b.select(sub, _i64(54), _i64(0)))
    m = b.bitcast(b.add(b.and_(hx, _i64((1 << 52) - 1)), _i64(_SQRT_HALF_BITS)), _F64)
    fr = b.fsub(m, _const(1.0))
    kd = b.sitofp(k, _F64)
    s = b.fdiv(fr, b.fadd(_const(2.0), fr))           # log(1 + fr) = 2 atanh(s)
    z = b.fmul(s, s)
    w = b.fmul(z, z)
    lg = [_const(c) for c in _LOG_LG]
    t1 = b.fmul(w, f.fma(w, f.fma(w, lg[5], lg[3]), lg[1]))
    t2 = b.fmul(z, f.fma(w, f.fma(w, f.fma(w, lg[6], lg[4]), lg[2]), lg[0]))
    hfsq = b.fmul(_const(0.5), b.fmul(fr, fr))
    corr = b.fadd(b.fmul(s, b.fadd(hfsq, b.fadd(t2, t1))), b.fmul(kd, _const(_LOG_LN2_LO)))
    if extra is not None:
        corr = b.fadd(corr, extra)
    y = b.fsub(b.fmul(kd, _const(_LOG_LN2_HI)), b.fsub(b.fsub(hfsq, corr), fr))
    # log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays NaN
    y = f.select(b.fcmp_ordered("==", x, _const(0.0)), _const(-math.inf), y)
    y = f.select(f.lt(x, _const(0.0)), _const(math.nan), y)
    y = f.select(b.fcmp_ordered("==", x, _const(math.inf)), x, y)
    return f.select(b.fcmp_unordered("uno", x, x), x, y)


def _log1p_ir(f, x):
    """The IR of ``log1p`` of the double ``x``: ``log(u) + c/u`` for ``u + c == 1 + x``
    (``u`` rounded, ``c`` its exact error), ``x`` itself where ``|x| < 2^-54``."""
    b = f.b
    u = b.fadd(_const(1.0), x)
    v = b.fsub(u, _const(1.0))
    c = b.fadd(b.fsub(_const(1.0), b.fsub(u, v)), b.fsub(x, v))       # (Knuth's TwoSum)
    y = _log_ir(f, u, b.fdiv(c, u))
    y = f.select(f.lt(f.fabs(x), _const(2.0 ** -54)), x, y)           # (keeps -0.0)
    y = f.select(b.fcmp_ordered("==", x, _const(math.inf)), x, y)
    return f.select(b.fcmp_ordered("==", x, _const(-1.0)), _const(-math.inf), y)


def _unary(ir_fn):
    """A numba intrinsic ``fn(x)`` for float32/float64 ``x`` emitting ``ir_fn``
    (computed in double; float32 results are rounded once from it)."""
    def typer(typingctx, x):
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, sig, args):
            (a,) = args
            d = a if sig.args[0] == types.float64 else builder.fpext(a, _F64)
            y = ir_fn(_IR(builder), d)
            return y if sig.return_type == types.float64 else builder.fptrunc(y, a.type)
        return x(x), codegen
    typer.__name__ = ir_fn.__name__.strip("_").replace("_ir", "")
    return intrinsic(typer)


_vexp = _unary(_exp_ir)
_vexp.__doc__ = "NumPy's exp of a float32/float64 scalar, branch-free (vectorizable in loops)."
_vlog = _unary(_log_ir)
_vlog.__doc__ = "NumPy's log of a float32/float64 scalar, branch-free (vectorizable in loops)."
_vlog1p = _unary(_log1p_ir)
_vlog1p.__doc__ = "NumPy's log1p of a float32/float64 scalar, branch-free (vectorizable in loops)."
