"""Numerical integration (``tangentia.scipy.integrate``), mirroring
``jax.scipy.integrate``: ``trapezoid``."""
from __future__ import annotations

from ..numpy import _calculus


def trapezoid(y, x=None, dx=1.0, axis=-1):
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
