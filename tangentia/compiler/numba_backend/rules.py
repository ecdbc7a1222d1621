"""Lowering rules of the numba backend: one function per primitive (or family),
``rule(g, eqn, ins) -> output values`` (``NotImplemented``: the generator
uses a kernel or the NumPy implementation instead).

Every table here is keyed by the ``Primitive`` object (imported from the modules
that define them), filled beside its rules: ``RULES`` (the lowering rule),
``ELEMENTWISE`` (elementwise primitives: ``_OPS``, ``_PARTS`` and a few more),
``FUSIBLE`` (consumers that keep a lazy operand lazy), ``ROWS`` (row rules for
batched values), ``VECTOR_OPS`` (loops LLVM vectorizes), ``_PARTIAL`` (rules
native for some cases only); ``special`` and ``windows`` add theirs.  The one
primitive made above this layer, ``custom_vmap_call`` (``tangentia.custom_batching``),
is keyed by its class, which ``core`` declares (``rule_of``).
"""
from __future__ import annotations

import contextlib

import numpy as np
from numba import types as nbt

from ...core import CustomVmapCallPrimitive, Eqn, Jaxpr, Literal, ProgramMemo, ShapedArray, Var
from ...custom_derivatives import _base as CD
from ...interpreters import ad, base_ops as B
from ...primitives import bits as BITS, call as CL, contraction as C, control_flow as CF
from ...primitives import elementwise as E
from ...primitives import indexing as I, linear_solve as LS, misc as M, reductions as R, remat
from ...primitives import special as SP, structural as S
from ...primitives.control_flow import split
from .codegen import (AV, LV, SV, ZV, UNROLL, needs_static, _F4, _F8, _I8, _bidx, _cast,
                      _dt, _is_float0, _kernel_table, _lit, _nbtype, _nested, _ravel, _shape_str, _size,
                      _typed, _wrap)
from .plan import BATCHED_BLAS_MIN, BLAS_MIN_FLOPS, FUSED_DOT_K, _dot_dims  # noqa: F401 - (read here)
from . import custom_lin, gemm, special, windows
from .blasdot import _dot as _blas_dot
from .rowio import _CHUNK, copy_into, load_row, nest, read_elements, row_load_p, row_store_p, store_row

def _ufunc_of(prim):
    """The NumPy ufunc whose loops ``prim`` runs: its implementation, when that is
    a ufunc, or its stand-in in ``special`` (SciPy's functions called natively)."""
    ufunc = special.UFUNCS.get(prim)
    if ufunc is None and isinstance(prim.impl, np.ufunc):
        ufunc = prim.impl
    if ufunc is None and isinstance(getattr(prim.impl, "ufunc", None), np.ufunc):
        ufunc = prim.impl.ufunc     # (max, min: NumPy's ufunc plus JAX's complex rule)
    return ufunc


def _loop_dtypes(eqn):
    """(input loop dtypes, output loop dtype) of the NumPy ufunc behind ``eqn``."""
    ufunc = _ufunc_of(eqn.prim)
    out = eqn.outputs[0].aval.dtype
    if ufunc is None:
        return [out] * len(eqn.inputs), out
    spec = []
    for a in eqn.inputs:
        if type(a) is Literal and type(a.val) in (int, float):
            spec.append(type(a.val))     # (weak: NumPy's promotion of Python scalars)
        elif type(a) is Literal and type(a.val) is bool:
            # (resolve_dtypes takes no Python bool; bool, the lowest kind, promotes the
            # same way: ``x == True`` compares in x's dtype, not x's truth value)
            spec.append(np.dtype(bool))
        else:
            spec.append(a.aval.dtype)
    try:
        res = ufunc.resolve_dtypes(tuple(spec) + (None,))
    except Exception:  # noqa: BLE001 - no such loop: compute in the output dtype
        return [out] * len(eqn.inputs), out
    # numba has no float16: a float16 loop (e.g. signbit of a boolean) runs in
    # float32, exact for the values such inputs can have
    res = [_F4 if d == np.float16 else d for d in res]
    if eqn.prim in _COMPARISONS and res[0].kind in "iu" and any(
            type(a) is Literal and type(a.val) is int and not _fits(a.val, res[0])
            for a in eqn.inputs):
        # NumPy 2 compares an integer array with a Python int outside its dtype's range
        # by value (uint8 x < -1 is False), not with the int cast into the dtype (255):
        # in int64, or in float64 next to a uint64 (only the signs then decide)
        wide = _F8 if any(a.aval.dtype == np.uint64 for a in eqn.inputs) else _I8
        return [wide] * len(eqn.inputs), res[-1]
    for a, d in zip(eqn.inputs, res):
        if type(a) is Literal and type(a.val) is int and d.kind in "iu" and not _fits(a.val, d):
            # NumPy 2 (and so eager evaluation and the NumPy backend) refuses a Python int
            # that its integer loop cannot hold (uint8 x + 300); a cast would wrap it (44)
            raise OverflowError(f"Python integer {a.val} out of bounds for {d}")
    return list(res[:-1]), res[-1]


def _fits(value, dtype):
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


_COMPARISONS = frozenset((E.eq_p, E.ne_p, E.lt_p, E.le_p, E.gt_p, E.ge_p))
_CMP_OPS = {E.eq_p: "==", E.ne_p: "!=", E.lt_p: "<", E.le_p: "<=", E.gt_p: ">", E.ge_p: ">="}


def _f(expr):
    return lambda a, dt: expr.format(*a)


def _by_kind(floats, ints, bools=None):
    def op(a, dt):
        if dt.kind == "f":
            return floats.format(*a)
        if dt.kind == "b" and bools is not None:
            return bools.format(*a)
        return ints.format(*a)
    return op


def _integer_pow(a, dt, y):
    x = a[0]
    if y == 0:
        return _lit(1, dt)
    if y == 1:
        return x
    if y == 2:
        return f"({x} * {x})"
    if dt.kind == "c":   # (eager's products and reciprocal: ``helpers._cipow``)
        return f"_cipow{'64' if dt == np.complex64 else ''}({x}, {y})"
    return f"({x} ** {float(y)!r})" if dt.kind == "f" else f"({x} ** {y})"


_OPS = {
    E.add_p: _by_kind("({0} + {1})", "({0} + {1})", "({0} | {1})"),
    ad.add_any_p: _by_kind("({0} + {1})", "({0} + {1})", "({0} | {1})"),
    E.sub_p: _f("({0} - {1})"),
    E.mul_p: _by_kind("({0} * {1})", "({0} * {1})", "({0} & {1})"),
    E.div_p: _f("({0} / {1})"),
    E.neg_p: _f("(-{0})"),
    # exp, log, log1p, expm1 and tanh of floats: branch-free arithmetic (``vecmath``), so loops over them vectorize
    E.exp_p: _by_kind("_vexp({0})", "math.exp({0})"), E.log_p: _by_kind("_vlog({0})", "math.log({0})"),
    E.log1p_p: _by_kind("_vlog1p({0})", "math.log1p({0})"),
    E.expm1_p: _by_kind("_vexpm1({0})", "math.expm1({0})"),
    # sin and cos of floats: ``vecmath_trig`` (branch-free but for |x| > 2^40)
    E.sin_p: _by_kind("_vsin({0})", "math.sin({0})"), E.cos_p: _by_kind("_vcos({0})", "math.cos({0})"),
    E.tan_p: _f("math.tan({0})"), E.arcsin_p: _f("math.asin({0})"), E.arccos_p: _f("math.acos({0})"),
    E.arctan_p: _f("math.atan({0})"), E.sinh_p: _f("math.sinh({0})"), E.cosh_p: _f("math.cosh({0})"),
    E.tanh_p: _by_kind("_vtanh({0})", "math.tanh({0})"), E.arcsinh_p: _f("math.asinh({0})"),
    E.arccosh_p: _f("math.acosh({0})"),
    E.arctanh_p: _f("math.atanh({0})"), E.sqrt_p: _f("math.sqrt({0})"), E.cbrt_p: _f("np.cbrt({0})"),
    E.abs_p: _by_kind("abs({0})", "abs({0})", "{0}"),
    E.pow_p: lambda a, dt: (f"({a[0]} ** {a[1]})" if dt.kind == "f" else   # (integers: wrapping,
                            f"_{'u' if dt.kind == 'u' else 'i'}pow({a[0]}, {a[1]})"),  # helpers._ipow)
    E.maximum_p: _by_kind("_fmax({0}, {1})", "max({0}, {1})", "({0} | {1})"),
    E.minimum_p: _by_kind("_fmin({0}, {1})", "min({0}, {1})", "({0} & {1})"),
    E.atan2_p: _f("math.atan2({0}, {1})"),
    E.rem_p: _by_kind("_frem({0}, {1})", "({0} % {1})"),   # (helpers: JAX's signed zeros)
    E.floor_divide_p: _by_kind("_ffloordiv({0}, {1})", "_ifloordiv({0}, {1})", "({0} & {1})"),
    E.sign_p: _by_kind("_fsign({0})", "(({0} > 0) - ({0} < 0))", "{0}"),
    E.floor_p: _by_kind("np.floor({0})", "{0}"), E.ceil_p: _by_kind("np.ceil({0})", "{0}"),
    E.round_p: _by_kind("np.rint({0})", "{0}"),
    E.eq_p: _f("({0} == {1})"), E.ne_p: _f("({0} != {1})"), E.lt_p: _f("({0} < {1})"),
    E.le_p: _f("({0} <= {1})"), E.gt_p: _f("({0} > {1})"), E.ge_p: _f("({0} >= {1})"),
    E.and_p: _by_kind("(({0} != 0) & ({1} != 0))", "(({0} != 0) & ({1} != 0))", "({0} & {1})"),
    E.or_p: _by_kind("(({0} != 0) | ({1} != 0))", "(({0} != 0) | ({1} != 0))", "({0} | {1})"),
    E.xor_p: _by_kind("(({0} != 0) != ({1} != 0))", "(({0} != 0) != ({1} != 0))", "({0} != {1})"),
    E.not_p: _by_kind("({0} == 0)", "({0} == 0)", "(not {0})"),
    E.bitwise_and_p: _f("({0} & {1})"), E.bitwise_or_p: _f("({0} | {1})"),
    E.bitwise_xor_p: _f("({0} ^ {1})"), E.bitwise_not_p: _by_kind("(~{0})", "(~{0})", "(not {0})"),
    E.isnan_p: _by_kind("math.isnan({0})", "False"), E.isinf_p: _by_kind("math.isinf({0})", "False"),
    E.isfinite_p: _by_kind("math.isfinite({0})", "True"),
    M.signbit_p: _by_kind("(math.copysign(1.0, {0}) < 0)", "({0} < 0)", "False"),
    M.copysign_p: _f("math.copysign({0}, {1})"),
    SP.erf_p: _f("math.erf({0})"), SP.erfc_p: _f("math.erfc({0})"), SP.lgamma_p: _f("_lgamma({0})"),
}

