"""What of JAX's private namespace (``jax._src``) the public API of libraries
written for JAX reads, so that they import and run here (``import tangentia
as jax``): chex's ``restrict_backends`` patches ``compiler`` and its
``set_n_cpu_devices`` reads ``xla_bridge._backends``.  Nothing else of
``jax._src`` is provided, and nothing here is tangentia's own API.
"""
from . import compiler, xla_bridge  # noqa: F401

__all__ = ["compiler", "xla_bridge"]
