"""XLA's general ``gather`` and ``scatter`` (``jax.lax.gather``,
``scatter``/``scatter_add``/``scatter_sub``/``scatter_mul``/``scatter_min``/
``scatter_max``/``scatter_apply``) with JAX's dimension numbers and modes.

Both are expressed with the indexing primitives: every operand dimension gets
an integer index array (a window start from ``start_indices``, plus the
offsets inside the window), so one ``getitem`` gathers all windows and one
``scatter`` writes them; both differentiate and batch as those do.  Modes, as
JAX's: gathers default to clamping windows into the operand
(``PROMISE_IN_BOUNDS``/``CLIP``) and ``FILL_OR_DROP`` fills whole out-of-bounds
windows with ``fill_value``; scatters default to ``FILL_OR_DROP``, which drops
out-of-bounds windows (sent to a spare slot past the end of the flattened
operand), as ``PROMISE_IN_BOUNDS`` does (XLA's scatter); ``CLIP`` clamps them.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..primitives import elementwise as E
from ..primitives import indexing as I
from ..primitives import reductions as R
from ..primitives import structural as S
from .enums import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from ..typing import Array, ArrayLike, Shape


def _array(x):
    return x if isinstance(x, core.Tracer) else np.asarray(x)


def _shape(x):
    return core.get_aval(x).shape


# ---------------------------------------------------------------------------
# Checks of the static dimension numbers (Python ints, at trace time), with
# XLA's/JAX's wording first.


def _tag(fname, text):
    return f" (tangentia: lax.{fname}: {text})"


def _index_map(fname, op, name, dims, rank):
    """``start_index_map``/``scatter_dims_to_operand_dims``: operand dimensions, once each."""
    dims = tuple(int(d) for d in dims)
    for i, d in enumerate(dims):
        if not 0 <= d < rank:
            what = "start_index_map" if op == "gather" else \
                "scatter_dims_to_operand_dims mapping"
            raise TypeError(f"Invalid {what}; domain is [0, {rank}), got: {i}->{d}."
                            + _tag(fname, f"{name} holds operand dimensions, which do not "
                                   "count from the end"))
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name} in {op} op must not repeat; got: {dims}."
                        + _tag(fname, f"{name} names each operand dimension once"))
    return dims


def _integer_indices(fname, idx):
    if np.dtype(core.get_aval(idx).dtype).kind not in "iu":
        raise ValueError("indices must have an integer type"
                         + _tag(fname, f"got {np.dtype(core.get_aval(idx).dtype).name} indices"))


def _sorted(fname, op, name, dims):
    if list(dims) != sorted(dims):
        raise TypeError(f"{name} in {op} op must be sorted; got {dims}"
                        + _tag(fname, f"{name} must be increasing"))


def _once(fname, op, name, dims):
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name} in {op} op must not repeat; got: {dims}."
                        + _tag(fname, f"{name} names each dimension once"))


def _in_range(fname, op, name, dims, rank):
    for d in dims:
        if not 0 <= d < rank:
            raise TypeError(f"Invalid {name} set in {op} op; valid range is [0, {rank}); got: "
                            f"{d}." + _tag(fname, "dimension numbers do not count from the end"))


def _disjoint(fname, op, name1, dims1, name2, dims2):
    if set(dims1) & set(dims2):
        raise TypeError(f"{name1} and {name2} in {op} op must be disjoint; got: {dims1} and "
                        f"{dims2}." + _tag(fname, "an operand dimension has one role"))


def _batch_shapes(fname, op, shape, ishape, operand_batching, indices_batching, indices_name):
    """The indices' batching dimensions, checked against the operand's (XLA's order)."""
    Op = op.capitalize()
    _once(fname, op, indices_name, indices_batching)
    _in_range(fname, op, indices_name, indices_batching, len(ishape))
    if len(ishape) - 1 in indices_batching:
        raise TypeError(f"{Op} op cannot have the index vector dimension as a batching "
                        f"dimension; got {indices_batching}."
                        + _tag(fname, "the last dimension of the indices holds the index "
                               "vectors"))
    if len(operand_batching) != len(indices_batching):
        space = "" if op == "gather" else " "   # JAX's gather message lacks it
        raise TypeError(f"{Op} op requires equal numbers of operand_batching_dims and "
                        f"{indices_name}, got {operand_batching} and{space}{indices_batching}."
                        + _tag(fname, "the batching dimensions pair up"))
    ob = tuple(shape[d] for d in operand_batching)
    ib = tuple(ishape[d] for d in indices_batching)
    if ob != ib:
        raise TypeError(f"{Op} op requires operand batching dimensions and indices batching "
                        f"dimensions to have the same shape, got {ob} and {ib}."
                        + _tag(fname, "paired batching dimensions have one size"))
    return ob


def _check_gather(fname, shape, idx, dn, sizes):
    """XLA's checks of a gather (ValidateGatherDimensions, then the slice sizes), in its
    order and with its (JAX's) words: static, at trace time."""
    rank, ishape = len(shape), _shape(idx)
    _integer_indices(fname, idx)
    if not ishape:
        raise TypeError("Gather index leaf dimension must be within [0, rank(indices) + 1). "
                        "rank(indices) is 0 and gather index leaf dimension is -1."
                        + _tag(fname, "the indices' last dimension holds the index vectors"))
    offset_dims = tuple(int(d) for d in dn.offset_dims)
    collapsed = tuple(int(d) for d in dn.collapsed_slice_dims)
    start_index_map = tuple(int(d) for d in dn.start_index_map)
    operand_batching = tuple(int(d) for d in dn.operand_batching_dims)
    indices_batching = tuple(int(d) for d in dn.start_indices_batching_dims)
    _sorted(fname, "gather", "offset_dims", offset_dims)
    _once(fname, "gather", "offset_dims", offset_dims)
    out_rank = len(offset_dims) + len(ishape) - 1
    for i, d in enumerate(offset_dims):
        if not 0 <= d < out_rank:
            raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, but "
                            f"should have been in [0, {out_rank})"
                            + _tag(fname, "dimension numbers do not count from the end"))
    if len(start_index_map) != ishape[-1]:
        raise TypeError(f"Gather op has {len(start_index_map)} elements in start_index_map and "
                        f"the bound of dimension index_vector_dim={len(ishape) - 1} of indices "
                        f"is {ishape[-1]}. These two numbers must be equal."
                        + _tag(fname, "one start_index_map entry per index vector element"))
    _index_map(fname, "gather", "start_index_map", start_index_map, rank)
    _sorted(fname, "gather", "collapsed_slice_dims", collapsed)
    _in_range(fname, "gather", "collapsed_slice_dims", collapsed, rank)
    _once(fname, "gather", "collapsed_slice_dims", collapsed)
    _once(fname, "gather", "operand_batching_dims", operand_batching)
    _sorted(fname, "gather", "operand_batching_dims", operand_batching)
    _in_range(fname, "gather", "operand_batching_dims", operand_batching, rank)
    _disjoint(fname, "gather", "collapsed_slice_dims", collapsed, "operand_batching_dims",
              operand_batching)
    _disjoint(fname, "gather", "start_index_map", start_index_map, "operand_batching_dims",
              operand_batching)
    _batch_shapes(fname, "gather", shape, ishape, operand_batching, indices_batching,
                  "start_indices_batching_dims")
    if len(sizes) != rank:
        raise TypeError(f"Gather op must have one slice size for every input dimension; got: "
                        f"len(slice_sizes)={len(sizes)}, input_shape.rank={rank}"
                        + _tag(fname, "slice_sizes has one entry per operand dimension"))
    if len(sizes) != len(offset_dims) + len(collapsed) + len(operand_batching):
        raise TypeError(f"All components of the offset index in a gather op must either be a "
                        f"offset dimension or explicitly collapsed/batching; got "
                        f"len(slice_sizes)={len(sizes)}, output_slice_sizes={offset_dims}, "
                        f"collapsed_slice_dims={collapsed}, operand_batching_dims="
                        f"{operand_batching}."
                        + _tag(fname, "each operand dimension is an offset, collapsed or "
                               "batching dimension"))
    if int(np.prod(ishape, dtype=np.int64)):   # no windows are taken from no indices
        for i, (size, n) in enumerate(zip(sizes, shape)):
            if not 0 <= size <= n:
                raise TypeError(f"Slice size at index {i} in gather op is out of range, must "
                                f"be within [0, {n} + 1), got {size}."
                                + _tag(fname, "windows lie inside the operand"))
    for i, d in enumerate(collapsed):
        if sizes[d] != 1:
            raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound "
                            f"is {sizes[d]} for index {d} at position {i}."
                            + _tag(fname, "a collapsed dimension is a window of one"))
    for i, d in enumerate(operand_batching):
        if sizes[d] > 1:
            raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, "
                            f"but bound is {sizes[d]} for index {d} at position {i}."
                            + _tag(fname, "a batching dimension is a window of one"))


