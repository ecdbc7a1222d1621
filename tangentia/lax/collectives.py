"""Collectives over a named ``vmap`` axis (``vmap(f, axis_name='i')``), as
JAX's: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``axis_index``,
``axis_size``, ``all_gather``, ``psum_scatter``, ``ppermute``, ``all_to_all``.

Each is a primitive carrying ``axis_name``.  The batching interpreter whose
axis has that name calls the primitive's batch rule with its ``axis_size``
(``BatchTrace._process_collective``), and the rule computes across the batch
axis: ``psum`` sums over it and returns an unbatched value, ``all_gather``
makes the batch axis an ordinary one, ``psum_scatter`` and ``all_to_all``
exchange the batch axis with a data axis.  Under another vmap the rule is
applied elementwise (the value's own batch axis is carried along).  With no
enclosing axis of that name, JAX's ``NameError: unbound axis name``.

Derivatives as JAX's: the linear collectives differentiate to themselves and
transpose to their adjoints (``psum`` to ``psum``, ``all_gather`` to
``psum_scatter``, ``ppermute`` to the inverse permutation, ``all_to_all`` to
the swapped one); ``pmax``/``pmin`` have no derivative, as in JAX.
Programs batched by a named vmap's rules (``jit``, loops, ``cond`` inside it)
are batched with the name, so collectives work inside them too, also when none
of their operands is batched (``jit(lambda: lax.axis_index('i'))()``: the
batching interpreter sees that the program reads its axis).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..core import Primitive, ShapedArray
from ..interpreters import ad
from ..interpreters.base_ops import broadcast_front, move_axis, move_to_front
from ..interpreters.batching import primitive_batchers
from ..primitives import elementwise as E
from ..primitives import indexing as I
from ..primitives import reductions as R
from ..primitives import structural as S
from ..tree_util import tree_map

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, AxisName


def _unbound(name):
    return NameError(f"Found an unbound axis name: {name}. Collectives (lax.psum, ...) need an "
                     f"enclosing vmap(..., axis_name={name!r})")


def _check_bound(name):
    """Raise JAX's NameError unless a vmap with axis ``name`` encloses the current trace."""
    trace = core.current_trace()
    while trace is not None:
        if getattr(trace, "axis_name", None) == name:
            return
        trace = trace.parent
    raise _unbound(name)


def _collective(name, abstract_eval, batch, linear_transpose=None, multiple_results=False):
    p = Primitive(name, multiple_results=multiple_results)

    def impl(*args, axis_name, **params):
        raise _unbound(axis_name)

    def checked_abstract_eval(*avals, axis_name, **params):
        _check_bound(axis_name)
        return abstract_eval(*avals, axis_name=axis_name, **params)
    p.impl = impl
    p.abstract_eval = checked_abstract_eval
    primitive_batchers[p] = batch
    if linear_transpose is not None:
        ad.deflinear(p, linear_transpose)
    return p


def _same_aval(x, **params):
    return ShapedArray(x.shape, x.dtype, x.weak_type)


# ---------------------------------------------------------------------------
# psum / pmax / pmin


def _reduce_batch(prim, reduce, scale_unbatched):
    def batch(vals, dims, *, axis_name, axis_size=None):
        x, = vals
        d, = dims
        if axis_size is None:  # another vmap's axis: elementwise over ours
            return prim.bind(x, axis_name=axis_name), d
        if d is None:
            return (E.mul(x, axis_size) if scale_unbatched else x), None
        return reduce(x, (d,)), None
    return batch


psum_p = _collective("psum", _same_aval, None,
                     lambda ct, x, axis_name: [psum_p.bind(ct, axis_name=axis_name)])
pmax_p = _collective("pmax", _same_aval, None)
pmin_p = _collective("pmin", _same_aval, None)
primitive_batchers[psum_p] = _reduce_batch(psum_p, R.reduce_sum, True)
primitive_batchers[pmax_p] = _reduce_batch(pmax_p, R.reduce_max, False)
primitive_batchers[pmin_p] = _reduce_batch(pmin_p, R.reduce_min, False)


def _no_derivative(name):
    def jvp(primals, tangents, **params):
        raise NotImplementedError(f"Differentiation rule for '{name}' not implemented")
    return jvp


ad.primitive_jvps[pmax_p] = _no_derivative("pmax")
ad.primitive_jvps[pmin_p] = _no_derivative("pmin")


