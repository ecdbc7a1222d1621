"""``jax.lax`` operations built from tangentia's primitives: slicing with
traced start indices (a negative one counts from the end, then all are clamped
into range, as in JAX), reductions, and a few
elementwise conveniences."""
from __future__ import annotations

import builtins
import functools
import operator
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

import numpy as np

from .. import core
from .. import dtypes as _dtypes
from ..primitives import contraction as C
from ..primitives import elementwise as E
from ..primitives import indexing as I
from ..primitives import misc as M
from ..primitives import reductions as R
from ..primitives import sorting as SO
from ..primitives import special as SP
from ..primitives import structural as S
from . import _stable
from .enums import DotAlgorithm, DotAlgorithmPreset, Precision

if TYPE_CHECKING:
    from collections.abc import Sequence
    from ..typing import Array, ArrayLike, DTypeLike, Shape


def _shape(x):
    return core.get_aval(x).shape


# ---------------------------------------------------------------------------
# Checks of static arguments (Python ints, at trace time; cheap).  Each error
# begins with JAX's wording, then says what tangentia expected.


def _tag(fname, text):
    return f" (tangentia: lax.{fname}: {text})"


def _four_bit_in_byte(fn: _F) -> _F:
    """``fn`` with int4/uint4 array arguments computed in int8/uint8 (NumPy's ml_dtypes
    computes most operations of them in a byte and returns the byte) and a byte result
    wrapped back to the 4-bit dtype, as XLA's 4-bit arithmetic (``dot_general``,
    ``integer_pow``: modulo 16).  Other dtypes go straight to ``fn``."""
    @functools.wraps(fn)
    def op(*args, **kwargs):
        four = None
        for a in args:
            dt = core.get_aval(a).dtype if isinstance(a, (core.Tracer, np.ndarray,
                                                            np.generic)) else None
            if dt is not None and dt.kind == "V" and dt.name in ("int4", "uint4"):
                four = dt
                break
        if four is None:
            return fn(*args, **kwargs)
        byte = np.dtype(np.int8 if four.name == "int4" else np.uint8)
        args = tuple(S.convert_element_type(a, byte) if isinstance(
            a, (core.Tracer, np.ndarray, np.generic)) and core.get_aval(a).dtype == four else a
            for a in args)
        out = fn(*args, **kwargs)
        return S.convert_element_type(out, four) if core.get_aval(out).dtype == byte else out
    return op  # type: ignore[return-value]


def _static_ints(fname, argname, values):
    """``values`` as a tuple of Python ints (``operator.index``: no silent truncation of
    ``2.5``), else JAX's TypeError."""
    values = tuple(values)
    try:
        return tuple(map(operator.index, values))
    except TypeError:
        if any(isinstance(v, core.Tracer) for v in values):
            why = (f"argument '{argname}' is traced, so the result's shape would be unknown; "
                   f"pass it as a static argument (static_argnums / static_argnames of jit) "
                   f"or take it from an array's .shape")
        else:
            why = f"argument '{argname}' must hold integers"
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{values}." + _tag(fname, why)) from None


