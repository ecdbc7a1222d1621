"""``shard_map`` on the one CPU device: JAX's ``jax.shard_map`` (and the older
``jax.experimental.shard_map.shard_map``) where every mesh axis has size 1.

Each instance of ``f`` gets the whole of each argument (its only shard) and its outputs
are the results.  The mesh's axis names are bound, each as a mapped axis of size 1, so
collectives over them (``lax.psum``, ``lax.axis_index``, ``lax.all_gather``, ...) give
what JAX's give on a mesh of one device.  A mesh of more devices cannot be built here
(``sharding.Mesh`` refuses it)."""
from __future__ import annotations

import functools
from typing import Any, Callable

from . import numpy as _tnp
from .api import vmap
from .sharding import AbstractMesh, PartitionSpec, get_mesh
from .tree_util import tree_flatten, tree_map


class _InferType:
    def __repr__(self) -> str:
        return "Infer"


Infer = _InferType()


def _check_specs(specs: Any, names: tuple, what: str) -> None:
    leaves = tree_flatten(specs, is_leaf=lambda s: isinstance(s, PartitionSpec) or s is None)[0]
    for s in leaves:
        if s is None:
            continue
        if not isinstance(s, PartitionSpec):
            raise TypeError(f"shard_map {what} must be a pytree of PartitionSpec (P) "
                            f"instances, got {s!r}")
        for n in s._axis_names():
            if n not in names:
                raise ValueError(
                    f"shard_map {what} argument must refer to an axis marked as manual "
                    f"({frozenset(names)}), but: (tangentia: {s!r} names mesh axis {n!r}, "
                    f"which is not among the manual axes {names})")


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = Infer,
              mesh: Any = None, axis_names: Any = frozenset(), check_vma: bool = True) -> Any:
    """Map ``f`` over the shards of its arguments on ``mesh``, as ``jax.shard_map``.

    tangentia has one device (the CPU), so every mesh axis has size 1: ``f`` runs once
    on the whole arguments, with the mesh's axis names bound (size 1) for collectives.

    Args:
      f: the function (or None: ``shard_map`` then returns a decorator).
      out_specs: a pytree of ``PartitionSpec`` (a prefix of ``f``'s outputs).
      in_specs: a pytree of ``PartitionSpec`` (a prefix of the arguments), or
        ``Infer`` (every argument replicated).
      mesh: a ``Mesh`` or ``AbstractMesh``; None: the current one (``set_mesh``).
      axis_names: the mesh axes ``f`` is manual over (default: all).
      check_vma: accepted (with one device every output is replicated).

    Returns:
      ``f`` mapped: its arguments, its outputs.
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs,
                                 mesh=mesh, axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, got {f!r}")
    if mesh is None:
        mesh = get_mesh()
        if not mesh.axis_names:
            raise ValueError(
                "The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter into a "
                "mesh context (tangentia: shard_map: pass mesh= or set a mesh)")
    if not isinstance(mesh, AbstractMesh):
        raise TypeError(f"shard_map requires a `jax.sharding.Mesh` or "
                        f"`jax.sharding.AbstractMesh` instance for its second argument, but "
                        f"got {mesh!r} of type {type(mesh)}.")
    names = tuple(mesh.axis_names)
    manual = tuple(n for n in names if not axis_names or n in axis_names)
    _check_specs(out_specs, manual, "out_specs")
    if in_specs is not Infer:
        _check_specs(in_specs, manual, "in_specs")

    @functools.wraps(f)
    def mapped(*args: Any) -> Any:
        g: Callable = f
        for n in reversed(manual):     # the outermost name first, as a size-1 mapped axis
            g = vmap(g, axis_name=n, axis_size=1)
        expanded = tree_map(lambda x: _tnp.expand_dims(_tnp.asarray(x), tuple(
            range(len(manual)))), args)
        out = g(*expanded)
        return tree_map(lambda y: _tnp.reshape(y, _tnp.shape(y)[len(manual):]), out)

    return mapped


def legacy_shard_map(f: Callable, mesh: Any, in_specs: Any, out_specs: Any,
                     check_rep: bool = True, auto: Any = frozenset()) -> Any:
    """``jax.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs)``: the older
    signature of ``shard_map`` (``auto``: the axes not manual)."""
    manual = frozenset(n for n in getattr(mesh, "axis_names", ()) if n not in auto)
    return shard_map(f, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                     axis_names=manual if auto else frozenset(), check_vma=check_rep)
