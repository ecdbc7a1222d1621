"""Primitive operations, each defined once with all of its rules."""
from . import structural, reductions, elementwise, indexing, contraction, call  # noqa: F401
