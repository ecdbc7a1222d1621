"""``jax._src.lax.lax`` stand-in: tangentia.lax plus the private helpers JAX's test files
call (``_convert_element_type`` with ``weak_type``)."""
from tangentia.lax import *  # noqa: F401,F403
import tangentia.lax as _lax
from tangentia.primitives.structural import convert_element_type as _convert
import numpy as _np


def _convert_element_type(operand, new_dtype=None, weak_type=False, sharding=None):
    dtype = _np.result_type(operand) if new_dtype is None else new_dtype
    return _convert(operand, dtype, weak_type=weak_type)


def __getattr__(name):
    return getattr(_lax, name)
