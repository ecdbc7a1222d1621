"""The fast Fourier transform primitive (``lax.fft``), with its linear rules.

``fft_p`` transforms the trailing ``len(fft_lengths)`` axes of its operand;
``fft_type`` is one of

* ``"fft"``: complex to complex, unnormalized (``numpy.fft.fftn``);
* ``"ifft"``: complex to complex, scaled by ``1 / prod(fft_lengths)``;
* ``"rfft"``: real ``(..., *fft_lengths)`` to complex ``(..., n // 2 + 1)``;
* ``"irfft"``: complex ``(..., n // 2 + 1)`` to real ``(..., *fft_lengths)``.

The transform is linear, so its JVP is itself applied to the tangent.  The
transposes follow JAX's (``_fft_transpose_rule``), without conjugation: the
DFT matrix is symmetric, so FFT and IFFT are their own transposes; RFFT's is
the real part of the FFT of the zero-padded cotangent; IRFFT's is the
conjugate of a scaled RFFT of the cotangent in which the Hermitian-duplicated
bins count twice.  The public functions are in ``tangentia.numpy.fft``.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..core import Primitive, ShapedArray
from ..interpreters import ad
from ..interpreters.batching import move_to_front, primitive_batchers
from . import elementwise as E
from . import structural as S

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ..typing import Array, ArrayLike

FFT_TYPES = ("fft", "ifft", "rfft", "irfft")

_NUMPY = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn,
          "irfft": np.fft.irfftn}


def complex_dtype(dtype):
    """The complex dtype of ``dtype``'s precision (complex64 for float32)."""
    return np.dtype(np.complex64) if dtype in (np.float32, np.complex64) else np.dtype(
        np.complex128)


def real_dtype(dtype):
    """The real dtype of ``dtype``'s precision (float32 for complex64)."""
    return np.dtype(np.float32) if dtype in (np.float32, np.complex64) else np.dtype(np.float64)


def _out_aval(x, fft_type, fft_lengths):
    k = len(fft_lengths)
    if fft_type not in FFT_TYPES:
        raise ValueError(f"fft: fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    if x.ndim < k:
        raise ValueError(f"fft: the operand of shape {x.shape} has fewer than {k} axes "
                         f"(fft_lengths={fft_lengths})")
    batch, inner = x.shape[:x.ndim - k], x.shape[x.ndim - k:]
    n = fft_lengths[-1] if k else 0
    if fft_type == "rfft":
        if x.dtype.kind == "c":
            raise TypeError(f"fft: an rfft needs a real operand, got {x.dtype}")
        want, out = fft_lengths, fft_lengths[:-1] + (n // 2 + 1,)
        dtype = complex_dtype(x.dtype)
    elif fft_type == "irfft":
        want, out = fft_lengths[:-1] + (n // 2 + 1,), fft_lengths
        dtype = real_dtype(x.dtype)
    else:
        want = out = fft_lengths
        dtype = complex_dtype(x.dtype)
    if fft_type != "rfft" and x.dtype.kind != "c":
        raise TypeError(f"fft: an {fft_type} needs a complex operand, got {x.dtype}")
    if tuple(inner) != tuple(want):
        raise ValueError(f"fft: an {fft_type} with fft_lengths={fft_lengths} needs trailing "
                         f"axes of sizes {want}, got an operand of shape {x.shape}")
    return ShapedArray(batch + tuple(out), dtype)


def _fft_impl(x, fft_type, fft_lengths):
    x = np.asarray(x)
    k = len(fft_lengths)
    if k == 0:
        return x.copy()
    out = _NUMPY[fft_type](x, s=fft_lengths, axes=tuple(range(x.ndim - k, x.ndim)))
    return out.astype(_out_aval(core.get_aval(x), fft_type, fft_lengths).dtype, copy=False)


fft_p = Primitive("fft")
fft_p.impl = _fft_impl
fft_p.abstract_eval = _out_aval


def fft(x: ArrayLike, fft_type: Any, fft_lengths: Sequence[int]) -> Array:
    """``lax.fft``: the ``fft_type`` transform of the trailing axes of ``x`` (``fft_type``
    a string, any case, or an enum member such as JAX's ``FftType.RFFT``)."""
    fft_type = getattr(fft_type, "name", fft_type)
    if not isinstance(fft_type, str) or fft_type.lower() not in FFT_TYPES:
        raise ValueError(f"fft: fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    return fft_p.bind(x, fft_type=fft_type.lower(),
                      fft_lengths=tuple(int(n) for n in fft_lengths))


def _fft_batch(args, dims, fft_type, fft_lengths):
    x, = args
    return fft(move_to_front(x, dims[0]), fft_type, fft_lengths), 0


def _rfft_transpose(ct, fft_lengths):
    # rfft = (slice to n // 2 + 1) . fft . (real to complex); transpose each.
    shape = core.get_aval(ct).shape
    n = fft_lengths[-1]
    pad = n - shape[-1]
    if pad:
        zeros = np.zeros(shape[:-1] + (pad,), core.get_aval(ct).dtype)
        ct = S.concatenate([ct, zeros], len(shape) - 1)
    return E.real(fft(ct, "fft", fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    x = fft(ct, "rfft", fft_lengths)
    m = core.get_aval(x).shape[-1]
    odd = fft_lengths[-1] % 2
    mask = np.concatenate([np.ones(1), np.full(m - 2 + odd, 2.0), np.ones(1 - odd)])
    scale = (mask / math.prod(fft_lengths)).astype(real_dtype(core.get_aval(ct).dtype))
    return E.conj(E.mul(x, scale))


def _fft_transpose(ct, x, fft_type, fft_lengths):
    if type(ct) is ad.Zero:
        return (None,)
    if fft_type == "rfft":
        return (_rfft_transpose(ct, fft_lengths),)
    if fft_type == "irfft":
        return (_irfft_transpose(ct, fft_lengths),)
    return (fft(ct, fft_type, fft_lengths),)


primitive_batchers[fft_p] = _fft_batch
ad.deflinear(fft_p, _fft_transpose)
