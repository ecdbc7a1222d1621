"""``jax._src.dtypes`` stand-in: tangentia.dtypes plus the private helpers JAX's test files
call (``is_weakly_typed``, ``python_scalar_types_to_dtypes``, ``default_int_dtype`` ...).
Defaults are x64's (tangentia always computes with NumPy's 64-bit defaults)."""
import ml_dtypes as _ml
import numpy as np

from tangentia.dtypes import *  # noqa: F401,F403
import tangentia.dtypes as _d
from tangentia import core as _core

bfloat16 = _d.bfloat16
int4 = np.dtype(_ml.int4).type
uint4 = np.dtype(_ml.uint4).type
int2 = np.dtype(_ml.int2).type if hasattr(_ml, "int2") else None
uint2 = np.dtype(_ml.uint2).type if hasattr(_ml, "uint2") else None
int1 = uint1 = None
_intn_dtypes = [np.dtype(t) for t in (int2, uint2, int4, uint4) if t is not None]
for _name in ("float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
              "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu",
              "float4_e2m1fn"):
    globals()[_name] = getattr(_ml, _name, None)

_float8_dtypes = [np.dtype(t) for t in (globals().get(n) for n in (
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")) if t is not None]

_weak_types = [int, float, complex]
python_scalar_types_to_dtypes = {bool: np.dtype(np.bool_), int: np.dtype(np.int64),
                                 float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def default_int_dtype():
    return np.dtype(np.int64)


def default_uint_dtype():
    return np.dtype(np.uint64)


def default_float_dtype():
    return np.dtype(np.float64)


def default_complex_dtype():
    return np.dtype(np.complex128)


def dtype(x, canonicalize=False):
    """The dtype of a value, dtype-like or Python scalar type (x64 defaults)."""
    if x is None:
        raise ValueError(f"Invalid argument to dtype: {x}.")
    if isinstance(x, type) and x in python_scalar_types_to_dtypes:
        return python_scalar_types_to_dtypes[x]
    if type(x) in python_scalar_types_to_dtypes:
        return python_scalar_types_to_dtypes[type(x)]
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.dtype(x)


def is_weakly_typed(x):
    if type(x) in _weak_types:
        return True
    try:
        return bool(getattr(_core.get_aval(x), "weak_type", False))
    except Exception:
        return False


def to_inexact_dtype(dtype):
    return np.dtype(_d.to_inexact(np.dtype(dtype)))


def to_numeric_dtype(dtype):
    dtype = np.dtype(dtype)
    return np.dtype(np.int32) if dtype == np.bool_ else dtype


def __getattr__(name):
    return getattr(_d, name)