def _check_scatter(fname, x, idx, upd, dn):
    """XLA's checks of a scatter (ValidateScatterDimensions), in its order and with its
    (JAX's) words: static, at trace time."""
    shape, ishape, ushape = _shape(x), _shape(idx), _shape(upd)
    _integer_indices(fname, idx)
    if not ishape:
        raise TypeError("Scatter index leaf dimension must be within [0, rank(indices) + 1). "
                        "rank(indices) is 0 and scatter index leaf dimension is -1."
                        + _tag(fname, "the indices' last dimension holds the index vectors"))
    window = tuple(int(d) for d in dn.update_window_dims)
    inserted = tuple(int(d) for d in dn.inserted_window_dims)
    operand_batching = tuple(int(d) for d in dn.operand_batching_dims)
    indices_batching = tuple(int(d) for d in dn.scatter_indices_batching_dims)
    to_operand = tuple(int(d) for d in dn.scatter_dims_to_operand_dims)
    expected = len(ishape) - 1 + len(window)
    if len(ushape) != expected:
        raise TypeError(f"Updates tensor must be of rank {expected}; got {len(ushape)}."
                        + _tag(fname, "updates have the indices' batch dimensions and the "
                               "update_window_dims"))
    for name, dims, r in (("update_window_dims", window, len(ushape)),
                          ("inserted_window_dims", inserted, len(shape))):
        _sorted(fname, "scatter", name, dims)
        _once(fname, "scatter", name, dims)
        _in_range(fname, "scatter", name, dims, r)
    _sorted(fname, "scatter", "operand_batching_dims", operand_batching)
    _once(fname, "scatter", "operand_batching_dims", operand_batching)
    _in_range(fname, "scatter", "operand_batching_dims", operand_batching, len(shape))
    _disjoint(fname, "scatter", "inserted_window_dims", inserted, "operand_batching_dims",
              operand_batching)
    _disjoint(fname, "scatter", "scatter_dims_to_operand_dims", to_operand,
              "operand_batching_dims", operand_batching)
    ob = _batch_shapes(fname, "scatter", shape, ishape, operand_batching, indices_batching,
                       "scatter_indices_batching_dims")
    update_scatter_dims = [d for d in range(len(ushape)) if d not in window]
    ub = tuple(ushape[update_scatter_dims[k]] for k in indices_batching)
    if ob != ub:
        raise TypeError(f"Scatter op requires operand batching dimensions and updates batching "
                        f"dimensions to have the same shape, got {ob} and {ub}."
                        + _tag(fname, "paired batching dimensions have one size"))
    size = len(window) + len(inserted) + len(operand_batching)
    if size != len(shape):
        raise TypeError(f"Scatter op has window of size {size}; doesn't match operand of rank "
                        f"{len(shape)}." + _tag(fname, "each operand dimension is a window, "
                                                "inserted or batching dimension"))
    if len(to_operand) != ishape[-1]:
        raise TypeError(f"Scatter op has {len(to_operand)} elements in "
                        f"scatter_dims_to_operand_dims and the bound of dimension "
                        f"index_vector_dim={len(ishape) - 1} of indices is {ishape[-1]}. These "
                        f"two numbers must be equal"
                        + _tag(fname, "one scatter_dims_to_operand_dims entry per index "
                               "vector element"))
    _index_map(fname, "scatter", "scatter_dims_to_operand_dims", to_operand, len(shape))
    dropped = set(inserted) | set(operand_batching)
    window_dims = [d for d in range(len(shape)) if d not in dropped]
    for u, d in zip(window, window_dims):
        if ushape[u] > shape[d]:
            raise TypeError(f"Bounds of the window dimensions of updates must not exceed the "
                            f"bounds of the corresponding dimensions of operand. For dimension "
                            f"{u}, updates bound is {ushape[u]}, operand bound is {shape[d]}."
                            + _tag(fname, "update windows lie inside the operand"))
    for k, u in enumerate(update_scatter_dims):
        if ushape[u] != ishape[k]:
            raise TypeError(f"Bounds of the scatter dimensions of updates must be the same as "
                            f"the bounds of the corresponding dimensions of scatter indices. "
                            f"For scatter dimension {u}, updates bound is {ushape[u]}, indices "
                            f"bound is {ishape[k]}."
                            + _tag(fname, "updates have the indices' batch shape"))


