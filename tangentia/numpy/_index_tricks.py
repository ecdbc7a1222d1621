"""``r_`` and ``c_``: NumPy's concatenation by indexing, with traced entries.

``tnp.r_[x, 0:3, arr]`` concatenates its entries along the first axis (``c_``:
along the last, each entry made at least 2-d). Slices are ranges (``start:stop:step``,
or ``start:stop:nj`` for ``n`` evenly spaced points, ends included) and must be
concrete; the other entries may be traced (under ``grad``, ``jit`` or ``vmap``), which
NumPy's own ``r_`` cannot take. A leading string is a directive, as NumPy's and JAX's:
``"axis"``, ``"axis,ndmin"``, ``"axis,ndmin,trans1d"``, or ``"r"``/``"c"`` for a
2-d row/column result (JAX's reading of NumPy's matrix directives). Where JAX's
``trans1d`` differs from NumPy's (entries of 2 or more axes raised to ``ndmin``), NumPy's
is followed.
"""
from __future__ import annotations

import numpy as _np

from .. import core as _core
from .._array import to_user as _to_user
from ._conversion import asarray, astype
from ._creation import arange, linspace
from ._shapes import concatenate, expand_dims, reshape, transpose
from ._util import _aval


def _parse_directive(item, axis, ndmin, trans1d):
    if item in ("r", "c"):
        return axis, ndmin, trans1d, item
    parts = item.split(",")
    if len(parts) > 3:
        raise ValueError(f"unrecognized directive {item!r}: expected 'axis', 'axis,ndmin' or "
                         "'axis,ndmin,trans1d' (integers), 'r' or 'c'")
    try:
        vals = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"could not understand directive {item!r}: expected 'axis', "
                         "'axis,ndmin' or 'axis,ndmin,trans1d' (integers), 'r' or 'c'") from None
    axis = vals[0]
    if len(vals) > 1:
        ndmin = vals[1]
    if len(vals) > 2:
        trans1d = vals[2]
    return axis, ndmin, trans1d, None


def _at_least(x, ndmin, trans1d):
    """``x`` with at least ``ndmin`` axes: new axes in front (NumPy's ``ndmin``), then
    its original axes moved to position ``trans1d`` (NumPy's ``trans1d``)."""
    nd = len(_aval(x).shape)
    if nd >= ndmin:
        return x
    x = reshape(x, (1,) * (ndmin - nd) + _aval(x).shape)
    if trans1d != -1:
        k2, k1 = ndmin - nd, trans1d
        if k1 < 0:
            k1 += k2 + 1
        order = list(range(ndmin))
        x = transpose(x, order[:k1] + order[k2:] + order[k1:k2])
    return x


def _range(sl, name):
    start, stop, step = sl.start, sl.stop, sl.step
    start = 0 if start is None else start
    step = 1 if step is None else step
    for v, what in ((start, "start"), (stop, "stop"), (step, "step")):
        if isinstance(v, _core.Tracer):   # JAX's error (the bounds determine the shape)
            raise _core.concretization_error(
                v, f"the slice {what} of jnp.{name}",
                f"It arose in the slice {what} of jnp.{name}: the bounds of a slice entry "
                "must be concrete; pass traced values as entries, not as slice bounds.", "")
    if isinstance(step, complex):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


class _AxisConcat:
    """Concatenation along ``axis`` of the entries of an index expression."""

    def __init__(self, name, axis, ndmin, trans1d):
        self._name, self._axis, self._ndmin, self._trans1d = name, axis, ndmin, trans1d

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d, matrix = self._axis, self._ndmin, self._trans1d, None
        objs, scalars, arrays = [], [], []
        for i, item in enumerate(key):
            if isinstance(item, str):
                if i != 0:
                    raise ValueError(f"{self._name}: special directives must be the first entry.")
                axis, ndmin, trans1d, matrix = _parse_directive(item, axis, ndmin, trans1d)
                continue
            if isinstance(item, slice):
                obj = _range(item, self._name)
                if ndmin > 1:
                    obj = _at_least(obj, ndmin, trans1d)
                arrays.append(obj)
            elif isinstance(item, (bool, int, float, complex)):
                obj = _at_least(asarray(item), max(ndmin, 1), -1)
                scalars.append((len(objs), item))
            else:
                obj = _at_least(asarray(item), max(ndmin, 1), trans1d)
                arrays.append(obj)
            objs.append(obj)
        if not objs:
            raise ValueError(f"need at least one array to concatenate ({self._name}[] got no "
                             "entries)")
        if scalars and arrays:  # Python scalars adapt to the arrays, as in NumPy and JAX
            dt = _np.result_type(*[_aval(a).dtype for a in arrays], *[s for _, s in scalars])
            for j, _ in scalars:
                objs[j] = astype(objs[j], dt)
        out = concatenate(objs, axis=axis)
        if matrix is not None and len(_aval(out).shape) == 1:
            out = expand_dims(out, 0 if matrix == "r" else 1)
        return _to_user(out)

    def __len__(self):
        return 0

    def __repr__(self):
        return f"tangentia.numpy.{self._name}"


r_ = _AxisConcat("r_", 0, 1, -1)
c_ = _AxisConcat("c_", -1, 2, 0)
