"""Vectorization: vmap."""
from __future__ import annotations

import collections
import functools
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .. import core
from ..interpreters import batching
from .._messages import fun_name as _fun_name, jax_type as _jax_type
from .._traceback_util import api_boundary
from ..tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_structure, tree_unflatten
from ._util import _check_callable, _flatten_fun, _parameters

if TYPE_CHECKING:
    from ..typing import AxisName

_F = TypeVar("_F", bound=Callable)

# ---------------------------------------------------------------------------
# vmap


def _broadcast_prefix(prefix, tree, what):
    """Expand ``prefix`` (a pytree prefix of ``tree``) to one entry per leaf."""
    out = []

    def rec(p, t):
        if p is None or isinstance(p, int):
            out.extend([p] * len(tree_flatten(t)[0]))
            return
        if isinstance(p, (tuple, list)) and isinstance(t, (tuple, list)) and len(p) == len(t):
            for a, b in zip(p, t):
                rec(a, b)
            return
        if isinstance(p, dict) and isinstance(t, dict) and set(p) == set(t):
            for k in sorted(t):
                rec(p[k], t[k])
            return
        if type(p) is type(t):   # any other container (a registered class: an equinox Module)
            p_children, p_node = tree_flatten(p, is_leaf=lambda x: x is not p)
            t_children, t_node = tree_flatten(t, is_leaf=lambda x: x is not t)
            if p_node == t_node and not (len(p_children) == 1 and p_children[0] is p):
                for a, b in zip(p_children, t_children):
                    rec(a, b)
                return
        raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                         f"value; {p!r} does not match the structure {tree_structure(t)} (it "
                         "must be an int, None, or a pytree prefix of it)")

    rec(prefix, tree)
    return out


_AXES_TYPES = "an int, None, or a tuple of entries corresponding to the positional arguments " \
    "passed to the function"


def _check_axes_leaves(axes, what):
    for leaf in tree_flatten(axes)[0]:
        if isinstance(leaf, bool) or not isinstance(leaf, (int, np.integer)):
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container with "
                            f"those types as leaves, but got {axes}.")


def _leaf_names(fun, args, kwargs):
    """JAX's names for the flat leaves of ``(args, kwargs)`` in errors: ``argument x``,
    ``argument p['a']``, ``kwargs['b']``."""
    params = [p.name for p in _parameters(fun)]
    names = []
    for path, _ in tree_flatten_with_path(tuple(args))[0]:
        i = path[0].idx
        names.append(f"argument {params[i]}{keystr(path[1:])}" if i < len(params)
                     else f"args{keystr(path)}")
    names += [f"kwargs{keystr(path)}" for path, _ in tree_flatten_with_path(kwargs)[0]]
    return names


def _rank_error(fun, args, kwargs, i, ax, shape):
    need = ax + 1 if ax >= 0 else -ax
    name = _leaf_names(fun, args, kwargs)[i]
    detail = (f"{name} of vmap of {_fun_name(fun)} is a scalar, with no axis to map over"
              if not shape else f"in_axes={ax} is out of range for {name} of vmap of "
              f"{_fun_name(fun)}")
    return ValueError(f"vmap was requested to map its argument along axis {ax}, which implies "
                      f"that its rank should be at least {need}, but is only {len(shape)} (its "
                      f"shape is {shape}): {detail}")


def _checked_axis_size(size, fun):
    """``axis_size`` where no argument is mapped: a nonnegative int (JAX's TypeErrors, which
    its broadcast of the unmapped values raises, otherwise)."""
    try:
        n = operator.index(size)
    except TypeError:
        raise TypeError("broadcast_in_dim shape must have every element be an integer type, "
                        f"got ({type(size)},). (vmap of {_fun_name(fun)}: axis_size must be an "
                        f"int, got {size!r:.40})") from None
    if n < 0:
        raise TypeError("broadcast_in_dim shape must have every element be nonnegative, got "
                        f"({n},). (vmap of {_fun_name(fun)}: axis_size={n})")
    return n


def _sizes_error(fun, args, kwargs, leaves, axes, axis_size):
    """JAX's message for mapped axes of different sizes (or sizes other than
    ``axis_size``): the sizes, most common first, each with an example argument."""
    names = _leaf_names(fun, args, kwargs)
    mapped = [(i, ax, core.get_aval(x).shape[ax]) for i, (x, ax) in enumerate(zip(leaves, axes))
              if ax is not None]
    counts = collections.Counter(s for _, _, s in mapped).most_common()
    lines = [] if axis_size is None else [f"the `axis_size` argument was {axis_size}"]
    for k, (size, count) in enumerate(counts):
        i, ax, _ = next(m for m in mapped if m[2] == size)
        a = core.get_aval(leaves[i])
        where = f"axis {ax} of {names[i]} of type {_jax_type(a)}"
        if count == 1:
            lines.append(f"one axis had size {size}: {where}")
        else:
            lines.append(f"{'most' if k == 0 and axis_size is None else 'some'} axes ({count} "
                         f"of them) had size {size}, e.g. {where}")
    return ValueError("vmap got inconsistent sizes for array axes to be mapped:\n" +
                      ";\n".join(f"  * {line}" for line in lines) +
                      f"\n(vmap of {_fun_name(fun)}: all mapped axes must have the same size)")