def _mode(mode, default):
    return default if mode is None else GatherScatterMode.from_any(mode)


def _column(indices, k):
    """``indices[..., k]`` as int64."""
    nd = len(_shape(indices))
    col = I.getitem(indices, (slice(None),) * (nd - 1) + (k,))
    return S.convert_element_type(col, np.int64)


def _window_indices(fname, operand_shape, indices, index_map, window_dims, sizes,
                    operand_batching_dims, indices_batching_dims, clamp):
    """Per operand dimension, an int64 index array of shape ``batch + window`` (ones
    where a dimension does not vary), and whether each window lies in bounds.

    ``window_dims`` are the operand dimensions kept as window (offset) dims in
    order; ``sizes`` the window size per operand dimension."""
    batch_shape = _shape(indices)[:-1]
    nb, nw = len(batch_shape), len(window_dims)
    if _shape(indices)[-1] != len(index_map):
        raise TypeError(f"{fname}: the last dimension of the indices ({_shape(indices)[-1]}) "
                        f"must equal the number of mapped operand dimensions ({len(index_map)})")
    arrays, in_bounds = [], None
    for d, n in enumerate(operand_shape):
        size = sizes[d]
        if d in index_map:
            start = _column(indices, index_map.index(d))
            ok = E.bitwise_and_p.bind(E.ge(start, 0), E.le(start, n - size))
            in_bounds = ok if in_bounds is None else E.bitwise_and_p.bind(in_bounds, ok)
            if clamp:
                start = E.minimum(E.maximum(start, np.int64(0)), np.int64(max(n - size, 0)))
        elif d in operand_batching_dims:
            axis = indices_batching_dims[operand_batching_dims.index(d)]
            start = np.arange(batch_shape[axis], dtype=np.int64).reshape(
                (-1,) + (1,) * (nb - axis - 1))
        else:
            start = np.zeros((1,) * nb, np.int64)
        start = S.reshape(start, tuple(_shape(start)) + (1,) * nw)
        if d in window_dims:
            w = window_dims.index(d)
            offset = np.arange(size, dtype=np.int64).reshape(
                (1,) * nb + (1,) * w + (size,) + (1,) * (nw - w - 1))
            start = E.add(start, offset)
        arrays.append(start)
    return arrays, in_bounds


