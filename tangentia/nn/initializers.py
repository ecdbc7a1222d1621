"""Parameter initializers, mirroring ``jax.nn.initializers``.

    import tangentia.nn.initializers as init   # like: import jax.nn.initializers
    w = init.glorot_normal()(tangentia.random.PRNGKey(0), (784, 128))

Every initializer is ``init(key, shape, dtype=None) -> array`` (float64 by
default, as JAX with x64), built on ``tangentia.random`` with JAX's formulas,
so the same key gives JAX's numbers.  The factories (``uniform``, ``normal``,
``variance_scaling``, ``glorot_*``, ``orthogonal``, ...) take JAX's arguments.
Only real (float32/float64) dtypes are supported.
"""
from __future__ import annotations

import math
import operator
from typing import Protocol

import numpy as np

from .. import dtypes
from .. import numpy as tnp
from .. import random

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Literal
    from ..typing import Array, ArrayLike

__all__ = ["Initializer", "zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]


class Initializer(Protocol):
    """JAX's type of an initializer: ``init(key, shape, dtype) -> array`` (flax
    annotates its layers' initializer arguments with it)."""

    def __call__(self, key: ArrayLike, shape: Any, dtype: Any = None) -> Array:
        ...


def _dtype(name, dtype, half=True):
    """A sampler's float dtype: float32/float64, and float16/bfloat16 where ``half`` (as
    JAX's: ``random.normal``/``uniform``/``truncated_normal`` draw 16-bit floats)."""
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    ok = dtype.kind == "f" and dtype.itemsize in (4, 8)
    if half and dtypes.is_real_floating(dtype) and dtype.itemsize == 2:
        ok = True
    if not ok:
        raise TypeError(f"{name}: argument 'dtype' must be float32 or float64"
                        f"{', float16 or bfloat16' if half else ''}, got {dtype}")
    return dtype


def _any_dtype(dtype):
    """The dtype of a filled array (zeros, ones, constant): any dtype, as JAX's."""
    return np.dtype(np.float64 if dtype is None else dtype)


def _shape(name, shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: argument 'shape' must be a tuple of ints, got {shape!r:.60}") from None


def zeros(key: ArrayLike, shape: Any, dtype: Any = None, out_sharding: Any = None) -> Array:
    """An array of zeros (the key is unused; ``out_sharding`` changes nothing: one device)."""
    return tnp.zeros(_shape("zeros", shape), _any_dtype(dtype))


def ones(key: ArrayLike, shape: Any, dtype: Any = None, out_sharding: Any = None) -> Array:
    """An array of ones (the key is unused; ``out_sharding`` changes nothing: one device)."""
    return tnp.ones(_shape("ones", shape), _any_dtype(dtype))


def constant(value: ArrayLike, dtype: Any = None) -> Any:
    """An initializer filling arrays with ``value``."""
    def init(key, shape, dtype=dtype):
        return tnp.full(_shape("constant", shape), value, _any_dtype(dtype))
    return init


def _scaled(name, sample, scale, default_dtype):
    """An initializer ``sample(key, shape, dtype) * scale`` (scale cast to dtype first)."""
    def init(key, shape, dtype=default_dtype):
        dtype = _dtype(name, dtype)
        return sample(key, _shape(name, shape), dtype) * tnp.asarray(scale, dtype)
    init.__name__ = init.__qualname__ = f"{name}_init"
    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Any:
    """An initializer of uniform samples in ``[0, scale)``."""
    return _scaled("uniform", random.uniform, scale, dtype)


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Any:
    """An initializer of normal samples with standard deviation ``stddev``."""
    return _scaled("normal", random.normal, stddev, dtype)


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0,
                     upper: Any = 2.0) -> Any:
    """An initializer of normal samples truncated to ``[lower, upper]``, times ``stddev``."""
    return _scaled("truncated_normal",
                   lambda k, s, d: random.truncated_normal(k, lower, upper, s, d), stddev, dtype)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"variance_scaling: can't compute input and output sizes of a "
                         f"{len(shape)}-dimensional weights tensor with default in_axis. Must be "
                         f"at least 2D or specify in_axis explicitly.")

    def size(axes):
        return shape[axes] if isinstance(axes, int) else math.prod(shape[i] for i in axes)
    in_size, out_size = size(in_axis), size(out_axis)
    receptive_field_size = math.prod(shape) / in_size / out_size / size(batch_axis)
    return in_size * receptive_field_size, out_size * receptive_field_size


def variance_scaling(scale: Any,
                     mode: Literal["fan_in", "fan_out", "fan_avg", "fan_geo_avg"],
                     distribution: Literal["truncated_normal", "normal", "uniform"],
                     in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                     batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Any:
    """JAX's variance-scaling initializer: samples with variance ``scale / fan``.

    ``mode`` is 'fan_in', 'fan_out', 'fan_avg' or 'fan_geo_avg'; ``distribution``
    is 'truncated_normal' (truncated to 2 standard deviations and rescaled),
    'normal' or 'uniform'.
    """
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    def init(key, shape, dtype=dtype):
        shape = _shape("variance_scaling", shape)
        dtype = _dtype("variance_scaling", dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = tnp.asarray(scale / denominator, dtype)
        if distribution == "truncated_normal":
            stddev = tnp.sqrt(variance) / tnp.asarray(.87962566103423978, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * tnp.sqrt(variance)
        return random.uniform(key, shape, dtype, -1) * tnp.sqrt(3 * variance)
    return init


def _variance_family(name: str, scale: float, mode: Any, distribution: Any) -> Callable[..., Any]:
    def factory(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Any:
        return variance_scaling(scale, mode, distribution, in_axis=in_axis, out_axis=out_axis,
                                batch_axis=batch_axis, dtype=dtype)
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = (f"``variance_scaling({scale}, {mode!r}, {distribution!r})`` "
                       f"(JAX's ``{name}``).")
    return factory


glorot_uniform = xavier_uniform = _variance_family("glorot_uniform", 1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = _variance_family("glorot_normal", 1.0, "fan_avg", "truncated_normal")
lecun_uniform = _variance_family("lecun_uniform", 1.0, "fan_in", "uniform")
lecun_normal = _variance_family("lecun_normal", 1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = _variance_family("he_uniform", 2.0, "fan_in", "uniform")
he_normal = kaiming_normal = _variance_family("he_normal", 2.0, "fan_in", "truncated_normal")


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Any:
    """An initializer of (scaled) matrices with orthonormal columns along ``column_axis``."""
    def init(key, shape, dtype=dtype):
        shape = _shape("orthogonal", shape)
        dtype = _dtype("orthogonal", dtype, half=False)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return tnp.zeros(shape, dtype)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        q = tnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        return tnp.asarray(scale, dtype) * tnp.moveaxis(q, -1, column_axis)
    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Any:
    """An initializer for 3D/4D/5D convolution kernels: an orthogonal matrix at the center tap."""
    def init(key, shape, dtype=dtype):
        shape = _shape("delta_orthogonal", shape)
        dtype = _dtype("delta_orthogonal", dtype, half=False)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        center = tuple((k - 1) // 2 for k in shape[:-2])
        return tnp.zeros(shape, dtype).at[center].set(ortho)
    return init