# Complex operands: the operations above that are correct for complex scalars as
# written, and those computed by ``cmath`` (C99's branch cuts, as NumPy's).
# Others (orderings, max/min, sign, ...) run the NumPy implementation.
_COMPLEX_AS_IS = {E.add_p, ad.add_any_p, E.sub_p, E.mul_p, E.div_p, E.neg_p, E.abs_p, E.pow_p,
                  E.eq_p, E.ne_p, E.and_p, E.or_p, E.xor_p, E.not_p}
_COMPLEX_OPS = {prim: _f(f"cmath.{fn}({{0}})") for prim, fn in (
    (E.exp_p, "exp"), (E.log_p, "log"), (E.sqrt_p, "sqrt"), (E.sin_p, "sin"), (E.cos_p, "cos"),
    (E.tan_p, "tan"), (E.arcsin_p, "asin"), (E.arccos_p, "acos"), (E.arctan_p, "atan"),
    (E.sinh_p, "sinh"), (E.cosh_p, "cosh"), (E.tanh_p, "tanh"), (E.arcsinh_p, "asinh"),
    (E.arccosh_p, "acosh"), (E.arctanh_p, "atanh"), (E.isnan_p, "isnan"), (E.isinf_p, "isinf"),
    (E.isfinite_p, "isfinite"))}
# Complex division: NumPy's loop (``helpers._cdiv``/``_cdiv64``: Smith's algorithm, C's
# infinities and NaN for a zero divisor, where numba's ``/`` raises ZeroDivisionError).
_COMPLEX_OPS[E.div_p] = lambda a, dt: f"_cdiv{'64' if dt == np.complex64 else ''}({a[0]}, {a[1]})"
# Complex power: NumPy's loop (``helpers._cpow``: products for small integral exponents, else
# libm's cpow; numba's ``**`` gave (1 + 1e300j) ** (3 + 1e300j) = nan+nanj, NumPy -0+0j).
_COMPLEX_OPS[E.pow_p] = lambda a, dt: f"_cpow{'64' if dt == np.complex64 else ''}({a[0]}, {a[1]})"
# exp, log, sqrt, trigonometric, hyperbolic and inverse functions: NumPy's values (``helpers._cexp``
# ...: glibc's libm, as NumPy's loops; cmath gave exp(710+1j) = inf+infj, NumPy 1.2e308+infj)
for _p, _fn in ((E.exp_p, "exp"), (E.log_p, "log"), (E.sqrt_p, "sqrt"), (E.sin_p, "sin"),
                (E.cos_p, "cos"), (E.tan_p, "tan"), (E.arcsin_p, "asin"), (E.arccos_p, "acos"),
                (E.arctan_p, "atan"), (E.sinh_p, "sinh"), (E.cosh_p, "cosh"), (E.tanh_p, "tanh"),
                (E.arcsinh_p, "asinh"), (E.arccosh_p, "acosh"), (E.arctanh_p, "atanh")):
    _COMPLEX_OPS[_p] = (lambda fn: lambda a, dt: f"_c{fn}{'64' if dt == np.complex64 else ''}({a[0]})")(_fn)
# Complex parts (on real operands too: NumPy's real, imag and conjugate of a real number).
_PARTS = {
    E.real_p: lambda a, dt: f"({a[0]}).real" if dt.kind == "c" else a[0],
    E.imag_p: lambda a, dt: f"({a[0]}).imag" if dt.kind == "c" else _lit(0, dt),
    E.conj_p: lambda a, dt: f"({a[0]}).conjugate()" if dt.kind == "c" else a[0],
    E.complex_p: lambda a, dt: (f"complex({a[0]}, {a[1]})" if dt == np.float64   # (part by part,
                                else f"np.complex64(complex({a[0]}, {a[1]}))"),   # as eager)
}

# SciPy's special functions, called natively (``special``)
_OPS.update(special.OPS)
_COMPLEX_OPS.update(special.COMPLEX_OPS)


# The same functions for scalarized values (unrolled code, no loop to vectorize):
# calls of one out-of-line copy per program, not their IR inlined at every element
# (hundreds of inlined sin/cos cost seconds of compile time; the call, a few ns).
_SCALAR_OPS = {E.sin_p: _by_kind("_ssin({0})", "math.sin({0})"),
               E.cos_p: _by_kind("_scos({0})", "math.cos({0})"),
               E.tanh_p: _by_kind("_stanh({0})", "math.tanh({0})"),
               E.expm1_p: _by_kind("_sexpm1({0})", "math.expm1({0})")}


def _convert(expr, src, dst):
    """``convert_element_type``: floats to integers as XLA's (and the impl's): truncated,
    saturating at the type's limits, NaN to 0 (``special._f2i``/``_f2u``: numba's cast,
    LLVM's fptosi, is undefined out of range); complex numbers so by their real part (as the
    impl's); anything else as ``_cast``."""
    if src.kind == "c" and dst.kind in "iu":
        real = np.dtype(np.float32 if src == np.complex64 else np.float64)
        return _convert(f"({expr}).real", real, dst)
    if src.kind != "f" or dst.kind not in "iu":
        return _cast(expr, src, dst)
    info = np.iinfo(dst)
    if dst == np.uint64:
        return f"_f2u({expr}, {_lit(2.0 ** 64, src)})"
    lo, hi = float(info.min), float(info.max) + 1.0   # (powers of two, or 0: exact)
    return _wrap(f"_f2i({expr}, {_lit(lo, src)}, {_lit(hi, src)}, {_lit(info.min, _I8)}, "
                 f"{_lit(info.max, _I8)})", dst)


def _scalar_fn(eqn, scalarized=False):
    """``f(input expressions) -> output expression`` for an elementwise equation
    (``scalarized``: for the elements of a scalarized value)."""
    prim = eqn.prim
    out = eqn.outputs[0].aval.dtype
    in_dts = [a.aval.dtype for a in eqn.inputs]
    if prim is E.select_p:
        if out.kind == "c":   # (``_where`` selects real and integer scalars)
            return lambda a: f"({_cast(a[1], in_dts[1], out)} if {a[0]} else {_cast(a[2], in_dts[2], out)})"
        return lambda a: f"_where({a[0]}, {_cast(a[1], in_dts[1], out)}, {_cast(a[2], in_dts[2], out)})"
    if prim is B.convert_element_type_p:
        return lambda a: _convert(a[0], in_dts[0], out)
    if prim is S.stop_gradient_p:
        return lambda a: a[0]
    loop_in, loop_out = _loop_dtypes(eqn)
    if prim in _PARTS:
        loop_in, loop_out = in_dts, out
        op = _PARTS[prim]
    elif prim is E.integer_pow_p:
        y = eqn.params["y"]
        loop_in, loop_out = [out], out
        op = lambda a, dt: _integer_pow(a, dt, y)  # noqa: E731
    elif loop_in[0].kind == "c":
        op = _COMPLEX_OPS.get(prim) or (_OPS[prim] if prim in _COMPLEX_AS_IS else None)
        if op is None:
            return None
    elif prim in _COMPARISONS and {d.kind for d in loop_in} == {"i", "u"}:
        # (NumPy's int64-uint64 loops compare by value: ``helpers._icmp``)
        op = lambda a, dt: f"(_icmp({a[0]}, {a[1]}) {_CMP_OPS[prim]} 0)"  # noqa: E731
    else:
        op = (scalarized and _SCALAR_OPS.get(prim)) or _OPS[prim]
    op_dt = loop_in[0]

    def fn(a):
        args = [_cast(e, s, d) for e, s, d in zip(a, in_dts, loop_in)]
        res = op(args, op_dt)
        res = _wrap(res, loop_out)
        return _cast(res, loop_out, out)
    return fn


def _elementwise(g, eqn, ins):
    out = eqn.outputs[0].aval
    small = g.is_small(out.shape)
    fn = _scalar_fn(eqn, small and not g.vector_loop)
    if fn is None:
        return NotImplemented
    if small:
        ins = [v if v.shape == out.shape else g.named(v) for v in ins]
        elems = [fn([g.elem(v, _bidx(idx, v.shape, out.shape)) for v in ins])
                 for idx in np.ndindex(*out.shape)]
        return [SV(out.shape, out.dtype, elems)]
    static = _size(out.shape) <= UNROLL and any(needs_static(v) for v in ins)
    ins = [g.named(v if static else g.dynamic_ready(v)) for v in ins]
    return [LV(out.shape, out.dtype,
               lambda idx: fn([g.elem(v, _bidx(idx, v.shape, out.shape)) for v in ins]), static)]


ELEMENTWISE = set(_OPS) | set(_PARTS) | {E.select_p, B.convert_element_type_p, E.integer_pow_p,
                                         S.stop_gradient_p}

