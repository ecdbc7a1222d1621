"""Cumulative products and extrema, and a few sign-related elementwise primitives.

* ``cumprod`` has an exact JVP, also where the input has zeros: the tangent
  is an associative (Hillis-Steele) scan over (value, tangent) pairs with the
  product rule ``(a, da) * (b, db) = (a b, da b + a db)``; it is linear in the
  tangent, so it transposes for reverse mode, and it is made of
  differentiable primitives, so higher derivatives work.
* ``cummax`` / ``cummin``: JAX's tangent, that of the parallel prefix scan of max (min)
  over (value, tangent) pairs, with max's tie rule (half of each tangent).
* ``signbit`` (boolean, zero derivative) and ``copysign``.
"""
from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from ..interpreters.ad import defjvp, primitive_jvps
from ..interpreters.base_ops import convert_element_type
from ..interpreters.batching import primitive_batchers
from . import elementwise as E
from . import indexing as I
from . import reductions as R
from . import structural as S


def _check_axis(name, x, axis):
    if not 0 <= axis < x.ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of shape {x.shape}")


def _cumulative(name, accumulate, dtype_fn):
    def impl(x, axis, reverse):
        if reverse:
            return np.flip(accumulate(np.flip(x, axis), axis=axis), axis)
        return accumulate(x, axis=axis)

    p = Primitive(name)
    p.impl = impl

    def abstract_eval(x, axis, reverse):
        _check_axis(name, x, axis)
        return ShapedArray(x.shape, dtype_fn(x.dtype), x.weak_type)

    p.abstract_eval = abstract_eval

    def batch(args, dims, axis, reverse):
        d = dims[0]
        return p.bind(args[0], axis=axis if axis < d else axis + 1, reverse=reverse), d

    primitive_batchers[p] = batch
    return p


def _prod_dtype(dtype):
    return R.reduce_dtype(np.prod, dtype)


def _same_dtype(dtype):
    return dtype


def _accumulate(ufunc):
    def acc(x, axis):
        x = np.asarray(x)
        if x.dtype.kind == "b" and ufunc is np.multiply:
            x = x.astype(np.int64)
        elif x.dtype.kind in "iu" and ufunc is np.multiply:
            x = x.astype(_prod_dtype(x.dtype))
        return ufunc.accumulate(x, axis=axis)
    return acc


cumprod_p = _cumulative("cumprod", _accumulate(np.multiply), _prod_dtype)
cummax_p = _cumulative("cummax", _accumulate(np.maximum), _same_dtype)
cummin_p = _cumulative("cummin", _accumulate(np.minimum), _same_dtype)


def _shift(x, k, axis, fill, reverse):
    """``x`` shifted by ``k`` along ``axis`` (towards the end, or the start if
    ``reverse``), the vacated entries set to ``fill``."""
    a = core.get_aval(x)
    n = a.shape[axis]
    pad_shape = a.shape[:axis] + (k,) + a.shape[axis + 1:]
    pad = np.full(pad_shape, fill, a.dtype)
    if reverse:
        return S.concatenate([I.static_slice(x, axis, k, n), pad], axis)
    return S.concatenate([pad, I.static_slice(x, axis, 0, n - k)], axis)


def _cumprod_jvp(t, ans, x, axis, reverse):
    n = core.get_aval(x).shape[axis]
    v, dv = x, t
    if core.get_aval(v).dtype != core.get_aval(dv).dtype:
        v = S.convert_element_type(v, core.get_aval(dv).dtype)
    nd = core.get_aval(x).ndim
    pos = np.arange(n).reshape([n if d == axis else 1 for d in range(nd)])
    pos = n - 1 - pos if reverse else pos
    k = 1
    while k < n:
        v_prev = _shift(v, k, axis, 1, reverse)
        dv_prev = _shift(dv, k, axis, 0, reverse)
        # the first k entries already hold their whole prefix: kept as they are (JAX's), where
        # the padding's 0 * v made the tangent of cumprod([nan, 1])[0] NaN (JAX: t[0])
        dv = E.select(pos < k, dv, E.add(E.mul(dv_prev, v), E.mul(v_prev, dv)))
        v = E.mul(v_prev, v)
        k *= 2
    return dv


