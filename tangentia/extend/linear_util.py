"""``jax.extend.linear_util``: ``wrap_init`` and the ``WrappedFun`` it makes, the
function wrapper of JAX's tracing API that ``jax.api_util.flatten_fun`` transforms
(numpyro's provenance tracking builds one)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["WrappedFun", "wrap_init"]


class WrappedFun:
    """A function with fixed keyword parameters; ``call_wrapped(*args)`` calls it."""

    def __init__(self, f: Callable, params: dict | None = None, debug_info: Any = None) -> None:
        self.f = f
        self.params = dict(params or {})
        self.debug_info = debug_info

    def call_wrapped(self, *args: Any, **kwargs: Any) -> Any:
        return self.f(*args, **self.params, **kwargs)

    def __repr__(self) -> str:
        return f"Wrapped function: {getattr(self.f, '__name__', self.f)!s}"


def wrap_init(f: Callable, params: dict | None = None, *, debug_info: Any = None) -> WrappedFun:
    return WrappedFun(f, params, debug_info)