def _static_int(fname, argname, value):
    """One static Python int, else JAX's TypeError."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer"
                        + _tag(fname, f"argument '{argname}' must be an integer, got "
                               f"{value!r}")) from None


def _list_axis(fname, axis, nd, jax_text="list assignment index out of range"):
    """``axis`` normalized into ``[0, nd)``; JAX's functions that index a Python list or
    tuple by the axis raise IndexError for one outside ``[-nd, nd)`` (``AxisError`` is both
    an IndexError and a ValueError)."""
    axis = _static_int(fname, "axis", axis)
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(jax_text + _tag(fname, f"axis {axis} is out of range for "
                                                      f"an operand of rank {nd}"))
    return axis % nd


def _bounds_axis(fname, axis, nd, argname="axis"):
    """``axis`` normalized, else NumPy's/JAX's ValueError ``axis a is out of bounds``."""
    axis = _static_int(fname, argname, axis)
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {nd}"
                         + _tag(fname, f"argument '{argname}' must be in [{-nd}, {nd})"))
    return axis % nd


def _reduction_axes(fname, operand, axes):
    """``axes`` of a lax reduction: integers in ``[0, ndim)``, no repeats (lax does not
    count from the end)."""
    aval = core.get_aval(operand)
    axes = tuple(axes)
    try:
        ints = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(f"{fname}: axes must be integers, got {axes}") from None
    nd = len(aval.shape)
    if any(not 0 <= a < nd for a in ints):
        raise np.exceptions.AxisError(f"reduction axes {ints} contains out-of-bounds indices for "
                         f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]."
                         + _tag(fname, f"axes must be in [0, {nd}); lax does not count "
                                "negative axes from the end"))
    if len(set(ints)) != len(ints):
        raise ValueError(f"duplicate value in 'axes' of reduction: {ints}"
                         + _tag(fname, "each axis once"))
    return ints


def _same_dtype(fname, x, y, tip=""):
    dx, dy = core.get_aval(x).dtype, core.get_aval(y).dtype
    if dx != dy:
        raise TypeError(f"lax.{fname} requires arguments to have the same dtypes, got "
                        f"{np.dtype(dx).name}, {np.dtype(dy).name}.{tip}"
                        + _tag(fname, "convert one of them first (lax does not promote)"))


def _check_starts(fname, operand, start_indices, sizes=None):
    shape = _shape(operand)
    if len(start_indices) != len(shape):   # (JAX's ValueError, its words first)
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {shape}) ({fname}: start_indices has "
                         f"{len(start_indices)} entries but the operand has rank {len(shape)})")
    if sizes is None:
        _check_start_dtypes(fname, start_indices)
    else:
        if len(sizes) != len(shape):   # (JAX: a ValueError of its safe_map)
            raise ValueError(f"{fname}: slice_sizes has {len(sizes)} entries but the operand has "
                             f"rank {len(shape)} (shape {shape})")
        for i, (s, d) in enumerate(zip(sizes, shape)):
            if not 0 <= s <= d:
                ours = (f"({fname}: slice_sizes[{i}] = {s} is out of range for an operand "
                        f"dimension of size {d})")
                if s < 0:
                    theirs = ("slice slice_sizes must be greater than or equal to zero, got "
                              f"slice_sizes of {tuple(sizes)}.")
                elif fname == "dynamic_update_slice":
                    theirs = ("dynamic_update_slice update shape must be smaller than operand "
                              f"shape, got update shape {tuple(sizes)} for operand shape "
                              f"{shape}.")
                else:
                    theirs = ("slice slice_sizes must be less than or equal to operand shape, "
                              f"got slice_sizes {tuple(sizes)} for operand shape {shape}.")
                raise TypeError(f"{theirs} {ours}")


def _check_start_dtypes(fname, start_indices):
    """Start indices are integer scalars, and those that are not Python ints share one
    dtype (as JAX's)."""
    kinds = set()
    for s in start_indices:
        if isinstance(s, int) and not isinstance(s, bool):  # Python ints are weakly typed
            continue
        aval = core.get_aval(s)
        dt = np.dtype(aval.dtype)
        if aval.shape:
            raise TypeError(f"start_indices arguments to {fname} must be scalars,  got indices "
                            f"{tuple(core.get_aval(i) for i in start_indices)}"
                            + _tag(fname, "each start index is a scalar"))
        if dt.kind not in "iu":
            raise TypeError(f"index arguments to {fname} must be integers of the same type, "
                            f"got: {dt.name}" + _tag(fname, "start indices must be integers"))
        kinds.add(dt.name)
    if len(kinds) > 1:
        raise TypeError(f"index arguments to {fname} must be integers of the same type, got: "
                        f"{', '.join(sorted(kinds))}"
                        + _tag(fname, "convert the start indices to one integer dtype"))


def _window_index(operand, start_indices, sizes):
    """Integer-array index (``ix_`` style) of the window at the clamped starts."""
    shape = _shape(operand)
    nd = len(shape)
    arrays = []
    for i, (s, size, d) in enumerate(zip(start_indices, sizes, shape)):
        if isinstance(s, (int, np.integer)):  # a negative start counts from the end (JAX's)
            s = int(s)   # (in Python: a uint64 past int64's range clamps, not wraps)
            s = np.int64(min(max(s + d if s < 0 else s, 0), d - size))
        elif np.dtype(core.get_aval(s).dtype).kind == "u":   # never negative: no wrap-around
            u = np.dtype(core.get_aval(s).dtype)    # (clamped first: uint64 past int64's range)
            s = S.convert_element_type(E.minimum(s, np.asarray(d - size).astype(u)), np.int64)
        else:
            s = S.convert_element_type(s, np.int64)
            s = E.select(E.lt(s, 0), E.add(s, np.int64(d)), s)
        s = E.minimum(E.maximum(s, 0), d - size)
        idx = E.add(s, np.arange(size, dtype=np.int64))
        arrays.append(S.reshape(idx, (1,) * i + (size,) + (1,) * (nd - i - 1)))
    return (I.ARRAY,) * nd, arrays


def _unwrapped(fname, operand, start_indices, allow_negative_indices):
    """The starts of JAX's ``allow_negative_indices`` (True, False or one per dimension):
    where False, a negative start is not wrapped around the dimension: a concrete one is
    JAX's ValueError, a traced one (or an array) is clamped to 0, as XLA clamps it."""
    if allow_negative_indices is True:
        return start_indices
    allow = ([allow_negative_indices] * len(start_indices)
             if isinstance(allow_negative_indices, (bool, np.bool_))
             else list(allow_negative_indices))
    out = []
    for s, d, ok in zip(start_indices, _shape(operand), allow):
        if ok:
            out.append(s)
        elif isinstance(s, (int, np.integer)):
            if s < 0:
                raise ValueError(f"Index {s} is out of bounds for dimension {d} if "
                                 f"allow_negative_indices=False ({fname}: a negative start "
                                 "is not wrapped)")
            out.append(s)
        else:
            dt = core.get_aval(s).dtype
            out.append(s if dt.kind == "u" else E.maximum(s, np.zeros((), dt)))
    return out


def dynamic_slice(operand: ArrayLike, start_indices: ArrayLike | Sequence[ArrayLike],
                  slice_sizes: Shape, *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Array:
    """``operand[s0:s0+n0, s1:s1+n1, ...]`` with traced starts, clamped so the
    window stays inside the operand (a negative start counts from the end, unless
    ``allow_negative_indices`` is False for its dimension: then it is clamped to 0)."""
    start_indices = list(start_indices)
    slice_sizes = list(_static_ints("dynamic_slice", "slice_sizes", slice_sizes))
    _check_starts("dynamic_slice", operand, start_indices)
    start_indices = _unwrapped("dynamic_slice", operand, start_indices, allow_negative_indices)
    _check_starts("dynamic_slice", operand, start_indices, slice_sizes)
    if not slice_sizes:
        return operand
    spec, arrays = _window_index(operand, start_indices, slice_sizes)
    return I.getitem(operand, spec, arrays)


def dynamic_update_slice(operand: ArrayLike, update: ArrayLike,
                         start_indices: Array | Sequence[ArrayLike], *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Array:
    """``operand`` with the window at the (clamped) starts replaced by ``update``
    (``allow_negative_indices``: as ``dynamic_slice``'s)."""
    start_indices = list(start_indices)
    _check_starts("dynamic_update_slice", operand, start_indices)
    start_indices = _unwrapped("dynamic_update_slice", operand, start_indices,
                               allow_negative_indices)
    _same_dtype("dynamic_update_slice", operand, update)
    ushape = _shape(update)
    if len(ushape) != len(_shape(operand)):
        raise TypeError("dynamic_update_slice update must have the same rank as operand, got "
                        f"update shape {ushape} for operand shape {_shape(operand)}. "
                        f"(dynamic_update_slice: update of shape {ushape} must have the rank of "
                        f"the operand)")
    _check_starts("dynamic_update_slice", operand, start_indices, list(ushape))
    if not ushape:
        return S.convert_element_type(update, core.get_aval(operand).dtype)
    spec, arrays = _window_index(operand, start_indices, list(ushape))
    return I.scatter(operand, update, spec, arrays, "set")


def dynamic_slice_in_dim(operand: ArrayLike, start_index: ArrayLike, slice_size: int,
                         axis: int = 0, *, allow_negative_indices: bool = True) -> Array:
    """``slice_size`` entries from a (traced) ``start_index`` along ``axis`` of ``operand``
    (``allow_negative_indices``: as ``dynamic_slice``'s)."""
    shape = _shape(operand)
    axis = _list_axis("dynamic_slice_in_dim", axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand: ArrayLike, index: ArrayLike, axis: int = 0,
                         keepdims: bool = True, *, allow_negative_indices: bool = True) -> Array:
    """The slice of ``operand`` at a (traced) ``index`` along ``axis``, kept as size 1 if
    ``keepdims`` (``allow_negative_indices``: as ``dynamic_slice``'s)."""
    axis = _list_axis("dynamic_index_in_dim", axis, len(_shape(operand)))
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    if keepdims:
        return out
    shape = _shape(out)
    return S.reshape(out, shape[:axis] + shape[axis + 1:])


def dynamic_update_slice_in_dim(operand: ArrayLike, update: ArrayLike, start_index: ArrayLike,
                                axis: int, *, allow_negative_indices: bool = True) -> Array:
    """``operand`` with ``update`` written from a (traced) ``start_index`` along ``axis``
    (``allow_negative_indices``: as ``dynamic_slice``'s)."""
    axis = _list_axis("dynamic_update_slice_in_dim", axis, len(_shape(operand)))
    starts = [0] * len(_shape(operand))
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand: ArrayLike, update: ArrayLike, index: ArrayLike,
                                axis: int, *, allow_negative_indices: bool = True) -> Array:
    """``operand`` with the slice at a (traced) ``index`` along ``axis`` replaced by
    ``update`` (``allow_negative_indices``: as ``dynamic_slice``'s)."""
    axis = _bounds_axis("dynamic_update_index_in_dim", axis, len(_shape(operand)))
    ushape = _shape(update)
    if len(ushape) == len(_shape(operand)) - 1:
        update = S.reshape(update, ushape[:axis] + (1,) + ushape[axis:])
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


def _check_slice(shape, start, limit, strides):
    """JAX's checks of ``lax.slice``'s static arguments, in its order."""
    fname, nd = "slice", len(shape)
    if len(start) == nd == len(limit) and (strides is None or len(strides) == nd):
        for a, b, n in zip(start, limit, shape):  # the common case: one quick pass
            if a < 0 or b > n or b < a:
                break
        else:
            if strides is None or min(strides, default=1) >= 0:
                return
    if len(start) != nd:
        raise TypeError(f"slice start_indices must have length equal to the number of dimensions "
                        f"of the operand, got indices {start} for operand shape {shape}."
                        + _tag(fname, f"one start index per operand dimension ({nd})"))
    if len(limit) != len(start):
        raise TypeError(f"slice limit_indices must have the same length as start_indices, got "
                        f"start_indices {start} and limit_indices {limit}."
                        + _tag(fname, f"one limit index per operand dimension ({nd})"))
    if any(b > n for b, n in zip(limit, shape)):
        raise TypeError(f"slice limit_indices must be less than or equal to operand shape, got "
                        f"limit_indices {limit} for operand shape {shape}."
                        + _tag(fname, "slices are not clipped to the operand"))
    if any(a < 0 for a in start):
        raise TypeError(f"slice start_indices must have every element be nonnegative, got "
                        f"{start}." + _tag(fname, "lax.slice does not count from the end"))
    if any(b < a for a, b in zip(start, limit)):
        raise TypeError(f"slice limit_indices must be greater than or equal to start_indices, "
                        f"got start_indices {start} and limit_indices {limit}."
                        + _tag(fname, "each limit index is at least its start index"))
    if strides is not None:
        if len(strides) != nd:
            raise TypeError(f"slice strides must have length equal to the number of dimensions "
                            f"of the operand, got strides {strides} for operand shape {shape}."
                            + _tag(fname, f"one stride per operand dimension ({nd})"))
        if any(s < 0 for s in strides):
            raise TypeError(f"slice strides must have every element be nonnegative, got "
                            f"{strides}." + _tag(fname, "strides are positive"))


def slice(operand: ArrayLike, start_indices: Sequence[int],  # noqa: A001 - JAX's name
          limit_indices: Sequence[int], strides: Sequence[int] | None = None) -> Array:
    shape = _shape(operand)
    start = _static_ints("slice", "start_indices", start_indices)
    limit = _static_ints("slice", "limit_indices", limit_indices)
    strides = None if strides is None else _static_ints("slice", "strides", strides)
    _check_slice(shape, start, limit, strides)
    strides = strides or (1,) * len(shape)
    spec = tuple(builtins.slice(a, b, s) for a, b, s in zip(start, limit, strides))
    return I.getitem(operand, spec)


def slice_in_dim(operand: ArrayLike, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Array:
    """``operand[..., start:limit:stride, ...]`` along ``axis`` (``jax.lax.slice_in_dim``):
    a negative start or limit counts from the end once; the bounds are then checked as
    ``lax.slice``'s (no clipping)."""
    fname = "slice_in_dim"
    shape = _shape(operand)
    axis = _list_axis(fname, axis, len(shape), "tuple index out of range")
    n = shape[axis]
    start = 0 if start_index is None else _static_int(fname, "start_index", start_index)
    limit = n if limit_index is None else _static_int(fname, "limit_index", limit_index)
    start, limit = start + n if start < 0 else start, limit + n if limit < 0 else limit
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis] = start, limit
    strides[axis] = _static_int(fname, "stride", stride)
    return slice(operand, starts, limits, strides)


def concatenate(operands: Array | Sequence[ArrayLike], dimension: int) -> Array:
    """``operands`` joined along ``dimension`` (``jax.lax.concatenate``: one dtype, no
    negative dimension)."""
    operands = list(operands)
    if operands and isinstance(dimension, (int, np.integer)):
        shapes = [_shape(o) for o in operands]
        if not 0 <= dimension < len(shapes[0]):
            raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for "
                            f"shapes {', '.join(map(str, shapes))}."
                            + _tag("concatenate", f"dimension must be in [0, {len(shapes[0])}); "
                                   "lax does not count from the end"))
        for o in operands[1:]:
            _same_dtype("concatenate", operands[0], o, " (Tip: jnp.concatenate is a similar "
                        "function that does automatic type promotion on inputs).")
    return S.concatenate(operands, dimension)


def squeeze(array: ArrayLike, dimensions: Sequence[int]) -> Array:
    """``array`` without the size-1 ``dimensions`` (negative ones count from the end)."""
    shape = _shape(array)
    nd = len(shape)
    dims = tuple(_bounds_axis("squeeze", d, nd, "dimensions") for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"dimensions are not unique: {dims}"
                         + _tag("squeeze", "name each dimension once"))
    for d in dims:
        if shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                             f"to one, got shape={shape} and dimensions={tuple(dimensions)}"
                             + _tag("squeeze", f"dimension {d} is not of size 1"))
    return S.reshape(array, tuple(n for i, n in enumerate(shape) if i not in dims))


