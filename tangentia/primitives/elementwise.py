"""Elementwise primitives with NumPy broadcasting and NumPy dtype promotion.

Each primitive is defined once, here, with its implementation (a NumPy
ufunc), shape/dtype rule, JVP, transpose where linear, and batching rule.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from ..interpreters import ad
from ..interpreters.ad import UndefinedPrimal, Zero, defjvp, defjvp_zero, is_undefined
from ..interpreters import base_ops as B
from ..interpreters.base_ops import unbroadcast  # noqa: F401  (re-exported)
from ..interpreters.batching import move_to_front, primitive_batchers

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike, _Binary, _Unary

    # The public functions made by core.eager_dispatch (below), as a type checker sees them
    exp: _Unary; log: _Unary; log1p: _Unary; expm1: _Unary; sin: _Unary; cos: _Unary; tan: _Unary
    arcsin: _Unary; arccos: _Unary; arctan: _Unary; sinh: _Unary; cosh: _Unary; tanh: _Unary
    arcsinh: _Unary; arccosh: _Unary; arctanh: _Unary; sqrt: _Unary; cbrt: _Unary; abs: _Unary
    neg: _Unary; conj: _Unary; sign: _Unary; floor: _Unary; ceil: _Unary; round: _Unary
    add: _Binary; sub: _Binary; mul: _Binary; div: _Binary; power: _Binary; maximum: _Binary
    minimum: _Binary; arctan2: _Binary; remainder: _Binary; floor_divide: _Binary; eq: _Binary
    ne: _Binary; lt: _Binary; le: _Binary; gt: _Binary; ge: _Binary

# ---------------------------------------------------------------------------
# Shape and dtype rules


def broadcast_shapes(name, *shapes):
    """NumPy broadcasting; the error names the primitive and both shapes."""
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    nd = max(len(s) for s in shapes)
    out = []
    for i in range(nd):
        size = 1
        for s in shapes:
            j = i - (nd - len(s))
            if j < 0:
                continue
            d = s[j]
            if d != 1:
                if size != 1 and d != size:
                    raise broadcasting_error(name, shapes)
                size = d
        out.append(size)
    return tuple(out)


def broadcasting_error(name, shapes):
    """JAX's error for operands of ``name`` whose ``shapes`` do not broadcast:
    a TypeError from the operation itself when they have the same rank, else
    the ValueError of the implicit rank promotion (with the operation named)."""
    text = ", ".join(str(tuple(s)) for s in shapes)
    if len({len(s) for s in shapes}) == 1:
        return TypeError(f"{name} got incompatible shapes for broadcasting: {text}.")
    return ValueError(f"Incompatible shapes for broadcasting: shapes=[{text}] (operation '{name}')")


_PROTO = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


@lru_cache(maxsize=8192)
def ufunc_result(ufunc, key):
    """(dtype, weak) of ``ufunc`` applied to inputs described by ``key``.

    ``key`` is a tuple of (dtype, weak) pairs; weak inputs act as Python scalars.
    """
    operands = [_PROTO[dtypes.kind(d)] if w else np.empty((0,), d) for d, w in key]
    with np.errstate(all="ignore"):
        out = ufunc(*operands)
    if isinstance(out, tuple):
        out = out[0]
    weak = all(w for _, w in key)
    return np.asarray(out).dtype if weak else out.dtype, weak


_AVAL_CACHE_SIZE = 4096


def elementwise_abstract_eval(name, ufunc):
    """The shape/dtype rule of an elementwise primitive, memoized.

    Results are cached per input types (shape, dtype, weak type of each
    input), so staging the same operation again costs one dictionary lookup
    and returns the same (immutable) ``ShapedArray``.
    """
    cache = {}

    def compute(avals):
        shape = broadcast_shapes(name, *[a.shape for a in avals])
        try:
            dtype, weak = ufunc_result(ufunc, tuple((a.dtype, a.weak_type) for a in avals))
        except TypeError:
            err = dtypes.key_operand_error(name, [a.dtype for a in avals])   # (typed keys)
            if err is not None:
                raise err from None
            raise
        if len(cache) >= _AVAL_CACHE_SIZE:
            cache.clear()
        return ShapedArray(shape, dtype, weak)

    def rule(*avals):
        if len(avals) == 2:
            a, b = avals
            key = (a.shape, a.dtype, a.weak_type, b.shape, b.dtype, b.weak_type)
        elif len(avals) == 1:
            a, = avals
            key = (a.shape, a.dtype, a.weak_type)
        else:
            key = tuple((a.shape, a.dtype, a.weak_type) for a in avals)
        out = cache.get(key)
        if out is None:
            out = cache[key] = compute(avals)
        return out
    rule.cache = cache
    return rule


def elementwise_batch(prim):
    def rule(args, dims, **params):
        if len(args) == 1:
            return prim.bind(args[0], **params), dims[0]
        shapes = [core.get_aval(x).shape for x in args]
        # Check the per-example shapes first, so that a mismatch names the
        # shapes the user's function sees (without the batch axis).
        broadcast_shapes(prim.name, *[s if d is None else s[:d] + s[d + 1:]
                                      for s, d in zip(shapes, dims)])
        ranks = [len(s) - (d is not None) for s, d in zip(shapes, dims)]
        out_rank = max(ranks)
        # Fast path: every batched arg has full rank and the same batch axis,
        # and unbatched args are scalars.
        d0 = next(d for d in dims if d is not None)
        if all((d == d0 and r == out_rank) if d is not None else r == 0
               for d, r in zip(dims, ranks)):
            return prim.bind(*args, **params), d0
        new = []
        for x, d, r in zip(args, dims, ranks):
            if d is None:
                new.append(x)
                continue
            x = move_to_front(x, d)
            if r < out_rank:
                shape = core.get_aval(x).shape
                x = B.reshape(x, (shape[0],) + (1,) * (out_rank - r) + shape[1:])
            new.append(x)
        return prim.bind(*new, **params), 0
    return rule


def elementwise(name, ufunc, jvp_fns=None, zero_jvp=False, passthrough=()):
    """Define an elementwise primitive backed by a NumPy ufunc.

    ``passthrough`` lists the arguments whose tangent contribution may have a
    smaller shape than the output (e.g. ``t`` itself for add), so it is
    broadcast; other contributions broadcast through the other operands.
    """
    p = Primitive(name)
    p.impl = ufunc
    p.abstract_eval = elementwise_abstract_eval(name, ufunc)
    primitive_batchers[p] = elementwise_batch(p)
    if zero_jvp:
        defjvp_zero(p)
    elif jvp_fns is not None:
        jvp_fns = [_broadcasting(fn) if i in passthrough else fn for i, fn in enumerate(jvp_fns)]
        defjvp(p, *jvp_fns)
    return p


def _broadcasting(fn):
    """Broadcast an argument's tangent contribution to the output's shape."""
    def wrapped(t, ans, *primals, **params):
        c = fn(t, ans, *primals, **params)
        out_shape = ans.shape
        if c.shape != out_shape:
            c = B.broadcast_to(c, out_shape)
        return c
    return wrapped


# ---------------------------------------------------------------------------
# Linear arithmetic
#
# The public functions (add, mul, sin, ...) are defined at the end of this
# module, with an eager fast path; rules below refer to them by name.

add_p = elementwise("add", np.add)
sub_p = elementwise("sub", np.subtract)
neg_p = elementwise("neg", np.negative, [lambda t, ans, x: neg(t)])





def _add_transpose(ct, x, y):
    return (unbroadcast(ct, x.aval) if type(x) is UndefinedPrimal else None,
            unbroadcast(ct, y.aval) if type(y) is UndefinedPrimal else None)


def _sub_transpose(ct, x, y):
    return (unbroadcast(ct, x.aval) if type(x) is UndefinedPrimal else None,
            unbroadcast(neg(ct), y.aval) if type(y) is UndefinedPrimal else None)


def _additive_jvp(prim, neg_second):
    """JVP of ``x + y`` / ``x - y``: one tangent operation (``tx + ty``,
    ``tx - ty``), broadcast to the output's shape; the same numbers as
    per-argument rules summed, with fewer equations to stage and transpose."""
    def rule(primals, tangents):
        x, y = primals
        tx, ty = tangents
        ans = sub(x, y) if neg_second else add(x, y)
        if tx is None or type(tx) is Zero:
            if ty is None or type(ty) is Zero:
                return ans, Zero.from_primal(ans)
            out = neg(ty) if neg_second else ty
        elif ty is None or type(ty) is Zero:
            out = tx
        elif neg_second:
            out = sub(tx, ty)
        else:
            a, b = core.get_aval(tx), core.get_aval(ty)
            if a.shape == b.shape and a.dtype == b.dtype:
                out = ad.add_any(tx, ty)
                if a.shape == ans.shape:  # (the output's type: nothing to broadcast)
                    return ans, out
            else:
                out = add(tx, ty)
        shape = ans.shape  # ans is an ndarray or a tracer; tangents may be Python scalars
        if core.get_aval(out).shape != shape:
            out = B.broadcast_to(out, shape)
        return ans, out
    ad.primitive_jvps.define(prim, rule, takes_none=True)


_additive_jvp(add_p, neg_second=False)
_additive_jvp(sub_p, neg_second=True)
ad.primitive_transposes[add_p] = _add_transpose
ad.primitive_transposes[sub_p] = _sub_transpose
ad.primitive_transposes[neg_p] = lambda ct, x: (neg(ct),)




mul_p = elementwise("mul", np.multiply)  # its JVP rule is below


def _mul_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    ans = mul(x, y)
    if tx is not None and tx is ty:  # x * x and the like: one tangent op, not three
        return ans, mul(tx, add(x, y))
    out = None
    if tx is not None and type(tx) is not Zero:
        out = mul(tx, y)
    if ty is not None and type(ty) is not Zero:
        c = mul(x, ty)
        out = c if out is None else ad.add_any_p.bind(out, c)
    return ans, (Zero.from_primal(ans) if out is None else out)


ad.primitive_jvps.define(mul_p, _mul_jvp, takes_none=True)  # (a None tangent is a zero one)


_ndarray = np.ndarray


def _mul_transpose(ct, x, y):
    # The product is summed down to the linear input's type (``unbroadcast``)
    # only if it differs (that input was broadcast or promoted): on the hot
    # path of eager ``grad`` it does not, and the test costs less than the call.
    if type(x) is UndefinedPrimal:
        if type(y) is UndefinedPrimal:
            raise TypeError("mul: transposition of a product of two linear values (not linear)")
        c, aval = mul(ct, y), x.aval
        return (c if type(c) is _ndarray and c.shape == aval.shape and c.dtype is aval.dtype
                else unbroadcast(c, aval)), None
    c, aval = mul(x, ct), y.aval
    return None, (c if type(c) is _ndarray and c.shape == aval.shape and c.dtype is aval.dtype
                  else unbroadcast(c, aval))


ad.primitive_transposes[mul_p] = _mul_transpose

div_p = elementwise("div", np.true_divide,
                    [lambda t, ans, x, y: div(t, y),
                     lambda t, ans, x, y: neg(mul(t, div(ans, y)))])


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise TypeError("div: transposition with respect to the denominator (not linear)")
    return unbroadcast(div(ct, y), x.aval), None


ad.primitive_transposes[div_p] = _div_transpose

# ---------------------------------------------------------------------------
# Transcendental and other smooth functions


def _unary(name, ufunc, jvp):
    p = elementwise(name, ufunc, [jvp])
    return p, (lambda x: p.bind(x))


exp_p, exp = _unary("exp", np.exp, lambda t, ans, x: mul(t, ans))
log_p, log = _unary("log", np.log, lambda t, ans, x: div(t, x))
log1p_p, log1p = _unary("log1p", np.log1p, lambda t, ans, x: div(t, add(x, 1)))
# expm1' = exp(x), not expm1(x) + 1: that sum rounds once more (1 ulp off in float32 for
# large x) and is 0 where expm1(x) rounds to -1 (x < -17 in float32).  JAX's rule with
# accuracy=HIGHEST; its default rule is still the sum (a deliberate difference: the
# derivative is exp(x))
expm1_p, expm1 = _unary("expm1", np.expm1, lambda t, ans, x: mul(t, exp(x)))
sin_p, sin = _unary("sin", np.sin, lambda t, ans, x: mul(t, cos(x)))
cos_p, cos = _unary("cos", np.cos, lambda t, ans, x: mul(t, neg(sin(x))))
tan_p, tan = _unary("tan", np.tan, lambda t, ans, x: mul(t, add(1, mul(ans, ans))))
arcsin_p, arcsin = _unary("asin", np.arcsin, lambda t, ans, x: div(t, sqrt(sub(1, mul(x, x)))))
arccos_p, arccos = _unary("acos", np.arccos,
                          lambda t, ans, x: neg(div(t, sqrt(sub(1, mul(x, x))))))
arctan_p, arctan = _unary("atan", np.arctan, lambda t, ans, x: div(t, add(1, mul(x, x))))
sinh_p, sinh = _unary("sinh", np.sinh, lambda t, ans, x: mul(t, cosh(x)))
cosh_p, cosh = _unary("cosh", np.cosh, lambda t, ans, x: mul(t, sinh(x)))
tanh_p, tanh = _unary("tanh", np.tanh, lambda t, ans, x: mul(t, sub(1, mul(ans, ans))))
arcsinh_p, arcsinh = _unary("asinh", np.arcsinh,
                            lambda t, ans, x: div(t, sqrt(add(mul(x, x), 1))))
arccosh_p, arccosh = _unary("acosh", np.arccosh,
                            lambda t, ans, x: div(t, mul(sqrt(sub(x, 1)), sqrt(add(x, 1)))))
arctanh_p, arctanh = _unary("atanh", np.arctanh, lambda t, ans, x: div(t, sub(1, mul(x, x))))
sqrt_p, sqrt = _unary("sqrt", np.sqrt, lambda t, ans, x: div(t, mul(2, ans)))
# cbrt' = ans^-2 / 3, as JAX's: its own derivative at 0 is -2/9 ans^-5 = -inf at +0 and +inf at
# -0 (JAX's); the quotient t / (3 ans ans) gave NaN there (0 * inf / inf)
cbrt_p, cbrt = _unary("cbrt", np.cbrt,
                      lambda t, ans, x: mul(t, mul(1.0 / 3.0, integer_pow(ans, -2))))


def _abs_jvp(t, ans, x):
    # JAX's rule: real(t * conj(x) / |x|) for complex x (0 at x == 0); for real x,
    # t where x >= 0 (so the derivative at 0 is 1, as JAX's) and -t elsewhere.
    if core.get_aval(x).dtype.kind == "c":
        safe = select(eq(ans, 0), 1.0, ans)
        return real(mul(t, div(conj(x), safe)))
    return select(ge(x, 0), t, neg(t))


abs_p, abs = _unary("abs", np.absolute, _abs_jvp)


def wraps_ufunc(ufunc):
    """Decorator: marks an impl as NumPy's ``ufunc`` with JAX's values where NumPy's differ.
    It takes the ufunc's name (the NumPy backend's code names it so) and ``ufunc``/``nin``,
    by which the backends' loops still find the ufunc itself."""
    def mark(impl):
        impl.__name__ = ufunc.__name__
        impl.ufunc, impl.nin = ufunc, ufunc.nin
        return impl
    return mark


