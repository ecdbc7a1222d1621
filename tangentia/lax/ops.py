"""``jax.lax`` operations built from tangentia's primitives: slicing with
traced start indices (a negative one counts from the end, then all are clamped
into range, as in JAX), reductions, and a few
elementwise conveniences."""
from __future__ import annotations

import builtins

import numpy as np

from .. import core
from ..primitives import contraction as C
from ..primitives import elementwise as E
from ..primitives import indexing as I
from ..primitives import misc as M
from ..primitives import reductions as R
from ..primitives import sorting as SO
from ..primitives import special as SP
from ..primitives import structural as S


def _shape(x):
    return core.get_aval(x).shape


def _check_starts(fname, operand, start_indices, sizes=None):
    shape = _shape(operand)
    if len(start_indices) != len(shape):
        raise TypeError(f"{fname}: start_indices has {len(start_indices)} entries but the operand "
                        f"has rank {len(shape)} (shape {shape})")
    if sizes is not None:
        if len(sizes) != len(shape):
            raise TypeError(f"{fname}: slice_sizes has {len(sizes)} entries but the operand has "
                            f"rank {len(shape)} (shape {shape})")
        for i, (s, d) in enumerate(zip(sizes, shape)):
            if not 0 <= s <= d:
                raise TypeError(f"{fname}: slice_sizes[{i}] = {s} is out of range for an operand "
                                f"dimension of size {d} (shape {shape})")


def _window_index(operand, start_indices, sizes):
    """Integer-array index (``ix_`` style) of the window at the clamped starts."""
    shape = _shape(operand)
    nd = len(shape)
    arrays = []
    for i, (s, size, d) in enumerate(zip(start_indices, sizes, shape)):
        if isinstance(s, (int, np.integer)):  # a negative start counts from the end (JAX's)
            s = np.int64(s + d if s < 0 else s)
        else:
            s = S.convert_element_type(s, np.int64)
            s = E.select(E.lt(s, 0), E.add(s, np.int64(d)), s)
        s = E.minimum(E.maximum(s, 0), d - size)
        idx = E.add(s, np.arange(size, dtype=np.int64))
        arrays.append(S.reshape(idx, (1,) * i + (size,) + (1,) * (nd - i - 1)))
    return (I.ARRAY,) * nd, arrays


def dynamic_slice(operand, start_indices, slice_sizes):
    """``operand[s0:s0+n0, s1:s1+n1, ...]`` with traced starts, clamped so the
    window stays inside the operand."""
    start_indices, slice_sizes = list(start_indices), [int(n) for n in slice_sizes]
    _check_starts("dynamic_slice", operand, start_indices, slice_sizes)
    if not slice_sizes:
        return operand
    spec, arrays = _window_index(operand, start_indices, slice_sizes)
    return I.getitem(operand, spec, arrays)


def dynamic_update_slice(operand, update, start_indices):
    """``operand`` with the window at the (clamped) starts replaced by ``update``."""
    start_indices = list(start_indices)
    _check_starts("dynamic_update_slice", operand, start_indices)
    ushape = _shape(update)
    if len(ushape) != len(_shape(operand)):
        raise TypeError(f"dynamic_update_slice: update of shape {ushape} must have the rank of "
                        f"the operand (shape {_shape(operand)})")
    _check_starts("dynamic_update_slice", operand, start_indices, list(ushape))
    if not ushape:
        return S.convert_element_type(update, core.get_aval(operand).dtype)
    spec, arrays = _window_index(operand, start_indices, list(ushape))
    return I.scatter(operand, update, spec, arrays, "set")


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    shape = _shape(operand)
    axis %= len(shape)
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    if keepdims:
        return out
    shape = _shape(out)
    axis %= len(shape)
    return S.reshape(out, shape[:axis] + shape[axis + 1:])


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    axis %= len(_shape(operand))
    starts = [0] * len(_shape(operand))
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    axis %= len(_shape(operand))
    ushape = _shape(update)
    if len(ushape) == len(_shape(operand)) - 1:
        update = S.reshape(update, ushape[:axis] + (1,) + ushape[axis:])
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 - JAX's name
    nd = len(_shape(operand))
    strides = strides or (1,) * nd
    spec = tuple(builtins.slice(a, b, s) for a, b, s in zip(start_indices, limit_indices, strides))
    return I.getitem(operand, spec)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    shape = _shape(operand)
    axis %= len(shape)
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis] = 0 if start_index is None else start_index
    limits[axis] = shape[axis] if limit_index is None else limit_index
    strides[axis] = stride
    return slice(operand, starts, limits, strides)


def concatenate(operands, dimension):
    return S.concatenate(list(operands), dimension)