def _shape_ints(fname, argname, shape):
    shape = tuple(shape)
    if not all(isinstance(n, (int, np.integer)) for n in shape):
        raise TypeError(f"broadcast_in_dim shape must have every element be an integer type, "
                        f"got {tuple(type(n) for n in shape)}."
                        + _tag(fname, f"argument '{argname}' must hold integers, got {shape}"))
    return tuple(int(n) for n in shape)


def broadcast(operand: ArrayLike, sizes: Sequence[int], *, out_sharding: Any = None) -> Array:
    """``operand`` broadcast with new leading dimensions ``sizes`` (``jax.lax.broadcast``;
    ``out_sharding`` changes nothing: one device)."""
    return S.broadcast_to(operand, _shape_ints("broadcast", "sizes", sizes) + _shape(operand))


def _check_broadcast_in_dim(in_shape, shape, dims):
    """JAX's shape rule of ``broadcast_in_dim``, its checks in JAX's order and words."""
    tip = _tag("broadcast_in_dim", "dimension i of the operand becomes dimension "
               "broadcast_dimensions[i] of the result (distinct dimensions), of size 1 or the "
               "target size")
    if len(in_shape) != len(dims):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to "
                        f"operand ndim; got broadcast_dimensions {dims} for operand ndim "
                        f"{len(in_shape)}." + tip)
    if len(shape) < len(in_shape):
        raise TypeError(f"broadcast_in_dim target broadcast shape must have equal or higher "
                        f"rank to the operand shape; got operand ndim {len(in_shape)} and "
                        f"target broadcast ndim {len(shape)}." + tip)
    if not set(dims) <= set(range(len(shape))):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must be a subset of output "
                        f"dimensions, got {dims} for operand ndim {len(in_shape)} and shape "
                        f"{shape}." + tip)
    if any(in_shape[i] != 1 and in_shape[i] != shape[d] for i, d in enumerate(dims)):
        raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                        f"equal to their corresponding dimensions in the target broadcast "
                        f"shape; got operand of shape {in_shape}, target broadcast shape "
                        f"{shape}, broadcast_dimensions {dims} " + tip)
    if len(set(dims)) != len(dims):   # (JAX 0.10.2 takes them in any order: a transpose)
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must be strictly increasing; "
                        f"got broadcast_dimensions {dims}" + tip)


