"""Creating arrays: filled arrays (``zeros``, ``full``, ``eye``, ...),
``array``, ranges (``arange``, ``linspace``, ``logspace``, ``geomspace``)
and ``meshgrid``."""
from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING

import numpy as _np

from ..interpreters.base_ops import traced_shape_error
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import special as _SP
from ..primitives import structural as _S
from ._constants import float64
from ._conversion import _arraylike, _has_jax_array, _in, _inexact, asarray, astype
from ._elementwise import log10, power, sign
from ._shapes import (broadcast_arrays, broadcast_shapes, broadcast_to, expand_dims, moveaxis,
                      ndim, reshape, shape)
from ._util import (_Tracer, _aval, _check_device, _check_order_k, _concrete, _eager, _flat_seq,
                    _is_tracer)

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike


# ---------------------------------------------------------------------------
# Filled arrays


def _check_shape(shape, fname, dtype=None):
    """``shape`` unchanged; JAX's TypeErrors if it is or holds a traced value (a shape must
    be known while tracing), is not integers, or has a negative dimension; and JAX's hint
    for ``zeros(2, 3)`` (an integer given as ``dtype``)."""
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        raise TypeError(f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally "
                        f"write `jax.numpy.{fname}({shape}, {dtype})` when you meant "
                        f"`jax.numpy.{fname}(({shape}, {dtype}))`, i.e. with a single tuple "
                        f"argument for the shape? (tangentia.numpy.{fname})")
    if type(shape) is int:
        if shape >= 0:
            return shape
    elif type(shape) is tuple and all(type(d) is int and d >= 0 for d in shape):
        return shape
    dims = (shape if isinstance(shape, (tuple, list)) else
            tuple(shape) if isinstance(shape, _np.ndarray) and shape.ndim == 1 else (shape,))
    if any(_is_tracer(d) for d in dims):
        err = traced_shape_error(shape, fname)   # JAX's first line and hint, then ours
        first, _, ours = str(err).partition(". ")
        raise TypeError(f"{first}.\nIf using `jit`, try using `static_argnums` or applying "
                        f"`jit` to smaller subfunctions. ({ours})")
    try:
        dims = tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{tuple(dims)}. ({fname}: argument 'shape')") from None
    if any(d < 0 for d in dims):
        raise TypeError(f"Shapes must have every element be nonnegative, got {dims}. ({fname}: "
                        "argument 'shape')")
    return shape


def zeros(shape: Any, dtype: DTypeLike | None = None, *, device: Any = None,
          out_sharding: Any = None) -> Array:
    """An array of zeros of the given shape (float64 by default)."""
    _check_device(device, "zeros")
    return _np.zeros(_check_shape(shape, "zeros", dtype), dtype or float64)


def ones(shape: Any, dtype: DTypeLike | None = None, *, device: Any = None,
         out_sharding: Any = None) -> Array:
    """An array of ones of the given shape (float64 by default)."""
    _check_device(device, "ones")
    return _np.ones(_check_shape(shape, "ones", dtype), dtype or float64)


def empty(shape: Any, dtype: DTypeLike | None = None, *, device: Any = None,
          out_sharding: Any = None) -> Array:
    """An array of the given shape and dtype (float64 by default); here filled with zeros."""
    _check_device(device, "empty")
    return _np.zeros(_check_shape(shape, "empty", dtype), dtype or float64)


def full(shape: Any, fill_value: ArrayLike, dtype: DTypeLike | None = None, *,
         device: Any = None, out_sharding: Any = None) -> Array:
    """An array of the given shape filled with ``fill_value`` (``out_sharding`` changes
    nothing: one device)."""
    _check_device(device, "full")
    shape = _check_shape(shape, "full")
    if _is_tracer(fill_value):
        v = fill_value if dtype is None else astype(fill_value, dtype)
        return broadcast_to(v, (shape,) if isinstance(shape, int) else tuple(shape))
    _arraylike("full", fill_value)   # (NumPy fills with None/'abc' as objects or NaN)
    return _np.full(shape, fill_value, dtype)


