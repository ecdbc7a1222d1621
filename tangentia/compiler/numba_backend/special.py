"""SciPy's special functions called natively from generated numba code.

SciPy exports the C implementations behind ``scipy.special``'s ufuncs in
``scipy.special.cython_special`` (``__pyx_capi__``).  Each one used here is
registered with LLVM under a fixed name (``llvmlite.binding.add_symbol``) when
this module is imported, and generated code calls it through an intrinsic that
declares that external symbol.  The machine code refers to the name, not to an
address, so programs using these functions are cached on disk like any other and
relinked in a new process (which imports this module first: generated modules
import ``helpers``, which imports it).  Values are SciPy's bit for bit: the same
C code, with the ufunc's own float32 variant where SciPy has one (``erfinv``,
``betainc``; its other float32 loops compute in double and round).

NumPy's integer and floating-point utilities without a numba equivalent with
NumPy's semantics (shifts by out-of-range counts, ``gcd``/``lcm`` of the most
negative integer, ``bitwise_count``, ``spacing``, ``frexp``, ``nextafter``) are
small intrinsics and functions here too.

``OPS``, ``COMPLEX_OPS`` and ``UFUNCS`` extend the elementwise tables of ``rules``
(keyed by ``Primitive``, as they are); ``NAMES``
are the functions generated code imports.  Complex operands of the
one-argument functions and ``wofz`` call SciPy's complex C functions; complex
arguments of the Bessel and hypergeometric functions (a real order, a complex
argument) and ``sph_harm_y`` still run SciPy's ufunc in object mode.  Hurwitz's
``zeta`` (which SciPy does not export), ``polygamma`` and the gamma function's tail
(``igamma_grad_a``, ``log_gammaincc``, ``log_gammaincc_grad_a``, ``gamma_hazard``: the
NumPy implementations' recurrences) are njit functions here.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Tuple

import numba
import numpy as np
import scipy.special as sc
from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic

from ...primitives import misc as M, special as SP
from .codegen import _dt, _lit

from .scipy_c import _C16, _F4, _F8, _I8, _COMPLEX_BY_VALUE, _extern, _fuse  # noqa: F401

# primitive -> (SciPy ufunc, {loop kind: (C function, operand types[, outputs, which])});
# loop kind "d" is float64 (and the default), "f" a float32 variant, "l" integer orders,
# "c" complex (complex64 operands computed in complex128, as SciPy's loops do).
_D1, _D2, _D3, _D4 = [_F8], [_F8] * 2, [_F8] * 3, [_F8] * 4
_TABLE: Dict[Any, Tuple[Any, Dict[str, tuple]]] = {
    SP.beta_p: (sc.beta, {"d": ("beta", _D2)}),
    SP.betainc_p: (sc.betainc, {"d": (_fuse(0, "betainc"), _D3), "f": (_fuse(1, "betainc"), [_F4] * 3)}),
    SP.betaln_p: (sc.betaln, {"d": ("betaln", _D2)}),
    SP.dawsn_p: (sc.dawsn, {"d": (_fuse(1, "dawsn"), _D1)}),
    SP.digamma_p: (sc.psi, {"d": (_fuse(1, "psi"), _D1)}),
    SP.erfcinv_p: (sc.erfcinv, {"d": ("erfcinv", _D1)}),
    SP.erfcx_p: (sc.erfcx, {"d": (_fuse(1, "erfcx"), _D1)}),
    SP.erfinv_p: (sc.erfinv, {"d": (_fuse(0, "erfinv"), _D1), "f": (_fuse(1, "erfinv"), [_F4])}),
    SP.exp1_p: (sc.exp1, {"d": (_fuse(1, "exp1"), _D1)}),
    SP.expi_p: (sc.expi, {"d": (_fuse(1, "expi"), _D1)}),
    SP.expn_p: (sc.expn, {"d": (_fuse(0, "expn"), _D2), "l": (_fuse(1, "expn"), [_I8, _F8])}),
    SP.gamma_p: (sc.gamma, {"d": (_fuse(1, "gamma"), _D1)}),
    SP.gammainc_p: (sc.gammainc, {"d": ("gammainc", _D2)}),
    SP.gammaincc_p: (sc.gammaincc, {"d": ("gammaincc", _D2)}),
    SP.gammasgn_p: (sc.gammasgn, {"d": ("gammasgn", _D1)}),
    SP.hyp1f1_p: (sc.hyp1f1, {"d": (_fuse(1, "hyp1f1"), _D3)}),
    SP.hyp2f1_p: (sc.hyp2f1, {"d": (_fuse(1, "hyp2f1"), _D4)}),
    SP.kl_div_p: (sc.kl_div, {"d": ("kl_div", _D2)}),
    SP.log_ndtr_p: (sc.log_ndtr, {"d": (_fuse(1, "log_ndtr"), _D1)}),
    SP.ndtr_p: (sc.ndtr, {"d": (_fuse(1, "ndtr"), _D1)}),
    SP.ndtri_p: (sc.ndtri, {"d": ("ndtri", _D1)}),
    SP.owens_t_p: (sc.owens_t, {"d": ("owens_t", _D2)}),
    SP.poch_p: (sc.poch, {"d": ("poch", _D2)}),
    SP.rel_entr_p: (sc.rel_entr, {"d": ("rel_entr", _D2)}),
    SP.rgamma_p: (sc.rgamma, {"d": (_fuse(1, "rgamma"), _D1)}),
    SP.spence_p: (sc.spence, {"d": (_fuse(1, "spence"), _D1)}),
    SP.fresnel_s_p: (None, {"d": (_fuse(1, "fresnel"), _D1, 2, 0)}),
    SP.fresnel_c_p: (None, {"d": (_fuse(1, "fresnel"), _D1, 2, 1)}),
    SP.sici_si_p: (None, {"d": (_fuse(1, "sici"), _D1, 2, 0)}),
    SP.sici_ci_p: (None, {"d": (_fuse(1, "sici"), _D1, 2, 1)}),
}


class _Loops:
    """A ufunc's type resolution, failing for loops mixing real and complex operands
    (``rules`` then computes in the output dtype: complex, not called natively)."""

    def __init__(self, ufunc):
        self.ufunc, self.nin = ufunc, ufunc.nin

    def resolve_dtypes(self, dtypes):
        res = self.ufunc.resolve_dtypes(dtypes)
        if len({d.kind == "c" for d in res}) > 1:
            raise TypeError(f"{self.ufunc.__name__}: a loop mixing real and complex operands")
        return res


class _OneOutput:
    """The type resolution of output ``k`` of a ufunc with several outputs."""

    def __init__(self, ufunc, k):
        self.ufunc, self.k, self.nin = ufunc, k, ufunc.nin

    def resolve_dtypes(self, dtypes):
        res = self.ufunc.resolve_dtypes(tuple(dtypes[:-1]) + (None,) * self.ufunc.nout)
        return res[:self.ufunc.nin] + (res[self.ufunc.nin + self.k],)


UFUNCS: Dict[Any, Any] = {SP.fresnel_s_p: _OneOutput(sc.fresnel, 0), SP.fresnel_c_p: _OneOutput(sc.fresnel, 1),
          SP.sici_si_p: _OneOutput(sc.sici, 0), SP.sici_ci_p: _OneOutput(sc.sici, 1)}
_TABLE[SP.wofz_p] = (sc.wofz, {"c": ("wofz", [_C16])})
if _COMPLEX_BY_VALUE:
    for _p, _c in ((SP.dawsn_p, "dawsn"), (SP.digamma_p, "psi"), (SP.erfcx_p, "erfcx"),
                   (SP.exp1_p, "exp1"), (SP.expi_p, "expi"), (SP.gamma_p, "gamma"),
                   (SP.log_ndtr_p, "log_ndtr"), (SP.ndtr_p, "ndtr"), (SP.rgamma_p, "rgamma"),
                   (SP.spence_p, "spence")):
        _TABLE[_p][1]["c"] = (_fuse(0, _c), [_C16])
else:
    del _TABLE[SP.wofz_p]
for _p in (SP.i0_p, SP.i0e_p, SP.i1_p, SP.i1e_p, SP.j0_p, SP.j1_p, SP.y0_p, SP.y1_p):
    _TABLE[_p] = (getattr(sc, _p.name), {"d": (_p.name, _D1)})
for _p in (SP.iv_p, SP.ive_p, SP.jv_p, SP.yv_p):
    _TABLE[_p] = (getattr(sc, _p.name), {"d": (_fuse(1, _p.name), _D2)})

SCIPY_FUNCTIONS = tuple(p.name for p in _TABLE)
FUNCTIONS = {}     # name in generated code -> intrinsic or njit function
OPS = {}           # primitive -> op(operand expressions, loop dtype) -> expression
COMPLEX_OPS = {}   # the same, for the primitives called on complex operands too
UFUNCS.update({prim: _Loops(uf) for prim, (uf, _) in _TABLE.items() if uf is not None})


def _op(variants):
    def op(a, dt):
        kind = "l" if dt.kind in "iub" else "c" if dt.kind == "c" else "f" if dt == np.float32 else "d"
        fn = variants.get(kind) or variants["d"]
        return f"{fn}({', '.join(a)})"
    return op


for _prim, (_, _loops) in _TABLE.items():
    _variants = {}
    for _kind, (_capi, _argtys, *_out) in _loops.items():
        _fn = _extern(_capi, _argtys, *_out)
        _key = f"_sc_{_prim.name}_{_kind}"
        FUNCTIONS[_key] = _fn
        _variants[_kind] = _key
    OPS[_prim] = _op(_variants)
    if "c" in _loops:
        COMPLEX_OPS[_prim] = OPS[_prim]



# ---------------------------------------------------------------------------
# The gamma function's tail (``primitives/special.py``): d/da P(a, x) (``igamma_grad_a``),
# log Q(a, x) (``log_gammaincc``), its d/da (``log_gammaincc_grad_a``) and the hazard
# density / Q (``gamma_hazard``), the NumPy implementations' recurrences written per element
# (the same operations in the same order: an element stops where the NumPy code's mask of
# converged entries would have frozen it), with SciPy's C functions for gammaincc,
# gammaln, digamma and xlogy.  NumPy's arrays computed exp and log with its own SIMD
# loops and these call libm: values agree to a few ULP of the terms (log Q at x = 1e5,
# where ``a log x - x`` cancels, to the rounding of those terms).

_sc_gammaincc = _extern("gammaincc", _D2)
_sc_gammaln = _extern("gammaln", _D1)
_sc_psi = _extern(_fuse(1, "psi"), _D1)
_sc_xlogy = _extern(_fuse(1, "xlogy"), _D2)
_MAX_TERMS = 5000           # (``primitives.special._MAX_TERMS``)
_LOG_Q_TINY = 1e-280        # (``primitives.special._LOG_Q_TINY``)
_njit = numba.njit(cache=True, error_model="numpy")


@_njit
def _igamma_series_da(a, x):
    """d/da P(a, x) by the series (x < max(1, a))."""
    log_x = math.log(x)
    log_pre = a * log_x - x - _sc_gammaln(a + 1.0)
    d_log_pre = log_x - _sc_psi(a + 1.0)
    term, d_term = 1.0, 0.0
    total, d_total = 1.0, 0.0
    ap = a
    for _ in range(_MAX_TERMS):
        ap = ap + 1.0
        d_term = (d_term - term / ap) * (x / ap)
        term = term * (x / ap)
        total += term
        d_total += d_term
        if abs(term) <= 1e-17 * total and abs(d_term) <= 1e-17 * abs(d_total):
            break
    return math.exp(log_pre) * (d_total + total * d_log_pre)


@_njit
def _igamma_fraction(a, x):
    """(log_pre, d log_pre / da, h, dh / da): Q(a, x) = exp(log_pre) h by Legendre's
    continued fraction (x >= max(1, a)), the modified Lentz method."""
    tiny = 1e-300
    log_x = math.log(x)
    log_pre = a * log_x - x - _sc_gammaln(a)
    d_log_pre = log_x - _sc_psi(a)
    b = x + 1.0 - a
    c, dc = 1.0 / tiny, 0.0
    d = 1.0 / b
    dd = d * d
    h, dh = d, dd
    for i in range(1, _MAX_TERMS):
        an, dan = -i * (i - a), float(i)
        b = b + 2.0
        dn = an * d + b
        ddn = dan * d + an * dd - 1.0
        if abs(dn) < tiny:
            dn = tiny
        r = dc / c
        cn = b + an / c
        dcn = -1.0 + dan / c - an * r / c
        c = tiny if abs(cn) < tiny else cn
        dc = dcn
        d, dd = 1.0 / dn, -ddn / (dn * dn)
        delta, d_delta = d * c, dd * c + d * dc
        h, dh = h * delta, dh * delta + h * d_delta
        if abs(delta - 1.0) < 1e-16 and (abs(d_delta) <= 1e-16 * abs(dh / h) or dh == 0.0):
            break
    return log_pre, d_log_pre, h, dh


@_njit
def _igamma_grad_a(a, x):
    """``igamma_grad_a``: d/da P(a, x), NaN outside a > 0, x >= 0."""
    if not (a > 0.0 and x >= 0.0 and math.isfinite(a)) or math.isnan(x):
        return math.nan
    if x == 0.0 or math.isinf(x):
        return 0.0
    if x < 1.0 or x < a:
        return _igamma_series_da(a, x)
    log_pre, d_log_pre, h, dh = _igamma_fraction(a, x)
    return -math.exp(log_pre) * (dh + h * d_log_pre)


@_njit
def _far(q, a, x):
    """Whether Q underflows where the continued fraction holds (log space there)."""
    return q < _LOG_Q_TINY and a > 0.0 and math.isfinite(a) and math.isfinite(x) and x > a + 1.0


@_njit
def _log_gammaincc(a, x):
    q = _sc_gammaincc(a, x)
    if _far(q, a, x):
        log_pre, _, h, _ = _igamma_fraction(a, x)
        return log_pre + np.log(h)
    return np.log(q)


@_njit
def _log_gammaincc_grad_a(a, x):
    q = _sc_gammaincc(a, x)
    if _far(q, a, x):
        _, d_log_pre, h, dh = _igamma_fraction(a, x)
        return d_log_pre + dh / h
    return -_igamma_grad_a(a, x) / q


@_njit
def _gamma_hazard(a, x):
    q = _sc_gammaincc(a, x)
    if _far(q, a, x):
        _, _, h, _ = _igamma_fraction(a, x)
        return 1.0 / (x * h)
    if x == math.inf and a > 0.0:
        return 1.0           # its limit (the slope of log Q: -1)
    log_dens = _sc_xlogy(a - 1.0, x) - x - _sc_gammaln(a)
    return math.exp(log_dens - np.log(q))


def _tail_op(fn):
    # (computed in float64, as the NumPy implementation; the result in the loop dtype)
    return lambda a, dt: f"{_dt(dt)}({fn}(np.float64({a[0]}), np.float64({a[1]})))"


for _p, _fn in ((SP.igamma_grad_a_p, _igamma_grad_a), (SP.log_gammaincc_p, _log_gammaincc),
                (SP.log_gammaincc_grad_a_p, _log_gammaincc_grad_a),
                (SP.gamma_hazard_p, _gamma_hazard)):
    FUNCTIONS["_sc" + _fn.__name__] = _fn
    OPS[_p] = _tail_op("_sc" + _fn.__name__)


# ---------------------------------------------------------------------------
# Hurwitz's zeta and polygamma.  SciPy exports no Hurwitz zeta in ``cython_special``:
# ``_zeta`` is Cephes' ``zeta`` (SciPy's C++ port, identical values on a grid of 500
# points through its branches), and ``_polygamma`` SciPy's ``polygamma``, a NumPy
# expression: ``(-1)**(n+1) * gamma(n+1) * zeta(n+1, x)``, ``psi(x)`` for n = 0; in
# float32 each factor is rounded to float32 and multiplied in float32, as NumPy does.

_sc_gamma = _extern(_fuse(1, "gamma"), _D1)
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042e-16


@_njit
def _zeta(x, q):
    """Hurwitz's zeta(x, q) = sum_k (k + q)^-x, by Euler-Maclaurin summation (Cephes)."""
    if x == 1.0:
        return math.inf
    if x < 1.0:
        return math.nan
    if q <= 0.0:
        if q == math.floor(q):
            return math.inf
        if x != math.floor(x):
            return math.nan     # (q^-x is not defined)
    if q > 1e8:                 # (an asymptotic expansion: DLMF 25.11.43)
        return (1.0 / (x - 1.0) + 1.0 / (2.0 * q)) * q ** (1.0 - x)
    s = q ** -x
    a = q
    i = 0
    b = 0.0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = a ** -x
        s += b
        if abs(b / s) < _MACHEP:
            return s
    w = a
    s += b * w / (x - 1.0)
    s -= 0.5 * b
    a = 1.0
    k = 0.0
    for j in range(12):
        a *= x + k
        b /= w
        t = a * b / _ZETA_A[j]
        s = s + t
        t = abs(t / s)
        if t < _MACHEP:
            return s
        k += 1.0
        a *= x + k
        b /= w
        k += 1.0
    return s


