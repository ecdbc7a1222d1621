"""Vectorizable sin and cos for the numba backend's fused loops and unrolled programs.

The companion of ``vecmath`` (exp, log, ...): numba intrinsics emitting their
arithmetic as LLVM IR inline, so a loop over them vectorizes and unrolled
straight-line code runs without a call per element.  No fast-math flags.

``_vsin(x)`` and ``_vcos(x)`` (float64; float32 computed in float64 and rounded):

* Reduction by pi/2 (Cody-Waite with fused multiply-adds) for ``|x| <= 2^40``:
  ``k = rint(x 2/pi)``, ``r = x - k P1 - k P2 - k P3`` with ``P1 + P2 + P3``
  pi/2 to 163 bits.  ``x - k P1`` is exact in one ``fma`` (both terms are
  multiples of 2^-53 and the difference is below 1), ``k P2`` is split
  exactly into two doubles by an ``fma`` and subtracted with Knuth's TwoSum,
  so ``r`` is a double-double ``rh + rl`` with an absolute error below
  ``k 2^-159`` (the rounding of the low parts' sum), at most 2^-119.  No
  double lies closer than 2^-61 to a multiple of pi/2 (Muller's bound), so
  the relative error of ``r`` is below 2^-58 even there.
* Kernels on ``|r| <= pi/4``: fdlibm's ``__kernel_sin`` and ``__kernel_cos``
  (polynomials of degree 13 and 14, the tail ``rl`` folded in, ``1 - r^2/2``
  summed with its rounding error), by Horner's rule with ``fma``; both are
  computed and the quadrant ``k mod 4`` selects and negates one, without
  branches.
* Lanes beyond (``|x| > 2^40``, infinities, NaN) take a rarely-taken branch,
  after the fast path has run on a clamped argument, to an out-of-line
  function (``_slow``) reducing exactly (Payne-Hanek, ``_reduce_large``):
  with ``x = m 2^e``, the 192 bits of ``2^e 2/pi`` from weight 2 down to
  2^-190 (a window of a table of 2/pi's first 1216 bits; the bits above add
  multiples of 4 to ``x 2/pi``) times ``m`` in 256-bit integer arithmetic
  give ``x 2/pi mod 4`` to 2^-137, rounded to ``k mod 4`` and the fraction,
  which becomes ``r`` as a double-double; then the same kernels.  In
  vectorized loops the branch is a masked vector call that returns at once
  when no lane needs it.  No libm call anywhere.
* ``_ssin``/``_scos``: the same values (bit for bit) as calls of one
  out-of-line copy per program, for scalarized code outside vectorized loops
  (``rules._SCALAR_OPS``).  Inlined at every element, hundreds of them cost
  seconds of LLVM compile time (the 251-op chain's gradient: 11 s against
  2.6 s) and no loop vectorizes them there anyway.  The copy branches to the
  kernel directly for ``|x| < 0.78`` (``k = 0``): a scalar ODE right-hand side
  is latency-bound, and the shorter chain keeps it as fast as libm's there.

Measured errors against a correctly rounded reference (``np.longdouble``:
glibc's ``sinl``/``cosl``, checked against mpmath at the hard cases;
tests/test_numba_vecmath_trig.py), on 1.1 million points up to 2^40 (uniform,
log-uniform, the doubles nearest to k pi/2 and to (k + 1/2) pi/2, and the
hard cases from the continued fraction of pi/2 in every binade): sin 0.78 ulp,
cos 0.79 ulp at the most (0.50 at the hard cases), mean 0.18 (NumPy's: 0.18);
beyond 2^40 (300 000 log-uniform points up to the largest double, 20 000 hard
cases) 0.75 ulp (0.62 at the hard cases).  NumPy's float64 sin and cos are
glibc's, which are not within an ulp near multiples of pi/2: 1.98 ulp for
sin(115689413.36222704), 7.19 ulp for cos(563416747700.2246), and up to
1.4e5 ulp for huge arguments (sin(1.2853022199154463e174): glibc's reduction
is accurate in absolute, not relative, terms).  Special values are NumPy's:
``sin(+-0) = +-0``, ``cos(+-0) = 1``, ``sin(+-inf) = cos(+-inf) = NaN``, NaN
stays NaN.
"""
from __future__ import annotations

from llvmlite import ir

from .vecmath import _F64, _I64, _const, _module_function, _outlined, _unary

__all__ = INTRINSICS = ("_vsin", "_vcos", "_ssin", "_scos")