def _like(a):
    """(shape, dtype) of ``a``: an array-like, or (as JAX's ``*_like``) any object with
    ``shape`` and ``dtype`` attributes, such as a ShapeDtypeStruct or an abstract value."""
    if (not isinstance(a, (_np.ndarray, _np.generic, _Tracer)) and hasattr(a, "shape")
            and hasattr(a, "dtype")):
        return tuple(a.shape), _np.dtype(a.dtype)
    av = _aval(a)
    return av.shape, av.dtype


def zeros_like(a: Any, dtype: DTypeLike | None = None, shape: Any = None, *,
               device: Any = None, out_sharding: Any = None) -> Array:
    """An array of zeros with the shape and dtype of ``a``."""
    _check_device(device, "zeros_like")
    a_shape, a_dtype = _like(a)
    return _np.zeros(a_shape if shape is None else _check_shape(shape, "zeros_like"),
                     dtype or a_dtype)


def ones_like(a: Any, dtype: DTypeLike | None = None, shape: Any = None, *,
              device: Any = None, out_sharding: Any = None) -> Array:
    """An array of ones with the shape and dtype of ``a``."""
    _check_device(device, "ones_like")
    a_shape, a_dtype = _like(a)
    return _np.ones(a_shape if shape is None else _check_shape(shape, "ones_like"),
                    dtype or a_dtype)


def empty_like(prototype: Any, dtype: DTypeLike | None = None, shape: Any = None, *,
               device: Any = None) -> Array:
    """An array with the shape and dtype of ``prototype``; here filled with zeros."""
    _check_device(device, "empty_like")
    return zeros_like(prototype, dtype, shape)


def full_like(a: Any, fill_value: ArrayLike, dtype: DTypeLike | None = None, shape: Any = None,
              *, device: Any = None, out_sharding: Any = None) -> Array:
    """An array with the shape and dtype of ``a`` filled with ``fill_value``
    (``out_sharding`` changes nothing: one device)."""
    _check_device(device, "full_like")
    _arraylike("full_like", fill_value, start=1)   # (NumPy's full_like(x, None): NaN)
    a_shape, a_dtype = _like(a)
    return full(a_shape if shape is None else shape, fill_value, dtype or a_dtype)


def _dim(n, fname, argname):
    """A dimension argument: JAX's TypeError if it is traced (the shape would be unknown)."""
    if type(n) is int or not _is_tracer(n):
        return n
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                    f"{(n,)}. {fname}: argument '{argname}' is traced, so the result's shape "
                    "would be unknown; pass it as a static argument (static_argnums / "
                    "static_argnames of jit).")


def _diagonal_offsets(N, M):
    """``j - i`` for each element ``(i, j)`` of an ``N`` x ``M`` array (which diagonal it is on)."""
    return _np.arange(M)[None, :] - _np.arange(N)[:, None]


def eye(N: int, M: int | None = None, k: int | ArrayLike = 0, dtype: DTypeLike | None = None,
        *, device: Any = None) -> Array:
    """A 2-D array with ones on the ``k``-th diagonal and zeros elsewhere (float64 by default;
    ``k`` may be traced, as JAX's)."""
    _check_device(device, "eye")
    N = _dim(N, "eye", "N")
    M = N if M is None else _dim(M, "eye", "M")
    if not _is_tracer(k):
        return _np.eye(N, M, k, dtype=dtype or float64)
    return astype(_E.eq(_diagonal_offsets(N, M), k), dtype or float64)


def identity(n: int, dtype: DTypeLike | None = None) -> Array:
    """The ``n`` x ``n`` identity matrix (float64 by default)."""
    return _np.identity(_dim(n, "identity", "n"), dtype=dtype or float64)


