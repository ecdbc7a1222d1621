"""``ufunc`` and ``frompyfunc``: JAX's ``jnp.ufunc``, universal functions with
``reduce``, ``accumulate``, ``at``, ``reduceat`` and ``outer``.

``tnp.add``, ``tnp.multiply``, ... (the names that are ``jnp.ufunc`` objects in
JAX) stay plain functions (nothing slows their calls) carrying these methods
as attributes, and ``isinstance(tnp.add, tnp.ufunc)`` holds.  Their methods
use the matching operations where there is one (``add.reduce`` is ``sum``,
``maximum.accumulate`` is ``cummax``, ``add.at`` is ``.at[].add``, ...); the
other methods, and every method of a ``frompyfunc`` ufunc, apply the function
along the axis in a Python loop (unrolled under ``jit``, where JAX runs a
``fori_loop``/``scan``), in the dtype the function gives for two elements of
the input's dtype, as JAX's.  ``at`` applies repeated indices one after
another, as NumPy's.
"""
from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING

import numpy as _np

from .._array import to_user as _to_user
from ..api import ShapeDtypeStruct as _Struct, eval_shape as _eval_shape
from ._conversion import asarray, astype
from ._elementwise import (add, bitwise_and, bitwise_or, bitwise_xor, logaddexp, logaddexp2,
                           logical_and, logical_or, logical_xor, maximum, minimum, multiply,
                           negative, subtract)
from ._elementwise import where as _select
from ._functional import vectorize
from ._indexing import at as _at, take
from ._reductions import all, any, cummax, cummin, cumprod, cumsum, max, min, prod, sum
from ._shapes import broadcast_to, concatenate, expand_dims, moveaxis, ndim, ravel, reshape, shape
from ._util import _axis

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike

__all__ = ["ufunc", "frompyfunc"]

_AT_INPLACE = ("Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like "
               "np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.\n"
               ">>> arr = tnp.add.at(arr, ind, val, inplace=False)")


class _UfuncMeta(type):
    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or type.__instancecheck__(
            cls, getattr(obj, "_ufunc", None))