def _complex_quotient(q, x, y):
    """The complex quotient ``q = x / y`` (NumPy's: Smith's algorithm) with JAX's (XLA's, C99
    Annex G's) values where NumPy's are not the limit: a zero ``y`` gives ``copysign(inf,
    y.real) * x`` part by part (NumPy: ``x.real / |y.real|``, so ``1j / (-0+0j)`` was nan+infj,
    JAX nan-infj); and where both parts came out NaN, an infinite ``x`` over a finite ``y`` is
    ``inf * (x' * conj(y))`` and a finite ``x`` over an infinite ``y`` is ``0 * (x * conj(y'))``,
    ``x'`` and ``y'`` the signed 1 (infinite part) or 0 (finite part) of each part (NumPy gave
    NaN for ``1 / (inf+infj)``, JAX 0).  Computed in ``q``'s precision, as the numba
    backend's ``helpers._cdiv`` (bit for bit).  Finite quotients are NumPy's, which may differ
    from JAX's in the last bit (XLA divides by the denominator with fused multiply-adds)."""
    y = np.asarray(y)
    if np.count_nonzero(y) == y.size and not np.count_nonzero(np.isnan(q)):
        return q    # (no zero divisor, no NaN part: NumPy's quotient; the costs of the check)
    with np.errstate(all="ignore"):
        x = np.asarray(x)
        c, d = y.real, y.imag
        zero = (c == 0) & (d == 0)
        nan = np.isnan(q.real) & np.isnan(q.imag)
        dt = q.real.dtype
        a, b = x.real.astype(dt, copy=False), x.imag.astype(dt, copy=False)
        c, d = c.astype(dt, copy=False), d.astype(dt, copy=False)
        one, inf = dt.type(1), dt.type(np.inf)
        signed = np.copysign(inf, c)                           # (a zero divisor)
        re, im = signed * a, signed * b
        a_inf, c_inf = np.isinf(a) | np.isinf(b), np.isinf(c) | np.isinf(d)
        inf_num = nan & ~zero & a_inf & np.isfinite(c) & np.isfinite(d)
        inf_den = nan & ~zero & np.isfinite(a) & np.isfinite(b) & c_inf
        a1 = np.copysign(np.where(np.isinf(a), one, 0 * one), a)
        b1 = np.copysign(np.where(np.isinf(b), one, 0 * one), b)
        c1 = np.copysign(np.where(np.isinf(c), one, 0 * one), c)
        d1 = np.copysign(np.where(np.isinf(d), one, 0 * one), d)
        re = np.where(inf_num, inf * (a1 * c + b1 * d), np.where(inf_den, 0 * (a * c1 + b * d1), re))
        im = np.where(inf_num, inf * (b1 * c - a1 * d), np.where(inf_den, 0 * (b * c1 - a * d1), im))
        use = zero | inf_num | inf_den
        out = np.array(q, copy=True)
        out.real = np.where(use, re, q.real)
        out.imag = np.where(use, im, q.imag)
        return out if isinstance(q, np.ndarray) else out[()]