def broadcast_in_dim(operand: ArrayLike, shape: Shape, broadcast_dimensions: Sequence[int], *,
                     out_sharding: Any = None) -> Array:
    """``operand`` broadcast to ``shape``, its dimension ``i`` becoming dimension
    ``broadcast_dimensions[i]`` of the result (``jax.lax.broadcast_in_dim``;
    ``out_sharding`` changes nothing: one device)."""
    shape = _shape_ints("broadcast_in_dim", "shape", shape)
    dims, in_shape = tuple(broadcast_dimensions), _shape(operand)
    _check_broadcast_in_dim(in_shape, shape, dims)
    if list(dims) != sorted(dims):   # out of order: the operand's axes permuted, as JAX's
        perm = tuple(int(i) for i in np.argsort(dims))
        operand = S.transpose(operand, perm)
        dims, in_shape = tuple(dims[i] for i in perm), tuple(in_shape[i] for i in perm)
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = in_shape[i]
    return S.broadcast_to(S.reshape(operand, tuple(expanded)), shape)


def full(shape: Shape, fill_value: ArrayLike, dtype: DTypeLike | None = None, *,
         sharding: Any = None) -> Array:
    """An array of ``shape`` filled with ``fill_value`` (``jax.lax.full``; ``sharding``
    changes nothing: one device)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape = _static_ints("full", "shape", shape)
    if any(d < 0 for d in shape):   # (NumPy's broadcast ValueError from inside, before)
        raise TypeError("broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{tuple(shape)}. (lax.full: argument 'shape')")
    value = fill_value
    if dtype is not None:
        value = S.convert_element_type(fill_value, np.dtype(dtype))
    elif not isinstance(fill_value, core.Tracer):
        value = np.asarray(fill_value)
    if _shape(value) != ():
        raise TypeError(f"full: fill_value must be a scalar, got shape {_shape(value)}")
    return S.broadcast_to(value, shape)


def full_like(x: Any, fill_value: ArrayLike, dtype: DTypeLike | None = None,
              shape: Shape | None = None, sharding: Any = None) -> Array:
    """``full`` with the shape and dtype of ``x`` unless given (``jax.lax.full_like``;
    ``sharding`` changes nothing: one device)."""
    a = core.get_aval(x)
    return full(a.shape if shape is None else shape, fill_value,
                a.dtype if dtype is None else dtype)


def expand_dims(array: ArrayLike, dimensions: Sequence[int]) -> Array:
    """``array`` with size-1 dimensions inserted at ``dimensions``, positions in the result
    (a negative one counts from the end of the result, as ``jax.lax.expand_dims``)."""
    shape = list(_shape(array))
    nd = len(shape) + len(dimensions)
    dims = [_bounds_axis("expand_dims", d, nd, "dimensions") for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dims)}"
                         + _tag("expand_dims", "name each new dimension once"))
    for d in sorted(dims):
        shape.insert(d, 1)
    return S.reshape(array, tuple(shape))


def _in_dtype_of(operand, out):
    """``out`` (a sum or product, which NumPy widens for small integers) in
    ``operand``'s dtype, as lax's reductions keep it: wrapping modulo 2**bits gives the
    same integer as accumulating in the narrow type."""
    dt = core.get_aval(operand).dtype
    return out if core.get_aval(out).dtype == dt else S.convert_element_type(out, dt)


def reduce_sum(operand: ArrayLike, axes: Sequence[int], *, out_sharding: Any = None) -> Array:
    return _in_dtype_of(operand, R.reduce_sum(operand, _reduction_axes("reduce_sum", operand,
                                                                       axes)))


@_four_bit_in_byte
def reduce_max(operand: ArrayLike, axes: Sequence[int]) -> Array:
    return R.reduce_max(operand, _reduction_axes("reduce_max", operand, axes))


@_four_bit_in_byte
def reduce_min(operand: ArrayLike, axes: Sequence[int]) -> Array:
    return R.reduce_min(operand, _reduction_axes("reduce_min", operand, axes))


def reduce_prod(operand: ArrayLike, axes: Sequence[int]) -> Array:
    return _in_dtype_of(operand, R.reduce_prod(operand, _reduction_axes("reduce_prod", operand,
                                                                        axes)))


def _cumulative_axis(fname, operand, axis):
    """The axis of a lax cumulative reduction: in ``[0, ndim)`` (lax does not count from
    the end)."""
    shape = _shape(operand)
    if isinstance(axis, (float, np.floating)) and float(axis).is_integer():
        axis = int(axis)  # JAX's cumulative reductions accept axis=1.0
    axis = _static_int(fname, "axis", axis)
    if axis < 0:
        raise ValueError("XLA operations do not allow negative axes"
                         + _tag(fname, f"axis {axis} must be in [0, {len(shape)})"))
    if axis >= len(shape):
        raise ValueError(f"axis {axis} is out of bounds for array of shape {shape}"
                         + _tag(fname, f"axis must be in [0, {len(shape)})"))
    return axis


def _operand_dtype(out: Array, operand: Array) -> Array:
    """``out`` in an integer ``operand``'s dtype: NumPy's accumulate widens small integers
    where JAX's lax.cumsum/cumprod keep the operand's dtype (bools, which JAX rejects,
    keep NumPy's int64)."""
    dt = core.get_aval(operand).dtype
    if core.get_aval(out).dtype == dt or _dtypes.kind(dt) not in "iu":
        return out
    return S.convert_element_type(out, dt)


def cumsum(operand: Array, axis: int = 0, reverse: bool = False) -> Array:
    """Running sums along ``axis`` (``jax.lax.cumsum``), in ``operand``'s dtype; float16 and
    bfloat16 accumulate in float32, as XLA's CPU backend (NumPy's float16 running sum
    rounds every partial sum: 14 ULPs off JAX's after 2000 terms, 2 in float32)."""
    axis = _cumulative_axis("cumsum", operand, axis)
    dt = np.dtype(core.get_aval(operand).dtype)
    if dt.name in ("float16", "bfloat16"):
        wide = R.cumsum(S.convert_element_type(operand, np.dtype(np.float32)), axis, reverse)
        return S.convert_element_type(wide, dt)
    return _operand_dtype(R.cumsum(operand, axis, reverse), operand)


def cumprod(operand: Array, axis: int = 0, reverse: bool = False) -> Array:
    out = M.cumprod(operand, _cumulative_axis("cumprod", operand, axis), reverse)
    return _operand_dtype(out, operand)


@_four_bit_in_byte
def cummax(operand: Array, axis: int = 0, reverse: bool = False) -> Array:
    return M.cummax(operand, _cumulative_axis("cummax", operand, axis), reverse)


@_four_bit_in_byte
def cummin(operand: Array, axis: int = 0, reverse: bool = False) -> Array:
    return M.cummin(operand, _cumulative_axis("cummin", operand, axis), reverse)


def reshape(operand: ArrayLike, new_sizes: Shape, dimensions: Sequence[int] | None = None, *,
            out_sharding: Any = None) -> Array:
    """``operand`` with the shape ``new_sizes`` (``jax.lax.reshape``: sizes are nonnegative
    integers, no ``-1``); ``dimensions``, a permutation of its axes, is applied first
    (JAX's: ``reshape(transpose(operand, dimensions), new_sizes)``); ``out_sharding``
    changes nothing (one device)."""
    x = operand
    sizes = _static_ints("reshape", "new_sizes", new_sizes)
    if any(n < 0 for n in sizes):
        raise TypeError(f"reshape new_sizes must all be positive, got {sizes}."
                        + _tag("reshape", "lax.reshape does not infer a -1 size"))
    if dimensions is not None:
        x = transpose(x, dimensions)
    return S.reshape(x, sizes)


def transpose(operand: ArrayLike, permutation: Sequence[int] | Array) -> Array:
    """``operand`` with its dimensions permuted (``jax.lax.transpose``: ``permutation``
    holds each of ``0 .. ndim - 1`` once)."""
    x = operand
    perm = tuple(_static_int("transpose", "permutation", p) for p in permutation)
    shape = _shape(x)
    if sorted(perm) != list(range(len(shape))):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {perm} for operand shape {shape}."
                        + _tag("transpose", f"each of 0..{len(shape) - 1} once"))
    return S.transpose(x, perm)


