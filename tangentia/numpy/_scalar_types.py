"""``tnp.float32``, ``tnp.int32``, ``tnp.bool_``, ...: NumPy's scalar types, callable on traced
values as JAX's are.

JAX code casts with the scalar types inside transformed functions (``jnp.float32(step)``,
``jnp.bool_(mask - eye)``, optax among others); NumPy's own types call ``__array__`` on a
traced value, which cannot give one.  Each public scalar type here is a subclass of NumPy's
whose call is NumPy's for concrete values (a NumPy scalar, or an ndarray for an array, as
before: eager results stay NumPy's) and ``astype`` for traced ones.  The class compares and
hashes equal to NumPy's (``tnp.float32 == np.float32``, a key of a dict keyed by NumPy's
types finds it), ``isinstance(np.float32(1), tnp.float32)`` holds, and ``np.dtype`` of it
is NumPy's dtype.  ``tnp.float32 is np.float32`` no longer holds; internal code uses
NumPy's types.
"""
from __future__ import annotations

from typing import Any

import numpy as _np

from ..core import Tracer as _Tracer
from ._conversion import asarray, astype
from ._util import _flat_seq

_NO_VALUE: Any = object()


class _ScalarMeta(type):
    """The metaclass of the scalar types: NumPy's type ``cls._numpy_type`` in every
    respect but the call on traced values."""

    _numpy_type: type

    def __call__(cls, x: Any = _NO_VALUE, *args: Any, **kwargs: Any) -> Any:
        if x is _NO_VALUE:
            return cls._numpy_type(*args, **kwargs)
        if not args and not kwargs and (isinstance(x, _Tracer) or (
                isinstance(x, (list, tuple)) and any(isinstance(e, _Tracer)
                                                     for e in _flat_seq(x)))):
            return astype(asarray(x), cls._numpy_type)
        return cls._numpy_type(x, *args, **kwargs)

    def __instancecheck__(cls, x: Any) -> bool:
        return isinstance(x, cls._numpy_type)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return sub is cls or issubclass(sub, cls._numpy_type)

    def __eq__(cls, other: Any) -> Any:
        # NumPy's type's comparison otherwise: tnp.float32 == np.dtype("float32") is True
        return other is cls or other is cls._numpy_type or cls._numpy_type == other

    def __ne__(cls, other: Any) -> Any:
        return not _ScalarMeta.__eq__(cls, other)

    def __hash__(cls) -> int:
        return hash(cls._numpy_type)


def _scalar_type(t: type) -> Any:
    name = t.__name__ if t is not _np.bool_ else "bool_"
    return _ScalarMeta(name, (t,), {"_numpy_type": t, "dtype": _np.dtype(t),
                                    "__module__": "tangentia.numpy", "__qualname__": name,
                                    "__slots__": ()})


bool_ = _scalar_type(_np.bool_)
int8, int16, int32, int64 = (_scalar_type(t) for t in (_np.int8, _np.int16, _np.int32,
                                                        _np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t) for t in (_np.uint8, _np.uint16, _np.uint32,
                                                            _np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (_np.float16, _np.float32, _np.float64))
complex64, complex128 = _scalar_type(_np.complex64), _scalar_type(_np.complex128)
int_, uint, float_, double, single = int64, uint64, float64, float64, float32
cdouble, csingle, complex_ = complex128, complex64, complex128