class ufunc(metaclass=_UfuncMeta):  # noqa: N801 - JAX's name
    """A universal function: ``func`` applied elementwise (broadcasting its
    ``nin`` arguments), with the methods of NumPy's ufuncs for binary ones.

    Args:
      func: the scalar function (``nin`` arguments, ``nout`` results).
      nin: the number of arguments.
      nout: the number of results.
      name: the name (default ``func.__name__``).
      nargs: JAX's ``nargs`` (default ``nin``).
      identity: the identity of a binary ``func`` (the value of an empty
        ``reduce``), or None.
      call: the elementwise implementation (default: ``vectorize(func)``).
      reduce: an implementation of ``reduce`` (default: a loop).
      accumulate: an implementation of ``accumulate`` (default: a loop).
      at: an implementation of ``at`` (default: a loop).
      reduceat: an implementation of ``reduceat`` (default: a loop).

    Examples:
      >>> import tangentia.numpy as tnp
      >>> tnp.add.outer(tnp.arange(3.0), tnp.arange(2.0))
      Array([[0., 1.],
             [1., 2.],
             [2., 3.]])
      >>> hypot = tnp.frompyfunc(lambda x, y: tnp.sqrt(x * x + y * y), 2, 1)
      >>> hypot.accumulate(tnp.array([3.0, 4.0, 12.0]))
      Array([ 3.,  5., 13.])
    """

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
                 reduce=None, accumulate=None, at=None, reduceat=None) -> None:
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        self._func = func
        self.nin = operator.index(nin)
        self.nout = operator.index(nout)
        self.nargs = operator.index(nargs or nin)
        self.identity = identity
        self._call = call or vectorize(func)
        self._impl = {"reduce": reduce, "accumulate": accumulate, "at": at,
                      "reduceat": reduceat}

    def _key(self):
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return type.__instancecheck__(ufunc, other) and self._key() == other._key()

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args: ArrayLike, out: None = None, where: None = None) -> Any:
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        return _to_user(self._call(*args))

    def _binary(self, method):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def _dtype(self, *arrays):
        """The dtype of the function's result on elements of ``arrays``' dtypes."""
        return _eval_shape(self._call, *[_Struct((), asarray(a).dtype) for a in arrays]).dtype

    def reduce(self, a: ArrayLike, axis: int | None = 0, dtype: DTypeLike | None = None,
               out: None = None, keepdims: bool = False, initial: ArrayLike | None = None,
               where: ArrayLike | None = None) -> Array:
        """Reduce ``a`` along ``axis`` with the binary function, as
        ``numpy.ufunc.reduce``.

        Args:
          a: the array.
          axis: the axis (default 0), or None for all of them.
          dtype: the dtype of the computation and result.
          out: not supported (must be None).
          keepdims: keep the reduced axis with size 1.
          initial: the starting value (default: the identity, else the first
            element).
          where: a boolean mask of the elements included.
        """
        self._binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if where is not None:
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify 'initial'.")
            if asarray(where).dtype != _np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got "
                                 f"dtype={asarray(where).dtype}")
        impl = self._impl["reduce"] or self._reduce_loop
        return _to_user(impl(asarray(a), axis=axis, dtype=dtype, keepdims=keepdims,
                             initial=initial, where=where))

    def _reduce_loop(self, arr, axis, dtype, keepdims, initial, where):
        if initial is None:
            initial = self.identity
        dtype = dtype or self._dtype(arr, arr)
        if where is not None:
            where = broadcast_to(where, shape(arr))
        if isinstance(axis, tuple):
            raise NotImplementedError("tuple of axes")
        if axis is None:
            final = (1,) * ndim(arr) if keepdims else ()
            arr = ravel(arr)
            where = None if where is None else ravel(where)
            axis = 0
        else:
            axis = _axis(axis, arr, f"{self.__name__}.reduce")
            final = shape(arr)[:axis] + ((1,) if keepdims else ()) + shape(arr)[axis + 1:]
        arr = moveaxis(arr, axis, 0)
        where = None if where is None else moveaxis(where, axis, 0)
        if shape(arr)[0] == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return broadcast_to(astype(asarray(initial), dtype), final)
        start = 0 if initial is not None else 1
        acc = broadcast_to(astype(asarray(arr[0] if initial is None else initial), dtype),
                           shape(arr)[1:])
        for i in range(start, shape(arr)[0]):
            new = self._call(acc, astype(arr[i], dtype))
            acc = new if where is None else _select(where[i], new, acc)
        return reshape(acc, final)

    def accumulate(self, a: ArrayLike, axis: int = 0, dtype: DTypeLike | None = None,
                   out: None = None) -> Array:
        """The running reductions of ``a`` along ``axis``, as
        ``numpy.ufunc.accumulate``.

        Args:
          a: the array.
          axis: the axis (default 0).
          dtype: the dtype of the computation and result.
          out: not supported (must be None).
        """
        self._binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        impl = self._impl["accumulate"] or self._accumulate_loop
        return _to_user(impl(asarray(a), axis=axis, dtype=dtype))

    def _accumulate_loop(self, arr, axis, dtype):
        axis = _axis(axis, arr, f"{self.__name__}.accumulate")
        arr = astype(arr, dtype or self._dtype(arr, arr))
        if shape(arr)[axis] == 0:
            return arr
        arr = moveaxis(arr, axis, 0)
        outs = [arr[0]]
        for i in range(1, shape(arr)[0]):
            outs.append(self._call(outs[-1], arr[i]))
        return moveaxis(concatenate([expand_dims(o, 0) for o in outs]), 0, axis)

    def at(self, a: ArrayLike, indices: Any, b: ArrayLike | None = None, /, *,
           inplace: bool = True) -> Array:
        """``a`` with the function applied at ``indices`` (with ``b`` for
        binary functions), repeated indices applied one after another, as
        ``numpy.ufunc.at``; only ``inplace=False`` (arrays are immutable).

        Args:
          a: the array.
          indices: the index expression.
          b: the second operand of a binary function.
          inplace: must be False.
        """
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        impl = self._impl["at"] or self._at_loop
        return _to_user(impl(asarray(a), indices, *(() if b is None else (b,))))

    def _at_loop(self, a, indices, *args):
        a = astype(a, self._dtype(a, *args))
        indices = indices if isinstance(indices, tuple) else (indices,)
        shapes = [_np.shape(i) for i in indices if not isinstance(i, slice)]
        idx_shape = _np.broadcast_shapes(*shapes) if shapes else ()
        if idx_shape == ():
            return _at(a)[indices].set(self._call(a[indices], *args))
        n = math.prod(idx_shape)
        flat = [i if isinstance(i, slice) else ravel(broadcast_to(i, idx_shape))
                for i in indices]
        if args:  # b broadcast over the indices, one row per index
            b = asarray(args[0])
            rest = shape(b)[len(idx_shape):]
            args = (reshape(broadcast_to(b, idx_shape + rest), (n,) + rest),)
        for k in range(n):
            idx = tuple(i if isinstance(i, slice) else i[k] for i in flat)
            a = _at(a)[idx].set(self._call(a[idx], *[x[k] for x in args]))
        return a

    def reduceat(self, a: ArrayLike, indices: ArrayLike, axis: int = 0,
                 dtype: DTypeLike | None = None, out: None = None) -> Array:
        """Reductions of ``a`` over the slices ``indices[i]:indices[i+1]``
        along ``axis`` (the element ``indices[i]`` alone where the next index
        is not larger), as ``numpy.ufunc.reduceat``.

        Args:
          a: the array.
          indices: the 1-D starting indices.
          axis: the axis (default 0).
          dtype: the dtype of the result.
          out: not supported (must be None).
        """
        self._binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        impl = self._impl["reduceat"] or self._reduceat_loop
        return _to_user(impl(asarray(a), asarray(indices), axis=axis, dtype=dtype))

    def _reduceat_loop(self, a, indices, axis, dtype):
        if ndim(a) == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={shape(a)}")
        if ndim(indices) != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got "
                             f"indices.shape={shape(indices)}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = _axis(axis, a, f"{self.__name__}.reduceat")
        if dtype is not None:
            a = astype(a, dtype)
        out = take(a, indices, axis=axis)
        bounds = concatenate([indices, asarray([shape(a)[axis]], indices.dtype)])
        others = [d for d in range(ndim(out)) if d != axis]
        start, end = expand_dims(bounds[:-1], others), expand_dims(bounds[1:], others)
        for i in range(shape(a)[axis]):
            inside = logical_and(i > start, i < end)
            out = _select(inside, self._call(out, take(a, asarray([i]), axis=axis)), out)
        return out

    def outer(self, A: ArrayLike, B: ArrayLike, /) -> Array:
        """The function of every pair of elements: the result has shape
        ``A.shape + B.shape``.

        Args:
          A: the first operand.
          B: the second operand.
        """
        self._binary("outer")
        A, B = asarray(A), asarray(B)
        return _to_user(self._call(reshape(A, shape(A) + (1,) * ndim(B)), B))


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None) -> Any:
    """A :class:`ufunc` from a scalar function of tangentia operations.

    Args:
      func: the function (``nin`` scalar arguments, ``nout`` results).
      nin: the number of arguments.
      nout: the number of results.
      identity: the identity of a binary ``func`` (used by ``reduce`` of an
        empty array and with ``where``), or None.

    Examples:
      >>> import tangentia.numpy as tnp
      >>> f = tnp.frompyfunc(lambda x, y: x * y + 1, 2, 1)
      >>> f.reduce(tnp.array([1.0, 2.0, 3.0]))
      Array(10.)
    """
    return ufunc(func, nin, nout, identity=identity)


