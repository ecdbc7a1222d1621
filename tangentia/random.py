"""Functional pseudo-random numbers, mirroring ``jax.random``.

    import tangentia.random as tr      # like: import jax.random as jr
    key = tr.PRNGKey(0)
    k1, k2 = tr.split(key)
    x = tr.normal(k1, (3,))

A key is a uint32 array of shape ``(2,)``.  Every function is pure: the same
key gives the same numbers, eagerly, under ``jit`` and under ``vmap`` (a
batch of keys gives one independent stream per key).  All randomness comes
from one primitive, ``random_bits_p`` (tangentia/primitives/prng.py); the
distributions are ordinary ``tangentia.numpy`` code on those bits, so they are
differentiable with respect to their float parameters (never the key).
"""
from __future__ import annotations

import operator

import numpy as np

from . import core
from . import numpy as tnp
from .numpy import linalg as _linalg
from .primitives.prng import random_bits as _random_bits, random_bits_p  # noqa: F401
from .scipy import special as _special

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits",
           "uniform", "normal", "randint", "bernoulli", "categorical", "gumbel", "exponential",
           "permutation", "choice", "truncated_normal", "multivariate_normal", "laplace",
           "logistic", "rademacher", "cauchy", "random_bits_p"]

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_DOMAIN_FOLD_IN = np.uint32(0x9E3779B9)


# ---------------------------------------------------------------------------
# Argument checking


def _check_key(name, key):
    try:
        a = core.get_aval(key)
    except TypeError:
        raise TypeError(f"{name}: argument 'key' must be a PRNG key (a uint32 array of shape "
                        f"(2,), e.g. tangentia.random.PRNGKey(0)), got {type(key).__name__}") from None
    if a.dtype != _U32 or a.shape != (2,):
        raise TypeError(f"{name}: argument 'key' must be a PRNG key (a uint32 array of shape "
                        f"(2,), e.g. tangentia.random.PRNGKey(0)), got {a.str_short()}")
    return key if isinstance(key, (core.Tracer, np.ndarray)) else np.asarray(key)


def _shape(name, shape):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: argument 'shape' must be a tuple of ints, got {shape!r:.60}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: argument 'shape' must be non-negative, got {shape}")
    return shape


def _float_dtype(name, dtype):
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if dtype.kind != "f" or dtype.itemsize not in (4, 8):
        raise TypeError(f"{name}: argument 'dtype' must be float32 or float64, got {dtype}")
    return dtype


def _aval(x):
    return core.get_aval(x)


# ---------------------------------------------------------------------------
# Keys


def PRNGKey(seed):
    """A key from an integer seed (like ``jax.random.PRNGKey``): ``[seed >> 32, seed & 0xFFFFFFFF]``."""
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("PRNGKey: argument 'seed' must be an integer, got bool")
    if isinstance(seed, (int, np.integer)):
        s = int(seed) % (1 << 64)
        return np.array([s >> 32, s & 0xFFFFFFFF], dtype=_U32)
    a = _aval(seed)
    if a.shape != () or a.dtype.kind not in "iu":
        raise TypeError(f"PRNGKey: argument 'seed' must be a scalar integer, got {a.str_short()}")
    s = tnp.astype(seed, _U64)
    hi = tnp.astype(tnp.floor_divide(s, np.uint64(1 << 32)), _U32)
    lo = tnp.astype(tnp.remainder(s, np.uint64(1 << 32)), _U32)
    return tnp.stack([hi, lo])


def key(seed, *, impl=None):
    """Same as ``PRNGKey`` (keys are plain uint32[2] arrays here)."""
    if impl is not None:
        raise NotImplementedError("key: only the default PRNG implementation is supported")
    return PRNGKey(seed)


def key_data(keys):
    """The raw uint32 data of a key (the key itself)."""
    return keys


def wrap_key_data(key_bits_array, *, impl=None):
    """A key from raw uint32 data (the data itself)."""
    return key_bits_array


def split(key, num=2):
    """``num`` new keys derived from ``key``, as a uint32 array of shape ``(num, 2)``."""
    key = _check_key("split", key)
    shape = _shape("split", num)
    return _random_bits(key, shape + (2,), 32)


