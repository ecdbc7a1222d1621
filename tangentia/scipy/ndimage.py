"""Image interpolation (``tangentia.scipy.ndimage``), mirroring
``jax.scipy.ndimage``: ``map_coordinates`` with spline orders 0 (nearest) and 1
(linear) and SciPy's boundary modes ``constant``, ``nearest``, ``wrap``,
``mirror`` and ``reflect``.  Differentiable in the input values and (order 1)
in the coordinates.
"""
from __future__ import annotations

import functools
import itertools
import operator


from .. import numpy as tnp

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Sequence
    from ..typing import ArrayLike


def _mirror(index, size):
    s = size - 1
    return tnp.abs((index + s) % (2 * s) - s) if s > 0 else tnp.zeros_like(index)


def _reflect(index, size):
    return (_mirror(2 * index + 1, 2 * size + 1) - 1) // 2


_FIXERS = {   # (constant mode: clamped, the value masked)
    "constant": lambda index, size: tnp.clip(index, 0, size - 1),
    "nearest": lambda index, size: tnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round(a):
    """Round half away from zero (integers unchanged)."""
    return a if tnp.issubdtype(a.dtype, tnp.integer) else tnp.sign(a) * tnp.floor(
        tnp.abs(a) + 0.5)


def _nodes(coordinate, order):
    """``[(index, weight)]``: the input samples one coordinate interpolates."""
    if order == 0:
        return [(_round(coordinate).astype(tnp.int32), 1)]
    lower = tnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(tnp.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input: ArrayLike, coordinates: Sequence[ArrayLike], order: int,
                    mode: str = "constant", cval: ArrayLike = 0.0) -> Any:
    """``input`` interpolated at ``coordinates`` (SciPy's ``map_coordinates``, orders
    0 and 1 as JAX).

    Args:
      input: the N-dimensional array.
      coordinates: a sequence of N arrays (of one shape): the points' coordinates
        along each axis of ``input``.
      order: the spline order, 0 (nearest) or 1 (linear).
      mode: how points outside are handled: ``"constant"`` (``cval``),
        ``"nearest"``, ``"wrap"``, ``"mirror"`` or ``"reflect"``.
      cval: the value outside the input in ``"constant"`` mode.

    Returns:
      The interpolated values, of the coordinates' shape and ``input``'s dtype.
    """
    input = tnp.asarray(input)
    coordinates = [tnp.asarray(c) for c in coordinates]
    cval = tnp.asarray(cval, input.dtype)
    if len(coordinates) != input.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coordinates)} != {input.ndim}")
    fixer = _FIXERS.get(mode)
    if fixer is None:
        raise NotImplementedError(
            f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. Currently "
            f"supported modes are {set(_FIXERS)}.")
    if order not in (0, 1):
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires "
                                  f"order<=1 (got order={order})")
    per_axis = [[(fixer(index, size), (0 <= index) & (index < size), weight)
                 for index, weight in _nodes(c, order)]
                for c, size in zip(coordinates, input.shape)]
    terms = []
    for corner in itertools.product(*per_axis):
        indices, valid, weights = zip(*corner)
        values = input[tuple(indices)]
        if mode == "constant":
            values = tnp.where(functools.reduce(operator.and_, valid), values, cval)
        terms.append(functools.reduce(operator.mul, weights) * values)
    result = functools.reduce(operator.add, terms)
    if tnp.issubdtype(input.dtype, tnp.integer):
        result = _round(result)
    return tnp.asarray(result).astype(input.dtype)


__all__ = ["map_coordinates"]