def _broadcast_all(arrays):
    shape = np.broadcast_shapes(*[_shape(a) for a in arrays])
    return [a if _shape(a) == shape else S.broadcast_to(a, shape) for a in arrays], shape


def _fill_value(dtype, fill_value):
    if fill_value is not None:
        return np.asarray(fill_value, dtype)
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.asarray(np.nan, dtype)
    if dtype.kind == "i":
        return np.asarray(np.iinfo(dtype).min, dtype)
    if dtype.kind == "u":
        return np.asarray(np.iinfo(dtype).max, dtype)
    return np.asarray(True)


def gather(operand: ArrayLike, start_indices: ArrayLike, dimension_numbers: Any, slice_sizes: Shape,
           *, unique_indices: bool = False, indices_are_sorted: bool = False, mode: Any = None,
           fill_value=None) -> Array:
    """XLA's gather (``jax.lax.gather``): one window of ``slice_sizes`` per index
    vector (the last axis of ``start_indices``)."""
    fname = "gather"
    x, idx = _array(operand), _array(start_indices)
    dn = GatherDimensionNumbers(*dimension_numbers) if not isinstance(
        dimension_numbers, GatherDimensionNumbers) else dimension_numbers
    shape = _shape(x)
    try:
        sizes = tuple(operator.index(s) for s in slice_sizes)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{tuple(slice_sizes)}." + _tag(fname, "slice_sizes must be integers"))\
            from None
    _check_gather(fname, shape, idx, dn, sizes)
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    if any(sizes[d] != 1 for d in dropped):
        raise TypeError(f"{fname}: collapsed and operand batching dimensions must have slice "
                        f"size 1, got slice_sizes={sizes}")
    window_dims = [d for d in range(len(shape)) if d not in dropped]
    if len(window_dims) != len(dn.offset_dims):
        raise TypeError(f"{fname}: offset_dims {tuple(dn.offset_dims)} must name one output "
                        f"dimension per kept operand dimension ({len(window_dims)})")
    parsed = _mode(mode, GatherScatterMode.PROMISE_IN_BOUNDS)
    arrays, in_bounds = _window_indices(
        fname, shape, idx, tuple(dn.start_index_map), window_dims, sizes,
        tuple(dn.operand_batching_dims), tuple(dn.start_indices_batching_dims), clamp=True)
    arrays, _ = _broadcast_all(arrays)
    # batch dims, then window dims
    out = I.getitem(x, (I.ARRAY,) * len(shape), arrays, unique_indices, indices_are_sorted)
    nb = len(_shape(idx)) - 1
    if parsed == GatherScatterMode.FILL_OR_DROP and in_bounds is not None:
        mask = S.reshape(in_bounds, _shape(in_bounds) + (1,) * len(window_dims))
        out = E.select(S.broadcast_to(mask, _shape(out)), out,
                       _fill_value(core.get_aval(x).dtype, fill_value))
    rank = nb + len(window_dims)
    offsets = list(dn.offset_dims)
    batch_positions = [p for p in range(rank) if p not in offsets]
    perm = [0] * rank
    for i, p in enumerate(batch_positions):
        perm[p] = i
    for w, p in enumerate(offsets):
        perm[p] = nb + w
    return S.transpose(out, tuple(perm)) if perm != list(range(rank)) else out