@wraps_ufunc(np.true_divide)
def _div_impl(x, y):
    out = np.true_divide(x, y)
    return out if out.dtype.kind != "c" else _complex_quotient(out, x, y)


div_p.impl = _div_impl


def power_by_squaring(base, n, mul):
    """``base`` to the integer power ``n >= 1`` by repeated squaring with the product
    ``mul`` (elementwise for ``integer_pow``, ``matmul`` for ``matrix_power``)."""
    acc = None
    while n:
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return acc


def _integer_pow_impl(x, y):
    if y == 2:
        return np.multiply(x, x)
    if np.asarray(x).dtype.kind == "c" and y != 0:
        # JAX's order (XLA's numbers at infinities and NaN): |y| by repeated squaring with
        # complex products, then one reciprocal for a negative y.  NumPy's power gave
        # ``(inf + 0j) ** -1 = nan`` where JAX gives 0.
        acc = power_by_squaring(x, abs(y), np.multiply)
        return _div_impl(np.ones((), acc.dtype), acc) if y < 0 else np.asarray(acc, np.asarray(x).dtype)
    return np.power(x, y)


integer_pow_p = Primitive("integer_pow")
integer_pow_p.impl = _integer_pow_impl


def _integer_pow_abstract_eval(x, y):
    dtype = x.dtype
    if y < 0 and dtype.kind in "iub":
        raise ValueError(f"integer_pow: integers cannot be raised to negative powers (got y={y})")
    return ShapedArray(x.shape, dtype, x.weak_type)


