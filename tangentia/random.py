"""Functional pseudo-random numbers, mirroring ``jax.random``.

    import tangentia.random as tr      # like: import jax.random as jr
    key = tr.PRNGKey(0)
    k1, k2 = tr.split(key)
    x = tr.normal(k1, (3,))

A key is either a typed key array (``key(seed)``, JAX's ``key<fry>`` arrays: shape ``()``
per key, dtype ``dtypes.key_fry``, whose data ``key_data(k)`` is the raw key) or a raw
key (``PRNGKey(seed)``), a uint32 array of shape ``(2,)``, laid out as JAX's raw
threefry2x32 keys.  Every function takes both; ``split`` and ``fold_in`` give keys of
the kind they are given.  The numbers are JAX's: for the same key, shape and dtype every function
returns what ``jax.random`` returns with ``jax_enable_x64`` (JAX's default PRNG
threefry2x32 with ``jax_threefry_partitionable=True``, and JAX's algorithms on
its bits), bit-exact for integers and to the last ulp or so for floats.  Every
function is pure: the same key gives the same numbers, eagerly, under ``jit``
and under ``vmap`` (a batch of keys gives one independent stream per key).
All randomness comes from the primitive ``random_bits_p`` (and
``random_gamma_p``, a vectorized rejection sampler on the same bits) in
tangentia/primitives/prng.py; the distributions are ordinary
``tangentia.numpy`` code on those bits, so they are differentiable with respect
to their float parameters (never the key); gamma and its relatives use JAX's
implicit reparameterization gradient.
"""
from __future__ import annotations

import operator

import numpy as np

from . import core, dtypes as _dtypes
from . import lax as _lax
from . import numpy as tnp
from .numpy import linalg as _NL
from .primitives import prng as _prng
from .primitives import prng_keys as _keys
from .primitives.prng import random_bits as _random_bits, random_bits_p, random_gamma_p  # noqa: F401
from .scipy import special as _sp

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from .typing import Array, ArrayLike, DTypeLike, Shape

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits",
           "uniform", "normal", "randint", "bernoulli", "categorical", "gumbel", "exponential",
           "permutation", "choice", "truncated_normal", "multivariate_normal", "laplace",
           "logistic", "rademacher", "cauchy", "gamma", "loggamma", "beta", "dirichlet",
           "chisquare", "f", "t", "poisson", "binomial", "geometric", "multinomial", "lognormal",
           "pareto", "weibull_min", "rayleigh", "maxwell", "double_sided_maxwell", "triangular",
           "wald", "generalized_normal", "ball", "orthogonal", "clone", "key_impl", "key_dtype",
           "random_bits_p", "random_gamma_p"]

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)


# ---------------------------------------------------------------------------
# Argument checking


def _check_key(name, key):
    """The raw key data (uint32[2]) of ``key``, a raw key or a scalar typed key."""
    try:
        a = core.get_aval(key)
    except TypeError:
        raise TypeError(f"{name}: argument 'key' must be a PRNG key (a uint32 array of shape "
                        f"(2,), e.g. tangentia.random.PRNGKey(0)), got {type(key).__name__}") from None
    if a.dtype.kind == "V" and _dtypes.is_key(a.dtype):
        if a.shape != ():
            raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                             f"{a.shape} != (). Use jax.vmap for batching.")
        return _keys.random_unwrap(key)
    if a.dtype == _U32 and a.ndim == 2 and a.shape[-1] == 2:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{a.shape[:-1]} != (). Use jax.vmap for batching.")
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
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape!r:.60}. ({name}: argument 'shape' must be a tuple of ints; a "
                        "traced size under jit must be static: static_argnums)") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: argument 'shape' must be non-negative, got {shape}")
    return shape


class _DtypeError(ValueError, TypeError):
    """A dtype a sampler does not take: JAX raises ValueError; a TypeError too, as the
    argument's type is what is wrong (and as this library raised before)."""


# Samplers that take 16-bit floats (float16, bfloat16), as JAX's: uniform bits of the
# dtype's width, the transformation computed in the dtype (the ones built on gamma
# draws, whose rejection loops need the precision, take float32 and float64)
_HALF_OK = frozenset(["uniform", "normal", "truncated_normal", "cauchy", "exponential",
                      "laplace", "logistic", "gumbel", "rademacher"])


def _float_dtype(name, dtype):
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    is_float = dtype.kind == "f" or _dtypes.is_ml_float(dtype)
    if is_float and dtype.itemsize == 2 and name in _HALF_OK:
        return dtype   # float16/bfloat16: 16 random bits, as JAX's
    if not is_float or dtype.itemsize not in (4, 8):
        kinds = "a float or complex dtype" if name == "normal" else "a float dtype"
        raise _DtypeError(f"dtype argument to `{name}` must be {kinds}, got {dtype} "
                          f"({name}: argument 'dtype' must be float32 or float64"
                          + (", or float16/bfloat16" if name in _HALF_OK else "") + ")")
    return dtype


def _aval(x):
    return core.get_aval(x)


# ---------------------------------------------------------------------------
# Keys


def PRNGKey(seed: int | ArrayLike, *, impl: Any = None) -> Array:
    """A key from an integer seed (like ``jax.random.PRNGKey``): ``[seed >> 32, seed & 0xFFFFFFFF]``
    (``impl``: None or threefry2x32's, the one implementation here)."""
    _check_impl("PRNGKey", impl)
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("PRNGKey: argument 'seed' must be an integer, got bool")
    if isinstance(seed, (int, np.integer)):
        if type(seed) is int and not -(1 << 63) <= seed < (1 << 63):
            # JAX converts a Python int seed to int64
            raise OverflowError(f"Python int too large to convert to C long (PRNGKey: a Python "
                                f"int seed must fit in int64, got {seed}; pass "
                                "numpy.uint64(seed) for a 64-bit unsigned seed)")
        if isinstance(seed, np.integer) and seed.dtype.itemsize <= 4:
            # a seed of 32 bits or fewer is its bits in the low word, as JAX's (np.int32(-2)
            # gives [0, 0xFFFFFFFE], where the int64 -2 gives [0xFFFFFFFF, 0xFFFFFFFE])
            return np.array([0, int(seed) % (1 << 32)], dtype=_U32)
        s = int(seed) % (1 << 64)
        return np.array([s >> 32, s & 0xFFFFFFFF], dtype=_U32)
    a = _aval(seed)
    if a.shape != () or a.dtype.kind not in "iu":
        raise TypeError(f"PRNGKey: argument 'seed' must be a scalar integer, got {a.str_short()}")
    if a.dtype.itemsize <= 4:
        return tnp.stack([tnp.zeros((), _U32), tnp.astype(seed, _U32)])
    s = tnp.astype(seed, _U64)
    hi = tnp.astype(tnp.right_shift(s, np.uint64(32)), _U32)
    return tnp.stack([hi, tnp.astype(s, _U32)])


