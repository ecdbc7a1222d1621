"""Sample summaries of ``tangentia.scipy.stats`` (JAX's ``mode``, ``rankdata``, ``sem``),
with JAX's ``nan_policy`` support and errors."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ... import numpy as tnp
from ._util import promote

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any
    from ...typing import Array, ArrayLike


class ModeResult(NamedTuple):
    """The result of :func:`mode`: the modal values and their counts."""
    mode: object
    count: object


def _check_nan_policy(fname, nan_policy):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{fname}`, we cannot know whether `x` contains "
            f"nans. Please check if nans exist in `x` outside of the `{fname}` function.")


def mode(a: ArrayLike, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> Any:
    """The most frequent value along ``axis`` (the smallest of ties) and its count
    (SciPy's ``mode``).

    Args:
      a: the array.
      axis: the axis (``None``: the flattened array).
      nan_policy: only ``"propagate"``.
      keepdims: keep the reduced axis with size one.

    Returns:
      A :class:`ModeResult` ``(mode, count)``.
    """
    x = tnp.atleast_1d(tnp.asarray(a))
    _check_nan_policy("mode", nan_policy)
    if axis is None:
        shape = (1,) * x.ndim if keepdims else ()
        x = x.ravel()[:, None]
    else:
        axis %= x.ndim
        shape = tuple(1 if keepdims and i == axis else s for i, s in enumerate(x.shape)
                      if keepdims or i != axis)
        x = tnp.moveaxis(x, axis, 0)
        x = x.reshape(x.shape[0], -1)
    if x.shape[0] == 0:
        return ModeResult(tnp.full(shape, np.nan), tnp.zeros(shape))
    counts = tnp.sum(x[:, None, :] == x[None, :, :], axis=1)
    top = counts.max(axis=0)
    values = tnp.min(tnp.where(counts == top, x, x.max(axis=0)), axis=0)
    return ModeResult(values.reshape(shape), top.reshape(shape))


def _ranks(a, method):
    """The ranks of the 1-D ``a`` (float64; all NaN if ``a`` holds a NaN)."""
    order = tnp.argsort(a, stable=True)
    inverse = tnp.zeros(a.shape, order.dtype).at[order].set(tnp.arange(a.size))
    if method == "ordinal":
        ranks = inverse + 1.0
    else:
        s = a[order]
        if method == "dense":
            new = tnp.concatenate([tnp.ones(1, bool), s[1:] != s[:-1]])
            ranks = tnp.cumsum(new)[inverse] * 1.0
        else:
            lo = tnp.searchsorted(s, a, side="left") + 1.0
            hi = tnp.searchsorted(s, a, side="right") * 1.0
            ranks = {"min": lo, "max": hi, "average": 0.5 * (lo + hi)}[method]
    return tnp.where(tnp.any(tnp.isnan(a)), np.nan, ranks.astype(tnp.float64))


def rankdata(a: ArrayLike, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Array:
    """The ranks (from 1) of the data, ties broken by ``method`` (SciPy's ``rankdata``).

    Args:
      a: the array.
      method: ``"average"``, ``"min"``, ``"max"``, ``"dense"`` or ``"ordinal"``.
      axis: rank along this axis (``None``: the flattened array).
      nan_policy: only ``"propagate"`` (any NaN makes every rank NaN).
    """
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    a = tnp.asarray(a)
    if axis is not None:
        return tnp.apply_along_axis(_ranks, axis, a, method)
    return _ranks(a.ravel(), method)


def sem(a: ArrayLike, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Array:
    """The standard error of the mean along ``axis`` (SciPy's ``sem``).

    Args:
      a: the array.
      axis: the axis (``None``: all).
      ddof: the delta degrees of freedom of the standard deviation.
      nan_policy: ``"propagate"`` or ``"omit"`` (NaN ignored).
      keepdims: keep the reduced axis with size one.
    """
    (b,) = promote("sem", ("a",), (a,))
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / np.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = tnp.sum(~tnp.isnan(b), axis, keepdims=keepdims)
        return tnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / tnp.sqrt(count).astype(
            b.dtype)
    raise ValueError(f"{nan_policy} is not supported")
