"""``jax.extend``: what libraries written for JAX use to define their own
primitives (equinox, lineax, diffrax do, through ``jax.extend.core.Primitive``
with ``def_impl``/``def_abstract_eval`` and the interpreters' rule tables:
``jax.interpreters.ad.primitive_jvps``, ``batching.primitive_batchers``,
``mlir.register_lowering``).  Only ``core`` is provided: ``jax.extend.backend``,
``ffi``, ``linear_util`` and ``source_info_util`` concern XLA, which tangentia
does not have.
"""
from . import core  # noqa: F401

__all__ = ["core"]