defjvp(cumprod_p, _cumprod_jvp)


def _strided(x, axis, start, stop, step=1):
    nd = core.get_aval(x).ndim
    return I.getitem(x, tuple(slice(start, stop, step) if i == axis else slice(None)
                              for i in range(nd)))


def _interleave(a, b, axis):
    """``a[0], b[0], a[1], b[1], ...`` along ``axis`` (``a`` as long as ``b`` or one longer)."""
    na, nb = core.get_aval(a).shape[axis], core.get_aval(b).shape[axis]
    head = I.static_slice(a, axis, 0, nb) if na != nb else a
    shape = core.get_aval(b).shape
    pair = shape[:axis + 1] + (1,) + shape[axis + 1:]
    both = S.concatenate([S.reshape(head, pair), S.reshape(b, pair)], axis + 1)
    out = S.reshape(both, shape[:axis] + (2 * nb,) + shape[axis + 1:])
    if na != nb:
        out = S.concatenate([out, I.static_slice(a, axis, nb, na)], axis)
    return out


def _cumextremum_jvp_of(pick):
    """The tangent of cummax/cummin (``pick`` max/min), JAX's: the JVP of the parallel prefix
    scan (odd/even recursion) of max over (value, tangent) pairs, where max's tangent is the
    winner's, or half of each on a tie.  Ties therefore share the tangent as JAX's do: the
    tangent of ``cummax([1, 1])`` is ``(t0, (t0 + t1) / 2)`` (ours was the later entry's)."""
    def combine(a, ta, b, tb):
        out = pick(a, b)
        wa = E.select(E.eq(a, out), E.select(E.eq(b, out), 0.5, 1.0), 0.0)
        wb = E.select(E.eq(b, out), E.select(E.eq(a, out), 0.5, 1.0), 0.0)
        dt = core.get_aval(ta).dtype
        wa, wb = convert_element_type(wa, dt), convert_element_type(wb, dt)
        return out, E.add(E.mul(ta, wa), E.mul(tb, wb))

    def scan(v, t, axis):
        n = core.get_aval(v).shape[axis]
        if n < 2:
            return v, t
        rv, rt = combine(_strided(v, axis, 0, n - 1, 2), _strided(t, axis, 0, n - 1, 2),
                         _strided(v, axis, 1, n, 2), _strided(t, axis, 1, n, 2))
        ov, ot = scan(rv, rt, axis)
        if n % 2 == 0:
            m = core.get_aval(ov).shape[axis]
            ev, et = combine(_strided(ov, axis, 0, m - 1), _strided(ot, axis, 0, m - 1),
                             _strided(v, axis, 2, n, 2), _strided(t, axis, 2, n, 2))
        else:
            ev, et = combine(ov, ot, _strided(v, axis, 2, n, 2), _strided(t, axis, 2, n, 2))
        ev = S.concatenate([I.static_slice(v, axis, 0, 1), ev], axis)
        et = S.concatenate([I.static_slice(t, axis, 0, 1), et], axis)
        return _interleave(ev, ov, axis), _interleave(et, ot, axis)

    def rule(t, ans, x, axis, reverse):
        if core.get_aval(x).shape[axis] == 0:
            return t
        if reverse:
            x, t = _strided(x, axis, None, None, -1), _strided(t, axis, None, None, -1)
        _, out = scan(x, t, axis)
        return _strided(out, axis, None, None, -1) if reverse else out
    return rule


defjvp(cummax_p, _cumextremum_jvp_of(E.maximum))
defjvp(cummin_p, _cumextremum_jvp_of(E.minimum))


def cumprod(x, axis, reverse=False):
    return cumprod_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cummax(x, axis, reverse=False):
    return cummax_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cummin(x, axis, reverse=False):
    return cummin_p.bind(x, axis=int(axis), reverse=bool(reverse))


# ---------------------------------------------------------------------------
# signbit / copysign

signbit_p = E.elementwise("signbit", np.signbit, zero_jvp=True)


def _copysign_jvp_x(t, ans, x, y):
    # JAX's: abs'(x) (1 at either zero) times y's sign bit
    same = E.ne(E.ge(x, 0), signbit_p.bind(y))
    return E.mul(t, E.select(same, 1.0, -1.0))


