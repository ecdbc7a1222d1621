"""Functional edits that return a new array: ``insert``, ``put``,
``put_along_axis``, ``place``, ``fill_diagonal``, ``choose``, selections by a
mask (``compress``, ``extract``, ``mask_indices``) and reshaping by repetition
or trimming (``resize``, ``trim_zeros``), and bit packing (``packbits``,
``unpackbits``).

All leave their input unchanged (arrays under transformations are
immutable, as in JAX: the functions JAX gives ``inplace=True`` by default
require ``inplace=False``).  The positions are static where they decide the
result's shape (``insert``'s ``obj``, a mask without ``size=``); the written
values may be traced and are differentiable.
"""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from ..primitives import elementwise as _E
from ._conversion import _in, asarray, astype
from ._creation import full, ones, zeros
from ._elementwise import bitwise_and, clip, logical_and, not_equal, right_shift, where
from ._indexing import at, take, take_along_axis
from ._padding import pad
from ._reductions import cumsum, sum
from ._shapes import (broadcast_arrays, broadcast_to, concatenate, moveaxis, ravel, reshape, shape,
                      stack, tile)
from ._util import _aval, _axis, _concrete, _is_tracer

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from ..typing import Array, ArrayLike, Shape


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


def insert(arr: ArrayLike, obj: ArrayLike | slice, values: ArrayLike, axis: int | None = None
           ) -> Array:
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
    if _is_tracer(obj) or (isinstance(obj, (list, tuple))
                           and builtins.any(_is_tracer(o) for o in obj)):
        return _insert_traced(arr, asarray(obj), values, ax, n, nd)
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


