"""``linear_call`` and ``custom_transpose``: linear functions with a
user-defined transpose, both a custom_jvp call whose tangent map is the same
call, carried by ``ad.custom_lin_p`` with the transpose as its ``bwd``."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import core
from ..interpreters import ad
from ..interpreters.ad import custom_lin_p
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_unflatten
from ._base import SymbolicZero, check_rule, forward_attr, zero_from_primal
from ._jvp import custom_jvp


# ---------------------------------------------------------------------------
# linear_call


def _linear_call_parts(fun, transpose, res_leaves, res_tree, lin_tree, what):
    """``(forward, bwd, out_trees)`` for ``ad.custom_lin_p``: ``fun`` on flat leaves,
    its transpose (``transpose(residual_args, out_cotangent)``, whose structure must
    be that of the linear arguments), and the list where ``forward`` records its
    output structure."""
    n = len(res_leaves)
    out_trees = []

    def forward(*args):
        out = fun(tree_unflatten(res_tree, list(args[:n])), tree_unflatten(lin_tree, list(args[n:])))
        leaves, tree = tree_flatten(out)
        out_trees.append(tree)
        return leaves

    def bwd(*args):
        cts = [ad.instantiate(c) for c in args[n:]]
        out = transpose(tree_unflatten(res_tree, list(args[:n])), tree_unflatten(out_trees[-1], cts))
        leaves, tree = tree_flatten(out)
        if tree != lin_tree:
            raise TypeError("transpose output pytree structure must match that of linear inputs, "
                            f"got output structure {tree} and input structure {lin_tree}. "
                            f"({what} must return a cotangent for each linear argument)")
        return leaves

    return forward, bwd, out_trees


def _linear_map(fun, transpose, residual_args, linear_args, name, what):
    """``fun(residual_args, linear_args)``, linear in ``linear_args``, whose
    transpose is ``transpose(residual_args, out_cotangent)``: a custom_jvp call
    (named ``name``) whose tangent map is this same call, with ``transpose`` as
    the tangent map's transpose (``what`` names it in errors)."""
    res_leaves, res_tree = tree_flatten(residual_args)
    lin_leaves, lin_tree = tree_flatten(linear_args)
    forward, bwd, out_trees = _linear_call_parts(fun, transpose, res_leaves, res_tree, lin_tree,
                                                 what)
    n = len(res_leaves)

    def call(*leaves):
        return forward(*leaves)

    call.__name__ = call.__qualname__ = name
    call = custom_jvp(call)

    def call_jvp(primals, tangents):
        if any(type(t) is not SymbolicZero for t in tangents[:n]):
            raise TypeError(f"{name}({_fun_name(fun)}): residual_args must not be "
                            "differentiated (they are not involved in the transposition); "
                            "pass the values to differentiate in linear_args")
        outs = forward(*primals)
        lin_dots = [zero_from_primal(p) if type(t) is SymbolicZero else t
                    for p, t in zip(primals[n:], tangents[n:])]
        # the tangent map is this same call (differentiating it again keeps the custom
        # transpose); its transpose is bwd
        out_dots = custom_lin_p.bind(
            *primals[:n], *lin_dots, num_res=n, bwd=bwd, forward=lambda *xs: list(call(*xs)),
            out_avals=tuple(core.tangent_aval(core.get_aval(y)) for y in outs),
            name=f"{name}({_fun_name(fun)})")
        return outs, list(out_dots)

    call.defjvp(call_jvp, symbolic_zeros=True)
    # Partial evaluation records the call (not its body) where its inputs are unknown,
    # so that transposition still calls ``transpose``.
    call._params["linear_map"] = True

    outs = call(*res_leaves, *lin_leaves)
    return tree_unflatten(out_trees[-1], list(outs))