def _nonnegative(what, fname, n, m):
    """JAX's TypeError for a negative size of ``fname``'s ``n`` x ``m`` result (NumPy's
    ``tri(-1)``, ``tril_indices(-1)`` are empty); ``what`` is the lax operation JAX names."""
    if not _is_tracer(n) and not _is_tracer(m) and (n < 0 or m < 0):
        raise TypeError(f"{what} shape must have every element be nonnegative, got "
                        f"{(int(n), int(m))}. (tangentia.numpy.{fname})")


def tri(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike | None = None) -> Array:
    """An ``N`` x ``M`` array with ones at and below the ``k``-th diagonal, zeros elsewhere
    (``k`` may be traced, as JAX's)."""
    N = _dim(N, "tri", "N")
    M = N if M is None else _dim(M, "tri", "M")
    _nonnegative("iota", "tri", N, M)
    if not _is_tracer(k):
        return _np.tri(N, M, k, dtype=dtype or float64)
    return astype(_E.le(_diagonal_offsets(N, M), k), dtype or float64)


# ---------------------------------------------------------------------------
# From data


def array(object: Any, dtype: DTypeLike | None = None, copy: bool = True,
          order: str | None = "K", ndmin: int = 0, *, device: Any = None,
          out_sharding: Any = None) -> Array:
    """An array from ``object`` (NumPy's ``array``; sequences of traced values are stacked;
    ``order``: None or "K", as JAX's)."""
    _check_device(device, "array")
    _check_order_k(order, "array")
    if _has_jax_array(object):   # JAX's protocol: what the object converts itself to
        object = asarray(object)
        if not _is_tracer(object):
            object = _np.asarray(object)
    if _is_tracer(object) or (isinstance(object, (list, tuple))
                              and builtins.any(_is_tracer(x) for x in _flat_seq(object))):
        out = asarray(object, dtype, copy=copy)
        while ndim(out) < ndmin:
            out = expand_dims(out, 0)
        return out
    return _valid_array(_np.array(object, dtype=dtype, copy=copy, ndmin=ndmin), object, dtype)


def _valid_array(out, obj, dtype):
    """``out`` (NumPy's array of ``obj``) if it is an array JAX has: JAX's errors for None
    entries, Python ints outside int64 (NumPy makes object or uint64 arrays of them),
    objects, strings and structured dtypes."""
    dt = out.dtype
    if dt.kind in "OUSV" and not (dt.kind == "V" and dt.fields is None and dt.itemsize in (1, 2)):
        flat = out.ravel() if dt.kind == "O" else ()
        if builtins.any(x is None for x in flat):
            raise ValueError("None is not a valid value for jnp.array (tangentia.numpy.array: "
                             "argument 'object')")
        i64 = _np.iinfo(_np.int64)
        big = next((x for x in flat if type(x) is int and not i64.min <= x <= i64.max), None)
        if big is not None:
            raise OverflowError(f"Python int too large to convert to int64 ({big} in argument "
                                "'object' of tangentia.numpy.array)")
        raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype {dt} in "
                        "array (tangentia.numpy.array: argument 'object')")
    if dtype is None and dt == _np.uint64 and not isinstance(obj, (_np.ndarray, _np.generic)):
        # Python ints past int64 that NumPy read as uint64 (NumPy's own uint64 values are fine)
        flat = _flat_seq(obj) if isinstance(obj, (list, tuple)) else [obj]
        big = next((x for x in flat if type(x) is int and x > _np.iinfo(_np.int64).max), None)
        if big is not None:   # (JAX's wording for a scalar, and for a sequence)
            raise OverflowError((f"Python int {big} too large to convert to int64" if
                                 isinstance(obj, int) else "Python int too large to convert to "
                                 f"int64 ({big})") + " (tangentia.numpy.array: pass "
                                "dtype=uint64 for such values)")
    return out


# ---------------------------------------------------------------------------
# Ranges and grids


