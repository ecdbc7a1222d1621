"""Signal processing (``tangentia.scipy.signal``), mirroring ``jax.scipy.signal``:
direct and FFT convolutions and correlations, ``detrend``, and the windowed-FFT
family (``stft``, ``istft``, ``csd``, ``welch``) with JAX's defaults and errors.

Written over ``tangentia.numpy`` and ``lax.conv_general_dilated``, so every
function works under ``grad``, ``vmap`` and ``jit``.  Shapes, modes, segment
lengths and axes are static.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from .. import lax
from .. import numpy as tnp
from ._util import inexact as _inexact

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Sequence
    from ..typing import Array, ArrayLike

_MODES = ("full", "same", "valid")


def _check_mode(fname, mode):
    if mode not in _MODES:
        raise ValueError(f"mode must be one of ['full', 'same', 'valid'] ({fname}: got "
                         f"mode={mode!r})")


def _convolve_nd(fname, in1, in2, mode):
    """``in1`` convolved with ``in2`` (same rank) by one direct convolution."""
    _check_mode(fname, mode)
    in1, in2 = tnp.asarray(in1), tnp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError(f"in1 and in2 must have the same number of dimensions ({fname}: got "
                         f"shapes {in1.shape} and {in2.shape})")
    if in1.size == 0 or in2.size == 0:
        raise ValueError("zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")
    in1, in2 = _inexact(in1, in2)
    smaller = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (smaller or all(a >= b for a, b in zip(in1.shape, in2.shape))):
        raise ValueError("One input must be smaller than the other in every dimension. "
                         f"({fname}: got shapes {in1.shape} and {in2.shape})")
    shape_o = in2.shape
    if smaller:
        in1, in2 = in2, in1
    shape = in2.shape
    if mode == "valid":
        padding = [(0, 0)] * len(shape)
    elif mode == "same":
        padding = [(s - 1 - (o - 1) // 2, s - o + (o - 1) // 2) for s, o in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    if tnp.iscomplexobj(in1) or tnp.iscomplexobj(in2):   # four real convolutions
        def conv(a, b):
            return lax.conv_general_dilated(a[None, None], tnp.flip(b)[None, None],
                                            (1,) * len(shape), padding)[0, 0]
        re = conv(tnp.real(in1), tnp.real(in2)) - conv(tnp.imag(in1), tnp.imag(in2))
        im = conv(tnp.real(in1), tnp.imag(in2)) + conv(tnp.imag(in1), tnp.real(in2))
        return lax.complex(re, im)
    return lax.conv_general_dilated(in1[None, None], tnp.flip(in2)[None, None],
                                    (1,) * len(shape), padding)[0, 0]


def convolve(in1: ArrayLike, in2: ArrayLike, mode: Any = "full", method: str = "auto",
             precision: Any = None) -> Array:
    """The N-dimensional convolution of ``in1`` and ``in2`` (SciPy's ``convolve``).

    Args:
      in1: the first array.
      in2: the second array, of the same rank.
      mode: ``"full"``, ``"same"`` (the size of ``in1``) or ``"valid"``.
      method: ``"auto"`` or ``"direct"`` (a direct convolution) or ``"fft"``
        (:func:`fftconvolve`).
      precision: accepted for JAX compatibility (computations are float64).
    """
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method in ("direct", "auto"):
        return _convolve_nd("convolve", in1, in2, mode)
    raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def correlate(in1: ArrayLike, in2: ArrayLike, mode: Any = "full", method: str = "auto",
              precision: Any = None) -> Array:
    """The N-dimensional cross-correlation of ``in1`` and ``in2`` (SciPy's ``correlate``):
    ``convolve(in1, flip(conj(in2)))``.

    Args:
      in1: the first array.
      in2: the second array, of the same rank.
      mode: ``"full"``, ``"same"`` or ``"valid"``.
      method: ``"auto"``, ``"direct"`` or ``"fft"``.
      precision: accepted for JAX compatibility.
    """
    return convolve(in1, tnp.flip(tnp.conj(tnp.asarray(in2))), mode, method=method)


def _check_2d(fname, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{fname}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{fname}() only supports 2-dimensional inputs.")


def convolve2d(in1: ArrayLike, in2: ArrayLike, mode: Any = "full", boundary: str = "fill",
               fillvalue: float = 0, precision: Any = None) -> Array:
    """The 2-D convolution of ``in1`` and ``in2`` (SciPy's ``convolve2d``, zero fill only).

    Args:
      in1: a 2-D array.
      in2: a 2-D array.
      mode: ``"full"``, ``"same"`` or ``"valid"``.
      boundary: only ``"fill"``.
      fillvalue: only 0.
      precision: accepted for JAX compatibility.
    """
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd("convolve2d", in1, in2, mode)


def correlate2d(in1: ArrayLike, in2: ArrayLike, mode: Any = "full", boundary: str = "fill",
                fillvalue: float = 0, precision: Any = None) -> Array:
    """The 2-D cross-correlation of ``in1`` and ``in2`` (SciPy's ``correlate2d``), with
    SciPy's placement of ``"same"`` and ``"valid"`` outputs; ``mode``, ``boundary``,
    ``fillvalue`` and ``precision`` as :func:`convolve2d`'s."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = tnp.asarray(in1), tnp.asarray(in2)
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    same_shape = in1.shape == in2.shape
    if swap and mode != "same" and not (mode == "valid" and same_shape):
        out = _convolve_nd("correlate2d", tnp.flip(in2), tnp.conj(in1), mode)
        return out if mode == "valid" else tnp.conj(out)
    return tnp.flip(_convolve_nd("correlate2d", tnp.flip(in1), tnp.conj(in2), mode))


def fftconvolve(in1: ArrayLike, in2: ArrayLike, mode: Any = "full",
                axes: Sequence[int] | None = None) -> Array:
    """The convolution of ``in1`` and ``in2`` computed with FFTs (SciPy's
    ``fftconvolve``), over ``axes`` (default all; the other axes are mapped and
    must agree).

    Args:
      in1: the first array.
      in2: the second array, of the same rank.
      mode: ``"full"``, ``"same"`` or ``"valid"``.
      axes: the axes to convolve over (an int or a sequence), default all.
    """
    in1, in2 = _inexact(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality "
                         f"(fftconvolve: got shapes {in1.shape} and {in2.shape})")
    _check_mode("fftconvolve", mode)
    ndim = in1.ndim
    axes = tuple(range(ndim)) if axes is None else tuple(
        operator.index(a) % ndim for a in np.atleast_1d(axes))
    mapped = [i for i in range(ndim) if i not in axes]
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape} "
                         f"in2.shape={in2.shape} axes={axes}")
    s1 = [in1.shape[i] for i in axes]
    s2 = [in2.shape[i] for i in axes]
    if mode == "valid":
        if not (all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))):
            raise ValueError("For 'valid' mode, One input must be at least as large as the "
                             "other in every dimension.")
        if all(a <= b for a, b in zip(s1, s2)):
            in1, in2, s1, s2 = in2, in1, s2, s1
    full = [a + b - 1 for a, b in zip(s1, s2)]
    if all(a == 1 or b == 1 for a, b in zip(s1, s2)):
        conv = in1 * in2
    elif tnp.iscomplexobj(in1):
        conv = tnp.fft.ifftn(tnp.fft.fftn(in1, full, axes) * tnp.fft.fftn(in2, full, axes),
                             full, axes)
    else:
        conv = tnp.fft.irfftn(tnp.fft.rfftn(in1, full, axes) * tnp.fft.rfftn(in2, full, axes),
                              full, axes)
    out = {"full": full, "same": s1, "valid": [a - b + 1 for a, b in zip(s1, s2)]}[mode]
    index = [slice(None)] * ndim
    for ax, f, o in zip(axes, full, out):
        index[ax] = slice((f - o) // 2, (f - o) // 2 + o)
    return conv[tuple(index)]


def detrend(data: ArrayLike, axis: int = -1, type: str = "linear",
            bp: int | Sequence[int] | Any = 0, overwrite_data: None = None) -> Array:
    """``data`` minus its least-squares linear fit (piecewise between the breakpoints
    ``bp``) or its mean (``type="constant"``) along ``axis`` (SciPy's ``detrend``).

    Args:
      data: the array.
      axis: the axis along which to detrend.
      type: ``"linear"`` or ``"constant"``.
      bp: breakpoints (indices) of the piecewise linear fit.
      overwrite_data: not supported (must be None).
    """
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (data,) = _inexact(data)
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    n = data.shape[axis]
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along "
                         "given axis.")
    moved = tnp.moveaxis(data, axis, 0)
    flat = moved.reshape(n, -1)
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        npts = hi - lo
        A = tnp.stack([tnp.ones(npts, flat.dtype),
                       tnp.arange(1, npts + 1, dtype=flat.dtype) / npts], axis=1)
        coef = tnp.linalg.lstsq(A, flat[lo:hi])[0]
        pieces.append(flat[lo:hi] - A @ coef)
    return tnp.moveaxis(tnp.concatenate(pieces).reshape(moved.shape), 0, axis)


