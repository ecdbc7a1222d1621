"""Linear algebra (``tangentia.numpy.linalg``)."""
from __future__ import annotations

import tangentia.numpy as _tnp


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector 2-norm / Frobenius norm (the default ``ord``), or ord 1, inf, -inf for vectors."""
    if ord is None or ord == 2 and (axis is None and _tnp.ndim(x) == 1 or isinstance(axis, int)):
        return _tnp.sqrt(_tnp.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == "fro":
        return _tnp.sqrt(_tnp.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == 1:
        return _tnp.sum(_tnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == _tnp.inf:
        return _tnp.max(_tnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == -_tnp.inf:
        return _tnp.min(_tnp.abs(x), axis=axis, keepdims=keepdims)
    raise NotImplementedError(f"norm: ord={ord!r} is not supported yet")
