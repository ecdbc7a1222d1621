"""Applying Python functions to arrays (``apply_along_axis``, ``vectorize``,
``fromfunction``, through ``vmap``; ``apply_over_axes``), choosing between
values (``select``, ``piecewise``) and planning contractions
(``einsum_path``, NumPy's, from the operands' shapes)."""
from __future__ import annotations

import builtins
import functools
import re
from typing import TYPE_CHECKING

import numpy as _np

from .. import dtypes as _dtypes
from .._array import to_user as _to_user
from ..api import vmap as _vmap
from ..core import Tracer as _Tracer
from ._conversion import _in, asarray, astype
from ._elementwise import logical_not, where
from ._reductions import any
from ._shapes import (broadcast_arrays, broadcast_shapes, broadcast_to, expand_dims, ndim,
                      shape, squeeze, stack)
from ._util import _aval, _axis, _eager, _is_tracer

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike


def apply_along_axis(func1d: Callable, axis: int, arr: ArrayLike, *args, **kwargs) -> Array:
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


_DIM = r"\w+"
_ARG = r"\((?:{0}(?:,{0})*)?\)".format(_DIM)
_ARGS = r"{0}(?:,{0})*".format(_ARG)
_SIGNATURE = re.compile(r"^{0}->{0}$".format(_ARGS))


def _parse_signature(signature):
    """A gufunc signature ``"(m,n),(n)->(m)"`` as (input core dims, output core dims),
    each a list of tuples of dimension names."""
    if not isinstance(signature, str) or not _SIGNATURE.match(signature.replace(" ", "")):
        raise ValueError(f"not a valid gufunc signature: {signature} (vectorize: argument "
                         "'signature' must look like '(m,n),(n)->(m)')")
    ins, outs = signature.replace(" ", "").split("->")
    return tuple([tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, part)]
                 for part in (ins, outs))


def _core_sizes(sizes, shp, dims, context, *, is_input):
    """Check the core dimensions ``dims`` of a shape ``shp`` against the sizes seen so far
    (``sizes``, updated)."""
    if is_input and len(shp) < len(dims):
        raise ValueError(f"input with shape {shp!r} does not have enough dimensions for all "
                         f"core dimensions {dims!r} {context}")
    if not is_input and len(shp) != len(dims):
        raise ValueError(f"output shape {shp!r} does not match core dimensions {dims!r} "
                         f"{context}")
    for d, n in zip(dims, shp[len(shp) - len(dims):]):
        if sizes.setdefault(d, n) != n:
            raise ValueError(f"inconsistent size for core dimension {d!r}: {n!r} vs "
                             f"{sizes[d]!r} {context}")


