"""Reductions over axes (sum, max, min, prod, all, any, argmax, argmin) and cumsum."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from ..interpreters.ad import deflinear, defjvp, defjvp_zero
from . import elementwise as E
from . import structural as S


def _reduced_shape(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _keepdims_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _check_axes(name, x, axes):
    for a in axes:
        if not 0 <= a < x.ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for an array of shape {x.shape}")


@lru_cache(maxsize=1024)
def _reduce_dtype(fn, dtype):
    with np.errstate(all="ignore"):
        return np.asarray(fn(np.ones((1,), dtype))).dtype


def _reduction(name, np_fn, keep_dtype=False, out_dtype=None):
    p = Primitive(name)
    p.impl = lambda x, axes: np_fn(x, axis=axes)

    def abstract_eval(x, axes):
        _check_axes(name, x, axes)
        if out_dtype is not None:
            dtype, weak = out_dtype, False
        elif keep_dtype:
            dtype, weak = x.dtype, x.weak_type
        else:
            dtype, weak = _reduce_dtype(np_fn, x.dtype), x.weak_type
        return ShapedArray(_reduced_shape(x.shape, axes), dtype, weak)
    p.abstract_eval = abstract_eval

    def batch(args, dims, axes):
        x, = args
        d, = dims
        new_axes = tuple(a if a < d else a + 1 for a in axes)
        out_d = d - sum(1 for a in axes if a < d)
        return p.bind(x, axes=new_axes), out_d
    p.batch = batch
    return p


# ufunc reductions: NumPy's np.sum & co. add a Python layer costing more than
# the reduction itself on small arrays.
reduce_sum_p = _reduction("reduce_sum", np.add.reduce)
reduce_max_p = _reduction("reduce_max", np.maximum.reduce, keep_dtype=True)
reduce_min_p = _reduction("reduce_min", np.minimum.reduce, keep_dtype=True)
reduce_prod_p = _reduction("reduce_prod", np.multiply.reduce)
reduce_and_p = _reduction("reduce_and", np.all, out_dtype=dtypes.bool_)
reduce_or_p = _reduction("reduce_or", np.any, out_dtype=dtypes.bool_)


def _normalize_axes(axes):
    return tuple(sorted(int(a) for a in axes))


def reduce_sum(x, axes):
    return reduce_sum_p.bind(x, axes=_normalize_axes(axes))


def reduce_max(x, axes):
    return reduce_max_p.bind(x, axes=_normalize_axes(axes))


def reduce_min(x, axes):
    return reduce_min_p.bind(x, axes=_normalize_axes(axes))


def reduce_prod(x, axes):
    return reduce_prod_p.bind(x, axes=_normalize_axes(axes))


def _expand_reduced(ct, shape, axes):
    """Broadcast a reduced array back to the full ``shape``."""
    if core.get_aval(ct).ndim:
        ct = S.reshape(ct, _keepdims_shape(shape, axes))
    return S.broadcast_to(ct, shape)


deflinear(reduce_sum_p, lambda ct, x, axes: (_expand_reduced(ct, x.aval.shape, axes),))


def _minmax_jvp(t, ans, x, axes):
    shape = core.get_aval(x).shape
    loc = E.eq(x, _expand_reduced(ans, shape, axes))
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
        _check_axes(name, x, (axis,))
        return ShapedArray(_reduced_shape(x.shape, (axis,)), dtypes.int64, False)
    p.abstract_eval = abstract_eval

    def batch(args, dims, axis):
        d = dims[0]
        new_axis = axis if axis < d else axis + 1
        return p.bind(args[0], axis=new_axis), d - (1 if axis < d else 0)
    p.batch = batch
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
    _check_axes("cumsum", x, (axis,))
    return ShapedArray(x.shape, _reduce_dtype(np.sum, x.dtype), x.weak_type)


cumsum_p.abstract_eval = _cumsum_abstract_eval
deflinear(cumsum_p, lambda ct, x, axis, reverse: (cumsum(ct, axis, not reverse),))


def _cumsum_batch(args, dims, axis, reverse):
    d = dims[0]
    return cumsum(args[0], axis if axis < d else axis + 1, reverse), d


cumsum_p.batch = _cumsum_batch


def cumsum(x, axis, reverse=False):
    return cumsum_p.bind(x, axis=int(axis), reverse=bool(reverse))

