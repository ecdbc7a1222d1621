"""``jax.typing``: the types of annotations of code written for JAX.

``ArrayLike`` is what the functions of ``tangentia.numpy`` accept as an array
argument (arrays, tracers, NumPy scalars and Python numbers); ``DTypeLike`` what
they accept as a dtype.  They are for annotations and ``isinstance`` checks:

    >>> import numpy as np, tangentia.numpy as tnp
    >>> from tangentia.typing import ArrayLike
    >>> [isinstance(v, ArrayLike) for v in (tnp.ones(2), np.float32(1), 2.0, "2")]
    [True, True, True, False]
"""
from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from .core import Tracer

__all__ = ["ArrayLike", "DTypeLike"]

ArrayLike = Union[np.ndarray, Tracer, np.bool_, np.number, bool, int, float, complex]
"""An array, a tracer, a NumPy scalar or a Python number (eager results are
``numpy.ndarray``s)."""


class _SupportsDType(Protocol):
    @property
    def dtype(self) -> np.dtype: ...


DTypeLike = Union[str, type[Any], np.dtype, _SupportsDType]
"""A dtype, its name, a scalar type (``float``, ``np.float32``) or a value with a
``.dtype``."""