def fold_in(key, data):
    """A new key derived from ``key`` and an integer ``data`` (may be traced)."""
    key = _check_key("fold_in", key)
    a = _aval(data)
    if a.shape != () or a.dtype.kind not in "iub":
        raise TypeError(f"fold_in: argument 'data' must be a scalar integer, got {a.str_short()}")
    d = tnp.astype(data, _U32)
    # Hash ``data`` with a fixed key (so nearby values give unrelated words),
    # then key the generator with key XOR hash.
    h = _random_bits(tnp.stack([tnp.asarray(_DOMAIN_FOLD_IN), d]), (2,), 32)
    return _random_bits(tnp.bitwise_xor(key, h), (2,), 32)


def bits(key, shape=(), dtype=None):
    """Uniformly random unsigned integer bits (uint32 by default, or uint64)."""
    key = _check_key("bits", key)
    shape = _shape("bits", shape)
    dtype = np.dtype(np.uint32 if dtype is None else dtype)
    if dtype not in (_U32, _U64):
        raise TypeError(f"bits: argument 'dtype' must be uint32 or uint64, got {dtype}")
    return _random_bits(key, shape, 8 * dtype.itemsize)


# ---------------------------------------------------------------------------
# Continuous distributions


def _unit(key, shape, dtype, open_=False):
    """Uniform floats in [0, 1) (or (0, 1) when ``open_``) with full mantissa precision."""
    if dtype == np.float64:
        b = _random_bits(key, shape, 64)
        m = tnp.astype(tnp.floor_divide(b, np.uint64(1 << 11)), np.float64)   # 53 bits
        scale = 2.0 ** -53
    else:
        b = _random_bits(key, shape, 32)
        m = tnp.astype(tnp.floor_divide(b, np.uint32(1 << 8)), np.float32)   # 24 bits
        scale = np.float32(2.0 ** -24)
    if open_:
        m = m + (0.5 if dtype == np.float64 else np.float32(0.5))
    return m * scale


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform samples in ``[minval, maxval)``."""
    key = _check_key("uniform", key)
    shape = _shape("uniform", shape)
    dtype = _float_dtype("uniform", dtype)
    shape = tuple(tnp.broadcast_shapes(shape, tnp.shape(minval), tnp.shape(maxval)))
    u = _unit(key, shape, dtype)
    minval = tnp.asarray(minval, dtype=dtype) if not isinstance(minval, core.Tracer) else tnp.astype(minval, dtype)
    maxval = tnp.asarray(maxval, dtype=dtype) if not isinstance(maxval, core.Tracer) else tnp.astype(maxval, dtype)
    return tnp.maximum(minval, u * (maxval - minval) + minval)


def normal(key, shape=(), dtype=None):
    """Standard normal samples (inverse CDF of an open-interval uniform)."""
    key = _check_key("normal", key)
    shape = _shape("normal", shape)
    dtype = _float_dtype("normal", dtype)
    u = _unit(key, shape, np.dtype(np.float64), open_=True)
    return tnp.astype(_special.ndtri(u), dtype)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal samples conditioned on ``lower <= x <= upper``."""
    key = _check_key("truncated_normal", key)
    shape = _shape("truncated_normal", shape)
    dtype = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = tuple(tnp.broadcast_shapes(tnp.shape(lower), tnp.shape(upper)))
    lower = tnp.astype(tnp.asarray(lower), dtype)
    upper = tnp.astype(tnp.asarray(upper), dtype)
    a = _special.ndtr(lower)
    b = _special.ndtr(upper)
    u = _unit(key, shape, np.dtype(np.float64), open_=True)
    out = _special.ndtri(a + tnp.astype(u, dtype) * (b - a))
    return tnp.clip(out, lower, upper)


def gumbel(key, shape=(), dtype=None):
    """Standard Gumbel samples."""
    key = _check_key("gumbel", key)
    shape = _shape("gumbel", shape)
    dtype = _float_dtype("gumbel", dtype)
    u = _unit(key, shape, dtype, open_=True)
    return -tnp.log(-tnp.log(u))


def exponential(key, shape=(), dtype=None):
    """Standard exponential samples."""
    key = _check_key("exponential", key)
    shape = _shape("exponential", shape)
    dtype = _float_dtype("exponential", dtype)
    return -tnp.log1p(-_unit(key, shape, dtype))