# Elementwise operations whose lowering on real and integer operands is
# branch-free arithmetic without calls, so LLVM vectorizes loops over them
# (tests/test_numba_vecmath.py checks the generated code for SIMD registers).
VECTOR_OPS = {E.add_p, ad.add_any_p, E.sub_p, E.mul_p, E.div_p, E.neg_p, E.abs_p, E.maximum_p,
              E.minimum_p, E.sqrt_p, E.exp_p, E.log_p, E.log1p_p, E.expm1_p, E.tanh_p,
              E.sin_p, E.cos_p,             # (|x| > 2^40: in masked vector calls)
              E.eq_p, E.ne_p, E.lt_p, E.le_p, E.gt_p, E.ge_p, E.select_p, B.convert_element_type_p,
              E.integer_pow_p, M.copysign_p, E.isnan_p}


def vectorizes(eqn):
    """Whether a loop over ``eqn`` (in ``VECTOR_OPS``) vectorizes: no complex
    operands, and ``integer_pow`` only as a product (``pow`` is a libm call)."""
    if any(v.aval.dtype.kind == "c" for v in list(eqn.inputs) + list(eqn.outputs)):
        return False
    return eqn.prim is not E.integer_pow_p or eqn.params["y"] in (0, 1, 2)

# ---------------------------------------------------------------------------
# Data movement


def _remap(g, x, out_aval, in_index):
    """A value of ``out_aval`` whose element ``idx`` is ``x[in_index(idx)]``."""
    if type(x) is SV and g.is_small(out_aval.shape):
        idxs = [in_index(idx) for idx in np.ndindex(*out_aval.shape)]
        if all(type(i) is int for ix in idxs for i in ix):
            return SV(out_aval.shape, out_aval.dtype, [g.elem(x, ix) for ix in idxs])
    x = g.dynamic_ready(x)
    if g.is_small(out_aval.shape):
        idxs = [in_index(idx) for idx in np.ndindex(*out_aval.shape)]
        if type(x) is AV and len(idxs) > 1 and all(type(i) is int for ix in idxs for i in ix):
            # (static indices of an array: one call, ``rowio.read_elements``)
            return SV(out_aval.shape, out_aval.dtype, read_elements(g, x.name, idxs))
        return SV(out_aval.shape, out_aval.dtype, [g.scalar(g.elem(x, ix)) for ix in idxs])
    return LV(out_aval.shape, out_aval.dtype, lambda idx: g.elem(x, in_index(idx)))


def _reshape(g, eqn, ins):
    x, = ins
    out = eqn.outputs[0].aval
    if type(x) is SV and g.is_small(out.shape):
        return [SV(out.shape, out.dtype, list(x.elems))]
    a = g.array(x)
    n = g.name("a")
    g.emit(f"{n} = {a.name}.reshape({_shape_str(out.shape)})")
    o = AV(out.shape, out.dtype, n)
    return [g.small(o) if g.is_small(out.shape) else o]


def transpose_source(perm):
    """The index of a ``transpose``'s operand element that output index ``idx`` reads."""
    def in_index(idx):
        src = [0] * len(perm)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        return tuple(src)
    return in_index


def concatenate_source(shapes, axis, idx):
    """``(k, index)``: the operand (of ``shapes``) and its element that a
    ``concatenate``'s output index ``idx`` reads."""
    j = idx[axis]
    for k, shape in enumerate(shapes):
        if j < shape[axis]:
            return k, idx[:axis] + (j,) + idx[axis + 1:]
        j -= shape[axis]
    raise IndexError(idx)


def _transpose(g, eqn, ins):
    return [_remap(g, ins[0], eqn.outputs[0].aval, transpose_source(eqn.params["permutation"]))]


def _broadcast_to(g, eqn, ins):
    out = eqn.outputs[0].aval
    x = ins[0]
    return [_remap(g, x, out, lambda idx: _bidx(idx, x.shape, out.shape))]


def _concatenate(g, eqn, ins):
    out = eqn.outputs[0].aval
    axis = eqn.params["axis"]
    shapes = [v.shape for v in ins]

    def elements():     # (the result's elements, in order, as expressions of the operands')
        for idx in np.ndindex(*out.shape):
            k, src = concatenate_source(shapes, axis, idx)
            yield _cast(g.elem(ins[k], src), ins[k].dtype, out.dtype)
    if g.is_small(out.shape):
        return [SV(out.shape, out.dtype, [g.scalar(e) for e in elements()])]
    if _size(out.shape) <= UNROLL and all(type(v) is SV for v in ins):
        # (scalarized operands, a result too large to be: its elements stored by one
        # call, ``_Gen.array``, not each operand made an array and copied in)
        return [g.array(SV(out.shape, out.dtype, list(elements())))]
    n = g.name("a")
    g.emit(f"{n} = _empty({_shape_str(out.shape)}, {_dt(out.dtype)})")
    res = AV(out.shape, out.dtype, n)
    off = 0
    for v in ins:
        v = g.dynamic_ready(v)
        idx = g.loops(v.shape)
        dst = list(idx)
        dst[axis] = f"{off} + {idx[axis]}" if idx[axis] != 0 else off
        g.emit(f"{g.elem(res, dst)} = {_cast(g.elem(v, idx), v.dtype, out.dtype)}")
        g.close(idx)
        off += v.shape[axis]
    return [res]


# -- static indexing --------------------------------------------------------


def _index_plan(spec, x_shape, dyn):
    """(output shape, in_index) for a basic index whose array operands are 0-d.

    ``dyn`` holds the (already bounds-checked) expressions of the 0-d index arrays.
    Returns None if the spec has an index array with dimensions.
    """
    from ...primitives.indexing import ARRAY
    n_consumed = sum(1 for e in spec if e is not None and e is not Ellipsis)
    entries = []
    for e in spec:
        if e is Ellipsis:
            entries.extend([slice(None)] * (len(x_shape) - n_consumed))
        else:
            entries.append(e)
    n_consumed = sum(1 for e in entries if e is not None)
    entries.extend([slice(None)] * (len(x_shape) - n_consumed))
    dyn = iter(dyn)
    plan, out_shape, axis = [], [], 0   # plan: per input axis, ("fix", expr) or ("slice", out_axis, start, step)
    for e in entries:
        if e is None:
            out_shape.append(1)
            continue
        n = x_shape[axis]
        if e is ARRAY:
            plan.append(("fix", next(dyn)))
        elif isinstance(e, slice):
            start, stop, step = e.indices(n)
            plan.append(("slice", len(out_shape), start, step))
            out_shape.append(len(range(start, stop, step)))
        else:
            i = int(e)
            plan.append(("fix", i + n if i < 0 else i))
        axis += 1

    def in_index(idx):
        src = []
        for p in plan:
            if p[0] == "fix":
                src.append(p[1])
                continue
            _, k, start, step = p
            i = idx[k]
            if type(i) is int:
                src.append(start + i * step)
            else:
                # (``i`` may be a compound expression, a composed index's ``1 + i2``)
                term = i if step == 1 else f"{i} * {step}" if str(i).isidentifier() \
                    else f"({i}) * {step}"
                src.append(term if start == 0 else f"{start} + {term}")
        return tuple(src)
    return tuple(out_shape), in_index


def _dyn_indices(g, eqn, arrays, x_shape):
    """Bounds-checked scalar names for the 0-d index operands, or None."""
    from ...primitives.indexing import ARRAY
    spec = eqn.params["spec"]
    if any(v.shape for v in arrays):
        return None
    axes = []
    n_consumed = sum(1 for e in spec if e is not None and e is not Ellipsis)
    axis = 0
    for e in spec:
        if e is Ellipsis:
            axis += len(x_shape) - n_consumed
        elif e is ARRAY:
            axes.append(axis)
            axis += 1
        elif e is not None:
            axis += 1
    out = []
    check = "_index_clamp" if eqn.params.get("clamp") else "_index"
    for v, ax in zip(arrays, axes):
        i = _cast(g.elem(v, ()), v.dtype, _I8)
        out.append(g.scalar(f"{check}({i}, {x_shape[ax]})"))
    return out


def _row_indices(g, eqn, x_shape, arrays):
    """``(indexed shape, in_index)`` of a gather or scatter of whole rows, ``x[idx]``
    (the spec one index array, of one dimension, on the first axis: ``x[nb]`` of a
    neighbour list, an embedding's rows); else None.  Each row's index is bounds-checked
    (``_index``: negative ones wrap, others raise IndexError; ``_index_clamp`` for a
    traced index) where it is read, in a loop over the index as the kernel's."""
    from ...primitives.indexing import ARRAY
    if (tuple(eqn.params["spec"]) != (ARRAY,) or len(arrays) != 1 or len(arrays[0].shape) != 1
            or not x_shape or arrays[0].dtype.kind not in "iu"):
        return None
    ind = g.dynamic_ready(arrays[0])
    check = "_index_clamp" if eqn.params.get("clamp") else "_index"
    n = x_shape[0]

    def in_index(idx):
        i = _cast(g.elem(ind, (idx[0],)), ind.dtype, _I8)
        return (f"{check}({i}, {n})",) + tuple(idx[1:])
    return (ind.shape[0],) + tuple(x_shape[1:]), in_index


def _getitem(g, eqn, ins):
    x, arrays = ins[0], ins[1:]
    dyn = _dyn_indices(g, eqn, arrays, x.shape)
    if dyn is None:
        rows = _row_indices(g, eqn, x.shape, arrays)
        if rows is None:
            return NotImplemented
        # (a lazy value: the consumers read x's rows where they are, no copy; a kernel
        # call, an array and a kernel's compile before)
        out = eqn.outputs[0].aval
        x = g.dynamic_ready(x)
        in_index = rows[1]
        v = LV(out.shape, out.dtype, lambda idx: g.elem(x, in_index(idx)))
        return [g.small(v) if g.is_small(out.shape) else v]
    out = eqn.outputs[0].aval
    _, in_index = _index_plan(eqn.params["spec"], x.shape, dyn)
    return [_remap(g, x, out, in_index)]


_SCATTER_OPS = {"add": E.add_p, "mul": E.mul_p, "min": E.minimum_p, "max": E.maximum_p}