def convert_element_type(operand: ArrayLike, new_dtype: DTypeLike) -> Array:
    """``operand`` converted to ``new_dtype`` (``jax.lax.convert_element_type``: floats to
    integers truncate and saturate, NaN to 0; complex to real keeps the real part)."""
    if new_dtype is None:   # (JAX's ValueError; it returned the operand unchanged)
        raise ValueError("dtype must be specified. (lax.convert_element_type: argument "
                         "'new_dtype' is None)")
    return S.convert_element_type(operand, new_dtype)


def select(pred: ArrayLike, on_true: ArrayLike, on_false: ArrayLike) -> Array:
    """``on_true`` where the boolean ``pred`` holds, else ``on_false`` (``jax.lax.select``:
    the three of one shape, ``pred`` possibly a scalar; the two cases of one dtype)."""
    return E.select_p.bind(pred, on_true, on_false)


def sort(operand: Array | Sequence[Array], dimension: int = -1, is_stable: bool = True,
         num_keys: int = 1) -> Array | tuple[Array, ...]:
    """``operand`` sorted along ``dimension``; a sequence of operands is sorted
    together by its first ``num_keys`` (lexicographically, stably), as ``jax.lax.sort``."""
    if not isinstance(operand, (tuple, list)):
        if num_keys != 1:
            raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand."
                             + _tag("sort", "pass a tuple of operands to sort by several keys"))
        return SO.sort(operand, _static_int("sort", "dimension", dimension))
    ops = list(operand)
    if not 1 <= num_keys <= len(ops):
        raise ValueError(f"sort: num_keys must be between 1 and the number of operands "
                         f"({len(ops)}), got {num_keys}")
    shapes = [_shape(o) for o in ops]
    if any(sh != shapes[0] for sh in shapes[1:]):
        raise TypeError("Arguments to sort must have equal shapes, got: "
                        + " ".join(str(sh) for sh in shapes)
                        + _tag("sort", "every operand is sorted by the keys' order, so each has "
                                       "the keys' shape"))
    axis = _bounds_axis("sort", dimension, len(_shape(ops[0])), "dimension")
    order = None
    for key in reversed(ops[:num_keys]):  # least significant key first, stable sorts
        k = key if order is None else SO.take_along_axis(key, order, axis)
        step = SO.argsort(k, axis)
        order = step if order is None else SO.take_along_axis(order, step, axis)
    return tuple(SO.take_along_axis(o, order, axis) for o in ops)


