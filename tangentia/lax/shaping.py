"""``jax.lax``'s shape and layout operations: ``pad`` (negative and interior
padding), ``rev``, ``iota``, ``select_n``, ``collapse``, ``split``, ``top_k``,
``sort_key_val``, ``batch_matmul``, ... and the parallel-prefix
``associative_scan`` with ``cumlogsumexp`` on it.

All are compositions of existing primitives, so they differentiate, batch and
stage as those do.
"""
from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..numpy import _creation as NC
from ..numpy import _elementwise as NE
from ..numpy import _indexing as NI
from ..numpy import _shapes as NS
from ..numpy import _sorting as NSO
from ..primitives import contraction as C
from ..primitives import elementwise as E
from ..primitives import indexing as I
from ..primitives import structural as S
from ..primitives import windowed as W
from ..tree_util import tree_flatten, tree_unflatten
from .numeric import bitcast_convert_type
from .ops import _bounds_axis, _cumulative_axis, _list_axis, _static_int, _static_ints, _tag

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike, Shape


def _shape(x):
    return core.get_aval(x).shape


def _array(x):
    return x if isinstance(x, core.Tracer) else np.asarray(x)


def shape_as_value(shape: Sequence[int]) -> Array:
    """``shape`` as an int32 vector (``jax.lax.shape_as_value``; tangentia's shapes are
    static, so its entries are Python integers)."""
    dims = _static_ints("shape_as_value", "shape", tuple(shape))
    return np.asarray(dims, np.int32).reshape(len(dims))


def iota(dtype: DTypeLike, size: int) -> Array:
    """``[0, 1, ..., size - 1]`` as ``dtype`` (``jax.lax.iota``)."""
    (size,) = _static_ints("iota", "size", (size,))
    if size < 0:
        raise TypeError(f"iota shape must have every element be nonnegative, got ({size},)."
                        + _tag("iota", "size must be >= 0"))
    return NC.np_arange(0, size, 1, np.dtype(dtype))


def broadcasted_iota(dtype: DTypeLike, shape: Shape, dimension: int, *, out_sharding=None) -> Array:
    """An array of ``shape`` whose entries are their index along ``dimension``."""
    shape = _static_ints("broadcasted_iota", "shape", shape)
    dimension = int(dimension)  # JAX accepts dimension=1.0
    if not 0 <= dimension < len(shape):
        raise ValueError(f"broadcasted_iota: dimension {dimension} is out of range for shape "
                         f"{shape}")
    ramp = np.arange(shape[dimension], dtype=np.dtype(dtype)).reshape(
        (-1,) + (1,) * (len(shape) - dimension - 1))
    return np.broadcast_to(ramp, shape).copy()


def empty(shape, dtype, *, out_sharding=None) -> Array:
    """An array of ``shape`` and ``dtype`` (zeros here; ``jax.lax.empty``)."""
    return np.zeros(tuple(shape), np.dtype(dtype))


def optimization_barrier(operand, /) -> Any:
    """``operand`` unchanged (``jax.lax.optimization_barrier``: a scheduling hint); JAX's
    TypeError for a leaf that is no array or number (a str, an object)."""
    for i, x in enumerate(tree_flatten(operand)[0]):
        try:
            ok = core.get_aval(x).dtype.kind not in "OUS"   # (an ndarray of str: no JAX type)
        except TypeError:
            ok = False
        if not ok:
            raise TypeError("Error interpreting argument to optimization_barrier as a JAX "
                            f"value. The problematic value is of type {type(x)} and was "
                            f"passed to optimization_barrier at position {i}.")
    return operand


def with_sharding_constraint(x, shardings) -> Any:
    """``x`` unchanged: there is one CPU device (``jax.lax.with_sharding_constraint``)."""
    return x


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The broadcast of ``shapes`` (``jax.lax.broadcast_shapes``)."""
    shapes = tuple(tuple(s) for s in shapes)
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:   # JAX's words (NumPy's "shape mismatch: objects cannot be ...")
        raise ValueError("Incompatible shapes for broadcasting: shapes=["
                         f"{', '.join(str(s) for s in shapes)}]") from None


def broadcast_like(arr: ArrayLike, like_arr: ArrayLike) -> Array:
    """``arr`` broadcast to the shape of ``like_arr`` (``jax.lax.broadcast_like``)."""
    return S.broadcast_to(_array(arr), _shape(like_arr))


def approx_max_k(operand: Array, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True
                 ) -> tuple[Array, Array]:
    """The ``k`` largest entries along ``reduction_dimension`` and their indices; exact
    on the CPU, as JAX's (``jax.lax.approx_max_k``)."""
    return top_k(operand, k, axis=reduction_dimension)