def _names(axis_name):
    return axis_name if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _over_names(prim, x, axis_name):
    for name in _names(axis_name):
        x = prim.bind(x, axis_name=name)
    return x


def psum(x, axis_name, *, axis_index_groups=None) -> Any:
    """The sum of ``x`` over the named axis (or axes), for every leaf of the pytree ``x``."""
    if axis_index_groups is not None:
        raise NotImplementedError("psum: axis_index_groups is not supported")
    return tree_map(lambda v: _over_names(psum_p, _arr(v), axis_name), x)


def pmax(x, axis_name, *, axis_index_groups=None) -> Any:
    """The maximum of ``x`` over the named axis (no derivative, as in JAX)."""
    if axis_index_groups is not None:
        raise NotImplementedError("pmax: axis_index_groups is not supported")
    return tree_map(lambda v: _over_names(pmax_p, _arr(v), axis_name), x)


def pmin(x, axis_name, *, axis_index_groups=None) -> Any:
    """The minimum of ``x`` over the named axis (no derivative, as in JAX)."""
    if axis_index_groups is not None:
        raise NotImplementedError("pmin: axis_index_groups is not supported")
    return tree_map(lambda v: _over_names(pmin_p, _arr(v), axis_name), x)


def axis_size(axis_name: AxisName) -> int:
    """The size of the named axis (a Python int, as in JAX)."""
    size = 1
    for name in _names(axis_name):
        trace = core.current_trace()
        while trace is not None and getattr(trace, "axis_name", None) != name:
            trace = trace.parent
        if trace is None:
            raise _unbound(name)
        size *= trace.axis_size
    return size


def pmean(x, axis_name, *, axis_index_groups=None) -> Any:
    """The mean of ``x`` over the named axis."""
    n = axis_size(axis_name)
    return tree_map(lambda v: E.div(v, n), psum(x, axis_name,
                                                axis_index_groups=axis_index_groups))


def _arr(x):
    return x if isinstance(x, core.Tracer) else np.asarray(x)


# ---------------------------------------------------------------------------
# axis_index


def _axis_index_batch(vals, dims, *, axis_name, axis_size=None):
    return np.arange(axis_size, dtype=np.int32), 0


axis_index_p = _collective("axis_index", lambda axis_name: ShapedArray((), np.dtype(np.int32)),
                           _axis_index_batch)
ad.defjvp_zero(axis_index_p)


def axis_index(axis_name: AxisName) -> Array:
    """This element's position along the named axis (int32); over a tuple of names,
    along the axis of their product, the first major (as JAX's)."""
    first, *rest = _names(axis_name)
    index = axis_index_p.bind(axis_name=first)
    for name in rest:  # Horner's rule: index * size + the next (minor) name's index
        index = E.add(E.mul(index, np.int32(axis_size(name))), axis_index_p.bind(axis_name=name))
    return index


# ---------------------------------------------------------------------------
# all_gather / psum_scatter


def _gathered_shape(shape, n, axis, tiled):
    if tiled:
        return shape[:axis] + (shape[axis] * n,) + shape[axis + 1:]
    return shape[:axis] + (n,) + shape[axis:]


def _all_gather_abstract_eval(x, *, axis_name, axis, tiled, size):
    return ShapedArray(_gathered_shape(x.shape, size, axis, tiled), x.dtype, x.weak_type)


def _all_gather_batch(vals, dims, *, axis_name, axis, tiled, size, axis_size=None):
    x, = vals
    d, = dims
    if axis_size is None:
        out = all_gather_p.bind(move_to_front(x, d), axis_name=axis_name, axis=axis + 1,
                                tiled=tiled, size=size)
        return out, 0
    x = broadcast_front(x, axis_size) if d is None else move_to_front(x, d)
    out = move_axis(x, 0, axis)
    if tiled:
        shape = core.get_aval(out).shape
        out = S.reshape(out, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])
    return out, None


