"""``jax._src.checkify``: JAX's checkify module under its private name (flax nnx imports
it there and reads ``checkify``, ``Error``, ``JaxException``, ``user_checks`` and the type
variable ``Out``): ``tangentia.experimental.checkify``'s."""
from typing import TypeVar

from ..experimental.checkify import (Error, JaxException, all_checks, check,  # noqa: F401
                                     checkify, user_checks)

Out = TypeVar("Out")

__all__ = ["Error", "JaxException", "Out", "all_checks", "check", "checkify", "user_checks"]
