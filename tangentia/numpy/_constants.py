"""NumPy's constants, scalar types and dtype queries, re-exported, and the
``ndarray`` type for ``isinstance`` checks (true for traced values too)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as _np

from ..dtypes import to_dtype as _to_dtype
from ..typing import Array as ndarray  # for isinstance checks, true for traced values too

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


if TYPE_CHECKING:   # (to the type checker, tnp.dtype is numpy.dtype: what calling it gives;
    #  a metaclass's __call__ is not read as the class's signature)
    dtype = _np.dtype
else:
    class _DtypeClass(type):
        """``tnp.dtype`` is NumPy's ``dtype`` class to ``isinstance``/``issubclass``, and its
        call converts through ``dtypes.to_dtype`` (so ``tnp.dtype("bfloat16")`` works before
        anything imported ml_dtypes, as JAX's ``jnp.dtype``, which is ``np.dtype`` in a process
        where JAX imported ml_dtypes at start)."""

        def __call__(cls, dtype, align=False, copy=False):
            return _to_dtype(dtype, align, copy)

        def __instancecheck__(cls, x):
            return isinstance(x, _np.dtype)

        def __subclasscheck__(cls, c):
            return issubclass(c, _np.dtype)

        def __getitem__(cls, item):   # (``jnp.dtype[np.float64]`` in annotations)
            return _np.dtype[item]


    class dtype(metaclass=_DtypeClass):  # noqa: N801 - NumPy's name
        """``numpy.dtype`` (calling it gives a ``numpy.dtype``), also for ml_dtypes' names.

        Args:
          dtype: anything ``numpy.dtype`` takes, or a name of ml_dtypes (``"bfloat16"``, ...).
          align, copy: NumPy's.
        """


def _named(x):
    """``x``, or the dtype it names when it is a string (ml_dtypes' names too)."""
    return _to_dtype(x) if type(x) is str else x


def result_type(*args) -> _np.dtype:
    """NumPy's ``result_type`` (NumPy's promotion), also for ml_dtypes' names."""
    return _np.result_type(*map(_named, args))


def can_cast(from_, to, casting="safe") -> bool:
    """NumPy's ``can_cast``, also for ml_dtypes' names."""
    return _np.can_cast(_named(from_), _named(to), casting)


def promote_types(a, b) -> _np.dtype:
    """``jax.numpy.promote_types``: NumPy's ``promote_types`` of two dtypes (ml_dtypes'
    names too)."""
    return _np.promote_types(_to_dtype(a), _to_dtype(b))


int_ = int64
float_ = float64
double = float64
single = float32
uint = uint64


# jax.numpy's: also for bfloat16 and the other ml_dtypes types (NumPy's own reject them)
from ..dtypes import finfo, iinfo, isdtype, issubdtype  # noqa: E402
integer, floating, inexact, number, complexfloating = (
    _np.integer, _np.floating, _np.inexact, _np.number, _np.complexfloating)
iterable = _np.iterable
cdouble, csingle, complex_ = complex128, complex64, complex128
character, flexible, generic = _np.character, _np.flexible, _np.generic
signedinteger, unsignedinteger, object_ = _np.signedinteger, _np.unsignedinteger, _np.object_
ComplexWarning = _np.exceptions.ComplexWarning
# bfloat16 is ml_dtypes' (tangentia.numpy.__getattr__, imported on first use).
# Not provided: JAX's other ml_dtypes types (float8_*, float6_*, float4_e2m1fn, int1/2/4,
# uint1/2/4), which NumPy has no arithmetic for.
