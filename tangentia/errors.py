"""The exceptions tangentia raises, under the names of ``jax.errors``."""
from .core import (ConcretizationTypeError, CustomRuleClosureError, JaxprTypeError,
                   TracerArrayConversionError, TracerBoolConversionError, UnexpectedTracerError)

# JAX's base class of its type errors: ours share TangentiaTypeError.
from .core import TangentiaTypeError as JAXTypeError

__all__ = ["ConcretizationTypeError", "CustomRuleClosureError", "JAXTypeError", "JaxprTypeError",
           "TracerArrayConversionError", "TracerBoolConversionError", "UnexpectedTracerError"]
