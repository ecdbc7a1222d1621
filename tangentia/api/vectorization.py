"""Vectorization: vmap."""
from __future__ import annotations

import functools

from .. import core
from ..interpreters import batching
from .._messages import fun_name as _fun_name
from .._traceback_util import api_boundary
from ..tree_util import tree_flatten, tree_structure, tree_unflatten
from ._util import _arg_leaf_names, _check_callable, _flatten_fun

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
        ps, ts = tree_structure(p), tree_structure(t)
        if ps.num_leaves == ts.num_leaves:
            try:
                ts.flatten_up_to(p)
            except Exception:  # noqa: BLE001
                pass
        bad = [a for a in tree_flatten(prefix, is_leaf=lambda x: x is None)[0]
               if a is not None and not isinstance(a, int)]
        if bad:   # JAX's words for a leaf that is not an axis
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container with those "
                            f"types as leaves, but got {prefix!r:.200}. (a leaf of type "
                            f"{type(bad[0]).__name__})")
        raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                         f"value, got specification {p!r} for value tree {ts}. (it must be an "
                         "int, None, or a pytree prefix of the value)")

    rec(prefix, tree)
    return out


def _inconsistent_sizes(fun, sizes, names, leaves, dims):
    """JAX's message for mapped axes of different sizes: one line per size, most common first."""
    by_size = {}
    for i, s in sizes:
        by_size.setdefault(s, []).append(i)

    def where(i):
        a = core.get_aval(leaves[i])
        name = (names[i] if i < len(names) else f"leaf {i}").replace("'", "")
        return (f"axis {dims[i]} of {name} of type "
                f"{a.dtype.name}[{','.join(map(str, a.shape))}]")

    lines = [f"  * one axis had size {s}: {where(ix[0])}" if len(ix) == 1 else
             f"  * most axes ({len(ix)} of them) had size {s}, e.g. {where(ix[0])}"
             for s, ix in sorted(by_size.items(), key=lambda kv: -len(kv[1]))]
    detail = ", ".join(f"{names[i] if i < len(names) else f'leaf {i}'} has size {s}"
                       for i, s in sizes)
    return ("vmap got inconsistent sizes for array axes to be mapped:\n" + ";\n".join(lines)
            + f"\n(vmap of {_fun_name(fun)}: {detail}. All mapped axes must have the same size.)")


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
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
      ValueError: the mapped axes of the arguments have different sizes, or
        an axis is out of range.

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
    if not (in_axes is None or isinstance(in_axes, (int, tuple, dict))):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple/dict of them, got {in_axes!r}")

    @api_boundary
    @functools.wraps(fun, updated=())
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                             "corresponding to the positional arguments passed to the function, "
                             f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)} (vmap "
                             f"of {_fun_name(fun)}: in_axes has {len(in_axes)} entries but the "
                             f"function was called with {len(args)} positional arguments)")
        leaves, in_tree = tree_flatten((args, kwargs))
        axes = _broadcast_prefix(in_axes if isinstance(in_axes, tuple) else
                                 (in_axes,) * len(args), args, "in_axes") + \
            [0] * len(tree_flatten(kwargs)[0])
        dims = []
        size = axis_size
        sizes = []
        names = None
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                dims.append(None)
                continue
            a = core.get_aval(x)
            if not -a.ndim <= ax < a.ndim:   # JAX's words, then which argument
                names = names or _arg_leaf_names(fun, args)
                name = names[i] if i < len(names) else f"leaf {i}"
                raise ValueError(f"vmap was requested to map its argument along axis {ax}, which "
                                 f"implies that its rank should be at least "
                                 f"{ax + 1 if ax >= 0 else -ax}, but is only {a.ndim} (its shape "
                                 f"is {a.shape}). (vmap of {_fun_name(fun)}: in_axes={ax} "
                                 + (f"was given for {name}, which is a scalar (rank 0); it has "
                                    "no axis to map over)" if a.ndim == 0 else
                                    f"is out of range for an argument of shape {a.shape}: {name})"))
            d = ax + a.ndim if ax < 0 else ax
            dims.append(d)
            sizes.append((i, a.shape[d]))
        distinct = {s for _, s in sizes}
        if size is None:
            if not sizes:
                raise ValueError("vmap must have at least one non-None value in in_axes (vmap of "
                                 f"{_fun_name(fun)} needs at least one mapped argument, or an "
                                 "explicit axis_size)")
            if len(distinct) > 1:
                names = names or _arg_leaf_names(fun, args)
                raise ValueError(_inconsistent_sizes(fun, sizes, names, leaves, dims))
            size = sizes[0][1]
        elif distinct and distinct != {size}:
            raise ValueError(f"vmap of {_fun_name(fun)}: axis_size={size} but mapped arguments "
                             f"have sizes {sorted(distinct)}")
        store = {}
        flat = _flatten_fun(fun, in_tree, store)

        def out_dims(n):
            out_tree = store["out_tree"]
            if isinstance(out_axes, int) or out_axes is None:
                return [out_axes] * n
            return _broadcast_prefix(out_axes, tree_unflatten(out_tree, [0] * n), "out_axes")

        outs = batching.vmap_flat(flat, leaves, dims, size, out_dims, axis_name=axis_name)
        return tree_unflatten(store["out_tree"], outs)

    return vmapped


