"""``jax._src.flatten_util.ravel_pytree`` (blackjax imports it from there): the public
``tangentia.flatten_util.ravel_pytree``."""
from ..flatten_util import ravel_pytree

__all__ = ["ravel_pytree"]