integer_pow_p.abstract_eval = _integer_pow_abstract_eval
primitive_batchers[integer_pow_p] = lambda args, dims, y: (integer_pow(args[0], y), dims[0])


def integer_pow(x: ArrayLike, y: int) -> Array:
    return integer_pow_p.bind(x, y=y)


def _integer_pow_jvp(t, ans, x, y):
    if y == 0:
        return mul(t, 0.0)
    if y == 1:
        return t
    if y == 2:
        return mul(t, mul(2, x))
    return mul(t, mul(y, integer_pow(x, y - 1)))


defjvp(integer_pow_p, _integer_pow_jvp)


def _pow_jvp_x(t, ans, x, y):
    # d/dx x**y = y * x**(y-1), exact at y == 1. An integer y == 0 gives 0 (x**0 is
    # constant: at x == 0 the product 0 * 0**-1 was NaN, grad(jit(lambda x, n: x ** n))(0.,
    # 0), JAX issue 14397); a floating y keeps the product, whose derivative in y is the
    # mixed second derivative (1/x at y == 0, JAX issue 12033), as JAX's rule.
    if core.get_aval(y).dtype.kind in "iub":
        y0 = eq(y, 0)
        return mul(t, select(y0, 0.0, mul(y, power(select(y0, 1.0, x), sub(y, 1)))))
    return mul(t, mul(y, power(x, sub(y, 1))))


