"""Reductions over axes (sum, max, min, prod, all, any, argmax, argmin) and cumsum."""
from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from ..interpreters.ad import deflinear, defjvp, defjvp_zero
from ..interpreters.base_ops import (  # noqa: F401  (reduce_sum is re-exported)
    check_axes, expand_reduced, normalize_axes, reduce_dtype, reduce_sum, reduce_sum_p,
    reduced_shape, reduction_primitive)
from ..interpreters.batching import primitive_batchers
from . import elementwise as E
from . import structural as S

# reduce_sum (which transposes broadcasting) is defined with the shared
# reduction factory in ``tangentia.interpreters.base_ops``.
def _extremum(np_fn, lowest):
    """``np_fn`` over ``axis``; over an empty axis the identity, as lax.reduce_max/min's
    (``-inf``/``+inf``, the integer type's min/max, False/True; NumPy has none and raises).
    ``tnp.max``/``min`` of an empty axis raise before binding, as NumPy's and JAX's."""
    def reduce(x, axis):
        x = np.asarray(x)
        if x.size or not axis:
            out = np_fn(x, axis=axis)
            if x.dtype.kind in "fV" and np.count_nonzero(out) != np.size(out):
                # JAX's (XLA's) zero: -0.0 orders below 0.0, so max's zero is 0.0 where the
                # slice holds one (NumPy's is whichever came last), min's -0.0 where it holds one
                # (elementwise max/min and the numba backend's loops do the same)
                with np.errstate(invalid="ignore"):
                    hit = np.any((x == 0) & (np.signbit(x) != lowest), axis=axis)
                zero = np.where(hit == lowest, 0.0, -0.0)
                out = np.where(out == 0, zero, out).astype(x.dtype, copy=False)
            return out
        if x.dtype == np.bool_:
            initial = not lowest
        elif x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            initial = info.min if lowest else info.max
        else:
            initial = -np.inf if lowest else np.inf
        return np_fn(x, axis=axis, initial=initial)
    return reduce


reduce_max_p = reduction_primitive("reduce_max", _extremum(np.maximum.reduce, True),
                                   keep_dtype=True)
reduce_min_p = reduction_primitive("reduce_min", _extremum(np.minimum.reduce, False),
                                   keep_dtype=True)
reduce_prod_p = reduction_primitive("reduce_prod", np.multiply.reduce)
# bitwise over booleans (all, any) or integers (lax.reduce_and/or, lax.reduce with
# bitwise_and/or: JAX's primitives), keeping the operand's dtype
reduce_and_p = reduction_primitive("reduce_and", np.bitwise_and.reduce, keep_dtype=True)
reduce_or_p = reduction_primitive("reduce_or", np.bitwise_or.reduce, keep_dtype=True)


def _bool_or_int_only(p):
    """JAX's TypeError for a logical reduction of floats or complex numbers (staged and
    eager), instead of NumPy's ufunc error."""
    rule, impl = p.abstract_eval, p.impl

    def check(dtype):
        if dtypes.kind(dtype) not in "biu":
            raise TypeError(f"logical reduction requires operand dtype bool or int, got "
                            f"{dtype}. ({p.name}: argument 'operand')")
    p.abstract_eval = lambda x, axes: (check(x.dtype), rule(x, axes))[1]
    p.impl = lambda x, axes: (check(np.asarray(x).dtype), impl(x, axes))[1]


_bool_or_int_only(reduce_and_p)
_bool_or_int_only(reduce_or_p)


def reduce_max(x, axes):
    return reduce_max_p.bind(x, axes=normalize_axes(axes))


def reduce_min(x, axes):
    return reduce_min_p.bind(x, axes=normalize_axes(axes))


def reduce_prod(x, axes):
    return reduce_prod_p.bind(x, axes=normalize_axes(axes))


def _minmax_jvp(t, ans, x, axes):
    shape = core.get_aval(x).shape
    loc = E.eq(x, expand_reduced(ans, shape, axes))
    w = E.select(loc, 1.0, 0.0)
    counts = reduce_sum(w, axes)
    return E.div(reduce_sum(E.mul(t, w), axes), counts)


defjvp(reduce_max_p, _minmax_jvp)
defjvp(reduce_min_p, _minmax_jvp)


def _prod_jvp(t, ans, x, axes):
    # Exact even with zeros: the derivative with respect to x_i is the product
    # of the other entries, computed with an (n, n) mask (O(n^2) memory in the
    # reduced size).
    shape = core.get_aval(x).shape
    kept = [i for i in range(len(shape)) if i not in axes]
    perm = tuple(kept) + tuple(axes)
    out_shape = tuple(shape[i] for i in kept)
    n = 1
    for a in axes:
        n *= shape[a]
    x2 = S.reshape(S.transpose(x, perm), out_shape + (n,))
    t2 = S.reshape(S.transpose(t, perm), out_shape + (n,))
    eye = np.eye(n, dtype=bool)
    xb = S.broadcast_to(S.reshape(x2, out_shape + (1, n)), out_shape + (n, n))
    others = reduce_prod(E.select(eye, 1, xb), (len(out_shape) + 1,))
    return reduce_sum(E.mul(t2, others), (len(out_shape),))


