"""Interpolation (``tangentia.scipy.interpolate``), mirroring
``jax.scipy.interpolate``: :class:`RegularGridInterpolator`, linear and
nearest-neighbour interpolation on a rectilinear grid in any number of
dimensions.

Written over ``tangentia.numpy``, so an interpolation is differentiable with
respect to the grid values and the query points (piecewise linear in the
points), works under ``vmap`` and ``jit``, and the interpolator is a pytree
(its grid, values and fill value are its leaves), so it can be an argument of
a transformed function.
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import core
from .. import numpy as tnp
from ..tree_util import register_pytree_node
from ._util import inexact

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")
_NAME = "RegularGridInterpolator"


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not defined ({_NAME}: argument method must be "
                         f"one of {list(_METHODS)}; SciPy's spline methods are not implemented)")


def _inexact(x, argname):
    if not core.is_array_like(x) and not isinstance(x, (list, tuple)):
        raise TypeError(f"{_NAME}: {argname} must be an array, got {type(x).__name__}")
    return inexact(x)[0]


def _concrete(x):
    """``x`` as a NumPy array if its value is known now (eagerly, or the
    primal of an eager ``grad``), else ``None``."""
    if not isinstance(x, core.Tracer):
        return np.asarray(x)
    try:
        return np.asarray(x.concrete_value(_NAME))
    except core.ConcretizationTypeError:
        return None


def _grid_axis(i, p):
    """Grid axis ``i`` as an inexact 1-D array, and whether it descends (known
    only for concrete axes; a traced axis is taken as ascending, as JAX does)."""
    p = _inexact(p, f"points[{i}]")
    if p.ndim != 1 or p.shape[0] == 0:
        raise ValueError(f"The points in dimension {i} must be 1-dimensional and not empty "
                         f"({_NAME}: points[{i}] has shape {p.shape})")
    value = _concrete(p)
    if value is None or value.size < 2 or np.all(value[1:] > value[:-1]):
        return p, False
    if np.all(value[1:] < value[:-1]):
        return tnp.flip(p), True
    raise ValueError(f"The points in dimension {i} must be strictly ascending or descending "
                     f"({_NAME}: argument points)")


class RegularGridInterpolator:
    """Interpolation on a rectilinear grid (``jax.scipy.interpolate.RegularGridInterpolator``).

    Linear or nearest-neighbour interpolation of ``values`` given at the points
    of the grid ``points[0] x points[1] x ...``.  As SciPy, the axes may be
    ascending or descending (checked when they are concrete: an axis traced
    under ``jit`` is taken as strictly ascending, as JAX does), and
    ``bounds_error=True`` raises for points outside the grid, which needs the
    points' values (so not under ``jit`` or ``vmap``: JAX refuses it
    altogether).  Points with a NaN coordinate give NaN, as in SciPy.

    Args:
      points: a sequence of ``n`` 1-D arrays, the grid's coordinates along each
        axis (strictly monotonic).
      values: the values on the grid, of shape ``(len(points[0]), ...,
        len(points[n - 1]), ...)``; trailing axes are interpolated jointly.
      method: ``"linear"`` or ``"nearest"``.
      bounds_error: raise a ``ValueError`` for points outside the grid (JAX's
        default ``False``; SciPy's default is ``True``).
      fill_value: the value outside the grid (default NaN); ``None``
        extrapolates from the nearest cell.

    Examples:
      >>> import numpy as np
      >>> from tangentia.scipy.interpolate import RegularGridInterpolator
      >>> x, y = np.array([0.0, 1.0, 2.0]), np.array([0.0, 10.0])
      >>> interp = RegularGridInterpolator((x, y), np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]))
      >>> interp(np.array([[0.5, 5.0], [1.5, 10.0], [3.0, 0.0]]))
      Array([1.5, 4. , nan])
      >>> interp(np.array([[0.7, 2.0]]), method="nearest")
      Array([2.])
    """

    def __init__(self, points: Any, values: Any, method: str = "linear",
                 bounds_error: bool = False, fill_value: Any = np.nan) -> None:
        _check_method(method)
        values = _inexact(values, "values")
        points = tuple(points)
        if not points:
            raise ValueError(f"{_NAME}: points must hold at least one axis of grid coordinates")
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions ({_NAME}: arguments points and values)")
        grid, descending = [], []
        for i, p in enumerate(points):
            axis, flipped = _grid_axis(i, p)
            if axis.shape[0] != values.shape[i]:
                raise ValueError(f"There are {axis.shape[0]} points and {values.shape[i]} values "
                                 f"in dimension {i} ({_NAME}: arguments points and values)")
            grid.append(axis)
            if flipped:
                descending.append(i)
        if descending:
            values = tnp.flip(values, axis=tuple(descending))
        if fill_value is not None:
            fill_value = _inexact(fill_value, "fill_value")
            if fill_value.ndim != 0 or not np.can_cast(fill_value.dtype, values.dtype,
                                                       casting="same_kind"):
                raise ValueError(f"fill_value must be either 'None' or of a type compatible with "
                                 f"values ({_NAME}: a scalar castable to {values.dtype} is "
                                 f"expected, got {fill_value.dtype} of shape {fill_value.shape})")
        self.method = method
        self.bounds_error = bool(bounds_error)
        self.fill_value = fill_value
        self.grid = tuple(grid)
        self.values = values

    def __call__(self, xi: Any, method: str | None = None) -> Array:
        """Interpolate at the points ``xi``.

        Args:
          xi: the points, an array of shape ``(..., n)`` (a 1-D array is one
            point, or ``m`` points when ``n == 1``), or a tuple of ``n``
            coordinate arrays broadcast together.
          method: ``"linear"`` or ``"nearest"``; default the interpolator's.

        Returns:
          The values at ``xi``, of shape ``xi.shape[:-1] + values.shape[n:]``.
        """
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = self._points(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        shape = xi.shape[:-1] + self.values.shape[ndim:]
        xi = xi.reshape(-1, ndim)
        if self.bounds_error:
            self._check_bounds(xi)
        cells, offsets = zip(*[self._locate(g, x) for g, x in zip(self.grid, xi.T)])
        if method == "linear":
            result = self._linear(cells, offsets)
        else:
            result = self.values[tuple(tnp.where(t <= 0.5, i, tnp.minimum(i + 1, g.shape[0] - 1))
                                       for g, i, t in zip(self.grid, cells, offsets))]
        trailing = (slice(None),) + (None,) * (result.ndim - 1)
        if not self.bounds_error and self.fill_value is not None:
            outside = tnp.zeros(xi.shape[0], bool)
            for g, x in zip(self.grid, xi.T):
                outside = outside | (x < g[0]) | (x > g[-1])
            result = tnp.where(outside[trailing], self.fill_value.astype(result.dtype), result)
        nans = tnp.any(tnp.isnan(xi), axis=-1)
        return tnp.where(nans[trailing], np.nan, result).reshape(shape)

    @staticmethod
    def _points(xi, ndim):
        """The points as an array of shape ``(..., ndim)``, as SciPy reads them."""
        if isinstance(xi, tuple) and len(xi) == 1:
            xi = xi[0]
        if isinstance(xi, tuple):
            coords = tnp.broadcast_arrays(*[_inexact(x, "xi") for x in xi])
            return tnp.stack(coords, axis=-1)
        xi = _inexact(xi, "xi")
        return xi.reshape(-1, ndim) if xi.ndim <= 1 and xi.size % ndim == 0 else xi

    def _check_bounds(self, xi):
        value = _concrete(xi)
        if value is None:
            raise NotImplementedError(
                f"`bounds_error` takes no effect under JIT ({_NAME}: bounds_error=True checks "
                f"the points xi, which are traced here; use bounds_error=False with a "
                f"fill_value)")
        for i, g in enumerate(self.grid):
            lo, hi = _concrete(g[0]), _concrete(g[-1])
            if lo is not None and not np.all((lo <= value[:, i]) & (value[:, i] <= hi)):
                raise ValueError(f"One of the requested xi is out of bounds in dimension {i} "
                                 f"({_NAME}: bounds_error=True)")

    @staticmethod
    def _locate(g, x):
        """The cell ``[g[i], g[i + 1]]`` of each coordinate ``x`` (the first or
        last cell outside the grid) and ``x``'s offset in it, in cell units."""
        n = g.shape[0]
        if n == 1:
            return tnp.zeros(x.shape, tnp.int64), tnp.zeros_like(x)
        i = tnp.clip(tnp.searchsorted(g, x) - 1, 0, n - 2)
        lo = g[i]
        return i, (x - lo) / (g[i + 1] - lo)

    def _linear(self, cells, offsets):
        """The sum over the cell's corners of the corner value times its weight."""
        trailing = (slice(None),) + (None,) * (self.values.ndim - len(cells))
        total = 0.0
        for corner in itertools.product((0, 1), repeat=len(cells)):
            weight, index = 1.0, []
            for upper, g, i, t in zip(corner, self.grid, cells, offsets):
                weight = weight * (t if upper else 1.0 - t)
                index.append(tnp.minimum(i + upper, g.shape[0] - 1))
            total = total + self.values[tuple(index)] * weight[trailing]
        return total


def _flatten(interp):
    return ((interp.grid, interp.values, interp.fill_value),
            (interp.method, interp.bounds_error))


def _unflatten(aux, children):
    # not through __init__: transformations rebuild pytrees from tracers and
    # placeholders, which its checks cannot look at
    interp = object.__new__(RegularGridInterpolator)
    interp.grid, interp.values, interp.fill_value = children
    interp.method, interp.bounds_error = aux
    return interp


register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)
