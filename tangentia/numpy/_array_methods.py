"""NumPy's operators, properties and array methods on traced values.

``install()`` puts them all on ``core.Tracer`` (``x + y``, ``x @ y``, ``x[i]``,
``x.T``, ``x.at[i].set(v)``, ``x.sum()``, ``x.reshape(...)``, ...), each one
calling the ``tangentia.numpy`` function of the same meaning;
``tangentia.numpy`` calls it once when it is imported.  Eager results
(``tangentia._array.ArrayImpl``, a ``numpy.ndarray``) keep NumPy's own methods
and get JAX's ``.at`` and indexing by traced values here.
"""
from __future__ import annotations

import builtins

import numpy as _np

from .. import dtypes as _dtypes
from .._array import ArrayImpl as _ArrayImpl, FPWarnings as _FPWarnings, to_user as _to_user
from ..core import (ConcretizationTypeError as _ConcretizationTypeError,
                   ShapedArray as _ShapedArray, Tracer as _Tracer,
                   TracerArrayConversionError as _TracerArrayConversionError, _jax_type,
                   concretization_error as _concretization_error)
from ..primitives import elementwise as _E
from ..primitives.callback import pure_callback as _pure_callback
from ._complex import conj, imag, real
from ._conversion import astype, public_astype, warn_complex_to_real
from ._editing import choose, compress, put
from ._elementwise import (abs, add, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, clip,
                           divide, equal, floor_divide, greater, greater_equal, left_shift, less,
                           less_equal, logical_and, logical_not, logical_or, logical_xor, multiply,
                           negative, not_equal, power, remainder, right_shift, round, subtract)
from ._elementwise import divmod as divmod_
from ._indexing import _getitem, _IndexUpdateHelper, nonzero, take
from ._matrices import diagonal, dot, matmul, trace
from ._reductions import (all, any, argmax, argmin, cumprod, cumsum, max, mean, min, prod, ptp,
                          std, sum, var)
from ._shapes import ravel, repeat, reshape, squeeze, swapaxes, transpose
from ._sorting import argpartition, argsort, searchsorted, sort
from ._util import _aval, _is_int_scalar, _is_tracer


def _unrecognized(o):
    """``o`` is no operand of an array comparison (JAX's ``_defer_to_unrecognized_arg``;
    lists and tuples are arrays here, as in tangentia.numpy)."""
    if isinstance(o, (_Tracer, _np.ndarray, _np.generic, int, float, complex, list, tuple)):
        return False
    return not hasattr(o, "__jax_array__")


_DEFERRING_OPERATORS = tuple(f"__{r}{op}__" for op in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "divmod", "lshift", "rshift", "pow",
    "matmul", "and", "or", "xor") for r in ("", "r")) + ("__lt__", "__le__", "__gt__", "__ge__")


def _tracer_types():
    """The tracer classes defined so far (the interpreters'), subclasses included."""
    out, todo = set(), [_Tracer]
    while todo:
        c = todo.pop()
        out.add(c)
        todo.extend(c.__subclasses__())
    return out


# operands decided by one set lookup (the others by ``_unrecognized``; tracers' own
# types are added by ``install``)
_USUAL_TRACER_OPERANDS: set = {_np.ndarray, float, int, bool, complex, _np.float64, _np.float32,
                               _np.int64, _np.int32, _np.bool_, _np.complex128}


_USUAL_OPERANDS = frozenset({_ArrayImpl, _np.ndarray, float, int, bool, complex, _np.float64,
                             _np.float32, _np.int64, _np.int32, _np.bool_, _np.complex128})


def _operand(o):
    """An operand of a binary operator: JAX's operators take a value with
    ``__jax_array__`` (flax nnx's ``Variable``) as that array (its functions do not)."""
    return o.__jax_array__() if hasattr(type(o), "__jax_array__") else o


def _deferring(op, usual=_USUAL_TRACER_OPERANDS, unrecognized=None):
    """``op(self, other)``, or NotImplemented for an unrecognized ``other`` (tracers'
    operators; ``_deferring_eager``: eager results')."""
    unrecognized = unrecognized or _unrecognized

    def deferring(self, other):
        if type(other) in usual:
            return op(self, other)
        if not unrecognized(other):
            return op(self, _operand(other))
        return NotImplemented
    deferring.__name__ = getattr(op, "__name__", "operator")
    return deferring


