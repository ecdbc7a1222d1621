"""``jax.lax.reduce_window`` and ``jax.lax.reduce`` for the monoids add, mul,
max and min.

The ``computation`` is recognized by what it computes on a few probe pairs
(``lax.add``, ``tnp.maximum``, ``lambda a, b: a * b``, ... all qualify); any
other function raises ``NotImplementedError``.  As XLA on the CPU, padding and
base dilation holes contribute nothing and every window starts from
``init_value``.  Windows
are reduced by ``primitives.windowed.window_reduce_p`` (differentiable: sums
transpose to a padded window sum, max/min scatter to each window's winner).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..primitives import elementwise as E
from ..primitives import reductions as R
from ..primitives.structural import convert_element_type
from ..primitives.windowed import MONOIDS, pad, window_reduce, window_shape
from ..tree_util import tree_flatten, tree_unflatten
from .ops import _reduction_axes
from .convolution import padtype_to_pads

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any
    from ..typing import Shape

_PROBES = ((2.0, 3.0), (-1.5, -3.0), (0.25, 7.0))
_REDUCERS = {"add": R.reduce_sum, "mul": R.reduce_prod, "max": R.reduce_max,
             "min": R.reduce_min}
_COMBINE = {"add": E.add, "mul": E.mul, "max": E.maximum, "min": E.minimum}


def _monoid(fname, computation):
    """The name of the monoid ``computation`` computes, found by probing it."""
    try:
        with core.set_trace(core.EVAL_TRACE):  # probed eagerly, also while staging
            got = [float(np.asarray(computation(np.float64(a), np.float64(b))))
                   for a, b in _PROBES]
    except Exception as e:  # noqa: BLE001 - any failure means "not a recognized monoid"
        raise NotImplementedError(
            f"{fname}: argument 'computation' must be one of the monoids add, mul, max, min "
            f"(e.g. lax.add, lax.max, tnp.multiply); calling it on scalars failed: {e}") from e
    for name, (ufunc, _) in MONOIDS.items():
        if all(g == float(ufunc(a, b)) for g, (a, b) in zip(got, _PROBES)):
            return name
    raise NotImplementedError(
        f"{fname}: argument 'computation' must be one of the monoids add, mul, max, min "
        f"(e.g. lax.add, lax.max, tnp.multiply); {getattr(computation, '__name__', computation)!r} "
        "computes none of them")


def _identity(op, dtype):
    """The monoid's identity in ``dtype`` (the extreme integers for max/min of integers)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and op in ("max", "min"):
        info = np.iinfo(dtype)
        return np.array(info.min if op == "max" else info.max, dtype)
    if dtype.kind == "b" and op in ("max", "min"):
        return np.array(op == "min")
    return np.array(MONOIDS[op][1], dtype)


def _is_identity(op, init):
    """Whether the concrete ``init`` is the monoid's identity (then it is not applied)."""
    if isinstance(init, core.Tracer):
        return False
    value = np.asarray(init)
    return value.shape == () and bool(value == _identity(op, value.dtype))


def _single(fname, tree, what):
    leaves, treedef = tree_flatten(tree)
    if len(leaves) != 1:
        raise NotImplementedError(f"{fname}: several operands (a variadic {what}) are not "
                                  f"supported; pass one array")
    return leaves[0], treedef


def reduce_window(operand: Any, init_value: Any, computation: Callable, window_dimensions: Shape,
                  window_strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduce every window of ``operand`` with the monoid ``computation``, starting
    from ``init_value`` (``jax.lax.reduce_window``): ``padding`` is ``'SAME'``,
    ``'VALID'`` or one ``(low, high)`` pair per dimension; ``base_dilation``
    spreads the operand, ``window_dilation`` the window."""
    fname = "reduce_window"
    x, treedef = _single(fname, operand, "reduce_window")
    init, _ = _single(fname, init_value, "reduce_window")
    x = x if isinstance(x, core.Tracer) else np.asarray(x)
    shape = core.get_aval(x).shape
    nd = len(shape)
    window_dimensions = tuple(int(k) for k in window_dimensions)
    window_strides = (1,) * nd if window_strides is None else tuple(int(s) for s in
                                                                     window_strides)
    base_dilation = (1,) * nd if base_dilation is None else tuple(int(d) for d in base_dilation)
    window_dilation = (1,) * nd if window_dilation is None else tuple(int(d) for d in
                                                                       window_dilation)
    if not len(window_dimensions) == len(window_strides) == len(base_dilation) == \
            len(window_dilation) == nd:
        raise ValueError(f"{fname}: window_dimensions, window_strides, base_dilation and "
                         f"window_dilation must each have {nd} entries (the operand's rank), "
                         f"got {window_dimensions}, {window_strides}, {base_dilation}, "
                         f"{window_dilation}")
    op = _monoid(fname, computation)
    if isinstance(padding, str):  # from the undilated operand shape, as JAX's
        eff = [1 + d * (k - 1) for k, d in zip(window_dimensions, window_dilation)]
        padding = padtype_to_pads(shape, eff, window_strides, padding)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    if len(padding) != nd:
        raise ValueError(f"{fname}: padding must have one (low, high) pair per operand "
                         f"dimension ({nd}), got {padding}")
    if any(lo or hi for lo, hi in padding) or any(b != 1 for b in base_dilation):
        x = pad(x, _identity(op, core.get_aval(x).dtype),
                [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)])
    out = window_reduce(x, op, window_dimensions, window_strides, window_dilation)
    return tree_unflatten(treedef, [_start_from(op, out, init, core.get_aval(x).dtype)])


def _start_from(op, out, init, dtype):
    """``out`` combined with ``init`` (unless it is the identity), in ``dtype``."""
    if not _is_identity(op, init):
        out = _COMBINE[op](out, init)
    if core.get_aval(out).dtype != dtype:
        out = convert_element_type(out, dtype)
    return out


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple[int, ...]:
    """The shape ``reduce_window`` returns for these arguments (explicit padding pairs)."""
    nd = len(operand_shape)
    base_dilation = base_dilation or (1,) * nd
    window_dilation = window_dilation or (1,) * nd
    padded = [0 if n == 0 else 1 + b * (n - 1) + lo + hi
              for n, b, (lo, hi) in zip(operand_shape, base_dilation, padding)]
    return window_shape(padded, window_dimensions, window_strides, window_dilation)


def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any],
           dimensions: Sequence[int]) -> Any:
    """Reduce ``operands`` over ``dimensions`` with the monoid ``computation``
    starting from ``init_values`` (``jax.lax.reduce``; one operand)."""
    fname = "reduce"
    x, treedef = _single(fname, operands, "reduce")
    init, _ = _single(fname, init_values, "reduce")
    op = _monoid(fname, computation)
    x = x if isinstance(x, core.Tracer) else np.asarray(x)
    axes = tuple(sorted(_reduction_axes(fname, x, dimensions)))
    if op in ("add", "mul") and np.dtype(core.get_aval(x).dtype) == np.bool_:
        raise NotImplementedError(f"{fname}: add/mul reductions of booleans are not supported")
    out = _REDUCERS[op](x, axes) if axes else x
    return tree_unflatten(treedef, [_start_from(op, out, init, core.get_aval(x).dtype)])