@_njit
def _polygamma(n, x):
    """SciPy's polygamma(n, x) in float64."""
    if n == 0.0:
        return _sc_psi(x)
    return (-1.0) ** (n + 1.0) * _sc_gamma(n + 1.0) * _zeta(n + 1.0, x)


@_njit
def _polygamma32(n, x):
    """SciPy's polygamma(n, x) on float32 operands (NumPy's float32 arithmetic)."""
    if n == 0.0:
        return np.float32(_sc_psi(np.float64(x)))
    m = np.float32(n + np.float32(1.0))
    sign = np.float32(np.float32(-1.0) ** m)
    return sign * np.float32(_sc_gamma(np.float64(m))) * np.float32(_zeta(np.float64(m), np.float64(x)))


FUNCTIONS.update(_sc_zeta=_zeta, _sc_polygamma=_polygamma, _sc_polygamma32=_polygamma32)
OPS[SP.zeta_p] = lambda a, dt: f"{_dt(dt)}(_sc_zeta(np.float64({a[0]}), np.float64({a[1]})))"
OPS[SP.polygamma_p] = lambda a, dt: (f"_sc_polygamma32({a[0]}, {a[1]})" if dt == np.float32 else
                                     f"{_dt(dt)}(_sc_polygamma(np.float64({a[0]}), np.float64({a[1]})))")