def _deferring_eager(op):
    return _deferring(op, _USUAL_OPERANDS, _unrecognized_eager)


def _unrecognized_eager(o):
    """As ``_unrecognized``, and array-likes with ``__array__`` (a NumPy-convertible value,
    as NumPy's operators take) are recognized."""
    return _unrecognized(o) and not hasattr(o, "__array__")


def _setitem(self, idx, value):
    raise TypeError(
        f"'{type(self)}' object does not support item assignment. JAX arrays are immutable. "
        "Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] method "
        "(add, multiply, min, max, apply). Arrays under a transformation (grad, jit, vmap, ...) "
        f"are immutable in tangentia too: this one is a traced {self.aval.str_short()}.")


_nd_getitem = _np.ndarray.__getitem__


def _array_getitem(self, idx):
    """``x[idx]`` on an eager result: NumPy's indexing, or, when NumPy cannot (an
    index holding traced values, ``jit(lambda i: x[i])``, or a bad index), the
    indexing of ``tangentia.numpy`` with ``x`` as a constant, as on JAX arrays
    (which raises JAX's errors)."""
    try:
        r = _nd_getitem(self, idx)
    except Exception:  # noqa: BLE001 - tangentia's indexing explains or raises it
        pass
    else:
        if type(r) is _void and _dtypes.is_key(r.dtype):
            return _np.asarray(r).view(_ArrayImpl)   # one typed key: a key array of shape ()
        return r
    return _getitem(self.view(_np.ndarray), idx)


_void = _np.void


def _array_iter(self):
    """NumPy's iteration (rows as eager results, elements of a vector as NumPy scalars),
    except over typed PRNG keys, whose elements are key arrays of shape ()
    (``k1, k2 = random.split(key)``, as JAX's; NumPy gives ``numpy.void``).  It iterates
    the plain ndarray: NumPy's iteration of a subclass indexes it through ``__getitem__``
    until IndexError, whose fallback above made ``a, b = x`` cost ~9 us."""
    a = self.view(_np.ndarray)
    if self.ndim == 1:
        if self.dtype.kind == "V" and _dtypes.is_key(self.dtype):
            return (_np.asarray(r).view(_ArrayImpl) for r in a)
        return iter(a)
    return (r.view(_ArrayImpl) for r in a) if self.ndim else iter(a)


_nd_astype = _np.ndarray.astype


