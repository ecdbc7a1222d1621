"""``tangentia.flatten_util``: ``ravel_pytree``, as ``jax.flatten_util``.

``ravel_pytree(tree)`` concatenates the leaves of a pytree into one 1-D array
and returns it with the function that splits such a vector back into the
tree.  It is built from ``tangentia.numpy`` operations, so it works on traced
values (under ``jit``, ``grad``, ``vmap``) and the unravel function is a
hashable value (usable as a static argument of ``jit``).

Dtypes: the vector's dtype is the promotion of the leaves' dtypes with our
(NumPy's) rules, each leaf taken with its own dtype (a Python float is
float64, a Python int int64): ``[int32, float32]`` ravels to float64 here,
float32 in JAX, whose lattice differs.  When every leaf has the same dtype the
unravel function accepts a vector of any dtype (JAX's convention, so a complex
or float0 tangent vector unravels too); otherwise it checks the dtype and
casts each piece back to its leaf's dtype (complex to real keeps the real
part, without a warning).  An empty tree ravels to an empty float32 vector,
JAX's documented convention.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import numpy as tnp
from .tree_util import PyTreeDef, tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def _leaf_dtype(x) -> np.dtype:
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return np.dtype(dtype)
    return np.asarray(x).dtype


class _Unravel:
    """The unravel function of one ``ravel_pytree`` call: hashable and equal to
    another made for the same structure, shapes and dtypes (a pytree leaf, as
    JAX's)."""

    __slots__ = ("treedef", "shapes", "from_dtypes", "to_dtype")

    def __init__(self, treedef: PyTreeDef, shapes: tuple, from_dtypes: tuple | None,
                 to_dtype: np.dtype):
        self.treedef = treedef
        self.shapes = shapes
        self.from_dtypes = from_dtypes      # None: every leaf had the vector's dtype
        self.to_dtype = to_dtype

    def _key(self):
        return (self.treedef, self.shapes, self.from_dtypes, self.to_dtype)

    def __eq__(self, other):
        return isinstance(other, _Unravel) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"<unravel function of ravel_pytree for {self.treedef}>"

    def __call__(self, flat):
        sizes = [int(np.prod(s)) for s in self.shapes]
        shape = np.shape(flat)
        if len(shape) != 1 or shape[0] != sum(sizes):
            raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension 0 of the "
                             f"operand shape {list(shape)} (the unravel function of "
                             f"ravel_pytree takes a 1-D array of {sum(sizes)} elements)")
        dtype = _leaf_dtype(flat)
        if self.from_dtypes is not None and dtype != self.to_dtype:
            raise TypeError(f"unravel function given array of dtype {dtype}, "
                            f"but expected dtype {self.to_dtype}")
        offsets = np.cumsum(sizes)[:-1].tolist()
        chunks = tnp.split(flat, offsets) if self.shapes else []
        leaves = [tnp.reshape(c, s) for c, s in zip(chunks, self.shapes)]
        if self.from_dtypes is not None:
            leaves = [_cast(x, d) for x, d in zip(leaves, self.from_dtypes)]
        return tree_unflatten(self.treedef, leaves)


def _cast(x, dtype):
    """``x`` as ``dtype``; complex to real keeps the real part silently."""
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = tnp.real(x)
    return tnp.asarray(x).astype(dtype)


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Ravel (flatten) a pytree of arrays down to a 1-D array.

    Args:
      pytree: a pytree of arrays and scalars to ravel.

    Returns:
      ``(flat, unravel)``: ``flat`` is a 1-D array of the concatenated leaf
      values, of the leaves' promoted dtype; ``unravel`` maps a 1-D array of
      the same length back to a pytree of ``pytree``'s structure.  An empty
      tree gives an empty float32 array (JAX's convention).

    Examples:
      >>> import numpy as np
      >>> from tangentia.flatten_util import ravel_pytree
      >>> flat, unravel = ravel_pytree({"w": np.ones((2, 2)), "b": np.arange(2)})
      >>> flat
      Array([0., 1., 1., 1., 1., 1.])
      >>> unravel(flat)["b"]
      Array([0, 1])
    """
    leaves, treedef = tree_flatten(pytree)
    shapes = tuple(tuple(np.shape(x)) for x in leaves)
    if not leaves:
        return tnp.zeros((0,), np.float32), _Unravel(treedef, (), None, np.dtype(np.float32))
    from_dtypes = tuple(_leaf_dtype(x) for x in leaves)
    to_dtype = np.result_type(*from_dtypes)
    flat = tnp.concatenate([tnp.ravel(tnp.asarray(x, to_dtype)) for x in leaves])
    same = all(d == to_dtype for d in from_dtypes)
    return flat, _Unravel(treedef, shapes, None if same else from_dtypes, to_dtype)
