"""Discrete cosine transforms (``tangentia.scipy.fft``), mirroring ``jax.scipy.fft``:
``dct``/``dctn`` and their inverses ``idct``/``idctn``, type 2 only (as JAX), with
``norm`` ``None``/``"backward"`` or ``"ortho"``.

Each one-axis transform is one complex FFT of the even/odd-interleaved signal
(Makhoul 1980); the N-axis transforms apply it axis by axis.  Written over
``tangentia.numpy``, so they are differentiable and work under ``vmap``/``jit``.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from .. import numpy as tnp

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from ..typing import Array, ArrayLike


def _check(fname, type, norm):
    if type != 2:
        raise NotImplementedError(f"Only DCT type 2 is implemented. ({fname}: got type={type})")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{fname}: norm={norm!r} is not implemented")


def _resized(x, n, axis):
    """``x`` zero-padded or truncated to length ``n`` along ``axis`` (last)."""
    if n is None or n == x.shape[-1]:
        return x
    if n < x.shape[-1]:
        return x[..., :n]
    return tnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])


def _interleaving(n):
    """The permutation putting the even entries first, then the odd ones reversed."""
    return np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2)[::-1]])


def _ortho_scale(n, dtype):
    """``1 / sqrt(4n)`` for the first coefficient, ``1 / sqrt(2n)`` for the others."""
    f = np.full(n, 2.0 * n)
    f[0] = 4.0 * n
    return (1.0 / np.sqrt(f)).astype(dtype)


def _twiddle(n):
    return np.exp(-0.5j * np.pi * np.arange(n) / n)


def _per_axis(fname, transform):
    """A one-axis transform of real ``x`` (on the last axis) as a function of ``x``,
    ``n``, ``axis`` and ``norm``, taking complex input part by part."""
    def apply(x, n, axis, norm):
        x = tnp.asarray(x)
        if tnp.iscomplexobj(x):
            return lax.complex(apply(tnp.real(x), n, axis, norm),
                               apply(tnp.imag(x), n, axis, norm))
        if not tnp.issubdtype(x.dtype, tnp.inexact):
            x = x.astype(tnp.float64)
        axis = operator.index(axis) % x.ndim
        y = transform(_resized(tnp.moveaxis(x, axis, -1), n, axis), norm)
        return tnp.moveaxis(y, -1, axis)
    apply.__name__ = fname
    return apply


def _dct_last(x, norm):
    n = x.shape[-1]
    spectrum = tnp.fft.fft(x[..., _interleaving(n)], axis=-1)
    twiddle = _twiddle(n).astype(tnp.result_type(spectrum))
    out = 2 * tnp.real(spectrum * twiddle)
    return out * _ortho_scale(n, out.dtype) if norm == "ortho" else out


def _idct_last(x, norm):
    n = x.shape[-1]
    scale = _ortho_scale(n, x.dtype)
    x = x * (scale if norm == "ortho" else scale * scale)
    twiddle = (2.0 * n / _twiddle(n)).astype(tnp.result_type(x, tnp.complex64))
    v = tnp.real(tnp.fft.ifft(x * twiddle, axis=-1))
    return v[..., np.argsort(_interleaving(n))]


_dct1 = _per_axis("dct", _dct_last)
_idct1 = _per_axis("idct", _idct_last)


def dct(x: ArrayLike, type: int = 2, n: int | None = None, axis: int = -1,
        norm: str | None = None) -> Array:
    """The discrete cosine transform (type 2) of ``x`` along ``axis`` (SciPy's ``dct``).

    Args:
      x: the array.
      type: the DCT type; only 2.
      n: the transform length (``x`` is zero-padded or truncated to it).
      axis: the axis.
      norm: ``None``/``"backward"`` (unnormalized) or ``"ortho"``.
    """
    _check("dct", type, norm)
    return _dct1(x, n, axis, norm)


def idct(x: ArrayLike, type: int = 2, n: int | None = None, axis: int = -1,
         norm: str | None = None) -> Array:
    """The inverse of :func:`dct` along ``axis`` (SciPy's ``idct``, type 2).

    Args:
      x: the array.
      type: the DCT type; only 2.
      n: the transform length.
      axis: the axis.
      norm: ``None``/``"backward"`` or ``"ortho"``.
    """
    _check("idct", type, norm)
    return _idct1(x, n, axis, norm)


def _axes_and_sizes(x, s, axes):
    x = tnp.asarray(x)
    if s is not None:
        s = list(s) if np.iterable(s) else [operator.index(s)]
        if len(s) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = tuple(operator.index(a) % x.ndim for a in np.atleast_1d(axes))
    return axes, [None] * len(axes) if s is None else s


def _n_axes(fname: str, one_axis: Callable[..., Array], summary: str) -> Callable[..., Array]:
    """The N-dimensional transform ``fname`` applying ``one_axis`` axis by axis."""
    def transform(x: ArrayLike, type: int = 2, s: Sequence[int] | None = None,
                  axes: Sequence[int] | None = None, norm: str | None = None) -> Array:
        _check(fname, type, norm)
        axes, sizes = _axes_and_sizes(x, s, axes)
        for axis, n in zip(axes, sizes):
            x = one_axis(x, n, axis, norm)
        return tnp.asarray(x)
    transform.__name__ = transform.__qualname__ = fname
    transform.__module__ = __name__
    transform.__doc__ = f"""{summary}

    Args:
      x: the array.
      type: the DCT type; only 2.
      s: the transform lengths along ``axes``.
      axes: the axes (default: the last ``len(s)``, else all).
      norm: ``None``/``"backward"`` or ``"ortho"``.
    """
    return transform


dctn = _n_axes("dctn", _dct1, "The N-dimensional DCT (type 2) over ``axes`` (SciPy's ``dctn``).")
idctn = _n_axes("idctn", _idct1,
                "The inverse of :func:`dctn` (SciPy's ``idctn``, type 2).")


__all__ = ["dct", "dctn", "idct", "idctn"]
