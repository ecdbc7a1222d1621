"""``jax.lax``'s convolutions: ``conv_general_dilated`` (the primitive of
``tangentia.primitives.convolution``) and its conveniences ``conv``,
``conv_with_general_padding``, ``conv_transpose``, with the dimension-number
and padding helpers (``conv_dimension_numbers``, ``conv_general_permutations``,
``padtype_to_pads``, shape tuples)."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..numpy._indexing import flip
from ..numpy._shapes import swapaxes
from ..primitives.convolution import conv_abstract_eval, conv_general_dilated_p, dilate_shape
from .enums import ConvDimensionNumbers
from . import ops as _ops
from .ops import _accumulate_in

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, DType, DTypeLike


def padtype_to_pads(in_shape: Sequence[int] | Array, window_shape: Sequence[int] | Array,
                    window_strides: Sequence[int] | Array, padding: Any) -> list[tuple[int, int]]:
    """``(low, high)`` pairs for the padding ``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'``."""
    kind = padding.upper() if isinstance(padding, str) else getattr(padding, "name", padding)
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or "
                           f"'SAME_LOWER', got {padding}.")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        out = -(-int(n) // int(s))
        size = max((out - 1) * int(s) + int(k) - int(n), 0)
        small, big = size // 2, size - size // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return pads


def conv_general_permutations(dimension_numbers) -> Any:
    """The permutations ``(lhs_perm, rhs_perm, out_perm)`` of layout strings such as
    ``('NHWC', 'HWIO', 'NHWC')``: batch/out-feature, feature/in-feature, then the
    spatial dimensions in the kernel's order."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        if not dimension_numbers[i].count(a) == dimension_numbers[i].count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {dimension_numbers[i]}.")
        if len(dimension_numbers[i]) != len(set(dimension_numbers[i])):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {dimension_numbers[i]}.")
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"}
            == set(out_spec) - {"N", "C"}):
        raise TypeError(f"convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {dimension_numbers}.")

    def perm(spec, pair):
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs_spec:
            spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)
    return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> Any:
    """``dimension_numbers`` (None, layout strings or a ``ConvDimensionNumbers``) as a
    ``ConvDimensionNumbers`` of permutations."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)) or len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers must be None, a ConvDimensionNumbers "
                        f"or a tuple/list of 3 strings, got {dimension_numbers!r}.")
    if not all(isinstance(e, str) for e in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                        f"{tuple(map(type, dimension_numbers))}.")
    for i, e in enumerate(dimension_numbers):
        if len(e) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                            f"ndim of lhs and rhs, got {len(e)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def _aval(x):
    return core.get_aval(x)


def conv_general_dilated(lhs: Array, rhs: Array, window_strides: Sequence[int],
                         padding: str | Sequence[tuple[int, int]],
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                         feature_group_count: int = 1, batch_group_count: int = 1,
                         precision: Any = None, preferred_element_type: DTypeLike | None = None,
                         out_sharding: Any = None) -> Array:
    """General dilated convolution (``jax.lax.conv_general_dilated``).

    ``padding`` is ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or one ``(low, high)``
    pair per spatial dimension; ``lhs_dilation`` (transposed convolution) and
    ``rhs_dilation`` (atrous) insert holes; ``dimension_numbers`` names the layouts
    (default ``('NCHW', 'OIHW', 'NCHW')``); ``precision`` is accepted and ignored, and so
    is ``out_sharding`` (JAX's layout of the result: one device here; flax passes it).
    Differentiable in both operands (any order), batched, staged.
    """
    lhs = lhs if isinstance(lhs, core.Tracer) else np.asarray(lhs)
    rhs = rhs if isinstance(rhs, core.Tracer) else np.asarray(rhs)
    lhs, rhs = _accumulate_in(preferred_element_type, lhs, rhs)  # XLA accumulates in it
    ls, rs = _aval(lhs).shape, _aval(rhs).shape
    dnums = conv_dimension_numbers(ls, rs, dimension_numbers)
    nsp = len(ls) - 2
    window_strides = tuple(int(s) for s in window_strides)
    if len(window_strides) != nsp:
        raise ValueError(f"conv_general_dilated window and window_strides must have the same "
                         f"number of dimensions, but got {nsp} and {len(window_strides)}"
                         + _ops._tag("conv_general_dilated",
                                     "one stride per spatial dimension of the operands"))
    if lhs_dilation is None:
        lhs_dilation = (1,) * nsp
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise ValueError("String padding is not implemented for transposed convolution using "
                         "this op. Please either exactly specify the required padding or use "
                         "conv_transpose.")
    rhs_dilation = (1,) * nsp if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    if isinstance(padding, str):
        window = dilate_shape([rs[d] for d in dnums.rhs_spec[2:]], rhs_dilation)
        padding = padtype_to_pads([ls[d] for d in dnums.lhs_spec[2:]], window, window_strides,
                                  padding)
    try:
        padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (ValueError, TypeError) as e:
        raise ValueError(f"padding argument to conv_general_dilated should be a string or a "
                         f"sequence of (low, high) pairs, got {padding}") from e
    params = dict(
        window_strides=window_strides, padding=padding,
        lhs_dilation=tuple(int(d) for d in lhs_dilation), rhs_dilation=rhs_dilation,
        dimension_numbers=tuple(tuple(s) for s in dnums),
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        preferred_element_type=None if preferred_element_type is None
        else np.dtype(preferred_element_type))
    conv_abstract_eval(_aval(lhs), _aval(rhs), **params)  # eager calls check shapes too
    return conv_general_dilated_p.bind(lhs, rhs, **params)


