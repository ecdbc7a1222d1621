"""Small helpers for error messages: function names, JAX's type strings and pytrees of types."""
from __future__ import annotations

from . import core
from .tree_util import tree_map


def fun_name(f):
    """A readable name for a callable."""
    return getattr(f, "__name__", None) or type(f).__name__


class _Shown:
    """Prints as the given text (for rendering a pytree of types)."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def jax_type(aval):
    """An aval (anything with a shape and a dtype) as JAX's messages write it:
    ``float32[3,4]``."""
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def types_str(tree):
    """``tree`` with every leaf replaced by its short type, e.g. ``{'a': f64[2]}``."""
    def leaf(x):
        if core.is_array_like(x):
            return _Shown(core.get_aval(x).str_short())
        return _Shown(f"<{type(x).__name__}>")
    return repr(tree_map(leaf, tree))
