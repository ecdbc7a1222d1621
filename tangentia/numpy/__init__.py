"""A NumPy-compatible API whose functions can be transformed.

Outside any transformation the functions return ``numpy.ndarray`` and cost
little more than NumPy itself; under a transformation they bind tangentia
primitives.  Dtype semantics are NumPy's: float64 by default, NumPy 2
promotion, Python scalars weakly typed.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as _np

from .. import core as _core
from .. import dtypes as _dtypes
from ..core import Tracer as _Tracer
from ..primitives import contraction as _C
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import reductions as _R
from ..primitives import structural as _S

# Re-exported NumPy constants and dtypes -----------------------------------
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
float16, float32, float64 = _np.float16, _np.float32, _np.float64
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
complex64, complex128 = _np.complex64, _np.complex128
bool_ = _np.bool_
dtype = _np.dtype


class _ArrayMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (_np.ndarray, _Tracer))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (_np.ndarray, _Tracer))


class ndarray(metaclass=_ArrayMeta):
    """The array type for ``isinstance`` checks: NumPy arrays and traced values
    (``isinstance(x, tnp.ndarray)`` holds inside transformed functions too)."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("tangentia.numpy.ndarray is for isinstance checks; create arrays with "
                        "tnp.asarray, tnp.zeros, ...")


finfo = _np.finfo
iinfo = _np.iinfo
issubdtype = _np.issubdtype
integer, floating, inexact, number, complexfloating = (
    _np.integer, _np.floating, _np.inexact, _np.number, _np.complexfloating)
result_type = _np.result_type
promote_types = _np.promote_types


def _aval(x):
    return _core.get_aval(x)


def _is_tracer(x):
    return isinstance(x, _Tracer)


# ---------------------------------------------------------------------------
# Construction


def asarray(a, dtype=None, copy=None):
    """Convert to an array (tracers are returned as they are, cast if asked)."""
    if isinstance(a, _Tracer):
        return a if dtype is None else astype(a, dtype)
    if isinstance(a, (list, tuple)) and builtins.any(_is_tracer(x) for x in _flat_seq(a)):
        return stack([asarray(x) for x in a]) if dtype is None else astype(
            stack([asarray(x) for x in a]), dtype)
    return _core.as_array(a if dtype is None else _np.asarray(a, dtype=dtype), "asarray: argument")


def _flat_seq(a):
    for x in a:
        if isinstance(x, (list, tuple)):
            yield from _flat_seq(x)
        else:
            yield x


def array(object, dtype=None, copy=True, ndmin=0):
    if _is_tracer(object) or (isinstance(object, (list, tuple))
                              and builtins.any(_is_tracer(x) for x in _flat_seq(object))):
        out = asarray(object, dtype)
        while ndim(out) < ndmin:
            out = expand_dims(out, 0)
        return out
    return _np.array(object, dtype=dtype, copy=copy, ndmin=ndmin)


def zeros(shape, dtype=None):
    return _np.zeros(shape, dtype or float64)


def ones(shape, dtype=None):
    return _np.ones(shape, dtype or float64)


def empty(shape, dtype=None):
    return _np.zeros(shape, dtype or float64)


def full(shape, fill_value, dtype=None):
    if _is_tracer(fill_value):
        v = fill_value if dtype is None else astype(fill_value, dtype)
        return broadcast_to(v, (shape,) if isinstance(shape, int) else tuple(shape))
    return _np.full(shape, fill_value, dtype)


def zeros_like(a, dtype=None, shape=None):
    av = _aval(a)
    return _np.zeros(av.shape if shape is None else shape, dtype or av.dtype)


def ones_like(a, dtype=None, shape=None):
    av = _aval(a)
    return _np.ones(av.shape if shape is None else shape, dtype or av.dtype)


def empty_like(a, dtype=None, shape=None):
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    av = _aval(a)
    return full(av.shape if shape is None else shape, fill_value, dtype or av.dtype)


def eye(N, M=None, k=0, dtype=None):
    return _np.eye(N, M, k, dtype=dtype or float64)


def identity(n, dtype=None):
    return _np.identity(n, dtype=dtype or float64)


def _concrete(x, fname, argname):
    if _is_tracer(x):
        try:
            return x.concrete_value(fname)
        except _core.ConcretizationTypeError as err:
            raise _core.ConcretizationTypeError(
                f"{fname}: argument '{argname}' must be concrete (it determines a shape), "
                f"but it is traced. {err}") from None
    return x


def arange(start, stop=None, step=None, dtype=None):
    start = _concrete(start, "arange", "start")
    stop = _concrete(stop, "arange", "stop")
    step = _concrete(step, "arange", "step")
    if stop is None:
        return _np.arange(start, dtype=dtype)
    return _np.arange(start, stop, step if step is not None else 1, dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    num = int(_concrete(num, "linspace", "num"))
    if not (_is_tracer(start) or _is_tracer(stop)):
        return _np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype,
                            axis=axis)
    div = (num - 1) if endpoint else num
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
    return (out, step) if retstep else out


def broadcast_shapes(*shapes):
    return tuple(_np.broadcast_shapes(*shapes))


# ---------------------------------------------------------------------------
# Shape queries


def shape(a):
    return _aval(a).shape


def ndim(a):
    return _aval(a).ndim


def size(a, axis=None):
    s = _aval(a).shape
    if axis is None:
        return math.prod(s)
    return s[axis]


# ---------------------------------------------------------------------------
# Elementwise functions

add = _E.add
subtract = _E.sub
multiply = _E.mul
divide = true_divide = _E.div
negative = _E.neg
power = _E.power
exp = _E.exp
log = _E.log
log1p = _E.log1p
expm1 = _E.expm1
sin, cos, tan = _E.sin, _E.cos, _E.tan
arcsin, arccos, arctan = _E.arcsin, _E.arccos, _E.arctan
asin, acos, atan = arcsin, arccos, arctan
sinh, cosh, tanh = _E.sinh, _E.cosh, _E.tanh
arcsinh, arccosh, arctanh = _E.arcsinh, _E.arccosh, _E.arctanh
asinh, acosh, atanh = arcsinh, arccosh, arctanh
arctan2 = atan2 = _E.arctan2
sqrt = _E.sqrt
cbrt = _E.cbrt
abs = absolute = _E.abs
sign = _E.sign
maximum = _E.maximum
minimum = _E.minimum
floor = _E.floor
ceil = _E.ceil
rint = _E.round
remainder = mod = _E.remainder
floor_divide = _E.floor_divide
equal, not_equal = _E.eq, _E.ne
less, less_equal, greater, greater_equal = _E.lt, _E.le, _E.gt, _E.ge


def positive(x):
    return _S.unchanged(x)


def logical_and(x, y):
    return _E.and_p.bind(x, y)


def logical_or(x, y):
    return _E.or_p.bind(x, y)


def logical_xor(x, y):
    return _E.xor_p.bind(x, y)


def logical_not(x):
    return _E.not_p.bind(x)


def bitwise_and(x, y):
    return _E.bitwise_and_p.bind(x, y)


def bitwise_or(x, y):
    return _E.bitwise_or_p.bind(x, y)


def bitwise_xor(x, y):
    return _E.bitwise_xor_p.bind(x, y)


def bitwise_not(x):
    return _E.bitwise_not_p.bind(x)


invert = bitwise_not


def isnan(x):
    return _E.isnan_p.bind(x)


def isinf(x):
    return _E.isinf_p.bind(x)


def isfinite(x):
    return _E.isfinite_p.bind(x)


def square(x):
    return _E.integer_pow(x, 2)


def reciprocal(x):
    return _E.div(1.0, x) if _aval(x).dtype.kind in "fc" else _E.div(1, x)


def exp2(x):
    return _E.power(2.0, x)


def log2(x):
    return _E.div(_E.log(x), math.log(2.0))


def log10(x):
    return _E.div(_E.log(x), math.log(10.0))


def logaddexp(x, y):
    amax = _E.maximum(x, y)
    amax = _S.stop_gradient(where(isfinite(amax), amax, 0.0))
    return _E.add(amax, _E.log(_E.add(_E.exp(_E.sub(x, amax)), _E.exp(_E.sub(y, amax)))))


def hypot(x, y):
    return sqrt(_E.add(_E.mul(x, x), _E.mul(y, y)))


def trunc(x):
    return where(_E.lt(x, 0), _E.ceil(x), _E.floor(x))


fix = trunc


def round(a, decimals=0):
    if decimals >= 0 and _aval(a).dtype.kind in "iu":
        return _S.unchanged(a)  # integers are already rounded (and keep their dtype)
    if decimals == 0:
        return _E.round(a)
    f = 10.0 ** decimals
    return _E.div(_E.round(_E.mul(a, f)), f)


around = round


def clip(a, a_min=None, a_max=None, *, min=None, max=None):
    """Clip values to [min, max] (either bound may be None)."""
    lo = a_min if min is None else min
    hi = a_max if max is None else max
    if lo is None and hi is None:
        raise ValueError("clip: at least one of min and max must be given")
    if lo is not None:
        a = _E.maximum(a, lo)
    if hi is not None:
        a = _E.minimum(a, hi)
    return a