def conv(lhs: Array, rhs: Array, window_strides: Sequence[int], padding: str, precision: Any = None,
         preferred_element_type: DTypeLike | None = None) -> Array:
    """``conv_general_dilated`` in the NCHW/OIHW layout with string padding."""
    return conv_general_dilated(lhs, rhs, window_strides, padding,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Array, rhs: Array, window_strides: Sequence[int],
                              padding: str | Sequence[tuple[int, int]],
                              lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: DTypeLike | None = None) -> Array:
    """``conv_general_dilated`` in the NCHW/OIHW layout with dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return pad_a, pad_len - pad_a


def conv_transpose(lhs: Array, rhs: Array, strides: Sequence[int],
                   padding: str | Sequence[tuple[int, int]],
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: DTypeLike | None = None,
                   use_consistent_padding: bool = False) -> Array:
    """Transposed ("fractionally strided") convolution (``jax.lax.conv_transpose``):
    the layouts default to TensorFlow's (``'NHWC', 'HWIO', 'NHWC'``);
    ``transpose_kernel=True`` flips the kernel and swaps its feature axes, giving
    the gradient of ``conv`` with the same arguments."""
    ls, rs = _aval(lhs).shape, _aval(rhs).shape
    nd = len(ls)
    if nd != len(rs) or nd < 2:
        raise ValueError(f"conv_transpose: lhs and rhs must have one rank >= 2, got shapes "
                         f"{ls} and {rs}")
    if dimension_numbers is None:
        defaults = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                    4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}
        if nd not in defaults:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = defaults[nd]
    dn = conv_dimension_numbers(ls, rs, dimension_numbers)
    k_sdims = [rs[d] for d in dn.rhs_spec[2:]]
    rhs_dilation = (1,) * (nd - 2) if rhs_dilation is None else tuple(rhs_dilation)
    if use_consistent_padding or (isinstance(padding, str) and padding in {"SAME", "VALID"}):
        eff = dilate_shape(k_sdims, rhs_dilation)
        per_dim = [padding] * len(strides) if isinstance(padding, str) else padding
        pads = tuple(_conv_transpose_padding(k, s, tuple(p) if not isinstance(p, str) else p)
                     for k, s, p in zip(eff, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = swapaxes(flip(rhs, tuple(dn.rhs_spec[2:])), dn.rhs_spec[0], dn.rhs_spec[1])
    return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, strides, rhs_dilation, dn,
                                preferred_element_type=preferred_element_type)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1) -> tuple[int, ...]:
    """The output shape of a convolution of canonical-order (NCHW, OIHW) shapes."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    space = []
    for n, k, s, (lo, hi) in zip(lhs_shape[2:], rhs_shape[2:], strides, pads):
        padded = n + lo + hi
        if padded < 0:
            raise ValueError("Negative padding is larger than the size of the corresponding "
                             f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
        space.append(0 if padded < k else (padded - k) // s + 1)
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + tuple(space)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers
                             ) -> tuple[int, ...]:
    """The output shape of ``conv_general_dilated`` (without dilations)."""
    lp, rp, op = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(tuple(lhs_shape[i] for i in lp), tuple(rhs_shape[i] for i in rp),
                           window_strides, padding)
    return tuple(out[i] for i in np.argsort(op))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers
                               ) -> tuple[int, ...]:
    """The output shape of ``conv_transpose``."""
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt, rt = [lhs_shape[i] for i in lp], [rhs_shape[i] for i in rp]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rt[2:], window_strides)]
    extra = [sum(p) for p in padding]
    space = [(i - 1) * s - k + 2 + e for i, k, s, e in zip(lt[2:], rt[2:], window_strides, extra)]
    out = (lt[0], rt[0]) + tuple(space)
    return tuple(out[i] for i in np.argsort(op))


