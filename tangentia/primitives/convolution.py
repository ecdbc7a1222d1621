"""``conv_general_dilated``: XLA's general convolution as one primitive.

Parameters (all static): ``window_strides``, explicit ``padding`` pairs (may be
negative), ``lhs_dilation``, ``rhs_dilation``, ``dimension_numbers`` (three
permutations ``(lhs_spec, rhs_spec, out_spec)``: batch/out-feature,
feature/in-feature, then spatial positions), ``feature_group_count`` and
``batch_group_count``.

The NumPy implementation puts the operands in canonical order (N, C, spatial)
and (O, I, spatial), dilates and pads the input, takes every (strided) window
as a view (``sliding_window_view``, the kernel dilation as a step over the
window) and contracts windows with the kernel in one ``einsum`` per group
layout.  The convolution is bilinear: its JVP is a sum of two convolutions and
its transposes are convolutions too (JAX's ``_conv_general_dilated_transpose_
lhs/rhs``: the kernel reversed, strides and dilations exchanged, paddings
recomputed).  Batching folds the vmapped axis into the batch or feature
dimension (with groups where both operands are batched), as JAX's rule.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from ..interpreters.ad import Zero, add_any_p, is_undefined, primitive_jvps, primitive_transposes
from ..interpreters.batching import primitive_batchers
from . import indexing as I
from . import structural as S

__all__ = ["conv_general_dilated_p", "conv_abstract_eval", "dilate_shape", "conv_output_spatial"]

conv_general_dilated_p = Primitive("conv_general_dilated")


def dilate_shape(shape, dilation):
    """Sizes after inserting ``dilation - 1`` zeros between entries."""
    return tuple(0 if n == 0 else 1 + d * (n - 1) for n, d in zip(shape, dilation))


def conv_output_spatial(in_spatial, window, strides, padding):
    """Output spatial sizes of windows of ``window`` at ``strides`` over
    ``in_spatial`` padded by ``padding`` (all already dilated)."""
    out = []
    for n, k, s, (lo, hi) in zip(in_spatial, window, strides, padding):
        padded = n + lo + hi
        if padded < 0:
            raise ValueError("Negative padding is larger than the size of the corresponding "
                             f"dimension: got padding={tuple(padding)} for lhs spatial shape "
                             f"{tuple(in_spatial)}")
        out.append(0 if padded < k else (padded - k) // s + 1)
    return tuple(out)


def _dilate_pad(x, lhs_dilation, padding):
    """``x`` (canonical N, C, spatial) with interior zeros and (maybe negative) edge padding."""
    spatial = x.shape[2:]
    dil = dilate_shape(spatial, lhs_dilation)
    if dil != spatial:
        y = np.zeros(x.shape[:2] + dil, x.dtype)
        y[(slice(None),) * 2 + tuple(slice(None, None, d) for d in lhs_dilation)] = x
        x = y
    if any(lo or hi for lo, hi in padding):
        grow = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
        x = np.pad(x, grow)
        crop = tuple(slice(max(-lo, 0), n - max(-hi, 0))
                     for (lo, hi), n in zip(padding, x.shape[2:]))
        x = x[(slice(None),) * 2 + crop]
    return x


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count,
               precision=None, preferred_element_type=None):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    x = np.transpose(lhs, lhs_spec)
    w = np.transpose(rhs, rhs_spec)
    out_dtype = _out_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    nsp = x.ndim - 2
    x = _dilate_pad(x, lhs_dilation, padding)
    window = dilate_shape(w.shape[2:], rhs_dilation)
    out_sp = conv_output_spatial(x.shape[2:], window, window_strides, [(0, 0)] * nsp)
    if 0 in out_sp or 0 in x.shape[:2] or 0 in w.shape[:2] or 0 in window:
        n_out = x.shape[0] // batch_group_count
        shape = (n_out, w.shape[0]) + out_sp
        return np.transpose(np.zeros(shape, out_dtype), np.argsort(out_spec))
    axes = tuple(range(2, 2 + nsp))
    win = sliding_window_view(x, window, axis=axes)
    win = win[(slice(None),) * 2 + tuple(slice(None, None, s) for s in window_strides)
              + tuple(slice(None, None, d) for d in rhs_dilation)]
    letters = "abcdefghijklmnopqrstuvwxyz"
    sp, kk = letters[:nsp], letters[nsp:2 * nsp]
    n, c = x.shape[:2]
    o = w.shape[0]
    if batch_group_count > 1:
        g = batch_group_count
        win = win.reshape((g, n // g, c) + win.shape[2:])
        wg = w.reshape((g, o // g) + w.shape[1:])
        out = np.einsum(f"GNC{sp}{kk},GOC{kk}->NGO{sp}", win, wg, optimize=True)
        out = out.reshape((n // g, o) + out.shape[3:])
    else:
        g = feature_group_count
        win = win.reshape((n, g, c // g) + win.shape[2:])
        wg = w.reshape((g, o // g) + w.shape[1:])
        out = np.einsum(f"NGC{sp}{kk},GOC{kk}->NGO{sp}", win, wg, optimize=True)
        out = out.reshape((n, o) + out.shape[3:])
    return np.ascontiguousarray(np.transpose(out.astype(out_dtype, copy=False),
                                             np.argsort(out_spec)))


def _out_dtype(a, b, preferred):
    if preferred is not None:
        return np.dtype(preferred)
    return np.result_type(a, b)


def conv_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count,
                        precision=None, preferred_element_type=None):
    name = "conv_general_dilated"
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if lhs.ndim != rhs.ndim:
        raise ValueError(f"{name} lhs and rhs must have the same number of dimensions, but got "
                         f"{lhs.shape} and {rhs.shape}.")
    fg, bg = feature_group_count, batch_group_count
    if fg < 1 or bg < 1:
        raise ValueError(f"{name} feature_group_count and batch_group_count must be positive "
                         f"integers, got {fg} and {bg}.")
    if fg > 1 and bg > 1:
        raise ValueError("At most one of batch_group_count and feature_group_count may be > 1, "
                         f"got batch_group_count={bg} and feature_group_count={fg}")
    cin, i_size = lhs.shape[lhs_spec[1]], rhs.shape[rhs_spec[1]]
    if cin % fg or cin // fg != i_size:
        raise ValueError(f"{name} lhs feature dimension size divided by feature_group_count "
                         f"must equal the rhs input feature dimension size, but {cin} // {fg} "
                         f"!= {i_size}.")
    o_size, n_size = rhs.shape[rhs_spec[0]], lhs.shape[lhs_spec[0]]
    if o_size % fg or o_size % bg:
        raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                         f"feature_group_count and batch_group_count, but {o_size} is not a "
                         f"multiple of {max(fg, bg)}.")
    if n_size % bg:
        raise ValueError(f"{name} batch_group_count must divide lhs batch dimension size, but "
                         f"{bg} does not divide {n_size}.")
    nsp = lhs.ndim - 2
    if not len(window_strides) == len(padding) == len(lhs_dilation) == len(rhs_dilation) == nsp:
        raise ValueError(f"{name} window_strides, padding, lhs_dilation and rhs_dilation must "
                         f"each have {nsp} entries (one per spatial dimension), got "
                         f"{window_strides}, {padding}, {lhs_dilation}, {rhs_dilation}")
    in_sp = dilate_shape([lhs.shape[d] for d in lhs_spec[2:]], lhs_dilation)
    window = dilate_shape([rhs.shape[d] for d in rhs_spec[2:]], rhs_dilation)
    out_sp = conv_output_spatial(in_sp, window, window_strides, padding)
    canonical = (n_size // bg, o_size) + out_sp
    shape = tuple(canonical[i] for i in np.argsort(out_spec))
    if preferred_element_type is not None:
        return ShapedArray(shape, np.dtype(preferred_element_type))
    dtype, weak = dtypes.result_type((lhs.dtype, lhs.weak_type), (rhs.dtype, rhs.weak_type))
    return ShapedArray(shape, dtype, weak)


conv_general_dilated_p.impl = _conv_impl
conv_general_dilated_p.abstract_eval = conv_abstract_eval


# ---------------------------------------------------------------------------
# Differentiation: bilinear


def _conv_jvp(primals, tangents, **params):
    lhs, rhs = primals
    tl, tr = tangents
    ans = conv_general_dilated_p.bind(lhs, rhs, **params)
    t = None
    if type(tl) is not Zero:
        t = conv_general_dilated_p.bind(tl, rhs, **params)
    if type(tr) is not Zero:
        c = conv_general_dilated_p.bind(lhs, tr, **params)
        t = c if t is None else add_any_p.bind(t, c)
    return ans, (Zero.from_primal(ans) if t is None else t)


def _shape(x):
    return x.aval.shape if is_undefined(x) else core.get_aval(x).shape


def _reshape_axis_into(src, dst, x):
    """Merge axis ``src`` of ``x`` into axis ``dst`` (numbered with ``src`` removed),
    ``src`` as the major part."""
    shape = core.get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    if perm != sorted(perm):
        x = S.transpose(x, tuple(perm))
    return S.reshape(x, tuple(new_shape))


def _reshape_axis_out_of(src, size1, x):
    """Split axis ``src`` of ``x`` into ``(size1, rest)``."""
    shape = list(core.get_aval(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return S.reshape(x, tuple(shape))


def _spec_transpose(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _rev(x, dims):
    nd = len(core.get_aval(x).shape)
    spec = tuple(slice(None, None, -1) if i in dims else slice(None) for i in range(nd))
    return I.getitem(x, spec)


def _transpose_lhs(g, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, **rest):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape, rhs_shape, g_shape = _shape(lhs), core.get_aval(rhs).shape, core.get_aval(g).shape
    if feature_group_count > 1 or batch_group_count > 1:
        groups = max(feature_group_count, batch_group_count)
        rhs = _reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
        rhs_shape = core.get_aval(rhs).shape
    fg = max(feature_group_count, batch_group_count)
    in_sp = dilate_shape([lhs_shape[d] for d in lhs_spec[2:]], lhs_dilation)
    win = dilate_shape([rhs_shape[d] for d in rhs_spec[2:]], rhs_dilation)
    out_sp = dilate_shape([g_shape[d] for d in out_spec[2:]], window_strides)
    before = [k - lo - 1 for k, (lo, _) in zip(win, padding)]
    after = [n + k - 1 - o - b for n, k, o, b in zip(in_sp, win, out_sp, before)]
    out = conv_general_dilated_p.bind(
        g, _rev(rhs, set(rhs_spec[2:])), window_strides=tuple(lhs_dilation),
        padding=tuple(zip(before, after)), lhs_dilation=tuple(window_strides),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=(tuple(out_spec), _spec_transpose(rhs_spec), tuple(lhs_spec)),
        feature_group_count=fg, batch_group_count=1, **rest)
    if batch_group_count > 1:
        out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _transpose_rhs(g, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, **rest):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape, rhs_shape, g_shape = core.get_aval(lhs).shape, _shape(rhs), core.get_aval(g).shape
    in_sp = dilate_shape([lhs_shape[d] for d in lhs_spec[2:]], lhs_dilation)
    win = dilate_shape([rhs_shape[d] for d in rhs_spec[2:]], rhs_dilation)
    out_sp = dilate_shape([g_shape[d] for d in out_spec[2:]], window_strides)
    lows = [lo for lo, _ in padding]
    highs = [o - n + k - lo - 1 for o, n, k, lo in zip(out_sp, in_sp, win, lows)]
    fg, bg = batch_group_count, feature_group_count  # exchanged, as JAX's
    return conv_general_dilated_p.bind(
        lhs, g, window_strides=tuple(rhs_dilation), padding=tuple(zip(lows, highs)),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=(_spec_transpose(lhs_spec), _spec_transpose(out_spec),
                           _spec_transpose(rhs_spec)),
        feature_group_count=fg, batch_group_count=bg, **rest)


def _conv_transpose(ct, lhs, rhs, **params):
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("conv_general_dilated: both operands are linear (not a linear function)")
    if type(ct) is Zero:
        return None, None
    if is_undefined(lhs):
        return _cast(_transpose_lhs(ct, lhs, rhs, **params), lhs.aval), None
    if 0 in core.get_aval(ct).shape:  # no degenerate convolution with an empty kernel
        return None, None
    return None, _cast(_transpose_rhs(ct, lhs, rhs, **params), rhs.aval)


def _cast(x, aval):
    if core.get_aval(x).dtype != aval.dtype:
        return S.convert_element_type(x, aval.dtype)
    return x


# ---------------------------------------------------------------------------
# Batching (JAX's rule: the vmapped axis joins the batch or feature dimension)


def _conv_batch(args, dims, **params):
    lhs, rhs = args
    ld, rd = dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fg, bg = params["feature_group_count"], params["batch_group_count"]
    bind = conv_general_dilated_p.bind
    if ld is not None and rd is not None:
        size = core.get_aval(lhs).shape[ld]
        if bg > 1:
            new_lhs = _reshape_axis_into(ld, lhs_spec[0], lhs)
            params = dict(params, batch_group_count=bg * size)
        else:
            new_lhs = _reshape_axis_into(ld, lhs_spec[1], lhs)
            params = dict(params, feature_group_count=fg * size)
        out = bind(new_lhs, _reshape_axis_into(rd, rhs_spec[0], rhs), **params)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if ld is not None:
        size = core.get_aval(lhs).shape[ld]
        if bg == 1:
            out = bind(_reshape_axis_into(ld, lhs_spec[0], lhs), rhs, **params)
            return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
        new_lhs = _reshape_axis_out_of(lhs_spec[0] + int(ld <= lhs_spec[0]), bg, lhs)
        new_lhs = _reshape_axis_into(ld + int(lhs_spec[0] < ld), lhs_spec[0] + 1, new_lhs)
        new_lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = bind(new_lhs, rhs, **params)
        return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    size = core.get_aval(rhs).shape[rd]
    if fg == 1 and bg == 1:
        out = bind(lhs, _reshape_axis_into(rd, rhs_spec[0], rhs), **params)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    groups = max(fg, bg)
    new_rhs = _reshape_axis_out_of(rhs_spec[0] + int(rd <= rhs_spec[0]), groups, rhs)
    new_rhs = _reshape_axis_into(rd + int(rhs_spec[0] < rd), rhs_spec[0] + 1, new_rhs)
    new_rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = bind(lhs, new_rhs, **params)
    out = _reshape_axis_out_of(out_spec[1], groups, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
    out = _reshape_axis_into(out_spec[1], out_spec[1] + 1, out)
    return out, out_spec[1]


primitive_jvps[conv_general_dilated_p] = _conv_jvp
primitive_transposes[conv_general_dilated_p] = _conv_transpose
primitive_batchers[conv_general_dilated_p] = _conv_batch
