"""Helpers shared by the ``tangentia.scipy`` modules."""
from __future__ import annotations

from .. import numpy as tnp

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike


def inexact(*arrays: ArrayLike) -> list[Array]:
    """The arrays promoted together to an inexact dtype (integers -> float64)."""
    arrays = [tnp.asarray(a) for a in arrays]
    dtype = tnp.result_type(*arrays)
    if not tnp.issubdtype(dtype, tnp.inexact):
        dtype = tnp.float64
    return [a.astype(dtype) for a in arrays]