_NEAR_POLE = SP.DIGAMMA_NEAR_POLE


@_njit
def _digamma(x):
    """SciPy's psi(x) in float64, but near a pole -n (0 < |r| < 0.1, r = x - round(x)) by
    the reflection psi(1 - x) - pi / tan(pi r) with the exact remainder r, as JAX's:
    ``primitives.special._digamma_impl``, the same expression."""
    if x < 0.0:
        r = x - math.floor(x + 0.5)
        if r != 0.0 and abs(r) < _NEAR_POLE:
            return _sc_psi(1.0 - x) - math.pi / math.tan(math.pi * r)
    return _sc_psi(x)


FUNCTIONS["_sc_digamma"] = _digamma
OPS[SP.digamma_p] = lambda a, dt: f"{_dt(dt)}(_sc_digamma(np.float64({a[0]})))"


# ---------------------------------------------------------------------------
# NumPy's integer and floating-point utilities


def _int_typer(ret, n):
    """Typer of an integer intrinsic of ``n`` operands (unified to one type)."""
    def typer(typingctx, *args):
        if len(args) != n or not all(isinstance(a, (types.Integer, types.Boolean)) for a in args):
            return None
        ty = args[0] if n == 1 else typingctx.unify_types(*args)
        if not isinstance(ty, (types.Integer, types.Boolean)):
            return None
        return (ret or ty)(*args), ty
    return typer


