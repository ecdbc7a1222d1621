"""Window reductions (``lax.reduce_window``'s monoids) and general padding.

* ``pad(x, value, config)``: XLA's pad, one ``(low, high, interior)`` per axis
  (negative edges crop), as a ``scatter`` into a filled array and a slice, so
  it differentiates in both ``x`` and ``value``.
* ``window_reduce_p`` (``op`` one of add/mul/max/min): the reduction of every
  window of ``window_dimensions`` at ``window_strides`` with holes of
  ``window_dilation`` over an already padded operand.  NumPy: a strided window
  view (``sliding_window_view``) and one ``ufunc.reduce``.  The sum is linear:
  its transpose pads the cotangent (strides become interior padding) and sums
  its windows, as JAX's rule.  Max/min differentiate through
  ``window_argmax_p``, the flat index of each window's chosen entry (first on
  ties): the tangent is gathered there, so the cotangent is scattered there
  (select-and-scatter).  The product's JVP is ``sum_i t_i * prod_{j != i} x_j``
  over the window taps, with prefix and suffix products (exact with zeros).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import core
from ..core import Primitive, ShapedArray
from ..interpreters.ad import Zero, defjvp_zero, primitive_jvps, primitive_transposes
from ..interpreters.base_ops import move_to_front
from ..interpreters.batching import primitive_batchers
from . import elementwise as E
from . import indexing as I
from . import structural as S

__all__ = ["pad", "window_reduce", "window_reduce_p", "window_argmax_p", "window_shape",
           "MONOIDS"]

# op name -> (ufunc, identity)
MONOIDS = {"add": (np.add, 0), "mul": (np.multiply, 1), "max": (np.maximum, -np.inf),
           "min": (np.minimum, np.inf)}


def pad(x, value, config):
    """``x`` padded with the scalar ``value``: ``config`` holds one ``(low, high,
    interior)`` per axis; negative ``low``/``high`` crop."""
    shape, dtype = core.get_aval(x).shape, core.get_aval(x).dtype
    value = S.convert_element_type(value, dtype)
    full, place, crop = [], [], []
    for n, (lo, hi, interior) in zip(shape, config):
        dilated = n + max(n - 1, 0) * interior
        if lo + dilated + hi < 0:
            raise ValueError(f"pad: padding_config {tuple(config)} gives a negative dimension "
                             f"for shape {shape}")
        start = max(lo, 0)
        size = start + dilated + max(hi, 0)
        full.append(size)
        place.append(slice(start, start + dilated, interior + 1))
        crop.append(slice(-min(lo, 0), size + min(hi, 0)))
    out = I.scatter(S.broadcast_to(value, tuple(full)), x, tuple(place), (), "set")
    if any(c.start or c.stop != n for c, n in zip(crop, full)):
        out = I.getitem(out, tuple(crop))
    return out


def window_shape(shape, window_dimensions, window_strides, window_dilation):
    """Output shape of the windows over an (already padded) operand of ``shape``."""
    out = []
    for n, k, s, d in zip(shape, window_dimensions, window_strides, window_dilation):
        eff = 0 if k == 0 else 1 + d * (k - 1)
        out.append(0 if n < eff else (n - eff) // s + 1)
    return tuple(out)


def _windows(x, window_dimensions, window_strides, window_dilation):
    """View of shape ``out_shape + window_dimensions``."""
    eff = tuple(1 + d * (k - 1) for k, d in zip(window_dimensions, window_dilation))
    view = sliding_window_view(x, eff)
    return view[tuple(slice(None, None, s) for s in window_strides)
                + tuple(slice(None, None, d) for d in window_dilation)]


def _check(name, x, window_dimensions, window_strides, window_dilation):
    nd = len(x.shape)
    if not len(window_dimensions) == len(window_strides) == len(window_dilation) == nd:
        raise ValueError(f"{name}: window_dimensions, window_strides and window_dilation must "
                         f"each have one entry per operand dimension ({nd}), got "
                         f"{window_dimensions}, {window_strides}, {window_dilation}")
    if any(k < 1 for k in window_dimensions) or any(s < 1 for s in window_strides) or any(
            d < 1 for d in window_dilation):
        raise ValueError(f"{name}: window_dimensions, window_strides and window_dilation must "
                         f"be positive, got {window_dimensions}, {window_strides}, "
                         f"{window_dilation}")
    return window_shape(x.shape, window_dimensions, window_strides, window_dilation)


# ---------------------------------------------------------------------------
# window_reduce


def _window_reduce_impl(x, *, op, window_dimensions, window_strides, window_dilation):
    ufunc, identity = MONOIDS[op]
    out_shape = window_shape(x.shape, window_dimensions, window_strides, window_dilation)
    if 0 in out_shape:
        return np.zeros(out_shape, x.dtype)
    view = _windows(x, window_dimensions, window_strides, window_dilation)
    nd = x.ndim
    return ufunc.reduce(view, axis=tuple(range(nd, 2 * nd))).astype(x.dtype, copy=False)


def _window_reduce_abstract_eval(x, *, op, window_dimensions, window_strides, window_dilation):
    if op not in MONOIDS:
        raise ValueError(f"reduce_window: unknown monoid {op!r}; expected one of {list(MONOIDS)}")
    shape = _check("reduce_window", x, window_dimensions, window_strides, window_dilation)
    return ShapedArray(shape, x.dtype, x.weak_type)


window_reduce_p = Primitive("window_reduce")
window_reduce_p.impl = _window_reduce_impl
window_reduce_p.abstract_eval = _window_reduce_abstract_eval


def window_reduce(x, op, window_dimensions, window_strides, window_dilation):
    return window_reduce_p.bind(x, op=op, window_dimensions=tuple(window_dimensions),
                                window_strides=tuple(window_strides),
                                window_dilation=tuple(window_dilation))


def _sum_transpose(ct, x, *, window_dimensions, window_strides, window_dilation):
    """Each input entry receives the cotangents of the windows that contain it."""
    in_shape = x.aval.shape
    ct_shape = core.get_aval(ct).shape
    config = []
    for n, k, s, d, m in zip(in_shape, window_dimensions, window_strides, window_dilation,
                             ct_shape):
        eff = 1 + d * (k - 1)
        spread = 0 if m == 0 else 1 + s * (m - 1)
        config.append((eff - 1, n + eff - 1 - spread - (eff - 1), s - 1))
    padded = pad(ct, np.zeros((), core.get_aval(ct).dtype), config)
    return window_reduce(padded, "add", window_dimensions, (1,) * len(in_shape),
                         window_dilation)


def _window_reduce_transpose(ct, x, *, op, **params):
    if op != "add":
        raise TypeError(f"reduce_window with monoid {op!r} is not linear")
    if type(ct) is Zero:
        return (None,)
    return (_sum_transpose(ct, x, **params),)


def _flat(x):
    return S.reshape(x, (int(np.prod(core.get_aval(x).shape, dtype=np.int64)),))


def _window_reduce_jvp(primals, tangents, *, op, **params):
    x, = primals
    t, = tangents
    ans = window_reduce_p.bind(x, op=op, **params)
    if type(t) is Zero:
        return ans, Zero.from_primal(ans)
    if op == "add" or not core.get_aval(x).shape:  # a sum, or windows of one entry
        return ans, window_reduce_p.bind(t, op="add", **params)
        return ans, window_reduce_p.bind(t, op=op, **params)
    if op in ("max", "min"):
        idx = window_argmax_p.bind(x, op=op, **params)
        return ans, I.getitem(_flat(t), (I.ARRAY,), (idx,))
    # product: d prod = sum_i t_i prod_{j != i} x_j over the window taps i (exact
    # with zeros in the window: no division).
    return ans, _prod_jvp(x, t, ans, **params)


def _prod_jvp(x, t, ans, *, window_dimensions, window_strides, window_dilation):
    shape = core.get_aval(x).shape
    out_shape = core.get_aval(ans).shape
    flat_x, flat_t = _flat(x), _flat(t)
    taps = np.array(list(np.ndindex(*window_dimensions)), dtype=np.int64).reshape(
        -1, len(shape))
    base = np.stack(np.meshgrid(*[np.arange(m) * s for m, s in zip(out_shape, window_strides)],
                                indexing="ij"), -1)
    xs, ts = [], []
    for tap in taps:
        pos = base + tap * np.asarray(window_dilation)
        flat_idx = np.ravel_multi_index(tuple(np.moveaxis(pos, -1, 0)), shape)
        xs.append(I.getitem(flat_x, (I.ARRAY,), (flat_idx,)))
        ts.append(I.getitem(flat_t, (I.ARRAY,), (flat_idx,)))
    # products of the taps before and after each one (no division: zeros are exact)
    before, after = [None] * len(xs), [None] * len(xs)
    for i in range(1, len(xs)):
        before[i] = xs[i - 1] if before[i - 1] is None else E.mul(before[i - 1], xs[i - 1])
        k = len(xs) - 1 - i
        after[k] = xs[k + 1] if after[k + 1] is None else E.mul(after[k + 1], xs[k + 1])
    total = None
    for t_i, b, a in zip(ts, before, after):
        term = t_i
        for other in (b, a):
            if other is not None:
                term = E.mul(term, other)
        total = term if total is None else E.add(total, term)
    return total


def _window_reduce_batch(args, dims, *, op, window_dimensions, window_strides, window_dilation):
    x, = args
    x = move_to_front(x, dims[0])
    out = window_reduce_p.bind(x, op=op, window_dimensions=(1,) + window_dimensions,
                               window_strides=(1,) + window_strides,
                               window_dilation=(1,) + window_dilation)
    return out, 0


primitive_jvps[window_reduce_p] = _window_reduce_jvp
primitive_transposes[window_reduce_p] = _window_reduce_transpose
primitive_batchers[window_reduce_p] = _window_reduce_batch


# ---------------------------------------------------------------------------
# window_argmax: flat index (into the operand) of each window's max/min


def _window_argmax_impl(x, *, op, window_dimensions, window_strides, window_dilation):
    out_shape = window_shape(x.shape, window_dimensions, window_strides, window_dilation)
    if 0 in out_shape:
        return np.zeros(out_shape, np.int64)
    view = _windows(x, window_dimensions, window_strides, window_dilation)
    nd = x.ndim
    flat = view.reshape(out_shape + (-1,))
    offset = (np.argmax if op == "max" else np.argmin)(flat, axis=-1)
    tap = np.unravel_index(offset, window_dimensions)
    pos = [np.arange(m).reshape((-1,) + (1,) * (nd - i - 1)) * s + t * d
           for i, (m, s, t, d) in enumerate(zip(out_shape, window_strides, tap,
                                                window_dilation))]
    return np.ravel_multi_index(tuple(np.broadcast_arrays(*pos)), x.shape).astype(np.int64)


def _window_argmax_abstract_eval(x, *, op, window_dimensions, window_strides, window_dilation):
    shape = _check("reduce_window", x, window_dimensions, window_strides, window_dilation)
    return ShapedArray(shape, np.dtype(np.int64))


def _window_argmax_batch(args, dims, *, op, window_dimensions, window_strides, window_dilation):
    x, = args
    x = move_to_front(x, dims[0])
    per_example = int(np.prod(core.get_aval(x).shape[1:], dtype=np.int64))
    idx = window_argmax_p.bind(x, op=op, window_dimensions=(1,) + window_dimensions,
                               window_strides=(1,) + window_strides,
                               window_dilation=(1,) + window_dilation)
    return E.remainder(idx, np.int64(max(per_example, 1))), 0


window_argmax_p = Primitive("window_argmax")
window_argmax_p.impl = _window_argmax_impl
window_argmax_p.abstract_eval = _window_argmax_abstract_eval
primitive_batchers[window_argmax_p] = _window_argmax_batch
defjvp_zero(window_argmax_p)