def _pow_jvp_y(t, ans, x, y):
    # d/dy x**y = log(x) * x**y, taken as 0 where x == 0 (and y > 0).
    safe_log = select(eq(x, 0), 0.0, log(select(eq(x, 0), 1.0, x)))
    return mul(t, mul(safe_log, ans))


@wraps_ufunc(np.power)
def _pow_impl(x, y):
    """NumPy's power, with C's (and JAX's) values where NumPy's loop takes ``x ** 0.5`` for a
    square root: ``(-inf) ** 0.5`` is inf (NumPy NaN) and ``(-0.) ** 0.5`` is 0. (NumPy -0.)."""
    out = np.power(x, y)
    if out.dtype.kind in "fV" and (y == 0.5 if type(y) is float or type(y) is int
                                   else np.count_nonzero(np.equal(y, 0.5))):
        with np.errstate(invalid="ignore"):
            x = np.asarray(x)
            fix = np.equal(y, 0.5) & ((x == -np.inf) | (x == 0))
            out = np.where(fix, np.where(x == 0, 0.0, np.inf), out).astype(out.dtype, copy=False)
    return out


pow_p = elementwise("pow", np.power, [_pow_jvp_x, _pow_jvp_y])
pow_p.impl = _pow_impl



def _minmax_jvp():
    """Tangent rules of max/min, JAX's: 1 where an argument is the result, 0.5 where both are
    (ties), 0 elsewhere.  (Comparing with the result, not the arguments with each other, gives
    the selected argument its tangent where the other has a NaN part: complex max.)"""
    def tx(t, ans, x, y):
        return mul(t, _weights(x, y, ans))

    def ty(t, ans, x, y):
        return mul(t, _weights(y, x, ans))
    return [tx, ty]


def _weights(a, b, ans):
    return select(eq(a, ans), select(eq(b, ans), 0.5, 1.0), 0.0)


def _complex_minmax(ufunc, pick):
    """The impl of max/min: NumPy's ``ufunc`` with JAX's (XLA's) numbers where NumPy's differ.
    Real operands: NumPy returns ``y`` of two equal values, JAX orders -0 below +0
    (``max(0., -0.)`` is 0, ``min(0., -0.)`` is -0; NumPy gave -0 and 0).  Complex operands:
    ``x`` where ``pick`` holds of the real parts, or of the imaginary parts where the real
    parts are equal, else ``y`` (NumPy's propagates a NaN part instead: ``max(1+nan j, 1+1j)``
    is ``1+1j`` in JAX)."""
    take_x = ufunc is np.maximum    # (of tied zeros: max takes x where y is -0, min where x is)

    @wraps_ufunc(ufunc)
    def impl(x, y):
        if type(y) in (int, float) and type(x) is _ndarray and x.dtype.kind in "biuf" and (
                x.dtype.itemsize >= 4 or x.dtype.kind != "f"):
            # maximum(x, 0) and the like: NumPy's loops (float32/64) return the second of equals,
            # so the order of the operands gives JAX's tie at once
            if y != 0 or (math.copysign(1.0, y) > 0) == take_x:
                return ufunc(x, y)
            return ufunc(y, x)
        out = ufunc(x, y)
        kind = out.dtype.kind
        if kind == "c":
            x, y = np.asarray(x), np.asarray(y)
            with np.errstate(invalid="ignore"):
                xr, yr = x.real, y.real
                keep = np.where(xr == yr, pick(x.imag, y.imag), pick(xr, yr))
            return np.where(keep, x, y).astype(out.dtype, copy=False)
        if kind not in "fV":    # (V: bfloat16 and the other ml_dtypes floats)
            return out
        # Only a zero result can be a tie of zeros: checked first, as counting costs less than
        # comparing the operands
        if out == 0 if out.ndim == 0 else np.count_nonzero(out) != out.size:
            tie = np.equal(x, y)    # (NumPy's float16 loop returns x of equals, its others y)
            tied = np.where(np.signbit(y if take_x else x), x, y)
            return np.where(tie, tied, out).astype(out.dtype, copy=False)
        return out
    return impl


_max_impl = _complex_minmax(np.maximum, np.greater)
_min_impl = _complex_minmax(np.minimum, np.less)
maximum_p = elementwise("max", np.maximum, _minmax_jvp())
maximum_p.impl = _max_impl
minimum_p = elementwise("min", np.minimum, _minmax_jvp())
minimum_p.impl = _min_impl




def _atan2_jvp_x(t, ans, x, y):
    return mul(t, div(y, add(mul(x, x), mul(y, y))))


def _atan2_jvp_y(t, ans, x, y):
    return neg(mul(t, div(x, add(mul(x, x), mul(y, y)))))


atan2_p = elementwise("atan2", np.arctan2, [_atan2_jvp_x, _atan2_jvp_y])



def _zero_sign_fix(ufunc, sign_of):
    """The impl of a NumPy ``ufunc`` whose zero results take JAX's (XLA's) sign: that of
    argument ``sign_of`` (0: ``x``, 1: ``y``) for float operands.  JAX's remainder is C's fmod
    plus ``y`` where their signs differ, so a zero has ``x``'s sign (NumPy's has ``y``'s:
    ``remainder(-0., 1.)`` and ``remainder(-1., 1.)`` were 0., JAX -0.); its floor division
    divides ``x - fmod(x, y)`` by ``y`` and rounds, so a zero has ``y``'s sign (NumPy's has
    that of ``x / y``: ``floor_divide(-0., 5.)`` was -0., JAX 0.).  Other values are NumPy's."""
    @wraps_ufunc(ufunc)
    def impl(x, y):
        out = ufunc(x, y)
        if out.dtype.kind in "fV" and (
                out == 0 if out.ndim == 0 else np.count_nonzero(out) != out.size):
            with np.errstate(invalid="ignore"):
                signed = np.copysign(out, (x, y)[sign_of])
            out = np.where(out == 0, signed, out).astype(out.dtype, copy=False)
        elif sign_of and out.dtype.kind in "iu":
            out = _int_quotient_by_zero(out, x, y)
        return out
    return impl


