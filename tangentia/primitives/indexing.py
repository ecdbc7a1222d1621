"""NumPy indexing as primitives: ``getitem`` (gather) and ``scatter``
(the functional ``x.at[idx].set/add/mul/min/max``).

An index is described statically by a ``spec``: a tuple whose entries are
``slice`` objects, ``None``, ``Ellipsis``, Python ints, or ``ARRAY`` -- a
placeholder for the next integer-array operand (passed as a primitive
argument, so it may be traced).  When arrays are present, Python ints are
turned into 0-d arrays first, so NumPy's advanced-indexing rules apply
uniformly.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import Primitive, ShapedArray
from ..interpreters.ad import Zero, instantiate, is_undefined, primitive_jvps, primitive_transposes
from ..interpreters import base_ops as B
from ..interpreters.base_ops import unbroadcast
from ..interpreters.batching import (broadcast_front, move_axis, move_to_front,
                                       primitive_batchers)
from . import elementwise as E


class _ArrayIndex:
    __slots__ = ()

    def __repr__(self):
        return "ARRAY"


ARRAY = _ArrayIndex()


def build_index(spec, arrays):
    it = iter(arrays)
    return tuple(next(it) if e is ARRAY else e for e in spec)


def _spec_str(spec):
    def one(e):
        if isinstance(e, slice):
            return ":".join("" if v is None else str(v) for v in (e.start, e.stop, e.step)).rstrip(":") or ":"
        if e is None:
            return "None"
        if e is Ellipsis:
            return "..."
        return repr(e)
    return "[" + ", ".join(one(e) for e in spec) + "]"


def _indexed_aval(name, x, spec, arrays):
    for a in arrays:
        if a.dtype.kind not in "iu":
            raise TypeError(f"{name}: index arrays must be integers, got {a.str_short()}")
    dummies = [np.zeros(a.shape, np.intp) for a in arrays]
    base = np.broadcast_to(np.empty((), x.dtype), x.shape)
    try:
        out = base[build_index(spec, dummies)]
    except IndexError as e:
        raise IndexError(f"{name}: index {_spec_str(spec)} is invalid for an array of shape "
                         f"{x.shape}: {e}") from None
    return out.shape


# ---------------------------------------------------------------------------
# Batching helpers shared by getitem and scatter


def _adv_positions(spec):
    return [i for i, e in enumerate(spec) if e is ARRAY]


def _adjacent(pos):
    return all(b == a + 1 for a, b in zip(pos, pos[1:]))


def _dims_before(spec, upto, ndim):
    """Number of output dims produced by spec entries before ``upto``."""
    consumed = sum(1 for e in spec if e is not None and e is not Ellipsis)
    n = 0
    for e in spec[:upto]:
        if e is Ellipsis:
            n += ndim - consumed
        elif isinstance(e, slice) or e is None:
            n += 1
    return n


def _axes_before(spec, upto, ndim):
    """Number of axes of the indexed array consumed by spec entries before ``upto``."""
    consumed = sum(1 for e in spec if e is not None and e is not Ellipsis)
    n = 0
    for e in spec[:upto]:
        if e is Ellipsis:
            n += ndim - consumed
        elif e is not None:
            n += 1
    return n


def _batch_index(x, xd, arrays, adims, spec, size, force_x_batched=False):
    """Rewrite an index so that it acts on batched operands.

    Returns ``(x, arrays, spec, out_dim, x_dim)``: ``out_dim`` is the batch axis
    of the indexed result and ``x_dim`` that of ``x`` (None if unbatched).
    """
    arrays_batched = any(d is not None for d in adims)
    if not arrays_batched:
        if xd is None and force_x_batched:
            x, xd = broadcast_front(x, size), 0
        x = move_to_front(x, xd)
        spec = (slice(None),) + tuple(spec)
        pos = _adv_positions(spec)
        if pos and not _adjacent(pos):
            bshape = np.broadcast_shapes(*[core.get_aval(a).shape for a in arrays])
            return x, list(arrays), spec, len(bshape), 0
        return x, list(arrays), spec, 0, 0
    ranks = [core.get_aval(a).ndim - (d is not None) for a, d in zip(arrays, adims)]
    r = max(ranks)
    new_arrays = []
    for a, d, k in zip(arrays, adims, ranks):
        if d is None:
            a = B.reshape(a, (1,) * (1 + r - k) + core.get_aval(a).shape)
        else:
            a = move_to_front(a, d)
            sh = core.get_aval(a).shape
            a = B.reshape(a, (sh[0],) + (1,) * (r - k) + sh[1:])
        new_arrays.append(a)
    pos = _adv_positions(spec)
    if xd is not None or force_x_batched:
        x = broadcast_front(x, size) if xd is None else move_to_front(x, xd)
        iota = np.arange(size).reshape((size,) + (1,) * r)
        if not _adjacent(pos):
            return x, [iota] + new_arrays, (ARRAY,) + tuple(spec), 0, 0
        # Index the batch axis right before the first advanced index, so the
        # advanced indices stay adjacent and their result stays in place.
        nd = core.get_aval(x).ndim - 1
        p = pos[0]
        x_dim = _axes_before(spec, p, nd)
        x = move_axis(x, 0, x_dim)
        return x, [iota] + new_arrays, tuple(spec[:p]) + (ARRAY,) + tuple(spec[p:]), \
            _dims_before(spec, p, nd), x_dim
    if not _adjacent(pos):
        return x, new_arrays, tuple(spec), 0, None
    return x, new_arrays, tuple(spec), _dims_before(spec, pos[0], core.get_aval(x).ndim), None


# ---------------------------------------------------------------------------
# getitem

getitem_p = Primitive("getitem")


def _getitem_impl(x, *arrays, spec, unique_indices=False, indices_are_sorted=False,
                  clamp=False):
    x = np.asarray(x)
    if clamp:
        arrays = clamped_indices(spec, arrays, x.shape)
    return x[build_index(spec, arrays)]


def _array_axes(spec, ndim):
    """The axis of an array of ``ndim`` axes that each ``ARRAY`` entry of ``spec`` indexes."""
    consumed = sum(1 for e in spec if e is not None and e is not Ellipsis)
    axis, out = 0, []
    for e in spec:
        if e is Ellipsis:
            axis += ndim - consumed
        elif e is not None:
            if e is ARRAY:
                out.append(axis)
            axis += 1
    return out


def wide_enough(a, n):
    """Integer index ``a`` into an axis of length ``n``, as ``intp`` when its dtype cannot
    hold ``n`` (uint8 indices into 300 rows): counting from the end (``a + n``), the clamp's
    ``n - 1`` and a one-past-the-end slot are then computed without overflow (in the
    index's dtype NumPy raised OverflowError, under ``jit`` as well)."""
    dt = np.dtype(a.dtype) if hasattr(a, "dtype") else np.asarray(a).dtype
    if dt.kind in "iu" and n > np.iinfo(dt).max:
        return (B.convert_element_type(a, np.intp) if isinstance(a, core.Tracer)
                else np.asarray(a).astype(np.intp))
    return a


def clamped_indices(spec, arrays, shape):
    """``arrays`` (the index arrays of ``spec`` into an array of ``shape``) as JAX's gather
    reads them: a negative index counts from the end, then every index is clamped into
    its axis.  NumPy arrays give NumPy arrays; traced ones, the same as primitives."""
    out = []
    for a, axis in zip(arrays, _array_axes(spec, len(shape))):
        n = shape[axis]
        a = wide_enough(a, n)
        if isinstance(a, core.Tracer):
            a = E.select(E.lt(a, 0), E.add(a, n), a)
            out.append(E.minimum(E.maximum(a, 0), max(n - 1, 0)))
        else:
            a = np.asarray(a)
            a = np.where(a < 0, a + n, a)
            out.append(np.clip(a, 0, max(n - 1, 0)).astype(a.dtype, copy=False))
    return out


def _print_params(params, **extra):
    """``index=[...]`` then the other parameters, with the index hints only when set."""
    out = {"index": _spec_str(params["spec"]), **extra}
    for k in ("unique_indices", "indices_are_sorted", "clamp"):
        if params.get(k):
            out[k] = True
    return out


getitem_p.impl = _getitem_impl
getitem_p.print_params = _print_params


def _getitem_abstract_eval(x, *arrays, spec, unique_indices=False, indices_are_sorted=False,
                           clamp=False):
    shape = _indexed_aval("getitem", x, spec, arrays)
    return ShapedArray(shape, x.dtype, x.weak_type)


getitem_p.abstract_eval = _getitem_abstract_eval


def _getitem_jvp(primals, tangents, **params):
    x, *arrays = primals
    ans = getitem_p.bind(x, *arrays, **params)
    tx = tangents[0]
    if type(tx) is Zero:
        return ans, Zero.from_primal(ans)
    return ans, getitem_p.bind(tx, *arrays, **params)


def _getitem_transpose(ct, x, *arrays, clamp=False, **params):
    zeros = np.zeros(x.aval.shape, core.get_aval(ct).dtype)
    if clamp:   # the cotangent goes where the value was read from
        arrays = tuple(clamped_indices(params["spec"], arrays, x.aval.shape))
    return (scatter_p.bind(zeros, ct, *arrays, mode="add", **params),) + (None,) * len(arrays)


def _getitem_batch(args, dims, spec, **hints):
    # The batch axis is indexed by an iota (or kept as a slice), so the indices of
    # different examples never meet: uniqueness and order carry over.
    x, *arrays = args
    xd, *adims = dims
    size = next(core.get_aval(a).shape[d] for a, d in zip(args, dims) if d is not None)
    x, arrays, spec, out_d, _ = _batch_index(x, xd, arrays, adims, spec, size)
    return getitem_p.bind(x, *arrays, spec=spec, **hints), out_d


primitive_jvps[getitem_p] = _getitem_jvp
primitive_transposes[getitem_p] = _getitem_transpose
primitive_batchers[getitem_p] = _getitem_batch


def getitem(x, spec, arrays=(), unique_indices=False, indices_are_sorted=False, clamp=False):
    """``x[index]`` for the index ``spec`` with the integer arrays ``arrays``.
    ``unique_indices`` promises that no entry is read twice (the transpose then
    scatters without accumulating duplicates) and ``indices_are_sorted`` that the
    indices are sorted; both are JAX's hints, unchecked.  ``clamp``: an out-of-bounds
    index is clamped into its axis, as JAX's gather (``clamped_indices``), where
    without it it raises NumPy's IndexError."""
    params = dict(spec=tuple(spec), unique_indices=bool(unique_indices),
                  indices_are_sorted=bool(indices_are_sorted))
    if clamp:   # (only then a parameter: programs without it keep their text)
        params["clamp"] = True
    return getitem_p.bind(x, *arrays, **params)


def static_slice(x, axis, start, stop):
    nd = core.get_aval(x).ndim
    spec = tuple(slice(start, stop) if i == axis else slice(None) for i in range(nd))
    return getitem_p.bind(x, spec=spec)


# ---------------------------------------------------------------------------
# scatter: out = x with x[idx] <mode>= y
#
# ``unique_indices=True`` promises that no entry of ``x`` is addressed twice
# (JAX's hint; unchecked, and repeats then give unspecified derivatives).
# Without it the derivative rules find out: an index with no arrays, or whose
# arrays broadcast to a single entry, never repeats (slices do not), concrete
# arrays are counted, and only traced ones are unknown.  Where a repeat changes
# the derivative: ``set`` sends the cotangent only to the update that landed,
# ``min``/``max`` share the tangent equally among the operand entry and the
# updates tied at the result (as JAX), and ``mul`` raises JAX's error for the
# derivative with respect to the updates.

scatter_p = Primitive("scatter")
_UFUNC_AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter_impl(x, y, *arrays, spec, mode, unique_indices=False, indices_are_sorted=False):
    out = np.array(x, copy=True)
    idx = build_index(spec, arrays)
    if mode == "set":
        out[idx] = y
    elif not arrays:
        out[idx] = _UFUNC_AT[mode](out[idx], y)
    else:
        _UFUNC_AT[mode].at(out, idx, y)
    return out


scatter_p.impl = _scatter_impl
scatter_p.print_params = lambda params: _print_params(params, mode=params["mode"])


def _scatter_abstract_eval(x, y, *arrays, spec, mode, unique_indices=False,
                           indices_are_sorted=False):
    shape = _indexed_aval(f"at[...].{mode}", x, spec, arrays)
    try:
        np.broadcast_shapes(y.shape, shape)
        ok = len(np.broadcast_shapes(y.shape, shape)) == len(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"at[...].{mode}: cannot broadcast update of shape {y.shape} to the "
                         f"indexed shape {shape}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


scatter_p.abstract_eval = _scatter_abstract_eval


def scatter(x, y, spec, arrays, mode, unique_indices=False, indices_are_sorted=False):
    """``x`` with ``x[index] <mode>= y`` (mode "set", "add", "mul", "min" or "max");
    ``unique_indices`` and ``indices_are_sorted`` are JAX's hints (see above)."""
    return scatter_p.bind(x, y, *arrays, spec=tuple(spec), mode=mode,
                          unique_indices=bool(unique_indices),
                          indices_are_sorted=bool(indices_are_sorted))


def _concrete_arrays(arrays):
    """The index arrays as NumPy arrays, or None if one of them is traced."""
    out = []
    for a in arrays:
        if isinstance(a, core.Tracer):
            try:
                a = a.concrete_value("scatter")
            except core.ConcretizationTypeError:
                return None
        out.append(np.asarray(a))
    return out


def _repeats(shape, spec, arrays, unique_indices):
    """Whether the index addresses an entry of an array of ``shape`` more than once:
    False when promised or known not to, True when known to, None when unknown
    (traced index arrays)."""
    if unique_indices or not arrays:
        return False
    bshape = np.broadcast_shapes(*[core.get_aval(a).shape for a in arrays])
    if int(np.prod(bshape, dtype=np.int64)) <= 1:   # one entry per slice position
        return False
    values = _concrete_arrays(arrays)
    if values is None:
        return None
    # Slices never repeat, so the index repeats exactly when two positions of the
    # broadcast arrays name the same entry of the axes they index.
    sizes = [shape[axis] for axis in _array_axes(spec, len(shape))]
    if 0 in sizes:
        return False
    flat = np.ravel_multi_index([v.ravel() for v in np.broadcast_arrays(*values)], sizes,
                                mode="wrap")
    return len(np.unique(flat)) < len(flat)


def _landed(shape, spec, arrays):
    """Per indexed entry, whether its update is the one a ``set`` scatter keeps
    (decided by the scatter itself: each update is tagged with a distinct id)."""
    idx_shape = _indexed_aval("scatter", ShapedArray(shape, np.dtype(np.int64)), spec,
                              [core.get_aval(a) for a in arrays])
    ids = np.arange(1, int(np.prod(idx_shape, dtype=np.int64)) + 1, dtype=np.int64)
    ids = ids.reshape(idx_shape)
    zeros = np.zeros(shape, np.int64)
    values = _concrete_arrays(arrays)
    if values is not None:
        kept = _scatter_impl(zeros, ids, *values, spec=spec, mode="set")
        return _getitem_impl(kept, *values, spec=spec) == ids
    kept = scatter_p.bind(zeros, ids, *arrays, spec=spec, mode="set")
    return E.eq(getitem_p.bind(kept, *arrays, spec=spec), ids)


_MUL_ERROR = "scatter_mul gradients are only implemented if `unique_indices=True`"


def _scatter_jvp(primals, tangents, spec, mode, **hints):
    x, y, *arrays = primals
    tx, ty = tangents[0], tangents[1]
    ans = scatter_p.bind(x, y, *arrays, spec=spec, mode=mode, **hints)
    if type(tx) is Zero and type(ty) is Zero:
        return ans, Zero.from_primal(ans)
    if mode in ("set", "add"):
        # For "set" the tangents land where the primal updates do; the transpose
        # sorts out which of repeated updates landed.
        return ans, scatter_p.bind(instantiate(tx), instantiate(ty), *arrays, spec=spec,
                                   mode=mode, **hints)
    if mode == "mul":
        # out[idx] = x[idx] * y: linear in x however indices repeat; in y only when
        # they do not (a repeated entry is a product of several updates).
        t = None
        if type(tx) is not Zero:
            t = scatter_p.bind(tx, y, *arrays, spec=spec, mode="mul", **hints)
        if type(ty) is not Zero:
            _check_mul_unique(core.get_aval(x).shape, spec, arrays, hints)
            xi = getitem_p.bind(x, *arrays, spec=spec, **hints)
            zeros = np.zeros(core.get_aval(x).shape, core.get_aval(ans).dtype)
            contrib = scatter_p.bind(zeros, E.mul(xi, ty), *arrays, spec=spec, mode="add",
                                     **hints)
            t = contrib if t is None else E.add(t, contrib)
        return ans, t
    return ans, _extremum_tangent(x, y, arrays, tx, ty, ans, spec, hints)


def _extremum_tangent(x, y, arrays, tx, ty, ans, spec, hints):
    """The tangent of a ``min``/``max`` scatter: each entry of the result takes
    the mean of the tangents of the candidates equal to it (the operand entry and
    every update sent there), as JAX."""
    aval = core.get_aval(ans)
    ans_i = getitem_p.bind(ans, *arrays, spec=spec, **hints)
    idx_shape = core.get_aval(ans_i).shape
    won = E.eq(B.broadcast_to(y, idx_shape), ans_i)      # per update: tied at the result
    kept = E.eq(x, ans)                                   # per entry: the operand is
    zeros = np.zeros(aval.shape, aval.dtype)
    one, nought = np.ones((), aval.dtype), np.zeros((), aval.dtype)
    n_won = scatter_p.bind(zeros, E.select(won, one, nought), *arrays, spec=spec, mode="add",
                           **hints)
    count = E.add(n_won, E.select(kept, one, nought))     # candidates tied, per entry
    # An entry with no candidate tied (NaN) keeps the operand's tangent.
    count = E.select(E.eq(count, nought), one, count)
    t = None
    if type(tx) is not Zero:
        t = E.mul(tx, E.select(kept, E.div(one, count), nought))
        t = E.select(E.eq(n_won, nought), tx, t)          # entries no update won stay tx
    if type(ty) is not Zero:
        share = E.select(won, E.div(one, getitem_p.bind(count, *arrays, spec=spec, **hints)),
                         nought)
        ty_i = B.broadcast_to(instantiate(ty), idx_shape)
        contrib = scatter_p.bind(zeros, E.mul(ty_i, share), *arrays, spec=spec, mode="add",
                                 **hints)
        t = contrib if t is None else E.add(t, contrib)
    return t


def _check_mul_unique(shape, spec, arrays, hints):
    """JAX's error for the derivative of a multiplying scatter with respect to its
    updates, unless the index is promised or known not to repeat."""
    repeats = _repeats(shape, spec, arrays, hints.get("unique_indices", False))
    if repeats is False:
        return
    why = ("idx repeats an index: the derivative of a repeated product is not implemented"
           if repeats else
           "idx is traced, so whether it repeats an index is unknown; pass "
           "unique_indices=True if it never does")
    raise NotImplementedError(
        f"{_MUL_ERROR} (tangentia: x.at[idx].multiply(y), divide or lax.scatter_mul is "
        f"differentiated with respect to y, and {why})")


def _scatter_transpose(ct, x, y, *arrays, spec, mode, **hints):
    if any(is_undefined(a) for a in arrays):
        raise TypeError("scatter: index arrays cannot be linear")
    nones = (None,) * len(arrays)
    if mode == "add":
        ct_y = (unbroadcast(getitem_p.bind(ct, *arrays, spec=spec, **hints), y.aval)
                if is_undefined(y) else None)
        return (ct if is_undefined(x) else None, ct_y) + nones
    if mode == "set":
        ct_x = None
        dt = core.get_aval(ct).dtype
        if is_undefined(x):
            ct_x = scatter_p.bind(ct, np.zeros((), dt), *arrays, spec=spec, mode="set", **hints)
        ct_y = None
        if is_undefined(y):
            ct_y = getitem_p.bind(ct, *arrays, spec=spec, **hints)
            shape = core.get_aval(ct).shape
            if _repeats(shape, spec, arrays, hints.get("unique_indices", False)) is not False:
                # Only the update that landed reaches the output.
                ct_y = E.select(_landed(shape, spec, arrays), ct_y, np.zeros((), dt))
            ct_y = unbroadcast(ct_y, y.aval)
        return (ct_x, ct_y) + nones
    if mode == "mul" and is_undefined(x) and not is_undefined(y):
        return (scatter_p.bind(ct, y, *arrays, spec=spec, mode="mul", **hints), None) + nones
    raise TypeError(f"scatter with mode '{mode}' is not linear in the requested operand")


def _scatter_batch(args, dims, spec, mode, **hints):
    x, y, *arrays = args
    xd, yd, *adims = dims
    size = next(core.get_aval(a).shape[d] for a, d in zip(args, dims) if d is not None)
    x_aval = core.get_aval(x)
    x_shape = x_aval.shape if xd is None else x_aval.shape[:xd] + x_aval.shape[xd + 1:]
    # Per-example indexed shape, to line up y with the batched index.
    arr_avals = [core.get_aval(a) for a in arrays]
    per_arr = [ShapedArray(a.shape if d is None else a.shape[:d] + a.shape[d + 1:], a.dtype)
               for a, d in zip(arr_avals, adims)]
    idx_shape = _indexed_aval("scatter", ShapedArray(x_shape, x_aval.dtype), spec, per_arr)
    x, arrays, new_spec, out_d, x_dim = _batch_index(x, xd, arrays, adims, spec, size,
                                                     force_x_batched=True)
    # y: per-example broadcast to idx_shape, batch axis at out_d of the batched index.
    if yd is None:
        y = B.broadcast_to(y, idx_shape)
        y = broadcast_front(y, size)
    else:
        y = move_to_front(y, yd)
        ys = core.get_aval(y).shape
        y = B.reshape(y, (ys[0],) + (1,) * (len(idx_shape) - (len(ys) - 1)) + ys[1:])
        y = B.broadcast_to(y, (size,) + tuple(idx_shape))
    if out_d != 0:
        y = move_axis(y, 0, out_d)
    # Each example scatters into its own slice of x: the hints carry over.
    return scatter_p.bind(x, y, *arrays, spec=new_spec, mode=mode, **hints), x_dim


primitive_jvps[scatter_p] = _scatter_jvp
primitive_transposes[scatter_p] = _scatter_transpose
primitive_batchers[scatter_p] = _scatter_batch

__all__ = ["ARRAY", "getitem", "scatter", "static_slice"]