copysign_p = E.elementwise("copysign", np.copysign, [_copysign_jvp_x, None])

signbit = E._fast(signbit_p, np.signbit)
copysign = E._fast(copysign_p, np.copysign)


# ---------------------------------------------------------------------------
# Floating-point representation: frexp, spacing, nextafter.  Only frexp's
# mantissa has a derivative (2**-exponent, the exponent being locally constant).

def _frexp_mantissa(x):
    return np.frexp(x)[0]


def _frexp_exponent(x):
    return np.frexp(x)[1]


frexp_exponent_p = E.elementwise("frexp_exponent", _frexp_exponent, zero_jvp=True)


def _mantissa_jvp(t, ans, x):
    e = frexp_exponent_p.bind(x)
    scale = E.power(2.0, E.neg(convert_element_type(e, core.get_aval(ans).dtype)))
    return E.mul(t, scale)


frexp_mantissa_p = E.elementwise("frexp_mantissa", _frexp_mantissa, [_mantissa_jvp])
spacing_p = E.elementwise("spacing", np.spacing)
nextafter_p = E.elementwise("nextafter", np.nextafter)


def _no_differentiation_rule(name, note=""):
    """A JVP rule that raises JAX's NotImplementedError: JAX defines no derivative for
    ``nextafter`` (a step function almost everywhere, but JAX refuses rather than giving 0),
    nor for ``jnp.spacing``, which JAX computes with ``nextafter``.  Only a non-zero
    tangent reaches the rule: ``nextafter`` of values that carry none still computes."""
    def rule(primals, tangents, **params):
        raise NotImplementedError(f"Differentiation rule for '{name}' not implemented{note}")
    return rule


primitive_jvps[nextafter_p] = _no_differentiation_rule("nextafter")
primitive_jvps[spacing_p] = _no_differentiation_rule(
    "nextafter", " (jnp.spacing: JAX computes it with nextafter)")


@E.wraps_ufunc(np.nextafter)
def _nextafter_impl(x, y):
    """NumPy's nextafter, with C's (and JAX's) ``y`` where ``x == y``: NumPy's float16 loop
    gives ``x`` (``nextafter(0., -0.)`` was 0., JAX -0.)."""
    out = np.nextafter(x, y)
    if out.dtype == np.float16:
        out = np.where(np.equal(x, y), y, out).astype(np.float16, copy=False)
    return out


nextafter_p.impl = _nextafter_impl


# Integer-valued elementwise functions (derivative 0): gcd, lcm, shifts, bit counts.
gcd_p = E.elementwise("gcd", np.gcd, zero_jvp=True)
lcm_p = E.elementwise("lcm", np.lcm, zero_jvp=True)
left_shift_p = E.elementwise("left_shift", np.left_shift, zero_jvp=True)
right_shift_p = E.elementwise("right_shift", np.right_shift, zero_jvp=True)
bitwise_count_p = E.elementwise("bitwise_count", np.bitwise_count, zero_jvp=True)
gcd = E._fast(gcd_p, np.gcd)
lcm = E._fast(lcm_p, np.lcm)
left_shift = E._fast(left_shift_p, np.left_shift)
right_shift = E._fast(right_shift_p, np.right_shift)
bitwise_count = E._fast(bitwise_count_p, np.bitwise_count)


def frexp_mantissa(x):
    return frexp_mantissa_p.bind(x)


def frexp_exponent(x):
    return frexp_exponent_p.bind(x)

spacing = E._fast(spacing_p, np.spacing)
nextafter = E._fast(nextafter_p, _nextafter_impl, nin=2)

__all__ = ["copysign", "copysign_p", "cummax", "cummax_p", "cummin", "cummin_p", "cumprod",
           "cumprod_p", "signbit", "signbit_p", "dtypes", "frexp_mantissa", "frexp_mantissa_p",
           "frexp_exponent", "frexp_exponent_p", "spacing", "spacing_p", "nextafter", "nextafter_p",
           "gcd", "gcd_p", "lcm", "lcm_p", "left_shift", "left_shift_p", "right_shift",
           "right_shift_p", "bitwise_count", "bitwise_count_p"]