def _hann(n, dtype):
    return (tnp.ones(1, dtype) if n == 1 else
            (tnp.sin(tnp.linspace(0, np.pi, n, endpoint=False)) ** 2).astype(dtype))


def _named_window(window, n, dtype):
    if window == "hann":
        return _hann(n, dtype)
    from scipy.signal import get_window
    return tnp.asarray(get_window(window, n), dtype)


def _window(window, nperseg, length, dtype):
    """``(window array, nperseg)`` from a window name/tuple or array, as JAX's."""
    if isinstance(window, (str, tuple)):
        n = length if nperseg is None else int(nperseg)
        if n > length:
            warnings.warn(f"nperseg={n} is greater than input_length={length}, using "
                          f"nperseg={length}")
            n = length
        return _named_window(window, n, dtype), n
    win = tnp.asarray(window, dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if length < win.size:
        raise ValueError("window is longer than input signal")
    if n != win.size:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, n


def _pad_last(x, n, mode, **kwargs):
    return tnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode, **kwargs)


def _odd_ext(x, n):
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {x.shape[-1] - 1}.")
    left = 2 * x[..., :1] - tnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - tnp.flip(x[..., -(n + 1):-1], -1)
    return tnp.concatenate([left, x, right], axis=-1)


_BOUNDARIES = {
    "even": lambda x, n: _pad_last(x, n, "reflect"),
    "odd": _odd_ext,
    "constant": lambda x, n: _pad_last(x, n, "edge"),
    "zeros": lambda x, n: _pad_last(x, n, "constant"),
    None: lambda x, n: x,
}