def _impl_or_dtype(name, impl, dtype):
    """JAX's ``impl``/``dtype`` pair of ``key`` and ``wrap_key_data`` (``dtype``: a key dtype
    or an implementation's name, which replaces the deprecated ``impl``)."""
    if dtype is not None:
        if impl is not None:
            raise ValueError(f"Cannot specify both `impl` and `dtype` arguments to "
                             f"jax.random.{name}")
        return dtype
    return impl


def _check_impl(name, impl):
    if (impl is None or isinstance(impl, PRNGImpl) or _dtypes.is_key(impl)
            or type(impl) is str and impl in ("threefry2x32", "threefry")):
        return   # (threefry2x32's name or implementation object, or the key dtype)
    raise NotImplementedError(f"{name}: only the default PRNG implementation "
                              f"'threefry2x32' is supported, got impl={impl!r}")


def _is_typed(x):
    """Whether ``x`` is a typed key array (dtype ``key<fry>``)."""
    dt = getattr(x, "dtype", None)
    return isinstance(dt, np.dtype) and dt.kind == "V" and _dtypes.is_key(dt)


def key(seed: int | ArrayLike, *, impl: Any = None, dtype: Any = None) -> Array:
    """A typed PRNG key (shape ``()``, dtype ``key<fry>``) from an integer seed, as
    ``jax.random.key``: its data (``key_data``) is ``PRNGKey(seed)``.  ``dtype`` (a key
    dtype, ``key_dtype()``, or ``"threefry2x32"``) or the deprecated ``impl``: threefry's."""
    _check_impl("key", _impl_or_dtype("key", impl, dtype))
    if _is_typed(seed):
        raise TypeError("key accepts a scalar seed, but was given a PRNG key.")
    if not isinstance(seed, (int, np.integer, bool, np.bool_)):
        shape = _aval(seed).shape
        if shape != ():
            raise TypeError(f"key accepts a scalar seed, but was given an array of shape "
                            f"{shape} != (). Use jax.vmap for batching")
    return _keys.random_wrap(PRNGKey(seed))


def key_data(keys: ArrayLike) -> Array:
    """The raw uint32 data of ``keys``: shape ``keys.shape + (2,)`` for typed keys (JAX's
    ``key_data``); a raw key is its own data."""
    if _is_typed(keys):
        return _keys.random_unwrap(keys)
    return _check_key_data("key_data", keys)


def _check_key_data(name, data):
    try:
        a = core.get_aval(data)
    except TypeError:
        raise TypeError(f"unexpected PRNG key type {type(data)} ({name}: a typed key array "
                        "or raw uint32[..., 2] key data was expected)") from None
    _keys.check_key_data(a)
    return data if isinstance(data, (core.Tracer, np.ndarray)) else np.asarray(data)


def wrap_key_data(key_bits_array: ArrayLike, *, impl: Any = None, dtype: Any = None) -> Array:
    """A typed key array of shape ``key_bits_array.shape[:-1]`` from raw uint32 data
    whose last axis has size 2 (JAX's ``wrap_key_data``; ``dtype``/``impl`` as ``key``'s)."""
    _check_impl("wrap_key_data", _impl_or_dtype("wrap_key_data", impl, dtype))
    if _is_typed(key_bits_array):
        raise TypeError("wrap_key_data: argument 'key_bits_array' must be uint32 key data, "
                        "got a typed key array (it is already wrapped)")
    return _keys.random_wrap(_check_key_data("wrap_key_data", key_bits_array))


class PRNGImpl:
    """The PRNG implementation of a key (``key_impl``): threefry2x32, the only one here.
    Compares equal to its name, as the string this function returned before."""

    name = "threefry2x32"
    key_shape = (2,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PRNGImpl) or other in ("threefry2x32", "threefry")

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"PRNGImpl({self.name!r})"


_IMPL = PRNGImpl()


def key_impl(keys: ArrayLike) -> Any:
    """The PRNG implementation of ``keys`` (threefry2x32, equal to its name)."""
    if not _is_typed(keys):
        _check_key("key_impl", keys)
    return _IMPL


def key_dtype(impl_spec: Any = None) -> Any:
    """The dtype of typed keys (``key<fry>``: ``tangentia.dtypes.key_fry``) of the PRNG
    implementation ``impl_spec`` (None or threefry2x32's)."""
    _check_impl("key_dtype", impl_spec)
    return _dtypes.key_fry


def clone(key: Any) -> Any:
    """A copy of ``key`` (keys are immutable arrays here, so the key itself)."""
    if _is_typed(key):
        return key
    return _check_key("clone", key)


def _split(key, shape):
    b = _random_bits(key, shape, 64)    # threefry's (b1, b2) as b1 << 32 | b2
    return tnp.stack([tnp.astype(tnp.right_shift(b, np.uint64(32)), _U32), tnp.astype(b, _U32)],
                     axis=-1)


def split(key: ArrayLike, num: int | tuple[int, ...] = 2) -> Array:
    """``num`` new keys derived from ``key``: typed keys of shape ``(num,)`` from a typed
    key, a uint32 array of shape ``(num, 2)`` from a raw key."""
    typed = _is_typed(key)
    out = _split(_check_key("split", key), _shape("split", num))
    return _keys.random_wrap(out) if typed else out


def _rotl_traced(x, r):
    return tnp.bitwise_or(tnp.left_shift(x, np.uint32(r)), tnp.right_shift(x, np.uint32(32 - r)))


def fold_in(key: ArrayLike, data: ArrayLike) -> Array:
    """A new key derived from ``key`` and an integer ``data`` (may be traced), of the
    kind of ``key`` (typed or raw)."""
    if _is_typed(key):
        return _keys.random_wrap(fold_in(_check_key("fold_in", key), data))
    key = _check_key("fold_in", key)
    # as JAX's (``jnp.uint32(data)``): a Python float is truncated by ``int``, and a Python
    # int must fit in uint32; arrays and NumPy scalars are converted (truncated, wrapped)
    if type(data) is float:
        data = int(data)
    if type(data) is int and not 0 <= data < 2 ** 32:
        raise OverflowError(f"Python integer {data} out of bounds for uint32 (fold_in: "
                            "argument 'data')")
    a = _aval(data)
    if a.shape != ():
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {a.shape} "
                        "!= (). Use jax.vmap for batching. (fold_in: argument 'data')")
    if a.dtype.kind not in "iubf":
        raise TypeError(f"fold_in: argument 'data' must be a scalar integer, got {a.str_short()}")
    d = tnp.astype(data, _U32)
    y1, y2 = _prng.threefry2x32(key[0], key[1], tnp.zeros((), _U32), d, rotl=_rotl_traced)
    return tnp.stack([y1, y2])