# ---------------------------------------------------------------------------
# tangentia.numpy's own ufuncs


def _extremum(reduction, accumulation, method):
    """``(reduce, accumulate, at)`` of maximum or minimum."""
    def reduce(a, axis, dtype, keepdims, initial, where):
        out = reduction(a, axis, keepdims=keepdims, initial=initial, where=where)
        return out if dtype is None else astype(out, dtype)

    def accumulate(a, axis, dtype):
        return accumulation(a if dtype is None else astype(a, dtype), axis)

    return reduce, accumulate, lambda a, idx, b: getattr(_at(a)[idx], method)(b)


def _logical_reduction(reduction, combine):
    def reduce(a, axis, dtype, keepdims, initial, where):
        out = reduction(a, axis, keepdims=keepdims, where=where)
        if initial is not None:
            out = combine(out, asarray(initial, bool))
        return out if dtype is None else astype(out, dtype)
    return reduce


_MAX = _extremum(max, cummax, "max")
_MIN = _extremum(min, cummin, "min")

_UFUNCS = [  # (name, function, nin, identity, reduce, accumulate, at)
    ("add", add, 2, 0, sum, cumsum, lambda a, idx, b: _at(a)[idx].add(b)),
    ("multiply", multiply, 2, 1, prod, cumprod, lambda a, idx, b: _at(a)[idx].multiply(b)),
    ("maximum", maximum, 2, None, *_MAX),
    ("minimum", minimum, 2, None, *_MIN),
    ("logical_and", logical_and, 2, True, _logical_reduction(all, logical_and), None, None),
    ("logical_or", logical_or, 2, False, _logical_reduction(any, logical_or), None, None),
    ("subtract", subtract, 2, None, None, None,
     lambda a, idx, b: _at(a)[idx].add(negative(b))),
    ("logical_xor", logical_xor, 2, False, None, None, None),
    ("bitwise_and", bitwise_and, 2, -1, None, None, None),
    ("bitwise_or", bitwise_or, 2, 0, None, None, None),
    ("bitwise_xor", bitwise_xor, 2, 0, None, None, None),
    ("logaddexp", logaddexp, 2, -_np.inf, None, None, None),
    ("logaddexp2", logaddexp2, 2, -_np.inf, None, None, None),
    ("negative", negative, 1, None, None, None, None),
]


def install():
    """Give ``tangentia.numpy``'s ufunc functions the methods of their ufunc
    (before the public twins copy the functions' attributes)."""
    for name, fn, nin, identity, reduce, accumulate, at in _UFUNCS:
        uf = ufunc(fn, nin, 1, name=name, identity=identity, call=fn, reduce=reduce,
                   accumulate=accumulate, at=at)
        fn._ufunc = uf
        for attr in ("nin", "nout", "nargs", "identity"):
            setattr(fn, attr, getattr(uf, attr))
        for method in ("reduce", "accumulate", "at", "reduceat", "outer"):
            setattr(fn, method, getattr(uf, method))
