"""User-defined differentiation rules: ``custom_jvp`` and ``custom_vjp``.

A call of a custom function binds a call-like primitive that every
interpreter passes through (docs/architecture.md describes the design):

* evaluation calls the function only (Python control flow, pdb and print
  work, rules never run);
* ``jvp`` calls the JVP rule; ``vmap`` maps the function and the rules:
  ``vmap(custom_jvp_call(f, jvp)) == custom_jvp_call(vmap(f), vmap(jvp))``;
* staging (``jit``, control-flow bodies) records the call with the primal
  program; the rule's program is traced lazily, only when something
  differentiates it, because a rule may call the function itself;
* reverse mode is linearize + partial evaluation + transposition: for a
  custom_vjp, linearization runs ``fwd`` and emits a linear ``custom_lin``
  step that carries ``bwd``; transposition calls ``bwd``.
"""
from __future__ import annotations

from collections.abc import Callable

# The implementation, by topic: ``_base`` (the primitives, SymbolicZero, what
# both decorators share), ``_jvp`` (custom_jvp), ``_vjp`` (custom_vjp),
# ``_closure`` (closure_convert), ``_linear`` (linear_call, custom_transpose),
# ``_errors`` (the checks of the user rules' outputs and their messages).
from ..interpreters.ad import custom_lin_p  # noqa: F401 - the backends find it here
from ._base import (SymbolicZero, _resolve_kwargs, check_rule, custom_jvp_call_p,  # noqa: F401
                    custom_vjp_call_p, forward_attr, require_arrays, rule_key,
                    zero_from_primal)
from ._closure import closure_convert
from ._jvp import custom_jvp
from ._linear import custom_transpose, linear_call
from ._vjp import CustomVJPPrimal, custom_vjp, custom_vjp_primal_tree_values

# jax.custom_derivatives.custom_gradient: defined in the library layer (tangentia._custom_gradient),
# set here by the package's __init__; declared for type checkers
custom_gradient: Callable[[Callable], Callable]

__all__ = ["custom_jvp", "custom_vjp", "SymbolicZero", "CustomVJPPrimal", "closure_convert",
           "zero_from_primal", "custom_vjp_primal_tree_values", "linear_call", "custom_transpose"]