def _combine(mode, old, new, dtype):
    if mode == "set":
        return new
    return _OPS[_SCATTER_OPS[mode]]([old, new], dtype)


def _owns_operand(g, eqn, x):
    """Whether the scatter ``eqn`` may write into its operand's array: no one reads the
    operand after it (the plan's ``inplace``), and the operand's array is its own, made
    here: a lazy value (made an array by this scatter) or the array of an elementwise
    operation or of another scatter (each computes its result into an array of its own;
    not an input, a view (``reshape``), or an operand passed through (``stop_gradient``))."""
    prim = g.plans[-1].inplace.get(eqn) if g.plans else None
    if prim is None:
        return False
    if type(x) is LV:
        return True
    return type(x) is AV and x.name.isidentifier() and (
        prim is I.scatter_p or (prim in ELEMENTWISE and prim is not S.stop_gradient_p))


def _scatter(g, eqn, ins):
    x, y, arrays = ins[0], ins[1], ins[2:]
    mode = eqn.params["mode"]
    dyn = _dyn_indices(g, eqn, arrays, x.shape)
    rows = _row_indices(g, eqn, x.shape, arrays) if dyn is None else None
    if (dyn is None and rows is None) or mode not in ("set", "add", "mul", "min", "max") or \
            (mode in ("min", "max") and eqn.outputs[0].aval.dtype.kind == "c"):
        return NotImplemented
    out = eqn.outputs[0].aval
    # (rows: the updates in the index's order, a repeated row's in turn, as the kernel's)
    idx_shape, in_index = rows or _index_plan(eqn.params["spec"], x.shape, dyn)
    cdt = np.result_type(x.dtype, y.dtype) if mode != "set" else out.dtype

    def update(old, idx):
        new = _cast(g.elem(y, _bidx(idx, y.shape, idx_shape)), y.dtype, cdt)
        return _cast(_wrap(_combine(mode, _cast(old, x.dtype, cdt), new, cdt), cdt), cdt, out.dtype)

    if type(x) is SV and not dyn and rows is None:
        elems = list(x.elems)
        for idx in np.ndindex(*idx_shape):
            k = _ravel(in_index(idx), x.shape)
            elems[k] = g.scalar(update(elems[k], idx))
        return [SV(out.shape, out.dtype, elems)]
    y = g.dynamic_ready(y)
    own = _owns_operand(g, eqn, x)
    a = g.array(x)
    if own and a.dtype == out.dtype and a.shape == tuple(out.shape):
        res = AV(out.shape, out.dtype, a.name)      # (the update written in place)
    else:
        n = g.name("a")
        g.emit(f"{n} = _empty({_shape_str(a.shape)}, {_dt(a.dtype)})")
        g.emit(f"{g.glob(copy_into(), '_cp')}({n}, {a.name})")     # (not numba's array.copy)
        res = AV(out.shape, out.dtype, n)
    idx = g.loops(idx_shape)
    dst = g.elem(res, in_index(tuple(idx)))
    g.emit(f"{dst} = {update(dst, tuple(idx))}")
    g.close(idx)
    return [g.small(res) if g.is_small(out.shape) else res]


# ---------------------------------------------------------------------------
# Reductions

def _extreme(dt, low):
    if dt.kind == "f":
        return _lit(-np.inf if low else np.inf, dt)
    if dt.kind == "b":
        return "False" if low else "True"
    return _lit(np.iinfo(dt).min if low else np.iinfo(dt).max, dt)


_RED_INIT = {
    R.reduce_sum_p: lambda dt: _lit(0, dt),
    R.reduce_prod_p: lambda dt: _lit(1, dt),
    R.reduce_max_p: lambda dt: _extreme(dt, True),
    R.reduce_min_p: lambda dt: _extreme(dt, False),
    R.reduce_and_p: lambda dt: "True",
    R.reduce_or_p: lambda dt: "False",
    BITS.reduce_xor_p: lambda dt: _lit(0, dt),
}
_RED_OP = {R.reduce_sum_p: E.add_p, R.reduce_prod_p: E.mul_p, R.reduce_max_p: E.maximum_p,
           R.reduce_min_p: E.minimum_p, R.reduce_and_p: E.and_p, R.reduce_or_p: E.or_p,
           BITS.reduce_xor_p: E.bitwise_xor_p}    # (of booleans and integers only)
# reduce_and and reduce_or of integers are bitwise (JAX's, and the impl's
# np.bitwise_and/or.reduce): these operations, from all ones and from zero
_RED_BITWISE = {
    R.reduce_and_p: (E.bitwise_and_p, lambda dt: _lit(-1 if dt.kind == "i" else np.iinfo(dt).max, dt)),
    R.reduce_or_p: (E.bitwise_or_p, lambda dt: _lit(0, dt))}


def _reduce(g, eqn, ins):
    x, = ins
    out = eqn.outputs[0].aval
    axes = tuple(eqn.params["axes"])
    prim = eqn.prim
    dt = out.dtype
    if dt.kind == "c" and prim in (R.reduce_max_p, R.reduce_min_p):
        return NotImplemented   # (NumPy's lexicographic order)
    op = _OPS[_RED_OP[prim]]
    init = _RED_INIT[prim]
    if dt.kind in "iu" and prim in _RED_BITWISE:
        bitwise, init = _RED_BITWISE[prim]
        op = _OPS[bitwise]

    def comb(acc, e):
        return _wrap(op([acc, _cast(e, x.dtype, dt)], dt), dt)
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    red = [d for i, d in enumerate(x.shape) if i in axes]

    def full_index(k_idx, r_idx):
        k_it, r_it = iter(k_idx), iter(r_idx)
        return tuple(next(r_it) if i in axes else next(k_it) for i in range(len(x.shape)))

    if type(x) is SV:
        elems = []
        for k_idx in np.ndindex(*kept):
            acc = None
            for r_idx in np.ndindex(*red):
                e = g.elem(x, full_index(k_idx, r_idx))
                acc = _cast(e, x.dtype, dt) if acc is None else comb(acc, e)
                if len(acc) > 160:
                    acc = g.scalar(acc)
            elems.append(acc if acc is not None else init(dt))
        return [SV(out.shape, dt, elems)]
    x = g.dynamic_ready(x)
    if not kept:
        acc = g.name("acc")
        g.emit(f"{acc} = {init(dt)}")
        r_idx = g.loops(red)
        g.emit(f"{acc} = {comb(acc, g.elem(x, full_index((), r_idx)))}")
        g.close(r_idx)
        return [SV((), dt, [acc])]
    if axes == tuple(range(len(axes))) and g.is_small(out.shape):
        # Reduced axes first, few outputs (a bias's gradient: a sum over a batch's rows): a
        # scalar accumulator per output element in one loop over the rows, whose trip count
        # a size-generic unit reads from its argument (accumulated in an output array, 10
        # layers of f64[64,16] ran 3-7% slower per call than in an IR block; the same order)
        accs = [g.name("acc") for _ in range(_size(out.shape))]
        for acc in accs:
            g.emit(f"{acc} = {init(dt)}")
        r_idx = g.loops(red)
        for acc, k_idx in zip(accs, np.ndindex(*kept)):
            g.emit(f"{acc} = {comb(acc, g.elem(x, full_index(k_idx, r_idx)))}")
        g.close(r_idx)
        return [SV(out.shape, dt, accs)]
    n = g.name("a")
    g.emit(f"{n} = _empty({_shape_str(out.shape)}, {_dt(dt)})")
    res = AV(out.shape, dt, n)
    if axes == tuple(range(len(x.shape) - len(axes), len(x.shape))):
        # Reduced axes last: a scalar accumulator per output element, contiguous reads.
        k_idx = g.loops(kept)
        acc = g.name("acc")
        g.emit(f"{acc} = {init(dt)}")
        r_idx = g.loops(red)
        g.emit(f"{acc} = {comb(acc, g.elem(x, full_index(k_idx, r_idx)))}")
        g.close(r_idx)
        g.emit(f"{g.elem(res, k_idx)} = {acc}")
        g.close(k_idx)
    else:
        # Otherwise accumulate into the output while reading the input in its order.
        g.emit(f"{n}[...] = {init(dt)}")
        idx = g.loops(x.shape)
        k_idx = [i for a, i in enumerate(idx) if a not in axes]
        dst = g.elem(res, k_idx)
        g.emit(f"{dst} = {comb(dst, g.elem(x, idx))}")
        g.close(idx)
    return [g.small(res) if g.is_small(out.shape) else res]


def _argreduce(g, eqn, ins):
    x, = ins
    out = eqn.outputs[0].aval
    axis = eqn.params["axis"]
    better = ">" if eqn.prim is R.argmax_p else "<"
    if x.dtype.kind == "c":
        return NotImplemented   # (NumPy's lexicographic order)
    x = g.dynamic_ready(x) if type(x) is not SV else g.array(x)
    kept = [d for i, d in enumerate(x.shape) if i != axis]
    res = None
    if kept:
        n = g.name("a")
        g.emit(f"{n} = _empty({_shape_str(out.shape)}, np.int64)")
        res = AV(out.shape, out.dtype, n)
    k_idx = g.loops(kept)
    best, bi, j = g.name("best"), g.name("bi"), g.name("j")

    def at(i):
        full = list(k_idx)
        full.insert(axis, i)
        return g.elem(x, full)
    g.emit(f"{best} = {at(0)}")
    g.emit(f"{bi} = 0")
    g.emit(f"for {j} in range(1, {x.shape[axis]}):")
    g.push()
    if x.dtype.kind == "f":
        g.emit(f"if {best} != {best}:")
        g.emit("    break")
        cand = g.name("s")
        g.emit(f"{cand} = {at(j)}")
        g.emit(f"if {cand} {better} {best} or {cand} != {cand}:")
    else:
        cand = g.name("s")
        g.emit(f"{cand} = {at(j)}")
        g.emit(f"if {cand} {better} {best}:")
    g.emit(f"    {best} = {cand}")
    g.emit(f"    {bi} = {j}")
    g.pop()
    if res is not None:
        g.emit(f"{g.elem(res, k_idx)} = {bi}")
    g.close(k_idx)
    if res is None:
        return [SV((), out.dtype, [bi])]
    return [g.small(res) if g.is_small(out.shape) else res]


