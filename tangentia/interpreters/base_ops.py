"""The few primitives the interpreters themselves emit, with all their rules.

Batching moves and broadcasts batch axes (``transpose``, ``broadcast_to``),
and transposing a broadcast sums it back (``reduce_sum``, ``reshape``,
``convert_element_type``: ``unbroadcast``).  These primitives live here, in
the interpreter layer, so that the interpreters never import the primitives
layer (which builds on them): the import graph stays a DAG.  JAX keeps its
``add_jaxvals`` primitive low for the same reason; ``add_any`` is in
``ad`` (staging emits no primitive for constants: they become the
program's inputs, see ``partial_eval``).

``tangentia.primitives.structural`` and ``tangentia.primitives.reductions``
re-export everything defined here, so the primitives are still found where
users of the library look for them.
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from . import ad
from .ad import Zero, deflinear

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike, DTypeLike, Shape

# The batching rule of each primitive: ``rule(args, dims, **params) -> (out,
# out_dim)``.  This is ``batching.primitive_batchers``; the dictionary is made
# here because this module, below ``batching``, fills it first (its primitives'
# rules), and every primitive's module then adds its own.
primitive_batchers = {}

# ---------------------------------------------------------------------------
# No-op results


def unchanged(x):
    """``x`` returned by an operation that does nothing to it.

    Eagerly, Python and NumPy scalars become arrays, as the output of a bound
    primitive would; under a transformation the value is kept as it is.
    """
    if type(x) is np.ndarray or isinstance(x, core.Tracer) or not core.is_eager():
        return x
    return np.asarray(x)


# ---------------------------------------------------------------------------
# Helpers for batching rules (they run under the parent interpreter).
# ``tangentia.interpreters.batching`` re-exports them.


def move_to_front(x, d):
    """Move batch dimension ``d`` of ``x`` to axis 0 (no-op if already there)."""
    if d == 0 or d is None:
        return x
    nd = core.get_aval(x).ndim
    perm = (d,) + tuple(i for i in range(nd) if i != d)
    return transpose(x, perm)


def move_axis(x, src, dst):
    if src == dst:
        return x
    nd = core.get_aval(x).ndim
    order = [i for i in range(nd) if i != src]
    order.insert(dst, src)
    return transpose(x, tuple(order))


def broadcast_front(x, size):
    """Add a leading batch axis of ``size`` to an unbatched value."""
    a = core.get_aval(x)
    return broadcast_to(x, (size,) + a.shape)


def materialize(x, d, size):
    """Batched value with its batch axis at the front (broadcasting if unbatched)."""
    if d is None:
        return broadcast_front(x, size)
    return move_to_front(x, d)


def batch_size(vals, dims):
    for v, d in zip(vals, dims):
        if d is not None:
            return core.get_aval(v).shape[d]
    raise ValueError("no batched argument")


# ---------------------------------------------------------------------------
# reshape

reshape_p = Primitive("reshape")
reshape_p.impl = lambda x, new_sizes: np.reshape(x, new_sizes)


def _reshape_abstract_eval(x, new_sizes):
    size = 1
    for d in new_sizes:
        size *= d
    if size != x.size:
        raise ValueError(f"reshape: cannot reshape array of shape {x.shape} (size {x.size}) "
                         f"into shape {tuple(new_sizes)} (size {size})")
    return ShapedArray(tuple(new_sizes), x.dtype, x.weak_type)


reshape_p.abstract_eval = _reshape_abstract_eval
deflinear(reshape_p, lambda ct, x, new_sizes: (reshape(ct, x.aval.shape),))


def _reshape_batch(args, dims, new_sizes):
    x = move_to_front(args[0], dims[0])
    b = core.get_aval(x).shape[0]
    return reshape(x, (b,) + tuple(new_sizes)), 0


primitive_batchers[reshape_p] = _reshape_batch


def traced_shape_error(shape, fname):
    """JAX's TypeError for a shape holding traced values, with which function and what to do."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    return TypeError(
        f"Shapes must be 1D sequences of concrete values of integer type, got {dims}. "
        f"{fname}: argument 'shape' is traced, so the result's shape would be unknown; pass it "
        "as a static argument (static_argnums / static_argnames of jit) or take it from an "
        "array's .shape.")


def static_shape(shape, fname):
    """``shape`` as a tuple of ints; ``traced_shape_error`` if a dimension is traced."""
    try:
        return tuple(int(d) for d in shape)
    except core.ConcretizationTypeError:
        raise traced_shape_error(shape, fname) from None