def where(condition, x=None, y=None):
    """Elementwise choice; with one argument, the indices of nonzero entries (eager only)."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("where: either both x and y must be given, or neither")
    c = _aval(condition)
    if c.dtype != _dtypes.bool_:
        condition = _E.ne(condition, 0)
    return _E.select(condition, x, y)


def nonzero(a):
    v = _concrete(a, "nonzero", "a")
    return _np.nonzero(_np.asarray(v))


def heaviside(x1, x2):
    return where(_E.gt(x1, 0), 1.0, where(_E.lt(x1, 0), 0.0, x2))


def sinc(x):
    px = _E.mul(pi, x)
    safe = where(_E.eq(x, 0), 1.0, px)
    return where(_E.eq(x, 0), 1.0, _E.div(_E.sin(safe), safe))


def deg2rad(x):
    return _E.mul(x, pi / 180)


def rad2deg(x):
    return _E.mul(x, 180 / pi)


radians, degrees = deg2rad, rad2deg


def _complex_unsupported(fname, x):
    if _aval(x).dtype.kind == "c":
        if not _is_tracer(x):
            return getattr(_np, fname)(x)
        raise NotImplementedError(
            f"{fname}: complex arrays are not supported under transformations yet "
            f"(got {_aval(x).str_short()})")
    return None


def real(x):
    """Real part (the value itself for real arrays)."""
    out = _complex_unsupported("real", x)
    return _S.unchanged(x) if out is None else out


def conj(x):
    """Complex conjugate (the value itself for real arrays)."""
    out = _complex_unsupported("conj", x)
    return _S.unchanged(x) if out is None else out


conjugate = conj


def astype(x, dtype, copy=False):
    return _S.convert_element_type(x, _np.dtype(dtype))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    out = _E.le(abs(_E.sub(a, b)), _E.add(atol, _E.mul(rtol, abs(b))))
    if equal_nan:
        out = logical_or(out, logical_and(isnan(a), isnan(b)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return all(isclose(a, b, rtol, atol, equal_nan))


# ---------------------------------------------------------------------------
# Reductions


def _axes(axis, nd, fname):
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (int, _np.integer)):
        axis = (int(axis),)
    out = []
    for a in axis:
        a = int(a)
        if not -nd <= a < nd:
            raise ValueError(f"{fname}: axis {a} is out of bounds for an array of rank {nd}")
        out.append(a % nd if nd else a)
    return tuple(sorted(set(out)))


def _reduce(prim_fn, fname, a, axis, keepdims, dtype=None):
    av = _aval(a)
    axes = _axes(axis, av.ndim, fname)
    if dtype is not None:
        a = astype(a, dtype)
    out = prim_fn(a, axes)
    if keepdims:
        out = _S.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(av.shape)))
    return out


_current_trace = _core.current_trace
_EVAL = _core.EVAL_TRACE


def sum(a, axis=None, dtype=None, keepdims=False, initial=None, where=None):
    if type(a) is _np.ndarray and where is None and initial is None and \
            _current_trace() is _EVAL:  # eager fast path
        out = _np.add.reduce(a, axis=axis, dtype=dtype, keepdims=keepdims)
        return out if type(out) is _np.ndarray else _np.asarray(out)
    if where is not None:
        a = _E.select(asarray(where) if not _is_tracer(where) else where, a, 0)
    out = _reduce(_R.reduce_sum, "sum", a, axis, keepdims, dtype)
    return out if initial is None else _E.add(out, initial)


def _eager_reduce(ufunc, a, axis, keepdims, dtype=None):
    out = ufunc.reduce(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return out if type(out) is _np.ndarray else _np.asarray(out)


def prod(a, axis=None, dtype=None, keepdims=False, initial=None):
    if type(a) is _np.ndarray and initial is None and _current_trace() is _EVAL:
        return _eager_reduce(_np.multiply, a, axis, keepdims, dtype)
    out = _reduce(_R.reduce_prod, "prod", a, axis, keepdims, dtype)
    return out if initial is None else _E.mul(out, initial)


def max(a, axis=None, keepdims=False, initial=None):
    if type(a) is _np.ndarray and initial is None and a.size and _current_trace() is _EVAL:
        return _eager_reduce(_np.maximum, a, axis, keepdims)
    _check_nonempty(a, axis, "max")
    out = _reduce(_R.reduce_max, "max", a, axis, keepdims)
    return out if initial is None else _E.maximum(out, initial)


def min(a, axis=None, keepdims=False, initial=None):
    if type(a) is _np.ndarray and initial is None and a.size and _current_trace() is _EVAL:
        return _eager_reduce(_np.minimum, a, axis, keepdims)
    _check_nonempty(a, axis, "min")
    out = _reduce(_R.reduce_min, "min", a, axis, keepdims)
    return out if initial is None else _E.minimum(out, initial)


amax, amin = max, min


def _check_nonempty(a, axis, fname):
    av = _aval(a)
    axes = _axes(axis, av.ndim, fname)
    if builtins.any(av.shape[i] == 0 for i in axes):
        raise ValueError(f"{fname}: zero-size array to reduction operation {fname}, which has "
                         f"no identity (shape {av.shape})")


def all(a, axis=None, keepdims=False):
    return _reduce(lambda x, axes: _R.reduce_and_p.bind(x, axes=axes), "all", a, axis, keepdims)


def any(a, axis=None, keepdims=False):
    return _reduce(lambda x, axes: _R.reduce_or_p.bind(x, axes=axes), "any", a, axis, keepdims)


def mean(a, axis=None, dtype=None, keepdims=False):
    av = _aval(a)
    axes = _axes(axis, av.ndim, "mean")
    n = math.prod(av.shape[i] for i in axes)
    s = sum(a, axis, dtype, keepdims)
    if _aval(s).dtype.kind not in "fc":
        s = astype(s, float64)
    return _E.div(s, float(n)) if n else _E.mul(s, nan)


def var(a, axis=None, dtype=None, ddof=0, keepdims=False):
    av = _aval(a)
    axes = _axes(axis, av.ndim, "var")
    n = math.prod(av.shape[i] for i in axes)
    m = mean(a, axis, dtype, keepdims=True)
    d = _E.sub(a, m)
    s = sum(_E.mul(d, d), axis, dtype, keepdims)
    return _E.div(s, float(n - ddof))


def std(a, axis=None, dtype=None, ddof=0, keepdims=False):
    return sqrt(var(a, axis, dtype, ddof, keepdims))


def _arg(prim, fname, a, axis, keepdims):
    av = _aval(a)
    if axis is None:
        a = ravel(a)
        axis_n = 0
    else:
        axis_n = _axes(axis, av.ndim, fname)[0]
    if _aval(a).shape[axis_n] == 0:
        raise ValueError(f"{fname}: attempt to get {fname} of an empty sequence")
    out = prim.bind(a, axis=axis_n)
    if keepdims:
        shp = [1] * av.ndim if axis is None else [d if i != axis_n else 1
                                                  for i, d in enumerate(av.shape)]
        out = _S.reshape(out, tuple(shp))
    return out


def argmax(a, axis=None, keepdims=False):
    return _arg(_R.argmax_p, "argmax", a, axis, keepdims)


def argmin(a, axis=None, keepdims=False):
    return _arg(_R.argmin_p, "argmin", a, axis, keepdims)


def cumsum(a, axis=None, dtype=None):
    if axis is None:
        a = ravel(a)
        axis = 0
    if dtype is not None:
        a = astype(a, dtype)
    return _R.cumsum(a, _axes(axis, ndim(a), "cumsum")[0])


def count_nonzero(a, axis=None, keepdims=False):
    return sum(astype(_E.ne(a, 0), int64), axis, keepdims=keepdims)


# ---------------------------------------------------------------------------
# Shapes


def reshape(a, shape=None, order="C", *, newshape=None):
    """Reshape; one dimension may be -1."""
    if shape is None:
        shape = newshape
    if isinstance(shape, (int, _np.integer)):
        shape = (int(shape),)
    shape = tuple(int(_concrete(d, "reshape", "shape")) for d in shape)
    n = math.prod(_aval(a).shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: can only specify one unknown dimension (-1), got {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or n % known:
            raise ValueError(f"reshape: cannot reshape array of shape {_aval(a).shape} into "
                             f"shape {shape}")
        shape = tuple(n // known if d == -1 else d for d in shape)
    return _S.reshape(a, shape)


def ravel(a, order="C"):
    return _S.reshape(a, (math.prod(_aval(a).shape),))


def transpose(a, axes=None):
    nd = _aval(a).ndim
    if axes is None:
        axes = tuple(reversed(range(nd)))
    else:
        axes = tuple(int(x) % nd if nd else int(x) for x in axes)
        if sorted(axes) != list(range(nd)):
            raise ValueError(f"transpose: axes {axes} do not match an array of rank {nd}")
    return _S.transpose(a, axes)


def moveaxis(a, source, destination):
    nd = _aval(a).ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    src = [s % nd for s in src]
    dst = [d % nd for d in dst]
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _S.transpose(a, tuple(order))


def swapaxes(a, axis1, axis2):
    nd = _aval(a).ndim
    perm = list(range(nd))
    perm[axis1 % nd], perm[axis2 % nd] = perm[axis2 % nd], perm[axis1 % nd]
    return _S.transpose(a, tuple(perm))


def squeeze(a, axis=None):
    s = _aval(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(s) if d == 1)
    else:
        axes = _axes(axis, len(s), "squeeze")
        for i in axes:
            if s[i] != 1:
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size "
                                 f"not equal to one (axis {i} of shape {s})")
    return _S.reshape(a, tuple(d for i, d in enumerate(s) if i not in axes))


def expand_dims(a, axis):
    s = list(_aval(a).shape)
    axes = [axis] if isinstance(axis, int) else list(axis)
    nd = len(s) + len(axes)
    for ax in sorted(x % nd for x in axes):
        s.insert(ax, 1)
    return _S.reshape(a, tuple(s))


def broadcast_to(a, shape):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _S.broadcast_to(a, shape)


def broadcast_arrays(*args):
    s = broadcast_shapes(*[shape(x) for x in args])
    return [broadcast_to(x, s) for x in args]


def atleast_1d(*arys):
    out = [a if ndim(a) >= 1 else reshape(a, (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        n = ndim(a)
        out.append(a if n >= 2 else reshape(a, (1, 1) if n == 0 else (1,) + shape(a)))
    return out[0] if len(out) == 1 else out


def concatenate(arrays, axis=0, dtype=None):
    arrays = [asarray(a) if not _is_tracer(a) else a for a in arrays]
    if not arrays:
        raise ValueError("concatenate: need at least one array to concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    nd = ndim(arrays[0])
    if nd == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    out = _S.concatenate(arrays, axis % nd)
    return out if dtype is None else astype(out, dtype)


def stack(arrays, axis=0):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack: need at least one array to stack")
    shapes = {shape(a) for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got "
                         f"{[shape(a) for a in arrays]}")
    nd = ndim(arrays[0]) + 1
    ax = axis % nd
    return _S.concatenate([expand_dims(a, ax) for a in arrays], ax)


def hstack(tup):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if ndim(arrs[0]) == 1 else 1)


def vstack(tup):
    return concatenate([atleast_2d(a) for a in tup], 0)


def split(ary, indices_or_sections, axis=0):
    n = shape(ary)[axis]
    if isinstance(indices_or_sections, int):
        if n % indices_or_sections:
            raise ValueError("split: array split does not result in an equal division")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + list(indices_or_sections) + [n]
    return [_I.static_slice(ary, axis % ndim(ary), a, b) for a, b in zip(bounds, bounds[1:])]


def flip(m, axis=None):
    nd = ndim(m)
    axes = _axes(axis, nd, "flip")
    idx = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(nd))
    return _getitem(m, idx)


def tile(a, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    a = asarray(a) if not _is_tracer(a) else a
    s = shape(a)
    nd = builtins.max(len(s), len(reps))
    s = (1,) * (nd - len(s)) + s
    reps = (1,) * (nd - len(reps)) + reps
    a = reshape(a, s)
    # insert a repeat axis before each axis, broadcast, then merge
    inter = []
    for r, d in zip(reps, s):
        inter += [1, d]
    a = reshape(a, tuple(inter))
    target = []
    for r, d in zip(reps, s):
        target += [r, d]
    a = broadcast_to(a, tuple(target))
    return reshape(a, tuple(r * d for r, d in zip(reps, s)))


def repeat(a, repeats, axis=None):
    if not isinstance(repeats, int):
        raise NotImplementedError("repeat: only an integer number of repeats is supported")
    if axis is None:
        a = ravel(a)
        axis = 0
    s = shape(a)
    axis %= len(s)
    a = expand_dims(a, axis + 1)
    tgt = s[:axis + 1] + (repeats,) + s[axis + 1:]
    a = broadcast_to(a, tgt)
    return reshape(a, s[:axis] + (s[axis] * repeats,) + s[axis + 1:])


def diag(v, k=0):
    s = shape(v)
    if len(s) == 1:
        n = s[0] + builtins.abs(k)
        eye_k = _np.eye(n, k=k, dtype=bool)
        rows, cols = _np.nonzero(eye_k)
        z = _np.zeros((n, n), _aval(v).dtype)
        return _I.scatter(z, v, (_I.ARRAY, _I.ARRAY), (rows, cols), "set")
    return diagonal(v, k)


def diagonal(a, offset=0, axis1=0, axis2=1):
    s = shape(a)
    n1, n2 = s[axis1], s[axis2]
    i = _np.arange(builtins.max(0, builtins.min(n1, n2 - offset) if offset >= 0
                                else builtins.min(n1 + offset, n2)))
    rows = i + builtins.max(0, -offset)
    cols = i + builtins.max(0, offset)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    return _I.getitem(a, (Ellipsis, _I.ARRAY, _I.ARRAY), (rows, cols))


def trace(a, offset=0, axis1=0, axis2=1):
    return sum(diagonal(a, offset, axis1, axis2), -1)


def tril(m, k=0):
    s = shape(m)
    mask = _np.tri(s[-2], s[-1], k, dtype=bool)
    return where(mask, m, _np.zeros((), _aval(m).dtype))  # keeps m's dtype (also bool)


def triu(m, k=0):
    s = shape(m)
    mask = ~_np.tri(s[-2], s[-1], k - 1, dtype=bool)
    return where(mask, m, _np.zeros((), _aval(m).dtype))  # keeps m's dtype (also bool)


def take(a, indices, axis=None):
    if axis is None:
        a = ravel(a)
        axis = 0
    nd = ndim(a)
    axis %= nd
    spec = (slice(None),) * axis + (_I.ARRAY,)
    return _I.getitem(a, spec, (asarray(indices) if not _is_tracer(indices) else indices,))


def take_along_axis(arr, indices, axis):
    nd = ndim(arr)
    axis %= nd
    s = shape(indices)
    arrays = []
    spec = []
    for i in range(nd):
        if i == axis:
            arrays.append(indices)
        else:
            shp = [1] * nd
            shp[i] = s[i]
            arrays.append(_np.arange(s[i]).reshape(shp))
        spec.append(_I.ARRAY)
    return _I.getitem(arr, tuple(spec), tuple(arrays))


# ---------------------------------------------------------------------------
# Linear algebra


def matmul(a, b):
    """Matrix product with NumPy's rules for 1-D and batched operands."""
    a_av, b_av = _aval(a), _aval(b)
    an, bn = a_av.ndim, b_av.ndim
    if an == 0 or bn == 0:
        raise ValueError("matmul: input operand does not have enough dimensions (scalars are "
                         "not allowed; use multiply)")
    if an == 1 and bn == 1:
        _check_contract("matmul", a_av.shape, b_av.shape, 0, 0)
        return _C.dot_general(a, b, (((0,), (0,)), ((), ())))
    if an == 1:
        return squeeze(matmul(reshape(a, (1,) + a_av.shape), b), -2)
    if bn == 1:
        _check_contract("matmul", a_av.shape, b_av.shape, an - 1, 0)
        return _C.dot_general(a, b, (((an - 1,), (0,)), ((), ())))
    _check_contract("matmul", a_av.shape, b_av.shape, an - 1, bn - 2)
    if an == 2 and bn == 2:
        return _C.dot_general(a, b, (((1,), (0,)), ((), ())))
    batch = broadcast_shapes(a_av.shape[:-2], b_av.shape[:-2])
    a = broadcast_to(a, batch + a_av.shape[-2:])
    b = broadcast_to(b, batch + b_av.shape[-2:])
    nb = len(batch)
    return _C.dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))))


def _check_contract(fname, sa, sb, ia, ib):
    if sa[ia] != sb[ib]:
        raise ValueError(f"{fname}: shapes {sa} and {sb} are not aligned: dimension {ia} of the "
                         f"first ({sa[ia]}) != dimension {ib} of the second ({sb[ib]})")


def dot(a, b):
    a_av, b_av = _aval(a), _aval(b)
    if a_av.ndim == 0 or b_av.ndim == 0:
        return multiply(a, b)
    if b_av.ndim == 1 or (a_av.ndim <= 2 and b_av.ndim <= 2):
        return matmul(a, b)
    _check_contract("dot", a_av.shape, b_av.shape, a_av.ndim - 1, b_av.ndim - 2)
    return _C.dot_general(a, b, (((a_av.ndim - 1,), (b_av.ndim - 2,)), ((), ())))