def approx_min_k(operand: Array, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True
                 ) -> tuple[Array, Array]:
    """The ``k`` smallest entries along ``reduction_dimension`` and their indices; exact
    on the CPU, as JAX's (``jax.lax.approx_min_k``)."""
    values, idx = top_k(E.neg(_array(operand)), k, axis=reduction_dimension)
    return E.neg(values), idx


def platform_dependent(*args: Any, default: Callable[..., Any] | None = None,
                       **per_platform: Callable[..., Any]) -> Any:
    """Call the ``cpu`` branch (else ``default``) with ``args``: the one platform here."""
    fn = per_platform.get("cpu", default)
    if fn is None:
        raise NotImplementedError("platform_dependent: no branch for the 'cpu' platform and no "
                                  "default")
    return fn(*args)


def composite(decomposition: Callable, name: str, version: int = 0) -> Any:
    """``decomposition`` itself: a composite is its decomposition on the CPU
    (``jax.lax.composite``)."""
    return decomposition


def broadcast_to_rank(x: ArrayLike, rank: int) -> Array:
    """``x`` with leading axes of size 1 up to ``rank`` dimensions."""
    shape = _shape(x)
    if len(shape) >= rank:
        return x
    return S.reshape(x, (1,) * (rank - len(shape)) + shape)


def pad(operand: ArrayLike, padding_value: ArrayLike, padding_config: Sequence[tuple[int, int, int]]
        ) -> Array:
    """``operand`` padded with the scalar ``padding_value``: ``padding_config`` holds
    one ``(low, high, interior)`` per axis; negative ``low``/``high`` crop
    (``jax.lax.pad``).  Differentiable in both arguments."""
    x = _array(operand)
    shape = _shape(x)
    if _shape(padding_value) != ():   # JAX's checks, in JAX's order and words
        raise ValueError(f"padding_value must be a scalar; got np.shape(padding_value)="
                         f"{_shape(padding_value)}" + _tag("pad", "pad with one value"))
    config = [_static_ints("pad", "padding_config", c) for c in padding_config]
    cfg = tuple(tuple(c) for c in config)
    if len(config) != len(shape) or any(len(c) != 3 for c in config):
        raise ValueError(f"length of padding_config must equal the number of axes of operand, "
                         f"got padding_config {cfg} for operand shape {shape}"
                         + _tag("pad", "one (low, high, interior) triple per dimension"))
    if any(c[2] < 0 for c in config):
        raise ValueError(f"interior padding in padding_config must be nonnegative, got "
                         f"padding_config {cfg}" + _tag("pad", "interior >= 0"))
    out = tuple(lo + hi + n + max(n - 1, 0) * it for n, (lo, hi, it) in zip(shape, config))
    if any(n < 0 for n in out):
        raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                         f"{out}, for padding_config {cfg} and operand shape {shape}"
                         + _tag("pad", "negative low/high crop at most the padded size"))
    dx, dv = core.get_aval(x).dtype, core.get_aval(padding_value).dtype
    if dx != dv:
        raise TypeError(f"pad operand and padding_value must be same dtype: got "
                        f"{np.dtype(dx).name} and {np.dtype(dv).name}."
                        + _tag("pad", "lax does not promote; convert padding_value first"))
    return W.pad(x, padding_value, config)


def rev(operand: ArrayLike, dimensions: Sequence[int]) -> Array:
    """``operand`` reversed along ``dimensions`` (``jax.lax.rev``: each in ``[0, ndim)``,
    once)."""
    dims = tuple(dimensions)
    if not all(isinstance(d, (int, np.integer)) for d in dims):
        raise TypeError(f"rev dimensions must have every element be an integer type, got "
                        f"{tuple(type(d) for d in dims)}."
                        + _tag("rev", f"argument 'dimensions' must hold integers, got {dims}"))
    dims = tuple(int(d) for d in dims)
    if len(set(dims)) != len(dims):
        raise TypeError(f"rev dimensions must be unique, got {dims}."
                        + _tag("rev", "name each dimension once"))
    if any(d < 0 for d in dims):
        raise TypeError(f"rev dimensions must have every element be nonnegative, got {dims}."
                        + _tag("rev", "lax.rev does not count from the end"))
    if not dims:
        return operand
    return NI.flip(operand, dims)


