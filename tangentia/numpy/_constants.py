"""NumPy's constants, scalar types and dtype queries, re-exported, and the
``ndarray`` type for ``isinstance`` checks (true for traced values too)."""
from __future__ import annotations

import numpy as _np

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
dtype = _np.dtype
int_ = int64
float_ = float64
double = float64
single = float32
uint = uint64


# jax.numpy's: also for bfloat16 and the other ml_dtypes types (NumPy's own reject them)
from ..dtypes import finfo, iinfo, isdtype, issubdtype  # noqa: E402
integer, floating, inexact, number, complexfloating = (
    _np.integer, _np.floating, _np.inexact, _np.number, _np.complexfloating)
result_type = _np.result_type
promote_types = _np.promote_types
can_cast = _np.can_cast
iterable = _np.iterable
cdouble, csingle, complex_ = complex128, complex64, complex128
character, flexible, generic = _np.character, _np.flexible, _np.generic
signedinteger, unsignedinteger, object_ = _np.signedinteger, _np.unsignedinteger, _np.object_
ComplexWarning = _np.exceptions.ComplexWarning
# bfloat16 is ml_dtypes' (tangentia.numpy.__getattr__, imported on first use).
# Not provided: JAX's other ml_dtypes types (float8_*, float6_*, float4_e2m1fn, int1/2/4,
# uint1/2/4), which NumPy has no arithmetic for.