_INV_PIO2 = float.fromhex("0x1.45f306dc9c883p-1")         # 2/pi rounded
_PIO2 = tuple(float.fromhex(h) for h in (                 # pi/2 = P1 + P2 + P3 (+ 5.6e-50)
    "0x1.921fb54442d18p+0", "0x1.1a62633145c07p-54", "-0x1.f1976b7ed8fbcp-110"))
_FAST_MAX = 2.0 ** 40                                       # |x| above: _reduce_large
_SLOW_VFS = (2, 4, 8, 16)                                   # vector widths of _slow's variants
# 2/pi: its first 1216 bits after the binary point, 64 to a word
_TWO_OVER_PI = (
    0xa2f9836e4e441529, 0xfc2757d1f534ddc0, 0xdb6295993c439041, 0xfe5163abdebbc561,
    0xb7246e3a424dd2e0, 0x06492eea09d1921c, 0xfe1deb1cb129a73e, 0xe88235f52ebb4484,
    0xe99c7026b45f7e41, 0x3991d639835339f4, 0x9c845f8bbdf9283b, 0x1ff897ffde05980f,
    0xef2f118b5a0a6d1f, 0x6d367ecf27cb09b7, 0x4f463f669e5fea2d, 0x7527bac7ebe5f17b,
    0x3d0739f78a5292ea, 0x6bfb5fb11f8d5d08, 0x56033046fc7b6bab)
# fdlibm's k_sin.c S1..S6 and k_cos.c C1..C6 (|r| <= pi/4; errors < 2^-58)
_S = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
      2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
      -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