def _accumulate_in(preferred: DTypeLike | None, *xs: Any) -> tuple[Any, ...]:
    """``xs`` converted to ``preferred`` when it holds every value of theirs exactly (int8
    to int32 or float32, complex64 to complex128, ...): XLA accumulates a contraction in
    its preferred_element_type, so computing in the operands' dtype and converting the
    result after would overflow (int8) or round (complex64) where JAX's does not."""
    if preferred is None:
        return xs
    want = np.dtype(preferred)
    out = []
    for x in xs:
        dt = np.dtype(core.get_aval(x).dtype)
        if dt != want and np.result_type(dt, want) == want:
            x = S.convert_element_type(x, want)
        out.append(x)
    return tuple(out)


def _canonical_precision(precision: Any) -> Any:
    """``precision`` as JAX keeps it: None, a pair of ``lax.Precision`` values (one
    value or name applies to both operands) or a ``DotAlgorithm``/``DotAlgorithmPreset``;
    JAX's ValueError for anything else."""
    if precision is None or isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    try:
        if isinstance(precision, (str, Precision)):
            p = Precision(precision)
            return (p, p)
        if (isinstance(precision, (tuple, list)) and len(precision) == 2
                and all(isinstance(q, (str, Precision)) for q in precision)):
            return (Precision(precision[0]), Precision(precision[1]))
    except ValueError:
        pass
    if isinstance(precision, str) and precision.upper() in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision.upper()]
    raise ValueError(
        "Precision argument must be one of:\n- None,\n- a string in ['highest', 'float32', "
        "'high', 'bfloat16_3x', 'tensorfloat32', 'default', 'bfloat16', 'fastest', None],\n"
        "- a lax.Precision value,\n- a tuple of two lax.Precision values or strings,\n- a "
        "lax.DotAlgorithmPreset or the name of one of these presets, or\n- a lax.DotAlgorithm "
        f"value;\nbut got {precision}.")