def vmap(fun: _F, in_axes: int | None | Sequence[Any] = 0, out_axes: Any = 0,
         axis_name: AxisName | None = None, axis_size: int | None = None,
         spmd_axis_name: AxisName | tuple[AxisName, ...] | None = None) -> _F:
    """Vectorize ``fun`` over a leading (or ``in_axes``) axis of its inputs.

    ``vmap(fun)(xs)`` equals stacking ``fun(x)`` for each ``x`` along the
    mapped axis, computed by batched operations instead of a loop.  Custom
    rules (``custom_jvp``, ``custom_vjp``, ``custom_vmap``) keep their meaning
    inside.

    Args:
      fun: the function to vectorize (arrays or pytrees in and out).
      in_axes: the mapped axis of each positional argument: an int, None
        (not mapped, broadcast to every element) or a pytree prefix of the
        arguments of those (a tuple with one entry per argument).  Keyword
        arguments are mapped over axis 0.
      out_axes: where the mapped axis goes in the outputs: an int, None (an
        output that does not depend on the mapped axis) or a pytree prefix.
      axis_name: a name for the mapped axis (for collectives such as
        ``lax.psum`` where supported).
      axis_size: the size of the mapped axis, needed when no argument is
        mapped.
      spmd_axis_name: accepted for JAX compatibility; must be None.

    Returns:
      A function with ``fun``'s arguments, returning its outputs batched
      along ``out_axes``.

    Raises:
      TypeError: ``in_axes`` or ``out_axes`` is not made of ints and None
        (raised by ``vmap`` itself), or ``fun`` returns a value that is not an
        array.
      ValueError: the mapped axes of the arguments have different sizes (or
        differ from ``axis_size``), an axis is out of range, nothing is mapped
        and ``axis_size`` is not given, or the axes do not match the structure
        of the arguments or outputs.  The messages begin with JAX's wording.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> tg.vmap(tnp.dot, in_axes=(0, None))(tnp.ones((2, 3)), tnp.arange(3.0))
      Array([3., 3.])
      >>> per_example_grads = tg.vmap(tg.grad(lambda w, x: tnp.sum(w * x) ** 2),
      ...                             in_axes=(None, 0))
      >>> per_example_grads(tnp.ones(2), tnp.array([[1.0, 0.0], [1.0, 1.0]]))
      Array([[2., 0.],
             [4., 4.]])
    """
    _check_callable(fun, "vmap")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, np.integer, tuple))) or \
            isinstance(in_axes, bool):
        raise TypeError(f"vmap in_axes must be {_AXES_TYPES}, but got {in_axes}.")
    _check_axes_leaves(in_axes, "in_axes")
    _check_axes_leaves(out_axes, "out_axes")
    in_axes_by_tree = {}  # the flat in_axes for each structure of the arguments

    def flat_in_axes(args, kwargs, in_tree):
        axes = in_axes_by_tree.get(in_tree)
        if axes is None:
            if isinstance(in_axes, tuple) and len(in_axes) != len(args):
                raise ValueError(f"vmap in_axes must be {_AXES_TYPES}, but got "
                                 f"len(in_axes)={len(in_axes)}, len(args)={len(args)} (vmap of "
                                 f"{_fun_name(fun)}; keyword arguments are mapped over axis 0)")
            axes = _broadcast_prefix(in_axes if isinstance(in_axes, tuple) else
                                     (in_axes,) * len(args), args, "in_axes") + \
                [0] * len(tree_flatten(kwargs)[0])
            in_axes_by_tree[in_tree] = axes
        return axes

    @api_boundary
    @functools.wraps(fun, updated=())
    def vmapped(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs))
        axes = flat_in_axes(args, kwargs, in_tree)
        dims = []
        size = None
        uneven = False
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                dims.append(None)
                continue
            shape = core.get_aval(x).shape
            if not -len(shape) <= ax < len(shape):
                raise _rank_error(fun, args, kwargs, i, ax, shape)
            d = ax + len(shape) if ax < 0 else ax
            dims.append(d)
            if size is None:
                size = shape[d]
            elif shape[d] != size:
                uneven = True
        if uneven or (axis_size is not None and size not in (None, axis_size)):
            raise _sizes_error(fun, args, kwargs, leaves, axes, axis_size)
        if size is None:
            size = axis_size
            if size is not None:
                size = _checked_axis_size(size, fun)
            if size is None:
                if not leaves:
                    raise ValueError(
                        "vmap wrapped function must be passed at least one argument containing "
                        f"an array or axis_size must be specified, got empty *args={args} and "
                        f"**kwargs={kwargs} (vmap of {_fun_name(fun)})")
                raise ValueError("vmap must have at least one non-None value in in_axes or "
                                 f"axis_size must be specified (vmap of {_fun_name(fun)})")
        store = {}
        flat = _flatten_fun(fun, in_tree, store)

        def out_dims(n):
            out_tree = store["out_tree"]
            if isinstance(out_axes, int) or out_axes is None:
                return [out_axes] * n
            return _broadcast_prefix(out_axes, tree_unflatten(out_tree, [0] * n), "out_axes")

        def out_path(i):   # (JAX's error names the output: "at vmap out_axes[0]['w']")
            n = store["out_tree"].num_leaves
            return keystr(tree_flatten_with_path(tree_unflatten(store["out_tree"],
                                                                range(n)))[0][i][0])

        outs = batching.vmap_flat(flat, leaves, dims, size, out_dims, axis_name=axis_name,
                                  out_path=out_path)
        return tree_unflatten(store["out_tree"], outs)

    return vmapped