def _psum_scatter_abstract_eval(x, *, axis_name, scatter_dimension, tiled, size):
    shape = x.shape
    n = shape[scatter_dimension]
    if (n % size) if tiled else (n != size):
        raise ValueError(f"psum_scatter: dimension {scatter_dimension} of the operand (size "
                         f"{n}) must {'be divisible by' if tiled else 'equal'} the axis size "
                         f"{size}")
    if tiled:
        out = shape[:scatter_dimension] + (n // size,) + shape[scatter_dimension + 1:]
    else:
        out = shape[:scatter_dimension] + shape[scatter_dimension + 1:]
    return ShapedArray(out, x.dtype, x.weak_type)


def _psum_scatter_batch(vals, dims, *, axis_name, scatter_dimension, tiled, size,
                        axis_size=None):
    x, = vals
    d, = dims
    if axis_size is None:
        out = psum_scatter_p.bind(move_to_front(x, d), axis_name=axis_name,
                                  scatter_dimension=scatter_dimension + 1, tiled=tiled,
                                  size=size)
        return out, 0
    total = E.mul(x, axis_size) if d is None else R.reduce_sum(x, (d,))
    if tiled:
        shape = core.get_aval(total).shape
        n = shape[scatter_dimension]
        total = S.reshape(total, shape[:scatter_dimension] + (axis_size, n // axis_size)
                          + shape[scatter_dimension + 1:])
    return total, scatter_dimension


def _all_gather_transpose(ct, x, *, axis_name, axis, tiled, size):
    return [psum_scatter_p.bind(ct, axis_name=axis_name, scatter_dimension=axis, tiled=tiled,
                                size=size)]


def _psum_scatter_transpose(ct, x, *, axis_name, scatter_dimension, tiled, size):
    return [all_gather_p.bind(ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled,
                              size=size)]


all_gather_p = _collective("all_gather", _all_gather_abstract_eval, _all_gather_batch,
                           _all_gather_transpose)
psum_scatter_p = _collective("psum_scatter", _psum_scatter_abstract_eval, _psum_scatter_batch,
                             _psum_scatter_transpose)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False,
               to: str = "varying") -> Any:
    """Every element's ``x`` stacked along a new ``axis`` (concatenated if ``tiled``).
    ``to``: JAX's output type ('varying', 'reduced' or 'invarying'; tangentia tracks no
    varying/replicated types, so it changes nothing)."""
    if to not in ("varying", "reduced", "invarying"):
        raise ValueError(f"all_gather: argument 'to' must be 'varying', 'reduced' or "
                         f"'invarying', got {to!r}")
    if axis_index_groups is not None:
        raise NotImplementedError("all_gather: axis_index_groups is not supported")
    size = axis_size(axis_name)

    def one(v):
        v = _arr(v)
        nd = len(core.get_aval(v).shape)
        ax = axis % (nd + (0 if tiled else 1)) if nd or not tiled else 0
        return all_gather_p.bind(v, axis_name=axis_name, axis=ax, tiled=bool(tiled), size=size)
    return tree_map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False) -> Any:
    """``psum`` whose result is split along ``scatter_dimension``: element ``i`` keeps
    block ``i``."""
    if axis_index_groups is not None:
        raise NotImplementedError("psum_scatter: axis_index_groups is not supported")
    size = axis_size(axis_name)

    def one(v):
        v = _arr(v)
        dim = scatter_dimension % len(core.get_aval(v).shape)
        return psum_scatter_p.bind(v, axis_name=axis_name, scatter_dimension=dim,
                                   tiled=bool(tiled), size=size)
    return tree_map(one, x)


# ---------------------------------------------------------------------------
# ppermute


def _ppermute_batch(vals, dims, *, axis_name, perm, axis_size=None):
    x, = vals
    d, = dims
    if axis_size is None:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    x = broadcast_front(x, axis_size) if d is None else move_to_front(x, d)
    src = np.zeros(axis_size, np.int64)
    has = np.zeros(axis_size, bool)
    for s, t in perm:
        src[t], has[t] = s, True
    out = I.getitem(x, (I.ARRAY,), (src,))
    if not has.all():
        shape = core.get_aval(out).shape
        mask = S.broadcast_to(has.reshape((-1,) + (1,) * (len(shape) - 1)), shape)
        out = E.select(mask, out, np.zeros((), core.get_aval(out).dtype))
    return out, 0


def _ppermute_transpose(ct, x, *, axis_name, perm):
    return [ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((t, s) for s, t in perm))]


ppermute_p = _collective("ppermute", _same_aval, _ppermute_batch, _ppermute_transpose)