def _array_astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True, *,
                  device=None):
    """NumPy's ``astype`` (its arguments; ``device=`` as JAX's), with JAX's warning for
    complex values cast to a real dtype (one ComplexToRealWarning, which is also NumPy's
    ComplexWarning, instead of NumPy's own).  Floating (and complex) values cast to an
    integer dtype convert as JAX's and ``lax.convert_element_type`` (under ``jit`` too):
    truncated, saturating at the type's limits, NaN to 0 (NumPy's C cast is undefined out
    of range: ``float16(inf).astype(int32)`` was INT_MIN, JAX's INT_MAX)."""
    new = _dtypes.to_dtype(dtype)
    to_int = new.kind in "iu" and casting == "unsafe" and (
        self.dtype.kind in "fc" or _dtypes.is_inexact(self.dtype))
    if self.dtype.kind == "c" and new.kind not in "cb":   # (None: float64)
        import warnings
        warn_complex_to_real(self.dtype, dtype, stacklevel=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", _np.exceptions.ComplexWarning)
            if to_int:
                return _to_user(astype(self.view(_np.ndarray), new))
            return _nd_astype(self, dtype, order, casting, subok, copy)
    if to_int:
        return _to_user(astype(self.view(_np.ndarray), new))
    return _nd_astype(self, dtype, order, casting, subok, copy)


_nd_sort = _np.ndarray.sort


def _array_sort(self, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """NumPy's in-place ``sort`` (returns None; see docs/coming_from_jax.md, "Array.sort
    sorts in place"), also taking JAX's ``descending=``.  ``axis=None`` (JAX's flattened
    copy; NumPy's method has none) raises, pointing at ``tnp.sort``, which returns the
    sorted copy as JAX's ``Array.sort`` does."""
    if axis is None:
        raise TypeError("ArrayImpl.sort: axis=None (a flattened, sorted copy in JAX) cannot sort "
                        "in place; an eager result's sort is NumPy's in-place method, which "
                        "returns None: use tnp.sort(x, axis=None) for the sorted copy")
    _nd_sort(self, axis, kind, order, stable=stable)
    if descending:
        ax = axis % self.ndim if self.ndim else 0
        self[...] = _np.flip(self, ax).copy() if self.ndim else self


def install():
    """Give ``core.Tracer`` NumPy's operators, properties and array methods,
    and eager results (``ArrayImpl``) JAX's ``.at`` and traced indexing."""
    _ArrayImpl.at = property(lambda s: _IndexUpdateHelper(s))
    _ArrayImpl.__getitem__ = _array_getitem
    _ArrayImpl.__iter__ = _array_iter
    _ArrayImpl.__round__ = _round_builtin  # NumPy's ndarray has none
    _ArrayImpl.astype = _array_astype
    _ArrayImpl.sort = _array_sort
    for name, spec in _METHODS.items():
        setattr(_ArrayImpl, name, _eager_method(name, *spec))
    for name, method in _E.eager_operators().items():   # (x % y: JAX's values, as tnp's)
        setattr(_ArrayImpl, name, method)
    # Eager results' operators written in Python (those above) defer to unrecognized
    # operands too, where NumPy's would build an object array of the operand's reflected
    # results: ``x ** ω``, how equinox's ω starts, works eagerly as on JAX arrays.  (NumPy's
    # own +, -, *, @ and comparisons are kept: a Python-level operator costs ~0.5 us more
    # per call, about a third of an eager operation on a small array.)
    for name in _E.eager_operators():
        if name in _DEFERRING_OPERATORS:
            setattr(_ArrayImpl, name, _deferring_eager(getattr(_ArrayImpl, name)))
    T = _Tracer

    # An operand that is no array, number or list gets NotImplemented, as from JAX's
    # tracers (``_defer_to_unrecognized_arg``): Python then calls its reflected method
    # (equinox's ``x ** ω``, used throughout lineax, optimistix and diffrax).  The common
    # operands pass by one set lookup, in the operator's own frame (fwd, rev).
    _USUAL_TRACER_OPERANDS.update(_tracer_types())
    usual = _USUAL_TRACER_OPERANDS

    def fwd(f):
        def op(self, other):
            if type(other) in usual:
                return f(self, other)
            if not _unrecognized(other):
                return f(self, _operand(other))
            return NotImplemented
        return op

    def rev(f):
        # ``x op tracer`` with ``x`` an eager result reaches us when NumPy defers:
        # ``x`` is passed as the plain ndarray it views, as interpreters hold
        # constants (its subclass would take their slower general path).
        nd, arr = _np.ndarray, _ArrayImpl

        def op(self, other):
            if type(other) in usual:
                return f(other, self)
            if not _unrecognized(other):
                return f(other.view(nd) if type(other) is arr else _operand(other), self)
            return NotImplemented
        return op

    T.__add__ = fwd(add)
    T.__radd__ = rev(add)
    T.__sub__ = fwd(subtract)
    T.__rsub__ = rev(subtract)
    T.__mul__ = fwd(multiply)
    T.__rmul__ = rev(multiply)
    T.__truediv__ = fwd(divide)
    T.__rtruediv__ = rev(divide)
    T.__floordiv__ = fwd(floor_divide)
    T.__rfloordiv__ = rev(floor_divide)
    T.__mod__ = fwd(remainder)
    T.__rmod__ = rev(remainder)
    # shifts and divmod, as on JAX's tracers (ours raised "unsupported operand type(s)")
    T.__divmod__ = fwd(divmod_)
    T.__rdivmod__ = rev(divmod_)
    T.__lshift__ = fwd(left_shift)
    T.__rlshift__ = rev(left_shift)
    T.__rshift__ = fwd(right_shift)
    T.__rrshift__ = rev(right_shift)
    T.__pow__ = _deferring(_pow)
    T.__rpow__ = _deferring(lambda s, o: power(o, s))
    T.__matmul__ = fwd(matmul)
    T.__rmatmul__ = rev(matmul)
    T.__neg__ = lambda s: negative(s)
    T.__pos__ = lambda s: s
    T.__abs__ = lambda s: abs(s)
    T.__invert__ = lambda s: logical_not(s) if _aval(s).dtype == _dtypes.bool_ else bitwise_not(s)
    # ``x == None`` is False (``None in [x, y]`` works), and so is ``x == object()``: as on
    # JAX's tracers, an operand that is no array, number or list is left to Python (which
    # compares identities), where tangentia.numpy.equal raises JAX's TypeError
    T.__eq__ = lambda s, o: NotImplemented if _unrecognized(o) else equal(s, o)
    T.__ne__ = lambda s, o: NotImplemented if _unrecognized(o) else not_equal(s, o)
    T.__lt__ = fwd(less)
    T.__le__ = fwd(less_equal)
    T.__gt__ = fwd(greater)
    T.__ge__ = fwd(greater_equal)
    T.__and__ = _deferring(lambda s, o: _logic(s, o, logical_and, bitwise_and))
    T.__rand__ = _deferring(lambda s, o: _logic(o, s, logical_and, bitwise_and))
    T.__or__ = _deferring(lambda s, o: _logic(s, o, logical_or, bitwise_or))
    T.__ror__ = _deferring(lambda s, o: _logic(o, s, logical_or, bitwise_or))
    T.__xor__ = _deferring(lambda s, o: _logic(s, o, logical_xor, bitwise_xor))
    T.__rxor__ = _deferring(lambda s, o: _logic(o, s, logical_xor, bitwise_xor))
    T.__getitem__ = _getitem
    T.__setitem__ = _setitem
    T.__hash__ = None
    T.T = property(lambda s: transpose(s))
    T.mT = property(lambda s: swapaxes(s, -1, -2))
    T.at = property(lambda s: _IndexUpdateHelper(s))
    T.real = property(lambda s: real(s))
    T.imag = property(lambda s: imag(s))
    # one argument that is not an integer (NumPy's integers too) is the whole shape / order
    T.reshape = lambda s, *shape, order="C": reshape(
        s, shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, _np.integer))
        else shape, order)
    T.transpose = lambda s, *axes: transpose(s, axes[0] if len(axes) == 1 and not isinstance(
        axes[0], (int, _np.integer)) else (axes or None))
    T.astype = lambda s, dtype, copy=False, device=None: public_astype(
        s, dtype, copy=copy, device=device)
    # JAX's reduction methods take the functions' arguments, in their positions (``out``
    # before ``keepdims``, as NumPy's), and raise JAX's error for an ``out``: the tnp
    # functions themselves, plain functions, so the array is their first argument
    for _name, _fn in (("sum", sum), ("prod", prod), ("mean", mean), ("var", var), ("std", std),
                       ("max", max), ("min", min), ("argmax", argmax), ("argmin", argmin),
                       ("all", all), ("any", any), ("cumsum", cumsum), ("cumprod", cumprod),
                       ("ptp", ptp)):
        setattr(T, _name, _fn)
    T.ravel = lambda s, order="C": ravel(s, order)
    T.flatten = lambda s, order="C": ravel(s, order)
    T.squeeze = lambda s, axis=None: squeeze(s, axis)
    T.clip = _no_out("clip", lambda s, min=None, max=None: clip(s, min, max))
    T.dot = lambda s, o: dot(s, o)
    T.round = _no_out("round", lambda s, decimals=0: round(s, decimals))
    T.__round__ = _round_builtin
    T.conj = lambda s: conj(s)
    T.copy = lambda s: s
    T.swapaxes = lambda s, a, b: swapaxes(s, a, b)
    T.trace = lambda s, offset=0, axis1=0, axis2=1: trace(s, offset, axis1, axis2)
    T.diagonal = lambda s, offset=0, axis1=0, axis2=1: diagonal(s, offset, axis1, axis2)
    T.sort = lambda s, axis=-1, *, stable=True, descending=False: sort(
        s, axis, stable=stable, descending=descending)
    T.argsort = lambda s, axis=-1, *, stable=True, descending=False: argsort(
        s, axis, stable=stable, descending=descending)
    T.searchsorted = lambda s, v, side="left", sorter=None, *, method="scan": searchsorted(
        s, v, side, sorter, method=method)
    T.nonzero = lambda s: nonzero(s)
    T.take = _m_take
    T.choose = _m_choose
    T.compress = _m_compress
    T.repeat = _m_repeat
    T.put = _m_put
    T.argpartition = lambda s, kth, axis=-1: argpartition(s, kth, axis)
    T.conjugate = lambda s: conj(s)
    # sizes in bytes, as on JAX's tracers and ndarray (``itemsize`` of the dtype, ``nbytes`` of
    # the whole value); ``view`` reinterprets the bits; ``tobytes`` needs a concrete value
    T.itemsize = property(lambda s: _aval(s).dtype.itemsize)
    T.nbytes = property(lambda s: _aval(s).size * _aval(s).dtype.itemsize)
    T.view = _view
    T.tobytes = _tobytes


