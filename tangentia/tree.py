"""``tangentia.tree``: the short names of ``jax.tree`` (``tree.map``,
``tree.leaves``, ...), the same functions as ``tangentia.tree_util``."""
from .tree_util import (tree_all as all, tree_flatten as flatten, tree_leaves as leaves,  # noqa: A004
                        tree_map as map, tree_reduce as reduce, tree_structure as structure,
                        tree_transpose as transpose, tree_unflatten as unflatten)

__all__ = ["all", "flatten", "leaves", "map", "reduce", "structure", "transpose", "unflatten"]