def _insert_traced(arr, obj, values, ax, n, nd):
    """``insert`` at traced indices ``obj``, as JAX's: their number is static, so the shape
    is; negative indices count from the end and out-of-range ones are clipped to
    ``[0, n]`` (NumPy's IndexError needs their values)."""
    a = _aval(obj)
    if a.dtype.kind not in "iu":
        raise TypeError(f"insert: argument 'obj' must be integer indices or a slice, got dtype "
                        f"{a.dtype}")
    if len(a.shape) > 1:
        raise ValueError("jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                         f"scalar (insert: argument 'obj' has shape {a.shape})")
    idx = reshape(obj, (-1,))
    idx = clip(where(_E.lt(idx, 0), _E.add(idx, n), idx), 0, n)
    values = astype(_in(values, "insert", "values"), _aval(arr).dtype)
    target = list(shape(arr))
    m = a.size
    if m == 1:   # one position: the values form a block, as in the static case
        vnd = len(shape(values))
        if vnd < nd:
            values = reshape(values, (1,) * (nd - vnd) + tuple(shape(values)))
        if not a.shape:
            values = moveaxis(values, 0, ax)
        k = target[ax] = shape(values)[ax]
        pos = _E.add(idx, _np.arange(k))
    else:
        # each value goes to its index plus its rank in a stable sort of the indices
        k = target[ax] = m
        col, row = reshape(idx, (1, m)), reshape(idx, (m, 1))
        earlier = _np.tril(_np.ones((m, m), bool), -1)   # [i, j]: j before i
        rank = sum(_E.or_p.bind(_E.lt(col, row), logical_and(_E.eq(col, row), earlier)), 1)
        pos = _E.add(idx, astype(rank, _aval(idx).dtype))
    values = broadcast_to(values, tuple(target))
    j = _np.arange(n + k)
    hit = _E.eq(reshape(pos, (k, 1)), j)                    # [i, j]: value i lands at j
    inserted = sum(astype(hit, _np.int64), 0)                # 1 where a value lands
    which = sum(_E.mul(astype(hit, _np.int64), _np.arange(k)[:, None]), 0)
    before = sum(astype(_E.lt(reshape(pos, (k, 1)), j), _np.int64), 0)
    src = where(_E.gt(inserted, 0), _E.add(which, n), _E.sub(j, before))
    return take(concatenate([arr, values], ax), src, axis=ax)


def _immutable(fname):
    return ValueError(f"jax.numpy.{fname} cannot modify arrays in-place, because JAX arrays are "
                      "immutable. Pass inplace=False to instead return an updated array. "
                      f"(tangentia.numpy.{fname}: arrays under transformations are immutable too.)")


def put(a: ArrayLike, ind: ArrayLike, v: ArrayLike, mode: str | None = None, *, inplace: bool = True
        ) -> Array:
    """``a`` with the flat entries ``ind`` replaced by ``v``, as ``jax.numpy.put``.

    ``v`` is repeated cyclically to the length of ``ind``.  ``mode``: None
    drops out-of-bounds indices, "clip" clips them, "wrap" wraps them around;
    negative indices count from the end.
    """
    if inplace:
        raise _immutable("put")
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


def _true_positions(mask, size, fill, fname):
    """Positions of the true entries of the 1-D boolean ``mask``: all of them (``mask``
    concrete) or the first ``size`` (traced too), the rest ``fill``."""
    n = shape(mask)[0]
    if size is None:
        return _np.flatnonzero(_np.asarray(_concrete(mask, fname, "condition")))
    if not isinstance(size, (int, _np.integer)) or size < 0:
        raise TypeError(f"{fname}: argument 'size' must be a static non-negative integer, "
                        f"got {size!r}")
    slot = where(mask, _E.sub(cumsum(astype(mask, _np.int64)), 1), size)
    out = concatenate([full(int(size), fill, _np.int64), zeros(1, _np.int64)])
    return take(at(out)[slot].set(_np.arange(n)), _np.arange(int(size)), axis=0)


def compress(condition: ArrayLike, a: ArrayLike, axis: int | None = None, *,
             size: int | None = None, fill_value: ArrayLike = 0, out: None = None) -> Array:
    """The slices of ``a`` along ``axis`` where ``condition`` holds (``a`` flattened when
    ``axis`` is None).  The result's length depends on ``condition``, which must be
    concrete unless ``size`` is given (then the result has ``size`` slices, padded with
    ``fill_value``)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported. "
                                  "(tangentia.numpy.compress: argument 'out')")
    condition = _in(condition, "compress", "condition")
    if len(shape(condition)) != 1:
        raise ValueError(f"condition must be a 1D array; got shape {shape(condition)} "
                         "(tangentia.numpy.compress: argument 'condition')")
    a = _in(a, "compress", "a")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a, "compress", "axis")
    n = shape(a)[ax]
    mask = astype(condition, bool)
    k = shape(mask)[0]
    if k > n:
        if size is None and _np.asarray(_concrete(mask, "compress", "condition"))[n:].any():
            raise ValueError("condition contains entries that are out of bounds "
                             f"(tangentia.numpy.compress: a true entry at an index >= {n}, the "
                             f"length of axis {ax})")
        mask = take(mask, _np.arange(n), axis=0)
    elif k < n:
        mask = concatenate([mask, zeros(n - k, bool)])
    idx = _true_positions(mask, size, n, "compress")
    if size is None:
        return take(a, idx, axis=ax)
    padded = concatenate([a, full(tuple(1 if i == ax else d for i, d in enumerate(shape(a))),
                                  fill_value, _aval(a).dtype)], ax)
    return take(padded, idx, axis=ax)


def extract(condition: ArrayLike, arr: ArrayLike, *, size: int | None = None,
            fill_value: ArrayLike = 0) -> Array:
    """The entries of ``arr`` where ``condition`` is nonzero, flattened (see ``compress``
    for ``size`` and ``fill_value``)."""
    condition = ravel(not_equal(_in(condition, "extract", "condition"), 0))
    return compress(condition, ravel(_in(arr, "extract", "arr")), size=size,
                    fill_value=fill_value)


def place(arr: ArrayLike, mask: ArrayLike, vals: ArrayLike, *, inplace: bool = True) -> Array:
    """``arr`` with the entries where ``mask`` holds replaced, in order, by ``vals``
    (repeated cyclically); works under ``jit`` (``mask`` may be traced)."""
    if inplace:
        raise _immutable("place")
    arr = _in(arr, "place", "arr")
    mask = ravel(astype(_in(mask, "place", "mask"), bool))
    size = _aval(arr).size
    if shape(mask)[0] != size:
        raise ValueError(f"place: argument 'mask' must have the size of 'arr' ({size}), got "
                         f"{shape(mask)[0]}")
    return put(arr, _true_positions(mask, size, size, "place"), vals, inplace=False)


def put_along_axis(arr: ArrayLike, indices: ArrayLike, values: ArrayLike, axis: int | None,
                   inplace: bool = True, *, mode: str | None = None) -> Array:
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (the other axes matched
    one to one, as ``take_along_axis``); ``axis=None`` works on the flattened array."""
    if inplace:
        raise _immutable("put_along_axis")
    arr = _in(arr, "put_along_axis", "arr")
    indices = _in(indices, "put_along_axis", "indices")
    if _aval(indices).dtype.kind not in "iu":
        raise TypeError(f"put_along_axis: argument 'indices' must hold integers, got dtype "
                        f"{_aval(indices).dtype}")
    if axis is None:
        flat = put_along_axis(ravel(arr), ravel(indices), ravel(asarray(values)), 0,
                              inplace=False, mode=mode)
        return reshape(flat, shape(arr))
    nd = len(shape(arr))
    ax = _axis(axis, arr, "put_along_axis", "axis")
    if len(shape(indices)) != nd:
        raise ValueError(f"put_along_axis: argument 'indices' must have {nd} dimensions, as "
                         f"'arr', got shape {shape(indices)}")
    s = shape(indices)
    index = tuple(indices if i == ax else _np.arange(s[i]).reshape([-1 if j == i else 1
                                                                   for j in range(nd)])
                  for i in range(nd))
    values = broadcast_to(astype(_in(values, "put_along_axis", "values"), _aval(arr).dtype), s)
    return at(arr)[index].set(values, mode=mode)


def fill_diagonal(a: ArrayLike, val: ArrayLike, wrap: bool = False, *, inplace: bool = True
                  ) -> Array:
    """``a`` with its main diagonal set to ``val`` (repeated cyclically); the leading square
    part of a 2-D array, or all equal axes of an n-D one."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False "
                                  "(tangentia.numpy.fill_diagonal)")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False "
                                  "(tangentia.numpy.fill_diagonal)")
    a = _in(a, "fill_diagonal", "a")
    s = shape(a)
    if len(s) < 2:
        raise ValueError(f"array must be at least 2-d (tangentia.numpy.fill_diagonal: argument "
                         f"'a' has shape {s})")
    if len(s) > 2 and len(set(s)) != 1:
        raise ValueError(f"All dimensions of input must be of equal length "
                         f"(tangentia.numpy.fill_diagonal: argument 'a' has shape {s})")
    n = min(s)
    val = astype(_in(val, "fill_diagonal", "val"), _aval(a).dtype)
    if len(shape(val)):
        val = ravel(val)
        k = shape(val)[0]
        val = take(tile(val, -(-n // k)) if k < n else val, _np.arange(n), axis=0)
    return at(a)[_np.diag_indices(n, len(s))].set(val)


def choose(a: ArrayLike, choices: ArrayLike | Sequence[ArrayLike], out: None = None,
           mode: str = "raise") -> Array:
    """``choices[a[i]][i]`` for each ``i`` (all broadcast together).  ``mode``: 'raise'
    (``a`` must be concrete and in range), 'wrap' or 'clip'."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported. "
                                  "(tangentia.numpy.choose: argument 'out')")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip' "
                         "(tangentia.numpy.choose: argument 'mode')")
    a = _in(a, "choose", "a")
    if _aval(a).dtype.kind not in "iub":
        raise TypeError(f"choose: argument 'a' must hold integers, got dtype {_aval(a).dtype}")
    choices = [_in(c, "choose", "choices") for c in choices]
    n = len(choices)
    if mode == "raise":
        try:
            v = _np.asarray(_concrete(a, "choose", "a"))
        except _core.ConcretizationTypeError as err:   # JAX's hint
            raise _core.ConcretizationTypeError(
                f"{err}\nThe error occurred because jnp.choose was jit-compiled with "
                "mode='raise'. Use mode='wrap' or mode='clip' instead.") from None
        if v.size and (v.min() < 0 or v.max() >= n):
            raise ValueError("invalid entry in choice array (tangentia.numpy.choose: argument "
                             f"'a' must be in [0, {n}))")
    elif mode == "wrap":
        a = _E.remainder(a, n)
    else:
        a = clip(a, 0, n - 1)
    a, *choices = broadcast_arrays(a, *choices)
    picked = take_along_axis(stack(choices, 0), reshape(a, (1,) + tuple(shape(a))), 0)
    return reshape(picked, shape(a))