defjvp(reduce_prod_p, _prod_jvp)
defjvp_zero(reduce_and_p)
defjvp_zero(reduce_or_p)

# ---------------------------------------------------------------------------
# argmax / argmin


def _arg_reduction(name, np_fn):
    p = Primitive(name)
    p.impl = lambda x, axis: np_fn(x, axis=axis)

    def abstract_eval(x, axis):
        check_axes(name, x, (axis,))
        return ShapedArray(reduced_shape(x.shape, (axis,)), dtypes.int64, False)
    p.abstract_eval = abstract_eval

    def batch(args, dims, axis):
        d = dims[0]
        new_axis = axis if axis < d else axis + 1
        return p.bind(args[0], axis=new_axis), d - (1 if axis < d else 0)
    primitive_batchers[p] = batch
    defjvp_zero(p)
    return p


argmax_p = _arg_reduction("argmax", np.argmax)
argmin_p = _arg_reduction("argmin", np.argmin)

# ---------------------------------------------------------------------------
# cumsum


def _cumsum_impl(x, axis, reverse):
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis), axis)
    return np.cumsum(x, axis)


cumsum_p = Primitive("cumsum")
cumsum_p.impl = _cumsum_impl


def _cumsum_abstract_eval(x, axis, reverse):
    check_axes("cumsum", x, (axis,))
    return ShapedArray(x.shape, reduce_dtype(np.sum, x.dtype), x.weak_type)


cumsum_p.abstract_eval = _cumsum_abstract_eval
deflinear(cumsum_p, lambda ct, x, axis, reverse: (cumsum(ct, axis, not reverse),))


def _cumsum_batch(args, dims, axis, reverse):
    d = dims[0]
    return cumsum(args[0], axis if axis < d else axis + 1, reverse), d


primitive_batchers[cumsum_p] = _cumsum_batch


def cumsum(x, axis, reverse=False):
    return cumsum_p.bind(x, axis=int(axis), reverse=bool(reverse))


# ---------------------------------------------------------------------------
# Eager kernels of the NumPy-style reductions (``tangentia.numpy.sum``, ...),
# used through the eager-dispatch point ``core.eager_dispatch``: outside any
# transformation, one ufunc reduction on an ndarray (NumPy's ``np.sum`` & co.
# add a Python layer costing more than the reduction itself on small arrays).
# They return ``NotImplemented`` for what only the traced path handles
# (non-ndarray inputs, ``initial``/``where``, empty max/min), which then runs.


def _axes_now(a, axis):
    """The primitive's ``axes`` for ``axis`` of the ndarray ``a`` (None or one
    valid int), or None when the traced path handles ``axis`` (and its errors)."""
    n = a.ndim
    if axis is None:
        return tuple(range(n))
    if type(axis) is int and -n <= axis < n:
        return (axis + n if axis < 0 else axis,)
    return None


def _eager_reduction(prim, extremum=False):
    """The eager branch of ``tnp.sum``/``prod`` (``extremum``: ``max``/``min``,
    which take no ``dtype`` and have no identity), see ``core.eager_dispatch``:
    the primitive evaluated now, through ``core.eval_primitive``, for an
    ndarray and ``axis`` None or an int; ``NotImplemented`` otherwise."""
    def now(a, axis, dtype, out, keepdims, initial, where, promote):
        if (type(a) is not np.ndarray or dtype is not None or out is not None or keepdims
                or initial is not None or where is not None or not promote
                or (extremum and not a.size)):
            return NotImplemented
        axes = _axes_now(a, axis)
        if axes is None:
            return NotImplemented
        return core.eval_primitive(prim, (a,), {"axes": axes})
    # (the arguments in JAX's and NumPy's positions: ``out`` before ``keepdims``)
    if extremum:
        def kernel(a, axis=None, out=None, keepdims=False, initial=None, where=None):
            return now(a, axis, None, out, keepdims, initial, where, True)
    else:
        def kernel(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
                   promote_integers=True):
            return now(a, axis, dtype, out, keepdims, initial, where, promote_integers)
    kernel.__name__ = f"eager_{prim.name}"
    return kernel


eager_sum = _eager_reduction(reduce_sum_p)
eager_prod = _eager_reduction(reduce_prod_p)
eager_max = _eager_reduction(reduce_max_p, extremum=True)
eager_min = _eager_reduction(reduce_min_p, extremum=True)