def _uabs_ir(context, builder, val, ty):
    """|val| as a 64-bit unsigned integer (the most negative value's magnitude too)."""
    wide = ir.IntType(64)
    if isinstance(ty, types.Integer) and ty.signed:
        val = builder.sext(val, wide) if ty.bitwidth < 64 else val
        return builder.select(builder.icmp_signed("<", val, ir.Constant(wide, 0)),
                              builder.neg(val), val)
    return builder.zext(val, wide) if context.get_value_type(ty).width < 64 else val


def _on_magnitude(name, ret, finish, doc):
    """An intrinsic ``finish(builder, |x| as an i64)`` of type ``ret``."""
    def typer(typingctx, x):
        found = _int_typer(ret, 1)(typingctx, x)
        if found is None:
            return None
        sig, ty = found
        return sig, lambda context, builder, sig, args: finish(
            builder, _uabs_ir(context, builder, args[0], ty))
    typer.__name__, typer.__doc__ = name, doc
    return intrinsic(typer)


_uabs = _on_magnitude("_uabs", types.uint64, lambda builder, m: m,
                      "|x| as uint64 (NumPy's gcd, lcm and bitwise_count work on magnitudes).")
_bitwise_count = _on_magnitude(
    "_bitwise_count", types.uint8, lambda builder, m: builder.trunc(builder.ctpop(m), ir.IntType(8)),
    "NumPy's bitwise_count: the number of 1 bits of |x|, as uint8.")