def conv_general_dilated_patches(lhs: ArrayLike, filter_shape: Sequence[int],
                                 window_strides: Sequence[int],
                                 padding: str | Sequence[tuple[int, int]],
                                 lhs_dilation: Sequence[int] | None = None,
                                 rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers: Any = None, precision: Any = None,
                                 preferred_element_type: DType | None = None) -> Array:
    """The patches a convolution with a kernel of ``filter_shape`` sees, flattened into
    the feature dimension (channel-major, ``jax.lax.conv_general_dilated_patches``):
    a grouped convolution with one-hot kernels, as JAX's."""
    x = lhs if isinstance(lhs, core.Tracer) else np.asarray(lhs)
    filter_shape = tuple(int(k) for k in filter_shape)
    ls = _aval(x).shape
    dn = conv_dimension_numbers(ls, (1, 1) + filter_shape, dimension_numbers)
    size = int(np.prod(filter_shape))
    channels = ls[dn.lhs_spec[1]]
    eye = np.eye(size, dtype=_aval(x).dtype)
    rhs = np.broadcast_to(eye, (channels, size, size)).reshape((channels * size, 1)
                                                               + filter_shape)
    rhs = np.moveaxis(rhs, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    return conv_general_dilated(x, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dn,
                                feature_group_count=channels,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int],
                               padding: str | Sequence[tuple[int, int]],
                               filter_shape: Sequence[int],
                               lhs_dilation: Sequence[int] | None = None,
                               rhs_dilation: Sequence[int] | None = None,
                               dimension_numbers: Any = None, precision: Any = None) -> Array:
    """An unshared convolution (``jax.lax.conv_general_dilated_local``): every output
    position has its own kernel.

    ``rhs`` has the layout ``dimension_numbers[1]`` names, but its spatial dimensions are
    the *output* positions and its ``I`` dimension is the window flattened channel-major
    (``C`` first, then the window dimensions in the order of the rhs spec's spatial
    letters), of size ``C * prod(filter_shape)``: output ``[n, o, p] = sum_k
    patches[n, k, p] * rhs[o, k, p]``, with ``patches`` those of
    ``conv_general_dilated_patches`` (the same ``filter_shape``, strides, padding and
    dilations).  A composition of the patches and one ``dot_general`` batched over the
    output positions, so it differentiates in both operands, batches and stages as they do.
    ``precision`` (one value or a pair: patches, product) is accepted; the CPU computes in
    the operands' dtype.
    """
    name = "conv_general_dilated_local"
    x = lhs if isinstance(lhs, core.Tracer) else np.asarray(lhs)
    w = rhs if isinstance(rhs, core.Tracer) else np.asarray(rhs)
    ls, rs = _aval(x).shape, _aval(w).shape
    filter_shape = tuple(operator.index(k) for k in filter_shape)
    if len(filter_shape) != len(ls) - 2:
        raise TypeError(f"{name}: filter_shape must have one size per spatial dimension of "
                        f"lhs ({len(ls) - 2}), got {filter_shape}")
    dn = conv_dimension_numbers(ls, rs, dimension_numbers)
    patches = conv_general_dilated_patches(x, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dn)
    ps = _aval(patches).shape
    nsp = len(ps) - 2
    k_lhs, k_rhs = ps[dn.out_spec[1]], rs[dn.rhs_spec[1]]
    out_sp = tuple(ps[d] for d in dn.out_spec[2:])
    rhs_sp = tuple(rs[d] for d in dn.rhs_spec[2:])
    if k_lhs != k_rhs or out_sp != rhs_sp:
        raise TypeError(
            f"{name}: rhs must have an input dimension of size C * prod(filter_shape) = "
            f"{k_lhs} and the output's spatial sizes {out_sp} (one kernel per output "
            f"position), got {k_rhs} and {rhs_sp} (rhs shape {tuple(rs)})")
    # out[p..., n, o]: the output positions batch, the window and channels contract
    out = _ops.dot_general(patches, w, ((([dn.out_spec[1]]), [dn.rhs_spec[1]]),
                                        (list(dn.out_spec[2:]), list(dn.rhs_spec[2:]))))
    source = {dn.out_spec[0]: nsp, dn.out_spec[1]: nsp + 1}
    source.update({d: i for i, d in enumerate(dn.out_spec[2:])})
    return _ops.transpose(out, tuple(source[a] for a in range(nsp + 2)))