def _view(x, dtype=None, type=None):
    """``x.view(dtype)`` of a traced ``x``: the same bits read as ``dtype``, as JAX's
    ``Array.view``; a different item size changes the last axis (``(n, 4)`` of float32 is
    ``(n, 2)`` of float64, ``(n, 8)`` of uint16)."""
    if type is not None:
        raise NotImplementedError("`type` argument of array.view() is not supported.")
    if dtype is None:
        return x
    aval = _aval(x)
    old, new = aval.dtype, _dtypes.to_dtype(dtype)
    shape = aval.shape
    if old == new:
        return x
    if old.itemsize != new.itemsize:
        if not shape:
            raise ValueError("Changing the dtype of a 0d array is only supported if the "
                             f"itemsize is unchanged (view: {old} to {new})")
        if (shape[-1] * old.itemsize) % new.itemsize:
            raise ValueError("When changing to a larger dtype, its size must be a divisor of "
                             "the total size in bytes of the last axis of the array. (view: "
                             f"{shape[-1]} items of {old} into {new})")
        shape = shape[:-1] + (shape[-1] * old.itemsize // new.itemsize,)

    def kernel(a):   # (batched by vmap as leading axes: the last axis is the one that changes)
        a = _np.asarray(a, order="C")   # (ascontiguousarray would make a 0-d array 1-d)
        if new == _np.bool_:   # any nonzero byte is True, as JAX's
            return a.view(_np.uint8) != 0
        return a.view(new)
    return _pure_callback(kernel, _ShapedArray(shape, new), x, vmap_method="expand_dims")


def _tobytes(x, order="C"):
    """``tobytes()`` of a traced value: JAX's ConcretizationTypeError (even when the value is
    known, as under eager ``grad``: the bytes would drop its derivative)."""
    raise _concretization_error(x, "tobytes", f"The tobytes() method was called on traced "
                                              f"array with shape {_jax_type(_aval(x))}.",
                                "Call it on the result, outside the transformation.")


def _round_builtin(x, ndigits=None):
    """Python's ``round(x[, ndigits])`` on an array, as on JAX's: rounded
    half to even, as an integer array without ``ndigits``."""
    if ndigits is None:
        return astype(round(x), _np.int64)
    return round(x, ndigits)


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



# ---------------------------------------------------------------------------
# Methods of eager results taking array arguments: NumPy's method, or, when an
# argument is traced (``a.dot(x)`` with ``a`` an eager result and ``x`` a tracer
# of ``jit`` or ``grad``), the ``tangentia.numpy`` function, as on JAX arrays.
# NumPy's methods convert a tracer with ``__array__``, which raises
# TracerArrayConversionError (or with ``__index__``/``__float__``, which raise
# ConcretizationTypeError under jit): that is the signal, so the eager path is NumPy's
# method behind one Python call (about 0.06-0.1 us).  Keywords NumPy would convert
# with ``float()`` (``initial=``), which succeeds on a tracer of eager ``grad`` and
# would lose its derivative, are checked for tracers before NumPy sees them.  The functions below take the
# arguments of JAX's methods (which are NumPy's, ``out`` only None).


def _out_none(name, out):
    if out is not None:
        raise TypeError(f"{name}: the 'out' argument is not supported (arrays under "
                        "transformations are immutable); use the returned value instead")


def _m_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
           promote_integers=True):
    _out_none("sum", out)
    return sum(a, axis, dtype, keepdims=keepdims, initial=initial, where=where,
               promote_integers=promote_integers)