def vdot(a, b):
    return dot(ravel(a), ravel(b))


def inner(a, b):
    a_av, b_av = _aval(a), _aval(b)
    if a_av.ndim == 0 or b_av.ndim == 0:
        return multiply(a, b)
    _check_contract("inner", a_av.shape, b_av.shape, a_av.ndim - 1, b_av.ndim - 1)
    return _C.dot_general(a, b, (((a_av.ndim - 1,), (b_av.ndim - 1,)), ((), ())))


def outer(a, b):
    return _C.dot_general(ravel(a), ravel(b), (((), ()), ((), ())))


def tensordot(a, b, axes=2):
    a_av, b_av = _aval(a), _aval(b)
    if isinstance(axes, int):
        ca = tuple(range(a_av.ndim - axes, a_av.ndim))
        cb = tuple(range(axes))
    else:
        ca, cb = axes
        ca = (ca,) if isinstance(ca, int) else tuple(ca)
        cb = (cb,) if isinstance(cb, int) else tuple(cb)
        ca = tuple(i % a_av.ndim for i in ca)
        cb = tuple(i % b_av.ndim for i in cb)
    for i, j in zip(ca, cb):
        _check_contract("tensordot", a_av.shape, b_av.shape, i, j)
    return _C.dot_general(a, b, ((ca, cb), ((), ())))


def einsum(subscripts, *operands, optimize=None, precision=None):
    """Einstein summation over explicit or implicit subscripts (with ``...``)."""
    if not isinstance(subscripts, str):
        raise TypeError("einsum: only the string form of subscripts is supported")
    subs = _normalize_einsum(subscripts.replace(" ", ""), [ndim(o) for o in operands])
    return _C.einsum_explicit(subs, *operands)


def _normalize_einsum(subscripts, ranks):
    if "->" in subscripts:
        ins, out = subscripts.split("->")
        explicit = True
    else:
        ins, out, explicit = subscripts, "", False
    ins = ins.split(",")
    if len(ins) != len(ranks):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(ins)} operands, "
                         f"got {len(ranks)}")
    used = set(subscripts)
    free_letters = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                    if c not in used]
    ell_n = 0
    for s, r in zip(ins, ranks):
        if "..." in s:
            ell_n = builtins.max(ell_n, r - (len(s) - 3))
    ell = "".join(free_letters[:ell_n])
    new_ins = []
    for s, r in zip(ins, ranks):
        if "..." in s:
            k = r - (len(s) - 3)
            s = s.replace("...", ell[ell_n - k:] if k else "")
        if len(s) != r:
            raise ValueError(f"einsum: subscript {s!r} does not match an operand of rank {r}")
        new_ins.append(s)
    if explicit:
        out = out.replace("...", ell)
    else:
        counts = {}
        for s in new_ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return ",".join(new_ins) + "->" + out


# ---------------------------------------------------------------------------
# Indexing


def _is_int_scalar(x):
    return isinstance(x, (int, _np.integer)) and not isinstance(x, (bool, _np.bool_))


def _getitem(x, idx):
    """NumPy indexing: basic slicing, integer arrays, and concrete boolean masks."""
    spec, arrays = _parse_index(x, idx, "indexing")
    if not arrays and not _is_tracer(x):
        return _np.asarray(x)[_I.build_index(spec, ())]
    return _I.getitem(x, spec, arrays)


def _parse_index(x, idx, fname):
    if not isinstance(idx, tuple):
        idx = (idx,)
    spec = []
    arrays = []
    for e in idx:
        if e is None or e is Ellipsis or isinstance(e, slice):
            if isinstance(e, slice):
                e = slice(*(None if v is None else int(_concrete(v, fname, "slice bound"))
                            for v in (e.start, e.stop, e.step)))
            spec.append(e)
        elif _is_int_scalar(e):
            spec.append(int(e))
        elif isinstance(e, (bool, _np.bool_)):
            spec.append(_I.ARRAY)
            arrays.append(_np.asarray(e))
        else:
            if not _is_tracer(e):
                e = _np.asarray(e)
                if e.dtype == object:
                    raise TypeError(f"{fname}: invalid index {e!r:.60}")
            a = _aval(e)
            if a.dtype == _dtypes.bool_:
                try:
                    mask = _np.asarray(_concrete(e, fname, "boolean mask"))
                except _core.ConcretizationTypeError:
                    raise IndexError(
                        f"{fname}: a boolean mask index of shape {a.shape} is traced, so the "
                        "shape of the result is unknown. Boolean masks work outside jit/vmap; "
                        "inside them use tnp.where(mask, x, other) or a fixed-size "
                        "integer index instead.") from None
                for nz in _np.nonzero(mask):
                    spec.append(_I.ARRAY)
                    arrays.append(nz)
                continue
            if a.dtype.kind not in "iu":
                raise IndexError(f"{fname}: indices must be integers, slices, None, Ellipsis or "
                                 f"boolean masks; got an array of dtype {a.dtype}")
            if a.ndim == 0 and not _is_tracer(e):
                spec.append(int(e))
                continue
            spec.append(_I.ARRAY)
            arrays.append(e)
    if builtins.sum(1 for s in spec if s is Ellipsis) > 1:
        raise IndexError(f"{fname}: an index can only have a single ellipsis ('...')")
    if arrays:
        new_spec = []
        extra = []
        it = iter(arrays)
        for s in spec:
            if s is _I.ARRAY:
                new_spec.append(_I.ARRAY)
                extra.append(next(it))
            elif _is_int_scalar(s):
                new_spec.append(_I.ARRAY)
                extra.append(_np.asarray(s))
            else:
                new_spec.append(s)
        spec, arrays = new_spec, extra
    nd = _aval(x).ndim
    consumed = builtins.sum(1 for s in spec if s is not None and s is not Ellipsis)
    if consumed > nd:
        raise IndexError(f"{fname}: too many indices for an array of shape {_aval(x).shape}: "
                         f"{consumed} were indexed")
    return tuple(spec), tuple(arrays)


class _IndexUpdateHelper:
    """``x.at[idx]`` returns an object with ``set/add/multiply/min/max/get``."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.array, idx)


class _IndexUpdateRef:
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def _scatter(self, values, mode):
        spec, arrays = _parse_index(self.array, self.index, f"at[...].{mode}")
        return _I.scatter(self.array, values, spec, arrays, mode)

    def get(self):
        return _getitem(self.array, self.index)

    def set(self, values):
        return self._scatter(values, "set")

    def add(self, values):
        return self._scatter(values, "add")

    def multiply(self, values):
        return self._scatter(values, "mul")

    mul = multiply

    def min(self, values):
        return self._scatter(values, "min")

    def max(self, values):
        return self._scatter(values, "max")

    def subtract(self, values):
        return self._scatter(negative(values), "add")

    def divide(self, values):
        return self._scatter(_E.div(1.0, values), "mul")


def at(x):
    """Functional index updates on any array: ``tnp.at(x)[idx].set(v)``.

    Equivalent to ``x.at[idx].set(v)`` on traced values, for plain NumPy arrays
    (which have no ``.at``).  Returns a new array; ``x`` is not modified.
    """
    return _IndexUpdateHelper(x)


# ---------------------------------------------------------------------------
# Tracer operators and methods


def _install_tracer_methods():
    T = _Tracer

    def rev(f):
        return lambda self, other: f(other, self)

    T.__add__ = lambda s, o: add(s, o)
    T.__radd__ = rev(add)
    T.__sub__ = lambda s, o: subtract(s, o)
    T.__rsub__ = rev(subtract)
    T.__mul__ = lambda s, o: multiply(s, o)
    T.__rmul__ = rev(multiply)
    T.__truediv__ = lambda s, o: divide(s, o)
    T.__rtruediv__ = rev(divide)
    T.__floordiv__ = lambda s, o: floor_divide(s, o)
    T.__rfloordiv__ = rev(floor_divide)
    T.__mod__ = lambda s, o: remainder(s, o)
    T.__rmod__ = rev(remainder)
    T.__pow__ = _pow
    T.__rpow__ = lambda s, o: power(o, s)
    T.__matmul__ = lambda s, o: matmul(s, o)
    T.__rmatmul__ = rev(matmul)
    T.__neg__ = lambda s: negative(s)
    T.__pos__ = lambda s: s
    T.__abs__ = lambda s: abs(s)
    T.__invert__ = lambda s: logical_not(s) if _aval(s).dtype == _dtypes.bool_ else bitwise_not(s)
    T.__eq__ = lambda s, o: equal(s, o)
    T.__ne__ = lambda s, o: not_equal(s, o)
    T.__lt__ = lambda s, o: less(s, o)
    T.__le__ = lambda s, o: less_equal(s, o)
    T.__gt__ = lambda s, o: greater(s, o)
    T.__ge__ = lambda s, o: greater_equal(s, o)
    T.__and__ = lambda s, o: _logic(s, o, logical_and, bitwise_and)
    T.__rand__ = lambda s, o: _logic(o, s, logical_and, bitwise_and)
    T.__or__ = lambda s, o: _logic(s, o, logical_or, bitwise_or)
    T.__ror__ = lambda s, o: _logic(o, s, logical_or, bitwise_or)
    T.__xor__ = lambda s, o: _logic(s, o, logical_xor, bitwise_xor)
    T.__rxor__ = lambda s, o: _logic(o, s, logical_xor, bitwise_xor)
    T.__getitem__ = _getitem
    T.__hash__ = None
    T.T = property(lambda s: transpose(s))
    T.mT = property(lambda s: swapaxes(s, -1, -2))
    T.at = property(lambda s: _IndexUpdateHelper(s))
    T.real = property(lambda s: real(s))
    T.imag = property(lambda s: imag(s))
    T.reshape = lambda s, *shape, order="C": reshape(
        s, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
    T.transpose = lambda s, *axes: transpose(s, axes[0] if len(axes) == 1 and not isinstance(
        axes[0], int) else (axes or None))
    T.astype = lambda s, dtype: astype(s, dtype)
    T.sum = _no_out("sum", lambda s, axis=None, dtype=None, keepdims=False: sum(
        s, axis, dtype, keepdims))
    T.prod = _no_out("prod", lambda s, axis=None, dtype=None, keepdims=False: prod(
        s, axis, dtype, keepdims))
    T.mean = _no_out("mean", lambda s, axis=None, dtype=None, keepdims=False: mean(
        s, axis, dtype, keepdims))
    T.var = _no_out("var", lambda s, axis=None, dtype=None, ddof=0, keepdims=False: var(
        s, axis, dtype, ddof, keepdims))
    T.std = _no_out("std", lambda s, axis=None, dtype=None, ddof=0, keepdims=False: std(
        s, axis, dtype, ddof, keepdims))
    T.max = _no_out("max", lambda s, axis=None, keepdims=False: max(s, axis, keepdims))
    T.min = _no_out("min", lambda s, axis=None, keepdims=False: min(s, axis, keepdims))
    T.argmax = _no_out("argmax", lambda s, axis=None, keepdims=False: argmax(s, axis, keepdims))
    T.argmin = _no_out("argmin", lambda s, axis=None, keepdims=False: argmin(s, axis, keepdims))
    T.all = _no_out("all", lambda s, axis=None, keepdims=False: all(s, axis, keepdims))
    T.any = _no_out("any", lambda s, axis=None, keepdims=False: any(s, axis, keepdims))
    T.cumsum = _no_out("cumsum", lambda s, axis=None, dtype=None: cumsum(s, axis, dtype))
    T.ravel = lambda s: ravel(s)
    T.flatten = lambda s: ravel(s)
    T.squeeze = lambda s, axis=None: squeeze(s, axis)
    T.clip = _no_out("clip", lambda s, min=None, max=None: clip(s, min, max))
    T.dot = lambda s, o: dot(s, o)
    T.round = _no_out("round", lambda s, decimals=0: round(s, decimals))
    T.conj = lambda s: conj(s)
    T.copy = lambda s: s
    T.swapaxes = lambda s, a, b: swapaxes(s, a, b)
    T.trace = lambda s, offset=0, axis1=0, axis2=1: trace(s, offset, axis1, axis2)
    T.diagonal = lambda s, offset=0, axis1=0, axis2=1: diagonal(s, offset, axis1, axis2)


def _no_out(name, method):
    """Accept NumPy's ``out=None`` (``np.sum(tracer)`` calls ``tracer.sum(..., out=None)``)."""
    def wrapped(self, *args, out=None, **kwargs):
        if out is not None:
            raise TypeError(f"{name}: the 'out' argument is not supported (traced arrays are "
                            "immutable); use the returned value instead")
        return method(self, *args, **kwargs)
    wrapped.__name__ = name
    return wrapped


def _pow(x, y):
    if _is_int_scalar(y) and not _is_tracer(y):
        return _E.integer_pow(x, int(y))
    return power(x, y)


def _logic(x, y, logical, bitwise):
    if _aval(x).dtype == _dtypes.bool_ and _aval(y).dtype == _dtypes.bool_:
        return logical(x, y)
    return bitwise(x, y)