def select_n(which: ArrayLike, *cases: ArrayLike) -> Array:
    """``cases[which]`` elementwise: ``which`` is boolean (two cases) or an integer
    array (``jax.lax.select_n``)."""
    if not cases:
        raise ValueError("select_n: at least one case is required")
    which = _array(which)
    kind = np.dtype(core.get_aval(which).dtype).kind
    if kind == "b":
        if len(cases) > 2:
            raise ValueError(f"select_n: a boolean 'which' selects among at most 2 cases, got "
                             f"{len(cases)}")
        return cases[0] if len(cases) == 1 else E.select(which, cases[1], cases[0])
    if kind not in "iu":
        raise TypeError(f"select_n: argument 'which' must be boolean or integer, got "
                        f"{core.get_aval(which).dtype}")
    # An out-of-range ``which`` picks the nearest case (below 0 the first, past the end
    # the last), as JAX's tree of selects does.
    out = cases[0]
    for i, case in enumerate(cases[1:], 1):
        out = E.select(E.ge(which, i), case, out)
    return out


def index_in_dim(operand: ArrayLike, index: int, axis: int = 0, keepdims: bool = True) -> Array:
    """The slice at static ``index`` along ``axis`` (``jax.lax.index_in_dim``); a negative
    index counts from the end, an index out of range is an IndexError."""
    fname = "index_in_dim"
    shape = _shape(operand)
    axis = _list_axis(fname, axis, len(shape), "tuple index out of range")
    given = _static_int(fname, "index", index)
    index = given + shape[axis] if given < 0 else given
    if not 0 <= index < shape[axis]:
        raise IndexError(f"index {given} is out of bounds for axis {axis} with size "
                         f"{shape[axis]}" + _tag(fname, f"index must be in [{-shape[axis]}, "
                                                  f"{shape[axis]})"))
    out = I.static_slice(operand, axis, index, index + 1)
    return out if keepdims else S.reshape(out, shape[:axis] + shape[axis + 1:])


def index_take(src: Array, idxs: Array, axes: Sequence[int]) -> Array:
    """``src`` indexed by the arrays ``idxs`` on ``axes`` (wrapped modulo the sizes):
    result axis 0 runs over the indices, the untouched axes follow in order."""
    nd = len(_shape(src))
    axes = [_static_int("index_take", "axes", a) for a in axes]
    for i, a in enumerate(axes):
        if a >= nd:
            raise IndexError("tuple index out of range"
                             + _tag("index_take", f"axis {a} is out of range for an operand of "
                                    f"rank {nd}"))
        if a < 0:
            raise TypeError(f"Invalid start_index_map; domain is [0, {nd}), got: {i}->{a}."
                            + _tag("index_take", "axes must be in [0, ndim); lax does not "
                                   "count from the end"))
    rest = [d for d in range(len(_shape(src))) if d not in axes]
    moved = S.transpose(src, tuple(axes + rest)) if axes + rest != sorted(axes + rest) else src
    sizes = [_shape(src)[a] for a in axes]
    arrays = [E.remainder(S.convert_element_type(_array(i), np.int64), n)
              for i, n in zip(idxs, sizes)]
    spec = (I.ARRAY,) * len(axes) + (builtins.slice(None),) * len(rest)
    return I.getitem(moved, spec, arrays)


def collapse(operand: Array, start_dimension: int, stop_dimension: int | None = None) -> Array:
    """``operand`` with dimensions ``[start_dimension, stop_dimension)`` merged into one."""
    shape = _shape(operand)
    nd = len(shape)
    # a negative dimension counts from the end (as a Python slice's bound)
    lo = _static_int("collapse", "start_dimension", start_dimension)
    lo = lo + nd if lo < 0 else lo
    hi = nd if stop_dimension is None else _static_int("collapse", "stop_dimension",
                                                       stop_dimension)
    hi = hi + nd if hi < 0 else hi
    if not 0 <= lo <= hi <= len(shape):
        raise ValueError(f"collapse: dimensions [{start_dimension}, {stop_dimension}) are out "
                         f"of range for shape {shape}")
    return S.reshape(operand, shape[:lo] + (int(np.prod(shape[lo:hi])),) + shape[hi:])


