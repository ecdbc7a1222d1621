"""Sorting primitives: ``sort``, ``argsort`` and ``searchsorted``.

* ``sort`` is differentiable: its JVP gathers the input tangent with the
  sorting permutation (``argsort`` of the input), so the derivative of a
  sorted element is that of the input element that landed there.
* ``argsort`` and ``searchsorted`` have integer outputs (zero derivative).

Sorting is always stable (NumPy's ``kind="stable"``); NaNs sort to the end.
"""
from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from ..interpreters.ad import defjvp, defjvp_zero
from ..interpreters.batching import materialize, move_to_front, primitive_batchers
from . import elementwise as E
from . import indexing as I
from . import reductions as R
from . import structural as S


def _check_axis(name, x, axis):
    if not 0 <= axis < x.ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of shape {x.shape}")


def take_along_axis(x, idx, axis):
    """``x`` gathered along ``axis`` with the integer array ``idx`` (same rank)."""
    shape = core.get_aval(idx).shape
    nd = len(shape)
    arrays = []
    for i in range(nd):
        if i == axis:
            arrays.append(idx)
        else:
            s = [1] * nd
            s[i] = shape[i]
            arrays.append(np.arange(shape[i]).reshape(s))
    return I.getitem(x, (I.ARRAY,) * nd, tuple(arrays))


# ---------------------------------------------------------------------------
# sort


def _sort_impl(x, axis):
    return np.sort(x, axis=axis, kind="stable")


sort_p = Primitive("sort")
sort_p.impl = _sort_impl


def _sort_abstract_eval(x, axis):
    _check_axis("sort", x, axis)
    return ShapedArray(x.shape, x.dtype, x.weak_type)


sort_p.abstract_eval = _sort_abstract_eval


def _sort_jvp(t, ans, x, axis):
    return take_along_axis(t, argsort(x, axis), axis)


defjvp(sort_p, _sort_jvp)


def _moved_axis(axis, d):
    """Position of per-example ``axis`` in an array batched at ``d``."""
    return axis if axis < d else axis + 1


primitive_batchers[sort_p] = lambda args, dims, axis: (sort(args[0], _moved_axis(axis, dims[0])), dims[0])


def sort(x, axis=-1):
    """Stable ascending sort of ``x`` along ``axis``."""
    nd = core.get_aval(x).ndim
    axis = int(axis)
    return sort_p.bind(x, axis=axis % nd if nd and -nd <= axis < nd else axis)


# ---------------------------------------------------------------------------
# argsort


def _argsort_impl(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # Stable descending: equal elements keep their original order.
    n = x.shape[axis]
    idx = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - idx, axis)


argsort_p = Primitive("argsort")
argsort_p.impl = _argsort_impl


def _argsort_abstract_eval(x, axis, descending):
    _check_axis("argsort", x, axis)
    return ShapedArray(x.shape, dtypes.int64, False)


argsort_p.abstract_eval = _argsort_abstract_eval
defjvp_zero(argsort_p)
primitive_batchers[argsort_p] = lambda args, dims, axis, descending: (
    argsort(args[0], _moved_axis(axis, dims[0]), descending), dims[0])


def argsort(x, axis=-1, descending=False):
    """Indices that sort ``x`` along ``axis`` (stable)."""
    nd = core.get_aval(x).ndim
    axis = int(axis)
    return argsort_p.bind(x, axis=axis % nd if nd and -nd <= axis < nd else axis,
                          descending=bool(descending))


# ---------------------------------------------------------------------------
# searchsorted


def _searchsorted_impl(a, v, side):
    return np.asarray(np.searchsorted(a, v, side=side), dtype=np.int64)


searchsorted_p = Primitive("searchsorted")
searchsorted_p.impl = _searchsorted_impl


def _searchsorted_abstract_eval(a, v, side):
    if a.ndim != 1:
        raise ValueError(f"searchsorted: argument 'a' must be 1-D, got shape {a.shape}")
    return ShapedArray(v.shape, dtypes.int64, False)


searchsorted_p.abstract_eval = _searchsorted_abstract_eval
defjvp_zero(searchsorted_p)


def _searchsorted_batch(args, dims, side):
    a, v = args
    da, dv = dims
    if da is None:
        return searchsorted(a, v, side), dv
    # A batch of sorted rows: count, per row, the entries before each value.
    size = core.get_aval(a).shape[da]
    a = move_to_front(a, da)
    v = materialize(v, dv, size)
    vs = core.get_aval(v).shape
    n = core.get_aval(a).shape[1]
    a = S.reshape(a, (size,) + (1,) * (len(vs) - 1) + (n,))
    v = S.reshape(v, vs + (1,))
    before = E.lt(a, v) if side == "left" else E.le(a, v)
    count = R.reduce_sum(S.convert_element_type(before, dtypes.int64), (len(vs),))
    return count, 0


primitive_batchers[searchsorted_p] = _searchsorted_batch


def searchsorted(a, v, side="left"):
    """Indices at which ``v`` would be inserted into the sorted 1-D ``a``."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: argument 'side' must be 'left' or 'right', got {side!r}")
    return searchsorted_p.bind(a, v, side=side)


__all__ = ["argsort", "argsort_p", "searchsorted", "searchsorted_p", "sort", "sort_p",
           "take_along_axis"]
