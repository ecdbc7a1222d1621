"""``jax.extend.source_info_util``: ``register_exclusion(path)``, which libraries
(flax) call so that their own files are not reported as the user's code.  tangentia
records no source information in its programs; the path is excluded as
``jax._src.traceback_util.register_exclusion`` excludes it."""
from __future__ import annotations

from .._src.traceback_util import register_exclusion

__all__ = ["register_exclusion"]
