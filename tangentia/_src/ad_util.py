"""``jax._src.ad_util.stop_gradient_p``, which lineax reads (to recognize
``stop_gradient`` in a program): tangentia's stop_gradient primitive."""
from ..primitives.structural import stop_gradient_p

__all__ = ["stop_gradient_p"]
