"""``tangentia.tree``: the short names of ``jax.tree`` (``tree.map``,
``tree.leaves``, ...), the same functions as ``tangentia.tree_util``."""
from __future__ import annotations

import dataclasses as _dataclasses
from typing import Any

from .tree_util import (tree_all as all, tree_flatten as flatten, tree_leaves as leaves,  # noqa: A004
                        tree_map as map, tree_reduce as reduce, tree_structure as structure,
                        tree_transpose as transpose, tree_unflatten as unflatten)
from .tree_util import (tree_broadcast as broadcast, tree_flatten_with_path as flatten_with_path,
                        tree_leaves_with_path as leaves_with_path,
                        tree_map_with_path as map_with_path,
                        tree_reduce_associative as reduce_associative)

__all__ = ["all", "flatten", "leaves", "map", "reduce", "structure", "transpose", "unflatten",
           "broadcast", "flatten_with_path", "leaves_with_path", "map_with_path",
           "reduce_associative", "static"]


def static(**kwargs: Any) -> Any:
    """A ``dataclasses.field`` marked static (``metadata={"static": True}``):
    ``tree_util.register_dataclass`` keeps it in the tree structure, not as a
    leaf.

    Args:
      **kwargs: the arguments of ``dataclasses.field`` (``default``,
        ``metadata``, ...).

    Returns:
      A dataclass field.

    Examples:
      >>> import dataclasses
      >>> import tangentia as tg
      >>> @tg.tree_util.register_dataclass
      ... @dataclasses.dataclass
      ... class Op:
      ...     x: float
      ...     op: str = tg.tree.static(default="add")
      >>> tg.tree.leaves(Op(1.0))
      [1.0]
    """
    metadata = {"static": True, **(kwargs.pop("metadata", {}) or {})}
    return _dataclasses.field(metadata=metadata, **kwargs)
