"""``jax.experimental.hijax``: the names of JAX's "hi-level types" API, so that libraries
defining hijax types import (flax nnx's ``Variable`` defines its hijax form at import and
uses it only when asked: ``nnx.use_hijax(True)``).  tangentia has no hijax: binding a
``HiPrimitive`` raises ``NotImplementedError`` naming it, and ``register_hitype`` only
records the type."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import AbstractValue, ShapedArray, Zero
from .._src.effects import control_flow_allowed_effects
from .._src.state.types import AbstractRef

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive",
           "HiType", "MutableHiType", "ShapedArray", "VJPHiPrimitive", "Zero",
           "aval_method", "aval_property", "control_flow_allowed_effects",
           "instantiate_zeros", "is_undefined_primal", "register_hitype"]

_UNSUPPORTED = ("hijax (JAX's hi-level types, jax.experimental.hijax) is not supported "
                "by tangentia")


class AvalQDD:
    """An abstract value with its quasi-dynamic data."""

    def __init__(self, aval: Any, qdd: Any) -> None:
        self.aval, self.qdd = aval, qdd


class AvalMutableQDD:
    def __init__(self, aval: Any, mutable_qdd: Any) -> None:
        self.aval, self.mutable_qdd = aval, mutable_qdd


class aval_method:
    """A method of a hi type's values that runs on its abstract value (here: a method)."""

    def __init__(self, fun: Callable) -> None:
        self.fun = fun

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        return self.fun if obj is None else self.fun.__get__(obj, cls)


class aval_property(property):
    """A property of a hi type's values computed from its abstract value."""


class HiType(AbstractValue):
    """The abstract value of a hi type (subclassed by libraries; never used here)."""

    __slots__ = ()
    is_high = True
    has_qdd = False


class MutableHiType(HiType):
    __slots__ = ()
    has_qdd = True


class HiPrimitive:
    """A primitive on hi types: subclasses define ``impl``, ``abstract_eval``, ``jvp``...;
    binding one raises (tangentia has no hijax)."""

    multiple_results = False

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"{self.name}: {_UNSUPPORTED}")


class VJPHiPrimitive(HiPrimitive):
    pass


class HiPspec:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"HiPspec: {_UNSUPPORTED}")


_HITYPES: dict[type, Callable] = {}


def register_hitype(val_cls: type, typeof_fn: Callable) -> None:
    """Records a hi type (its values are never made by a hijax primitive here)."""
    _HITYPES[val_cls] = typeof_fn


def instantiate_zeros(t: Any) -> Any:
    """A tangent with symbolic zeros made into arrays."""
    if isinstance(t, Zero):
        return np.zeros(t.aval.shape, t.aval.dtype)
    return t


def is_undefined_primal(x: Any) -> bool:
    """Whether ``x`` is a linear input of a transpose rule (never, without hijax rules)."""
    return False