def linear_call(fun: Callable, fun_transpose: Callable, residual_args: Any, linear_args: Any
                ) -> Any:
    """Call a linear function, with a custom implementation for its transpose.

    ``fun(residual_args, linear_args)`` must be linear in ``linear_args``;
    ``fun_transpose(residual_args, out_cotangent)`` is its transpose with
    respect to them.  Differentiation (``jvp``, ``linearize``) keeps the call
    linear (the tangent is ``fun`` of the linear tangents), and reverse mode
    (``grad``, ``vjp``) calls ``fun_transpose``, itself as a ``linear_call``
    whose transpose is ``fun``.  ``residual_args`` are not differentiated (as
    in JAX, they must not depend on what is).  ``linear_transpose`` of a
    function calling it calls ``fun_transpose`` too (and transposing that
    calls ``fun``).

    Args:
      fun: ``(residual_args, linear_args) -> out``, linear in ``linear_args``.
      fun_transpose: ``(residual_args, out_cotangent) -> linear_args
        cotangent`` (the structure of ``linear_args``).
      residual_args: a pytree of the values ``fun`` may be nonlinear in.
      linear_args: a pytree of the values ``fun`` is linear in.

    Returns:
      ``fun(residual_args, linear_args)``.

    Examples:
      >>> import tangentia as tg
      >>> from tangentia.custom_derivatives import linear_call
      >>> def f(x):  # the identity, with a transpose that is not (as JAX's example)
      ...     return linear_call(lambda _, x: x, lambda _, t: 7.0 * t, (), x)
      >>> float(f(1.0)), float(tg.grad(f)(1.0)), float(tg.jvp(f, (1.0,), (1.0,))[1])
      (1.0, 7.0, 1.0)
    """
    return _linear_map(fun, lambda r, ct: linear_call(fun_transpose, fun, r, ct), residual_args,
                       linear_args, "linear_call",
                       f"linear_call: fun_transpose {_fun_name(fun_transpose)}")


# ---------------------------------------------------------------------------
# custom_transpose


class custom_transpose:
    """A linear function with a user-defined transpose, as ``jax.custom_transpose``.

    ``f = custom_transpose(fun)`` with ``fun(residual_args, linear_args)`` linear
    in ``linear_args``; ``f.def_transpose(t)`` with ``t(residual_args,
    out_cotangent) -> linear_args cotangent``; call ``f(out_types,
    residual_args, linear_args)``.  Evaluation calls ``fun``; ``jvp`` keeps the
    call linear (its tangent is ``f`` of the linear tangents); transposition
    (``linear_transpose``, and so ``grad`` through a JVP rule that calls ``f``)
    calls ``t`` itself, so transposing twice gives ``t``'s own transpose (its
    code's, or its rule's if ``t`` is a ``custom_transpose`` too).

    Args:
      fun: ``fun(residual_args, linear_args) -> out``.

    Examples:
      >>> import tangentia as tg
      >>> from tangentia.custom_transpose import custom_transpose
      >>> @custom_transpose
      ... def double(_, x):
      ...     return 2.0 * x
      >>> @double.def_transpose
      ... def double_t(_, t):
      ...     return 3.0 * t                   # deliberately not the true transpose
      >>> f = lambda x: double(None, (), x)
      >>> float(f(1.0)), float(tg.linear_transpose(f, 1.0)(1.0)[0])
      (2.0, 3.0)
    """

    def __init__(self, fun: Callable) -> None:
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.transpose = None

    __getattr__ = forward_attr

    def def_transpose(self, transpose: Callable) -> Callable:
        """Define the transpose; returns it (so it can be used as a decorator).

        Args:
          transpose: ``transpose(residual_args, out_cotangent) -> cotangent``
            of ``linear_args`` (their structure).

        Returns:
          ``transpose``.
        """
        check_rule(transpose, "custom_transpose.def_transpose", self.fun)
        self.transpose = transpose
        return transpose

    def __call__(self, out_types: Any, res_arg: Any, lin_arg: Any) -> Any:
        """``fun(res_arg, lin_arg)``; ``out_types`` (the output's types, which
        JAX needs to stage the call without running ``fun``) is accepted and not
        needed: the call runs ``fun``."""
        del out_types
        name = _fun_name(self.fun)
        if self.transpose is None:
            raise AttributeError(f"No transpose rule defined for custom_transpose function "
                                 f"{name} using def_transpose.")
        return _linear_map(self.fun, self.transpose, res_arg, lin_arg, "custom_transpose_call",
                           f"custom_transpose: the transpose rule {_fun_name(self.transpose)} "
                           f"of {name}")