_install_tracer_methods()

from . import linalg  # noqa: E402,F401


# ===========================================================================
# More of NumPy's API: sorting and searching, cumulative products, shifting
# and padding, grids and products, interpolation and convolution, statistics
# (averages, covariances, medians and quantiles), NaN-aware reductions and
# eager-only functions whose result shape depends on values.

from ..primitives import misc as _M  # noqa: E402
from ..primitives import sorting as _SO  # noqa: E402


def _in(a, fname, argname="a"):
    """An array argument: tracers as they are, anything else as an ndarray."""
    if _is_tracer(a):
        return a
    if isinstance(a, (list, tuple)) and builtins.any(_is_tracer(x) for x in _flat_seq(a)):
        return asarray(a)
    return _core.as_array(a, f"{fname}: argument '{argname}'")


def _eager(*arrays):
    """True outside every transformation, with no traced argument."""
    return _current_trace() is _EVAL and not builtins.any(_is_tracer(a) for a in arrays)


def _axis(axis, a, fname, argname="a"):
    """One axis of ``a``, normalized, with an error naming the function."""
    nd = ndim(a)
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{fname}: argument 'axis' must be an integer or None, got "
                        f"{axis!r}") from None
    if not -nd <= ax < nd:
        raise ValueError(f"{fname}: axis {ax} is out of bounds for argument '{argname}' of "
                         f"shape {shape(a)} (rank {nd})")
    return ax % nd


def _inexact(a):
    """``a`` as an inexact array (integers and booleans become float64)."""
    return a if _aval(a).dtype.kind in "fc" else astype(a, float64)


# ---------------------------------------------------------------------------
# Sorting and searching


def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Sorted copy of ``a`` (always stable); differentiable: the tangent of each
    sorted entry is that of the input entry that landed there."""
    if order is not None:
        raise NotImplementedError("sort: the 'order' argument (structured arrays) is not "
                                  "supported")
    a = _in(a, "sort")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a, "sort")
    out = _SO.sort(a, ax)
    return flip(out, ax) if descending else out


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Indices that sort ``a`` along ``axis`` (stable; zero derivative)."""
    if order is not None:
        raise NotImplementedError("argsort: the 'order' argument (structured arrays) is not "
                                  "supported")
    a = _in(a, "argsort")
    if axis is None:
        a, axis = ravel(a), 0
    return _SO.argsort(a, _axis(axis, a, "argsort"), descending)


def partition(a, kth, axis=-1):
    """Like NumPy's: entry ``kth`` is in sorted position, smaller ones before it
    and larger ones after (here the whole axis is sorted)."""
    a = _in(a, "partition")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a, "partition")
    _check_kth(kth, shape(a)[ax], "partition")
    return _SO.sort(a, ax)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a`` (here: that sort it along ``axis``)."""
    a = _in(a, "argpartition")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a, "argpartition")
    _check_kth(kth, shape(a)[ax], "argpartition")
    return _SO.argsort(a, ax)


def _check_kth(kth, n, fname):
    ks = _np.atleast_1d(_np.asarray(_concrete(kth, fname, "kth")))
    if ks.dtype.kind not in "iu":
        raise TypeError(f"{fname}: argument 'kth' must be an integer or integers, got {kth!r}")
    if ks.size and (ks.min() < -n or ks.max() >= n):
        raise ValueError(f"{fname}: kth={kth!r} is out of bounds for an axis of size {n}")


def lexsort(keys, axis=-1):
    """Indices sorting by several keys; the last key is the primary one."""
    keys = [_in(k, "lexsort", f"keys[{i}]") for i, k in enumerate(keys)]
    if not keys:
        raise TypeError("lexsort: argument 'keys' needs at least one key")
    s = shape(keys[0])
    if builtins.any(shape(k) != s for k in keys):
        raise ValueError(f"lexsort: all keys need to be the same shape, got "
                         f"{[shape(k) for k in keys]}")
    ax = _axis(axis, keys[0], "lexsort", "keys")
    perm = broadcast_to(_np.arange(s[ax]).reshape([-1 if i == ax else 1 for i in range(len(s))]),
                        s)
    for k in keys:  # least significant first; each sort is stable
        perm = take_along_axis(perm, _SO.argsort(take_along_axis(k, perm, ax), ax), ax)
    return perm


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Indices where ``v`` would be inserted into the sorted 1-D ``a`` (zero derivative)."""
    a = _in(a, "searchsorted", "a")
    v = _in(v, "searchsorted", "v")
    if ndim(a) != 1:
        raise ValueError(f"searchsorted: argument 'a' must be 1-D, got shape {shape(a)}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: argument 'side' must be 'left' or 'right', got {side!r}")
    if sorter is not None:
        a = take(a, sorter)
    return _SO.searchsorted(a, v, side)


def digitize(x, bins, right=False):
    """Indices of the bins (monotonic, increasing or decreasing) holding ``x``."""
    x = _in(x, "digitize", "x")
    bins = _in(bins, "digitize", "bins")
    if ndim(bins) != 1:
        raise ValueError(f"digitize: argument 'bins' must be 1-D, got shape {shape(bins)}")
    n = shape(bins)[0]
    if n == 0:
        return _np.zeros(shape(x), int64) if not _is_tracer(x) else astype(x, int64) * 0
    side = "left" if right else "right"
    inc = _SO.searchsorted(bins, x, side)
    dec = _E.sub(n, _SO.searchsorted(flip(bins), x, "right" if right else "left"))
    if not _is_tracer(bins):
        return inc if bins[-1] >= bins[0] else dec
    return where(_E.ge(bins[-1], bins[0]), inc, dec)


# ---------------------------------------------------------------------------
# Cumulative operations


def _cum_prep(a, axis, dtype, fname):
    a = _in(a, fname)
    if axis is None:
        a, axis = ravel(a), 0
    if dtype is not None:
        a = astype(a, dtype)
    return a, _axis(axis, a, fname)


def cumprod(a, axis=None, dtype=None):
    """Cumulative product; differentiable (exactly, also where ``a`` has zeros)."""
    a, ax = _cum_prep(a, axis, dtype, "cumprod")
    return _M.cumprod(a, ax)


def cummax(a, axis=None, reverse=False):
    """Running maximum along ``axis`` (NumPy's ``maximum.accumulate``)."""
    a, ax = _cum_prep(a, axis, None, "cummax")
    return _M.cummax(a, ax, reverse)


def cummin(a, axis=None, reverse=False):
    """Running minimum along ``axis`` (NumPy's ``minimum.accumulate``)."""
    a, ax = _cum_prep(a, axis, None, "cummin")
    return _M.cummin(a, ax, reverse)


def _cumulative_api(fname, fn, initial):
    def f(x, /, *, axis=None, dtype=None, include_initial=False):
        x = _in(x, fname, "x")
        if axis is None:
            if ndim(x) > 1:
                raise ValueError(f"{fname}: argument 'axis' must be given for an array of rank "
                                 f"{ndim(x)}")
            if ndim(x) == 0:
                raise ValueError(f"{fname}: argument 'x' must have at least one dimension")
            axis = 0
        ax = _axis(axis, x, fname, "x")
        out = fn(x, ax, dtype)
        if include_initial:
            s = list(shape(out))
            s[ax] = 1
            out = concatenate([_np.full(s, initial, _aval(out).dtype), out], ax)
        return out
    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"NumPy 2's ``{fname}`` (the array API's cumulative function)."
    return f


cumulative_sum = _cumulative_api("cumulative_sum", lambda x, ax, dt: cumsum(x, ax, dt), 0)
cumulative_prod = _cumulative_api("cumulative_prod", lambda x, ax, dt: cumprod(x, ax, dt), 1)


def _nan_to(a, value):
    return where(isnan(a), value, a) if _aval(a).dtype.kind in "fc" else a


def nancumsum(a, axis=None, dtype=None):
    return cumsum(_nan_to(_in(a, "nancumsum"), 0), axis, dtype)


def nancumprod(a, axis=None, dtype=None):
    return cumprod(_nan_to(_in(a, "nancumprod"), 1), axis, dtype)


# ---------------------------------------------------------------------------
# Differences, shifts and padding


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """n-th discrete difference along ``axis``."""
    a = _in(a, "diff")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: argument 'n' (the order) must be non-negative, got {n}")
    if ndim(a) == 0:
        raise ValueError("diff: argument 'a' must be at least one-dimensional")
    ax = _axis(axis, a, "diff")
    if n == 0:
        return _S.unchanged(a)
    parts = []
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            parts.append(None)
            continue
        extra = _in(extra, "diff", name)
        if ndim(extra) == 0:
            s = list(shape(a))
            s[ax] = 1
            extra = broadcast_to(extra, tuple(s))
        parts.append(extra)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], ax)
    is_bool = _aval(a).dtype == _dtypes.bool_
    for _ in range(n):
        m = shape(a)[ax]
        hi, lo = _I.static_slice(a, ax, 1, m), _I.static_slice(a, ax, 0, builtins.max(m - 1, 0))
        a = _E.ne(hi, lo) if is_bool else _E.sub(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive entries of the flattened ``ary``."""
    ary = ravel(_in(ary, "ediff1d", "ary"))
    n = shape(ary)[0]
    d = _E.sub(_I.static_slice(ary, 0, 1, n), _I.static_slice(ary, 0, 0, builtins.max(n - 1, 0)))
    dt = _aval(ary).dtype
    parts = []
    if to_begin is not None:
        parts.append(astype(ravel(_in(to_begin, "ediff1d", "to_begin")), dt))
    parts.append(d)
    if to_end is not None:
        parts.append(astype(ravel(_in(to_end, "ediff1d", "to_end")), dt))
    return concatenate(parts) if len(parts) > 1 else d


def roll(a, shift, axis=None):
    """Roll entries along ``axis`` (the flattened array if None); ``shift`` may be traced."""
    a = _in(a, "roll")
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape(a))
    shifts = tuple(shift) if isinstance(shift, (list, tuple)) else (shift,)
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("roll: arguments 'shift' and 'axis' must be scalars or sequences of "
                         f"the same length, got {len(shifts)} shifts and {len(axes)} axes")
    axes = tuple(_axis(ax, a, "roll") for ax in axes)
    if _eager(a, *shifts):
        return _np.asarray(_np.roll(a, shifts, axes))
    for sh, ax in zip(shifts, axes):
        n = shape(a)[ax]
        if n == 0:
            continue
        if _is_tracer(sh):
            if _aval(sh).dtype.kind not in "iu" or ndim(sh) != 0:
                raise TypeError(f"roll: argument 'shift' must be an integer scalar, got "
                                f"{_aval(sh).str_short()}")
            a = take(a, _E.remainder(_E.sub(_np.arange(n), sh), n), axis=ax)
            continue
        k = operator.index(sh) % n
        if k:
            a = concatenate([_I.static_slice(a, ax, n - k, n), _I.static_slice(a, ax, 0, n - k)],
                            ax)
    return a


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    m = _in(m, "rot90", "m")
    if len(axes) != 2:
        raise ValueError("rot90: argument 'axes' must name exactly 2 axes")
    a0, a1 = _axis(axes[0], m, "rot90", "m"), _axis(axes[1], m, "rot90", "m")
    if a0 == a1:
        raise ValueError("rot90: argument 'axes' must name two different axes")
    k = operator.index(k) % 4
    if k == 0:
        return _S.unchanged(m)
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(ndim(m)))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


_PAD_KWARGS = {"constant": ("constant_values",), "edge": (), "reflect": ("reflect_type",),
               "symmetric": ("reflect_type",), "wrap": (), "empty": (),
               "linear_ramp": ("end_values",), "maximum": ("stat_length",),
               "minimum": ("stat_length",), "mean": ("stat_length",),
               "median": ("stat_length",)}


def _pairs(x, nd, argname, as_index=False):
    """NumPy's (before, after) pair per axis from a scalar, a pair or one pair per axis."""
    if _is_tracer(x):
        s = shape(x)
        if math.prod(s) == 1:
            v = reshape(x, ())
            return ((v, v),) * nd
        if math.prod(s) == 2 and s != (2, 1):
            v = ravel(x)
            return ((v[0], v[1]),) * nd
        try:
            b = broadcast_to(x, (nd, 2))
        except ValueError:
            raise ValueError(f"pad: argument '{argname}' of shape {s} cannot be broadcast to "
                             f"({nd}, 2), one (before, after) pair per axis") from None
        return tuple((b[i, 0], b[i, 1]) for i in range(nd))
    try:
        arr = _np.asarray(x)
    except _core.TracerArrayConversionError:
        arr = asarray(x)
        return _pairs(arr, nd, argname, as_index)
    if as_index:
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"pad: argument '{argname}' must contain integers, got {x!r}")
        arr = _np.round(arr).astype(_np.intp)
        if arr.size and arr.min() < 0:
            raise ValueError(f"pad: argument '{argname}' can't contain negative values, got "
                             f"{x!r}")
    if arr.size == 1:
        v = arr.ravel()[0]
        return ((v, v),) * nd
    if arr.size == 2 and arr.shape != (2, 1):
        v = arr.ravel()
        return ((v[0], v[1]),) * nd
    try:
        b = _np.broadcast_to(arr, (nd, 2))
    except ValueError:
        raise ValueError(f"pad: argument '{argname}' of shape {arr.shape} cannot be broadcast to "
                         f"({nd}, 2), one (before, after) pair per axis") from None
    return tuple((b[i, 0], b[i, 1]) for i in range(nd))