def _int_quotient_by_zero(q, x, y):
    """Integer ``x // 0`` as JAX's (NumPy's is 0): XLA's quotient by zero has every bit set
    (-1, the unsigned maximum), and JAX's floor division takes one off a signed quotient
    where the remainder (``x``) has another sign than the divisor's (``x != 0``): ``-7 // 0``
    and ``7 // 0`` are -2, ``0 // 0`` is -1.  (As the numba backend's ``helpers._ifloordiv``.)"""
    if type(y) is int and y:
        return q
    y = y if isinstance(y, np.ndarray) else np.asarray(y)
    if np.count_nonzero(y) == y.size:
        return q
    ones = np.full((), -1).astype(q.dtype)
    fill = np.where(np.asarray(x) != 0, ones - 1, ones) if q.dtype.kind == "i" else ones
    return np.where(y == 0, fill, q).astype(q.dtype, copy=False)


_rem_impl = _zero_sign_fix(np.remainder, 0)


def _rem_dy(t, ans, x, y):
    # Where the quotient is NaN (y = 0, or x infinite: the remainder is NaN too), JAX's
    # -trunc(x / y), from x / y = +-inf: lax.rem(1., 0.)'s d/dy is -inf (ours was NaN)
    q = floor_divide(x, y)
    return mul(t, neg(select(isnan_p.bind(q), div(x, y), q)))


_floor_divide_impl = _zero_sign_fix(np.floor_divide, 1)
rem_p = elementwise("rem", np.remainder,
                    [lambda t, ans, x, y: t,
                     # d/dy (x - y q) = -q, q the quotient the remainder took: floor_divide's
                     # (JAX's -trunc(x / y) + 1 where fmod's sign was corrected); floor(x / y)
                     # was -0. for remainder(1., -inf) = -inf, where q is -1 (JAX's gradient 1.)
                     _rem_dy], passthrough=(0,))
rem_p.impl = _rem_impl



# ---------------------------------------------------------------------------
# Complex parts, with JAX's rules: linear maps transposed without conjugation,
# the cotangent of a complex value ``a + ib`` with respect to (a, b) being
# represented as ``ct_a - i ct_b``.


_WEAK_TYPES = (bool, int, float)


def _complex_impl(x, y):
    """``x + i y`` part by part, as JAX's: NumPy's ``x + y * 1j`` multiplies, so that
    ``complex(1., inf)`` was nan+infj, ``complex(2., nan)`` nan+nanj and a -0. imaginary
    part 0. (JAX: 1+infj, 2+nanj, -0.).  The dtype is that sum's."""
    wx, wy = type(x) in _WEAK_TYPES, type(y) in _WEAK_TYPES
    x, y = np.asarray(x), np.asarray(y)
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), _complex_dtype(wx, x.dtype, wy, y.dtype))
    out.real, out.imag = x, y
    return out if out.ndim else out[()]


@lru_cache(maxsize=256)
def _complex_dtype(wx, dx, wy, dy):
    def zero(weak, dt):   # (a weak operand is a Python scalar)
        return np.zeros((), dt).item() if weak else np.zeros((), dt)
    return np.asarray(np.add(zero(wx, dx), np.multiply(zero(wy, dy), 1j))).dtype


real_p = elementwise("real", np.real)
imag_p = elementwise("imag", np.imag)
conj_p = elementwise("conj", np.conjugate)
complex_p = elementwise("complex", _complex_impl)


def _zero(x):
    """A real zero of ``x``'s precision."""
    return np.zeros((), np.empty(0, core.get_aval(x).dtype).real.dtype)


ad.deflinear(real_p, lambda ct, x: (complex_(ct, _zero(ct)),))
ad.deflinear(imag_p, lambda ct, x: (complex_(_zero(ct), neg(ct)),))
ad.deflinear(conj_p, lambda ct, x: (conj(ct) if x.aval.dtype.kind == "c" else real(ct),))


def _complex_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    ans = complex_(x, y)
    if type(tx) is Zero and type(ty) is Zero:
        return ans, Zero.from_primal(ans)
    tx = _zero(ty) if type(tx) is Zero else tx
    ty = _zero(tx) if type(ty) is Zero else ty
    t = complex_(tx, ty)
    if core.get_aval(t).shape != core.get_aval(ans).shape:
        t = B.broadcast_to(t, core.get_aval(ans).shape)
    return ans, t


def _complex_transpose(ct, x, y):
    return (unbroadcast(real(ct), x.aval) if is_undefined(x) else None,
            unbroadcast(neg(imag(ct)), y.aval) if is_undefined(y) else None)


ad.primitive_jvps[complex_p] = _complex_jvp
ad.primitive_transposes[complex_p] = _complex_transpose


def real(x: ArrayLike) -> Array:
    """Real part of a complex array."""
    return real_p.bind(x)


def imag(x: ArrayLike) -> Array:
    """Imaginary part of a complex array."""
    return imag_p.bind(x)