def arange(start: ArrayLike | int, stop: ArrayLike | int | None = None,
           step: ArrayLike | None = None, dtype: DTypeLike | None = None, *,
           device: Any = None, out_sharding: Any = None) -> Array:
    """Evenly spaced values in the half-open interval [start, stop) (bounds must be concrete)."""
    _check_device(device, "arange")
    # (with one bound, it is the stop, as JAX's errors name it)
    start = _concrete(start, "arange", "start" if stop is not None else "stop")
    stop = _concrete(stop, "arange", "stop")
    step = _concrete(step, "arange", "step")
    if stop is None:
        return np_arange(0, start, 1, dtype)
    return np_arange(start, stop, step if step is not None else 1, dtype)


_TOO_BIG = ("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum "
            "possible size.")


def np_arange(start, stop, step, dtype=None):
    """``numpy.arange(start, stop, step, dtype)``, where an integer range too long for any
    array is NumPy's "array is too big" ``ValueError``: NumPy computes the length in
    float64, and a length near 2**63 rounded up and overflowed to an empty array
    (``arange(2**63 - 1)`` and ``lax.iota(int64, 2**63 - 1)`` were ``int64[0]``)."""
    try:
        a, b, c = operator.index(start), operator.index(stop), operator.index(step)
    except TypeError:
        a = None
    if a is not None and c != 0:
        n = max(0, -((a - b) // c))
        itemsize = _np.dtype(_np.int64 if dtype is None else dtype).itemsize
        if n * itemsize > _np.iinfo(_np.intp).max or n >= 2 ** 62:   # (no machine has 4 EiB)
            raise ValueError(_TOO_BIG)
    return _np.arange(start, stop, step, dtype=dtype)


def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: DTypeLike | None = None, axis: int = 0, *,
             device: Any = None) -> Array | tuple[Array, Array]:
    """``num`` evenly spaced values from ``start`` to ``stop`` (``num`` must be concrete)."""
    _check_device(device, "linspace")
    num = int(_concrete(num, "linspace", "num"))
    div = (num - 1) if endpoint else num
    if not (_is_tracer(start) or _is_tracer(stop)):
        out = _np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype,
                           axis=axis)
        return (out[0], _nan_step(out[0])) if retstep and div <= 0 else out
    steps = _np.arange(num, dtype=float64)
    start, stop = asarray(start), asarray(stop)
    shape_extra = broadcast_shapes(shape(start), shape(stop))
    steps = steps.reshape((num,) + (1,) * len(shape_extra))
    delta = (stop - start)
    step = delta / div if div > 0 else delta * 0.0
    out = start + steps * step
    if endpoint and num > 1:
        out = _I.scatter(out, stop, (num - 1,), (), "set")
    if axis != 0:
        out = moveaxis(out, 0, axis)
    if dtype is not None:
        out = astype(out, dtype)
    if retstep and div <= 0:
        step = _nan_step(out)
    return (out, step) if retstep else out


def _nan_step(out):
    """``linspace``'s step when it has none (``num`` 0, or 1 with the endpoint): a 0-d NaN of
    the result's inexact dtype (JAX's; NumPy's is a float NaN), eagerly and traced alike."""
    dt = _aval(out).dtype
    return _np.full((), _np.nan, dt if dt.kind in "fc" else float64)


def logspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True,
             base: ArrayLike = 10.0, dtype: DTypeLike | None = None, axis: int = 0) -> Array:
    """Numbers spaced evenly on a log scale: ``base ** linspace(start, stop)``."""
    num = int(_concrete(num, "logspace", "num"))
    if num < 0:
        raise ValueError(f"logspace: argument 'num' must be non-negative, got {num}")
    if _eager(start, stop, base):
        return _np.asarray(_np.logspace(start, stop, num, endpoint, base, dtype, axis))
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    if ndim(base) > 0:
        base = expand_dims(base, axis)
    out = power(base, y)
    return out if dtype is None else astype(out, dtype)


def geomspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True,
              dtype: DTypeLike | None = None, axis: int = 0) -> Array:
    """Numbers spaced evenly on a log scale, from ``start`` to ``stop`` (same sign)."""
    num = int(_concrete(num, "geomspace", "num"))
    if num < 0:
        raise ValueError(f"geomspace: argument 'num' must be non-negative, got {num}")
    if _eager(start, stop):
        return _np.asarray(_np.geomspace(start, stop, num, endpoint, dtype, axis))
    start = _inexact(_in(start, "geomspace", "start"))
    stop = _inexact(_in(stop, "geomspace", "stop"))
    sign_ = _S.stop_gradient(sign(start))
    if "c" in (_aval(start).dtype.kind, _aval(stop).dtype.kind):
        # off the real axis: divide by the unit ``sign`` (multiplying rotated the other way)
        start, stop = _E.div(start, sign_), _E.div(stop, sign_)
    else:
        start, stop = _E.mul(start, sign_), _E.mul(stop, sign_)
    out = logspace(log10(start), log10(stop), num, endpoint=endpoint, base=10.0, axis=0)
    if num > 0:
        out = _I.scatter(out, start, (0,), (), "set")
        if num > 1 and endpoint:
            out = _I.scatter(out, stop, (num - 1,), (), "set")
    out = _E.mul(out, sign_)
    if axis != 0:
        out = moveaxis(out, 0, axis)
    return out if dtype is None else astype(out, dtype)


def meshgrid(*xi: ArrayLike, copy: bool = True, sparse: bool = False, indexing: str = "xy"
             ) -> list[Array]:
    """Coordinate arrays from coordinate vectors (a tuple, as in NumPy 2)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: argument 'indexing' must be 'xy' or 'ij', got {indexing!r}")
    xs = [_in(x, "meshgrid", f"x{i + 1}") for i, x in enumerate(xi)]
    if _eager(*xs):
        return tuple(_np.meshgrid(*xs, copy=copy, sparse=sparse, indexing=indexing))
    nd = len(xs)
    s0 = (1,) * nd
    out = [reshape(x, s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xs)]
    if indexing == "xy" and nd > 1:
        out[0] = reshape(out[0], (1, -1) + s0[2:])
        out[1] = reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        out = broadcast_arrays(*out)
    return tuple(out)


# ---------------------------------------------------------------------------
# Window functions (``numpy.hanning`` ...): float64 arrays of static length M.

def _window_length(name, M):
    try:
        return int(_concrete(M, name, "M"))
    except TypeError:
        raise TypeError(f"{name}: argument 'M' (the number of points) must be an integer, "
                        f"got {M!r}") from None


def _window(name, fn):
    def window(M: int) -> Array:
        return _np.asarray(fn(_window_length(name, M)), dtype=_np.float64)
    window.__name__ = window.__qualname__ = name
    window.__doc__ = f"The {name} window of ``M`` points, as ``numpy.{name}``."
    return window


bartlett = _window("bartlett", _np.bartlett)
blackman = _window("blackman", _np.blackman)
hamming = _window("hamming", _np.hamming)
hanning = _window("hanning", _np.hanning)


def kaiser(M: int, beta: ArrayLike) -> Array:
    """The Kaiser window of ``M`` points and shape ``beta``, as ``numpy.kaiser``.

    Differentiable in ``beta``: ``I0(beta * sqrt(1 - (2n/(M-1) - 1)**2)) / I0(beta)``.
    """
    M = _window_length("kaiser", M)
    if not _is_tracer(beta):
        return _np.asarray(_np.kaiser(M, beta), dtype=_np.float64)
    if M <= 1:
        return _np.ones(M, _np.float64)
    n = _np.arange(M, dtype=_np.float64)
    alpha = (M - 1) / 2.0
    r = _np.sqrt(_np.clip(1.0 - ((n - alpha) / alpha) ** 2, 0.0, None))
    beta = astype(beta, float64)
    return _E.div(_SP.i0(_E.mul(beta, r)), _SP.i0(beta))