def squeeze(array, dimensions):
    shape = _shape(array)
    dims = {d % len(shape) for d in dimensions}
    for d in dims:
        if shape[d] != 1:
            raise ValueError(f"squeeze: dimension {d} of shape {shape} is not of size 1")
    return S.reshape(array, tuple(n for i, n in enumerate(shape) if i not in dims))


def broadcast(operand, sizes):
    """``operand`` broadcast with new leading dimensions ``sizes`` (``jax.lax.broadcast``)."""
    return S.broadcast_to(operand, tuple(sizes) + _shape(operand))


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """``operand`` broadcast to ``shape``, its dimension ``i`` becoming dimension
    ``broadcast_dimensions[i]`` of the result (``jax.lax.broadcast_in_dim``)."""
    shape, dims, in_shape = tuple(shape), tuple(broadcast_dimensions), _shape(operand)
    if len(dims) != len(in_shape) or list(dims) != sorted(set(dims)) or \
            any(not 0 <= d < len(shape) or in_shape[i] not in (1, shape[d])
                for i, d in enumerate(dims)):
        raise TypeError(f"broadcast_in_dim: operand of shape {in_shape} cannot be broadcast to "
                        f"{shape} with broadcast_dimensions={dims}: one strictly increasing "
                        "dimension per operand dimension, of size 1 or the target size")
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = in_shape[i]
    return S.broadcast_to(S.reshape(operand, tuple(expanded)), shape)


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (``jax.lax.full``)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    value = fill_value
    if dtype is not None:
        value = S.convert_element_type(fill_value, np.dtype(dtype))
    elif not isinstance(fill_value, core.Tracer):
        value = np.asarray(fill_value)
    if _shape(value) != ():
        raise TypeError(f"full: fill_value must be a scalar, got shape {_shape(value)}")
    return S.broadcast_to(value, shape)


def full_like(x, fill_value, dtype=None, shape=None):
    """``full`` with the shape and dtype of ``x`` unless given (``jax.lax.full_like``)."""
    a = core.get_aval(x)
    return full(a.shape if shape is None else shape, fill_value,
                a.dtype if dtype is None else dtype)


def expand_dims(array, dimensions):
    shape = list(_shape(array))
    for d in sorted(dimensions):
        shape.insert(d if d >= 0 else len(shape) + d + 1, 1)
    return S.reshape(array, tuple(shape))


def reduce_sum(operand, axes):
    return R.reduce_sum(operand, tuple(axes))


def reduce_max(operand, axes):
    return R.reduce_max(operand, tuple(axes))


def reduce_min(operand, axes):
    return R.reduce_min(operand, tuple(axes))


def reduce_prod(operand, axes):
    return R.reduce_prod(operand, tuple(axes))


def cumprod(operand, axis=0, reverse=False):
    return M.cumprod(operand, axis % len(_shape(operand)), reverse)


def cummax(operand, axis=0, reverse=False):
    return M.cummax(operand, axis % len(_shape(operand)), reverse)


def cummin(operand, axis=0, reverse=False):
    return M.cummin(operand, axis % len(_shape(operand)), reverse)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """``operand`` sorted along ``dimension``; a sequence of operands is sorted
    together by its first ``num_keys`` (lexicographically, stably), as ``jax.lax.sort``."""
    if not isinstance(operand, (tuple, list)):
        return SO.sort(operand, dimension)
    ops = list(operand)
    if not 1 <= num_keys <= len(ops):
        raise ValueError(f"sort: num_keys must be between 1 and the number of operands "
                         f"({len(ops)}), got {num_keys}")
    axis = dimension % len(_shape(ops[0]))
    order = None
    for key in reversed(ops[:num_keys]):  # least significant key first, stable sorts
        k = key if order is None else SO.take_along_axis(key, order, axis)
        step = SO.argsort(k, axis)
        order = step if order is None else SO.take_along_axis(order, step, axis)
    return tuple(SO.take_along_axis(o, order, axis) for o in ops)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                out_sharding=None):
    """General contraction (``jax.lax.dot_general``); ``precision`` is accepted and
    ignored, ``preferred_element_type`` sets the result dtype."""
    out = C.dot_general(lhs, rhs, dimension_numbers)
    if preferred_element_type is not None:
        out = S.convert_element_type(out, np.dtype(preferred_element_type))
    return out


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    ln = len(_shape(lhs))
    return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())),
                       preferred_element_type=preferred_element_type)


def clamp(min, x, max):  # noqa: A002 - JAX's signature
    return E.minimum(E.maximum(x, min), max)


def rsqrt(x):
    return E.div(1.0, E.sqrt(x))


def logistic(x):
    from ..scipy.special import expit
    return expit(x)


def erf(x):
    return SP.erf(x)


def square(x):
    return E.integer_pow(x, 2)


def pow(x, y):  # noqa: A001 - JAX's name
    return E.power(x, y)