def tile(operand: ArrayLike, reps: Sequence[int]) -> Array:
    """``operand`` repeated ``reps[i]`` times along axis ``i`` (``jax.lax.tile``: one
    repetition count per dimension)."""
    reps = _static_ints("tile", "reps", reps)
    nd = len(_shape(operand))
    if len(reps) != nd:
        raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                        f"and x.ndim={nd}." + _tag("tile", "one repetition count per dimension"))
    return NS.tile(operand, reps)


def split(operand: ArrayLike, sizes: Sequence[int], axis: int = 0) -> Sequence[Array]:
    """Pieces of ``operand`` of the given ``sizes`` along ``axis`` (``jax.lax.split``)."""
    sizes = list(_static_ints("split", "sizes", sizes))
    n = _shape(operand)[_bounds_axis("split", axis, len(_shape(operand)))]
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes}"
                         + _tag("split", "sizes are non-negative"))
    if sum(sizes) != n:
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                         f"operand shape {list(_shape(operand))}"
                         + _tag("split", f"sizes sum to the size {n} of axis {axis}"))
    bounds = np.cumsum([0] + sizes).tolist()
    ax = axis % len(_shape(operand))
    return [I.static_slice(operand, ax, a, b) for a, b in zip(bounds, bounds[1:])]


def stack(operands: Sequence[ArrayLike], axis: int = 0) -> Array:
    """Arrays of one shape joined along a new ``axis`` (``jax.lax.stack``)."""
    operands = list(operands)
    if operands:
        _bounds_axis("stack", axis, len(_shape(operands[0])) + 1)
    return NS.stack(operands, axis)


def unstack(x: ArrayLike, axis: int = 0) -> tuple[Array, ...]:
    """The slices of ``x`` along ``axis``, as a tuple (``jax.lax.unstack``)."""
    return NI.unstack(x, axis=axis)


def _descending_key(x):
    """An integer key whose ascending order is ``x``'s descending order, exact for every
    value: the bitwise complement for integers (negation overflows at INT_MIN and wraps
    unsigned values), and for floats of XLA's total order (+NaN > inf > ... > 0.0 > -0.0
    > ... > -inf > -NaN, as JAX's top_k) the complement of the bits read as a signed
    integer with the magnitude bits of negative values flipped."""
    dt = np.dtype(core.get_aval(x).dtype)
    if dt.kind == "b":
        return E.not_p.bind(x)
    if dt.kind in "iu":
        return E.bitwise_not_p.bind(x)
    if dt.kind == "c":
        raise TypeError(f"top_k does not accept dtype {dt.name}."
                        + _tag("top_k", "complex values have no order"))
    ints = np.dtype(f"int{8 * dt.itemsize}")
    bits = bitcast_convert_type(S.stop_gradient(x), ints)
    magnitude = np.array(np.iinfo(ints).max, ints)
    total = E.select(E.lt(bits, np.zeros((), ints)), E.bitwise_xor_p.bind(bits, magnitude),
                     bits)
    return E.bitwise_not_p.bind(total)


def top_k(operand: ArrayLike, k: int, *, axis: int = -1) -> tuple[Array, Array]:
    """The ``k`` largest entries along ``axis`` in descending order and their
    indices (int32, as JAX's; ties keep the lower index first)."""
    (k,) = _static_ints("top_k", "k", (k,))
    shape = _shape(operand)
    ax = _bounds_axis("top_k", axis, len(shape))
    n = shape[ax]
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}"
                         + _tag("top_k", f"k must be in [0, {n}]"))
    if k > n:
        raise ValueError(f"k argument to top_k must be no larger than size along axis; got "
                         f"k={k} with shape={list(shape)} and axis={ax}"
                         + _tag("top_k", f"k must be in [0, {n}]"))
    if n > np.iinfo(np.int32).max:
        raise ValueError(f"top_k returns int32 indices, which will overflow for array "
                         f"dimensions larger than the maximum int32 ({np.iinfo(np.int32).max}). "
                         f"Got operand.shape={tuple(shape)}"
                         + _tag("top_k", "the indices are int32, as JAX's"))
    x = _array(operand)
    order = NSO.argsort(_descending_key(x), axis=axis, stable=True)
    idx = I.static_slice(order, axis % len(_shape(x)), 0, k)
    return NI.take_along_axis(x, idx, axis), S.convert_element_type(idx, np.int32)


