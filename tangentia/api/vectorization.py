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
        raise ValueError(f"vmap {what} specification {p!r} does not match the structure of the "
                         f"arguments ({ts}); it must be an int, None, or a pytree prefix of them")

    rec(prefix, tree)
    return out


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
            raise ValueError(f"vmap of {_fun_name(fun)}: in_axes has {len(in_axes)} entries but "
                             f"the function was called with {len(args)} positional arguments")
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
            if a.ndim == 0:
                names = names or _arg_leaf_names(fun, args)
                raise ValueError(f"vmap of {_fun_name(fun)}: in_axes={ax} was given for "
                                 f"{names[i] if i < len(names) else f'leaf {i}'}, which is a "
                                 "scalar (rank 0); it has no axis to map over")
            if not -a.ndim <= ax < a.ndim:
                raise ValueError(f"vmap of {_fun_name(fun)}: in_axes={ax} is out of range for an "
                                 f"argument of shape {a.shape}")
            d = ax + a.ndim if ax < 0 else ax
            dims.append(d)
            sizes.append((i, a.shape[d]))
        distinct = {s for _, s in sizes}
        if size is None:
            if not sizes:
                raise ValueError(f"vmap of {_fun_name(fun)} needs at least one mapped argument "
                                 "(all in_axes are None) or an explicit axis_size")
            if len(distinct) > 1:
                names = names or _arg_leaf_names(fun, args)
                detail = ", ".join(
                    f"{names[i] if i < len(names) else f'leaf {i}'} has size {s}" for i, s in sizes)
                raise ValueError(f"vmap of {_fun_name(fun)} got inconsistent sizes for the mapped "
                                 f"axis: {detail}. All mapped axes must have the same size.")
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


