"""``jax._src.effects``: JAX's side-effect marker classes, which libraries subclass to
declare their primitives' effects (flax nnx's ``VariableEffect``).  A primitive given
effects by ``def_effectful_abstract_eval`` is kept by dead-code elimination; tangentia
records no further kinds of effect."""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Effect", "EffectTypeSet", "control_flow_allowed_effects", "no_effects",
           "ordered_effects"]


class Effect:
    """A generic side-effect."""


class EffectTypeSet:
    """A set of effect classes (JAX's registries of which effects are allowed where)."""

    def __init__(self) -> None:
        self._effect_types: set[type[Effect]] = set()

    def __repr__(self) -> str:
        return f"EffectTypeSet({self._effect_types})"

    def add_type(self, effect_type: type[Effect]) -> None:
        self._effect_types.add(effect_type)

    def contains(self, eff: Effect) -> bool:
        return any(isinstance(eff, t) for t in self._effect_types)

    def filter_in(self, effects: Iterable[Effect]) -> list[Effect]:
        return [e for e in effects if self.contains(e)]

    def filter_not_in(self, effects: Iterable[Effect]) -> list[Effect]:
        return [e for e in effects if not self.contains(e)]


no_effects: frozenset[Effect] = frozenset()
ordered_effects = EffectTypeSet()
control_flow_allowed_effects = EffectTypeSet()