def sort_key_val(keys: Array, values: ArrayLike, dimension: int = -1, is_stable: bool = True
                 ) -> tuple[Array, Array]:
    """``keys`` sorted along ``dimension`` and ``values`` permuted the same way."""
    order = NSO.argsort(keys, axis=dimension, stable=True)
    return NI.take_along_axis(keys, order, dimension), NI.take_along_axis(values, order, dimension)


def batch_matmul(lhs: Array, rhs: Array, precision: Any = None) -> Array:
    """Batched matrix product of ``(..., m, k)`` and ``(..., k, n)`` arrays of one rank."""
    ls, rs = _shape(lhs), _shape(rhs)
    if len(ls) != len(rs) or len(ls) < 2 or ls[:-2] != rs[:-2]:
        raise ValueError(f"batch_matmul: lhs and rhs must have one rank >= 2 and the same batch "
                         f"dimensions, got shapes {ls} and {rs}")
    batch = tuple(range(len(ls) - 2))
    return C.dot_general(lhs, rhs, (((len(ls) - 1,), (len(rs) - 2,)), (batch, batch)))


# ---------------------------------------------------------------------------
# associative_scan (parallel prefix, as JAX's)


def _interleave(a, b, axis):
    """``a[0], b[0], a[1], b[1], ...`` along ``axis`` (``a`` as long as ``b`` or one longer)."""
    na, nb = _shape(a)[axis], _shape(b)[axis]
    head = I.static_slice(a, axis, 0, nb) if na != nb else a
    both = NS.stack([head, b], axis + 1)
    shape = _shape(both)
    out = S.reshape(both, shape[:axis] + (2 * nb,) + shape[axis + 2:])
    if na != nb:
        out = S.concatenate([out, I.static_slice(a, axis, nb, na)], axis)
    return out


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0) -> Any:
    """All prefix combinations ``fn(...fn(fn(e0, e1), e2)..., ei)`` of the pytree
    ``elems`` along ``axis`` by parallel prefix (``jax.lax.associative_scan``);
    ``fn`` must be associative and work on slices of ``elems``."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    flat, tree = tree_flatten(elems)
    flat = [_array(e) for e in flat]
    if not flat:
        return elems
    nd = len(_shape(flat[0]))
    axis = operator.index(axis)
    if not -nd <= axis < nd:   # (axis=3 of a vector ran along axis 0: 3 % 1)
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {nd} "
                         f"(associative_scan: argument 'axis', elems of shape "
                         f"{_shape(flat[0])})")
    axis = axis % nd
    if reverse:
        flat = [rev(e, [axis]) for e in flat]
    n = _shape(flat[0])[axis]
    if any(_shape(e)[axis] != n for e in flat):
        raise ValueError(f"associative_scan: array inputs to associative_scan must have the "
                         f"same first dimension. (saw: {[_shape(e) for e in flat]})")

    def combine(a, b):
        out, out_tree = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        if out_tree != tree:
            raise ValueError(f"associative_scan: fn must return a pytree of the structure of "
                             f"elems ({tree}), got {out_tree}")
        return out

    def piece(e, start, stop, step=1):
        size = _shape(e)[axis]
        stop = size if stop is None else (stop if stop >= 0 else size + stop)
        spec = [builtins.slice(None)] * len(_shape(e))
        spec[axis] = builtins.slice(start, stop, step)
        return I.getitem(e, tuple(spec))

    def scan(es):
        size = _shape(es[0])[axis]
        if size < 2:
            return es
        reduced = combine([piece(e, 0, -1, 2) for e in es], [piece(e, 1, None, 2) for e in es])
        odd = scan(reduced)
        if size % 2 == 0:
            even = combine([piece(e, 0, -1) for e in odd], [piece(e, 2, None, 2) for e in es])
        else:
            even = combine(odd, [piece(e, 2, None, 2) for e in es])
        even = [S.concatenate([piece(e, 0, 1), r], axis) for e, r in zip(es, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(flat)
    if reverse:
        out = [rev(e, [axis]) for e in out]
    return tree_unflatten(tree, out)


def cumlogsumexp(operand: Array, axis: int = 0, reverse: bool = False) -> Array:
    """``log(cumsum(exp(operand)))`` along ``axis``, computed stably (``jax.lax.cumlogsumexp``)."""
    x = _array(operand)
    axis = _cumulative_axis("cumlogsumexp", x, axis)
    return associative_scan(NE.logaddexp, x, reverse=reverse, axis=axis)