def _scatter(fname, operand, scatter_indices, updates, dimension_numbers, mode, how,
             unique_indices=False, indices_are_sorted=False):
    x, idx, upd = _array(operand), _array(scatter_indices), _array(updates)
    dn = ScatterDimensionNumbers(*dimension_numbers) if not isinstance(
        dimension_numbers, ScatterDimensionNumbers) else dimension_numbers
    shape = _shape(x)
    ushape = _shape(upd)
    window_out = list(dn.update_window_dims)
    scatter_dims = [d for d in range(len(ushape)) if d not in window_out]
    dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    window_dims = [d for d in range(len(shape)) if d not in dropped]
    if len(window_dims) != len(window_out):
        raise TypeError(f"{fname}: update_window_dims {tuple(window_out)} must name one "
                        f"updates dimension per operand dimension not inserted "
                        f"({len(window_dims)})")
    sizes = [1] * len(shape)
    for d, u in zip(window_dims, window_out):
        sizes[d] = ushape[u]
    batch_shape = _shape(idx)[:-1]
    if tuple(ushape[d] for d in scatter_dims) != tuple(batch_shape):
        raise TypeError(f"{fname}: the scatter dimensions of updates (shape {ushape}) must "
                        f"match the indices' batch shape {tuple(batch_shape)}")
    parsed = _mode(mode, GatherScatterMode.FILL_OR_DROP)
    # PROMISE_IN_BOUNDS: XLA's own scatter, which JAX's is, drops an out-of-bounds window
    # too (ours clamped it: scatter of index 100 into 10 entries wrote the last one)
    drop = parsed in (GatherScatterMode.FILL_OR_DROP, GatherScatterMode.PROMISE_IN_BOUNDS)
    arrays, in_bounds = _window_indices(
        fname, shape, idx, tuple(dn.scatter_dims_to_operand_dims), window_dims, sizes,
        tuple(dn.operand_batching_dims), tuple(dn.scatter_indices_batching_dims), clamp=not drop)
    arrays, ishape = _broadcast_all(arrays)
    perm = scatter_dims + window_out
    if perm != list(range(len(ushape))):
        upd = S.transpose(upd, tuple(perm))
    upd = S.convert_element_type(upd, core.get_aval(x).dtype)
    if not drop or in_bounds is None:
        return I.scatter(x, upd, (I.ARRAY,) * len(shape), arrays, how, unique_indices,
                         indices_are_sorted)
    # Dropped windows go to a spare slot past the end of the flattened operand.
    size = int(np.prod(shape, dtype=np.int64))
    flat_idx = None
    for a, n, stride in zip(arrays, shape, np.cumprod((1,) + shape[:0:-1])[::-1]):
        term = E.mul(a, np.int64(stride))
        flat_idx = term if flat_idx is None else E.add(flat_idx, term)
    flat_idx = np.zeros(ishape, np.int64) if flat_idx is None else flat_idx
    mask = S.broadcast_to(S.reshape(in_bounds, _shape(in_bounds) + (1,) * len(window_dims)),
                          ishape)
    flat_idx = E.select(mask, flat_idx, np.int64(size))
    spare = np.zeros((1,), core.get_aval(x).dtype)
    flat = S.concatenate([S.reshape(x, (size,)), spare], 0)
    # Dropped windows may share the spare slot; it is cut off, so the hints still hold.
    out = I.scatter(flat, upd, (I.ARRAY,), (flat_idx,), how, unique_indices, indices_are_sorted)
    return S.reshape(I.getitem(out, (slice(0, size),)), shape)


