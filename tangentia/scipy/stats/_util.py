"""Shared helpers of ``tangentia.scipy.stats``: argument promotion and masking.

Arguments are promoted together as NumPy does (float32 stays float32,
integers and bools become float64, Python numbers are weakly typed), with
errors that name the distribution's function and the argument.
"""
from __future__ import annotations

import numpy as np

from ... import numpy as tnp
from ..special import _promote_all

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ...typing import Array, ArrayLike


def promote(fname: str, names: Sequence[str], args: Sequence[Any]) -> list[Array]:
    """The arguments ``args`` (called ``names``) as real floating arrays of one dtype."""
    return _promote_all(fname, names, args)


def safe(cond: ArrayLike, x: ArrayLike, fill: ArrayLike) -> Array:
    """``x`` where ``cond`` holds, else ``fill``: keeps values (and gradients) finite in
    branches that a later ``where`` discards."""
    return tnp.where(cond, x, fill)


NEG_INF = -np.inf