def _m_prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
            promote_integers=True):
    _out_none("prod", out)
    return prod(a, axis, dtype, keepdims=keepdims, initial=initial, where=where,
                promote_integers=promote_integers)


def _m_max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _out_none("max", out)
    return max(a, axis, keepdims=keepdims, initial=initial, where=where)


def _m_min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _out_none("min", out)
    return min(a, axis, keepdims=keepdims, initial=initial, where=where)


def _m_all(a, axis=None, out=None, keepdims=False, *, where=None):
    _out_none("all", out)
    return all(a, axis, keepdims=keepdims, where=where)


def _m_any(a, axis=None, out=None, keepdims=False, *, where=None):
    _out_none("any", out)
    return any(a, axis, keepdims=keepdims, where=where)


def _m_mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _out_none("mean", out)
    return mean(a, axis, dtype, keepdims=keepdims, where=where)


def _m_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           correction=None):
    _out_none("var", out)
    return var(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where, correction=correction)


def _m_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           correction=None):
    _out_none("std", out)
    return std(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where, correction=correction)


def _m_clip(a, min=None, max=None, out=None, **kwargs):
    _out_none("clip", out)
    if kwargs:
        raise TypeError(f"clip: unexpected keyword arguments {sorted(kwargs)} (JAX's "
                        "Array.clip takes min and max)")
    return clip(a, min, max)


