"""``jax.extend``: what libraries written for JAX use to define their own
primitives (equinox, lineax, diffrax do, through ``jax.extend.core.Primitive``
with ``def_impl``/``def_abstract_eval`` and the interpreters' rule tables:
``jax.interpreters.ad.primitive_jvps``, ``batching.primitive_batchers``,
``mlir.register_lowering``), and ``source_info_util.register_exclusion``.
``jax.extend.backend`` and ``ffi`` concern
XLA, which tangentia does not have.
"""
from . import core  # noqa: F401
from . import source_info_util  # noqa: F401

__all__ = ["core"]