@_four_bit_in_byte
def dot_general(lhs: ArrayLike, rhs: ArrayLike, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: DTypeLike | None = None, *, out_sharding=None) -> Array:
    """General contraction (``jax.lax.dot_general``).  ``precision`` changes nothing on
    the CPU but is kept, as JAX's: staged programs and the products of derivatives and
    batching show it; ``preferred_element_type`` sets the result dtype (and the
    accumulation's, when it is at least as wide as the operands')."""
    precision = _canonical_precision(precision)
    lhs, rhs = _accumulate_in(preferred_element_type, lhs, rhs)
    out = C.dot_general(lhs, rhs, dimension_numbers, precision)
    if preferred_element_type is not None:
        out = S.convert_element_type(out, np.dtype(preferred_element_type))
    return out


def dot(lhs: ArrayLike, rhs: ArrayLike, *, dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: DTypeLike | None = None, out_sharding: Any = None) -> Array:
    """The vector/matrix product of ``lhs`` and ``rhs`` (``jax.lax.dot``): the last axis of
    ``lhs`` contracted with the first of ``rhs``, or ``dot_general``'s
    ``dimension_numbers`` when given.  ``precision`` and ``preferred_element_type`` are
    keyword-only, as JAX's (a third positional argument is JAX's TypeError ``dot() takes 2
    positional arguments but 3 were given``); ``out_sharding`` changes nothing."""
    if dimension_numbers is None:
        ln = len(_shape(lhs))
        dimension_numbers = (((ln - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision,
                       preferred_element_type=preferred_element_type)


@_four_bit_in_byte
def clamp(min: ArrayLike, x: ArrayLike, max: ArrayLike) -> Array:  # noqa: A002 - JAX's signature
    """``x`` clipped elementwise to ``[min, max]`` (``jax.lax.clamp``): ``min`` and ``max`` are
    scalars or of ``x``'s shape, all three of one dtype (JAX's TypeErrors otherwise).

    JAX's numbers: ``min(max(x, lo), hi)``, and for complex operands XLA's rule, which
    compares real parts only (``lo`` where ``lo.real >= x.real``, then ``hi`` where the
    result's real part is not ``<= hi.real``).  JAX's derivatives: ``x``'s tangent where
    ``lo < x < hi``, ``lo``'s where ``x < lo < hi``, ``hi``'s where ``hi < x``, and none at
    ties (``jnp.clip`` splits ties in halves; ``lax.clamp`` gave that too)."""
    avals = [core.get_aval(v) for v in (min, x, max)]
    if len({a.dtype for a in avals}) != 1:
        raise TypeError("lax.clamp requires arguments to have the same dtypes, got "
                        + ", ".join(np.dtype(a.dtype).name for a in avals) + "."
                        + _tag("clamp", "convert the bounds to the operand's dtype first "
                               "(lax does not promote)"))
    for name, a in (("min", avals[0]), ("max", avals[2])):
        if a.shape and a.shape != avals[1].shape:
            raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape == "
                            f"(), got {name}.shape={a.shape}, operand.shape={avals[1].shape}."
                            + _tag("clamp", f"'{name}' must be a scalar or of x's shape"))
    if avals[1].dtype.kind == "c":
        m = E.select(E.ge(E.real(min), E.real(x)), min, x)
        return E.select(E.le(E.real(m), E.real(max)), m, max)
    out = E.minimum(E.maximum(x, min), max)
    if not any(isinstance(v, core.Tracer) for v in (min, x, max)):
        return out   # (concrete values: the same numbers, without the selects below)
    # the derivative rules by selects: each argument where it is strictly the result; at
    # ties and NaN, the value with no derivative
    x_in = E.and_p.bind(E.gt(x, min), E.lt(x, max))
    lo_in = E.and_p.bind(E.gt(min, x), E.lt(min, max))
    hi_in = E.and_p.bind(E.lt(max, x), E.eq(out, max))   # (not where a NaN made out NaN)
    out = E.select(hi_in, max, S.stop_gradient(out))
    return E.select(x_in, x, E.select(lo_in, min, out))


def rsqrt(x: ArrayLike, *, accuracy: Any = None) -> Array:
    """``1 / sqrt(x)`` (``jax.lax.rsqrt``); ``accuracy`` (JAX's) is accepted and ignored."""
    return E.div(1.0, E.sqrt(x))


def logistic(x: ArrayLike, *, accuracy: Any = None) -> Array:
    """``1 / (1 + exp(-x))`` (``jax.lax.logistic``); ``accuracy`` (JAX's) is accepted and
    ignored."""
    return _stable.logistic(x)


_F = TypeVar("_F", bound=Callable[..., Any])


def _in_operand_dtype(fn: _F) -> _F:
    """``fn`` whose floating result has its (last) floating operand's dtype, as JAX's lax
    functions: SciPy's kernels behind tangentia.scipy.special compute float16 and bfloat16
    in float32/float64 and return that (lax.lgamma, erf, bessel_i0e, ...)."""
    @functools.wraps(fn)
    def op(*args, **kwargs):
        out = fn(*args, **kwargs)
        dt = core.get_aval(args[-1]).dtype if args else None
        odt = core.get_aval(out).dtype
        if dt is not None and odt != dt and _dtypes.is_inexact(dt) and _dtypes.is_inexact(odt):
            out = S.convert_element_type(out, dt)
        return out
    return cast("_F", op)


def erf(x: ArrayLike) -> Array:
    return _in_operand_dtype(SP.erf)(x)


def square(x: ArrayLike) -> Array:
    return E.integer_pow(x, 2)


def pow(x: ArrayLike, y: ArrayLike) -> Array:  # noqa: A001 - JAX's name
    """``x ** y`` (``jax.lax.pow``): ``x`` floating or complex, ``y`` of any numeric dtype
    (integers and booleans at position 0 are JAX's TypeError; ``tangentia.numpy.power``
    takes them)."""
    for pos, (v, accepted) in enumerate(((x, "floating, complexfloating"),
                                         (y, "integer, floating, complexfloating"))):
        dt = np.dtype(core.get_aval(v).dtype)
        kind = _dtypes.kind(dt)
        if kind == "b" or (pos == 0 and kind in "iu"):
            raise TypeError(f"pow does not accept dtype {dt.name} at position {pos}. Accepted "
                            f"dtypes at position {pos} are subtypes of {accepted}."
                            + _tag("pow", "tnp.power takes integer bases"))
    out = E.power(x, y)
    xd = core.get_aval(x).dtype
    if _dtypes.kind(core.get_aval(y).dtype) in "iu" and core.get_aval(out).dtype != xd \
            and not isinstance(x, (int, float, complex)):
        out = S.convert_element_type(out, xd)   # an integer exponent keeps x's dtype (JAX's)
    return out
