"""Functional edits that return a new array: ``insert`` and ``put``.

Both leave their input unchanged (arrays under transformations are
immutable, as in JAX).  The positions are static where they decide the
result's shape (``insert``'s ``obj``); the inserted or written values may be
traced and are differentiable.
"""
from __future__ import annotations

import numpy as _np

from ..primitives import elementwise as _E
from ._conversion import _in, astype
from ._creation import zeros
from ._elementwise import clip, logical_and, where
from ._indexing import at, take
from ._shapes import broadcast_to, concatenate, moveaxis, ravel, reshape, shape, tile
from ._util import _aval, _axis, _concrete, _is_tracer


def _insert_layout(obj, n, fname):
    """Static layout of ``insert``: (indices as given, whether obj was a scalar)."""
    if isinstance(obj, slice):
        return _np.arange(*obj.indices(n)), False
    if _is_tracer(obj):
        obj = _concrete(obj, fname, "obj")
    idx = _np.asarray(obj)
    if idx.dtype == bool:
        raise TypeError(f"{fname}: argument 'obj' must be integer indices or a slice, not a "
                        "boolean array")
    if idx.size and idx.dtype.kind not in "iu":
        raise TypeError(f"{fname}: argument 'obj' must be integer indices or a slice, got dtype "
                        f"{idx.dtype}")
    if idx.ndim > 1:
        raise ValueError(f"{fname}: argument 'obj' must be a scalar or 1-D, got shape {idx.shape}")
    idx = idx.astype(_np.intp)
    bad = (idx < -n) | (idx > n)
    if bad.any():
        raise IndexError(f"{fname}: index {int(idx[bad].flat[0])} is out of bounds for axis of "
                         f"size {n}")
    return _np.where(idx < 0, idx + n, idx), idx.ndim == 0


def insert(arr, obj, values, axis=None):
    """Insert ``values`` before the indices ``obj`` along ``axis``, as ``numpy.insert``.

    ``obj`` is an integer, a sequence of integers or a slice (static);
    ``values`` are cast to ``arr``'s dtype and broadcast as NumPy does.
    With ``axis=None`` the array is flattened first.
    """
    arr = _in(arr, "insert", "arr")
    if axis is None:
        arr, axis = ravel(arr), 0
    ax = _axis(axis, arr, "insert", "axis")
    n, nd = shape(arr)[ax], len(shape(arr))
    idx, scalar = _insert_layout(obj, n, "insert")
    values = astype(_in(values, "insert", "values"), _aval(arr).dtype)
    target = list(shape(arr))
    if idx.size == 1:
        # One position: the values form a block (NumPy's a[:, i:i+k] = values).
        vnd = len(shape(values))
        if vnd < nd:
            values = reshape(values, (1,) * (nd - vnd) + tuple(shape(values)))
        if scalar:
            values = moveaxis(values, 0, ax)
        target[ax] = shape(values)[ax]
        at_pos = _np.full(target[ax], int(idx.reshape(-1)[0]))
        order = _np.arange(target[ax])
    else:
        target[ax] = idx.size
        order = _np.argsort(idx, kind="stable")
        at_pos = idx
    k = target[ax]
    values = broadcast_to(values, tuple(target))
    # Output position of each inserted value, then the rest in order from arr.
    pos = _np.empty(k, _np.intp)
    pos[order] = at_pos[order] + _np.arange(k)
    src = _np.empty(n + k, _np.intp)
    taken = _np.zeros(n + k, bool)
    taken[pos] = True
    src[pos] = n + _np.arange(k)
    src[~taken] = _np.arange(n)
    return take(concatenate([arr, values], ax), src, axis=ax)


def put(a, ind, v, mode=None, *, inplace=True):
    """``a`` with the flat entries ``ind`` replaced by ``v``, as ``jax.numpy.put``.

    ``v`` is repeated cyclically to the length of ``ind``.  ``mode``: None
    drops out-of-bounds indices, "clip" clips them, "wrap" wraps them around;
    negative indices count from the end.
    """
    if inplace:
        raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array. "
                         "(tangentia.numpy.put: arrays under transformations are immutable too.)")
    if mode not in (None, "clip", "wrap", "raise"):
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r} "
                         "(tangentia.numpy.put: argument 'mode'; None drops out-of-bounds "
                         "indices)")
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported. "
                                  "(tangentia.numpy.put: use mode=None, 'clip' or 'wrap'.)")
    a = _in(a, "put", "a")
    ind = ravel(_in(ind, "put", "ind"))
    v = ravel(_in(v, "put", "v"))
    size, ni, nv = _aval(a).size, shape(ind)[0], shape(v)[0]
    if not size or not ni or not nv:
        return a
    if _aval(ind).dtype.kind not in "iu":
        raise TypeError(f"put: argument 'ind' must hold integers, got dtype {_aval(ind).dtype}")
    if nv < ni:
        v = tile(v, -(-ni // nv))
    v = take(v, _np.arange(ni), axis=0)
    flat = ravel(a)
    if mode == "clip":
        return reshape(at(flat)[clip(ind, 0, size - 1)].set(v), shape(a))
    if mode == "wrap":
        return reshape(at(flat)[_E.remainder(ind, size)].set(v), shape(a))
    # mode None: out-of-bounds writes land in a scratch slot that is cut off.
    ok = logical_and(_E.ge(ind, -size), _E.lt(ind, size))
    slot = where(ok, where(_E.lt(ind, 0), _E.add(ind, size), ind), size)
    padded = concatenate([flat, zeros(1, _aval(a).dtype)])
    return reshape(take(at(padded)[slot].set(v), _np.arange(size), axis=0), shape(a))