def bits(key: ArrayLike, shape: Shape = (), dtype: DTypeLike | None = None) -> Array:
    """Uniformly random unsigned integer bits (uint64 by default, as JAX with x64; uint8/16/32/64)."""
    key = _check_key("bits", key)
    shape = _shape("bits", shape)
    dtype = np.dtype(np.uint64 if dtype is None else dtype)
    if dtype.kind != "u":
        raise ValueError("dtype argument to `bits` must be an unsigned int dtype, got "
                         f"{dtype} (bits: argument 'dtype': uint8, uint16, uint32 or uint64)")
    return _random_bits(key, shape, 8 * dtype.itemsize)


# ---------------------------------------------------------------------------
# Continuous distributions


def _as(x, dtype):
    return tnp.astype(x if isinstance(x, core.Tracer) else tnp.asarray(x), dtype)


def _uniform(key, shape, dtype, minval=0.0, maxval=1.0):
    """JAX's ``_uniform``: mantissa bits as a float in [1, 2), minus 1, scaled to the range."""
    finfo = _dtypes.finfo(dtype)
    # JAX draws 8 bits for a dtype of fewer than 8 mantissa bits (bfloat16: 7)
    rng_bits = 8 if finfo.nmant < 8 else finfo.bits
    b = _random_bits(key, shape, rng_bits)
    m = tnp.right_shift(b, np.dtype(b.dtype).type(rng_bits - finfo.nmant))
    floats = tnp.astype(m, dtype) * dtype.type(2.0 ** -finfo.nmant)   # exact: (1.m) - 1
    minval, maxval = _as(minval, dtype), _as(maxval, dtype)
    return tnp.maximum(minval, floats * (maxval - minval) + minval)


def _sample_shape(name, shape, *params):
    shapes = [tuple(tnp.shape(p)) for p in params]
    if shape is None:
        return tuple(tnp.broadcast_shapes(*shapes)) if shapes else ()
    try:
        ok = tuple(tnp.broadcast_shapes(shape, *shapes)) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name}: argument 'shape' {shape} must be broadcast-compatible with "
                         f"the parameter shapes {shapes} (they must broadcast to it)")
    return shape


def uniform(key: ArrayLike, shape: Shape = (), dtype: DTypeLike | None = None,
            minval: ArrayLike = 0.0, maxval: ArrayLike = 1.0) -> Array:
    """Uniform samples in ``[minval, maxval)``."""
    key = _check_key("uniform", key)
    shape = _shape("uniform", shape)
    dtype = _float_dtype("uniform", dtype)
    return _uniform(key, shape, dtype, minval, maxval)


def _normal(key, shape, dtype):
    lo = np.nextafter(dtype.type(-1), dtype.type(0))
    u = _uniform(key, shape, dtype, lo, 1.0)
    return tnp.astype(dtype.type(np.sqrt(2)) * _sp.erfinv(u), dtype)


def normal(key: ArrayLike, shape: Shape = (), dtype: DTypeLike | None = None) -> Array:
    """Standard normal samples: sqrt(2) erfinv(u) for u uniform in (-1, 1).

    With a complex dtype (as JAX's), real and imaginary parts are independent normals of
    variance 1/2, drawn from two keys split from ``key``."""
    key = _check_key("normal", key)
    shape = _shape("normal", shape)
    if dtype is not None and np.dtype(dtype).kind == "c":
        cdtype = np.dtype(dtype)
        if cdtype.itemsize not in (8, 16):
            raise TypeError(f"normal: argument 'dtype' must be float32, float64, complex64 "
                            f"or complex128, got {cdtype}")
        rdtype = np.dtype(np.float32 if cdtype.itemsize == 8 else np.float64)
        k_re, k_im = _split(key, (2,))
        half = rdtype.type(np.sqrt(0.5))
        re = half * _normal(k_re, shape, rdtype)
        im = half * _normal(k_im, shape, rdtype)
        return _lax.complex(re, im)
    return _normal(key, shape, _float_dtype("normal", dtype))


def truncated_normal(key: ArrayLike, lower: ArrayLike, upper: ArrayLike, shape: Shape | None = None,
                     dtype: DTypeLike | None = None) -> Array:
    """Standard normal samples conditioned on ``lower < x < upper``."""
    key = _check_key("truncated_normal", key)
    shape = _sample_shape("truncated_normal", _shape("truncated_normal", shape), lower, upper)
    dtype = _float_dtype("truncated_normal", dtype)
    sqrt2 = dtype.type(np.sqrt(2))
    lower, upper = _as(lower, dtype), _as(upper, dtype)
    a = _sp.erf(lower / sqrt2)
    b = _sp.erf(upper / sqrt2)
    out = tnp.astype(sqrt2 * _sp.erfinv(_uniform(key, shape, dtype, a, b)), dtype)
    return tnp.clip(out, tnp.nextafter(_lax.stop_gradient(lower), dtype.type(np.inf)),
                    tnp.nextafter(_lax.stop_gradient(upper), dtype.type(-np.inf)))


def _simple(name: str, sampler: Callable[..., Array]) -> Callable[..., Array]:
    """A ``fn(key, shape=(), dtype=None)`` sampler from ``sampler(key, shape, dtype)``."""
    def fn(key: ArrayLike, shape: Shape = (), dtype: DTypeLike | None = None) -> Array:
        key = _check_key(name, key)
        return sampler(key, _shape(name, shape), _float_dtype(name, dtype))
    fn.__name__ = fn.__qualname__ = name
    return fn


def _gumbel(key, shape, dtype, mode=None):
    info = np.finfo(dtype)
    if mode == "high":
        hi_lo = _uniform(key, (2,) + shape, dtype)
        high, low = hi_lo[0], hi_lo[1]
        x = tnp.where(high >= 0.5, high, high + dtype.type(2.0 ** -info.nmant) * low + info.tiny)
        return -tnp.log(-tnp.log1p(-x))
    return -tnp.log(-tnp.log(_uniform(key, shape, dtype, info.tiny, 1.0)))


def gumbel(key: ArrayLike, shape: Shape = (), dtype: DTypeLike | None = None,
           mode: str | None = None) -> Array:
    """Standard Gumbel samples (``mode='high'`` uses two uniforms for the small ones)."""
    key = _check_key("gumbel", key)
    if mode not in (None, "low", "high"):
        raise ValueError(f"gumbel: argument 'mode' must be 'low' or 'high', got {mode!r}")
    return _gumbel(key, _shape("gumbel", shape), _float_dtype("gumbel", dtype), mode)


