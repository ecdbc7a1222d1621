"""``jax.interpreters.mlir``, as far as libraries defining their own primitives use
it: ``register_lowering(prim, lower_fun(impl, multiple_results))``.  tangentia has
no MLIR: a lowering made by ``lower_fun`` is the primitive's implementation in our
backends (which run a primitive they do not compile themselves by its ``impl``), so
registering one gives the primitive an ``impl`` if ``def_impl`` did not.  Any other
lowering rule (one emitting MLIR) cannot be used here: it is accepted and ignored, so
that the library imports, and the primitive runs by its ``impl`` (without one, it
raises when run, naming the primitive).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import Primitive

__all__ = ["lower_fun", "register_lowering"]


class _LoweredFun:
    """What ``lower_fun`` returns: the function, to run as the primitive's ``impl``."""

    __slots__ = ("fun", "multiple_results")

    def __init__(self, fun: Callable, multiple_results: bool) -> None:
        self.fun = fun
        self.multiple_results = multiple_results


def lower_fun(fun: Callable, multiple_results: bool = True) -> _LoweredFun:
    """A lowering that computes the primitive with ``fun`` (written with
    ``tangentia.numpy``/``lax`` operations)."""
    return _LoweredFun(fun, multiple_results)


def register_lowering(prim: Primitive, rule: Any, platform: str | None = None,
                      **_: Any) -> Any:
    """Register ``rule`` as the lowering of ``prim``: for a ``lower_fun`` rule, its
    function becomes ``prim.impl`` unless the primitive has one; other rules are
    ignored."""
    if not isinstance(rule, _LoweredFun):
        return rule
    if hasattr(prim, "def_impl") and not getattr(prim, "impl_given", False):
        prim.def_impl(rule.fun)   # (a jax.extend.core.Primitive whose def_impl was not called)
    return rule
