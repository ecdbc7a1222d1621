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
ndarray = _np.ndarray
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


def real(x):
    return _S.unchanged(x)


def conj(x):
    return _S.unchanged(x)


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
    return where(mask, m, 0)


def triu(m, k=0):
    s = shape(m)
    mask = ~_np.tri(s[-2], s[-1], k - 1, dtype=bool)
    return where(mask, m, 0)


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
    T.real = property(lambda s: s)
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
    T.conj = lambda s: s
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