def _block_shape(a, ax, width):
    s = list(shape(a))
    s[ax] = width
    return tuple(s)


def _fill_block(a, ax, width, value):
    """A block of ``width`` entries along ``ax`` filled with ``value`` (cast to a's dtype)."""
    dt = _aval(a).dtype
    s = _block_shape(a, ax, width)
    if _is_tracer(value):
        return broadcast_to(astype(value, dt), s)
    return _np.full(s, value, dt)


def _stat_pad(a, ax, b, c, lengths, mode):
    stat = {"maximum": max, "minimum": min, "mean": mean, "median": median}[mode]
    n = shape(a)[ax]
    dt = _aval(a).dtype
    out = []
    for width, length, before in ((b, lengths[0], True), (c, lengths[1], False)):
        if width == 0:
            out.append(None)
            continue
        k = n if length is None else int(length)
        if k <= 0:
            raise ValueError("pad: argument 'stat_length' of 0 yields no value for padding")
        k = builtins.min(k, n)
        region = _I.static_slice(a, ax, 0, k) if before else _I.static_slice(a, ax, n - k, n)
        v = stat(region, axis=ax, keepdims=True)
        if dt.kind in "iub" and mode in ("mean", "median"):
            v = astype(round(v), dt)
        out.append(broadcast_to(v, _block_shape(a, ax, width)))
    return out


def _ramp_pad(a, ax, b, c, ends):
    n = shape(a)[ax]
    dt = _aval(a).dtype
    out = []
    for width, end, before in ((b, ends[0], True), (c, ends[1], False)):
        if width == 0:
            out.append(None)
            continue
        edge = _I.static_slice(a, ax, 0, 1) if before else _I.static_slice(a, ax, n - 1, n)
        k = _np.arange(width, dtype=float64)
        w = k / width if before else (width - 1 - k) / width
        w = w.reshape([width if i == ax else 1 for i in range(ndim(a))])
        edge = _inexact(edge)
        v = _E.add(end, _E.mul(_E.sub(edge, end), w))
        if dt.kind in "iub":
            v = astype(floor(v), dt)
        elif _aval(v).dtype != dt:
            v = astype(v, dt)
        out.append(broadcast_to(v, _block_shape(a, ax, width)))
    return out


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (NumPy's modes; values such as ``constant_values`` may be traced)."""
    if callable(mode):
        raise NotImplementedError("pad: a function as argument 'mode' is not supported")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"pad: unknown mode {mode!r} for argument 'mode'; expected one of "
                         f"{', '.join(repr(m) for m in _PAD_KWARGS)}")
    bad = sorted(set(kwargs) - set(_PAD_KWARGS[mode]))
    if bad:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{', '.join(bad)}")
    a = _in(array, "pad", "array")
    nd = ndim(a)
    if _is_tracer(pad_width):
        pad_width = _concrete(pad_width, "pad", "pad_width")
    widths = [(int(b), int(c)) for b, c in _pairs(pad_width, nd, "pad_width", as_index=True)]
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: argument 'reflect_type' must be 'even' or 'odd', got "
                         f"{reflect_type!r}")
    for ax, (b, c) in enumerate(widths):
        if (b or c) and shape(a)[ax] == 0 and mode not in ("constant", "empty"):
            raise ValueError(f"pad: can't extend empty axis {ax} of argument 'array' using mode "
                             f"{mode!r} (only 'constant' and 'empty' can)")
    if _eager(a, *kwargs.values()):
        return _np.pad(a, widths, mode, **kwargs)
    if mode in ("constant", "empty"):
        values = _pairs(kwargs.get("constant_values", 0), nd, "constant_values")
    elif mode == "linear_ramp":
        values = _pairs(kwargs.get("end_values", 0), nd, "end_values")
    elif mode in ("maximum", "minimum", "mean", "median"):
        values = _pairs(kwargs.get("stat_length"), nd, "stat_length") \
            if kwargs.get("stat_length") is not None else ((None, None),) * nd
    for ax, (b, c) in enumerate(widths):
        if b == 0 and c == 0:
            continue
        n = shape(a)[ax]
        if mode in ("edge", "wrap") or (mode in ("reflect", "symmetric")
                                         and reflect_type == "even"):
            idx = _np.pad(_np.arange(n), (b, c), mode=mode)
            a = take(a, idx, axis=ax)
            continue
        if mode in ("reflect", "symmetric"):  # odd reflection: linear, but not a gather
            P = _np.pad(_np.eye(n), ((b, c), (0, 0)), mode=mode, reflect_type="odd")
            out = _C.dot_general(P, _inexact(a), (((1,), (ax,)), ((), ())))
            out = moveaxis(out, 0, ax)
            dt = _aval(a).dtype
            a = astype(round(out) if dt.kind in "iub" else out, dt)
            continue
        if mode in ("constant", "empty"):
            before = _fill_block(a, ax, b, 0 if mode == "empty" else values[ax][0]) if b else None
            after = _fill_block(a, ax, c, 0 if mode == "empty" else values[ax][1]) if c else None
        elif mode == "linear_ramp":
            before, after = _ramp_pad(a, ax, b, c, values[ax])
        else:
            before, after = _stat_pad(a, ax, b, c, values[ax], mode)
        a = concatenate([p for p in (before, a, after) if p is not None], ax)
    return a


# ---------------------------------------------------------------------------
# Grids, stacking and products


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
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


def atleast_3d(*arys):
    out = []
    for a in arys:
        a = _in(a, "atleast_3d", "arys")
        n = ndim(a)
        if n == 0:
            a = reshape(a, (1, 1, 1))
        elif n == 1:
            a = reshape(a, (1,) + shape(a) + (1,))
        elif n == 2:
            a = reshape(a, shape(a) + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def column_stack(tup):
    """Stack 1-D arrays as columns (2-D arrays are stacked as they are)."""
    arrs = []
    for i, a in enumerate(tup):
        a = _in(a, "column_stack", f"tup[{i}]")
        if ndim(a) < 2:
            a = reshape(a, (-1, 1))
        arrs.append(a)
    return concatenate(arrs, 1)


def dstack(tup):
    """Stack along the third axis."""
    return concatenate([atleast_3d(_in(a, "dstack", f"tup[{i}]")) for i, a in enumerate(tup)], 2)


def append(arr, values, axis=None):
    arr = _in(arr, "append", "arr")
    values = _in(values, "append", "values")
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def delete(arr, obj, axis=None):
    """Drop the entries ``obj`` (static indices, a slice or a boolean mask) along ``axis``."""
    arr = _in(arr, "delete", "arr")
    if axis is None:
        arr, axis = ravel(arr), 0
    ax = _axis(axis, arr, "delete", "arr")
    if _is_tracer(obj):
        obj = _concrete(obj, "delete", "obj")
    keep = _np.delete(_np.arange(shape(arr)[ax]), obj)
    return take(arr, keep, axis=ax)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (or 2-vectors) along the given axes, broadcasting."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _in(a, "cross", "a")
    b = _in(b, "cross", "b")
    a = moveaxis(a, _axis(axisa, a, "cross", "a"), -1)
    b = moveaxis(b, _axis(axisb, b, "cross", "b"), -1)
    na, nb = shape(a)[-1], shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must be 2 "
                         f"or 3), got {na} for argument 'a' and {nb} for argument 'b'")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    z = _E.sub(_E.mul(a0, b1), _E.mul(a1, b0))
    if na == 2 and nb == 2:
        return z
    zero = _np.zeros((), _aval(z).dtype)
    a2 = a[..., 2] if na == 3 else zero
    b2 = b[..., 2] if nb == 3 else zero
    x = _E.sub(_E.mul(a1, b2), _E.mul(a2, b1))
    y = _E.sub(_E.mul(a2, b0), _E.mul(a0, b2))
    x, y, z = broadcast_arrays(x, y, z)
    out = stack([x, y, z], -1)
    return moveaxis(out, -1, _axis(axisc, out, "cross", "c (the result)"))


def kron(a, b):
    """Kronecker product."""
    a = _in(a, "kron", "a")
    b = _in(b, "kron", "b")
    nd = builtins.max(ndim(a), ndim(b))
    sa = (1,) * (nd - ndim(a)) + shape(a)
    sb = (1,) * (nd - ndim(b)) + shape(b)
    ia, ib = [], []
    for x, y in zip(sa, sb):
        ia += [x, 1]
        ib += [1, y]
    out = _E.mul(reshape(a, tuple(ia)), reshape(b, tuple(ib)))
    return reshape(out, tuple(x * y for x, y in zip(sa, sb)))


def vander(x, N=None, increasing=False):
    """Vandermonde matrix (powers computed by exact cumulative products)."""
    x = _in(x, "vander", "x")
    if ndim(x) != 1:
        raise ValueError(f"vander: argument 'x' must be 1-D, got shape {shape(x)}")
    n = shape(x)[0]
    N = n if N is None else operator.index(N)
    if N < 0:
        raise ValueError(f"vander: argument 'N' must be non-negative, got {N}")
    dt = _np.promote_types(_aval(x).dtype, int64)
    x = astype(x, dt)
    if N == 0:
        return _np.zeros((n, 0), dt)
    cols = concatenate([_np.ones((n, 1), dt), broadcast_to(reshape(x, (n, 1)), (n, N - 1))], 1)
    out = _M.cumprod(cols, 1)
    return out if increasing else flip(out, 1)


def tri(N, M=None, k=0, dtype=None):
    return _np.tri(N, M, k, dtype=dtype or float64)


def tril_indices(n, k=0, m=None):
    return _np.tril_indices(n, k, m)


def triu_indices(n, k=0, m=None):
    return _np.triu_indices(n, k, m)


def diag_indices(n, ndim=2):
    return _np.diag_indices(n, ndim)


def indices(dimensions, dtype=int64, sparse=False):
    return _np.indices(dimensions, dtype, sparse)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    x = _in(x, "matrix_transpose", "x")
    if ndim(x) < 2:
        raise ValueError(f"matrix_transpose: argument 'x' must have at least 2 dimensions, got "
                         f"shape {shape(x)}")
    return swapaxes(x, -1, -2)


def vecdot(x1, x2, /, *, axis=-1):
    """Dot product of vectors along ``axis``, broadcasting the other axes."""
    x1 = _in(x1, "vecdot", "x1")
    x2 = _in(x2, "vecdot", "x2")
    a1, a2 = _axis(axis, x1, "vecdot", "x1"), _axis(axis, x2, "vecdot", "x2")
    if shape(x1)[a1] != shape(x2)[a2]:
        raise ValueError(f"vecdot: arguments 'x1' and 'x2' must have the same size along axis "
                         f"{axis}, got shapes {shape(x1)} and {shape(x2)}")
    return sum(_E.mul(moveaxis(x1, a1, -1), moveaxis(x2, a2, -1)), -1)


# ---------------------------------------------------------------------------
# Elementwise extras


signbit = _M.signbit
copysign = _M.copysign


def fmax(x1, x2):
    """Elementwise maximum that ignores NaNs (NaN only if both are NaN)."""
    if _eager(x1, x2):
        return _np.asarray(_np.fmax(x1, x2))
    m = _E.maximum(x1, x2)
    return where(isnan(x2), x1, where(isnan(x1), x2, m))


def fmin(x1, x2):
    """Elementwise minimum that ignores NaNs (NaN only if both are NaN)."""
    if _eager(x1, x2):
        return _np.asarray(_np.fmin(x1, x2))
    m = _E.minimum(x1, x2)
    return where(isnan(x2), x1, where(isnan(x1), x2, m))


def logaddexp2(x1, x2):
    """log2(2**x1 + 2**x2), computed stably."""
    if _eager(x1, x2):
        return _np.asarray(_np.logaddexp2(x1, x2))
    amax = _E.maximum(x1, x2)
    amax = _S.stop_gradient(where(isfinite(amax), amax, 0.0))
    return _E.add(amax, log2(_E.add(exp2(_E.sub(x1, amax)), exp2(_E.sub(x2, amax)))))