def _segments_fft(x, win, detrend_func, nperseg, noverlap, nfft, onesided):
    """The (detrended, windowed) segments of ``x``'s last axis, transformed:
    shape ``(..., segments, frequencies)``."""
    starts = np.arange(0, x.shape[-1] - nperseg + 1, nperseg - noverlap)
    segs = x[..., starts[:, None] + np.arange(nperseg)]
    segs = detrend_func(segs) * win
    return tnp.fft.rfft(tnp.real(segs), n=nfft) if onesided else tnp.fft.fft(segs, n=nfft)


def _complex_dtype(dtype):
    return tnp.result_type(dtype, tnp.complex64)


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode, boundary=None, padded=False):
    """``(freqs, times, result)``: the shared windowed-FFT computation of ``stft``
    (``mode="stft"``) and ``csd``/``welch`` (``mode="psd"``)."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARIES)}")
    axis = operator.index(axis)
    if y is None:
        (x,) = _inexact(x)
        axis %= x.ndim
        outer = x.shape[:axis] + x.shape[axis + 1:]
    else:
        x, y = _inexact(x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
        axis %= x.ndim
        try:
            outer = np.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:],
                                        y.shape[:axis] + y.shape[axis + 1:])
        except ValueError as err:
            raise ValueError("x and y cannot be broadcast together.") from err
    cdtype = _complex_dtype(x.dtype)
    fdtype = tnp.finfo(cdtype).dtype
    if nperseg is not None and int(nperseg) < 1:
        raise ValueError("nperseg must be a positive integer")
    length = x.shape[axis] if y is None else max(x.shape[axis], y.shape[axis])
    if x.size == 0 or (y is not None and y.size == 0):
        n = x.shape[axis] if y is None else min(x.shape[axis], y.shape[axis])
        shape = x.shape if y is None else outer[:axis] + (n,) + outer[axis:]
        return tnp.zeros(shape, fdtype), tnp.zeros(shape, fdtype), tnp.zeros(shape, cdtype)
    win, nperseg = _window(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    x = tnp.moveaxis(x, axis, -1)
    if y is not None:
        y = tnp.moveaxis(y, axis, -1)
        x, y = (_pad_last(a, 0, "constant") if a.shape[-1] == length else
                tnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, length - a.shape[-1])])
                for a in (x, y))
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    signals = [x] if y is None else [x, y]
    signals = [_BOUNDARIES[boundary](s, nperseg // 2) for s in signals]
    if padded:
        nadd = -(signals[0].shape[-1] - nperseg) % (nperseg - noverlap) % nperseg
        signals = [tnp.pad(s, [(0, 0)] * (s.ndim - 1) + [(0, nadd)]) for s in signals]
    if isinstance(detrend_type, str):
        def detrend_func(d):
            return detrend(d, axis=-1, type=detrend_type)
    elif callable(detrend_type):
        detrend_func = detrend_type
    elif not detrend_type:
        def detrend_func(d):
            return d
    else:
        raise ValueError(f"Unsupported detrend type: {detrend_type}")
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = tnp.sqrt(scale)
    onesided = bool(return_onesided)
    if onesided and any(tnp.iscomplexobj(s) for s in signals):
        onesided = False
        warnings.warn("Input data is complex, switching to return_onesided=False")
    freqs = (tnp.fft.rfftfreq if onesided else tnp.fft.fftfreq)(nfft, 1 / fs).astype(fdtype)
    ffts = [_segments_fft(s, win, detrend_func, nperseg, noverlap, nfft, onesided)
            for s in signals]
    if y is not None:
        result = tnp.conj(ffts[0]) * ffts[1]
    elif mode == "psd":
        result = tnp.conj(ffts[0]) * ffts[0]
    else:
        result = ffts[0]
    result = result * scale
    if onesided and mode == "psd":
        end = None if nfft % 2 else -1
        result = result.at[..., 1:end].multiply(2)
    n = signals[0].shape[-1]
    times = tnp.arange(nperseg / 2, n - nperseg / 2 + 1, nperseg - noverlap,
                       dtype=fdtype) / fs
    if boundary is not None:
        times = times - nperseg / 2 / fs
    result = result.astype(cdtype)
    if y is None and mode != "stft":
        result = tnp.real(result)
    return freqs, times, tnp.moveaxis(result, -1, axis)


def stft(x: ArrayLike, fs: ArrayLike = 1.0, window: str = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: bool = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Array, Array, Array]:
    """The short-time Fourier transform of ``x`` (SciPy's ``stft``, JAX's defaults).

    Args:
      x: the signal.
      fs: the sampling frequency.
      window: a window name (``"hann"``; others through ``scipy.signal.get_window``),
        a tuple, or an array.
      nperseg: the segment length.
      noverlap: the overlap of segments (default ``nperseg // 2``).
      nfft: the FFT length (default ``nperseg``).
      detrend: ``False``, ``"constant"``, ``"linear"`` or a function of a segment.
      return_onesided: one-sided spectra for real input.
      boundary: the extension at both ends: ``"zeros"``, ``"even"``, ``"odd"``,
        ``"constant"`` or ``None``.
      padded: zero-pad so that the segments cover the signal.
      axis: the time axis.

    Returns:
      ``(freqs, times, Zxx)``, the segments' spectra on the last axis after
      ``axis``'s replacement by the frequency axis.
    """
    return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     "spectrum", axis, "stft", boundary, padded)


def csd(x: ArrayLike, y: ArrayLike | None, fs: ArrayLike = 1.0, window: str = "hann",
        nperseg: int | None = None, noverlap: int | None = None, nfft: int | None = None,
        detrend: str = "constant", return_onesided: bool = True, scaling: str = "density",
        axis: int = -1, average: str = "mean") -> tuple[Array, Array]:
    """The cross power spectral density of ``x`` and ``y`` by Welch's method (SciPy's
    ``csd``).

    Args:
      x: the first signal.
      y: the second signal (``None``: the power spectral density of ``x``).
      fs: the sampling frequency.
      window: a window name, tuple or array.
      nperseg: the segment length (default: the signal's length for named windows, as JAX).
      noverlap: the overlap (default ``nperseg // 2``).
      nfft: the FFT length.
      detrend: ``"constant"``, ``"linear"``, ``False`` or a function.
      return_onesided: one-sided spectra for real input.
      scaling: ``"density"`` (V**2/Hz) or ``"spectrum"`` (V**2).
      axis: the time axis.
      average: ``"mean"`` or ``"median"`` over segments.

    Returns:
      ``(freqs, Pxy)``.
    """
    freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if y is not None:
        pxy = pxy + 0j
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                ii = np.arange(2.0, pxy.shape[-1], 2)
                bias = 1 + np.sum(1.0 / (ii + 1) - 1.0 / ii)
                if tnp.iscomplexobj(pxy):
                    pxy = (tnp.median(tnp.real(pxy), axis=-1)
                           + 1j * tnp.median(tnp.imag(pxy), axis=-1))
                else:
                    pxy = tnp.median(pxy, axis=-1)
                pxy = pxy / tnp.asarray(bias, pxy.dtype)
            elif average == "mean":
                pxy = pxy.mean(axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = pxy.reshape(pxy.shape[:-1])
    return freqs, pxy


def welch(x: ArrayLike, fs: ArrayLike = 1.0, window: str = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: str = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Array, Array]:
    """The power spectral density of ``x`` by Welch's method (SciPy's ``welch``).

    Args:
      x: the signal.
      fs: the sampling frequency.
      window: a window name, tuple or array.
      nperseg: the segment length.
      noverlap: the overlap.
      nfft: the FFT length.
      detrend: ``"constant"``, ``"linear"``, ``False`` or a function.
      return_onesided: one-sided spectra for real input.
      scaling: ``"density"`` or ``"spectrum"``.
      axis: the time axis.
      average: ``"mean"`` or ``"median"``.

    Returns:
      ``(freqs, Pxx)``.
    """
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, tnp.real(pxx)


def _overlap_add(frames, step):
    """Overlap-add of ``frames`` ``(..., n, length)`` at hop ``step``."""
    *batch, n, length = frames.shape
    out = tnp.zeros((*batch, step * (n - 1) + length), frames.dtype)
    index = (np.arange(n)[:, None] * step + np.arange(length)).ravel()
    return out.at[..., index].add(frames.reshape(*batch, n * length))


def istft(Zxx: ArrayLike, fs: ArrayLike = 1.0, window: str = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2) -> tuple[Array, Array]:
    """The inverse short-time Fourier transform (SciPy's ``istft``): overlap-add of
    the inverse FFTs of the segments, normalized by the summed squared window.

    Args:
      Zxx: the STFT, at least 2-D.
      fs: the sampling frequency.
      window: a window name, tuple or array.
      nperseg: the segment length (default from the frequency axis).
      noverlap: the overlap (default ``nperseg // 2``).
      nfft: the FFT length.
      input_onesided: whether ``Zxx`` holds one-sided spectra.
      boundary: whether the STFT extended the signal at both ends (trimmed here).
      time_axis: the segments' axis.
      freq_axis: the frequencies' axis.

    Returns:
      ``(times, x)``.
    """
    Zxx = tnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis, time_axis = freq_axis % Zxx.ndim, time_axis % Zxx.ndim
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = Zxx.astype(_complex_dtype(Zxx.dtype))
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    nperseg = int(nperseg or n_default)
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
    nfft = int(nfft)
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = int(noverlap or nperseg // 2)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    outer = [i for i in range(Zxx.ndim) if i not in (time_axis, freq_axis)]
    Zxx = tnp.transpose(Zxx, outer + [time_axis, freq_axis])   # (..., segments, freqs)
    ifft = tnp.fft.irfft if input_onesided else tnp.fft.ifft
    segs = ifft(Zxx, n=nfft, axis=-1)[..., :nperseg]
    if isinstance(window, (str, tuple)):
        win = _named_window(window, nperseg, segs.dtype)
    else:
        win = tnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
        win = win.astype(segs.dtype)
    segs = segs * win.sum()
    step = nperseg - noverlap
    x = _overlap_add(segs * win, step)
    norm = _overlap_add(tnp.broadcast_to(win * win, segs.shape[-2:]), step)
    if boundary:
        x = x[..., nperseg // 2:-(nperseg // 2)]
        norm = norm[..., nperseg // 2:-(nperseg // 2)]
    x = x / tnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = tnp.moveaxis(x, -1, time_axis - (freq_axis < time_axis))
    times = tnp.arange(x.shape[0], dtype=tnp.finfo(x.dtype).dtype) / fs
    return times, x


__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]
