"""Dtype rules: NumPy promotion, float64 default, weakly typed Python scalars.

``float0`` is the tangent dtype of integer and boolean values: a zero-size
dtype, as in JAX, so a tangent of an integer input carries no data.
"""
from functools import lru_cache

import numpy as np

float0 = np.dtype([("float0", np.void, 0)])

bool_ = np.dtype(np.bool_)
float64 = np.dtype(np.float64)
float32 = np.dtype(np.float32)
int64 = np.dtype(np.int64)
complex128 = np.dtype(np.complex128)

# A weak (Python-scalar) value of each kind, used to ask NumPy's own
# promotion rules (NEP 50) what a strong dtype combined with it becomes.
_WEAK_PROTOTYPE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}

_PY_SCALAR_DTYPE = {bool: bool_, int: int64, float: float64, complex: complex128}


def py_scalar_dtype(x):
    """Dtype of a Python scalar (None if ``x`` is not one)."""
    return _PY_SCALAR_DTYPE.get(type(x))


def is_float(dtype):
    return dtype.kind in "fc"


def is_inexact(dtype):
    return dtype.kind in "fc"


def is_integer(dtype):
    return dtype.kind in "iub"


@lru_cache(maxsize=4096)
def result_type(*dtypes_and_weak):
    """Promote ``(dtype, weak)`` pairs with NumPy's rules; returns (dtype, weak).

    Weak entries behave like Python scalars of their kind; the result is weak
    only when every input is weak.
    """
    strong = [d for d, w in dtypes_and_weak if not w]
    weak = [d for d, w in dtypes_and_weak if w]
    if not strong:
        return np.result_type(*weak), True
    operands = strong + [_WEAK_PROTOTYPE[d.kind] for d in weak]
    return np.result_type(*operands), False


def to_inexact(dtype):
    """The floating dtype an integer/bool dtype becomes under float ops."""
    if dtype.kind in "fc":
        return dtype
    return float64


def tangent_dtype(dtype):
    """Dtype of tangents/cotangents for values of ``dtype``."""
    return dtype if dtype.kind in "fc" else float0


def canonicalize(dtype):
    return np.dtype(dtype)