def _checked(fname, operand, scatter_indices, updates, dimension_numbers):
    """The public scatters' checks: ``updates`` of ``operand``'s dtype (lax does not
    promote), integer indices, valid dimension numbers."""
    x, idx, upd = _array(operand), _array(scatter_indices), _array(updates)
    dx, du = core.get_aval(x).dtype, core.get_aval(upd).dtype
    if dx != du:
        raise TypeError(f"lax.scatter requires arguments to have the same dtypes, got "
                        f"{np.dtype(dx).name}, {np.dtype(du).name}."
                        + _tag(fname, "convert updates to the operand's dtype first"))
    dn = ScatterDimensionNumbers(*dimension_numbers) if not isinstance(
        dimension_numbers, ScatterDimensionNumbers) else dimension_numbers
    _check_scatter(fname, x, idx, upd, dn)


def _scatter_fn(name, how, doc):
    def fn(operand: ArrayLike, scatter_indices: ArrayLike, updates: ArrayLike,
           dimension_numbers: Any, *, indices_are_sorted: bool = False,
           unique_indices: bool = False, mode: Any = None) -> Array:
        _checked(name, operand, scatter_indices, updates, dimension_numbers)
        return _scatter(name, operand, scatter_indices, updates, dimension_numbers, mode, how,
                        unique_indices, indices_are_sorted)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


scatter = _scatter_fn("scatter", "set", "XLA's scatter (``jax.lax.scatter``): ``operand`` with "
                      "the windows at ``scatter_indices`` replaced by ``updates``.")
scatter_add = _scatter_fn("scatter_add", "add", "``operand`` with ``updates`` added at "
                          "``scatter_indices`` (``jax.lax.scatter_add``; duplicates accumulate).")