def _m_compress(a, condition, axis=None, out=None, *, size=None, fill_value=0):
    _out_none("compress", out)
    return compress(condition, a, axis, size=size, fill_value=fill_value)


def _m_take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
            indices_are_sorted=False, fill_value=None):
    _out_none("take", out)
    return take(a, indices, axis, mode=mode, unique_indices=unique_indices,
                indices_are_sorted=indices_are_sorted, fill_value=fill_value)


def _m_choose(a, choices, out=None, mode="raise"):
    _out_none("choose", out)
    return choose(a, choices, mode=mode)


def _m_repeat(a, repeats, axis=None, *, total_repeat_length=None):
    return repeat(a, repeats, axis, total_repeat_length=total_repeat_length)


def _m_put(a, ind, v, mode=None):
    return put(a, ind, v, mode)   # raises JAX's error: arrays are immutable


def _m_searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    return searchsorted(a, v, side, sorter, method=method)


def _m_dot(a, b, out=None, *, precision=None, preferred_element_type=None):
    _out_none("dot", out)
    return dot(a, b, precision=precision, preferred_element_type=preferred_element_type)


# name -> (the leading parameters of NumPy's method, NumPy's further keywords (given
# when not None), JAX's own keywords with their defaults (any other value takes the
# tangentia.numpy path, eagerly too), the function for traced arguments)
_METHODS = {
    "sum": ("axis=None, dtype=None, out=None, keepdims=False", ("initial", "where"), {}, _m_sum),
    "prod": ("axis=None, dtype=None, out=None, keepdims=False", ("initial", "where"), {},
             _m_prod),
    "max": ("axis=None, out=None, keepdims=False", ("initial", "where"), {}, _m_max),
    "min": ("axis=None, out=None, keepdims=False", ("initial", "where"), {}, _m_min),
    "all": ("axis=None, out=None, keepdims=False", ("where",), {}, _m_all),
    "any": ("axis=None, out=None, keepdims=False", ("where",), {}, _m_any),
    # (``where=``: tangentia's, as JAX's, silent where a slice is all masked; NumPy's method
    # warns "Mean of empty slice", which flax's tests, making warnings errors, meet)
    "mean": ("axis=None, dtype=None, out=None, keepdims=False", (), {"where": None}, _m_mean),
    "var": ("axis=None, dtype=None, out=None, ddof=0, keepdims=False", ("correction",),
            {"where": None}, _m_var),
    "std": ("axis=None, dtype=None, out=None, ddof=0, keepdims=False", ("correction",),
            {"where": None}, _m_std),
    "clip": ("min=None, max=None, out=None", (), {}, _m_clip),
    "compress": ("condition, axis=None, out=None", (), {"size": None, "fill_value": 0},
                 _m_compress),
    "take": ("indices, axis=None, out=None, mode=None", (),
             {"unique_indices": False, "indices_are_sorted": False, "fill_value": None},
             _m_take),
    "choose": ("choices, out=None, mode='raise'", (), {}, _m_choose),
    "repeat": ("repeats, axis=None", (), {"total_repeat_length": None}, _m_repeat),
    "put": ("indices, values, mode=None", (), {}, _m_put),
    "searchsorted": ("v, side='left', sorter=None", (), {"method": "scan"}, _m_searchsorted),
    "dot": ("b, out=None", (), {"precision": None, "preferred_element_type": None}, _m_dot),
}