def complex_(x: ArrayLike, y: ArrayLike) -> Array:
    """``x + 1j * y`` from real arrays (``lax.complex``)."""
    return complex_p.bind(x, y)


# ---------------------------------------------------------------------------
# Piecewise-constant functions: zero derivative

@wraps_ufunc(np.sign)
def _sign_impl(x):
    """NumPy's sign with JAX's (XLA's) numbers: ``sign(-0.0)`` is -0.0 (NumPy 0.0); a complex
    ``z`` gives each part divided by ``abs(z)`` (NumPy's ``z / abs(z)`` differs in the last
    bit for a third of values, and gave 1 for ``inf+0j``, JAX NaN+0j), and a complex zero is
    itself (``sign(-0-0j)`` is -0-0j)."""
    out = np.sign(x)
    kind = out.dtype.kind
    if kind in "fV":
        return np.copysign(out, x)
    if kind == "c":
        z = np.asarray(x)
        with np.errstate(invalid="ignore", divide="ignore"):
            mag = np.abs(z)
            out = np.array(out)
            out.real, out.imag = z.real / mag, z.imag / mag
        out = np.where(z == 0, z, out)
        return out if out.ndim else out[()]
    return out


sign_p = elementwise("sign", np.sign, zero_jvp=True)
sign_p.impl = _sign_impl
floor_p = elementwise("floor", np.floor, zero_jvp=True)
ceil_p = elementwise("ceil", np.ceil, zero_jvp=True)
round_p = elementwise("round", np.rint, zero_jvp=True)
floor_divide_p = elementwise("floor_divide", np.floor_divide, zero_jvp=True)
floor_divide_p.impl = _floor_divide_impl







# Comparisons and logic (boolean outputs, zero derivative)
eq_p = elementwise("eq", np.equal, zero_jvp=True)
ne_p = elementwise("ne", np.not_equal, zero_jvp=True)
lt_p = elementwise("lt", np.less, zero_jvp=True)
le_p = elementwise("le", np.less_equal, zero_jvp=True)
gt_p = elementwise("gt", np.greater, zero_jvp=True)
ge_p = elementwise("ge", np.greater_equal, zero_jvp=True)
and_p = elementwise("and", np.logical_and, zero_jvp=True)
or_p = elementwise("or", np.logical_or, zero_jvp=True)
xor_p = elementwise("xor", np.logical_xor, zero_jvp=True)
not_p = elementwise("not", np.logical_not, zero_jvp=True)
bitwise_and_p = elementwise("bitwise_and", np.bitwise_and, zero_jvp=True)
bitwise_or_p = elementwise("bitwise_or", np.bitwise_or, zero_jvp=True)
bitwise_xor_p = elementwise("bitwise_xor", np.bitwise_xor, zero_jvp=True)
bitwise_not_p = elementwise("bitwise_not", np.invert, zero_jvp=True)
isnan_p = elementwise("isnan", np.isnan, zero_jvp=True)
isinf_p = elementwise("isinf", np.isinf, zero_jvp=True)
isfinite_p = elementwise("isfinite", np.isfinite, zero_jvp=True)








# ---------------------------------------------------------------------------
# select (where)


def _select_impl(pred, x, y):
    out = np.where(pred, x, y)
    if out.dtype.kind in "OUS":   # NumPy takes objects and strings; JAX's TypeError
        core.as_array(x if np.asarray(x).dtype.kind in "OUS" else y, "select: argument")
    if type(x) is float or type(y) is float:
        # NumPy promotes a Python float first and a bfloat16 array to float32 (ml_dtypes'
        # promotion is not symmetric there): the shape rule's (and JAX's) dtype is bfloat16
        other = y if type(x) is float else x
        if getattr(other, "dtype", None) is not None and other.dtype.kind == "V":
            return out.astype(other.dtype)
    return out


select_p = Primitive("select")
select_p.impl = _select_impl


def _select_abstract_eval(pred, x, y):
    if pred.dtype != dtypes.bool_:
        raise TypeError(f"select: the predicate must be boolean, got {pred.str_short()}")
    shape = broadcast_shapes("where", pred.shape, x.shape, y.shape)
    dtype, weak = dtypes.result_type((x.dtype, x.weak_type), (y.dtype, y.weak_type))
    return ShapedArray(shape, dtype, weak)


select_p.abstract_eval = _select_abstract_eval
primitive_batchers[select_p] = elementwise_batch(select_p)


def select(pred: ArrayLike, x: ArrayLike, y: ArrayLike) -> Array:
    return select_p.bind(pred, x, y)


def _select_jvp(primals, tangents):
    pred, x, y = primals
    _, tx, ty = tangents
    ans = select(pred, x, y)
    if type(tx) is Zero and type(ty) is Zero:
        return ans, Zero.from_primal(ans)
    out_aval = core.get_aval(ans)
    tx = ad.instantiate(tx) if type(tx) is not Zero else np.zeros((), out_aval.dtype)
    ty = ad.instantiate(ty) if type(ty) is not Zero else np.zeros((), out_aval.dtype)
    t = select(pred, tx, ty)
    if core.get_aval(t).shape != out_aval.shape:
        t = B.broadcast_to(t, out_aval.shape)
    return ans, t


