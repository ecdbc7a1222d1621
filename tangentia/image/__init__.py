"""Image resampling (``tangentia.image``), mirroring ``jax.image``: ``resize`` and
``scale_and_translate`` with JAX's ``ResizeMethod`` kernels (nearest, linear,
Lanczos 3/5, Keys cubic, OpenCV/PyTorch cubic, area) and antialiasing.

Each resampled axis is one contraction with a weight matrix (input size x
output size), so the results are differentiable in the image and, for
``scale_and_translate``, in ``scale`` and ``translation``.
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from .. import numpy as tnp

_SMALL = 1000.0 * float(np.finfo(np.float32).eps)


class ResizeMethod(enum.Enum):
    """The resampling kernels of :func:`resize` and :func:`scale_and_translate`."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s):
        """The method named ``s`` (``"nearest"``, ``"linear"``/``"bilinear"``/
        ``"trilinear"``/``"triangle"``, ``"lanczos3"``, ``"lanczos5"``, ``"cubic"``/
        ``"bicubic"``/``"tricubic"``, ``"cubic-pytorch"``/``"bicubic-pytorch"``, ``"area"``)."""
        for method, names in _NAMES.items():
            if s in names:
                return method
        raise ValueError(f'Unknown resize method "{s}"')


_NAMES = {ResizeMethod.NEAREST: ("nearest",),
          ResizeMethod.LINEAR: ("linear", "bilinear", "trilinear", "triangle"),
          ResizeMethod.LANCZOS3: ("lanczos3",), ResizeMethod.LANCZOS5: ("lanczos5",),
          ResizeMethod.CUBIC: ("cubic", "bicubic", "tricubic"),
          ResizeMethod.CUBIC_PYTORCH: ("cubic-pytorch", "bicubic-pytorch"),
          ResizeMethod.AREA: ("area",)}


def _lanczos(radius):
    def kernel(x):
        y = radius * tnp.sin(np.pi * x) * tnp.sin(np.pi * x / radius)
        out = tnp.where(x > 0.001, y / tnp.where(x != 0, np.pi ** 2 * x ** 2, 1), 1)
        return tnp.where(x > radius, 0.0, out)
    return kernel


def _cubic(a):
    """The cubic convolution kernel with parameter ``a`` (Keys: -0.5, OpenCV: -0.75)."""
    def kernel(x):
        out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        out = tnp.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
        return tnp.where(x >= 2.0, 0.0, out)
    return kernel


def _triangle(x):
    return tnp.maximum(0, 1 - tnp.abs(x))


_AREA = "area"
_KERNELS = {ResizeMethod.LINEAR: (1, _triangle), ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
            ResizeMethod.LANCZOS5: (5, _lanczos(5.0)), ResizeMethod.CUBIC: (2, _cubic(-0.5)),
            ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)), ResizeMethod.AREA: (1, _AREA)}


def _normalized(weights):
    """Columns of ``weights`` divided by their sums (0 where a sum is about 0)."""
    total = tnp.sum(weights, axis=0, keepdims=True)
    return tnp.where(tnp.abs(total) > _SMALL, weights / tnp.where(total != 0, total, 1), 0)


