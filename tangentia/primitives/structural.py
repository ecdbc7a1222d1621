"""Primitives that move data without arithmetic: reshape, transpose,
broadcast, dtype conversion, concatenation, constants and stop_gradient."""
from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from ..interpreters import ad
from ..interpreters.ad import Zero, deflinear, is_undefined
from ..interpreters.batching import batch_size, materialize, move_to_front

# ---------------------------------------------------------------------------
# No-op results


def unchanged(x):
    """``x`` returned by an operation that does nothing to it.

    Eagerly, Python and NumPy scalars become arrays, as the output of a bound
    primitive would; under a transformation the value is kept as it is.
    """
    if type(x) is np.ndarray or isinstance(x, core.Tracer) or \
            core.current_trace() is not core.EVAL_TRACE:
        return x
    return np.asarray(x)


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


reshape_p.batch = _reshape_batch


def reshape(x, new_sizes):
    new_sizes = tuple(int(d) for d in new_sizes)
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


transpose_p.batch = _transpose_batch


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


def _broadcast_to_transpose(ct, x, shape):
    from .elementwise import unbroadcast
    return (unbroadcast(ct, x.aval),)


deflinear(broadcast_to_p, _broadcast_to_transpose)


def _broadcast_to_batch(args, dims, shape):
    x = move_to_front(args[0], dims[0])
    xs = core.get_aval(x).shape
    b, per = xs[0], xs[1:]
    x = reshape(x, (b,) + (1,) * (len(shape) - len(per)) + per)
    return broadcast_to(x, (b,) + tuple(shape)), 0


broadcast_to_p.batch = _broadcast_to_batch


def broadcast_to(x, shape):
    shape = tuple(int(d) for d in shape)
    if core.get_aval(x).shape == shape:
        return unchanged(x)
    return broadcast_to_p.bind(x, shape=shape)


# ---------------------------------------------------------------------------
# convert_element_type

convert_element_type_p = Primitive("convert_element_type")


def _convert_impl(x, new_dtype, weak_type=False):
    return np.asarray(x).astype(new_dtype)


convert_element_type_p.impl = _convert_impl
convert_element_type_p.abstract_eval = lambda x, new_dtype, weak_type=False: ShapedArray(
    x.shape, new_dtype, weak_type)


def _convert_jvp(primals, tangents, new_dtype, weak_type=False):
    x, = primals
    t, = tangents
    ans = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or new_dtype.kind not in "fc" or core.get_aval(x).dtype.kind not in "fc":
        return ans, Zero.from_primal(ans)
    return ans, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, new_dtype, weak_type=False):
    return (convert_element_type(ct, x.aval.dtype),)


convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose
convert_element_type_p.batch = lambda args, dims, **params: (
    convert_element_type_p.bind(args[0], **params), dims[0])


def convert_element_type(x, dtype, weak_type=False):
    dtype = np.dtype(dtype)
    a = core.get_aval(x)
    if a.dtype == dtype and a.weak_type == weak_type:
        return unchanged(x)
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)


# ---------------------------------------------------------------------------
# concatenate

concatenate_p = Primitive("concatenate")
concatenate_p.impl = lambda *xs, axis: np.concatenate(xs, axis)


def _concatenate_abstract_eval(*xs, axis):
    first = xs[0]
    for i, x in enumerate(xs):
        if x.ndim != first.ndim or any(a != b for j, (a, b) in enumerate(zip(x.shape, first.shape))
                                       if j != axis):
            raise ValueError(
                f"concatenate: all arrays must have the same shape except along axis {axis}; "
                f"got shapes {[tuple(y.shape) for y in xs]}")
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    dtype, weak = dtypes.result_type(*[(x.dtype, x.weak_type) for x in xs])
    return ShapedArray(tuple(shape), dtype, weak)


concatenate_p.abstract_eval = _concatenate_abstract_eval


def _concatenate_transpose(ct, *xs, axis):
    from .indexing import static_slice
    outs = []
    start = 0
    for x in xs:
        n = x.aval.shape[axis] if is_undefined(x) else core.get_aval(x).shape[axis]
        if is_undefined(x):
            outs.append(static_slice(ct, axis, start, start + n))
        else:
            outs.append(None)
        start += n
    return outs


deflinear(concatenate_p, _concatenate_transpose)


def _concatenate_batch(args, dims, axis):
    size = batch_size(args, dims)
    xs = [materialize(x, d, size) for x, d in zip(args, dims)]
    return concatenate(xs, axis + 1), 0


concatenate_p.batch = _concatenate_batch


def concatenate(xs, axis):
    if len(xs) == 1:
        return xs[0]
    return concatenate_p.bind(*xs, axis=int(axis))


# ---------------------------------------------------------------------------
# constant: a value embedded in a program

constant_p = Primitive("constant")
constant_p.impl = lambda value: value
constant_p.abstract_eval = lambda value: core.get_aval(value)
constant_p.print_params = lambda params: {"value": f"<{core.get_aval(params['value']).str_short()}>"}
ad.defjvp_zero(constant_p)

# ---------------------------------------------------------------------------
# stop_gradient: identity whose derivative is zero

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.impl = lambda x: x
stop_gradient_p.abstract_eval = lambda x: x
ad.defjvp_zero(stop_gradient_p)
stop_gradient_p.batch = lambda args, dims: (stop_gradient_p.bind(args[0]), dims[0])


def stop_gradient(x):
    return stop_gradient_p.bind(x)