scatter_mul = _scatter_fn("scatter_mul", "mul", "``operand`` multiplied by ``updates`` at "
                          "``scatter_indices`` (``jax.lax.scatter_mul``).")
scatter_min = _scatter_fn("scatter_min", "min", "``operand`` with the minimum of it and "
                          "``updates`` at ``scatter_indices`` (``jax.lax.scatter_min``).")
scatter_max = _scatter_fn("scatter_max", "max", "``operand`` with the maximum of it and "
                          "``updates`` at ``scatter_indices`` (``jax.lax.scatter_max``).")


def scatter_sub(operand: ArrayLike, scatter_indices: ArrayLike, updates: ArrayLike,
                dimension_numbers: Any, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: Any = None) -> Array:
    """``operand`` with ``updates`` subtracted at ``scatter_indices`` (``jax.lax.scatter_sub``)."""
    _checked("scatter_sub", operand, scatter_indices, updates, dimension_numbers)
    return _scatter("scatter_sub", operand, scatter_indices, E.neg(_array(updates)),
                    dimension_numbers, mode, "add", unique_indices, indices_are_sorted)


def scatter_apply(operand: Array, scatter_indices: Array, func: Callable[[Array], Array],
                  dimension_numbers: Any, *, update_shape: Shape = (),
                  indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None
                  ) -> Array:
    """``operand`` with ``func`` applied to the windows (of ``update_shape``) at
    ``scatter_indices`` (``jax.lax.scatter_apply``): an element covered by k windows gets
    ``func`` applied k times, as XLA's."""
    x = _array(operand)
    dn = ScatterDimensionNumbers(*dimension_numbers) if not isinstance(
        dimension_numbers, ScatterDimensionNumbers) else dimension_numbers
    shape = _shape(x)
    dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    window_dims = [d for d in range(len(shape)) if d not in dropped]
    update_shape = tuple(update_shape)
    sizes = [1] * len(shape)
    window_sizes = [update_shape[u] for u in dn.update_window_dims]
    for d, n in zip(window_dims, window_sizes):
        sizes[d] = n
    gdn = GatherDimensionNumbers(
        offset_dims=tuple(dn.update_window_dims), collapsed_slice_dims=tuple(
            dn.inserted_window_dims), start_index_map=tuple(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=tuple(dn.operand_batching_dims),
        start_indices_batching_dims=tuple(dn.scatter_indices_batching_dims))
    gather_mode = GatherScatterMode.CLIP if mode is not None and GatherScatterMode.from_any(
        mode) == GatherScatterMode.CLIP else GatherScatterMode.PROMISE_IN_BOUNDS
    idx = _array(scatter_indices)

    def apply(x, idx):
        current = gather(x, idx, gdn, sizes, mode=gather_mode, unique_indices=unique_indices,
                         indices_are_sorted=indices_are_sorted)
        return _scatter("scatter_apply", x, idx, func(current), dn, mode, "set", unique_indices,
                        indices_are_sorted)
    # An operand element covered by k windows gets func applied k times, as XLA's scatter
    # with func as its update computation (func(x) per element).  The count of each
    # element is a scatter_add of ones, which follows the same dimension numbers and
    # mode; func runs on the gathered windows when no element is covered twice.
    if unique_indices:
        return apply(x, idx)
    count = _scatter("scatter_apply", np.zeros(shape, np.int32), idx,
                     np.ones(update_shape, np.int32), dn, mode, "add")
    if isinstance(count, core.Tracer):
        from .control_flow import while_loop  # noqa: PLC0415  (the loop only when traced)
        most = R.reduce_max(count, tuple(range(len(shape)))) if shape else count

        def body(carry):
            r, v = carry
            return E.add(r, np.int32(1)), E.select(E.gt(count, r), func(v), v)
        return while_loop(lambda c: E.lt(c[0], most), body, (np.int32(0), x))[1]
    most = int(np.max(count)) if count.size else 0
    if most <= 1:
        return apply(x, idx)
    for r in range(most):
        x = E.select(count > r, func(x), x)
    return x
