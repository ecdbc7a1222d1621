"""Numerical integration (``tangentia.scipy.integrate``), mirroring
``jax.scipy.integrate``: ``trapezoid``."""
from __future__ import annotations

from ..numpy import _calculus

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike


def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: ArrayLike = 1.0,
              axis: int = -1) -> Array:
    """The integral of ``y`` along ``axis`` by the composite trapezoidal rule
    (SciPy's ``trapezoid``).

    Args:
      y: the values.
      x: the sample points (default: spacing ``dx``).
      dx: the spacing when ``x`` is None.
      axis: the axis to integrate along.
    """
    return _calculus.trapezoid(y, x, dx, axis)


__all__ = ["trapezoid"]
