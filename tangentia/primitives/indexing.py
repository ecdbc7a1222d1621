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
from ..interpreters.ad import Zero, instantiate, is_undefined
from ..interpreters import base_ops as B
from ..interpreters.base_ops import unbroadcast
from ..interpreters.batching import broadcast_front, move_axis, move_to_front
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


def _getitem_impl(x, *arrays, spec):
    return np.asarray(x)[build_index(spec, arrays)]


getitem_p.impl = _getitem_impl
getitem_p.print_params = lambda params: {"index": _spec_str(params["spec"])}


def _getitem_abstract_eval(x, *arrays, spec):
    shape = _indexed_aval("getitem", x, spec, arrays)
    return ShapedArray(shape, x.dtype, x.weak_type)


getitem_p.abstract_eval = _getitem_abstract_eval


def _getitem_jvp(primals, tangents, spec):
    x, *arrays = primals
    ans = getitem_p.bind(x, *arrays, spec=spec)
    tx = tangents[0]
    if type(tx) is Zero:
        return ans, Zero.from_primal(ans)
    return ans, getitem_p.bind(tx, *arrays, spec=spec)


def _getitem_transpose(ct, x, *arrays, spec):
    zeros = np.zeros(x.aval.shape, core.get_aval(ct).dtype)
    return (scatter_p.bind(zeros, ct, *arrays, spec=spec, mode="add"),) + (None,) * len(arrays)


def _getitem_batch(args, dims, spec):
    x, *arrays = args
    xd, *adims = dims
    size = next(core.get_aval(a).shape[d] for a, d in zip(args, dims) if d is not None)
    x, arrays, spec, out_d, _ = _batch_index(x, xd, arrays, adims, spec, size)
    return getitem_p.bind(x, *arrays, spec=spec), out_d


getitem_p.jvp = _getitem_jvp
getitem_p.transpose = _getitem_transpose
getitem_p.batch = _getitem_batch


def getitem(x, spec, arrays=()):
    return getitem_p.bind(x, *arrays, spec=tuple(spec))


def static_slice(x, axis, start, stop):
    nd = core.get_aval(x).ndim
    spec = tuple(slice(start, stop) if i == axis else slice(None) for i in range(nd))
    return getitem_p.bind(x, spec=spec)


# ---------------------------------------------------------------------------
# scatter: out = x with x[idx] <mode>= y

scatter_p = Primitive("scatter")
_UFUNC_AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter_impl(x, y, *arrays, spec, mode):
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
scatter_p.print_params = lambda params: {"index": _spec_str(params["spec"]), "mode": params["mode"]}


def _scatter_abstract_eval(x, y, *arrays, spec, mode):
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


def scatter(x, y, spec, arrays, mode):
    return scatter_p.bind(x, y, *arrays, spec=tuple(spec), mode=mode)


def _scatter_jvp(primals, tangents, spec, mode):
    x, y, *arrays = primals
    tx, ty = tangents[0], tangents[1]
    ans = scatter_p.bind(x, y, *arrays, spec=spec, mode=mode)
    if type(tx) is Zero and type(ty) is Zero:
        return ans, Zero.from_primal(ans)
    if mode in ("set", "add"):
        return ans, scatter_p.bind(instantiate(tx), instantiate(ty), *arrays, spec=spec, mode=mode)
    if mode == "mul":
        # out[idx] = x[idx] * y (indices assumed unique for the y-derivative).
        t = 0.0
        if type(tx) is not Zero:
            t = scatter_p.bind(tx, y, *arrays, spec=spec, mode="mul")
        if type(ty) is not Zero:
            _check_unique(core.get_aval(x).shape, spec, arrays)
            xi = getitem_p.bind(x, *arrays, spec=spec)
            zeros = np.zeros(core.get_aval(x).shape, core.get_aval(ans).dtype)
            contrib = scatter_p.bind(zeros, E.mul(xi, ty), *arrays, spec=spec, mode="add")
            t = contrib if type(t) is float else E.add(t, contrib)
        return ans, t
    # min / max: the tangent follows whichever operand won (x on ties).
    from_x = E.eq(ans, x)
    ans_i = getitem_p.bind(ans, *arrays, spec=spec)
    yb = B.broadcast_to(y, core.get_aval(ans_i).shape)
    zeros = np.zeros(core.get_aval(ans).shape, core.get_aval(ans).dtype)
    ty_i = B.broadcast_to(instantiate(ty), core.get_aval(ans_i).shape)
    ty_sel = E.select(E.eq(yb, ans_i), ty_i, 0.0)
    t_from_y = scatter_p.bind(zeros, ty_sel, *arrays, spec=spec, mode="set")
    return ans, E.select(from_x, instantiate(tx), t_from_y)


def _check_unique(shape, spec, arrays):
    """Raise JAX's error for the derivative of a multiplying scatter with respect
    to its updates when a known index repeats (a traced one is assumed unique)."""
    if not arrays or any(isinstance(a, core.Tracer) for a in arrays):
        return
    hits = np.zeros(shape, np.int64)
    np.add.at(hits, build_index(spec, arrays), 1)
    if hits.max(initial=0) > 1:
        raise NotImplementedError(
            "scatter_mul gradients are only implemented if `unique_indices=True` (tangentia: "
            "x.at[idx].multiply(y) is differentiated with respect to y, and idx repeats an "
            "index: the derivative of a repeated product is not implemented)")


def _scatter_transpose(ct, x, y, *arrays, spec, mode):
    if any(is_undefined(a) for a in arrays):
        raise TypeError("scatter: index arrays cannot be linear")
    nones = (None,) * len(arrays)
    if mode == "add":
        ct_y = (unbroadcast(getitem_p.bind(ct, *arrays, spec=spec), y.aval)
                if is_undefined(y) else None)
        return (ct if is_undefined(x) else None, ct_y) + nones
    if mode == "set":
        ct_x = None
        if is_undefined(x):
            ct_x = scatter_p.bind(ct, np.zeros((), core.get_aval(ct).dtype), *arrays, spec=spec, mode="set")
        ct_y = (unbroadcast(getitem_p.bind(ct, *arrays, spec=spec), y.aval)
                if is_undefined(y) else None)
        return (ct_x, ct_y) + nones
    if mode == "mul" and is_undefined(x) and not is_undefined(y):
        return (scatter_p.bind(ct, y, *arrays, spec=spec, mode="mul"), None) + nones
    raise TypeError(f"scatter with mode '{mode}' is not linear in the requested operand")


def _scatter_batch(args, dims, spec, mode):
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
    return scatter_p.bind(x, y, *arrays, spec=new_spec, mode=mode), x_dim


scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose
scatter_p.batch = _scatter_batch

__all__ = ["ARRAY", "getitem", "scatter", "static_slice"]