# ---------------------------------------------------------------------------
# pmap: one device


def pmap(fun: Callable, axis_name: AxisName | None = None, *,
         in_axes: int | None | Sequence[Any] = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Any = None,
         backend: str | None = None, axis_size: int | None = None,
         donate_argnums: int | Sequence[int] = ()) -> Any:
    """Map ``fun`` over the devices, as ``jax.pmap``: here over the one CPU
    device, so the mapped axis has size 1 (as JAX's ``pmap`` on a machine with
    one CPU device); it runs as ``jit(vmap(fun))``, collectives over
    ``axis_name`` included.  A larger mapped axis raises ``ValueError``: use
    ``vmap``.

    Args:
      fun: the function to map.
      axis_name: a name for the mapped axis (for collectives such as ``lax.psum``).
      in_axes: as ``vmap``'s, for the positional arguments that are not static
        (an entry per positional argument is also accepted).
      out_axes: as ``vmap``'s.
      static_broadcasted_argnums: positional arguments passed as they are
        (hashable; a new value traces again), as ``jit``'s ``static_argnums``.
      devices: None, or a sequence of one device.
      backend: None or ``"cpu"``.
      axis_size: None, or 1.
      donate_argnums: accepted for JAX compatibility (nothing is donated).

    Returns:
      A function with ``fun``'s arguments, returning its outputs with the
      mapped axis of size 1 at ``out_axes``.
    """
    from .staging import jit
    _check_callable(fun, "pmap")
    static = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
              else tuple(static_broadcasted_argnums))
    if devices is not None and len(devices) != 1:
        raise ValueError(f"pmap: devices must hold one device (tangentia runs on one CPU "
                         f"device), got {len(devices)}")
    if backend not in (None, "cpu"):
        raise ValueError(f"pmap: backend must be None or 'cpu' (tangentia runs on one CPU "
                         f"device), got {backend!r}")

    def check_size(size: int) -> None:
        if size != 1:
            raise ValueError(
                f"compiling computation that requires {size} logical devices, but only 1 XLA "
                f"devices are available (pmap of {_fun_name(fun)}: the mapped axis has size "
                f"{size}; tangentia runs on one CPU device: use vmap)")

    if axis_size is not None:
        check_size(axis_size)

    def body(*args: Any, **kwargs: Any) -> Any:
        dyn = [i for i in range(len(args)) if i not in static]
        axes = in_axes
        if isinstance(in_axes, (tuple, list)) and len(in_axes) == len(args) and static:
            axes = tuple(in_axes[i] for i in dyn)

        def inner(*dyn_args: Any, **kw: Any) -> Any:
            full = list(args)
            for i, a in zip(dyn, dyn_args):
                full[i] = a
            return fun(*full, **kw)
        return vmap(inner, in_axes=axes, out_axes=out_axes, axis_name=axis_name)(
            *[args[i] for i in dyn], **kwargs)

    jitted = jit(body, static_argnums=static)

    @functools.wraps(fun)
    def pmapped(*args: Any, **kwargs: Any) -> Any:
        dyn_args = [a for i, a in enumerate(args) if i not in static]
        axes = in_axes
        if isinstance(in_axes, (tuple, list)) and len(in_axes) == len(args) and static:
            axes = tuple(in_axes[i] for i in range(len(args)) if i not in static)
        if isinstance(axes, list):
            axes = tuple(axes)
        leaves = tree_flatten(tuple(dyn_args))[0]
        dims = (_broadcast_prefix(axes, tuple(dyn_args), "in_axes")
                if not (axes is None or isinstance(axes, int)) else [axes] * len(leaves))
        sizes = {np.shape(x)[d] for x, d in zip(leaves, dims)
                 if d is not None and np.ndim(x) > d}
        sizes |= {np.shape(x)[0] for x in tree_flatten(kwargs)[0] if np.ndim(x) > 0}
        if not sizes and axis_size is None:
            raise ValueError("pmap requires at least one argument with a mapped axis.")
        for s in sizes:
            check_size(s)
        return jitted(*args, **kwargs)

    return pmapped