def laplace(key, shape=(), dtype=None):
    """Standard Laplace samples."""
    key = _check_key("laplace", key)
    shape = _shape("laplace", shape)
    dtype = _float_dtype("laplace", dtype)
    u = _unit(key, shape, dtype, open_=True) * 2 - 1
    return tnp.sign(u) * -tnp.log1p(-tnp.abs(u))


def logistic(key, shape=(), dtype=None):
    """Standard logistic samples."""
    key = _check_key("logistic", key)
    shape = _shape("logistic", shape)
    dtype = _float_dtype("logistic", dtype)
    u = _unit(key, shape, dtype, open_=True)
    return tnp.log(u) - tnp.log1p(-u)


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples."""
    key = _check_key("cauchy", key)
    shape = _shape("cauchy", shape)
    dtype = _float_dtype("cauchy", dtype)
    u = _unit(key, shape, dtype, open_=True)
    return tnp.tan(np.pi * (u - 0.5))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normal samples with ``mean`` (..., n) and ``cov`` (..., n, n)."""
    key = _check_key("multivariate_normal", key)
    shape = _shape("multivariate_normal", shape)
    dtype = _float_dtype("multivariate_normal", dtype)
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"multivariate_normal: method must be 'cholesky', 'eigh' or 'svd', got {method!r}")
    mean = tnp.astype(tnp.asarray(mean), dtype)
    cov = tnp.astype(tnp.asarray(cov), dtype)
    if mean.ndim < 1 or cov.ndim < 2 or cov.shape[-2:] != (mean.shape[-1],) * 2:
        raise ValueError(f"multivariate_normal: 'mean' must have shape (..., n) and 'cov' shape "
                         f"(..., n, n); got {tuple(mean.shape)} and {tuple(cov.shape)}")
    if shape is None:
        shape = tuple(tnp.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    if method == "cholesky":
        factor = _linalg.cholesky(cov)
    elif method == "eigh":
        w, v = _linalg.eigh(cov)
        factor = v * tnp.sqrt(w[..., None, :])
    else:
        u, s, _ = _linalg.svd(cov)
        factor = u * tnp.sqrt(s[..., None, :])
    z = normal(key, shape + mean.shape[-1:], dtype)
    return mean + tnp.einsum("...ij,...j->...i", factor, z)


# ---------------------------------------------------------------------------
# Discrete distributions


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in ``[minval, maxval)`` (``minval`` where ``maxval <= minval``)."""
    key = _check_key("randint", key)
    shape = _shape("randint", shape)
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"randint: argument 'dtype' must be an integer dtype, got {dtype}")
    for nm, v in (("minval", minval), ("maxval", maxval)):
        if _aval(v).dtype.kind not in "iub":
            raise TypeError(f"randint: argument '{nm}' must be an integer, got {_aval(v).str_short()}")
    shape = tuple(tnp.broadcast_shapes(shape, tnp.shape(minval), tnp.shape(maxval)))
    lo = tnp.astype(tnp.asarray(minval), np.int64)
    hi = tnp.astype(tnp.asarray(maxval), np.int64)
    info = np.iinfo(dtype)
    lo = tnp.clip(lo, max(int(info.min), -(1 << 63)), min(int(info.max), (1 << 63) - 1))
    hi = tnp.clip(hi, max(int(info.min), -(1 << 63)), min(int(info.max), (1 << 63) - 1))
    span = tnp.astype(tnp.maximum(hi - lo, 1), _U64)
    # One 64-bit draw per sample: the modulo bias is below span / 2^64.
    r = tnp.remainder(_random_bits(key, shape, 64), span)
    out = lo + tnp.astype(r, np.int64)
    out = tnp.where(hi > lo, out, lo)
    return tnp.astype(out, dtype)


def bernoulli(key, p=0.5, shape=None):
    """Boolean samples that are True with probability ``p``."""
    key = _check_key("bernoulli", key)
    shape = _shape("bernoulli", shape)
    if shape is None:
        shape = tuple(tnp.shape(p))
    return uniform(key, shape) < p


def rademacher(key, shape=(), dtype=None):
    """Samples of +1/-1 with equal probability."""
    key = _check_key("rademacher", key)
    shape = _shape("rademacher", shape)
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    b = bernoulli(key, 0.5, shape)
    return tnp.astype(tnp.where(b, 1, -1), dtype)


def categorical(key, logits, axis=-1, shape=None):
    """Indices sampled from ``softmax(logits, axis)`` (Gumbel-max)."""
    key = _check_key("categorical", key)
    shape = _shape("categorical", shape)
    logits = tnp.asarray(logits) if not isinstance(logits, core.Tracer) else logits
    nd = logits.ndim
    if nd == 0:
        raise ValueError("categorical: argument 'logits' must have at least one dimension")
    if not -nd <= axis < nd:
        raise ValueError(f"categorical: axis {axis} is out of bounds for logits of shape {tuple(logits.shape)}")
    axis = axis % nd
    batch_shape = tuple(logits.shape[:axis] + logits.shape[axis + 1:])
    if shape is None:
        shape = batch_shape
    elif tuple(tnp.broadcast_shapes(shape, batch_shape)) != shape:
        raise ValueError(f"categorical: shape {shape} is not compatible with the batch shape "
                         f"{batch_shape} of logits (it must broadcast to shape)")
    prefix = shape[:len(shape) - len(batch_shape)]
    tail = list(shape[len(shape) - len(batch_shape):])
    tail.insert(axis, logits.shape[axis])
    dtype = logits.dtype if logits.dtype.kind == "f" else np.dtype(np.float64)
    g = gumbel(key, prefix + tuple(tail), dtype)
    return tnp.argmax(g + tnp.reshape(logits, (1,) * len(prefix) + tuple(logits.shape)),
                      axis=axis + len(prefix))


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``."""
    key = _check_key("permutation", key)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        n = int(x)
        if n < 0:
            raise ValueError(f"permutation: argument 'x' must be non-negative, got {n}")
        return tnp.argsort(_random_bits(key, (n,), 64))
    x = tnp.asarray(x) if not isinstance(x, core.Tracer) else x
    if x.ndim == 0:
        raise ValueError("permutation: argument 'x' must be an integer or an array with at "
                         "least one dimension")
    axis = operator.index(axis)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"permutation: axis {axis} is out of bounds for shape {tuple(x.shape)}")
    axis %= x.ndim
    if independent:
        idx = tnp.argsort(_random_bits(key, tuple(x.shape), 64), axis=axis)
        return tnp.take_along_axis(x, idx, axis)
    perm = tnp.argsort(_random_bits(key, (x.shape[axis],), 64))
    return tnp.take(x, perm, axis=axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Samples from ``arange(a)`` (int ``a``) or from ``a`` along ``axis``."""
    key = _check_key("choice", key)
    shape = _shape("choice", shape)
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        n = int(a)
        arr = None
    else:
        arr = tnp.asarray(a) if not isinstance(a, core.Tracer) else a
        if arr.ndim == 0:
            raise ValueError("choice: argument 'a' must be an integer or an array with at least "
                             "one dimension")
        axis = operator.index(axis) % arr.ndim
        n = arr.shape[axis]
    if n <= 0:
        raise ValueError(f"choice: argument 'a' must be non-empty, got {n} elements")
    size = 1
    for d in shape:
        size *= d
    if p is not None:
        if tuple(tnp.shape(p)) != (n,):
            raise ValueError(f"choice: argument 'p' must have shape ({n},), got {tuple(tnp.shape(p))}")
        p = tnp.asarray(p) if not isinstance(p, core.Tracer) else p
    if replace:
        if p is None:
            idx = randint(key, shape, 0, n)
        else:
            cdf = tnp.cumsum(p)
            u = uniform(key, shape) * cdf[-1]
            idx = tnp.minimum(tnp.searchsorted(cdf, u, side="right"), n - 1)
    else:
        if size > n:
            raise ValueError(f"choice: cannot take a larger sample (size {size}) than the "
                             f"population ({n}) when 'replace=False'")
        if p is None:
            idx = tnp.reshape(permutation(key, n)[:size], shape)
        else:
            pos = p > 0
            logp = tnp.where(pos, tnp.log(tnp.where(pos, p, 1.0)), -np.inf)
            g = gumbel(key, (n,)) + logp
            idx = tnp.reshape(tnp.argsort(-g)[:size], shape)
    if arr is None:
        return idx
    return tnp.take(arr, idx, axis=axis)
