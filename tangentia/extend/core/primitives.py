"""``jax.extend.core.primitives``: tangentia's primitives under JAX's names
(``add_p``, ``jit_p``, ``cond_p``, ...), for interpreters written for JAX that key
rules on them (numpyro's provenance tracking).  ``call_p`` and ``closed_call_p``
name JAX primitives that tangentia's programs never contain (a ``jit`` is ``jit_p``):
they exist so that such tables can be built, and no equation matches them."""
from __future__ import annotations

from typing import NoReturn

from ... import lax as _lax
from ...custom_derivatives._base import custom_jvp_call_p, custom_vjp_call_p
from ...lax import linalg as _linalg
from ...primitives.call import jit_p
from ...primitives.remat import remat_p

globals().update({k: v for mod in (_lax, _linalg) for k, v in vars(mod).items()
                  if k.endswith("_p") and not k.startswith("_")})

class _Absent:
    """A JAX primitive that no tangentia program contains (not a tangentia Primitive)."""

    multiple_results = True

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: object, **params: object) -> NoReturn:
        raise NotImplementedError(f"jax.extend.core.primitives.{self.name}_p: tangentia has no "
                                  f"{self.name!r} primitive (a jit call is jit_p)")


call_p = _Absent("call")
closed_call_p = _Absent("closed_call")

__all__ = sorted(k for k in globals() if k.endswith("_p") and not k.startswith("_"))
