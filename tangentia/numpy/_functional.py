"""Applying Python functions to arrays (``apply_along_axis``, ``vectorize``,
``fromfunction``, through ``vmap``; ``apply_over_axes``), choosing between
values (``select``, ``piecewise``) and planning contractions
(``einsum_path``, NumPy's, from the operands' shapes)."""
from __future__ import annotations

import numpy as _np

from .. import dtypes as _dtypes
from ..api import vmap as _vmap
from ..core import Tracer as _Tracer
from ._conversion import _in, asarray, astype
from ._elementwise import logical_not, where
from ._reductions import any
from ._shapes import (broadcast_arrays, broadcast_shapes, broadcast_to, expand_dims, ndim,
                      shape, stack)
from ._util import _aval, _axis, _eager, _is_tracer


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """Apply ``func1d`` to 1-D slices along ``axis`` (vectorized with vmap)."""
    arr = _in(arr, "apply_along_axis", "arr")
    nd = ndim(arr)
    ax = _axis(axis, arr, "apply_along_axis", "arr")

    def func(x):
        return func1d(x, *args, **kwargs)
    for i in range(1, nd - ax):
        func = _vmap(func, in_axes=i, out_axes=-1)
    for i in range(ax):
        func = _vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """Vectorize a scalar function with ``vmap`` over broadcast arguments
    (``signature`` is not supported)."""
    if signature is not None:
        raise NotImplementedError("vectorize: signature= is not supported yet")

    def vectorized(*args, **kwargs):
        dyn = [i for i in range(len(args)) if i not in excluded]
        arrs = [asarray(args[i]) if not _is_tracer(args[i]) else args[i] for i in dyn]
        bshape = broadcast_shapes(*[shape(a) for a in arrs]) if arrs else ()
        arrs = [broadcast_to(a, bshape) for a in arrs]

        def call(*xs):
            full = list(args)
            for i, x in zip(dyn, xs):
                full[i] = x
            return pyfunc(*full, **kwargs)

        f = call
        for _ in range(len(bshape)):
            f = _vmap(f)
        return f(*arrs)

    return vectorized


def select(condlist, choicelist, default=0):
    """The entry of the first true condition's choice (``default`` where none holds)."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: arguments 'condlist' and 'choicelist' must have the same "
                         f"length, got {len(condlist)} and {len(choicelist)}")
    if not condlist:
        raise ValueError("select: argument 'condlist' is empty; select needs at least one "
                         "condition")
    conds = [_in(c, "select", f"condlist[{i}]") for i, c in enumerate(condlist)]
    for i, c in enumerate(conds):
        if _aval(c).dtype != _dtypes.bool_:
            raise TypeError(f"select: condlist[{i}] must be a boolean array, got "
                            f"{_aval(c).str_short()}")
    choices = [_in(c, "select", f"choicelist[{i}]") for i, c in enumerate(choicelist)]
    if _eager(*conds, *choices, default):
        return _np.asarray(_np.select(conds, choices, default))
    out = default
    for c, v in reversed(list(zip(conds, choices))):
        out = where(c, v, out)
    s = broadcast_shapes(*[shape(x) for x in conds + choices], shape(default))
    return broadcast_to(out, s)


def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluate ``funclist[i]`` where ``condlist[i]`` holds (later conditions win; an
    extra last function applies where none holds).  Under transformations every
    function is evaluated on all of ``x``."""
    x = _in(x, "piecewise", "x")
    nd = ndim(x)
    if _is_tracer(condlist) or isinstance(condlist, (bool, _np.bool_)) or (
            isinstance(condlist, _np.ndarray) and condlist.ndim == nd and nd > 0) or (
            isinstance(condlist, (list, tuple)) and condlist
            and not isinstance(condlist[0], (list, tuple, _np.ndarray, _Tracer)) and nd != 0):
        condlist = [condlist]
    conds = []
    for i, c in enumerate(condlist):
        c = _in(c, "piecewise", f"condlist[{i}]")
        if _aval(c).dtype != _dtypes.bool_:
            raise TypeError(f"piecewise: condlist[{i}] must be a boolean array, got "
                            f"{_aval(c).str_short()}")
        conds.append(c)
    n = len(conds)
    funclist = list(funclist)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"piecewise: with {n} condition(s) argument 'funclist' must have {n} or "
                         f"{n + 1} functions, got {len(funclist)}")
    if len(funclist) == n + 1:
        none = logical_not(any(stack(broadcast_arrays(*conds)), 0)) if n else \
            _np.ones(shape(x), bool)
        conds.append(none)
    if _eager(x, *conds):
        return _np.asarray(_np.piecewise(x, conds, funclist, *args, **kw))
    dt = _aval(x).dtype
    out = _np.zeros(shape(x), dt)
    for c, f in zip(conds, funclist):
        v = f(x, *args, **kw) if callable(f) else f
        out = where(c, astype(v, dt) if _is_tracer(v) or isinstance(v, _np.ndarray) else v, out)
    return astype(broadcast_to(out, shape(x)), dt)


def apply_over_axes(func, a, axes):
    """Apply ``func(a, axis)`` for each axis in ``axes`` in turn, keeping the dimensions
    (``func``'s result has the same rank as its input, or one less: the axis is then
    restored with size 1)."""
    a = _in(a, "apply_over_axes", "a")
    for ax in ([axes] if isinstance(axes, int) else axes):
        nd = ndim(a)
        ax = _axis(ax, a, "apply_over_axes", "axes")
        res = func(a, ax)
        if ndim(res) == nd - 1:
            res = expand_dims(res, ax)
        elif ndim(res) != nd:
            raise ValueError("function is not returning an array of the correct shape "
                             "(tangentia.numpy.apply_over_axes: argument 'func' must keep the "
                             "rank or drop the axis)")
        a = res
    return a


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function`` applied to the index grid of ``shape`` (one index array per axis, of
    ``dtype``), vectorized with ``vmap`` as in JAX (``function`` sees scalar indices)."""
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    fn = function
    for i in range(len(shape)):
        fn = _vmap(fn, in_axes=tuple(0 if i == j else None for j in range(len(shape)))[::-1])
    return fn(*(astype(_np.arange(s), dtype) for s in shape), **kwargs)


def einsum_path(subscripts, *operands, optimize="auto"):
    """NumPy's ``einsum_path``: the contraction order and its report, computed from the
    operands' shapes (so traced operands are fine)."""
    stand_ins = [_np.broadcast_to(_np.zeros((), _aval(o).dtype), _aval(o).shape)
                 for o in (asarray(o) if not _is_tracer(o) else o for o in operands)]
    return _np.einsum_path(subscripts, *stand_ins, optimize=optimize)