def _horner(f, z, coeffs):
    p = _const(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        p = f.fma(p, z, _const(c))
    return p


def _reduce(f, x):
    """``(rh, rl, q)``: ``x = k pi/2 + rh + rl`` with ``q = k mod 4`` (int64)."""
    b = f.b
    kd = f.rint(b.fmul(x, _const(_INV_PIO2)))
    nk = b.fneg(kd)
    rh = f.fma(nk, _const(_PIO2[0]), x)                     # exact
    th = b.fmul(kd, _const(_PIO2[1]))
    tl = f.fma(kd, _const(_PIO2[1]), b.fneg(th))            # k P2 == th + tl exactly
    s, e = f.two_sum(rh, b.fneg(th))                        # rh - th == s + e
    r, rl = f.fast_two_sum(s, f.fma(nk, _const(_PIO2[2]), b.fsub(e, tl)))
    q = b.and_(b.fptosi(kd, _I64), ir.Constant(_I64, 3))
    return r, rl, q


def _kernel_sin(f, x, y):
    """fdlibm's ``__kernel_sin(x, y, 1)``: sin(x + y) for |x| <= pi/4, |y| tiny."""
    b = f.b
    z = b.fmul(x, x)
    v = b.fmul(z, x)
    r = _horner(f, z, _S[1:])
    t = b.fsub(b.fmul(z, b.fsub(b.fmul(_const(0.5), y), b.fmul(v, r))), y)
    return b.fsub(x, f.fma(b.fneg(v), _const(_S[0]), t))


def _kernel_cos(f, x, y):
    """fdlibm's ``__kernel_cos(x, y)``: cos(x + y) for |x| <= pi/4, |y| tiny."""
    b = f.b
    z = b.fmul(x, x)
    w = b.fmul(z, z)
    r = f.fma(b.fmul(w, w), _horner(f, z, _C[3:]), b.fmul(z, _horner(f, z, _C[:3])))
    hz = b.fmul(_const(0.5), z)
    w = b.fsub(_const(1.0), hz)
    tail = b.fadd(b.fsub(b.fsub(_const(1.0), w), hz), b.fsub(b.fmul(z, r), b.fmul(x, y)))
    return b.fadd(w, tail)


def _from_reduced(name, f, rh, rl, q):
    """``sin`` or ``cos`` (``name``) of ``k pi/2 + rh + rl`` for ``q = k mod 4``."""
    b = f.b
    s, c = _kernel_sin(f, rh, rl), _kernel_cos(f, rh, rl)
    if name == "cos":
        q = b.add(q, ir.Constant(_I64, 1))                          # cos(x) = sin(x + pi/2)
    odd = b.trunc(q, ir.IntType(1))
    neg = b.icmp_unsigned("!=", b.and_(q, ir.Constant(_I64, 2)), ir.Constant(_I64, 0))
    y = f.select(odd, c, s)
    return f.select(neg, b.fneg(y), y)


def _trig_ir(name, f, x):
    """The IR of ``sin`` or ``cos`` (``name``) of the double ``x`` (see the module docstring)."""
    b = f.b
    slow = b.fcmp_unordered(">", f.fabs(x), _const(_FAST_MAX))      # also inf and NaN
    y = _from_reduced(name, f, *_reduce(f, f.select(slow, _const(0.0), x)))
    if name == "sin":
        y = f.select(b.fcmp_ordered("==", x, _const(0.0)), x, y)   # sin(-0) = -0
    fast_block = b.block
    with b.if_then(slow, likely=False):
        y_slow = b.call(_slow(b.module, name), [x])
        slow_block = b.block
    out = b.phi(_F64)
    out.add_incoming(y, fast_block)
    out.add_incoming(y_slow, slow_block)
    return out


def _int(bits, v):
    return ir.Constant(ir.IntType(bits), v)


def _reduce_large(f, x):
    """``(rh, rl, q)`` as ``_reduce`` gives them, for finite ``|x| > 2^40`` (the
    lanes it is used for; see the module docstring)."""
    b = f.b
    i256 = ir.IntType(256)
    bits = b.bitcast(x, _I64)
    mant = b.or_(b.and_(bits, _int(64, (1 << 52) - 1)), _int(64, 1 << 52))   # x = mant 2^e
    e = b.sub(b.and_(b.lshr(bits, _int(64, 52)), _int(64, 0x7FF)), _int(64, 1075))
    # w: the 192 bits of 2^e 2/pi from weight 2 down to 2^-190 (higher ones add
    # multiples of 4 to x 2/pi); the table's bit p has weight 2^(63 - p)
    p0 = b.add(e, _int(64, 62))
    p0 = f.select(b.icmp_signed("<", p0, _int(64, 0)), _int(64, 0), p0)    # (small |x|: unused lanes)
    table = _two_over_pi_table(b.module)
    j = b.lshr(p0, _int(64, 6))
    v = _int(256, 0)
    for i in range(4):
        word = b.load(b.gep(table, [_int(32, 0), b.add(j, _int(64, i))], inbounds=True))
        v = b.or_(v, b.shl(b.zext(word, i256), _int(256, 64 * (3 - i))))
    w = b.lshr(b.shl(v, b.zext(b.and_(p0, _int(64, 63)), i256)), _int(256, 64))
    # x 2/pi mod 4 = (mant w mod 2^192) 2^-190 = q + F 2^-190 with |F| <= 2^189
    low192 = (1 << 192) - 1
    t = b.and_(b.add(b.mul(b.zext(mant, i256), w), _int(256, 1 << 189)), _int(256, low192))
    q = b.trunc(b.lshr(t, _int(256, 190)), _I64)
    frac = b.sub(b.and_(t, _int(256, (1 << 190) - 1)), _int(256, 1 << 189))
    negative = b.icmp_signed("<", frac, _int(256, 0))
    a = b.or_(f.select(negative, b.neg(frac), frac), _int(256, 1))          # (never 0)
    lz = b.ctlz(a, ir.Constant(ir.IntType(1), 0))
    top = b.shl(a, lz)
    hi = b.trunc(b.lshr(top, _int(256, 192)), _I64)
    mid = b.trunc(b.lshr(top, _int(256, 128)), _I64)
    d1 = b.uitofp(b.lshr(hi, _int(64, 11)), _F64)
    d2 = b.uitofp(b.or_(b.shl(b.and_(hi, _int(64, 0x7FF)), _int(64, 42)), b.lshr(mid, _int(64, 22))), _F64)
    lz = b.trunc(lz, _I64)
    t_hi = b.fmul(d1, f.pow2(b.sub(_int(64, 13), lz)))                     # |F| 2^-190 = t_hi + t_lo
    t_lo = b.fmul(d2, f.pow2(b.sub(_int(64, -40), lz)))
    p = b.fmul(t_hi, _const(_PIO2[0]))                                        # (t_hi + t_lo) pi/2
    pe = f.fma(t_hi, _const(_PIO2[0]), b.fneg(p))
    pe = b.fadd(pe, f.fma(t_hi, _const(_PIO2[1]), b.fmul(t_lo, _const(_PIO2[0]))))
    rh, rl = f.fast_two_sum(p, pe)
    # sin and cos of -x: those of x at -(k pi/2 + r)
    flip = b.xor(negative, f.lt(x, _const(0.0)))
    q = f.select(f.lt(x, _const(0.0)), b.neg(q), q)
    return f.select(flip, b.fneg(rh), rh), f.select(flip, b.fneg(rl), rl), q


def _two_over_pi_table(module):
    name = "tangentia_two_over_pi"
    table = module.globals.get(name)
    if table is None:
        ty = ir.ArrayType(_I64, len(_TWO_OVER_PI) + 1)
        table = ir.GlobalVariable(module, ty, name)
        table.initializer = ir.Constant(ty, [0] + list(_TWO_OVER_PI))      # (a zero word first)
        table.global_constant = True
        table.linkage = "internal"
    return table


def _slow(module, name):
    """``tangentia_<name>_slow(x)``: ``name(x)`` (``sin`` or ``cos``) with the
    reduction of ``_reduce_large``, as a function LLVM calls out of line, in
    the lanes of a vectorized loop that need it too.

    It is ``readnone`` and not speculatable, so LLVM neither hoists it out of
    its rarely-taken branch nor executes it for every lane; its masked vector
    variants (vector function ABI, ``vector-function-abi-variant``) take over
    in vectorized loops: one call per vector of lanes that returns at once
    unless a lane is masked in, and then calls the scalar function lane by
    lane.  They are ``weak_odr`` so that LLVM keeps them until the vectorizer
    has run (every program has its own copy)."""
    def body(f, x):
        y = _from_reduced(name, f, *_reduce_large(f, x))
        nan = f.b.fsub(x, x)                                        # NaN for inf and NaN
        return f.select(f.b.fcmp_unordered("uno", nan, nan), nan, y)
    fname = f"tangentia_{name}_slow"
    fn, new = _module_function(module, fname, body)
    if not new:
        return fn
    variants = []
    for vf in _SLOW_VFS:
        vt = ir.VectorType(_F64, vf)
        vfn = ir.Function(module, ir.FunctionType(vt, [vt, ir.VectorType(ir.IntType(1), vf)]),
                          f"{fname}_m{vf}")
        vfn.linkage = "weak_odr"
        vfn.attributes.add("readnone")
        vfn.attributes.add("nounwind")
        x, mask = vfn.args
        b = ir.IRBuilder(vfn.append_basic_block())
        y = x
        with b.if_then(b.icmp_unsigned("!=", b.bitcast(mask, ir.IntType(vf)), _int(vf, 0)), likely=False):
            for i in range(vf):
                lane = _int(32, i)
                before = b.block
                with b.if_then(b.extract_element(mask, lane)):
                    y_lane = b.insert_element(y, b.call(fn, [b.extract_element(x, lane)]), lane)
                    then = b.block
                merged = b.phi(vt)
                merged.add_incoming(y, before)
                merged.add_incoming(y_lane, then)
                y = merged
            b.ret(y)
        b.ret(x)
        variants.append(f"_ZGV_LLVM_M{vf}v_{fname}({vfn.name})")
    # (a string attribute, which llvmlite's list of known attributes lacks)
    set.add(fn.attributes, '"vector-function-abi-variant"="' + ",".join(variants) + '"')
    return fn


def _sin_ir(f, x):
    return _trig_ir("sin", f, x)


def _cos_ir(f, x):
    return _trig_ir("cos", f, x)


_vsin = _unary(_sin_ir)
_vsin.__doc__ = "NumPy's sin of a float32/float64 scalar, branch-free but for |x| > 2^40 (vectorizable)."
_vcos = _unary(_cos_ir)
_vcos.__doc__ = "NumPy's cos of a float32/float64 scalar, branch-free but for |x| > 2^40 (vectorizable)."


def _scalar_ir(name):
    """``_trig_ir`` for one scalar, out of line: ``|x| < 0.78`` (where ``k = 0``
    and ``_reduce`` returns ``(x, 0)``) branches straight to the kernel, the same
    value with a shorter dependency chain (ODE right-hand sides are
    latency-bound)."""
    kernel = _kernel_sin if name == "sin" else _kernel_cos

    def ir_fn(f, x):
        b = f.b
        with b.if_else(b.fcmp_ordered("<", f.fabs(x), _const(0.78))) as (small, other):
            with small:
                y_small = kernel(f, x, _const(0.0))
                small_block = b.block
            with other:
                y_other = _trig_ir(name, f, x)
                other_block = b.block
        y = b.phi(_F64)
        y.add_incoming(y_small, small_block)
        y.add_incoming(y_other, other_block)
        return y
    ir_fn.__name__ = f"_{name}_scalar_ir"
    return ir_fn


_ssin = _unary(_outlined(_scalar_ir("sin"), "sin"))
_ssin.__doc__ = "``_vsin`` as a call of one out-of-line function (for unrolled scalar code)."
_scos = _unary(_outlined(_scalar_ir("cos"), "cos"))
_scos.__doc__ = "``_vcos`` as a call of one out-of-line function (for unrolled scalar code)."

# The IR of ``_ssin`` and ``_scos`` (``ir_fn(f, x)`` on a double ``x``), for ``irblock``.
SCALAR_IR = {"sin": _outlined(_scalar_ir("sin"), "sin"), "cos": _outlined(_scalar_ir("cos"), "cos")}
