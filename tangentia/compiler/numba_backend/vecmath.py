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
of ``r`` and of ``1 + r`` carried to the last addition, and ``q`` a
near-minimax polynomial of degree 9 (Chebyshev interpolation of ``(exp(r) - 1
- r) / r^2``, relative error 2.3e-16, so 1.4e-17 of ``exp(r)``); the scaling ``2^k`` is
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

``_vexpm1(x)`` is ``expm1``: the same reduction, ``expm1(x) = 2^k (1 + r +
r^2/2 + r^3 q3(r)) - 1`` (``q3`` of degree 9, relative error 3.2e-18), where
``2^k``, ``2^k r``, ``2^k r^2/2`` (``r^2`` split exactly by an fma) and ``-1``
are summed without error (Fast2Sum, TwoSum) and only the small terms round, so
there is no cancellation near ``x = 0`` or ``k = +-1``.  Error below 0.6 ulp
(measured; NumPy's: 0.52); ``expm1(-0.0) = -0.0``, ``expm1(-inf) = -1``,
overflow where NumPy's (exp's) threshold is.  ``_vtanh(x)`` is ``tanh``:
``(E - 1) / (E + 1)`` for ``E = exp(2|x|)`` from the same exact sum, numerator
and denominator as double-doubles, the quotient corrected by its remainder
(one division), rounded once and given the sign of ``x``: error below 0.6 ulp
(measured; NumPy's SIMD tanh reaches 1.2), exactly odd, ``x`` itself where
``|x| < 2^-28`` (subnormals too), +-1 where the true value rounds to it (``|x|
> 19.06``; within 0.1 ulp of that tie either), NaN stays NaN.

``_stanh`` and ``_sexpm1`` are ``_vtanh`` and ``_vexpm1`` as calls of one
out-of-line copy per program (``_outlined``), the same bits, for scalarized
code outside vectorized loops, where inlining at every element only costs
compile time.
"""
from __future__ import annotations

import math

from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic

__all__ = INTRINSICS = ("_vexp", "_vexpm1", "_vlog", "_vlog1p", "_vtanh", "_sexpm1", "_stanh")

_INV_LN2 = 1.4426950408889634
_LN2_HI = float.fromhex("0x1.62e42fefa39efp-1")      # ln 2 rounded to double
_LN2_LO = float.fromhex("0x1.abc9e3b39803fp-56")     # ln 2 - _LN2_HI
# q(r) = (exp(r) - 1 - r) / r^2, coefficients of r^0 .. r^9 on |r| <= 1.0005 ln2/2
_EXP_Q = tuple(float.fromhex(h) for h in (
    "0x1.0000000000001p-1", "0x1.5555555555556p-3", "0x1.5555555553d4fp-5",
    "0x1.11111111109adp-7", "0x1.6c16c17893833p-10", "0x1.a01a01a7c8d47p-13",
    "0x1.a019b8ef67c6cp-16", "0x1.71de0d9c145d0p-19", "0x1.2891a8c1d838dp-22",
    "0x1.af38d53857513p-26"))
# the same to relative error 3.2e-18 (degree 10, 1/2 exact; least squares on Chebyshev
# nodes, each coefficient rounded in turn and the rest refit): expm1 keeps r^3 q3(r) =
# r^3 (q(r) - 1/2) / r as a term of its own
_EXPM1_Q = tuple(float.fromhex(h) for h in (
    "0x1.0000000000000p-1", "0x1.5555555555557p-3", "0x1.5555555555551p-5",
    "0x1.111111111004fp-7", "0x1.6c16c16c1928bp-10", "0x1.a01a01ac1ff03p-13",
    "0x1.a01a01943d2a8p-16", "0x1.71de01a41b2cfp-19", "0x1.27e5093ff4d9bp-22",
    "0x1.af4ee13f86f6cp-26", "0x1.1f25003664ea8p-29"))
# Inputs are clamped to [_X_MIN, _X_MAX] first (k stays small enough for the
# exponent arithmetic); exp(_X_MAX) overflows and exp(_X_MIN) underflows to 0.
_X_MAX, _X_MIN = 710.0, -746.0
_EXPM1_X_MIN = -40.0      # expm1(x) rounds to -1 below -38
_TANH_X_ONE = 20.0        # tanh(x) rounds to 1 above 19.1

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


def _i64(v):
    return ir.Constant(_I64, v)


class _IR:
    """Short names for the few IR operations the functions use."""

    def __init__(self, builder):
        self.b = builder
        self._rint = builder.module.declare_intrinsic("llvm.rint", [_F64])
        self._fabs = builder.module.declare_intrinsic("llvm.fabs", [_F64])
        self._copysign = builder.module.declare_intrinsic(
            "llvm.copysign", [_F64], ir.FunctionType(_F64, [_F64, _F64]))

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

    def copysign(self, a, b):
        return self.b.call(self._copysign, [a, b])

    def two_sum(self, a, b):
        """``(s, e)``: ``s = a + b`` rounded and its exact error ``e`` (Knuth's TwoSum)."""
        s = self.b.fadd(a, b)
        bb = self.b.fsub(s, a)
        e = self.b.fadd(self.b.fsub(a, self.b.fsub(s, bb)), self.b.fsub(b, bb))
        return s, e

    def fast_two_sum(self, a, b):
        """``two_sum(a, b)`` for ``|a| >= |b|`` (Dekker's Fast2Sum)."""
        s = self.b.fadd(a, b)
        return s, self.b.fsub(b, self.b.fsub(s, a))

    def pow2(self, k):
        """``2.0 ** k`` for an int64 ``k`` in [-1022, 1023] (exponent bits)."""
        bits = self.b.shl(self.b.add(k, ir.Constant(_I64, 1023)), ir.Constant(_I64, 52))
        return self.b.bitcast(bits, _F64)


def _reduce(f, xc, coeffs):
    """``(k, r, r_err, q)`` for a double ``xc`` in [-746, 710]: ``xc = k ln2 + r + r_err``
    (``k`` an integral double, ``|r| <= ln2/2``, ``r_err`` the rounding error of
    ``r``) and ``q = q(r) = (exp(r) - 1 - r) / r^2`` (the polynomial ``coeffs``)."""
    b = f.b
    kd = f.rint(b.fmul(xc, _const(_INV_LN2)))
    nk = b.fneg(kd)
    rh = f.fma(nk, _const(_LN2_HI), xc)        # exact (|rh| < 1/2, a multiple of 2^-54)
    rl = b.fmul(nk, _const(_LN2_LO))
    r, r_err = f.fast_two_sum(rh, rl)          # rh + rl == r + r_err (|rh| >= |rl|)
    q = _const(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        q = f.fma(q, r, _const(c))
    return kd, r, r_err, q


def _clamp(f, x, lo, hi):
    """``x`` clamped to ``[lo, hi]``, NaN to ``lo``."""
    xc = f.select(f.lt(_const(lo), x), x, _const(lo))
    return f.select(f.lt(xc, _const(hi)), xc, _const(hi))


def _exp_ir(f, x):
    """The IR of ``exp`` of the double ``x`` (see the module docstring)."""
    b = f.b
    kd, r, r_err, q = _reduce(f, _clamp(f, x, _X_MIN, _X_MAX), _EXP_Q)
    # 1 + r + r^2 q + r_err exp(r), with the rounding error of 1 + r carried in lo
    hi, lo = f.fast_two_sum(_const(1.0), r)
    lo = f.fma(r_err, hi, lo)
    p = b.fadd(hi, f.fma(b.fmul(r, r), q, lo))
    k = b.fptosi(kd, _I64)
    k1 = b.ashr(k, ir.Constant(_I64, 1))
    y = b.fmul(b.fmul(p, f.pow2(k1)), f.pow2(b.sub(k, k1)))
    return f.select(b.fcmp_unordered("uno", x, x), x, y)


def _exp_parts(f, xc, huge=True):
    """``(hi, lo, k_b)`` with ``exp(xc) = (hi + lo) 2^k_b``: ``hi`` the exact
    sum of ``2^k``, ``2^k r`` and ``2^k r^2/2`` (its leading double; Fast2Sum),
    ``lo`` the rest (their rounding errors and ``2^k (r^3 q3(r) + r_err
    exp(r))``, up to 2% of ``hi``), for a double ``xc`` in [-40, 710].
    ``2^k`` is ``2^k_a 2^k_b`` with ``k_a <= 1020`` (``huge=False``: ``xc <=
    700``, ``k_b = 0``)."""
    b = f.b
    kd, r, r_err, q3 = _reduce(f, xc, _EXPM1_Q[1:])    # q3 = (q - 1/2) / r
    rr = b.fmul(r, r)
    rr_lo = f.fma(r, r, b.fneg(rr))                     # r^2 == rr + rr_lo exactly
    c = f.fma(b.fmul(rr, r), q3, f.fma(r_err, r, f.fma(rr_lo, _const(0.5), r_err)))
    k = b.fptosi(kd, _I64)
    k_a = b.select(b.icmp_signed(">", k, _i64(1020)), _i64(1020), k) if huge else k
    s = f.pow2(k_a)
    sr = b.fmul(s, r)                                   # exact (a power of two), as is
    srr = b.fmul(b.fmul(s, _const(0.5)), rr)            # this
    h1, l1 = f.fast_two_sum(s, sr)                      # |s| >= |s r|
    hi, l2 = f.fast_two_sum(h1, srr)                    # |s (1 + r)| >= |s r^2 / 2|
    return hi, f.fma(s, c, b.fadd(l1, l2)), b.sub(k, k_a)


def _expm1_ir(f, x):
    """The IR of ``expm1`` of the double ``x``: ``_exp_parts``' ``hi - 1`` exact
    (TwoSum), ``lo`` and the error added, rounded once (``-1`` below -40, where
    ``expm1`` rounds to it)."""
    b = f.b
    hi, lo, k_b = _exp_parts(f, _clamp(f, x, _EXPM1_X_MIN, _X_MAX))
    hi, lo1 = f.two_sum(hi, _const(-1.0))
    y = b.fmul(b.fadd(hi, b.fadd(lo1, lo)), f.pow2(k_b))
    # |x| < 2^-30: x + x^2/2 (there 1 + r rounds off much of r, and lo rounds)
    y = f.select(f.lt(f.fabs(x), _const(2.0 ** -30)), f.fma(b.fmul(x, _const(0.5)), x, x), y)
    y = f.select(b.fcmp_ordered("==", x, _const(0.0)), x, y)          # (keeps -0.0)
    return f.select(b.fcmp_unordered("uno", x, x), x, y)


def _tanh_ir(f, x):
    """The IR of ``tanh`` of the double ``x``: ``(E - 1) / (E + 1)`` for ``E =
    exp(2|x|)`` (``|x|`` clamped to 20, where ``tanh`` rounds to 1) from
    ``_exp_parts`` (``E >= 1``, so ``hi -+ 1`` are exact by Fast2Sum), the
    quotient corrected by its remainder, rounded once, with the sign of ``x``."""
    b = f.b
    a = f.fabs(x)
    a = f.select(f.lt(a, _const(_TANH_X_ONE)), a, _const(_TANH_X_ONE))      # (NaN -> 20)
    hi, lo, _ = _exp_parts(f, b.fadd(a, a), huge=False)
    nh, nl = f.fast_two_sum(hi, _const(-1.0))
    nh, nl = f.fast_two_sum(nh, b.fadd(nl, lo))         # E - 1 == nh + nl, normalized
    dh, dl = f.fast_two_sum(hi, _const(1.0))
    dh, dl = f.fast_two_sum(dh, b.fadd(dl, lo))         # E + 1 == dh + dl, normalized
    inv = b.fdiv(_const(1.0), dh)
    q0 = b.fmul(nh, inv)
    rem = f.fma(b.fneg(q0), dh, nh)                     # nh - q0 dh, nearly exact
    q1 = b.fmul(f.fma(b.fneg(q0), dl, b.fadd(rem, nl)), inv)
    y = f.copysign(b.fadd(q0, q1), x)
    y = f.select(f.lt(a, _const(2.0 ** -28)), x, y)    # tanh(x) = x - x^3/3 rounds to x
    return f.select(b.fcmp_unordered("uno", x, x), x, y)


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
    u, c = f.two_sum(_const(1.0), x)
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


def _module_function(module, fname, body):
    """``(fn, new)``: the module's out-of-line double -> double function ``fname``
    (``noinline``, ``readnone``, ``linkonce_odr``: one copy per program), its IR
    ``body(f, x)`` emitted when it is first asked for (then ``new``)."""
    fn = module.globals.get(fname)
    if fn is not None:
        return fn, False
    fn = ir.Function(module, ir.FunctionType(_F64, [_F64]), fname)
    fn.linkage = "linkonce_odr"
    for attr in ("noinline", "nounwind", "readnone"):
        fn.attributes.add(attr)
    builder = ir.IRBuilder(fn.append_basic_block())
    builder.ret(body(_IR(builder), fn.args[0]))
    return fn, True


def _outlined(ir_fn, name):
    """``ir_fn`` as a call to one out-of-line function per module,
    ``tangentia_<name>``: for unrolled scalar code, where a function's IR inlined
    at each of hundreds of sites costs seconds of LLVM compile time and no loop
    vectorizes it anyway."""
    def call(f, x):
        return f.b.call(_module_function(f.b.module, f"tangentia_{name}", ir_fn)[0], [x])
    call.__name__ = f"_{name}_call_ir"
    return call


_vexp = _unary(_exp_ir)
_vexp.__doc__ = "NumPy's exp of a float32/float64 scalar, branch-free (vectorizable in loops)."
_vlog = _unary(_log_ir)
_vlog.__doc__ = "NumPy's log of a float32/float64 scalar, branch-free (vectorizable in loops)."
_vlog1p = _unary(_log1p_ir)
_vlog1p.__doc__ = "NumPy's log1p of a float32/float64 scalar, branch-free (vectorizable in loops)."
_vexpm1 = _unary(_expm1_ir)
_vexpm1.__doc__ = "NumPy's expm1 of a float32/float64 scalar, branch-free (vectorizable in loops)."
_vtanh = _unary(_tanh_ir)
_vtanh.__doc__ = "NumPy's tanh of a float32/float64 scalar, branch-free (vectorizable in loops)."
_stanh = _unary(_outlined(_tanh_ir, "tanh"))
_stanh.__doc__ = "``_vtanh`` as a call of one out-of-line function (for unrolled scalar code)."
_sexpm1 = _unary(_outlined(_expm1_ir, "expm1"))
_sexpm1.__doc__ = "``_vexpm1`` as a call of one out-of-line function (for unrolled scalar code)."

# The IR of the scalar (unrolled-code) variants, ``ir_fn(f, x)`` on a double ``x``
# (``f``: ``_IR(builder)``), for ``irblock``'s blocks: the same code ``_vexp``, ``_vlog``,
# ``_vlog1p`` (inline) and ``_stanh``, ``_sexpm1`` (out-of-line calls) emit.
SCALAR_IR = {"exp": _exp_ir, "log": _log_ir, "log1p": _log1p_ir,
             "tanh": _outlined(_tanh_ir, "tanh"), "expm1": _outlined(_expm1_ir, "expm1")}
