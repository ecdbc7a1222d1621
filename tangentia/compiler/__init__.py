"""Compilers from the IR to executable code."""
from .numpy_backend import compile_jaxpr

__all__ = ["compile_jaxpr"]
