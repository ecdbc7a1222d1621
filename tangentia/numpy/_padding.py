"""``pad`` with all of NumPy's modes (widths static, values such as
``constant_values`` possibly traced)."""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from ..primitives import contraction as _C
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ._constants import float64
from ._conversion import _in, _inexact, asarray, astype
from ._elementwise import floor, round
from ._functional import apply_along_axis
from ._indexing import take
from ._reductions import max, mean, min
from ._shapes import broadcast_to, concatenate, moveaxis, ndim, ravel, reshape, shape
from ._statistics import median
from ._util import _aval, _concrete, _eager, _is_tracer

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from ..typing import Array, ArrayLike


_PAD_KWARGS = {"constant": ("constant_values",), "edge": (), "reflect": ("reflect_type",),
               "symmetric": ("reflect_type",), "wrap": (), "empty": (),
               "linear_ramp": ("end_values",), "maximum": ("stat_length",),
               "minimum": ("stat_length",), "mean": ("stat_length",),
               "median": ("stat_length",)}


def _pairs(x, nd, argname, as_index=False):
    """NumPy's (before, after) pair per axis from a scalar, a pair or one pair per axis."""
    if _is_tracer(x):
        s = shape(x)
        if math.prod(s) == 1:
            v = reshape(x, ())
            return ((v, v),) * nd
        if math.prod(s) == 2 and s != (2, 1):
            v = ravel(x)
            return ((v[0], v[1]),) * nd
        try:
            b = broadcast_to(x, (nd, 2))
        except ValueError:
            raise ValueError(f"pad: argument '{argname}' of shape {s} cannot be broadcast to "
                             f"({nd}, 2), one (before, after) pair per axis") from None
        return tuple((b[i, 0], b[i, 1]) for i in range(nd))
    try:
        arr = _np.asarray(x)
    except _core.TracerArrayConversionError:
        arr = asarray(x)
        return _pairs(arr, nd, argname, as_index)
    if as_index:
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"pad: argument '{argname}' must contain integers, got {x!r}")
        arr = _np.round(arr).astype(_np.intp)
        if arr.size and arr.min() < 0:
            raise ValueError(f"pad: argument '{argname}' can't contain negative values, got "
                             f"{x!r}")
    if arr.size == 1:
        v = arr.ravel()[0]
        return ((v, v),) * nd
    if arr.size == 2 and arr.shape != (2, 1):
        v = arr.ravel()
        return ((v[0], v[1]),) * nd
    try:
        b = _np.broadcast_to(arr, (nd, 2))
    except ValueError:
        raise ValueError(f"pad: argument '{argname}' of shape {arr.shape} cannot be broadcast to "
                         f"({nd}, 2), one (before, after) pair per axis") from None
    return tuple((b[i, 0], b[i, 1]) for i in range(nd))


def _block_shape(a, ax, width):
    s = list(shape(a))
    s[ax] = width
    return tuple(s)


def _fill_block(a, ax, width, value):
    """A block of ``width`` entries along ``ax`` filled with ``value`` (cast to a's dtype)."""
    dt = _aval(a).dtype
    s = _block_shape(a, ax, width)
    if _is_tracer(value):
        return broadcast_to(astype(value, dt), s)
    return _np.full(s, value, dt)


def _stat_pad(a, ax, b, c, lengths, mode):
    stat = {"maximum": max, "minimum": min, "mean": mean, "median": median}[mode]
    n = shape(a)[ax]
    dt = _aval(a).dtype
    out = []
    for width, length, before in ((b, lengths[0], True), (c, lengths[1], False)):
        if width == 0:
            out.append(None)
            continue
        k = n if length is None else int(length)
        if k <= 0:
            raise ValueError("pad: argument 'stat_length' of 0 yields no value for padding")
        k = builtins.min(k, n)
        region = _I.static_slice(a, ax, 0, k) if before else _I.static_slice(a, ax, n - k, n)
        v = stat(region, axis=ax, keepdims=True)
        if dt.kind in "iub" and mode in ("mean", "median"):
            v = astype(round(v), dt)
        out.append(broadcast_to(v, _block_shape(a, ax, width)))
    return out


def _ramp_pad(a, ax, b, c, ends):
    n = shape(a)[ax]
    dt = _aval(a).dtype
    out = []
    for width, end, before in ((b, ends[0], True), (c, ends[1], False)):
        if width == 0:
            out.append(None)
            continue
        edge = _I.static_slice(a, ax, 0, 1) if before else _I.static_slice(a, ax, n - 1, n)
        k = _np.arange(width, dtype=float64)
        w = k / width if before else (width - 1 - k) / width
        w = w.reshape([width if i == ax else 1 for i in range(ndim(a))])
        edge = _inexact(edge)
        v = _E.add(end, _E.mul(_E.sub(edge, end), w))
        if dt.kind in "iub":
            v = astype(floor(v), dt)
        elif _aval(v).dtype != dt:
            v = astype(v, dt)
        out.append(broadcast_to(v, _block_shape(a, ax, width)))
    return out