# ---------------------------------------------------------------------------
# Contractions


# (which path each contraction takes -- unrolled, BLAS or the own GEMM kernel, fused or
# loops -- is the contraction pass's decision: ``plan.dot_plan``, FUSED_DOT_K,
# BATCHED_BLAS_MIN, BLAS_MIN_FLOPS)


# A loop-free program over large arrays runs as NumPy calls (``vector_bound`` in
# numba_backend/native.py), unless the contractions that ``gemm._gemm`` could
# compute, of a dtype whose products a compiled program was measured to compute at
# least as fast as NumPy's matmul (``gemm.compile_products``: ``_gemm`` or BLAS,
# whichever was faster), do at least this many multiply-adds per element of the
# program's values: then its products lose nothing to NumPy's, and its fused
# elementwise loops gain (the MLP step: ~68 per element; compiled, 0.88-0.99x the
# time of its NumPy calls on AMD Zen 4 with either kernel, quiet to loaded machine).
GEMM_BOUND = 32


def gemm_bound(jaxpr, elements):
    """Whether ``jaxpr``'s contractions (nested programs included) that ``gemm._gemm``
    could compute and that a compiled program computes at least as fast as NumPy
    (``gemm.compile_products``, measured once per machine and dtype: asked only
    for a dtype with such products) do at least ``GEMM_BOUND * elements``
    multiply-adds."""
    flops = {}

    def walk(j):
        for eqn in j.eqns:
            for q in _nested(eqn):
                walk(q)
            if eqn.prim is C.dot_general_p:
                x, y = (v.aval for v in eqn.inputs)
                _, _, m, n, k, nb = _dot_dims(x.shape, y.shape, eqn.params["dimension_numbers"])
                dt = eqn.outputs[0].aval.dtype
                if gemm.eligible(dt, m, n, k):
                    flops[dt] = flops.get(dt, 0) + nb * m * n * k
    walk(jaxpr)
    if sum(flops.values()) < GEMM_BOUND * elements:
        return False      # (not asking: a calibration costs ~0.25 s of CPU, once)
    return sum(f for dt, f in flops.items() if gemm.compile_products(dt)) >= GEMM_BOUND * elements


def dot_indices(x_ndim, y_ndim, dimension_numbers, lf, rf, o_idx, c_idx):
    """The indices into ``x`` and ``y`` of the product that a ``dot_general``'s output
    element ``o_idx`` (batch, then x's free, then y's free dimensions; ``lf``/``rf``
    from ``_dot_dims``) takes at contraction index ``c_idx``: numbers or loop
    variables' names alike."""
    (lc, rc), (lb, rb) = dimension_numbers
    xi, yi = [None] * x_ndim, [None] * y_ndim
    nb, nlf = len(lb), len(lf)
    for t, (a, b) in enumerate(zip(lb, rb)):
        xi[a] = yi[b] = o_idx[t]
    for t, a in enumerate(lf):
        xi[a] = o_idx[nb + t]
    for t, b in enumerate(rf):
        yi[b] = o_idx[nb + nlf + t]
    for t, (a, b) in enumerate(zip(lc, rc)):
        xi[a] = yi[b] = c_idx[t]
    return tuple(xi), tuple(yi)


def _dot_general(g, eqn, ins):
    x, y = ins[:2]
    out = eqn.outputs[0].aval
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    dt = out.dtype
    plan = g.dot_plan(eqn)      # (the contraction pass's choice of path)
    lf, rf, m, n, k, batch = plan.dims
    kind = plan.kind if type(x) is not LV and type(y) is not LV else plan.lazy_kind
    csh = [x.shape[i] for i in lc]

    def indices(o_idx, c_idx):
        return dot_indices(len(x.shape), len(y.shape), eqn.params["dimension_numbers"], lf, rf,
                           o_idx, c_idx)

    def term(xi, yi):
        return _wrap(_OPS[E.mul_p]([_cast(g.elem(x, xi), x.dtype, dt), _cast(g.elem(y, yi), y.dtype, dt)], dt), dt)

    def add(acc, t):
        return _wrap(_OPS[E.add_p]([acc, t], dt), dt)

    if kind == "unroll":
        if type(x) is SV or type(y) is SV:
            x, y = (g.small(x) if g.is_small(x.shape) else x), (g.small(y) if g.is_small(y.shape) else y)
        elems = []
        for o_idx in np.ndindex(*out.shape):
            acc = None
            for c_idx in np.ndindex(*csh):
                t = term(*indices(o_idx, c_idx))
                acc = t if acc is None else g.scalar(add(acc, t))
            elems.append(g.scalar(acc) if acc is not None else _lit(0, dt))
        return [SV(out.shape, dt, elems)]
    epilogue = eqn.params.get("epilogue")
    if epilogue is not None:
        # (``plan.fuse_epilogues``: the update ``d +- s * (x @ y)``, planned only for a
        # product the own kernel computes, which lazy operands do not change)
        d, sc = ins[2:]
        return [_dot_blas(g, x, y, out, lb, lf, lc, rb, rc, rf, m, n, k, plan.own_gemm,
                          (epilogue, g.array(d, dt),
                           _wrap(_cast(g.elem(g.small(sc), ()), sc.dtype, dt), dt)))]
    if kind == "blas":
        return [_dot_blas(g, x, y, out, lb, lf, lc, rb, rc, rf, m, n, k, plan.own_gemm)]
    if kind == "fused":
        # A short contraction (an outer product, ...) is an elementwise expression,
        # fused into its consumer.
        static = _size(out.shape) <= UNROLL and (needs_static(x) or needs_static(y))
        if not static:
            x, y = g.dynamic_ready(x), g.dynamic_ready(y)

        def element(o_idx):
            acc = None
            for c_idx in np.ndindex(*csh):
                t = term(*indices(o_idx, c_idx))
                acc = t if acc is None else add(acc, t)
            return acc if acc is not None else _lit(0, dt)
        return [LV(out.shape, dt, element, static)]
    x, y = g.array(x), g.array(y)
    r = g.name("a")
    g.emit(f"{r} = _empty({_shape_str(out.shape)}, {_dt(dt)})")
    res = AV(out.shape, dt, r)
    o_idx = g.loops(out.shape)
    acc = g.name("acc")
    g.emit(f"{acc} = {_lit(0, dt)}")
    c_idx = g.loops(csh)
    g.emit(f"{acc} = {add(acc, term(*indices(o_idx, c_idx)))}")
    g.close(c_idx)
    g.emit(f"{g.elem(res, o_idx)} = {acc}")
    g.close(o_idx)
    return [g.small(res) if g.is_small(out.shape) else res]


def _gemm_types(dt, into=False):
    """The numba types of ``gemm._gemm``'s arguments (``into``: ``_gemm_into``'s) as
    ``_dot_blas`` passes them: C-contiguous matrices (rows of reshaped operands and
    products), the transpose flags, and for ``_gemm_into`` ``d``, the scale (``dt``) and
    the epilogue's mode."""
    mat = nbt.Array(_nbtype(dt), 2, "C")
    types = (mat, nbt.boolean, mat, nbt.boolean, mat)
    return types + (mat, _nbtype(dt), nbt.int64) if into else types