def _weights(in_size, out_size, scale, translation, kernel, antialias, radius, edge_padding):
    """The ``(in_size, out_size)`` resampling matrix of one axis."""
    dtype = tnp.result_type(scale, translation)
    inv_scale = 1.0 / scale
    kernel_scale = tnp.maximum(inv_scale, 1.0) if antialias else 1.0
    sample = (tnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale - translation * inv_scale \
        - 0.5
    k = 0
    if edge_padding:
        k = math.ceil(radius * max(1.0 / float(scale), 1.0)) if antialias else radius
    source = tnp.arange(-k, in_size + k, dtype=dtype)
    if kernel is _AREA:
        left = tnp.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
        lj = tnp.arange(in_size, dtype=dtype)
        w = tnp.maximum(0.0, tnp.minimum(left[None, :] + inv_scale, lj[:, None] + 1.0)
                        - tnp.maximum(left[None, :], lj[:, None]))
    else:
        w = kernel(tnp.abs(sample[None, :] - source[:, None]) / kernel_scale)
    if edge_padding:   # samples beyond the edges take the edge values
        rows = np.clip(np.arange(-k, in_size + k), 0, in_size - 1)
        w = tnp.zeros((in_size, out_size), dtype).at[rows].add(w)
        return _normalized(w)
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return tnp.where(inside[None, :], _normalized(w), 0)


def _resample(x, shape, dims, scales, translations, method, antialias):
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    for d, s, t in zip(dims, scales, translations):
        d = operator.index(d) % x.ndim
        w = _weights(x.shape[d], shape[d], s, t, kernel, antialias, radius,
                     edge_padding).astype(x.dtype)
        x = tnp.moveaxis(tnp.tensordot(x, w, axes=([d], [0])), -1, d)
    return x


def _method(method, shape, image):
    if len(shape) != image.ndim:
        raise ValueError("shape must have length equal to the number of dimensions of x;  "
                         f"{shape} vs {image.shape}")
    return ResizeMethod.from_string(method) if isinstance(method, str) else method


def _inexact(x):
    x = tnp.asarray(x)
    return x if tnp.issubdtype(x.dtype, tnp.inexact) else x.astype(tnp.float64)


def scale_and_translate(image, shape, spatial_dims, scale, translation, method, antialias=True,
                        precision=None):
    """Resample ``image`` to ``shape`` along ``spatial_dims``, mapping input
    coordinate ``x`` to ``x * scale + translation`` (``jax.image.scale_and_translate``).

    Args:
      image: the array.
      shape: the output shape (same rank).
      spatial_dims: the axes to resample.
      scale: one scale per spatial axis.
      translation: one translation per spatial axis.
      method: a :class:`ResizeMethod` or its name (not ``"nearest"``).
      antialias: widen the kernel when downsampling.
      precision: accepted for JAX compatibility.
    """
    image = tnp.asarray(image)
    shape = tuple(operator.index(s) for s in shape)
    method = _method(method, shape, image)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    dtype = tnp.result_type(tnp.asarray(scale), tnp.asarray(translation), 1.0)
    scale, translation = tnp.asarray(scale, dtype), tnp.asarray(translation, dtype)
    return _resample(_inexact(image), shape, spatial_dims, list(scale), list(translation),
                     method, antialias)


def _resize_nearest(x, shape):
    for d, (m, n) in enumerate(zip(x.shape, shape)):
        if m != n:
            offsets = np.floor(((np.arange(n, dtype=np.float32) + 0.5) * np.float32(m)
                                / np.float32(n)).astype(np.float32)).astype(np.int32)
            x = tnp.take(x, offsets, axis=d)
    return x


def resize(image, shape, method, antialias=True, precision=None):
    """``image`` resampled to ``shape`` (``jax.image.resize``): half-pixel centers, the
    axes whose size changes resampled with ``method``'s kernel.

    Args:
      image: the array.
      shape: the output shape (same rank).
      method: a :class:`ResizeMethod` or its name (``"nearest"``, ``"linear"``,
        ``"lanczos3"``, ``"lanczos5"``, ``"cubic"``, ``"cubic-pytorch"``, ``"area"``, ...).
      antialias: widen the kernel when downsampling (not for ``"nearest"``).
      precision: accepted for JAX compatibility.
    """
    image = tnp.asarray(image)
    shape = tuple(operator.index(s) for s in shape)
    method = _method(method, shape, image)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    dims = [d for d in range(image.ndim) if image.shape[d] != shape[d]]
    scales = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _resample(_inexact(image), shape, dims, scales, [0.0] * len(dims), method,
                     antialias)


__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