def reshape(x, new_sizes):
    new_sizes = static_shape(new_sizes, "reshape")
    if core.get_aval(x).shape == new_sizes:
        return unchanged(x)
    return reshape_p.bind(x, new_sizes=new_sizes)


# ---------------------------------------------------------------------------
# transpose

transpose_p = Primitive("transpose")
transpose_p.impl = lambda x, permutation: np.transpose(x, permutation)


def _transpose_abstract_eval(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ValueError(f"transpose: permutation {permutation} is not a permutation of the "
                         f"axes of an array of shape {x.shape}")
    return ShapedArray(tuple(x.shape[i] for i in permutation), x.dtype, x.weak_type)


transpose_p.abstract_eval = _transpose_abstract_eval


def _transpose_transpose(ct, x, permutation):
    inv = tuple(np.argsort(permutation))
    return (transpose(ct, inv),)


deflinear(transpose_p, _transpose_transpose)


def _transpose_batch(args, dims, permutation):
    x = move_to_front(args[0], dims[0])
    return transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


primitive_batchers[transpose_p] = _transpose_batch


def transpose(x, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return unchanged(x)
    return transpose_p.bind(x, permutation=permutation)


# ---------------------------------------------------------------------------
# broadcast_to (NumPy semantics: align trailing axes)

broadcast_to_p = Primitive("broadcast_to")
broadcast_to_p.impl = lambda x, shape: np.broadcast_to(x, shape)


def _broadcast_to_abstract_eval(x, shape):
    nd = len(shape)
    if x.ndim > nd or any(d != 1 and d != shape[nd - x.ndim + i] for i, d in enumerate(x.shape)):
        raise ValueError(f"broadcast_to: cannot broadcast an array of shape {x.shape} "
                         f"to shape {tuple(shape)}")
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


broadcast_to_p.abstract_eval = _broadcast_to_abstract_eval
deflinear(broadcast_to_p, lambda ct, x, shape: (unbroadcast(ct, x.aval),))


def _broadcast_to_batch(args, dims, shape):
    x = move_to_front(args[0], dims[0])
    xs = core.get_aval(x).shape
    b, per = xs[0], xs[1:]
    x = reshape(x, (b,) + (1,) * (len(shape) - len(per)) + per)
    return broadcast_to(x, (b,) + tuple(shape)), 0


primitive_batchers[broadcast_to_p] = _broadcast_to_batch


def broadcast_to(x: ArrayLike, shape: Shape) -> Array:
    shape = static_shape(shape, "broadcast_to")
    if core.get_aval(x).shape == shape:
        return unchanged(x)
    return broadcast_to_p.bind(x, shape=shape)


# ---------------------------------------------------------------------------
# convert_element_type

convert_element_type_p = Primitive("convert_element_type")


def _convert_impl(x, new_dtype, weak_type=False):
    x = np.asarray(x)
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = x.real  # complex to real keeps the real part, as lax.convert_element_type
    if new_dtype.kind not in "fcb" and dtypes.kind(new_dtype) in "iu" \
            and dtypes.kind(x.dtype) == "f":
        return _float_to_int(x, new_dtype)
    return x.astype(new_dtype)


_MIN, _MAX = np.minimum.reduce, np.maximum.reduce


def _float_to_int(x, new_dtype):
    """Floats to integers as XLA's: truncated, saturating at the type's limits, NaN to 0
    (NumPy's C cast is undefined out of range: ``int8(300.0)`` was 44, JAX's 127)."""
    info = dtypes.iinfo(new_dtype)
    lo, hi = float(info.min), float(info.max) + 1.0  # both powers of two (or 0): exact
    if x.dtype.kind != "f":
        x = x.astype(np.float32)   # bfloat16 and the float8s: NumPy compares them in float32
    if x.ndim == 0:
        if lo <= x.item() < hi:   # (NaN fails)
            return x.astype(new_dtype)
    elif x.size and lo <= _MIN(x, axis=None) and _MAX(x, axis=None) < hi:
        return x.astype(new_dtype)
    with np.errstate(invalid="ignore"):
        over, under = x >= hi, x < lo
        out = np.where(over | under | (x != x), 0, x).astype(new_dtype)
    out[over] = info.max
    out[under] = info.min
    return out


convert_element_type_p.impl = _convert_impl
convert_element_type_p.abstract_eval = lambda x, new_dtype, weak_type=False: ShapedArray(
    x.shape, new_dtype, weak_type)


def _convert_jvp(primals, tangents, new_dtype, weak_type=False):
    x, = primals
    t, = tangents
    ans = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if (type(t) is Zero or not dtypes.is_inexact(new_dtype)
            or not dtypes.is_inexact(core.get_aval(x).dtype)):
        return ans, Zero.from_primal(ans)
    return ans, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, new_dtype, weak_type=False):
    return (convert_element_type(ct, x.aval.dtype),)


ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose
primitive_batchers[convert_element_type_p] = lambda args, dims, **params: (
    convert_element_type_p.bind(args[0], **params), dims[0])


def convert_element_type(x: ArrayLike, dtype: DTypeLike, weak_type: bool = False) -> Array:
    dtype = np.dtype(dtype)
    a = core.get_aval(x)
    if a.dtype == dtype and a.weak_type == weak_type:
        return unchanged(x)
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)


