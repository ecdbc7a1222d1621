"""``jax.experimental.sparse``, as far as libraries import it: the name ``BCOO``
(numpyro's ``CAR`` distribution converts a SciPy sparse adjacency matrix with
``BCOO.from_scipy_sparse``, and imports the class at module level).  tangentia has
no sparse arrays: making one raises ``NotImplementedError`` naming the alternative
(a dense array), so code that only imports the name runs.
"""
from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["BCOO"]


def _unsupported(what: str) -> NoReturn:
    raise NotImplementedError(
        f"jax.experimental.sparse.{what}: tangentia has no sparse arrays; use a dense array "
        "(tangentia.numpy.asarray(m.toarray()) for a SciPy sparse matrix)")


class BCOO:
    """JAX's batched-coordinate sparse array: not supported (constructing one raises)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _unsupported("BCOO")

    @classmethod
    def fromdense(cls, *args: Any, **kwargs: Any) -> BCOO:
        _unsupported("BCOO.fromdense")

    @classmethod
    def from_scipy_sparse(cls, *args: Any, **kwargs: Any) -> BCOO:
        _unsupported("BCOO.from_scipy_sparse")