def _dot_blas(g, x, y, out, lb, lf, lc, rb, rc, rf, m, n, k, own_gemm, epilogue=None):
    """``dot_general`` by BLAS: ``np.dot`` of one (m, k) by (k, n) matrix pair per
    batch element (the batch dimensions folded into one), or ``gemm._gemm`` if
    ``own_gemm`` (the contraction pass asked ``gemm.use_gemm``: float32/float64 on
    AVX-512, where measured faster).
    An operand array of the output's dtype is used in place when its dimensions are in the order
    (batch, rows, columns), or (batch, columns, rows): then each matrix is a
    transposed view, which numba's ``np.dot`` hands to BLAS as a transpose flag
    (the backward pass's ``x.T @ g``), not a copy (``_gemm`` takes the flag).
    Any other operand is written once, in (batch, rows, columns) order.
    ``epilogue``: ``(mode, d, s)``, the output is ``d + s * product`` (``"add"``) or
    ``d - s * product`` (``"sub"``; no batch dimensions, ``d`` an ``AV`` of the output's
    shape and dtype, ``s`` a scalar expression of its dtype): ``gemm._gemm_into``
    applies it to each block of the product while it is in the cache
    (``plan.fuse_epilogues``); with BLAS, a loop after the product."""
    dt = out.dtype
    B = _size([x.shape[i] for i in lb])

    def operand(v, batch, rows, cols):
        nr, nc = _size([v.shape[i] for i in rows]), _size([v.shape[i] for i in cols])
        natural, swapped = list(batch) + list(rows) + list(cols), list(batch) + list(cols) + list(rows)
        in_place = type(v) is AV and v.dtype == dt
        if in_place and swapped == list(range(len(v.shape))) != natural:
            shape3, transposed = (B, nc, nr), True
        else:
            shape3, transposed = (B, nr, nc), False
            if not (in_place and natural == list(range(len(v.shape)))):
                src = g.dynamic_ready(v)

                def element(idx):
                    src_idx = [0] * len(natural)
                    for t, d in enumerate(natural):
                        src_idx[d] = idx[t]
                    return _cast(g.elem(src, tuple(src_idx)), src.dtype, dt)
                v = g.array(LV(tuple(v.shape[d] for d in natural), dt, element))
        r = g.name("a")
        g.emit(f"{r} = {v.name}.reshape({_shape_str(shape3)})")
        if own_gemm:    # (the flag typed bool, not a literal: one ``_gemm`` per dtype, not
            # one per pair of flags, each ~2.5 s of CPU to compile in a fresh cache)
            return lambda b: f"{r}[{b}], np.bool_({transposed})"
        ref = lambda b: f"{r}[{b}]{'.T' if transposed else ''}"   # noqa: E731
        ref.transposed = transposed
        return ref
    xb = operand(x, lb, lf, lc)
    yb = operand(y, rb, rc, rf)
    r = g.name("a")
    if epilogue is not None and own_gemm:
        mode, d, sc = epilogue
        code = gemm.EPILOGUE_ADD if mode == "add" else gemm.EPILOGUE_SUB
        g.emit(f"{r} = _empty(({m}, {n}), {_dt(dt)})")
        g.emit(g.call_compiled(gemm._gemm_into, _gemm_types(dt, True), f"{xb(0)}, {yb(0)}, {r}, "
                             f"{d.name}.reshape(({m}, {n})), {sc}, np.int64({code})", "_gemm"))
        o = g.name("a")
        g.emit(f"{o} = {r}.reshape({_shape_str(out.shape)})")
        return AV(out.shape, dt, o)
    if epilogue is not None:
        mode, d, sc = epilogue
        prod = _dot_blas(g, x, y, out, lb, lf, lc, rb, rc, rf, m, n, k, own_gemm)
        op = "+" if mode == "add" else "-"
        return g.array(LV(out.shape, dt, lambda idx: _wrap(
            f"({g.elem(d, idx)} {op} ({sc} * {g.elem(prod, idx)}))", dt)))
    # (``np.dot`` is ``blasdot._dot``, called through its address with the layouts of this
    # call site: numba typed np.dot anew in each process, ~0.17 s CPU per layout pair)
    dot_types = None if own_gemm else (
        nbt.Array(_nbtype(dt), 2, "F" if xb.transposed else "C"),
        nbt.Array(_nbtype(dt), 2, "F" if yb.transposed else "C"), nbt.Array(_nbtype(dt), 2, "C"))
    if B == 1 and not own_gemm:
        # (into an array of ``_empty``'s: a block of the pool, which a later call takes
        # back; numba's ``np.dot(x, y)`` allocates its own, whose pages glibc gave back
        # and the next call faulted in again: 0.05 ms of a 512x512 product, 0.015 ms of
        # a 128x512 by 512x10 one; the same BLAS call, the same bits)
        g.emit(f"{r} = _empty(({m}, {n}), {_dt(dt)})")
        g.emit(g.call_compiled(_blas_dot, dot_types, f"{xb(0)}, {yb(0)}, {r}", "_blasdot"))
    else:
        g.emit(f"{r} = _empty(({B}, {m}, {n}), {_dt(dt)})")
        b = g.name("i")
        args = f"{xb(b)}, {yb(b)}, {r}[{b}]"
        call = (g.call_compiled(gemm._gemm, _gemm_types(dt), args, "_gemm") if own_gemm
                else g.call_compiled(_blas_dot, dot_types, args, "_blasdot"))
        g.emit(f"for {b} in range({B}):")
        g.emit(f"    {call}")
    o = g.name("a")
    g.emit(f"{o} = {r}.reshape({_shape_str(out.shape)})")
    return AV(out.shape, dt, o)


# ---------------------------------------------------------------------------
# Control flow and calls

# Loops poll the SIGINT flag (``helpers._interrupted``, an atomic load) about every
# CHECK_WORK estimated scalar operations (~10-30 us), and at least every POLL_MAX
# iterations: a tight loop pays one counter increment per iteration (<1%), a
# Ctrl-C stops any loop within a few ms of its body's work.
CHECK_WORK = 1 << 15
POLL_MAX = 1 << 14


def _work(jaxpr):
    """Estimated scalar operations of one run of ``jaxpr`` (elements computed, a
    scan's body times its length; a while loop's body once: it polls itself)."""
    w = _WORK.get(jaxpr)
    if w is None:
        w = 0
        for eqn in jaxpr.eqns:
            prim, p = eqn.prim, eqn.params
            if prim is CF.scan_p:
                w += p["length"] * _work(p["jaxpr"])
            elif prim is CF.cond_p:
                w += max(_work(b) for b in p["branches"])
            else:
                w += max(1, sum(_size(v.aval.shape) for v in list(eqn.outputs) + list(eqn.inputs)))
                w += sum(_work(q) for q in _nested(eqn))
        _WORK.set(jaxpr, w)
    return w


_WORK = ProgramMemo("numba backend: estimated scalar operations of one run")