def resize(a: ArrayLike, new_shape: Shape) -> Array:
    """An array of shape ``new_shape`` filled with the entries of ``a`` repeated in order."""
    a = ravel(_in(a, "resize", "a"))
    new_shape = (new_shape,) if isinstance(new_shape, (int, _np.integer)) else tuple(new_shape)
    if builtins.any(d < 0 for d in new_shape):
        raise ValueError(f"resize: all elements of argument 'new_shape' must be non-negative, "
                         f"got {new_shape}")
    total, k = int(_np.prod(new_shape)), shape(a)[0]
    if k == 0:
        return zeros(new_shape, _aval(a).dtype)
    reps = tile(a, max(1, -(-total // k)))
    return reshape(take(reps, _np.arange(total), axis=0), new_shape)


def trim_zeros(filt: ArrayLike, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Array:
    """``filt`` without its leading ('f') and/or trailing ('b') zeros (all-zero slices along
    ``axis``, every axis by default).  ``filt`` must be concrete (the result's shape
    depends on it)."""
    filt = _in(filt, "trim_zeros", "filt")
    trim = trim.lower() if isinstance(trim, str) else trim
    if trim not in ("f", "b", "fb", "bf"):
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r} "
                         "(tangentia.numpy.trim_zeros: argument 'trim')")
    v = _np.asarray(_concrete(filt, "trim_zeros", "filt"))
    nd = v.ndim
    axes = range(nd) if axis is None else [
        _axis(ax, filt, "trim_zeros", "axis") for ax in
        (axis if isinstance(axis, (tuple, list)) else (axis,))]
    out = filt
    for ax in axes:
        nz = _np.flatnonzero(_np.any(v != 0, axis=tuple(i for i in range(nd) if i != ax)))
        lo = int(nz[0]) if nz.size and "f" in trim else (v.shape[ax] if not nz.size else 0)
        hi = int(nz[-1]) + 1 if nz.size and "b" in trim else v.shape[ax]
        out = take(out, _np.arange(lo, max(lo, hi)), axis=ax)
    return out


def mask_indices(n: int, mask_func: Callable[[ArrayLike, int], Array], k: int = 0, *,
                 size: int | None = None) -> tuple[Array, Array]:
    """The indices of the nonzero entries of ``mask_func(ones((n, n)), k)`` (e.g. ``triu``),
    as a pair of arrays (the first ``size`` of them with ``size=``)."""
    m = mask_func(ones((n, n), _np.int64), k)
    flat = ravel(not_equal(m, 0))
    idx = _true_positions(flat, size, 0, "mask_indices")
    return _E.floor_divide(idx, n), _E.remainder(idx, n)


def _bits_layout(a, axis, fname):
    """``a`` with the bit axis last (flattened when ``axis`` is None) and that axis."""
    if _aval(a).dtype.kind not in "biu":
        raise TypeError(f"Expected an input array of integer or boolean data type "
                        f"(tangentia.numpy.{fname}: argument 'a' has dtype {_aval(a).dtype})")
    if axis is None:
        return ravel(a), 0
    ax = _axis(axis, a, fname, "axis")
    return moveaxis(a, ax, -1), ax


def _bit_weights(bitorder, fname):
    if bitorder not in ("big", "little"):
        raise ValueError(f"'order' must be either 'little' or 'big' (tangentia.numpy.{fname}: "
                         f"argument 'bitorder', got {bitorder!r})")
    shifts = _np.arange(8, dtype=_np.uint8)
    return shifts[::-1].copy() if bitorder == "big" else shifts


def packbits(a: ArrayLike, axis: int | None = None, bitorder: str = "big") -> Array:
    """The truth of the entries of ``a`` packed 8 to a ``uint8`` along ``axis`` (the flattened
    array by default), padded with zeros to a multiple of 8, as ``numpy.packbits``."""
    a = _in(a, "packbits", "a")
    x, ax = _bits_layout(a, axis, "packbits")
    shifts = _bit_weights(bitorder, "packbits")
    n = shape(x)[-1]
    x = astype(not_equal(x, 0), _np.uint8)
    x = pad(x, [(0, 0)] * (len(shape(x)) - 1) + [(0, -n % 8)])
    x = reshape(x, tuple(shape(x)[:-1]) + (-1, 8))
    packed = sum(_E.mul(x, _np.uint8(1) << shifts), axis=-1, dtype=_np.uint8)
    return packed if axis is None else moveaxis(packed, -1, ax)


def unpackbits(a: ArrayLike, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Array:
    """The bits of the ``uint8`` array ``a`` along ``axis`` (the flattened array by
    default), the first ``count`` of them (all but the last ``-count`` if negative), as
    ``numpy.unpackbits``."""
    a = _in(a, "unpackbits", "a")
    if _aval(a).dtype != _np.uint8:
        raise TypeError(f"Expected an input array of unsigned byte data type "
                        f"(tangentia.numpy.unpackbits: argument 'a' has dtype "
                        f"{_aval(a).dtype})")
    x, ax = _bits_layout(a, axis, "unpackbits")
    shifts = _bit_weights(bitorder, "unpackbits")
    bits = bitwise_and(right_shift(reshape(x, tuple(shape(x)) + (1,)), shifts), _np.uint8(1))
    bits = reshape(bits, tuple(shape(x)[:-1]) + (-1,))
    if count is not None:
        n = shape(bits)[-1]
        keep = max(0, count if count >= 0 else n + count)
        if keep > n:
            bits = pad(bits, [(0, 0)] * (len(shape(bits)) - 1) + [(0, keep - n)])
        else:
            bits = take(bits, _np.arange(keep), axis=-1)
    return bits if axis is None else moveaxis(bits, -1, ax)