def _shift(left):
    def typer(typingctx, a, b):
        found = _int_typer(None, 2)(typingctx, a, b)
        if found is None:
            return None
        sig, ty = found

        def codegen(context, builder, sig, args):
            x, n = (context.cast(builder, v, t, ty) for v, t in zip(args, sig.args))
            lty = x.type
            signed = isinstance(ty, types.Integer) and ty.signed
            # C's (size_t)n < width: negative counts are out of range too
            ok = builder.icmp_unsigned("<", n, ir.Constant(lty, lty.width))
            if left:
                return builder.select(ok, builder.shl(x, n), ir.Constant(lty, 0))
            shifted = builder.ashr(x, n) if signed else builder.lshr(x, n)
            fill = ir.Constant(lty, 0)
            if signed:   # a negative value shifted out entirely is -1
                fill = builder.select(builder.icmp_signed("<", x, fill), ir.Constant(lty, -1), fill)
            return builder.select(ok, shifted, fill)
        return sig, codegen
    typer.__name__ = "_left_shift" if left else "_right_shift"
    return typer


_left_shift = intrinsic(_shift(True))
_left_shift.__doc__ = "NumPy's left_shift: 0 for counts outside [0, width)."
_right_shift = intrinsic(_shift(False))
_right_shift.__doc__ = "NumPy's right_shift: 0 (-1 for negative values) for counts outside [0, width)."