def pad(array: ArrayLike, pad_width: Any, mode: str | Callable[..., Any] = "constant", **kwargs
        ) -> Array:
    """Pad an array (NumPy's modes; values such as ``constant_values`` may be traced).  A
    function as ``mode`` is JAX's: ``mode(vector, (before, after), axis, kwargs)`` returns
    each zero-padded 1-D vector along each axis in turn, filled (it cannot write in place,
    as NumPy's does)."""
    if callable(mode):
        return _pad_with_function(array, pad_width, mode, kwargs)
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(
            f"Unimplemented padding mode '{mode}' for np.pad. (pad: argument 'mode' must be one "
            f"of {', '.join(repr(m) for m in _PAD_KWARGS)})")
    bad = sorted(set(kwargs) - set(_PAD_KWARGS[mode]))
    if bad:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{', '.join(bad)}")
    a = _in(array, "pad", "array")
    nd = ndim(a)
    if _is_tracer(pad_width):
        pad_width = _concrete(pad_width, "pad", "pad_width")
    if nd == 0:   # JAX's: nothing to pad on a 0-d array
        return asarray(a)
    widths = [(int(b), int(c)) for b, c in _pairs(pad_width, nd, "pad_width", as_index=True)]
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: argument 'reflect_type' must be 'even' or 'odd', got "
                         f"{reflect_type!r}")
    for ax, (b, c) in enumerate(widths):
        if (b or c) and shape(a)[ax] == 0 and mode not in ("constant", "empty"):
            raise ValueError(f"pad: can't extend empty axis {ax} of argument 'array' using mode "
                             f"{mode!r} (only 'constant' and 'empty' can)")
    if _eager(a, *kwargs.values()):
        # 'empty' pads with zeros, as JAX's and our traced path (NumPy's leaves memory
        # uninitialized: eagerly ours returned whatever was there)
        return _np.pad(a, widths, "constant" if mode == "empty" else mode, **kwargs)
    if mode in ("constant", "empty"):
        values = _pairs(kwargs.get("constant_values", 0), nd, "constant_values")
    elif mode == "linear_ramp":
        values = _pairs(kwargs.get("end_values", 0), nd, "end_values")
    elif mode in ("maximum", "minimum", "mean", "median"):
        values = _pairs(kwargs.get("stat_length"), nd, "stat_length") \
            if kwargs.get("stat_length") is not None else ((None, None),) * nd
    for ax, (b, c) in enumerate(widths):
        if b == 0 and c == 0:
            continue
        n = shape(a)[ax]
        if mode in ("edge", "wrap") or (mode in ("reflect", "symmetric")
                                         and reflect_type == "even"):
            idx = _np.pad(_np.arange(n), (b, c), mode=mode)
            a = take(a, idx, axis=ax)
            continue
        if mode in ("reflect", "symmetric"):  # odd reflection: linear, but not a gather
            P = _np.pad(_np.eye(n), ((b, c), (0, 0)), mode=mode, reflect_type="odd")
            dt = _aval(a).dtype
            if dt.kind in "iu":
                # in the integers' own wrapping arithmetic, as NumPy's (through floats, a
                # value past the dtype's range was cast back to garbage: 2**31 for 9 in uint32)
                out = _C.dot_general(P.astype(_np.int64).astype(dt), a,
                                     (((1,), (ax,)), ((), ())))
                a = moveaxis(out, 0, ax)
                continue
            out = _C.dot_general(P, _inexact(a), (((1,), (ax,)), ((), ())))
            out = moveaxis(out, 0, ax)
            a = astype(round(out) if dt.kind == "b" else out, dt)
            continue
        if mode in ("constant", "empty"):
            before = _fill_block(a, ax, b, 0 if mode == "empty" else values[ax][0]) if b else None
            after = _fill_block(a, ax, c, 0 if mode == "empty" else values[ax][1]) if c else None
        elif mode == "linear_ramp":
            before, after = _ramp_pad(a, ax, b, c, values[ax])
        else:
            before, after = _stat_pad(a, ax, b, c, values[ax], mode)
        a = concatenate([p for p in (before, a, after) if p is not None], ax)
    return a


def _pad_with_function(array, pad_width, func, kwargs):
    a = pad(array, pad_width, "constant")
    nd = ndim(a)
    if _is_tracer(pad_width):
        pad_width = _concrete(pad_width, "pad", "pad_width")
    widths = [(int(b), int(c)) for b, c in _pairs(pad_width, nd, "pad_width", as_index=True)]
    for ax in range(nd):
        def fill(vector, ax=ax):
            out = func(vector, widths[ax], ax, kwargs)
            if out is None:
                raise TypeError("pad: the function given as 'mode' must return the padded "
                                "vector (JAX's arrays are immutable: it cannot fill it in "
                                "place as with NumPy)")
            return out
        a = apply_along_axis(fill, ax, a)
    return a
