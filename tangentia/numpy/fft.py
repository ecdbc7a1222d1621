"""``tangentia.numpy.fft``: NumPy's discrete Fourier transforms, differentiable.

Every transform crops or zero-pads its input to the requested lengths, moves
the transformed axes last, applies the ``fft`` primitive
(``tangentia.primitives.fft``) and scales by ``norm`` ("backward", the
default, "ortho" or "forward"), so values equal ``numpy.fft``'s and every
transformation (jvp, vjp, vmap, jit) sees linear primitives only.
"""
from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING

import numpy as _np

from ..primitives import elementwise as _E
from ..primitives import fft as _F
from ._conversion import asarray, astype
from ._padding import pad
from ._indexing import roll
from ._shapes import moveaxis
from ._util import _aval, _check_device

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike, Shape

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _check_norm(fname, norm):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         f'"forward". (numpy.fft.{fname}: argument norm)')
    return norm


def _scale(fft_type, norm, lengths):
    """The factor ``norm`` applies to an unnormalized forward / normalized inverse result."""
    n = math.prod(lengths)
    inverse = fft_type.startswith("i")
    if norm == "backward":
        return None
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1 / math.sqrt(n)
    return float(n) if inverse else 1 / n


class _RealInputError(ValueError, TypeError):
    """JAX raises ValueError for a complex input to a real transform; NumPy TypeError."""


def _operand(fname, a, fft_type):
    a = asarray(a)
    dtype = _aval(a).dtype
    if fft_type == "rfft":
        if dtype.kind == "c":
            raise _RealInputError(f"only real valued inputs supported for rfft (numpy.fft."
                                  f"{fname}: argument a must be real, got dtype {dtype})")
        return astype(a, _F.real_dtype(dtype))
    return astype(a, _F.complex_dtype(dtype))


def _fft_core(fname, fft_type, a, s, axes, norm):
    """JAX's ``_fft_core``: crop/pad to ``s``, move ``axes`` last, transform, scale."""
    norm = _check_norm(fname, norm)
    a = _operand(fname, a, fft_type)
    nd = _aval(a).ndim
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n <= 0 for n in s):
            raise ValueError(f"numpy.fft.{fname}: argument s (or n) must be positive, got {s}")
        if axes is not None and len(s) != len(axes):
            raise ValueError(f"numpy.fft.{fname}: Shape and axes have different lengths "
                             f"(s={s}, axes={tuple(axes)})")
    if axes is None:
        axes = range(nd) if s is None else range(nd - len(s), nd)
    axes = tuple(operator.index(ax) for ax in axes)
    for ax in axes:
        if not -nd <= ax < nd:
            raise ValueError(f"numpy.fft.{fname}: axis {ax} is out of bounds for an array of "
                             f"rank {nd}")
    axes = tuple(ax % nd for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"numpy.fft.{fname} does not support repeated axes. Got axes {axes}.")
    last = tuple(range(nd - len(axes), nd))
    a = moveaxis(a, axes, last)
    shape = _aval(a).shape
    if s is None:
        s = [shape[ax] for ax in last]
        if fft_type == "irfft" and axes:
            s[-1] = 2 * (s[-1] - 1)
        s = tuple(s)
        if any(n <= 0 for n in s):
            raise ValueError(f"numpy.fft.{fname}: Invalid number of FFT data points {s} "
                             f"(argument a of shape {_aval(a).shape})")
    want = list(shape)
    for ax, n in zip(last, s):
        want[ax] = n
    if fft_type == "irfft" and axes:
        want[-1] = s[-1] // 2 + 1
    if tuple(want) != shape:
        a = a[tuple(slice(0, w) for w in want)]
        a = pad(a, [(0, w - h) for w, h in zip(want, _aval(a).shape)])
    out = _F.fft(a, fft_type, s)
    factor = _scale(fft_type, norm, s)
    if factor is not None:
        out = _E.mul(out, factor)
    return moveaxis(out, last, axes)


def _one(v):
    """``(v,)``: the one length or axis of a 1-D transform (None stays None)."""
    return None if v is None else (v,)


def fft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """One-dimensional discrete Fourier transform (``numpy.fft.fft``)."""
    return _fft_core("fft", "fft", a, _one(n), _one(axis), norm)


def ifft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """One-dimensional inverse discrete Fourier transform (``numpy.fft.ifft``)."""
    return _fft_core("ifft", "ifft", a, _one(n), _one(axis), norm)


def rfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """One-dimensional transform of a real input, non-negative frequencies only."""
    return _fft_core("rfft", "rfft", a, _one(n), _one(axis), norm)


def irfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """Inverse of ``rfft``: a real output of length ``n`` (default ``2 * (m - 1)``)."""
    return _fft_core("irfft", "irfft", a, _one(n), _one(axis), norm)


def hfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """Transform of a signal with Hermitian symmetry (real spectrum), as NumPy's:
    ``irfft(conj(a), n, axis, norm=<swapped>)``."""
    _check_norm("hfft", norm)
    a = asarray(a)
    if _aval(a).dtype.kind == "c":
        a = _E.conj(a)
    return _fft_core("hfft", "irfft", a, _one(n), _one(axis),
                     _SWAP[norm or "backward"])


def ihfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """Inverse of ``hfft``, as NumPy's: ``conj(rfft(a, n, axis, norm=<swapped>))``."""
    _check_norm("ihfft", norm)
    return _E.conj(_fft_core("ihfft", "rfft", a, _one(n), _one(axis),
                             _SWAP[norm or "backward"]))


def fftn(a: ArrayLike, s: Shape | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Array:
    """N-dimensional discrete Fourier transform (``numpy.fft.fftn``)."""
    return _fft_core("fftn", "fft", a, s, axes, norm)


def ifftn(a: ArrayLike, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Array:
    """N-dimensional inverse discrete Fourier transform (``numpy.fft.ifftn``)."""
    return _fft_core("ifftn", "ifft", a, s, axes, norm)


def rfftn(a: ArrayLike, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Array:
    """N-dimensional transform of a real input (the last axis halved)."""
    return _fft_core("rfftn", "rfft", a, s, axes, norm)


def irfftn(a: ArrayLike, s: Shape | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Array:
    """Inverse of ``rfftn``."""
    return _fft_core("irfftn", "irfft", a, s, axes, norm)


def _two_axes(fname, axes):
    if len(axes) != 2:
        raise ValueError(f"numpy.fft.{fname} only supports 2 axes. Got axes = {tuple(axes)}.")
    return axes


def fft2(a: ArrayLike, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Array:
    """Two-dimensional discrete Fourier transform."""
    return _fft_core("fft2", "fft", a, s, _two_axes("fft2", axes), norm)


def ifft2(a: ArrayLike, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Array:
    """Two-dimensional inverse discrete Fourier transform."""
    return _fft_core("ifft2", "ifft", a, s, _two_axes("ifft2", axes), norm)


def rfft2(a: ArrayLike, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Array:
    """Two-dimensional transform of a real input."""
    return _fft_core("rfft2", "rfft", a, s, _two_axes("rfft2", axes), norm)


def irfft2(a: ArrayLike, s: Shape | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Array:
    """Inverse of ``rfft2``."""
    return _fft_core("irfft2", "irfft", a, s, _two_axes("irfft2", axes), norm)


def fftfreq(n: int, d: ArrayLike = 1.0, *, dtype: DTypeLike | None = None,
            device: Any = None) -> Array:
    """Sample frequencies of an ``n``-point transform with sample spacing ``d`` (``device``:
    as ``tnp.zeros``'s)."""
    _check_device(device, "fftfreq")
    out = _np.fft.fftfreq(operator.index(n), d)
    return out if dtype is None else out.astype(dtype)


def rfftfreq(n: int, d: ArrayLike = 1.0, *, dtype: DTypeLike | None = None,
             device: Any = None) -> Array:
    """Non-negative sample frequencies of an ``n``-point ``rfft`` (``device``: as
    ``tnp.zeros``'s)."""
    _check_device(device, "rfftfreq")
    out = _np.fft.rfftfreq(operator.index(n), d)
    return out if dtype is None else out.astype(dtype)


def _shift(x, axes, sign):
    x = asarray(x)
    nd = _aval(x).ndim
    if axes is None:
        axes = tuple(range(nd))
    elif isinstance(axes, int):
        axes = (axes,)
    shape = _aval(x).shape
    shifts = tuple(sign * (shape[ax] // 2) for ax in axes)
    return roll(x, shifts, tuple(axes))


def fftshift(x: ArrayLike, axes: None | int | Sequence[int] = None) -> Array:
    """Move the zero-frequency term to the center (``numpy.fft.fftshift``)."""
    return _shift(x, axes, 1)


def ifftshift(x: ArrayLike, axes: None | int | Sequence[int] = None) -> Array:
    """Inverse of ``fftshift``."""
    return _shift(x, axes, -1)