def vectorize(pyfunc, *, excluded=frozenset(), signature=None) -> Any:
    """``pyfunc`` applied over the leading (loop) dimensions of its arguments, batched
    with ``vmap``, as ``jax.numpy.vectorize``.

    Without ``signature`` ``pyfunc`` sees scalars; with a generalized-ufunc signature
    such as ``"(n),(n)->()"`` it sees the trailing core dimensions named there, the
    loop dimensions before them broadcast together (size-1 and missing ones are not
    materialized: the argument is left unbatched along them), and several outputs
    (``"->(),(n)"``) are returned as a tuple.

    Args:
      pyfunc: the function to vectorize.
      excluded: positions (ints) and keyword names (strs) of arguments passed to
        ``pyfunc`` unchanged.  ``None`` arguments are passed unchanged too.
      signature: a generalized-ufunc signature, or None (every argument and output is
        a scalar per call).

    Returns:
      The vectorized function.  Keyword arguments that are not excluded are
      vectorized after the positional ones (as in NumPy's ``vectorize``).

    Raises:
      TypeError: ``excluded`` holds something other than ints and strs, the number of
        arguments or outputs differs from the signature, or ``pyfunc`` returns no
        tuple when several outputs are expected.
      ValueError: an invalid signature, an argument with too few dimensions, or
        inconsistent sizes of a core dimension.

    Examples:
      >>> import tangentia.numpy as tnp
      >>> dot = tnp.vectorize(tnp.dot, signature="(n),(n)->()")
      >>> dot(tnp.ones((2, 3)), tnp.arange(3.0))
      Array([3., 3.])
    """
    excluded = set(excluded)
    if not builtins.all(isinstance(e, (int, str)) for e in excluded):
        raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r} (tangentia.numpy.vectorize)")
    if builtins.any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers "
                         "(tangentia.numpy.vectorize: positions count from 0)")
    parsed = None if signature is None else _parse_signature(signature)
    context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"

    @functools.wraps(pyfunc)
    def vectorized(*args, **kwargs):
        pos = [i for i in range(len(args)) if i not in excluded]
        names = [k for k in kwargs if k not in excluded]
        dyn = [args[i] for i in pos] + [kwargs[k] for k in names]
        if parsed is None:
            in_dims, out_dims = [()] * len(dyn), None
        else:
            in_dims, out_dims = parsed
            if len(dyn) != len(in_dims):
                raise TypeError(f"wrong number of positional arguments: expected "
                                f"{len(in_dims)!r}, got {len(dyn)!r} {context}")
        nones = [j for j, a in enumerate(dyn) if a is None]
        if builtins.any(in_dims[j] != () for j in nones):
            raise ValueError(f"Cannot pass None at locations {set(nones)} with "
                             f"signature={signature!r}")
        mapped = [j for j in range(len(dyn)) if dyn[j] is not None]
        arrs = [_in(dyn[j], "vectorize", f"argument {j}") for j in mapped]
        dims = [in_dims[j] for j in mapped]
        sizes = {}
        loops = []
        for a, d in zip(arrs, dims):
            shp = shape(a)
            _core_sizes(sizes, shp, d, context, is_input=True)
            loops.append(shp[:len(shp) - len(d)])
        bshape = broadcast_shapes(*loops) if loops else ()
        nb = len(bshape)

        def call(*xs):
            vals = list(dyn)
            for j, x in zip(mapped, xs):
                vals[j] = x
            full = list(args)
            for i, v in zip(pos, vals):
                full[i] = v
            kw = dict(kwargs)
            kw.update(zip(names, vals[len(pos):]))
            out = pyfunc(*full, **kw)
            if out_dims is not None:
                if len(out_dims) > 1 and not isinstance(out, tuple):
                    raise TypeError("output must be a tuple when multiple outputs are "
                                    f"expected, got: {out!r}\n{context}")
                outs = out if isinstance(out, tuple) else (out,)
                if len(outs) != len(out_dims):
                    raise TypeError(f"wrong number of output arguments: expected "
                                    f"{len(out_dims)!r}, got {len(outs)!r} {context}")
                seen = dict(sizes)
                for o, d in zip(outs, out_dims):
                    _core_sizes(seen, shape(o), d, context, is_input=False)
            return out

        # Loop axis k of each argument (padded on the left to ``nb``) is mapped by the
        # k-th vmap from the outside when its size is not 1; size-1 axes are squeezed
        # away and the argument is broadcast by vmap (in_axes None) instead.
        padded = [(1,) * (nb - len(lp)) + lp for lp in loops]
        squeezed = []
        for a, lp in zip(arrs, loops):
            ones = tuple(i for i, n in enumerate(lp) if n == 1)
            squeezed.append(squeeze(a, ones) if ones else a)
        f, expand = call, []
        for k in range(nb - 1, -1, -1):
            axes = tuple(None if p[k] == 1 else 0 for p in padded)
            if builtins.all(ax is None for ax in axes):
                expand.append(k)
            else:
                f = _vmap(f, in_axes=axes)
        out = f(*squeezed)
        if not expand:
            return out
        axes = tuple(sorted(expand))
        if isinstance(out, tuple):
            return _to_user(tuple(expand_dims(o, axes) for o in out))
        return _to_user(expand_dims(out, axes))

    return vectorized


def select(condlist: Sequence[ArrayLike], choicelist: Sequence[ArrayLike], default: ArrayLike = 0
           ) -> Array:
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


def piecewise(x: ArrayLike, condlist: Array | Sequence[ArrayLike],
              funclist: list[ArrayLike | Callable[..., Array]], *args, **kw) -> Array:
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


def apply_over_axes(func: Callable[[ArrayLike, int], Array], a: ArrayLike, axes: Sequence[int]
                    ) -> Array:
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


def fromfunction(function: Callable[..., Array], shape: Any, *, dtype: DTypeLike = float, **kwargs
                 ) -> Array:
    """``function`` applied to the index grid of ``shape`` (one index array per axis, of
    ``dtype``), vectorized with ``vmap`` as in JAX (``function`` sees scalar indices)."""
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    fn = function
    for i in range(len(shape)):
        fn = _vmap(fn, in_axes=tuple(0 if i == j else None for j in range(len(shape)))[::-1])
    return fn(*(astype(_np.arange(s), dtype) for s in shape), **kwargs)


def einsum_path(subscripts, *operands, optimize: bool | str | list[tuple[int, ...]] = "auto"
                ) -> Any:
    """NumPy's ``einsum_path``: the contraction order and its report, computed from the
    operands' shapes (so traced operands are fine)."""
    stand_ins = [_np.broadcast_to(_np.zeros((), _aval(o).dtype), _aval(o).shape)
                 for o in (asarray(o) if not _is_tracer(o) else o for o in operands)]
    return _np.einsum_path(subscripts, *stand_ins, optimize=optimize)
