"""Primitives that move data without arithmetic: reshape, transpose,
broadcast, dtype conversion, concatenation and stop_gradient.

``reshape``, ``transpose``, ``broadcast_to`` and ``convert_element_type``
are emitted by the interpreters themselves (batching moves batch axes), so
they are defined in ``tangentia.interpreters.base_ops``; they are re-exported
here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import core, dtypes, tree_util
from ..core import Primitive, ShapedArray
from ..interpreters import ad
from ..interpreters.ad import deflinear, is_undefined
from ..interpreters.base_ops import (  # noqa: F401  (re-exported)
    broadcast_to, broadcast_to_p, convert_element_type, convert_element_type_p, reshape,
    reshape_p, transpose, transpose_p, unchanged)
from ..interpreters.batching import batch_size, materialize, primitive_batchers
from .indexing import static_slice

if TYPE_CHECKING:
    from typing import Any

# ---------------------------------------------------------------------------
# concatenate

concatenate_p = Primitive("concatenate")


def _check_concatenate_shapes(shapes, axis):
    """JAX's TypeError for arrays that cannot be joined along ``axis``."""
    first = shapes[0]
    listed = ", ".join(str(tuple(s)) for s in shapes)
    if any(len(s) != len(first) for s in shapes):
        raise TypeError("Cannot concatenate arrays with different numbers of dimensions: got "
                        f"{listed}. (concatenate: every array needs {len(first)} dimensions)")
    if any(a != b for s in shapes for j, (a, b) in enumerate(zip(s, first)) if j != axis):
        raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                        f"than the one being concatenated: concatenating along dimension {axis} "
                        f"for shapes {listed}.")


def _concatenate_impl(*xs, axis):
    try:
        return np.concatenate(xs, axis)
    except ValueError:
        _check_concatenate_shapes([np.shape(x) for x in xs], axis)
        raise


concatenate_p.impl = _concatenate_impl


def _concatenate_abstract_eval(*xs, axis):
    _check_concatenate_shapes([x.shape for x in xs], axis)
    first = xs[0]
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    dtype, weak = dtypes.result_type(*[(x.dtype, x.weak_type) for x in xs])
    return ShapedArray(tuple(shape), dtype, weak)


concatenate_p.abstract_eval = _concatenate_abstract_eval


def _concatenate_transpose(ct, *xs, axis):
    outs = []
    start = 0
    for x in xs:
        n = x.aval.shape[axis] if is_undefined(x) else core.get_aval(x).shape[axis]
        if is_undefined(x):
            piece = static_slice(ct, axis, start, start + n)
            want = x.aval.dtype  # an operand narrower than the promoted result (float32
            if core.get_aval(piece).dtype != want:  # among float64) gets its own dtype back
                piece = convert_element_type(piece, want)
            outs.append(piece)
        else:
            outs.append(None)
        start += n
    return outs


deflinear(concatenate_p, _concatenate_transpose)


def _concatenate_jvp(primals, tangents, axis):
    """Linear, but the operands may differ in dtype (the primitive promotes): the
    tangents are made of the result's tangent dtype (an integer operand's zero,
    float0 otherwise, and a float32 tangent among float64 ones, are converted)."""
    ans = concatenate_p.bind(*primals, axis=axis)
    if all(type(t) is core.Zero for t in tangents):
        return ans, core.Zero.from_primal(ans)
    want = core.tangent_aval(core.get_aval(ans)).dtype
    tans = []
    for p, t in zip(primals, tangents):
        if type(t) is core.Zero:
            t = np.zeros(core.get_aval(p).shape, want)
        elif core.get_aval(t).dtype != want:
            t = convert_element_type(t, want)
        tans.append(t)
    return ans, concatenate_p.bind(*tans, axis=axis)


ad.primitive_jvps[concatenate_p] = _concatenate_jvp


def _concatenate_batch(args, dims, axis):
    size = batch_size(args, dims)
    xs = [materialize(x, d, size) for x, d in zip(args, dims)]
    return concatenate(xs, axis + 1), 0


primitive_batchers[concatenate_p] = _concatenate_batch


def concatenate(xs, axis):
    if len(xs) == 1:
        return xs[0]
    return concatenate_p.bind(*xs, axis=int(axis))


# ---------------------------------------------------------------------------
# stop_gradient: identity whose derivative is zero

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.impl = lambda x: x
stop_gradient_p.abstract_eval = lambda x: x
ad.defjvp_zero(stop_gradient_p)
primitive_batchers[stop_gradient_p] = lambda args, dims: (stop_gradient_p.bind(args[0]), dims[0])


_SG_ARRAYS = (np.ndarray, np.generic, core.Tracer, int, float, complex, bool)


def _stop_gradient_leaf(v):
    if not isinstance(v, _SG_ARRAYS):   # a function or a string: JAX's TypeError (it made
        core.as_array(v, "stop_gradient: argument 'x'")   # an object array)
    return stop_gradient_p.bind(v)


def stop_gradient(x: Any) -> Any:
    """``x`` with a zero derivative; for a pytree, each leaf (as ``jax.lax.stop_gradient``)."""
    if isinstance(x, (list, tuple, dict)) or (
            not isinstance(x, _SG_ARRAYS) and tree_util.all_leaves([x]) is False):
        return tree_util.tree_map(_stop_gradient_leaf, x)
    return _stop_gradient_leaf(x)