def _select_transpose(ct, pred, x, y):
    if is_undefined(pred):
        raise TypeError("select: the predicate cannot be linear")
    zero = np.zeros((), core.get_aval(ct).dtype)
    return (None,
            unbroadcast(select(pred, ct, zero), x.aval) if is_undefined(x) else None,
            unbroadcast(select(pred, zero, ct), y.aval) if is_undefined(y) else None)


ad.primitive_jvps[select_p] = _select_jvp
ad.primitive_transposes[select_p] = _select_transpose


# ---------------------------------------------------------------------------
# The public functions: outside any transformation one NumPy ufunc call (the
# eager-dispatch point is ``core.eager_dispatch``); otherwise they bind.


def _fast(prim, ufunc, nin=None):
    """The public function of an elementwise primitive backed by ``ufunc`` (or by a function
    of ``nin`` arguments that adds to a ufunc, as max's complex rule)."""
    nin = nin or ufunc.nin
    if nin == 2:
        # Report a shape mismatch as traced code does (naming the operation).
        prim.check_args = lambda x, y: broadcast_shapes(prim.name, np.shape(x), np.shape(y))
    f = core.eager_dispatch(prim, ufunc, nin=nin)
    f.__doc__ = f"Elementwise {prim.name} (NumPy's {ufunc.__name__})."
    return f


add = _fast(add_p, np.add)
sub = _fast(sub_p, np.subtract)
neg = _fast(neg_p, np.negative)
mul = _fast(mul_p, np.multiply)
div = _fast(div_p, _div_impl, nin=2)
exp, log, log1p, expm1 = (_fast(p, p.impl) for p in (exp_p, log_p, log1p_p, expm1_p))
sin, cos, tan = (_fast(p, p.impl) for p in (sin_p, cos_p, tan_p))
arcsin, arccos, arctan = (_fast(p, p.impl) for p in (arcsin_p, arccos_p, arctan_p))
sinh, cosh, tanh = (_fast(p, p.impl) for p in (sinh_p, cosh_p, tanh_p))
arcsinh, arccosh, arctanh = (_fast(p, p.impl) for p in (arcsinh_p, arccosh_p, arctanh_p))
sqrt, cbrt, abs = (_fast(p, p.impl) for p in (sqrt_p, cbrt_p, abs_p))
conj = _fast(conj_p, np.conjugate)
power = _fast(pow_p, _pow_impl, nin=2)
maximum = _fast(maximum_p, _max_impl, nin=2)
minimum = _fast(minimum_p, _min_impl, nin=2)
arctan2 = _fast(atan2_p, np.arctan2)
remainder = _fast(rem_p, _rem_impl, nin=2)
sign = _fast(sign_p, _sign_impl, nin=1)
floor, ceil, round = (_fast(p, p.impl) for p in (floor_p, ceil_p, round_p))
floor_divide = _fast(floor_divide_p, _floor_divide_impl, nin=2)
eq, ne, lt, le, gt, ge = (_fast(p, p.impl) for p in (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))


# ---------------------------------------------------------------------------
# Eager results' arithmetic operators (``ArrayImpl``: NumPy's own operators call the ufuncs,
# so ``x % y`` skipped the impls' JAX values that ``tnp.remainder(x, y)`` has)

_PLAIN_OPERANDS = (bool, int, float, complex, np.generic, np.ndarray)


def _eager_operator(impl, op, reflected):
    """``op`` (``numpy.ndarray``'s operator) with ``impl``'s values: the primitive's, JAX's,
    computed on plain ndarrays (a ufunc costs more on the subclass; NumPy's own operator on
    real operands was no faster than this) and returned as an eager result.  Operands that
    are no array or number (a tracer, a list, a JAX array) go to ``op``, which defers to them
    or converts them as before."""
    from .._array import ArrayImpl, FPWarnings
    nd, enter, exit_ = np.ndarray, FPWarnings(op.__name__).enter, FPWarnings.exit

    def user(out):
        return out.view(ArrayImpl) if type(out) is nd else np.asarray(out).view(ArrayImpl)

    def method(self, other):
        if not isinstance(other, _PLAIN_OPERANDS):
            return op(self, other)
        x, y = self.view(nd), other.view(nd) if type(other) is ArrayImpl else other
        token = enter()   # (NumPy's warnings at the user's line, as the operator's were)
        try:
            out = impl(y, x) if reflected else impl(x, y)
        finally:
            exit_(token)
        return user(out) if type(out) is not tuple else tuple(map(user, out))
    method.__name__ = op.__name__
    return method


def _divmod_impl(x, y):
    return _floor_divide_impl(x, y), _rem_impl(x, y)


def eager_operators():
    """``{name: method}``: the arithmetic operators of eager results whose NumPy values differ
    from JAX's (complex ``/``, ``//`` and ``%`` zeros' signs and integer division by zero,
    ``(-inf) ** 0.5``), each the primitive's impl; the in-place forms rebind, as JAX's.
    ``tangentia.numpy`` installs them (``_array_methods.install``)."""
    nd, ops = np.ndarray, {}
    for name, impl in (("truediv", _div_impl), ("floordiv", _floor_divide_impl),
                       ("mod", _rem_impl), ("pow", _pow_impl), ("divmod", _divmod_impl)):
        forward = _eager_operator(impl, getattr(nd, f"__{name}__"), False)
        ops[f"__{name}__"] = forward
        ops[f"__r{name}__"] = _eager_operator(impl, getattr(nd, f"__r{name}__"), True)
        if name != "divmod":
            ops[f"__i{name}__"] = forward
    return ops