ad._convert[0] = convert_element_type  # tangents keep their primal's dtype (ad.fit_dtype)


# ---------------------------------------------------------------------------
# Reductions over axes: the shared definition (``tangentia.primitives.
# reductions`` makes the others with it), and reduce_sum, which transposes
# broadcasting.


def reduced_shape(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def keepdims_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def check_axes(name, x, axes):
    for a in axes:
        if not 0 <= a < x.ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for an array of shape {x.shape}")


@lru_cache(maxsize=1024)
def reduce_dtype(fn, dtype):
    """The dtype NumPy's reduction ``fn`` gives for inputs of ``dtype``."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(np.ones((1,), dtype))).dtype


def reduction_primitive(name, np_fn, keep_dtype=False, out_dtype=None):
    """A reduction over ``axes`` computed by ``np_fn(x, axis=axes)``, with its
    shape rule and batching rule (derivative rules are added by the caller)."""
    p = Primitive(name)
    p.impl = lambda x, axes: np_fn(x, axis=axes)

    def abstract_eval(x, axes):
        check_axes(name, x, axes)
        if out_dtype is not None:
            dtype, weak = out_dtype, False
        elif keep_dtype:
            dtype, weak = x.dtype, x.weak_type
        else:
            dtype, weak = reduce_dtype(np_fn, x.dtype), x.weak_type
        return ShapedArray(reduced_shape(x.shape, axes), dtype, weak)
    p.abstract_eval = abstract_eval

    def batch(args, dims, axes):
        x, = args
        d, = dims
        new_axes = tuple(a if a < d else a + 1 for a in axes)
        out_d = d - sum(1 for a in axes if a < d)
        return p.bind(x, axes=new_axes), out_d
    primitive_batchers[p] = batch
    return p


def normalize_axes(axes):
    return tuple(sorted(int(a) for a in axes))


def expand_reduced(ct, shape, axes):
    """Broadcast a reduced array back to the full ``shape``."""
    if core.get_aval(ct).ndim:
        ct = reshape(ct, keepdims_shape(shape, axes))
    return broadcast_to(ct, shape)


# ufunc reductions: NumPy's np.sum & co. add a Python layer costing more than
# the reduction itself on small arrays.
reduce_sum_p = reduction_primitive("reduce_sum", np.add.reduce)
deflinear(reduce_sum_p, lambda ct, x, axes: (expand_reduced(ct, x.aval.shape, axes),))


def reduce_sum(x, axes):
    return reduce_sum_p.bind(x, axes=normalize_axes(axes))


# ---------------------------------------------------------------------------
# The transpose of broadcasting


def unbroadcast(x, aval):
    """Sum ``x`` down to ``aval``'s shape (the transpose of broadcasting)."""
    if type(x) is np.ndarray and x.shape == aval.shape and x.dtype == aval.dtype:
        return x
    xa = core.get_aval(x)
    if xa.shape != aval.shape:
        nd = len(xa.shape)
        lead = nd - len(aval.shape)
        axes = tuple(range(lead)) + tuple(
            i + lead for i, d in enumerate(aval.shape) if d == 1 and xa.shape[i + lead] != 1)
        if axes:
            x = reduce_sum(x, axes)
        if core.get_aval(x).shape != aval.shape:
            x = reshape(x, aval.shape)
    if aval.dtype != xa.dtype and aval.dtype != dtypes.float0 and dtypes.is_inexact(aval.dtype):
        x = convert_element_type(x, aval.dtype)
    return x


__all__ = [
    "batch_size", "broadcast_front", "broadcast_to", "broadcast_to_p", "convert_element_type",
    "convert_element_type_p", "materialize", "move_axis", "move_to_front", "reduce_sum",
    "reduce_sum_p", "reduction_primitive", "reshape", "reshape_p", "transpose", "transpose_p",
    "unbroadcast", "unchanged",
]
