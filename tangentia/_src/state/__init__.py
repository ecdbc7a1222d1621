"""``jax._src.state``: JAX's mutable array references (``types``)."""
from .types import AbstractRef, Ref, freeze, new_ref  # noqa: F401

__all__ = ["AbstractRef", "Ref", "freeze", "new_ref"]