def _poll_every(work):
    """Iterations between two polls of a loop whose iteration costs ``work``: a power
    of two (the poll tests the low bits of a counter)."""
    n = max(1, min(POLL_MAX, CHECK_WORK // max(1, work)))
    return 1 << (n.bit_length() - 1)


def _emit_poll(g, counter, every):
    """At the top of a loop body: leave the program if SIGINT arrived (every ``every``
    iterations of ``counter``, or every iteration)."""
    if every > 1:
        g.emit(f"if ({counter} & {every - 1}) == 0:")
        g.push()
    g.emit("if _interrupted():")
    g.emit("    raise CompiledLoopInterrupted")
    if every > 1:
        g.pop()


@contextlib.contextmanager
def loop_body(g):
    """While a loop's body is lowered: ``g.loop_bodies`` counts the loops around it
    (``irblock._eligible``: a batched value row by row there, where LLVM vectorizes the
    rows of every iteration)."""
    g.loop_bodies += 1
    try:
        yield
    finally:
        g.loop_bodies -= 1


def _carry_init(g, avals, vals):
    names = g.fresh_vars(avals)
    g.assign_all(names, vals)
    return names


def _loop_key(eqn):
    """What makes two ``while`` equations the same loop (for ``_while_unit``'s choice
    only: units are shared by their generated source, whatever this says)."""
    p = eqn.params
    return (str(p["cond_jaxpr"]), str(p["body_jaxpr"]), p["cond_nconsts"], p["body_nconsts"],
            tuple(("lit", repr(a.val)) if type(a) is Literal else str(a.aval) for a in eqn.inputs))


def _repeated_loop(g, eqn):
    """Whether the program being lowered has another ``while`` loop like ``eqn``."""
    plan = g.plans[-1] if g.plans else None
    if plan is None:
        return False
    hit = g.loop_keys.get(id(plan))
    if hit is None:
        whiles = [e for e in plan.eqns if e.prim is CF.while_p]
        keys = {id(e): _loop_key(e) for e in whiles} if len(whiles) > 1 else {}
        counts = {}
        for k in keys.values():
            counts[k] = counts.get(k, 0) + 1
        hit = g.loop_keys[id(plan)] = (plan, keys, counts)     # (the plan kept: its id is the key)
    _, keys, counts = hit
    k = keys.get(id(eqn))
    return k is not None and counts[k] > 1


def _while_unit(g, eqn, ins):
    """A ``while`` loop repeated in its program (the same condition, body and types:
    ``vmap`` of a Python loop of ``while_loop`` stages) as a call of a compile unit
    (``native._lower_unit``) holding the whole loop, which every copy calls: numba types,
    lowers and optimizes the loop once, and the program calling it is straight-line code
    (numba's analyses grow with a function's blocks times its variables: 30 stages of
    Newton's square root on f64[8] compiled in 4.2 s inline, 1.3 s as calls of one unit,
    at the same run time).  None where the loop is lowered inline."""
    if (g.units is None or g.vector_loop or g.in_rows or g.settings.unit_min_cost is None
            or not _repeated_loop(g, eqn)):
        return None
    invars, vals, seen = [], [], set()
    for a, v in zip(eqn.inputs, ins):
        if type(a) is Literal or a in seen:
            continue
        seen.add(a)
        invars.append(a)
        vals.append(g.settle(v) if type(v) is LV else v)
    # (in the unit's program the loop is alone: lowered inline there)
    wrapper = Jaxpr([], invars, [eqn], list(eqn.outputs))
    g.loop_units.append(wrapper)    # (alive while generating: units are found by its id)
    return g.units(g, wrapper, vals)


def _while(g, eqn, ins):
    outs = _while_unit(g, eqn, ins)
    if outs is not None:
        return outs
    p = eqn.params
    cc, bc, carry = split(ins, p["cond_nconsts"], p["body_nconsts"])
    cc = [g.settle(v) for v in cc]
    bc = [g.settle(v) for v in bc]
    avals = [v.aval for v in eqn.outputs]
    names = _carry_init(g, avals, carry)
    every = _poll_every(_work(p["cond_jaxpr"]) + _work(p["body_jaxpr"]))
    k = g.name("k") if every > 1 else None
    if k is not None:
        g.emit(f"{k} = np.int64(0)")
    g.emit("while True:")
    g.push()
    if k is not None:
        g.emit(f"{k} += 1")
    _emit_poll(g, k, every)     # (an unbounded loop: always interruptible)
    cur = [g.from_names(n, a) for n, a in zip(names, avals)]
    with loop_body(g):
        pred, = g.call_jaxpr(p["cond_jaxpr"], cc + cur)
        pe = g.elem(pred, ())
        g.emit(f"if not {pe}:" if pred.dtype.kind == "b" else f"if {pe} == 0:")
        g.emit("    break")
        new = g.call_jaxpr(p["body_jaxpr"], bc + cur)
    g.assign_all(names, new)
    g.pop()
    return [g.from_names(n, a) for n, a in zip(names, avals)]


def _scan(g, eqn, ins):
    p = eqn.params
    nc, ncar, length = p["num_consts"], p["num_carry"], p["length"]
    if length == 1:
        return _scan_once(g, eqn, ins)
    consts, carry, xs = split(ins, nc, ncar)
    consts = [g.settle(v) for v in consts]
    # (an xs of small rows that is a lazy slice, ``ts[1:]``, is read in place: its rows'
    # elements are expressions of values computed before the loop)
    xs = [v if type(v) is ZV else g.dynamic_ready(v) if g.is_small(v.shape[1:]) else g.array(v)
          for v in xs]
    body = p["jaxpr"]
    avals = [v.aval for v in eqn.outputs[:ncar]]
    names = _carry_init(g, avals, carry)
    y_avals = [v.aval for v in body.outvars[ncar:]]
    # Small rows of ``ys`` are written into stacks, one per row shape and dtype (``ys`` is
    # ``stack[j]``), by the body itself (``rowio.row_store_p``), and the rows of ``xs`` that
    # are an earlier scan's stacked ``ys`` are read from its stack (``row_load_p``): an IR
    # block stores and loads them in place, so they pass through no numba variable, nor
    # the arguments and results of a unit (at 100 dense layers, ~900 scalars per step).
    ys, stores, stacks = [None] * len(y_avals), [], {}
    for m, a in enumerate(y_avals):
        if _is_float0(a.dtype):
            ys[m] = ZV((length,) + a.shape, a.dtype)
        elif g.is_small(a.shape):
            stacks.setdefault((a.shape, a.dtype.str), []).append(m)
    out_stacks = []
    for (shape, _), ms in stacks.items():
        if g.is_small((len(ms), length) + shape):
            continue        # (a small value is scalarized: the rows are written as before)
        dt = y_avals[ms[0]].dtype
        n = g.name("ys")
        g.emit(f"{n} = _empty({_shape_str((len(ms), length) + shape)}, {_dt(dt)})")
        st = AV((len(ms), length) + shape, dt, n)
        out_stacks.append(st)
        for j, m in enumerate(ms):
            ys[m] = AV((length,) + shape, dt, f"{n}[{j}]")
            g.stacked[ys[m].name] = (st, j)
            stores.append((m, len(out_stacks) - 1, j))
    for m, a in enumerate(y_avals):
        if ys[m] is None:
            n = g.name("ys")
            g.emit(f"{n} = _empty({_shape_str((length,) + a.shape)}, {_dt(a.dtype)})")
            ys[m] = AV((length,) + a.shape, a.dtype, n)
    in_stacks, loads = [], []
    for k, x in enumerate(xs):
        hit = g.stacked.get(x.name) if type(x) is AV else None
        if hit is not None:
            if hit[0] not in in_stacks:
                in_stacks.append(hit[0])
            loads.append((k, in_stacks.index(hit[0]), hit[1]))
    i = g.name("i")
    # A long scan polls the SIGINT flag: in chunks of ``every`` steps (the inner loop
    # keeps no side exit, so LLVM may still vectorize it), or at every step.
    body_work = _work(body)
    every = _poll_every(body_work) if length * body_work >= CHECK_WORK else 0
    if every > 1:
        i0 = g.name("i")
        if p["reverse"]:
            g.emit(f"for {i0} in range({length - 1}, -1, -{every}):")
            g.push()
            _emit_poll(g, None, 1)
            g.emit(f"for {i} in range({i0}, _fmax({i0} - {every}, -1), -1):")
        else:
            g.emit(f"for {i0} in range(0, {length}, {every}):")
            g.push()
            _emit_poll(g, None, 1)
            g.emit(f"for {i} in range({i0}, _fmin({i0} + {every}, {length})):")
    else:
        g.emit(f"for {i} in range({length - 1}, -1, -1):" if p["reverse"] else f"for {i} in range({length}):")
    g.push()
    if every == 1:
        _emit_poll(g, None, 1)
    loaded = {k for k, _, _ in loads}
    x_vals = [_read_row(g, x, i) for k, x in enumerate(xs) if k not in loaded]
    cur = [g.from_names(n, a) for n, a in zip(names, avals)]
    if stores or loads:
        prog = _stacked_body(body, nc + ncar, ncar, loads, stores, in_stacks, out_stacks)
        with loop_body(g):
            outs = g.call_jaxpr(prog, consts + cur + x_vals + in_stacks + out_stacks
                                + [SV((), np.dtype(np.int64), [i])], like=body)
        stored = {m for m, _, _ in stores}
        rest = iter(outs[ncar:])
        outs = outs[:ncar] + [None if m in stored else next(rest) for m in range(len(y_avals))]
    else:
        with loop_body(g):
            outs = g.call_jaxpr(body, consts + cur + x_vals)
    for buf, y in zip(ys, outs[ncar:]):
        if type(buf) is not ZV and y is not None:
            _write_row(g, buf, i, y)
    g.assign_all(names, outs[:ncar])
    g.pop()
    if every > 1:
        g.pop()
    return [g.from_names(n, a) for n, a in zip(names, avals)] + ys


_STACKED = ProgramMemo("numba backend: a scan body with its rows in stacks")


def _stacked_body(body, n_front, ncar, loads, stores, in_stacks, out_stacks):
    """``body`` reading the rows of some of its ``xs`` from stacks and writing some of
    its ``ys`` rows into stacks (``rowio``): inputs ``body``'s first ``n_front`` (consts
    and carry), its other ``xs``, the stacks read (``in_stacks``), those written
    (``out_stacks``) and the step; outputs the carry and the other ``ys``.  ``loads``:
    ``(position in xs, stack, j)``; ``stores``: ``(position in ys, stack, j)``."""
    key = (tuple(loads), tuple(stores), tuple((s.shape, s.dtype.str) for s in in_stacks),
           tuple((s.shape, s.dtype.str) for s in out_stacks))
    hit = _STACKED.get(body, key)
    if hit is not None:
        return hit
    step = Var(ShapedArray((), np.dtype(np.int64)))
    ins_s = [Var(ShapedArray(s.shape, s.dtype)) for s in in_stacks]
    outs_s = [Var(ShapedArray(s.shape, s.dtype)) for s in out_stacks]
    loaded = {k: (st, j) for k, st, j in loads}
    stored = {m: (st, j) for m, st, j in stores}
    xs = body.invars[n_front:]
    # (each row read right before its first use: in the IR block using it)
    pending = {x: Eqn(row_load_p, [ins_s[loaded[k][0]], step], [x], {"j": loaded[k][1]})
               for k, x in enumerate(xs) if k in loaded}
    eqns = []
    for e in body.eqns:
        for a in e.inputs:
            ld = pending.pop(a, None) if type(a) is Var else None
            if ld is not None:
                eqns.append(ld)
        eqns.append(e)
    eqns = list(pending.values()) + eqns
    eqns += [Eqn(row_store_p, [outs_s[stored[m][0]], step, y], [], {"j": stored[m][1]})
             for m, y in enumerate(body.outvars[ncar:]) if m in stored]
    prog = Jaxpr(list(body.constvars), body.invars[:n_front] + [x for k, x in enumerate(xs)
                                                                 if k not in loaded]
                 + ins_s + outs_s + [step], eqns,
                 body.outvars[:ncar] + [y for m, y in enumerate(body.outvars[ncar:])
                                        if m not in stored])
    return _STACKED.set(body, prog, key)


def _read_row(g, x, i):
    """Row ``i`` of the stacked array ``x``."""
    shape = x.shape[1:]
    if type(x) is ZV:
        return ZV(shape, x.dtype)
    if g.is_small(shape) and 1 < _size(shape) <= _CHUNK and type(x) is AV:
        # (a row read by one call, ``rowio``, into a tuple whose elements stay reads
        # ``ct<N>[k]`` where they are used, as a loop carry's: a block or unit takes the
        # whole tuple, ``g.packed``, not its elements unpacked into names)
        t = g.name("ct")
        g.emit(f"{t} = {g.glob(load_row(shape), '_ld')}({x.name}, {i})")
        g.tuple_lens[t] = _size(shape)
        return SV(shape, x.dtype, [f"{t}[{k}]" for k in range(_size(shape))])
    if g.is_small(shape) and _size(shape) > 1 and type(x) is AV:
        # (a row read by one call: ``rowio``)
        els = [g.name("s") for _ in range(_size(shape))]
        g.emit(f"{nest(els)} = {g.glob(load_row(shape), '_ld')}({x.name}, {i})")
        return SV(shape, x.dtype, els)
    if g.is_small(shape):
        return SV(shape, x.dtype, [g.scalar(g.elem(x, (i,) + idx)) for idx in np.ndindex(*shape)])
    n = g.name("a")
    g.emit(f"{n} = {x.name}[{i}]")
    return AV(shape, x.dtype, n)


def _write_row(g, buf, i, y):
    """``buf[i] = y``."""
    # (an array y is copied by a loop: numba's ``buf[i] = y`` compiles a shape
    # check and its error message, seconds of compile time)
    y = g.dynamic_ready(y) if not g.is_small(y.shape) else y
    idx = g.loops(y.shape) if type(y) is not SV else None
    if idx is None and len(y.elems) > 1:      # (a row written by one call: ``rowio``)
        g.emit(f"{g.glob(store_row(y.shape), '_st')}({buf.name}, {i}, "
               f"{nest([_typed(e, y.dtype) for e in y.elems])})")
    elif idx is None:
        for k, j in enumerate(np.ndindex(*y.shape)):
            g.emit(f"{g.elem(buf, (i,) + j)} = {y.elems[k]}")
    else:
        g.emit(f"{g.elem(buf, (i,) + tuple(idx))} = {g.elem(y, idx)}")
        g.close(idx)


def _stack_row(stack, j):
    """``stack[j]``, the stacked array ``j`` of a stack (``rowio.RowOp``)."""
    return AV(stack.shape[1:], stack.dtype, f"{stack.name}[{j}]")


def _row_load(g, eqn, ins):
    """``rowio.row_load_p`` outside an IR block: as the scan reads a row."""
    return [_read_row(g, _stack_row(ins[0], eqn.params["j"]), g.elem(ins[1], ()))]


def _row_store(g, eqn, ins):
    """``rowio.row_store_p`` outside an IR block: as the scan writes a row."""
    _write_row(g, _stack_row(ins[0], eqn.params["j"]), g.elem(ins[1], ()), ins[2])
    return []


def _scan_once(g, eqn, ins):
    """A scan of length 1: its body, inlined (no loop, no stacked buffers)."""
    p = eqn.params
    nc, ncar = p["num_consts"], p["num_carry"]
    consts, carry, xs = split(ins, nc, ncar)
    x_vals = [_drop_leading(g, x) for x in xs]
    outs = g.lower_jaxpr(p["jaxpr"], consts + carry + x_vals)
    return outs[:ncar] + [_add_leading(g, y) for y in outs[ncar:]]


def _drop_leading(g, v):
    """``v[0]`` for ``v`` of shape ``(1, ...)``."""
    shape = v.shape[1:]
    if type(v) is ZV:
        return ZV(shape, v.dtype)
    if type(v) is SV:
        return SV(shape, v.dtype, list(v.elems))
    if type(v) is LV:
        return LV(shape, v.dtype, lambda idx: v.fn((0,) + tuple(idx)), v.static)
    return g.settle(LV(shape, v.dtype, lambda idx: g.elem(v, (0,) + tuple(idx)))) \
        if g.is_small(shape) else AV(shape, v.dtype, f"{v.name}[0]")


def _add_leading(g, v):
    """``v[None]``: a value of shape ``(1, ...)``."""
    shape = (1,) + v.shape
    if type(v) is ZV:
        return ZV(shape, v.dtype)
    if type(v) is SV:
        return SV(shape, v.dtype, list(v.elems))
    a = g.array(v)
    n = g.name("a")
    g.emit(f"{n} = {a.name}.reshape({_shape_str(shape)})")
    return AV(shape, v.dtype, n)


def _cond(g, eqn, ins):
    branches = eqn.params["branches"]
    index, ops = ins[0], [g.settle(v) for v in ins[1:]]
    if len(branches) == 1:
        return [g.settle(v) for v in g.lower_jaxpr(branches[0], ops)]
    avals = [v.aval for v in eqn.outputs]
    names = g.fresh_vars(avals)
    ix = g.scalar(f"_fmin(_fmax({_cast(g.elem(index, ()), index.dtype, _I8)}, 0), {len(branches) - 1})")
    for b, br in enumerate(branches):
        if b == 0:
            g.emit(f"if {ix} == 0:")
        elif b < len(branches) - 1:
            g.emit(f"elif {ix} == {b}:")
        else:
            g.emit("else:")
        g.push()
        g.emit("pass")  # a branch may emit nothing (no outputs, no effects)
        g.assign_all(names, g.call_jaxpr(br, ops))
        g.pop()
    return [g.from_names(n, a) for n, a in zip(names, avals)]


def _inline(param):
    """The rule of a call-like primitive: its program (``params[param]``), inlined."""
    def rule(g, eqn, ins):
        return g.lower_jaxpr(eqn.params[param], [g.settle(v) if type(v) is LV else v for v in ins])
    return rule


def _linear_solve(g, eqn, ins):
    p = eqn.params
    cl = p["const_lengths"]
    start = cl[0] + cl[1]
    args = ins[start:start + cl[2]] + ins[sum(cl):]
    return g.lower_jaxpr(p["jaxprs"][2], [g.settle(v) if type(v) is LV else v for v in args])


def _identity(g, eqn, ins):
    return [ins[0]]


RULES = {prim: _elementwise for prim in ELEMENTWISE}
RULES.update({
    S.stop_gradient_p: _identity, remat.name_p: _identity,
    B.reshape_p: _reshape, B.transpose_p: _transpose, B.broadcast_to_p: _broadcast_to,
    S.concatenate_p: _concatenate,
    I.getitem_p: _getitem, I.scatter_p: _scatter,
    **{prim: _reduce for prim in _RED_OP}, R.argmax_p: _argreduce, R.argmin_p: _argreduce,
    C.dot_general_p: _dot_general,
    CF.while_p: _while, CF.scan_p: _scan, CF.cond_p: _cond,
    CL.jit_p: _inline("jaxpr"), remat.remat_p: _inline("jaxpr"),
    CD.custom_jvp_call_p: _inline("call_jaxpr"), CD.custom_vjp_call_p: _inline("call_jaxpr"),
    CustomVmapCallPrimitive: _inline("call_jaxpr"),   # (by its class: see ``rule_of``)
    LS.linear_solve_p: _linear_solve,
    row_load_p: _row_load, row_store_p: _row_store,
    ad.custom_lin_p: custom_lin.rule,     # (its linear map staged as a program)
})
RULES.update(windows.rules(_OPS))   # window_reduce, window_argmax
# Consumers that read a lazy operand element by element (it stays lazy for them).
FUSIBLE = (ELEMENTWISE | {B.transpose_p, B.broadcast_to_p, I.getitem_p, *_RED_OP}) - {S.stop_gradient_p}
# Rules that handle only some cases natively (others: kernel or objmode).
_PARTIAL = {I.getitem_p: "native for static indices and 0-d index arrays",
            I.scatter_p: "native for static indices and 0-d index arrays",
            ad.custom_lin_p: "native where its linear map stages to a program (custom_lin)"}


def rule_of(table, prim):
    """``table``'s entry for ``prim`` (keyed by the ``Primitive``; a primitive made in a
    layer above the backends, which cannot import it, by its class: ``custom_vmap_call``'s,
    ``core.CustomVmapCallPrimitive``), or None."""
    hit = table.get(prim)
    return hit if hit is not None else table.get(type(prim))


# ---------------------------------------------------------------------------
# Row-wise lowering of batched values (``codegen._Gen.lower_rows``): an equation
# whose output has a leading axis of length B (a vmap batch) and small rows is
# the same equation applied to each row, with these parameters.


def _roles(ins, out_ndim, b):
    """Per operand, how a row of the output reads it (NumPy broadcasting): ``"b"``
    (its row ``i``), ``"b0"`` (its only row, leading axis 1) or ``"w"`` (the whole
    operand: it has fewer axes); None if an operand has a leading axis of another length."""
    roles = []
    for a in ins:
        s = a.aval.shape
        if len(s) < out_ndim:
            roles.append("w")
        elif s[0] == b:
            roles.append("b")
        elif s[0] == 1:
            roles.append("b0")
        else:
            return None
    return roles


def _row_spec(spec, ndim):
    """A static index ``spec`` applied to one row (None if it indexes the leading axis)."""
    from ...primitives.indexing import ARRAY
    if any(e is ARRAY for e in spec):
        return None
    if spec and spec[0] == slice(None):
        return tuple(spec[1:])
    consumed = sum(1 for e in spec if e is not None and e is not Ellipsis)
    if spec and spec[0] is Ellipsis and consumed < ndim:
        return tuple(spec)
    return None


def _row_params(eqn):
    """The parameters of ``eqn`` with output shapes (``shape``, ``new_sizes``) made a row's."""
    return {k: tuple(v[1:]) if k in ("shape", "new_sizes") else v for k, v in eqn.params.items()}


def _row_elementwise(eqn, b):
    return _roles(eqn.inputs, len(eqn.outputs[0].aval.shape), b), _row_params(eqn)


def _row_leading(eqn, b):
    """Operands with the batch axis leading."""
    ok = all(a.aval.shape[:1] == (b,) for a in eqn.inputs)
    return (["b"] * len(eqn.inputs), _row_params(eqn)) if ok else (None, None)


def _row_transpose(eqn, b):
    perm = eqn.params["permutation"]
    if perm[0] != 0:
        return None, None
    return _row_leading(eqn, b)[0], {"permutation": tuple(p - 1 for p in perm[1:])}


def _row_reduce(eqn, b):
    axes = tuple(eqn.params["axes"])
    if 0 in axes:
        return None, None
    return _row_leading(eqn, b)[0], dict(eqn.params, axes=tuple(a - 1 for a in axes))


def _row_concatenate(eqn, b):
    if eqn.params["axis"] == 0:
        return None, None
    return _row_leading(eqn, b)[0], dict(eqn.params, axis=eqn.params["axis"] - 1)


def _row_index(eqn, b):
    x = eqn.inputs[0].aval
    spec = _row_spec(eqn.params["spec"], len(x.shape))
    if spec is None or x.shape[:1] != (b,):
        return None, None
    roles = ["b"]
    if eqn.prim is I.scatter_p:
        # the updates broadcast against the indexed part, whose leading axis is the batch's
        n_int = sum(1 for e in spec if isinstance(e, (int, np.integer)))
        idx_ndim = len(x.shape) - n_int + sum(1 for e in spec if e is None)
        y_roles = _roles(eqn.inputs[1:], idx_ndim, b)
        if y_roles is None:
            return None, None
        roles += y_roles
    return roles, dict(eqn.params, spec=spec)


ROWS = {prim: _row_elementwise for prim in ELEMENTWISE | {B.broadcast_to_p}}
ROWS.update({B.reshape_p: _row_leading, B.transpose_p: _row_transpose,
             S.concatenate_p: _row_concatenate, I.getitem_p: _row_index, I.scatter_p: _row_index,
             **{prim: _row_reduce for prim in _RED_OP}})


def lowering_paths(prims=None):
    """``{primitive name: path}`` for every primitive: ``"native"`` (generated
    code), ``"kernel"`` (``kernels``) or ``"objmode"`` (the NumPy
    implementation in ``numba.objmode``).  Partly native primitives read
    ``"native+kernel"`` or ``"native+objmode"`` (see ``_PARTIAL``)."""
    if prims is None:
        prims = all_primitives()
    kernels = _kernel_table()
    out = {}
    for p in prims:
        native = rule_of(RULES, p) is not None
        kernel = p in kernels
        if native and p in _PARTIAL:
            out[p.name] = "native+kernel" if kernel else "native+objmode"
        elif native:
            out[p.name] = "native"
        elif kernel:
            out[p.name] = "kernel"
        elif p.impl is not None:
            out[p.name] = "objmode"
        else:
            out[p.name] = "none"
    return out


def all_primitives():
    """Every ``Primitive`` the library defines (``core.registered_primitives``: the
    registry every ``Primitive`` joins when it is made)."""
    from ...core import registered_primitives
    return registered_primitives()


# ---------------------------------------------------------------------------
# Whole programs: source, disk cache, compilation