exponential = _simple("exponential", lambda k, s, d: -tnp.log1p(-_uniform(k, s, d)))
exponential.__doc__ = "Standard exponential samples: -log1p(-u)."


def _laplace(k, s, d):
    u = _uniform(k, s, d, -1.0 + np.finfo(d).epsneg, 1.0)
    return tnp.sign(u) * tnp.log1p(-tnp.abs(u))


laplace = _simple("laplace", _laplace)
laplace.__doc__ = "Standard Laplace samples (JAX's ``sign(u) log1p(-|u|)``)."


def _logistic(k, s, d):
    x = _uniform(k, s, d, np.finfo(d).tiny, 1.0)
    return tnp.log(x) - tnp.log1p(-x)


logistic = _simple("logistic", _logistic)
logistic.__doc__ = "Standard logistic samples."
cauchy = _simple("cauchy", lambda k, s, d: tnp.tan(d.type(np.pi)
                                                  * (_uniform(k, s, d, np.finfo(d).eps, 1.0) - 0.5)))
cauchy.__doc__ = "Standard Cauchy samples."
maxwell = _simple("maxwell", lambda k, s, d: _NL.norm(_normal(k, s + (3,), d), axis=-1))
maxwell.__doc__ = "Maxwell samples: the norm of three standard normals."