def ldexp(x1, x2):
    """x1 * 2**x2."""
    if _eager(x1, x2):
        return _np.asarray(_np.ldexp(x1, x2))
    return _E.mul(x1, exp2(astype(x2, _aval(_inexact(x1)).dtype)))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities by finite numbers."""
    x = _in(x, "nan_to_num", "x")
    dt = _aval(x).dtype
    if dt.kind not in "fc":
        return _S.unchanged(x)
    if _eager(x, nan, posinf, neginf):
        return _np.asarray(_np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf))
    info = _np.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(isnan(x), astype(nan, dt), x)
    out = where(_E.and_p.bind(isinf(x), _E.gt(x, 0)), astype(posinf, dt), out)
    return where(_E.and_p.bind(isinf(x), _E.lt(x, 0)), astype(neginf, dt), out)


def isscalar(element):
    """True for Python and NumPy scalars and 0-d arrays (traced or not), as in JAX."""
    if _np.isscalar(element):
        return True
    if isinstance(element, (_np.ndarray, _Tracer)):
        return ndim(element) == 0
    return False


def array_equal(a1, a2, equal_nan=False):
    """True (as a 0-d array) if both arrays have the same shape and entries."""
    a1 = _in(a1, "array_equal", "a1")
    a2 = _in(a2, "array_equal", "a2")
    if shape(a1) != shape(a2):
        return _np.asarray(False)
    eq = _E.eq(a1, a2)
    if equal_nan and _aval(a1).dtype.kind in "fc" and _aval(a2).dtype.kind in "fc":
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return all(eq)


def array_equiv(a1, a2):
    """True (as a 0-d array) if both arrays broadcast together and are equal."""
    a1 = _in(a1, "array_equiv", "a1")
    a2 = _in(a2, "array_equiv", "a2")
    try:
        broadcast_shapes(shape(a1), shape(a2))
    except ValueError:
        return _np.asarray(False)
    return all(_E.eq(a1, a2))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each entry of ``element`` is in ``test_elements``."""
    element = _in(element, "isin", "element")
    test = ravel(_in(test_elements, "isin", "test_elements"))
    if _eager(element, test):
        return _np.asarray(_np.isin(element, test, invert=invert))
    hit = any(_E.eq(reshape(element, shape(element) + (1,)), test), -1)
    return logical_not(hit) if invert else hit


# ---------------------------------------------------------------------------
# Ranges


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
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


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers spaced evenly on a log scale, from ``start`` to ``stop`` (same sign)."""
    num = int(_concrete(num, "geomspace", "num"))
    if num < 0:
        raise ValueError(f"geomspace: argument 'num' must be non-negative, got {num}")
    if _eager(start, stop):
        return _np.asarray(_np.geomspace(start, stop, num, endpoint, dtype, axis))
    start = _inexact(_in(start, "geomspace", "start"))
    stop = _inexact(_in(stop, "geomspace", "stop"))
    sign_ = _S.stop_gradient(sign(start))
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


# ---------------------------------------------------------------------------
# Choosing between values


def select(condlist, choicelist, default=0):
    """The entry of the first true condition's choice (``default`` where none holds)."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: arguments 'condlist' and 'choicelist' must have the same "
                         f"length, got {len(condlist)} and {len(choicelist)}")
    if not condlist:
        raise ValueError("select: argument 'condlist' is empty; select needs at least one "
                         "condition")
    conds = [_in(c, "select", f"condlist[{i}]") for i, c in enumerate(condlist)]
    for i, c in enumerate(conds):
        if _aval(c).dtype != _dtypes.bool_:
            raise TypeError(f"select: condlist[{i}] must be a boolean array, got "
                            f"{_aval(c).str_short()}")
    choices = [_in(c, "select", f"choicelist[{i}]") for i, c in enumerate(choicelist)]
    if _eager(*conds, *choices, default):
        return _np.asarray(_np.select(conds, choices, default))
    out = default
    for c, v in reversed(list(zip(conds, choices))):
        out = where(c, v, out)
    s = broadcast_shapes(*[shape(x) for x in conds + choices], shape(default))
    return broadcast_to(out, s)


