"""Shape queries and shape manipulation: reshaping, transposing, broadcasting,
joining and splitting arrays."""
from __future__ import annotations

import builtins
import math
import operator
from typing import TYPE_CHECKING

import numpy as _np

from ..core import Tracer as _Tracer
from ..interpreters.base_ops import static_shape
from .. import core as _core
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import reductions as _R
from ..primitives import sorting as _SO
from ..primitives import structural as _S
from ._conversion import _in, _stack, asarray, astype
from ._util import _aval, _axis, _concrete, _is_tracer

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike, Shape


def _bounds_axis(fname, axis, nd, argname="axis"):
    """``axis`` normalized into ``[0, nd)``, else JAX's (NumPy's) ``AxisError``, which is a
    ValueError and an IndexError."""
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer "
                        f"(tangentia: {fname}: argument '{argname}' must be an integer, got "
                        f"{axis!r})") from None
    if not -nd <= ax < nd:
        raise _np.exceptions.AxisError(
            f"axis {ax} is out of bounds for array of dimension {nd} (tangentia: {fname}: "
            f"argument '{argname}' must be in [{-nd}, {nd}))")
    return ax % nd


def _unique_axes(fname, axes, nd, text):
    """Normalized ``axes`` (an int or a sequence), each in range and named once; ``text``
    formats JAX's message for a repeat."""
    axes = (axes,) if not isinstance(axes, (tuple, list)) else axes
    out = tuple(_bounds_axis(fname, a, nd) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(text.format(out) + f" (tangentia: {fname}: name each axis once)")
    return out


# ---------------------------------------------------------------------------
# Shape queries


def shape(a: Any) -> tuple[int, ...]:
    """Shape of ``a``."""
    return _aval(a).shape


def ndim(a: Any) -> int:
    """Number of dimensions of ``a``."""
    return _aval(a).ndim


def size(a: Any, axis: int | Sequence[int] | None = None) -> int:
    """Number of entries of ``a`` (along ``axis`` if given)."""
    s = _aval(a).shape
    if axis is None:
        return math.prod(s)
    if isinstance(axis, (tuple, list)):   # JAX's: the product over several axes
        axes = [_axis(ax, a, "size") for ax in axis]
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis in size: {tuple(axis)} (size: argument 'axis')")
        return math.prod(s[ax] for ax in axes)
    return s[_axis(axis, a, "size")]   # (axis=5: ValueError naming size, not IndexError)


def isscalar(element: Any) -> bool:
    """True for Python and NumPy scalars and 0-d arrays (traced or not), as in JAX."""
    if _np.isscalar(element):
        return True
    if isinstance(element, (_np.ndarray, _Tracer)):
        return ndim(element) == 0
    return False


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The shape that the given shapes broadcast to."""
    try:
        return tuple(_np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError("Incompatible shapes for broadcasting: shapes=["
                         f"{', '.join(str(tuple(s)) for s in shapes)}]") from None


# ---------------------------------------------------------------------------
# Reshaping and permuting axes


def reshape(a: ArrayLike, shape: int | Shape, order: str = "C", *, copy: bool | None = None,
            out_sharding: Any = None) -> Array:
    """Reshape; one dimension may be -1.  ``copy=True``: an eager result is a new array, never
    a view of ``a`` (JAX's ``copy``; traced values are never shared); ``out_sharding``
    changes nothing (one device).  (``newshape=``, which JAX 0.10.2 no longer takes, is gone.)"""
    out = _reshape(a, shape, order)
    return _np.array(out) if copy and isinstance(out, _np.ndarray) else out


def _reshape(a, shape, order):
    if isinstance(shape, (int, _np.integer)) or getattr(shape, "ndim", None) == 0:
        shape = (shape,)   # one dimension (a 0-d array or traced value included)
    shape = static_shape(shape, "reshape")
    n = math.prod(_aval(a).shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: can only specify one unknown dimension (-1), got {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or n % known:
            raise ValueError(f"reshape: cannot reshape array of shape {_aval(a).shape} into "
                             f"shape {shape}")
        shape = tuple(n // known if d == -1 else d for d in shape)
    if order == "C":
        return _S.reshape(a, shape)
    _check_order(order, "reshape")
    # column-major: reverse the axes, reshape row-major into the reversed shape, reverse back
    nd = len(_aval(a).shape)
    t = _S.transpose(a, tuple(range(nd - 1, -1, -1))) if nd > 1 else a
    out = _S.reshape(t, shape[::-1])
    return _S.transpose(out, tuple(range(len(shape) - 1, -1, -1))) if len(shape) > 1 else out


def _check_order(order, name):
    """JAX's errors for an ``order`` other than "C" and "F" (given as an argument of ``name``)."""
    if order == "A":
        raise NotImplementedError(f"np.reshape order=A is not implemented. ({name}: argument "
                                  "'order' must be 'C' or 'F')")
    if order != "F":
        raise ValueError(f"Unexpected value for 'order' argument: {order}. ({name}: argument "
                         "'order' must be 'C' or 'F')")


def ravel(a: ArrayLike, order: str = "C", *, out_sharding: Any = None) -> Array:
    """``a`` flattened to one dimension (row-major order, or column-major with
    ``order="F"``; ``out_sharding`` changes nothing: one device)."""
    if order == "C":
        return _S.reshape(a, (math.prod(_aval(a).shape),))
    if order == "K":
        raise NotImplementedError("Ravel not implemented for order='K'. (ravel: argument "
                                  "'order' must be 'C' or 'F')")
    return reshape(a, (math.prod(_aval(a).shape),), order)


def squeeze(a: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    """``a`` without its axes of size one (only those in ``axis`` if given)."""
    s = _aval(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(s) if d == 1)
    else:
        axes = _unique_axes("squeeze", axis, len(s), "dimensions are not unique: {}")
        for i in axes:
            if s[i] != 1:
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size "
                                 f"not equal to one (axis {i} of shape {s})")
    return _S.reshape(a, tuple(d for i, d in enumerate(s) if i not in axes))


def expand_dims(a: ArrayLike, axis: int | Sequence[int]) -> Array:
    """``a`` with new axes of size one inserted at positions ``axis``."""
    s = list(_aval(a).shape)
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    nd = len(s) + len(axes)
    for ax in sorted(_unique_axes("expand_dims", axes, nd,
                                  "repeated axis in lax.expand_dims: {}")):
        s.insert(ax, 1)
    return _S.reshape(a, tuple(s))


def transpose(a: ArrayLike, axes: tuple[int, ...] | None = None) -> Array:
    """``a`` with its axes permuted (reversed if ``axes`` is None)."""
    nd = _aval(a).ndim
    if axes is None:
        axes = tuple(reversed(range(nd)))
    else:
        axes = tuple(int(x) % nd if nd else int(x) for x in axes)
        if sorted(axes) != list(range(nd)):
            raise ValueError(f"transpose: axes {axes} do not match an array of rank {nd}")
    return _S.transpose(a, axes)


def permute_dims(a: ArrayLike, /, axes: tuple[int, ...]) -> Array:
    """``a`` with its axes permuted by ``axes`` (the array API's ``transpose``, whose
    ``axes`` is required, as JAX's)."""
    return transpose(a, axes)


def moveaxis(a: ArrayLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Array:
    """``a`` with axes ``source`` moved to positions ``destination``."""
    nd = _aval(a).ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    src = [_axis(s, a, "moveaxis") for s in src]
    dst = [_axis(d, a, "moveaxis") for d in dst]
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _S.transpose(a, tuple(order))


def swapaxes(a: ArrayLike, axis1: int, axis2: int) -> Array:
    """``a`` with axes ``axis1`` and ``axis2`` interchanged."""
    nd = _aval(a).ndim
    perm = list(range(nd))
    for ax in (axis1, axis2):
        if isinstance(ax, (int, _np.integer)) and not -nd <= ax < nd:
            raise _np.exceptions.AxisError(
                f"index {ax} is out of bounds for axis 0 with size {nd} (tangentia: swapaxes: "
                f"axis {ax} is out of bounds for an array of rank {nd})")
    perm[axis1 % nd], perm[axis2 % nd] = perm[axis2 % nd], perm[axis1 % nd]
    return _S.transpose(a, tuple(perm))


def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Array:
    """``a`` with axis ``axis`` moved to just before position ``start``."""
    nd = ndim(a)
    axis = _bounds_axis("rollaxis", axis, nd)
    start = operator.index(start)
    if not -nd <= start <= nd:
        raise _np.exceptions.AxisError(f"rollaxis: argument 'start' must be in [{-nd}, {nd}], "
                                       f"got {start}")
    start = start + nd if start < 0 else start   # NumPy's: -1 is before the last axis
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def matrix_transpose(x: ArrayLike, /) -> Array:
    """Swap the last two axes."""
    x = _in(x, "matrix_transpose", "x")
    if ndim(x) < 2:
        raise ValueError(f"matrix_transpose: argument 'x' must have at least 2 dimensions, got "
                         f"shape {shape(x)}")
    return swapaxes(x, -1, -2)


# ---------------------------------------------------------------------------
# Broadcasting


def broadcast_to(array: ArrayLike, shape: int | Shape, *, out_sharding: Any = None) -> Array:
    """``array`` broadcast to ``shape`` (the parameters are named as JAX's and NumPy's;
    ``out_sharding`` changes nothing: one device)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape) < len(_aval(array).shape):
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape="
                         f"{_aval(array).shape} shape={shape}")
    return _S.broadcast_to(array, shape)


def broadcast_arrays(*args: ArrayLike) -> list[Array]:
    """The arguments broadcast to their common shape (a list)."""
    s = broadcast_shapes(*[shape(x) for x in args])
    return [broadcast_to(x, s) for x in args]


def atleast_1d(*arys: ArrayLike) -> Array | list[Array]:
    """The arguments with at least one dimension (scalars become shape (1,))."""
    out = [a if ndim(a) >= 1 else reshape(a, (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys: ArrayLike) -> Array | list[Array]:
    """The arguments with at least two dimensions (new axes are added in front)."""
    out = []
    for a in arys:
        n = ndim(a)
        out.append(a if n >= 2 else reshape(a, (1, 1) if n == 0 else (1,) + shape(a)))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys: ArrayLike) -> Array | list[Array]:
    """The arguments with at least three dimensions (NumPy's placement of the new axes)."""
    out = []
    for a in arys:
        a = _in(a, "atleast_3d", "arys")
        n = ndim(a)
        if n == 0:
            a = reshape(a, (1, 1, 1))
        elif n == 1:
            a = reshape(a, (1,) + shape(a) + (1,))
        elif n == 2:
            a = reshape(a, shape(a) + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


# ---------------------------------------------------------------------------
# Joining


def concatenate(arrays: Sequence[ArrayLike], axis: int | None = 0, dtype=None) -> Array:
    """Join arrays along an existing axis (flattened first if ``axis`` is None)."""
    arrays = [asarray(a) if not _is_tracer(a) else a for a in arrays]
    if not arrays:
        raise ValueError("concatenate: need at least one array to concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    nd = ndim(arrays[0])
    if nd == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    out = _S.concatenate(arrays, _bounds_axis("concatenate", axis, nd))
    return out if dtype is None else astype(out, dtype)


def concat(arrays: Sequence[ArrayLike], /, *, axis: int | None = 0) -> Array:
    """The array API's ``concatenate`` (``axis`` keyword-only, no ``dtype``, as JAX's)."""
    return concatenate(arrays, axis)


def _as_dtype(x, dtype):
    return x if dtype is None else astype(x, dtype)


def stack(arrays: ArrayLike | Sequence[ArrayLike], axis: int = 0, out: None = None,
          dtype: DTypeLike | None = None) -> Array:
    """Join arrays of the same shape along a new axis (cast to ``dtype`` if given)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.stack is not supported. "
                                  "(stack: tangentia arrays are immutable)")
    arrays = list(arrays)
    if arrays:
        _bounds_axis("stack", axis, ndim(arrays[0]) + 1)
    return _as_dtype(_stack(arrays, axis), dtype)


def hstack(tup: ArrayLike | Sequence[ArrayLike], dtype: DTypeLike | None = None) -> Array:
    """Join arrays along the second axis (the first for 1-D arrays)."""
    arrs = [atleast_1d(a) for a in tup]
    return _as_dtype(concatenate(arrs, 0 if ndim(arrs[0]) == 1 else 1), dtype)


def vstack(tup: ArrayLike | Sequence[ArrayLike], dtype: DTypeLike | None = None) -> Array:
    """Join arrays along the first axis (1-D arrays become rows)."""
    return _as_dtype(concatenate([atleast_2d(a) for a in tup], 0), dtype)


def dstack(tup: ArrayLike | Sequence[ArrayLike], dtype: DTypeLike | None = None) -> Array:
    """Stack along the third axis."""
    return _as_dtype(concatenate([atleast_3d(_in(a, "dstack", f"tup[{i}]"))
                                  for i, a in enumerate(tup)], 2), dtype)


def column_stack(tup: ArrayLike | Sequence[ArrayLike]) -> Array:
    """Stack 1-D arrays as columns (2-D arrays are stacked as they are)."""
    arrs = []
    for i, a in enumerate(tup):
        a = _in(a, "column_stack", f"tup[{i}]")
        if ndim(a) < 2:
            a = reshape(a, (-1, 1))
        arrs.append(a)
    return concatenate(arrs, 1)


def append(arr: ArrayLike, values: ArrayLike, axis: int | None = None) -> Array:
    """``values`` appended to ``arr`` along ``axis`` (both flattened if ``axis`` is None)."""
    arr = _in(arr, "append", "arr")
    values = _in(values, "append", "values")
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def tile(A: ArrayLike, reps: int | Sequence[int]) -> Array:  # noqa: N803 - JAX's name
    """``A`` repeated ``reps`` times along each axis."""
    a = A
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    a = asarray(a) if not _is_tracer(a) else a
    s = shape(a)
    nd = builtins.max(len(s), len(reps))
    s = (1,) * (nd - len(s)) + s
    reps = (1,) * (nd - len(reps)) + reps
    a = reshape(a, s)
    # insert a repeat axis before each axis, broadcast, then merge
    inter = []
    for r, d in zip(reps, s):
        inter += [1, d]
    a = reshape(a, tuple(inter))
    target = []
    for r, d in zip(reps, s):
        target += [r, d]
    a = broadcast_to(a, tuple(target))
    return reshape(a, tuple(r * d for r, d in zip(reps, s)))


def repeat(a: ArrayLike, repeats: ArrayLike, axis: int | None = None, *,
           total_repeat_length: int | None = None, out_sharding: Any = None) -> Array:
    """Repeat each entry ``repeats`` times along ``axis`` (of the flattened array if None).
    ``repeats`` is an integer or one count per entry (concrete, or traced with JAX's static
    ``total_repeat_length``: the length of the result, cut or filled with the last entry;
    ``out_sharding`` changes nothing: one device)."""
    a = _in(a, "repeat", "a")
    if axis is None or (len(shape(a)) == 0 and axis in (0, -1)):
        a = ravel(a)   # (a 0-d array repeats as a 1-d one along axis 0 or -1, as NumPy's)
        axis = 0
    s = shape(a)
    axis = _bounds_axis("repeat", axis, len(s))
    if total_repeat_length is not None:
        total_repeat_length = operator.index(total_repeat_length)
    if not _is_tracer(repeats) and _np.ndim(repeats) == 0:
        r = operator.index(_np.asarray(repeats).item() if hasattr(repeats, "dtype")
                           else repeats)
        if total_repeat_length is None or total_repeat_length == s[axis] * r:
            a = expand_dims(a, axis + 1)
            tgt = s[:axis + 1] + (r,) + s[axis + 1:]
            if r < 0:   # (JAX's TypeError; NumPy's broadcast ValueError otherwise)
                raise TypeError(f"broadcast_in_dim shape must have every element be "
                                f"nonnegative, got {tgt}. (tangentia.numpy.repeat: argument "
                                f"'repeats' is {r})")
            a = broadcast_to(a, tgt)
            return reshape(a, s[:axis] + (s[axis] * r,) + s[axis + 1:])
    counts = repeats
    if not _is_tracer(counts):
        counts = _np.broadcast_to(_np.asarray(counts), (s[axis],))
        if counts.dtype.kind not in "iu":
            raise TypeError(f"repeat: argument 'repeats' must be integers, got {counts.dtype}")
        if total_repeat_length is None:
            idx = _np.repeat(_np.arange(s[axis]), counts)
            return _take_axis(a, idx, axis)
    elif total_repeat_length is None:
        raise _core.ConcretizationTypeError(
            "repeat: argument 'repeats' is traced: pass a static total_repeat_length (JAX's "
            "keyword) so the length of the result is known")
    if _is_tracer(counts) and _aval(counts).shape != (s[axis],):
        counts = broadcast_to(counts, (s[axis],))
    ends = _R.cumsum(astype(counts, _np.int64), 0)
    idx = _SO.searchsorted(ends, _np.arange(total_repeat_length, dtype=_np.int64), "right")
    idx = _E.minimum(idx, max(s[axis] - 1, 0))
    return _take_axis(a, idx, axis)


def _take_axis(a, idx, axis):
    """``a`` at the integer indices ``idx`` (1-D, in bounds) along ``axis``."""
    spec = tuple(_I.ARRAY if i == axis else slice(None) for i in range(len(shape(a))))
    return _I.getitem(a, spec, (idx,))


# ---------------------------------------------------------------------------
# Splitting


def split(ary: ArrayLike, indices_or_sections: int | Sequence[int] | ArrayLike, axis: int = 0
          ) -> list[Array]:
    """Split into equal sections, or at the given indices, along ``axis``."""
    n = shape(ary)[axis]
    if _is_tracer(indices_or_sections) or (
            isinstance(indices_or_sections, (list, tuple))
            and any(_is_tracer(i) for i in indices_or_sections)):
        # the split points determine the shapes: concrete values only (known ones under
        # eager jvp/grad), JAX's ConcretizationTypeError otherwise
        def known(v):   # a known value (of eager jvp/grad) as integers, as JAX reads it
            v = _np.asarray(_concrete(v, "split", "indices_or_sections"))
            return int(v) if v.ndim == 0 else [int(i) for i in v]
        indices_or_sections = (known(indices_or_sections) if _is_tracer(indices_or_sections)
                               else [known(i) if _is_tracer(i) else i
                                     for i in indices_or_sections])
    if isinstance(indices_or_sections, int):
        if indices_or_sections < 0:
            raise ValueError(f"number sections must be larger than 0. (tangentia: split: "
                             f"got indices_or_sections={indices_or_sections})")
        if n % indices_or_sections:
            raise ValueError("split: array split does not result in an equal division")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [operator.index(i) for i in indices_or_sections] + [n]
        sizes = [b - a for a, b in zip(bounds, bounds[1:])]
        if any(d < 0 for d in sizes):
            raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes} "
                             f"(tangentia: split: the split points "
                             f"{list(indices_or_sections)} must be nondecreasing and within "
                             f"[0, {n}]; negative ones do not count from the end)")
    return [_I.static_slice(ary, axis % ndim(ary), a, b) for a, b in zip(bounds, bounds[1:])]


def array_split(ary: ArrayLike, indices_or_sections: int | Sequence[int] | ArrayLike, axis: int = 0
                ) -> list[Array]:
    """Split into pieces; with an int, the first pieces get one extra element."""
    n = shape(ary)[axis]
    if isinstance(indices_or_sections, (int, _np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("array_split: argument 'indices_or_sections' must be positive")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = _np.cumsum([0] + sizes)[1:-1].tolist()
        return split(ary, bounds, axis)
    return split(ary, list(indices_or_sections), axis)


def hsplit(ary: ArrayLike, indices_or_sections: int | Sequence[int] | ArrayLike) -> list[Array]:
    """Split along the second axis (the first for 1-D arrays)."""
    return split(ary, indices_or_sections, 1 if ndim(ary) > 1 else 0)


def vsplit(ary: ArrayLike, indices_or_sections: int | Sequence[int] | ArrayLike) -> list[Array]:
    """Split along the first axis."""
    return split(ary, indices_or_sections, 0)


def dsplit(ary: ArrayLike, indices_or_sections: int | Sequence[int] | ArrayLike) -> list[Array]:
    """Split along the third axis."""
    return split(ary, indices_or_sections, 2)


def _block_depth(arrays, where="arrays"):
    """The nesting depth of ``block``'s lists (all leaves must be equally deep)."""
    if isinstance(arrays, tuple):
        raise TypeError(f"{where} is a tuple. Only lists can be used to arrange blocks, and "
                        "np.block does not allow implicit conversion from tuple to ndarray. "
                        "(tangentia.numpy.block)")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ValueError(f"List at {where} cannot be empty (tangentia.numpy.block)")
    depths = {_block_depth(a, f"{where}[{i}]") for i, a in enumerate(arrays)}
    if len(depths) != 1:
        raise ValueError(f"List depths are mismatched at {where}: the blocks must be nested "
                         "equally deep (tangentia.numpy.block)")
    return depths.pop() + 1


def _block_ndim(arrays):
    if isinstance(arrays, list):
        return builtins.max(_block_ndim(a) for a in arrays)
    return len(_aval(arrays).shape) if _is_tracer(arrays) else _np.ndim(arrays)


def block(arrays: ArrayLike | list[ArrayLike]) -> Array:
    """Assemble an array from nested lists of blocks, as ``numpy.block``: the innermost
    lists are joined along the last axis, the next ones along the one before, ..."""
    depth = _block_depth(arrays)
    nd = builtins.max(depth, _block_ndim(arrays))

    def build(x, level):
        if isinstance(x, list):
            return concatenate([build(b, level + 1) for b in x], axis=-(depth - level))
        x = _in(x, "block", "arrays")
        s = _aval(x).shape
        return reshape(x, (1,) * (nd - len(s)) + tuple(s))
    return build(arrays, 0)