# Explicit parameters (a function taking ``*args, **kwargs`` would cost 0.12 us over
# NumPy's method instead of 0.06).  NumPy's ``mode`` of take and put defaults to "raise",
# JAX's to None.
_TEMPLATE = """
def {name}(self, {params}):
    if {jax_defaults}:
        try:
            if {numpy_none}:
                return numpy_method(self, {args})
            given = {{k: v for k, v in ({numpy_pairs}) if v is not None}}
            if not _any(isinstance(v, Tracer) for v in given.values()):
                return numpy_method(self, {args}, **given)
        except ConcretizationTypeError:
            pass   # (outside the handler: errors of the traced path do not chain to it)
    token = enter()   # (tangentia's computations: silent, as at the public functions)
    try:
        return to_user(traced(self.view(ndarray), {names}{keywords}))
    finally:
        exit_(token)
"""


# NumPy's all and any hand their positional arguments to functions whose second
# parameter is ``dtype`` (``ndarray.any(0, None, True)`` misreads them), and choose
# takes further positional arguments as more choices: keywords after the first.
_BY_KEYWORD = ("all", "any", "choose")


def _eager_method(name, lead, numpy_kw, jax_kw, traced):
    """The method ``name`` of eager results: NumPy's, or ``traced`` (with JAX's
    arguments) when an argument is a tracer or a JAX-only keyword is given."""
    numpy_method = getattr(_np.ndarray, name)
    names = [p.split("=")[0].strip() for p in lead.split(",")]
    extra = list(numpy_kw) + list(jax_kw)
    params = lead + "".join(f", {k}=None" for k in numpy_kw) + "".join(
        f", {k}=_D[{i}]" for i, k in enumerate(jax_kw))
    scope = {"numpy_method": numpy_method, "traced": traced, "ndarray": _np.ndarray,
             "ConcretizationTypeError": (_TracerArrayConversionError, _ConcretizationTypeError,
                                         TypeError),   # (NumPy refuses a list axis; JAX not)
             "Tracer": _Tracer, "to_user": _to_user, "_any": builtins.any,
             "enter": _FPWarnings(name).enter, "exit_": _FPWarnings.exit,
             "_D": tuple(jax_kw.values())}
    src = _TEMPLATE.format(
        name=name, params=params, names=", ".join(names),
        args=", ".join(("mode=" if name in _BY_KEYWORD else "") + '"raise" if mode is None else '
                       'mode' if n == "mode" else f"{n}={n}" if name in _BY_KEYWORD and i else n
                       for i, n in enumerate(names)),
        jax_defaults=" and ".join(f"{k} is _D[{i}]" for i, k in enumerate(jax_kw)) or "True",
        numpy_none=" and ".join(f"{k} is None" for k in numpy_kw) or "True",
        numpy_pairs="".join(f"({k!r}, {k}), " for k in numpy_kw),
        keywords="".join(f", {k}={k}" for k in extra))
    exec(src, scope)
    method = scope[name]
    method.__qualname__ = f"ArrayImpl.{name}"
    method.__module__ = _ArrayImpl.__module__
    method.__doc__ = numpy_method.__doc__
    return method