def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluate ``funclist[i]`` where ``condlist[i]`` holds (later conditions win; an
    extra last function applies where none holds).  Under transformations every
    function is evaluated on all of ``x``."""
    x = _in(x, "piecewise", "x")
    nd = ndim(x)
    if _is_tracer(condlist) or isinstance(condlist, (bool, _np.bool_)) or (
            isinstance(condlist, _np.ndarray) and condlist.ndim == nd and nd > 0) or (
            isinstance(condlist, (list, tuple)) and condlist
            and not isinstance(condlist[0], (list, tuple, _np.ndarray, _Tracer)) and nd != 0):
        condlist = [condlist]
    conds = []
    for i, c in enumerate(condlist):
        c = _in(c, "piecewise", f"condlist[{i}]")
        if _aval(c).dtype != _dtypes.bool_:
            raise TypeError(f"piecewise: condlist[{i}] must be a boolean array, got "
                            f"{_aval(c).str_short()}")
        conds.append(c)
    n = len(conds)
    funclist = list(funclist)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"piecewise: with {n} condition(s) argument 'funclist' must have {n} or "
                         f"{n + 1} functions, got {len(funclist)}")
    if len(funclist) == n + 1:
        none = logical_not(any(stack(broadcast_arrays(*conds)), 0)) if n else \
            _np.ones(shape(x), bool)
        conds.append(none)
    if _eager(x, *conds):
        return _np.asarray(_np.piecewise(x, conds, funclist, *args, **kw))
    dt = _aval(x).dtype
    out = _np.zeros(shape(x), dt)
    for c, f in zip(conds, funclist):
        v = f(x, *args, **kw) if callable(f) else f
        out = where(c, astype(v, dt) if _is_tracer(v) or isinstance(v, _np.ndarray) else v, out)
    return astype(broadcast_to(out, shape(x)), dt)


# ---------------------------------------------------------------------------
# Polynomials, convolution and interpolation


def polyval(p, x, *, unroll=16):
    """Evaluate the polynomial with coefficients ``p`` (highest degree first) at ``x``."""
    p = _in(p, "polyval", "p")
    x = _in(x, "polyval", "x")
    if ndim(p) < 1:
        raise ValueError("polyval: argument 'p' must be an array of coefficients, got a "
                         "scalar")
    if _eager(p, x):
        return _np.asarray(_np.polyval(p, x))
    y = _np.zeros(shape(x), _aval(x).dtype)
    for i in range(shape(p)[0]):
        y = _E.add(_E.mul(y, x), p[i])
    return y


def _conv_inputs(a, v, mode, fname):
    a = _in(a, fname, "a")
    v = _in(v, fname, "v")
    for name, arr in (("a", a), ("v", v)):
        if ndim(arr) != 1:
            raise ValueError(f"{fname}: argument '{name}' must be 1-D, got shape {shape(arr)}")
        if shape(arr)[0] == 0:
            raise ValueError(f"{fname}: argument '{name}' cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{fname}: argument 'mode' must be 'full', 'same' or 'valid', got "
                         f"{mode!r}")
    return a, v


def _full_convolution(a, v):
    """Full 1-D convolution as a gather of sliding windows and a matrix-vector product."""
    n, m = shape(a)[0], shape(v)[0]
    zeros_ = _np.zeros(m - 1, _aval(a).dtype)
    ap = concatenate([zeros_, a, zeros_]) if m > 1 else a
    windows = take(ap, _np.arange(n + m - 1)[:, None] + _np.arange(m)[None, :])
    return matmul(windows, flip(v))


def _conv_mode(full, n, m, mode, start_same):
    L, mn = builtins.max(n, m), builtins.min(n, m)
    if mode == "full":
        return full
    if mode == "same":
        return _I.static_slice(full, 0, start_same, start_same + L)
    return _I.static_slice(full, 0, mn - 1, L)


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """1-D discrete convolution (modes 'full', 'same' and 'valid')."""
    a, v = _conv_inputs(a, v, mode, "convolve")
    if _eager(a, v):
        return _np.asarray(_np.convolve(a, v, mode))
    n, m = shape(a)[0], shape(v)[0]
    return _conv_mode(_full_convolution(a, v), n, m, mode, (builtins.min(n, m) - 1) // 2)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """1-D cross-correlation (modes 'full', 'same' and 'valid')."""
    a, v = _conv_inputs(a, v, mode, "correlate")
    if _eager(a, v):
        return _np.asarray(_np.correlate(a, v, mode))
    n, m = shape(a)[0], shape(v)[0]
    start = (builtins.min(n, m) - 1) // 2 if m <= n else n // 2
    return _conv_mode(_full_convolution(a, flip(v)), n, m, mode, start)


def interp(x, xp, fp, left=None, right=None, period=None):
    """1-D piecewise-linear interpolation; differentiable in ``x``, ``xp`` and ``fp``."""
    x = _in(x, "interp", "x")
    xp = _in(xp, "interp", "xp")
    fp = _in(fp, "interp", "fp")
    if ndim(xp) != 1 or ndim(fp) != 1:
        raise ValueError(f"interp: arguments 'xp' and 'fp' must be 1-D, got shapes {shape(xp)} "
                         f"and {shape(fp)}")
    if shape(xp)[0] != shape(fp)[0]:
        raise ValueError(f"interp: arguments 'xp' and 'fp' must have the same length, got "
                         f"{shape(xp)[0]} and {shape(fp)[0]}")
    if shape(xp)[0] == 0:
        raise ValueError("interp: arguments 'xp' and 'fp' cannot be empty")
    if _eager(x, xp, fp, left, right, period):
        return _np.asarray(_np.interp(x, xp, fp, left, right, period))
    x, xp, fp = astype(x, float64), astype(xp, float64), astype(fp, float64)
    if period is not None:
        if not _is_tracer(period) and period == 0:
            raise ValueError("interp: argument 'period' must be non-zero")
        period = abs(period)
        left = right = None
        x = _E.remainder(x, period)
        xp = _E.remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([_E.sub(xp[-1:], period), xp, _E.add(xp[0:1], period)])
        fp = concatenate([fp[-1:], fp, fp[0:1]])
    n = shape(xp)[0]
    if n == 1:
        f = broadcast_to(fp[0], shape(x))
    else:
        i = clip(_SO.searchsorted(xp, x, "right"), 1, n - 1)
        x0, x1 = take(xp, _E.sub(i, 1)), take(xp, i)
        f0, f1 = take(fp, _E.sub(i, 1)), take(fp, i)
        dx = _E.sub(x1, x0)
        eps = _np.spacing(_np.finfo(float64).eps)
        flat = _E.le(abs(dx), eps)
        t = _E.div(_E.sub(x, x0), where(flat, 1.0, dx))
        f = where(flat, f0, _E.add(f0, _E.mul(t, _E.sub(f1, f0))))
    f = where(_E.lt(x, xp[0]), fp[0] if left is None else left, f)
    f = where(_E.gt(x, xp[-1]), fp[-1] if right is None else right, f)
    return astype(f, float64)


# ---------------------------------------------------------------------------
# Statistics


def ptp(a, axis=None, keepdims=False):
    """Range (maximum minus minimum) along ``axis``."""
    a = _in(a, "ptp")
    return _E.sub(max(a, axis, keepdims), min(a, axis, keepdims))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average; with ``returned``, also the sum of the weights."""
    a = _in(a, "average")
    nd = ndim(a)
    axes = _axes(axis, nd, "average")
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        count = math.prod(shape(a)) // builtins.max(math.prod(shape(avg)), 1)
        scl = _np.asarray(count, _aval(avg).dtype)
    else:
        w = _in(weights, "average", "weights")
        a_dt, w_dt = _aval(a).dtype, _aval(w).dtype
        if a_dt.kind in "iub":
            rdt = _np.result_type(a_dt, w_dt, float64)
        else:
            rdt = _np.result_type(a_dt, w_dt)
        if shape(w) != shape(a):
            if axis is None:
                raise TypeError("average: argument 'axis' must be given when the shapes of "
                                f"'a' {shape(a)} and 'weights' {shape(w)} differ")
            if shape(w) != tuple(shape(a)[i] for i in axes):
                raise ValueError(f"average: the shape of argument 'weights' {shape(w)} must "
                                 f"match that of 'a' {shape(a)} along axis {axis}")
            w = reshape(w, tuple(shape(a)[i] if i in axes else 1 for i in range(nd)))
        w = astype(w, rdt)
        scl = sum(broadcast_to(w, shape(a)) if shape(w) != shape(a) else w, axes,
                  keepdims=keepdims)
        if _eager(scl) and _np.any(scl == 0.0):
            raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
        avg = _E.div(sum(_E.mul(astype(a, rdt), w), axes, keepdims=keepdims), scl)
    if returned:
        if shape(scl) != shape(avg):
            scl = broadcast_to(scl, shape(avg))
        return avg, scl
    return avg


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """Covariance matrix of the variables in the rows (or columns) of ``m``."""
    m = _in(m, "cov", "m")
    if ndim(m) > 2:
        raise ValueError(f"cov: argument 'm' has more than 2 dimensions (shape {shape(m)})")
    if dtype is None:
        dtype = _np.result_type(_aval(m).dtype, float64) if y is None else _np.result_type(
            _aval(m).dtype, _aval(_in(y, "cov", "y")).dtype, float64)
    X = astype(atleast_2d(m), dtype)
    if not rowvar and shape(X)[0] != 1:
        X = transpose(X)
    if shape(X)[0] == 0:
        return _np.zeros((0, 0), dtype)
    if y is not None:
        y = _in(y, "cov", "y")
        if ndim(y) > 2:
            raise ValueError(f"cov: argument 'y' has more than 2 dimensions (shape {shape(y)})")
        Y = astype(atleast_2d(y), dtype)
        if not rowvar and shape(Y)[0] != 1:
            Y = transpose(Y)
        X = concatenate([X, Y], 0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = shape(X)[1]
    w = None
    if fweights is not None:
        fw = _in(fweights, "cov", "fweights")
        if ndim(fw) > 1 or shape(fw)[0] != n:
            raise ValueError(f"cov: argument 'fweights' must be 1-D of length {n}, got shape "
                             f"{shape(fw)}")
        w = astype(fw, float64)
    if aweights is not None:
        aw = _in(aweights, "cov", "aweights")
        if ndim(aw) > 1 or shape(aw)[0] != n:
            raise ValueError(f"cov: argument 'aweights' must be 1-D of length {n}, got shape "
                             f"{shape(aw)}")
        aw = astype(aw, float64)
        w = aw if w is None else _E.mul(w, aw)
    if w is None:
        avg = mean(X, 1)
        fact = float(n - ddof)
    else:
        avg, w_sum = average(X, 1, w, returned=True)
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = _E.sub(w_sum, ddof)
        else:
            fact = _E.sub(w_sum, _E.div(_E.mul(ddof, sum(_E.mul(w, aw))), w_sum))
    if not _is_tracer(fact) and _np.all(_np.asarray(fact) <= 0):
        fact = 0.0
    X = _E.sub(X, reshape(avg, (-1, 1)))
    XT = transpose(X if w is None else _E.mul(X, w))
    c = _E.div(matmul(X, XT), fact)
    return squeeze(c)


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients."""
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim(c) == 0:
        return _E.div(c, c)
    d = sqrt(diagonal(c))
    c = _E.div(_E.div(c, reshape(d, (-1, 1))), reshape(d, (1, -1)))
    return clip(c, -1, 1)


_QUANTILE_ALPHA_BETA = {"hazen": (0.5, 0.5), "weibull": (0.0, 0.0),
                        "median_unbiased": (1 / 3.0, 1 / 3.0),
                        "normal_unbiased": (3 / 8.0, 3 / 8.0),
                        "interpolated_inverted_cdf": (0.0, 1.0)}
_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint") + tuple(
    _QUANTILE_ALPHA_BETA)


class _NumpyOps:
    floor, ceil, rint, minimum, maximum, where = (
        _np.floor, _np.ceil, _np.rint, _np.minimum, _np.maximum, _np.where)

    @staticmethod
    def astype(x, dt):
        return _np.asarray(x).astype(dt)


class _TracedOps:
    floor, ceil, rint, minimum, maximum = (
        staticmethod(_E.floor), staticmethod(_E.ceil), staticmethod(_E.round),
        staticmethod(_E.minimum), staticmethod(_E.maximum))
    where = staticmethod(lambda c, x, y: where(c, x, y))
    astype = staticmethod(lambda x, dt: astype(x, dt))


def _gather_last(s, idx):
    """``s[..., idx]`` entry by entry: ``s`` has shape B + (n,), ``idx`` Q + B."""
    B = shape(s)[:-1]
    Q = shape(idx)[:len(shape(idx)) - len(B)]
    arrays = []
    for j, bj in enumerate(B):
        arrays.append(_np.arange(bj).reshape((1,) * len(Q) + tuple(
            bj if k == j else 1 for k in range(len(B)))))
    arrays.append(idx)
    return _I.getitem(s, (_I.ARRAY,) * (len(B) + 1), tuple(arrays))


def _quantile(a, q, axis, method, keepdims, fname, nan_aware=False, scale=1):
    a = _in(a, fname)
    if method not in _QUANTILE_METHODS and method != "_median":
        raise ValueError(f"{fname}: method {method!r} is not supported for argument 'method'; "
                         f"expected one of {', '.join(map(repr, _QUANTILE_METHODS))}")
    q = _in(q, fname, "q")
    if not _is_tracer(q):
        if q.dtype.kind not in "iuf":
            raise TypeError(f"{fname}: argument 'q' must be real numbers, got {q.dtype}")
        if not _np.all((q >= 0) & (q <= scale)):
            raise ValueError(f"{fname}: argument 'q' must be in the range [0, {scale}], got "
                             f"{q.tolist()}")
        q = _np.asarray(q, float64) / scale if scale != 1 else _np.asarray(q, float64)
    else:
        q = _E.div(astype(q, float64), float(scale)) if scale != 1 else astype(q, float64)
    av = _aval(a)
    nd = av.ndim
    axes = _axes(axis, nd, fname)
    keep = [i for i in range(nd) if i not in axes]
    bshape = tuple(av.shape[i] for i in keep)
    n = math.prod(av.shape[i] for i in axes)
    if n == 0:
        raise ValueError(f"{fname}: cannot compute a quantile of an empty axis of argument 'a' "
                         f"(shape {av.shape})")
    x = reshape(transpose(a, keep + list(axes)), bshape + (n,))
    x = _inexact(x)
    dt = _aval(x).dtype
    s = _SO.sort(x, len(bshape))
    qs = shape(q)
    nb = len(bshape)
    if nan_aware:
        count = sum(astype(logical_not(isnan(x)), int64), -1)
        nm1 = _E.sub(astype(count, float64), 1.0)
        ops = _TracedOps
    else:
        nm1 = float(n - 1)
        ops = _TracedOps if _is_tracer(q) else _NumpyOps
    qb = reshape(q, qs + (1,) * nb) if ops is _TracedOps else _np.reshape(q, qs + (1,) * nb)
    if method in _QUANTILE_ALPHA_BETA:
        al, be = _QUANTILE_ALPHA_BETA[method]
        n_ = _E.add(nm1, 1.0) if ops is _TracedOps else nm1 + 1.0
        vi = n_ * qb + (al + qb * (1 - al - be)) - 1 if ops is _NumpyOps else _E.sub(
            _E.add(_E.mul(n_, qb), _E.add(al, _E.mul(qb, 1 - al - be))), 1.0)
    else:
        vi = _E.mul(qb, nm1) if ops is _TracedOps else qb * nm1
    upper = ops.maximum(nm1, 0.0)
    gamma = None
    if method == "lower":
        lo = ops.floor(vi)
    elif method == "higher":
        lo = ops.ceil(vi)
    elif method == "nearest":
        lo = ops.rint(vi)
    else:
        lo = ops.floor(vi)
        hi = ops.minimum(ops.maximum(lo + 1 if ops is _NumpyOps else _E.add(lo, 1.0), 0.0),
                         upper)
        if method == "_median":
            hi = ops.minimum(ops.ceil(vi), upper)
        elif method == "midpoint":
            g = vi - lo if ops is _NumpyOps else _E.sub(vi, lo)
            gamma = ops.where(g == 0 if ops is _NumpyOps else _E.eq(g, 0.0), 0.0, 0.5)
        else:
            gamma = vi - lo if ops is _NumpyOps else _E.sub(vi, lo)
    lo = ops.minimum(ops.maximum(lo, 0.0), upper)
    full = qs + bshape

    def gather(i):
        i = ops.astype(i, int64)
        if shape(i) != full:
            i = broadcast_to(i, full) if _is_tracer(i) else _np.broadcast_to(i, full)
        return _gather_last(s, i)

    res = gather(lo)
    if method == "_median":
        res = _E.mul(_E.add(res, gather(hi)), 0.5)
    elif gamma is not None:
        b = gather(hi)
        d = _E.sub(b, res)
        t = astype(gamma, dt) if _is_tracer(gamma) else _np.asarray(gamma).astype(dt)
        res = where(_E.ge(t, 0.5), _E.sub(b, _E.mul(d, _E.sub(1.0, t))), _E.add(res, _E.mul(d, t)))
    if nan_aware:
        res = where(_E.eq(count, 0), nan, res)
    else:
        res = where(any(isnan(x), -1), nan, res)
    if keepdims:
        res = reshape(res, qs + tuple(1 if i in axes else d_ for i, d_ in enumerate(av.shape)))
    return res


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """q-th quantiles along ``axis`` (sort-based; differentiable in ``a``)."""
    _check_quantile_args("quantile", out, weights)
    return _quantile(a, q, axis, interpolation or method, keepdims, "quantile")


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """q-th percentiles (q in [0, 100]) along ``axis``."""
    _check_quantile_args("percentile", out, weights)
    return _quantile(a, q, axis, interpolation or method, keepdims, "percentile", scale=100)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median along ``axis`` (NaN where a slice has a NaN)."""
    _check_quantile_args("median", out, None)
    return _quantile(a, 0.5, axis, "_median", keepdims, "median")


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """Quantiles ignoring NaNs."""
    _check_quantile_args("nanquantile", out, weights)
    return _quantile(a, q, axis, interpolation or method, keepdims, "nanquantile", True)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """Percentiles ignoring NaNs."""
    _check_quantile_args("nanpercentile", out, weights)
    return _quantile(a, q, axis, interpolation or method, keepdims, "nanpercentile", True,
                     scale=100)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median ignoring NaNs."""
    _check_quantile_args("nanmedian", out, None)
    return _quantile(a, 0.5, axis, "_median", keepdims, "nanmedian", True)


def _check_quantile_args(fname, out, weights):
    if out is not None:
        raise TypeError(f"{fname}: the 'out' argument is not supported; use the returned value")
    if weights is not None:
        raise NotImplementedError(f"{fname}: the 'weights' argument is not supported")


# NaN-aware reductions ------------------------------------------------------


def nansum(a, axis=None, dtype=None, keepdims=False, initial=None, where=None):
    return sum(_nan_to(_in(a, "nansum"), 0), axis, dtype, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, keepdims=False, initial=None):
    return prod(_nan_to(_in(a, "nanprod"), 1), axis, dtype, keepdims, initial)


def _nan_count(a, axis, keepdims):
    return sum(astype(logical_not(isnan(a)), int64), axis, keepdims=keepdims)


def nanmean(a, axis=None, dtype=None, keepdims=False):
    a = _in(a, "nanmean")
    if _aval(a).dtype.kind not in "fc":
        return mean(a, axis, dtype, keepdims)
    s = sum(_nan_to(a, 0), axis, dtype, keepdims)
    return _E.div(s, astype(_nan_count(a, axis, keepdims), _aval(s).dtype))


def nanvar(a, axis=None, dtype=None, ddof=0, keepdims=False):
    a = _in(a, "nanvar")
    if _aval(a).dtype.kind not in "fc":
        return var(a, axis, dtype, ddof, keepdims)
    m = nanmean(a, axis, dtype, keepdims=True)
    d = _nan_to(_E.sub(a, m), 0)
    s = sum(_E.mul(d, d), axis, dtype, keepdims)
    n = _E.sub(astype(_nan_count(a, axis, keepdims), _aval(s).dtype), ddof)
    return _E.div(s, _E.maximum(n, 0))


def nanstd(a, axis=None, dtype=None, ddof=0, keepdims=False):
    return sqrt(nanvar(a, axis, dtype, ddof, keepdims))


def _nan_extremum(fname, reduce, fill):
    def f(a, axis=None, keepdims=False, initial=None):
        a = _in(a, fname)
        if _aval(a).dtype.kind not in "fc":
            return reduce(a, axis, keepdims, initial)
        nans = isnan(a)
        out = reduce(where(nans, fill, a), axis, keepdims, initial)
        return where(all(nans, axis, keepdims), nan, out) if initial is None else out
    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"``{reduce.__name__}`` ignoring NaNs (NaN for an all-NaN slice)."
    return f


nanmax = _nan_extremum("nanmax", max, -inf)
nanmin = _nan_extremum("nanmin", min, inf)


def _nan_arg(fname, arg, fill):
    def f(a, axis=None, keepdims=False):
        a = _in(a, fname)
        if _aval(a).dtype.kind not in "fc":
            return arg(a, axis, keepdims)
        nans = isnan(a)
        if _eager(a) and _np.any(_np.all(nans, axis=axis)):
            raise ValueError(f"{fname}: all-NaN slice encountered")
        return arg(where(nans, fill, a), axis, keepdims)
    f.__name__ = f.__qualname__ = fname
    return f


nanargmax = _nan_arg("nanargmax", argmax, -inf)
nanargmin = _nan_arg("nanargmin", argmin, inf)


# ---------------------------------------------------------------------------
# Functions whose result shape depends on values (eager; unique also with size=)


def _value_dependent(a, fname, argname):
    if _is_tracer(a):
        try:
            return _np.asarray(a.concrete_value(fname))
        except _core.ConcretizationTypeError:
            raise _core.ConcretizationTypeError(
                f"{fname}: the shape of the result depends on the values of argument "
                f"'{argname}', which is traced (under jit or vmap), so it cannot be computed "
                f"there. Call {fname} outside the transformed function"
                + (", or pass a static size=..." if fname in ("unique",) else "")
                + ".") from None
    return _core.as_array(a, f"{fname}: argument '{argname}'")


def flatnonzero(a):
    """Indices of the nonzero entries of the flattened ``a`` (eager only)."""
    return _np.flatnonzero(_value_dependent(a, "flatnonzero", "a"))


def argwhere(a):
    """Indices of the nonzero entries, one row per entry (eager only)."""
    return _np.argwhere(_value_dependent(a, "argwhere", "a"))


def union1d(ar1, ar2):
    return _np.union1d(_value_dependent(ar1, "union1d", "ar1"),
                       _value_dependent(ar2, "union1d", "ar2"))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    return _np.intersect1d(_value_dependent(ar1, "intersect1d", "ar1"),
                           _value_dependent(ar2, "intersect1d", "ar2"), assume_unique,
                           return_indices)


def setdiff1d(ar1, ar2, assume_unique=False):
    return _np.setdiff1d(_value_dependent(ar1, "setdiff1d", "ar1"),
                         _value_dependent(ar2, "setdiff1d", "ar2"), assume_unique)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """Sorted unique entries (NumPy's options).  The result's shape depends on the
    values, so under jit/vmap a static ``size`` is needed (axis=None only): the
    result is cut or padded to ``size`` entries with ``fill_value`` (default: the
    smallest entry), counts with 0 and indices with 0."""
    if size is None or not _is_tracer(ar):
        arr = _value_dependent(ar, "unique", "ar")
        out = _np.unique(arr, return_index, return_inverse, return_counts, axis,
                         equal_nan=equal_nan)
        if size is None:
            return out
        if axis is not None:
            raise NotImplementedError("unique: 'size' is only supported with axis=None")
        outs = list(out) if isinstance(out, tuple) else [out]
        size = operator.index(size)
        vals = outs[0]
        fill = (vals.min() if vals.size else 0) if fill_value is None else fill_value
        outs[0] = _np.concatenate([vals, _np.full(builtins.max(size - vals.size, 0), fill,
                                                  vals.dtype)])[:size]
        k = 1
        if return_index:
            outs[k] = _np.concatenate([outs[k], _np.zeros(builtins.max(size - vals.size, 0),
                                                          outs[k].dtype)])[:size]
            k += 1
        if return_inverse:
            k += 1
        if return_counts:
            outs[k] = _np.concatenate([outs[k], _np.zeros(builtins.max(size - vals.size, 0),
                                                          outs[k].dtype)])[:size]
        return tuple(outs) if len(outs) > 1 else outs[0]
    if axis is not None:
        raise NotImplementedError("unique: 'size' is only supported with axis=None")
    size = operator.index(size)
    flat = ravel(ar)
    n = shape(flat)[0]
    perm = _SO.argsort(flat, 0)
    srt = take(flat, perm)
    if n == 0:
        first = _np.zeros(0, bool)
    else:
        neq = _E.ne(srt[1:], srt[:-1])
        if equal_nan and _aval(flat).dtype.kind in "fc":
            neq = logical_and(neq, logical_not(logical_and(isnan(srt[1:]), isnan(srt[:-1]))))
        first = concatenate([_np.ones(1, bool), neq])
    group = _E.sub(cumsum(astype(first, int64)), 1)
    slot = where(logical_and(first, _E.lt(group, size)), group, size)
    fill = (min(flat) if n else 0) if fill_value is None else fill_value
    buf = full((size + 1,), astype(fill, _aval(flat).dtype) if _is_tracer(fill) else
               _np.asarray(fill, _aval(flat).dtype), _aval(flat).dtype)
    outs = [_I.scatter(buf, srt, (_I.ARRAY,), (slot,), "set")[:size]]
    if return_index:
        outs.append(_I.scatter(_np.zeros(size + 1, int64), perm, (_I.ARRAY,), (slot,),
                               "set")[:size])
    if return_inverse:
        inv = _I.scatter(_np.zeros(n, int64), group, (_I.ARRAY,), (perm,), "set")
        outs.append(reshape(inv, shape(ar)))
    if return_counts:
        grp = where(_E.lt(group, size), group, size)
        outs.append(_I.scatter(_np.zeros(size + 1, int64), _np.ones(n, int64), (_I.ARRAY,),
                               (grp,), "add")[:size])
    return tuple(outs) if len(outs) > 1 else outs[0]


def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts (or summed weights) of each non-negative integer in ``x``.  Under
    jit/vmap pass a static ``length``; values outside [0, length) are dropped."""
    x = _in(x, "bincount", "x")
    if ndim(x) != 1:
        raise ValueError(f"bincount: argument 'x' must be 1-D, got shape {shape(x)}")
    if _aval(x).dtype.kind not in "iub":
        raise TypeError(f"bincount: argument 'x' must contain integers, got "
                        f"{_aval(x).str_short()}")
    if weights is not None:
        weights = _in(weights, "bincount", "weights")
        if shape(weights) != shape(x):
            raise ValueError(f"bincount: arguments 'weights' {shape(weights)} and 'x' "
                             f"{shape(x)} must have the same shape")
    if length is None:
        xv = _value_dependent(x, "bincount", "x")
        if xv.size and xv.min() < 0:
            raise ValueError("bincount: argument 'x' must not contain negative values")
        if _eager(x, weights):
            return _np.bincount(xv, weights, minlength)
        length = builtins.max(int(xv.max()) + 1 if xv.size else 0, minlength)
    length = operator.index(length)
    idx = where(logical_and(_E.ge(x, 0), _E.lt(x, length)), x, length)
    if weights is None:
        vals = _np.ones(shape(x), int64)
        buf = _np.zeros(length + 1, int64)
    else:
        vals = astype(weights, _np.result_type(_aval(weights).dtype, float64))
        buf = _np.zeros(length + 1, _aval(vals).dtype)
    return _I.scatter(buf, vals, (_I.ARRAY,), (idx,), "add")[:length]


# ---------------------------------------------------------------------------
# Applying functions


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """Apply ``func1d`` to 1-D slices along ``axis`` (vectorized with vmap)."""
    from ..api import vmap as _vmap
    arr = _in(arr, "apply_along_axis", "arr")
    nd = ndim(arr)
    ax = _axis(axis, arr, "apply_along_axis", "arr")

    def func(x):
        return func1d(x, *args, **kwargs)
    for i in range(1, nd - ax):
        func = _vmap(func, in_axes=i, out_axes=-1)
    for i in range(ax):
        func = _vmap(func, in_axes=0, out_axes=0)
    return func(arr)


# ---------------------------------------------------------------------------
# Tracer methods for the functions above


def _install_extra_tracer_methods():
    T = _Tracer
    T.sort = lambda s, axis=-1, *, stable=True, descending=False: sort(
        s, axis, stable=stable, descending=descending)
    T.argsort = lambda s, axis=-1, *, stable=True, descending=False: argsort(
        s, axis, stable=stable, descending=descending)
    T.searchsorted = lambda s, v, side="left", sorter=None: searchsorted(s, v, side, sorter)
    T.cumprod = _no_out("cumprod", lambda s, axis=None, dtype=None: cumprod(s, axis, dtype))
    T.ptp = _no_out("ptp", lambda s, axis=None, keepdims=False: ptp(s, axis, keepdims))
    T.nonzero = lambda s: nonzero(s)


_install_extra_tracer_methods()


# ---------------------------------------------------------------------------
# More of NumPy's / jax.numpy's names: aliases, compositions, and eager-only
# index helpers (their results are concrete index arrays).

concat = concatenate
pow = power  # noqa: A001 - NumPy's name
permute_dims = transpose
fabs = abs
int_ = int64
float_ = float64
double = float64
single = float32
uint = uint64
ix_ = _np.ix_
s_ = _np.s_
index_exp = _np.index_exp
r_ = _np.r_
c_ = _np.c_
mgrid = _np.mgrid
ogrid = _np.ogrid
iterable = _np.iterable
can_cast = _np.can_cast
isdtype = _np.isdtype
unravel_index = _np.unravel_index
ravel_multi_index = _np.ravel_multi_index
diag_indices_from = _np.diag_indices_from
tril_indices_from = _np.tril_indices_from
triu_indices_from = _np.triu_indices_from


def copy(a, order=None):
    """A copy of ``a`` (under a transformation, the value itself)."""
    if _is_tracer(a):
        return a
    return _np.array(a, copy=True)


def imag(val):
    """Imaginary part: zeros for real arrays."""
    out = _complex_unsupported("imag", val)
    return zeros_like(val) if out is None else out


def angle(z, deg=False):
    """Angle of real numbers: 0 for x >= 0, pi for x < 0."""
    out = where(_E.lt(z, 0), pi, 0.0)
    return rad2deg(out) if deg else out


def isreal(x):
    return ones_like(x, dtype=bool_)


def iscomplex(x):
    return zeros_like(x, dtype=bool_)


def isrealobj(x):
    return _aval(x).dtype.kind != "c"


def iscomplexobj(x):
    return _aval(x).dtype.kind == "c"


def isposinf(x):
    return logical_and(isinf(x), _E.gt(x, 0))


def isneginf(x):
    return logical_and(isinf(x), _E.lt(x, 0))


def fmod(x1, x2):
    """C-style remainder: the result has the sign of ``x1``."""
    return _E.sub(x1, _E.mul(trunc(_E.div(x1, x2)), x2))


def divmod(x1, x2):  # noqa: A001 - NumPy's name
    return floor_divide(x1, x2), remainder(x1, x2)


def modf(x):
    """Fractional and integral parts, both with the sign of ``x``."""
    ipart = trunc(x)
    return _E.sub(x, ipart), ipart


def float_power(x1, x2):
    return _E.power(astype(x1, float64), astype(x2, float64) if not isinstance(x2, (int, float))
                    else x2)


def array_split(ary, indices_or_sections, axis=0):
    """Split into pieces; with an int, the first pieces get one extra element."""
    n = shape(ary)[axis]
    if isinstance(indices_or_sections, (int, _np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("array_split: argument 'indices_or_sections' must be positive")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = _np.cumsum([0] + sizes)[1:-1].tolist()
        return split(ary, bounds, axis)
    return split(ary, list(indices_or_sections), axis)


def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 1 if ndim(ary) > 1 else 0)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 2)


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    n = shape(x)[axis]
    return tuple(take(x, i, axis=axis) for i in range(n))


def rollaxis(a, axis, start=0):
    nd = ndim(a)
    axis %= nd
    start = start % (nd + 1) if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def diagflat(v, k=0):
    return diag(ravel(v), k)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Trapezoidal rule along ``axis``."""
    y = asarray(y) if not _is_tracer(y) else y
    n = shape(y)[axis]
    y1 = take(y, _np.arange(1, n), axis=axis)
    y0 = take(y, _np.arange(0, n - 1), axis=axis)
    if x is None:
        return _E.mul(sum(_E.add(y0, y1), axis=axis), dx / 2.0)
    x = asarray(x) if not _is_tracer(x) else x
    d = diff(x, axis=axis if ndim(x) > 1 else -1)
    if ndim(x) == 1 and ndim(y) > 1:
        shp = [1] * ndim(y)
        shp[axis] = n - 1
        d = reshape(d, tuple(shp))
    return _E.mul(sum(_E.mul(d, _E.add(y0, y1)), axis=axis), 0.5)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """Vectorize a scalar function with ``vmap`` over broadcast arguments
    (``signature`` is not supported)."""
    if signature is not None:
        raise NotImplementedError("vectorize: signature= is not supported yet")

    def vectorized(*args, **kwargs):
        from ..api import vmap as _vmap
        dyn = [i for i in range(len(args)) if i not in excluded]
        arrs = [asarray(args[i]) if not _is_tracer(args[i]) else args[i] for i in dyn]
        bshape = broadcast_shapes(*[shape(a) for a in arrs]) if arrs else ()
        arrs = [broadcast_to(a, bshape) for a in arrs]

        def call(*xs):
            full = list(args)
            for i, x in zip(dyn, xs):
                full[i] = x
            return pyfunc(*full, **kwargs)

        f = call
        for _ in range(len(bshape)):
            f = _vmap(f)
        return f(*arrs)

    return vectorized


def matvec(x1, x2):
    return matmul(x1, expand_dims(x2, -1))[..., 0]


def vecmat(x1, x2):
    return matmul(expand_dims(x1, -2), x2)[..., 0, :]


def polyadd(a1, a2):
    a1, a2 = atleast_1d(a1), atleast_1d(a2)
    n = builtins.max(shape(a1)[0], shape(a2)[0])
    return _E.add(pad(a1, (n - shape(a1)[0], 0)), pad(a2, (n - shape(a2)[0], 0)))


def polysub(a1, a2):
    return polyadd(a1, _E.neg(atleast_1d(a2)))


def polymul(a1, a2):
    return convolve(atleast_1d(a1), atleast_1d(a2))


def polyder(p, m=1):
    p = atleast_1d(p)
    for _ in range(m):
        n = shape(p)[0]
        if n <= 1:
            return zeros((1,), _aval(p).dtype)
        p = _E.mul(p[:-1], _np.arange(n - 1, 0, -1, dtype=float64))
    return p


def polyint(p, m=1, k=None):
    p = atleast_1d(p)
    ks = [0.0] * m if k is None else list(_np.atleast_1d(k))
    for i in range(m):
        n = shape(p)[0]
        p = concatenate([_E.div(p, _np.arange(n, 0, -1, dtype=float64)),
                         reshape(asarray(ks[i], dtype=float64), (1,))])
    return p


def __getattr__(name):
    # ``tnp.bool`` (jax.numpy's name for the bool dtype) without shadowing the
    # builtin ``bool`` inside this module.
    if name == "bool":
        return bool_
    raise AttributeError(f"module 'tangentia.numpy' has no attribute {name!r}")