def multivariate_normal(key: ArrayLike, mean: ArrayLike, cov: ArrayLike, shape: Shape | None = None,
                        dtype: DTypeLike | None = None, method: str = "cholesky") -> Array:
    """Multivariate normal samples with ``mean`` (..., n) and ``cov`` (..., n, n)."""
    key = _check_key("multivariate_normal", key)
    shape = _shape("multivariate_normal", shape)
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"multivariate_normal: method must be 'cholesky', 'eigh' or 'svd', got {method!r}")
    # as JAX's: mean and cov promoted to a common inexact dtype, the draws in ``dtype``
    # (mean's by default), the result promoted from both (float32 draws with float64
    # mean and cov give float64, as in JAX)
    mean, cov = tnp.asarray(mean), tnp.asarray(cov)
    common = tnp.result_type(mean.dtype, cov.dtype)
    if not _dtypes.issubdtype(common, np.inexact):
        common = np.dtype(float)
    mean, cov = tnp.astype(mean, common), tnp.astype(cov, common)
    dtype = _float_dtype("multivariate_normal", mean.dtype if dtype is None else dtype)
    if mean.ndim < 1 or cov.ndim < 2 or cov.shape[-2:] != (mean.shape[-1],) * 2:
        raise ValueError(f"multivariate_normal: 'mean' must have shape (..., n) and 'cov' shape "
                         f"(..., n, n); got {tuple(mean.shape)} and {tuple(cov.shape)}")
    if shape is None:
        shape = tuple(tnp.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    if method == "cholesky":
        factor = _NL.cholesky(cov)
    elif method == "eigh":
        w, v = _NL.eigh(cov)
        factor = v * tnp.sqrt(w[..., None, :])
    else:
        u, s, _ = _NL.svd(cov)
        factor = u * tnp.sqrt(s[..., None, :])
    z = _normal(key, shape + mean.shape[-1:], dtype)
    return mean + tnp.einsum("...ij,...j->...i", factor, z)


def _prep(name, key, params, shape, dtype):
    """Check ``key``, ``shape`` and ``dtype``; cast the params to dtype, broadcast to shape."""
    key = _check_key(name, key)
    shape = _sample_shape(name, _shape(name, shape), *params)
    dtype = _float_dtype(name, dtype)
    return key, [tnp.broadcast_to(_as(p, dtype), shape) for p in params], shape, dtype


def _gamma(key, a, shape, dtype, log_space=False):
    return _prng.random_gamma(key, a, log_space)




def _beta(key, a, b, shape, dtype):
    key_a, key_b = _split(key, (2,))
    log_ga = _gamma(key_a, a, shape, dtype, True)
    log_gb = _gamma(key_b, b, shape, dtype, True)
    log_max = tnp.maximum(log_ga, log_gb)
    ga, gb = tnp.exp(log_ga - log_max), tnp.exp(log_gb - log_max)
    return ga / (ga + gb)




def dirichlet(key: ArrayLike, alpha: ArrayLike, shape: Shape | None = None,
              dtype: DTypeLike | None = None) -> Array:
    """Dirichlet samples with concentration ``alpha`` (..., k): softmax of log-gamma draws."""
    key = _check_key("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    alpha = _as(alpha, dtype)
    if alpha.ndim < 1:
        raise ValueError("dirichlet: argument 'alpha' must have at least one dimension")
    shape = _sample_shape("dirichlet", _shape("dirichlet", shape), alpha[..., 0])
    lg = _gamma(key, tnp.broadcast_to(alpha, shape + alpha.shape[-1:]), None, dtype, True)
    e = tnp.exp(lg - _lax.stop_gradient(tnp.max(lg, axis=-1, keepdims=True)))
    return e / tnp.sum(e, axis=-1, keepdims=True)


def _chisquare(key, df, shape, dtype):
    return tnp.exp(_gamma(key, df / dtype.type(2), shape, dtype, True)) * dtype.type(2)




def _f(key, dfnum, dfden, shape, dtype):
    key_dfd, key_dfn = _split(key, (2,))
    return (_chisquare(key_dfn, dfnum, shape, dtype) / dfnum) / (_chisquare(key_dfd, dfden, shape, dtype) / dfden)




def _t(key, df, shape, dtype):
    key_n, key_g = _split(key, (2,))
    n = _normal(key_n, shape, dtype)
    half_df = df / dtype.type(2)
    return n * tnp.sqrt(half_df / _gamma(key_g, half_df, shape, dtype))


def lognormal(key: ArrayLike, sigma: ArrayLike = np.float32(1), shape: Shape | None = None,
              dtype: DTypeLike | None = None) -> Array:
    """Log-normal samples ``exp(sigma * normal)``."""
    key, (sigma,), shape, dtype = _prep("lognormal", key, (sigma,), shape, dtype)
    return tnp.exp(_normal(key, shape, dtype) * sigma)


def _rayleigh(key, scale, shape, dtype):
    u = _uniform(key, shape, dtype)
    return scale * tnp.sqrt(tnp.log(u) * dtype.type(-2))




def _wald(key, mean, shape, dtype):
    k1, k2 = _split(key, (2,))
    v = _normal(k1, shape, dtype)
    z = _uniform(k2, shape, dtype)
    y = v * v
    mean_sq = mean * mean
    sqrt_term = tnp.sqrt(4 * mean * y + mean_sq * (y * y))
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return tnp.where(z <= mean / (mean + x), x, mean_sq / x)




def _triangular(key, left, mode, right, shape, dtype):
    fc = (mode - left) / (right - left)
    u = _uniform(key, shape, dtype)
    out1 = left + tnp.sqrt(u * (right - left) * (mode - left))
    out2 = right - tnp.sqrt((1 - u) * (right - left) * (right - mode))
    return tnp.where(u < fc, out1, out2)




def double_sided_maxwell(key: ArrayLike, loc: ArrayLike, scale: ArrayLike, shape: Shape = (),
                         dtype: DTypeLike | None = None) -> Array:
    """Double-sided Maxwell samples: a random sign times a Maxwell sample, scaled and shifted."""
    key = _check_key("double_sided_maxwell", key)
    shape = _shape("double_sided_maxwell", shape)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    shape = shape + tuple(tnp.broadcast_shapes(tnp.shape(loc), tnp.shape(scale)))
    maxwell_key, rademacher_key = _split(key, (2,))
    sign = tnp.astype(_rademacher(rademacher_key, shape), dtype)
    return sign * maxwell(maxwell_key, shape, dtype) * scale + loc


def weibull_min(key: ArrayLike, scale: ArrayLike, concentration: ArrayLike, shape: Shape = (),
                dtype: DTypeLike | None = None) -> Array:
    """Weibull samples: (-log1p(-u)) ** (1 / concentration) * scale."""
    key = _check_key("weibull_min", key)
    shape = _shape("weibull_min", shape)
    dtype = _float_dtype("weibull_min", dtype)
    u = _uniform(key, shape, dtype)
    return tnp.power(-tnp.log1p(-u), 1.0 / concentration) * scale


def orthogonal(key: ArrayLike, n: int, shape: Shape = (), dtype: DTypeLike | None = None,
               m: int | None = None) -> Array:
    """Samples from the Haar measure on n x m matrices with orthonormal columns (or rows)."""
    key = _check_key("orthogonal", key)
    shape = _shape("orthogonal", shape)
    dtype = _float_dtype("orthogonal", dtype)
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    z = _normal(key, shape + (max(n, m), min(n, m)), dtype)
    q, r = _NL.qr(z)
    x = q * tnp.expand_dims(tnp.sign(tnp.diagonal(r, axis1=-2, axis2=-1)), -2)
    return tnp.swapaxes(x, -1, -2) if n < m else x


def _generalized_normal(key, p, shape, dtype):
    keys = _split(key, (2,))
    g = _gamma(keys[0], tnp.full(shape, 1 / p, dtype), shape, dtype)
    r = tnp.astype(_rademacher(keys[1], shape), dtype)
    return r * g ** (1 / p)


def generalized_normal(key: ArrayLike, p: float, shape: Shape = (),
                       dtype: DTypeLike | None = None) -> Array:
    """Generalized normal samples with density proportional to ``exp(-|x|^p)``."""
    key = _check_key("generalized_normal", key)
    return _generalized_normal(key, p, _shape("generalized_normal", shape),
                               _float_dtype("generalized_normal", dtype))


def ball(key: ArrayLike, d: int, p: float = 2, shape: Shape = (),
         dtype: DTypeLike | None = None) -> Any:
    """Uniform samples from the unit ``p``-norm ball in ``d`` dimensions."""
    key = _check_key("ball", key)
    shape = _shape("ball", shape)
    dtype = _float_dtype("ball", dtype)
    d = operator.index(d)
    k1, k2 = _split(key, (2,))
    g = _generalized_normal(k1, p, shape + (d,), dtype)
    e = -tnp.log1p(-_uniform(k2, shape, dtype))
    return g / ((tnp.sum(tnp.abs(g) ** p, axis=-1) + e) ** (1 / p))[..., None]


def gamma(key: ArrayLike, a: ArrayLike, shape: Shape | None = None,
          dtype: DTypeLike | None = None) -> Array:
    """Gamma(a, 1) samples (JAX's Marsaglia-Tsang sampler), differentiable in ``a`` by implicit
    reparameterization (JAX's ``random_gamma_grad``)."""
    key, (a,), shape, dtype = _prep("gamma", key, (a,), shape, dtype)
    return _gamma(key, a, shape, dtype)


def loggamma(key: ArrayLike, a: ArrayLike, shape: Shape | None = None,
             dtype: DTypeLike | None = None) -> Array:
    """Logs of Gamma(a, 1) samples, accurate for small ``a``."""
    key, (a,), shape, dtype = _prep("loggamma", key, (a,), shape, dtype)
    return _gamma(key, a, shape, dtype, True)


def beta(key: ArrayLike, a: ArrayLike, b: ArrayLike, shape: Shape | None = None,
         dtype: DTypeLike | None = None) -> Array:
    """Beta(a, b) samples from two log-gamma draws."""
    key, (a, b), shape, dtype = _prep("beta", key, (a, b), shape, dtype)
    return _beta(key, a, b, shape, dtype)


def chisquare(key: ArrayLike, df: ArrayLike, shape: Shape | None = None,
              dtype: DTypeLike | None = None) -> Array:
    """Chi-square samples with ``df`` degrees of freedom."""
    key, (df,), shape, dtype = _prep("chisquare", key, (df,), shape, dtype)
    return _chisquare(key, df, shape, dtype)


def f(key: ArrayLike, dfnum: ArrayLike, dfden: ArrayLike, shape: Shape | None = None,
      dtype: DTypeLike | None = None) -> Array:
    """F-distribution samples with ``dfnum`` and ``dfden`` degrees of freedom."""
    key, (dfnum, dfden), shape, dtype = _prep("f", key, (dfnum, dfden), shape, dtype)
    return _f(key, dfnum, dfden, shape, dtype)


def t(key: ArrayLike, df: ArrayLike, shape: Shape | None = None,
      dtype: DTypeLike | None = None) -> Array:
    """Student's t samples with ``df`` degrees of freedom."""
    key, (df,), shape, dtype = _prep("t", key, (df,), shape, dtype)
    return _t(key, df, shape, dtype)


def pareto(key: ArrayLike, b: ArrayLike, shape: Shape | None = None,
           dtype: DTypeLike | None = None) -> Array:
    """Pareto samples with shape ``b``: exp(exponential / b)."""
    key, (b,), shape, dtype = _prep("pareto", key, (b,), shape, dtype)
    return tnp.exp(-tnp.log1p(-_uniform(key, shape, dtype)) / b)


def rayleigh(key: ArrayLike, scale: ArrayLike, shape: Shape | None = None,
             dtype: DTypeLike | None = None) -> Array:
    """Rayleigh samples with ``scale``."""
    key, (scale,), shape, dtype = _prep("rayleigh", key, (scale,), shape, dtype)
    return _rayleigh(key, scale, shape, dtype)


def wald(key: ArrayLike, mean: ArrayLike, shape: Shape | None = None,
         dtype: DTypeLike | None = None) -> Array:
    """Wald (inverse Gaussian) samples with ``mean``."""
    key, (mean,), shape, dtype = _prep("wald", key, (mean,), shape, dtype)
    return _wald(key, mean, shape, dtype)


def triangular(key: ArrayLike, left: ArrayLike, mode: ArrayLike, right: ArrayLike,
               shape: Shape | None = None, dtype: DTypeLike | None = None) -> Array:
    """Triangular samples on [left, right] peaking at ``mode``."""
    key, (left, mode, right), shape, dtype = _prep("triangular", key, (left, mode, right), shape, dtype)
    return _triangular(key, left, mode, right, shape, dtype)


# ---------------------------------------------------------------------------
# Discrete distributions


def randint(key: ArrayLike, shape: Shape, minval: ArrayLike, maxval: ArrayLike,
            dtype: DTypeLike | None = None) -> Array:
    """Uniform integers in ``[minval, maxval)`` (``minval`` where ``maxval <= minval``)."""
    key = _check_key("randint", key)
    shape = _shape("randint", shape)
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"randint: argument 'dtype' must be an integer dtype, got {dtype}")
    for nm, v in (("minval", minval), ("maxval", maxval)):
        if _aval(v).dtype.kind not in "iub":
            raise TypeError(f"randint: argument '{nm}' must be an integer, got {_aval(v).str_short()}")
    shape = _sample_shape("randint", shape, minval, maxval)
    info = np.iinfo(dtype)
    if info.bits < 32:   # JAX samples 8/16-bit integers as int32 (less modulo bias)
        minval = tnp.clip(_as(minval, np.int64), int(info.min), int(info.max))
        maxval = tnp.clip(_as(maxval, np.int64), int(info.min), int(info.max) + 1)
        return tnp.astype(randint(key, shape, minval, maxval, np.int32), dtype)
    lo64, hi64 = max(int(info.min), -(1 << 63)), min(int(info.max), (1 << 63) - 1)
    minval, maxval = _as(minval, np.int64), _as(maxval, np.int64)
    maxval_out_of_range = maxval > hi64
    lo = tnp.astype(tnp.clip(minval, lo64, hi64), dtype)
    hi = tnp.astype(tnp.clip(maxval, lo64, hi64), dtype)
    nbits = info.bits
    k = _split(key, (2,))
    higher, lower = _random_bits(k[0], shape, nbits), _random_bits(k[1], shape, nbits)
    udt = np.dtype(f"uint{nbits}")
    span = tnp.astype(hi - lo, udt)
    span = tnp.where(hi <= lo, udt.type(1), span)
    span = tnp.where(maxval_out_of_range & (hi > lo), span + udt.type(1), span)
    multiplier = tnp.remainder(udt.type((1 << (nbits // 2)) % (1 << nbits)), span)
    multiplier = tnp.remainder(multiplier * multiplier, span)
    offset = tnp.remainder(higher, span) * multiplier + tnp.remainder(lower, span)
    offset = tnp.remainder(offset, span)
    return tnp.astype(lo + tnp.astype(offset, dtype), dtype)


def _bernoulli(key, p, shape):
    dtype = _aval(p).dtype if _aval(p).dtype.kind == "f" else np.dtype(np.float64)
    return _uniform(key, shape, dtype) < p


def bernoulli(key: ArrayLike, p: ArrayLike = 0.5, shape: Shape | None = None,
              mode: str = "low") -> Array:
    """Boolean samples that are True with probability ``p``."""
    key = _check_key("bernoulli", key)
    if mode not in ("low", "high"):
        raise ValueError(f"bernoulli: argument 'mode' must be 'low' or 'high', got {mode!r}")
    if _aval(p).dtype.kind != "f" and not isinstance(p, float):
        raise TypeError(f"bernoulli: argument 'p' must have a floating dtype, got {_aval(p).str_short()}")
    shape = _sample_shape("bernoulli", _shape("bernoulli", shape), p)
    if mode == "high":
        dtype = _aval(p).dtype
        u = _uniform(key, (2,) + shape, dtype)
        return u[1] * dtype.type(2.0 ** -np.finfo(dtype).nmant) < p - u[0]
    return _bernoulli(key, p, shape)


def _rademacher(key, shape):
    return 2 * tnp.astype(_bernoulli(key, 0.5, shape), np.int64) - 1


def rademacher(key: ArrayLike, shape: Shape = (), dtype: DTypeLike | None = None) -> Array:
    """Samples of +1/-1 with equal probability."""
    key = _check_key("rademacher", key)
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    return tnp.astype(_rademacher(key, _shape("rademacher", shape)), dtype)


def geometric(key: ArrayLike, p: ArrayLike, shape: Shape | None = None,
              dtype: DTypeLike | None = None) -> Array:
    """Geometric samples (number of trials to the first success, >= 1)."""
    key = _check_key("geometric", key)
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    shape = _sample_shape("geometric", _shape("geometric", shape), p)
    p = _as(p, np.float32 if _aval(p).dtype == np.float32 else np.float64)
    u = _uniform(key, shape, np.dtype(p.dtype))
    u = tnp.where(u == 0, np.asarray(1, p.dtype), u)
    return tnp.astype(tnp.floor(tnp.log(u) / tnp.log1p(-p)) + 1, dtype)


def categorical(key: ArrayLike, logits: ArrayLike, axis: int = -1, shape: Shape | None = None,
                replace: bool = True, mode: str | None = None) -> Array:
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
    shape = _sample_shape("categorical", shape, np.empty(batch_shape))
    prefix = shape[:len(shape) - len(batch_shape)]
    dtype = logits.dtype if logits.dtype.kind == "f" else np.dtype(np.float64)
    if not replace:
        k = int(np.prod(prefix, dtype=np.int64))
        if k > logits.shape[axis]:
            raise ValueError(f"categorical: number of samples without replacement ({k}) cannot "
                             f"exceed the number of categories ({logits.shape[axis]})")
        noisy = logits + _gumbel(key, tuple(logits.shape), dtype, mode)
        _, idx = _lax.top_k(tnp.moveaxis(noisy, axis, -1), k)
        return tnp.reshape(tnp.moveaxis(idx, -1, 0), shape)
    tail = list(shape[len(shape) - len(batch_shape):])
    tail.insert(axis, logits.shape[axis])
    g = _gumbel(key, prefix + tuple(tail), dtype, mode)
    return tnp.argmax(g + tnp.reshape(logits, (1,) * len(prefix) + tuple(logits.shape)),
                      axis=axis + len(prefix))


def _shuffle(key, x, axis):
    """JAX's ``_shuffle``: stable sorts by fresh 32-bit keys, ceil(3 log n / log 2^32) rounds."""
    size = int(np.prod(x.shape, dtype=np.int64))
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        ks = _split(key, (2,))
        key, subkey = ks[0], ks[1]
        sort_keys = _random_bits(subkey, tuple(x.shape), 32)
        x = tnp.take_along_axis(x, tnp.argsort(sort_keys, axis=axis, stable=True), axis)
    return x


def permutation(key: ArrayLike, x: int | ArrayLike, axis: int = 0,
                independent: bool = False) -> Array:
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``."""
    key = _check_key("permutation", key)
    if tnp.ndim(x) == 0:
        if _aval(x).dtype.kind not in "iu":
            raise TypeError("permutation: argument 'x' must be an integer or at least "
                            "1-dimensional")
        n = operator.index(x)
        if n < 0:
            raise ValueError(f"permutation: argument 'x' must be non-negative, got {n}")
        return _shuffle(key, tnp.arange(n), 0)
    x = tnp.asarray(x) if not isinstance(x, core.Tracer) else x
    axis = operator.index(axis)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"permutation: axis {axis} is out of bounds for shape {tuple(x.shape)}")
    axis %= x.ndim
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    return tnp.take(x, _shuffle(key, tnp.arange(x.shape[axis]), 0), axis=axis)


def choice(key: ArrayLike, a: int | ArrayLike, shape: Shape = (), replace: bool = True,
           p: ArrayLike | None = None, axis: int = 0, mode: str | None = None) -> Array:
    """Samples from ``arange(a)`` (int ``a``) or from ``a`` along ``axis``."""
    key = _check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape} "
                        "(choice: argument 'shape' is a tuple of ints)")
    shape = _shape("choice", shape)
    arr = tnp.asarray(a) if not isinstance(a, core.Tracer) else a
    if arr.ndim == 0:
        n = operator.index(a)
    else:
        axis = operator.index(axis) % arr.ndim
        n = arr.shape[axis]
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        return tnp.zeros(shape, arr.dtype)
    if n <= 0:
        raise ValueError(f"choice: argument 'a' must be non-empty, got {n} elements")
    if not replace and size > n:
        raise ValueError(f"choice: cannot take a larger sample (size {size}) than the "
                         f"population ({n}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n)
            result = ind if arr.ndim == 0 else tnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n if arr.ndim == 0 else arr, axis)
            result = perm[(slice(None),) * axis + (slice(size),)]
    else:
        if tuple(tnp.shape(p)) != (n,):
            raise ValueError(f"choice: argument 'p' must have shape ({n},), got {tuple(tnp.shape(p))}")
        p = tnp.asarray(p) if not isinstance(p, core.Tracer) else p
        pdt = np.dtype(p.dtype) if p.dtype.kind == "f" else np.dtype(np.float64)
        p = tnp.astype(p, pdt)
        if replace:
            cdf = tnp.cumsum(p)
            r = cdf[-1] * (1 - _uniform(key, shape, pdt))
            ind = tnp.astype(tnp.searchsorted(cdf, r), np.int64)
        else:
            with np.errstate(divide="ignore"):    # p == 0: log 0 = -inf, never drawn
                g = _gumbel(key, (n,), pdt, mode) + tnp.log(p)
            ind = tnp.astype(_lax.top_k(g, size)[1], np.int64)
        result = ind if arr.ndim == 0 else tnp.take(arr, ind, axis=axis)
    return tnp.reshape(result, shape if arr.ndim == 0 else
                       tuple(arr.shape[:axis]) + shape + tuple(arr.shape[axis + 1:]))


def _poisson_knuth(key, lam, shape):
    def cond(c):
        return tnp.any(c[3] > -lam)

    def body(c):
        i, k, rng, log_prod = c
        ks = _split(rng, (2,))
        k = tnp.where(log_prod > -lam, k + 1, k)
        u = _uniform(ks[1], shape, np.dtype(np.float32))
        return i + 1, k, ks[0], log_prod + tnp.log(u)
    init = (0, tnp.zeros(shape, np.int64), key, tnp.zeros(shape, np.float32))
    return _lax.while_loop(cond, body, init)[1] - 1


def _poisson_rejection(key, lam, shape):
    f32 = np.float32
    log_lam = tnp.log(lam)
    b = f32(0.931) + f32(2.53) * tnp.sqrt(lam)
    a = f32(-0.059) + f32(0.02483) * b
    inv_alpha = f32(1.1239) + f32(1.1328) / (b - f32(3.4))
    v_r = f32(0.9277) - f32(3.6224) / (b - f32(2))

    def body(c):
        i, k_out, accepted, rng = c
        ks = _split(rng, (3,))
        u = _uniform(ks[1], shape, np.dtype(f32)) - f32(0.5)
        v = _uniform(ks[2], shape, np.dtype(f32))
        us = f32(0.5) - tnp.abs(u)
        k = tnp.floor((2 * a / us + b) * u + lam + f32(0.43))
        s = tnp.log(v * inv_alpha / (a / (us * us) + b))
        t_ = -lam + k * log_lam - _sp.gammaln(k + 1)
        accept1 = (us >= f32(0.07)) & (v <= v_r)
        reject = (k < 0) | ((us < f32(0.013)) & (v > us))
        accept = accept1 | (~reject & (s <= t_))
        return i + 1, tnp.where(accept, k, k_out), accepted | accept, ks[0]
    init = (0, tnp.full(shape, -1, f32), tnp.zeros(shape, bool), key)
    return _lax.while_loop(lambda c: tnp.any(~c[2]), body, init)[1]


def poisson(key: ArrayLike, lam: ArrayLike, shape: Shape | None = None,
            dtype: DTypeLike | None = None) -> Array:
    """Poisson samples with rate ``lam`` (JAX's Knuth / transformed-rejection samplers, float32)."""
    key = _check_key("poisson", key)
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    shape = _sample_shape("poisson", _shape("poisson", shape), lam)
    lam = tnp.broadcast_to(_as(lam, np.float32), shape)
    use_knuth = tnp.isnan(lam) | (lam < 10)
    with np.errstate(divide="ignore", invalid="ignore"):   # both samplers run everywhere
        knuth = _poisson_knuth(key, tnp.where(use_knuth, lam, np.float32(0)), shape)
        rej = _poisson_rejection(key, tnp.where(use_knuth, np.float32(1e5), lam), shape)
    out = tnp.where(use_knuth, tnp.astype(knuth, dtype), tnp.astype(rej, dtype))
    return tnp.where(lam == 0, tnp.zeros_like(out), out)


_STIRLING_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                           0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                           0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                           0.00833056343336287])


def _stirling_approx_tail(k):
    use_table = k <= 9
    k = tnp.clip(k, 0.0, 9.0)
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    table = tnp.take(tnp.asarray(_STIRLING_TAIL, k.dtype), tnp.astype(tnp.floor(k), np.int32))
    return tnp.where(use_table, table, approx)


def _binomial_inversion(key, count, prob, shape):
    log1mp = tnp.log1p(-prob)

    def body(c):
        i, num_geom, geom_sum, rng = c
        ks = _split(rng, (2,))
        subkey, rng = ks[0], ks[1]
        num_geom = tnp.where(geom_sum <= count, num_geom + 1, num_geom)
        geom = tnp.ceil(tnp.log(_uniform(subkey, shape, np.dtype(prob.dtype))) / log1mp)
        return i + 1, num_geom, geom_sum + geom, rng
    zero = tnp.zeros(shape, prob.dtype)
    return _lax.while_loop(lambda c: tnp.any(c[2] <= count), body, (0, zero, zero, key))[1] - 1


def _btrs(key, count, prob, shape):
    stddev = tnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = tnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, rng = carry
        ks = _split(rng, (3,))
        u = _uniform(ks[1], shape, np.dtype(prob.dtype)) - 0.5
        v = _uniform(ks[2], shape, np.dtype(prob.dtype))
        us = 0.5 - tnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = tnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = tnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * tnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * tnp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * tnp.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, tnp.where(accept, k, k_out), accepted | accept, ks[0]
    init = (0, tnp.full(shape, -1, prob.dtype), tnp.zeros(shape, bool), key)
    return _lax.while_loop(lambda carry: tnp.any(~carry[2]), body, init)[1]


def binomial(key: ArrayLike, n: ArrayLike, p: ArrayLike, shape: Shape | None = None,
             dtype: DTypeLike | None = None) -> Array:
    """Binomial samples (JAX's inversion / BTRS samplers), as floats like JAX."""
    key = _check_key("binomial", key)
    dtype = _float_dtype("binomial", dtype)
    shape = _sample_shape("binomial", _shape("binomial", shape), n, p)
    prob = tnp.asarray(p) if not isinstance(p, core.Tracer) else p
    prob = _as(prob, prob.dtype if prob.dtype.kind == "f" else np.float64)
    count = tnp.broadcast_to(_as(n, prob.dtype), shape)
    prob = tnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = tnp.where(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = tnp.isnan(count) | (count < 0.0)
    count_inf = tnp.isinf(count)
    q_is_nan = tnp.isnan(q)
    q_l_0 = q < 0.0
    q = tnp.where(q_is_nan | q_l_0, 0.01, q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = tnp.floor(count)
    with np.errstate(divide="ignore", invalid="ignore"):   # both samplers run everywhere
        inv = _binomial_inversion(key, tnp.where(use_inversion, count, 0.0), q, shape)
        btrs = _btrs(key, tnp.where(use_inversion, 1e4, count), tnp.where(use_inversion, 0.5, q),
                     shape)
    samples = tnp.astype(tnp.where(use_inversion, inv, btrs), dtype)
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = tnp.where(invalid, dtype.type(np.nan), samples)
    samples = tnp.where(count_inf & ~invalid, dtype.type(np.inf), samples)
    return tnp.where(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                     tnp.astype(count, dtype) - samples)


def multinomial(key: ArrayLike, n: ArrayLike, p: ArrayLike, *, shape: Shape | None = None,
                dtype: DTypeLike | None = None, unroll: int | bool = 1) -> Any:
    """Multinomial counts of ``n`` trials over the categories of ``p`` (last axis), as floats."""
    key = _check_key("multinomial", key)
    dtype = _float_dtype("multinomial", dtype)
    p = tnp.asarray(p) if not isinstance(p, core.Tracer) else p
    pdt = p.dtype if p.dtype.kind == "f" else np.dtype(np.float64)
    p = tnp.astype(p, pdt)
    shape = tuple(p.shape) if shape is None else _shape("multinomial", shape)
    n = tnp.broadcast_to(_as(n, pdt), shape[:-1])
    p = tnp.moveaxis(tnp.broadcast_to(p, shape), -1, 0)
    remaining = tnp.flip(tnp.cumsum(tnp.flip(p, 0), axis=0), 0)
    ratios = p / tnp.where(remaining == 0, 1, remaining)
    keys = _split(key, (shape[-1],))

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = binomial(k, remainder, tnp.clip(ratio, 0, 1), dtype=pdt)
        return remainder - count, count
    _, counts = _lax.scan(step, n, (ratios, keys), unroll=unroll)
    return tnp.astype(tnp.moveaxis(counts, 0, -1), dtype)


# ---------------------------------------------------------------------------
# out_sharding: JAX's samplers take the layout of their result; there is one device here,
# so a sharding (or PartitionSpec) of it changes nothing and is accepted as JAX's.

def _takes_out_sharding(fn):
    import functools
    import inspect

    from . import sharding as _sharding

    @functools.wraps(fn)
    def sampler(*args, out_sharding=None, **kwargs):
        if out_sharding is not None and not isinstance(
                out_sharding, (_sharding.Sharding, _sharding.PartitionSpec)):
            raise TypeError(f"{fn.__name__}: argument 'out_sharding' must be a Sharding, a "
                            f"PartitionSpec or None, got {out_sharding!r:.60}")
        return fn(*args, **kwargs)
    sampler.__doc__ = (inspect.getdoc(fn) or "") + (
        "\n\nout_sharding: the layout of the result (a Sharding, a PartitionSpec or None), "
        "as JAX's; there is one device, so it changes nothing.")
    sig = inspect.signature(fn)
    sampler.__signature__ = sig.replace(parameters=[*sig.parameters.values(), inspect.Parameter(
        "out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)])
    return sampler


for _name in ("ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
              "dirichlet", "exponential", "f", "gamma", "generalized_normal", "geometric",
              "gumbel", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
              "multivariate_normal", "normal", "orthogonal", "pareto", "permutation",
              "poisson", "rademacher", "randint", "rayleigh", "t", "triangular",
              "truncated_normal", "uniform", "wald"):
    if _name in globals():
        globals()[_name] = _takes_out_sharding(globals()[_name])
del _name
