"""``jax._src.dtypes``, for the names libraries import from there (equinox:
``TypePromotionError``): tangentia's ``dtypes`` module."""
from ..dtypes import *  # noqa: F401,F403
from ..dtypes import TypePromotionError  # noqa: F401

import numpy as _np

DType = _np.dtype


class ExtendedDType:
    """JAX's base class of its extended dtypes (flax's fp8 meta dtype subclasses it):
    tangentia defines none; the class is here so that such definitions import."""

    type: type
    name: str


def supports_inf(dtype) -> bool:
    """Whether ``dtype`` represents infinity (False for integers and for float8 types
    without it, such as ``float8_e4m3fn``), as JAX's."""
    dt = _np.dtype(dtype)
    if dt.kind not in "fcV":
        return False
    with _np.errstate(all="ignore"):
        return bool(_np.isinf(_np.array(_np.inf).astype(dt).real.astype(_np.float64)))
