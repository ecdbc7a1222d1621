"""``jax.extend``: what libraries written for JAX use to define their own
primitives (equinox, lineax, diffrax do, through ``jax.extend.core.Primitive``
with ``def_impl``/``def_abstract_eval`` and the interpreters' rule tables:
``jax.interpreters.ad.primitive_jvps``, ``batching.primitive_batchers``,
``mlir.register_lowering``), and ``source_info_util.register_exclusion``;
``jax.interpreters.partial_eval`` gets JAX's ``PartialVal`` and
``trace_to_jaxpr_nounits`` from here.  ``jax.extend.backend`` and ``ffi`` concern
XLA, which tangentia does not have.
"""
from . import core  # noqa: F401
from . import source_info_util  # noqa: F401
from ..interpreters import partial_eval as _pe
from ._partial_eval import PartialVal, trace_to_jaxpr_nounits

# JAX's names in ``jax.interpreters.partial_eval`` (flax's lazy_init and nn.scan)
_pe.PartialVal = PartialVal   # type: ignore[attr-defined]
_pe.trace_to_jaxpr_nounits = trace_to_jaxpr_nounits   # type: ignore[attr-defined]

__all__ = ["core"]
