"""``custom_transpose``, as ``jax.custom_transpose``: a linear function with a
user-defined transpose (defined in ``custom_derivatives``, beside ``linear_call``,
whose machinery it shares)."""
from .custom_derivatives import custom_transpose

__all__ = ["custom_transpose"]
