"""``jax._src.tree_util``: ``_registry``, JAX's registry of pytree node types, which
libraries test membership of (flax nnx: ``type(x) in _registry``): the built-in node
types (``tuple``, ``list``, ``dict``, ``None``) and every registered one."""
from __future__ import annotations

from typing import Any

from ..tree_util import _BUILTIN_NODE_TYPES, _registry as _registered

__all__ = ["_registry"]


class _Registry:
    """A read-only view of the node types (the built-in ones and the registered)."""

    __slots__ = ()

    def __contains__(self, nodetype: Any) -> bool:
        return nodetype in _BUILTIN_NODE_TYPES or nodetype in _registered

    def __repr__(self) -> str:
        return f"<pytree registry of {len(_BUILTIN_NODE_TYPES) + len(_registered)} types>"


_registry = _Registry()
