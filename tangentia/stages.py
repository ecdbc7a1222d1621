"""``jax.stages``: the types of ``jit(f).trace(...)``, ``.lower(...)`` and
``.compile()`` (libraries annotate with them: equinox's ``filter_jit``).
``Compiled`` is what ``Lowered.compile()`` returns: a function taking the
lowered call's arguments."""
from __future__ import annotations

from collections.abc import Callable

from .api.staging import Lowered, Traced

Compiled = Callable

__all__ = ["Compiled", "Lowered", "Traced"]