def ppermute(x, axis_name, perm) -> Any:
    """Element ``dst`` receives ``x`` of element ``src`` for each ``(src, dst)`` in
    ``perm``; elements no pair sends to receive zeros."""
    perm = tuple((int(s), int(t)) for s, t in perm)
    srcs, dsts = [s for s, _ in perm], [t for _, t in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
    n = axis_size(axis_name)
    if any(not 0 <= i < n for i in srcs + dsts):
        raise ValueError(f"ppermute: perm {perm} names positions outside the axis of size {n}")
    return tree_map(lambda v: ppermute_p.bind(_arr(v), axis_name=axis_name, perm=perm), x)


# ---------------------------------------------------------------------------
# all_to_all


def _all_to_all_abstract_eval(x, *, axis_name, split_axis, concat_axis, size):
    shape = list(x.shape)
    if shape[split_axis] != size:
        raise ValueError(f"all_to_all: dimension {split_axis} of the operand (size "
                         f"{shape[split_axis]}) must equal the axis size {size}")
    del shape[split_axis]
    shape.insert(concat_axis, size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _all_to_all_batch(vals, dims, *, axis_name, split_axis, concat_axis, size,
                      axis_size=None):
    x, = vals
    d, = dims
    if axis_size is None:
        out = all_to_all_p.bind(move_to_front(x, d), axis_name=axis_name,
                                split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                                size=size)
        return out, 0
    x = broadcast_front(x, axis_size) if d is None else move_to_front(x, d)
    # x[i, ..., j (split), ...] -> out[j, ..., i (concat), ...]
    out = move_axis(x, split_axis + 1, 0)  # j first, i second
    return move_axis(out, 1, concat_axis + 1), 0


def _all_to_all_transpose(ct, x, *, axis_name, split_axis, concat_axis, size):
    return [all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                              concat_axis=split_axis, size=size)]


all_to_all_p = _collective("all_to_all", _all_to_all_abstract_eval, _all_to_all_batch,
                           _all_to_all_transpose)


def _all_to_all_names(v, names, split, concat, n):
    """Untiled all_to_all over the named axes ``names`` taken together (the first
    major, as JAX's), by one all_to_all per name: the split axis is cut into the
    first name's part and the rest's, each is exchanged over its axis and the two
    received axes are merged at ``concat``."""
    if len(names) == 1:
        return all_to_all_p.bind(v, axis_name=names[0], split_axis=split, concat_axis=concat,
                                 size=n)
    first = axis_size(names[0])
    shape = core.get_aval(v).shape
    v = S.reshape(v, shape[:split] + (first, n // first) + shape[split + 1:])
    v = all_to_all_p.bind(v, axis_name=names[0], split_axis=split, concat_axis=0, size=first)
    v = _all_to_all_names(v, names[1:], split + 1, 1, n // first)
    shape = core.get_aval(v).shape
    return move_axis(S.reshape(v, (n,) + shape[2:]), 0, concat)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False
               ) -> Any:
    """Element ``i`` sends block ``j`` of ``split_axis`` to element ``j``, which
    stacks what it receives along ``concat_axis`` (concatenates if ``tiled``)."""
    if axis_index_groups is not None:
        raise NotImplementedError("all_to_all: axis_index_groups is not supported")
    n = axis_size(axis_name)

    def one(v):
        v = _arr(v)
        shape = core.get_aval(v).shape
        split, concat = split_axis % len(shape), concat_axis % len(shape)
        if not tiled:
            return _all_to_all_names(v, _names(axis_name), split, concat, n)
        if shape[split] % n:
            raise ValueError(f"all_to_all: dimension {split} of the operand (size "
                             f"{shape[split]}) must be divisible by the axis size {n}")
        blocks = S.reshape(v, shape[:split] + (n, shape[split] // n) + shape[split + 1:])
        c = concat  # the sources' axis lands here, the received blocks' axis after it
        out = _all_to_all_names(blocks, _names(axis_name), split, c, n)
        oshape = core.get_aval(out).shape
        return S.reshape(out, oshape[:c] + (oshape[c] * oshape[c + 1],) + oshape[c + 2:])
    return tree_map(one, x)


def pshuffle(x, axis_name, perm) -> Any:
    """Element ``i`` receives ``x`` of element ``perm[i]`` (``jax.lax.pshuffle``)."""
    perm = [int(p) for p in perm]
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None) -> Any:
    """Swap the named axis with data axis ``axis`` (``all_to_all`` with ``split_axis ==
    concat_axis == axis``)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)
