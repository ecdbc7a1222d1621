"""The exceptions tangentia raises, under the names of ``jax.errors``.

``TracerIntegerConversionError`` (a traced value used as an index, ``range``
bound, ...) and ``NonConcreteBooleanIndexError`` (a traced boolean mask as an
index, under ``jit``/``vmap``) are raised where JAX raises them; our
``TracerIntegerConversionError`` is also a ``ConcretizationTypeError``.
``KeyReuseError``, ``JaxRuntimeError`` and ``InconclusiveDimensionOperation``
exist so that code catching them runs; tangentia raises none of them (keys
are not tracked: ``debug_key_reuse(True)`` raises NotImplementedError; there
is no device runtime; shapes are never symbolic).
"""
from .core import (ConcretizationTypeError, CustomRuleClosureError, JAXIndexError, JaxprTypeError,
                   NonConcreteBooleanIndexError, TracerArrayConversionError,
                   TracerBoolConversionError, TracerIntegerConversionError, UnexpectedTracerError)

# JAX's base class of its type errors: ours share TangentiaTypeError.
from .core import TangentiaTypeError as JAXTypeError

__all__ = ["ConcretizationTypeError", "CustomRuleClosureError", "InconclusiveDimensionOperation",
           "JAXIndexError", "JAXTypeError", "JaxRuntimeError", "JaxprTypeError",
           "KeyReuseError", "NonConcreteBooleanIndexError", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError"]


class KeyReuseError(JAXTypeError):
    """A PRNG key used twice (JAX raises it under ``jax_debug_key_reuse``;
    tangentia does not track keys and never raises it)."""


class JaxRuntimeError(RuntimeError):
    """An error of the runtime executing a compiled program (JAX's XLA errors);
    tangentia's compiled programs raise ordinary Python exceptions instead."""


class InconclusiveDimensionOperation(Exception):
    """A comparison of symbolic dimensions with no definite answer (JAX's shape
    polymorphism); tangentia's shapes are always concrete, so it is never raised."""