@numba.njit(cache=True)
def _gcd(a, b):
    """NumPy's gcd: Euclid's algorithm on the magnitudes, as uint64."""
    x, y = _uabs(a), _uabs(b)
    while x != np.uint64(0):
        x, y = y % x, x
    return y


@numba.njit(cache=True)
def _lcm(a, b):
    """NumPy's lcm: |a| / gcd * |b| (0 if both are 0), as uint64 (wrapping)."""
    g = _gcd(a, b)
    if g == np.uint64(0):
        return g
    return _uabs(a) // g * _uabs(b)


@numba.njit(cache=True)
def _spacing(x, inf):
    """NumPy's spacing: the distance to the next float away from zero (-0.0 counts
    as positive), NaN at infinities; ``inf`` is the infinity of ``x``'s type."""
    if math.isinf(x):
        return x - x
    return np.nextafter(x, inf if x >= 0 else -inf) - x


@numba.njit(cache=True)
def _f2i(x, lo, hi, imin, imax):
    """XLA's float -> integer conversion (``convert_element_type``'s impl), as an int64:
    truncated toward zero, ``imin``/``imax`` below ``lo``/from ``hi`` on (powers of two,
    exact in every float type), NaN to 0 (LLVM's fptosi is undefined out of range)."""
    if x != x:
        return imin - imin
    if x >= hi:
        return imax
    if x < lo:
        return imin
    return np.int64(x)


@numba.njit(cache=True)
def _f2u(x, hi):
    """``_f2i`` to uint64 (``hi``: 2**64): negative values and NaN to 0."""
    if x != x or x < 0:
        return np.uint64(0)
    if x >= hi:
        return np.uint64(0xFFFFFFFFFFFFFFFF)
    return np.uint64(x)


FUNCTIONS.update(_f2i=_f2i, _f2u=_f2u, _left_shift=_left_shift, _right_shift=_right_shift, _gcd=_gcd, _lcm=_lcm,
                 _bitwise_count=_bitwise_count, _spacing=_spacing)
OPS.update({
    M.left_shift_p: lambda a, dt: f"_left_shift({a[0]}, {a[1]})",
    M.right_shift_p: lambda a, dt: f"_right_shift({a[0]}, {a[1]})",
    M.gcd_p: lambda a, dt: f"{_dt(dt)}(_gcd({a[0]}, {a[1]}))",
    M.lcm_p: lambda a, dt: f"{_dt(dt)}(_lcm({a[0]}, {a[1]}))",
    M.bitwise_count_p: lambda a, dt: f"_bitwise_count({a[0]})",
    M.nextafter_p: lambda a, dt: f"np.nextafter({a[0]}, {a[1]})",
    M.spacing_p: lambda a, dt: f"_spacing({a[0]}, {_lit(np.inf, dt)})",
    M.frexp_mantissa_p: lambda a, dt: f"math.frexp({a[0]})[0]",
    M.frexp_exponent_p: lambda a, dt: f"math.frexp({a[0]})[1]",
})
UFUNCS.update({M.left_shift_p: np.left_shift, M.right_shift_p: np.right_shift, M.gcd_p: np.gcd,
               M.lcm_p: np.lcm, M.bitwise_count_p: np.bitwise_count, M.nextafter_p: np.nextafter,
               M.spacing_p: np.spacing, M.frexp_mantissa_p: _OneOutput(np.frexp, 0),
               M.frexp_exponent_p: _OneOutput(np.frexp, 1)})
NAMES = tuple(FUNCTIONS)
