"""``custom_gradient``: a function that returns its own pullback, as
``jax.custom_gradient``, built on ``custom_vjp``.

``f(*args) -> (out, pullback)`` with ``pullback(out_cotangent)`` returning
one cotangent per argument (a single value when ``f`` has one argument).

Beyond JAX: differentiated eagerly (``grad``/``vjp`` outside ``jit`` and
``vmap``), the pullback stays the Python closure ``f`` returned and is called
with concrete NumPy cotangents during the backward pass, so it may branch on
their values, print, or stop in pdb (as ChainRules' ``rrule``).  Under
``jit``, ``vmap`` or higher-order differentiation (where ``f`` sees traced
values) the pullback is traced once into a program whose constants are the
values it closes over; those are the custom_vjp's residuals, so the pullback
composes with every transformation (forward mode through it is its
transpose, as for any custom_vjp).
"""
from __future__ import annotations

import functools

from . import core
from .custom_derivatives import custom_vjp
from .interpreters import partial_eval as pe
from ._messages import fun_name as _fun_name
from .tree_util import Partial, tree_flatten, tree_leaves, tree_unflatten, treedef_is_leaf

__all__ = ["custom_gradient"]


def custom_gradient(fun):
    """Define ``fun``'s gradient by the pullback it returns with its output.

    ``fun(*args)`` returns ``(output, pullback)``; differentiating the
    decorated function calls ``pullback(cotangent)``, which returns one
    cotangent per argument (a single value for one argument).  Used eagerly,
    the pullback stays a Python closure called with NumPy arrays, so it may
    branch, print or stop in pdb; under ``jit`` it is traced.

    Args:
      fun: ``fun(*args) -> (output, pullback)``.

    Returns:
      A function with ``fun``'s arguments returning only ``output``, whose
      derivatives are given by ``pullback``.

    Examples:
      >>> import numpy as np, tangentia as tg, tangentia.numpy as tnp
      >>> @tg.custom_gradient
      ... def f(x):
      ...     return tnp.sin(x), lambda g: g * 2.0   # a deliberately custom gradient
      >>> float(tg.grad(f)(0.5))
      2.0
    """
    name = _fun_name(fun)

    def split(args):
        res = fun(*args)
        if not (isinstance(res, (tuple, list)) and len(res) == 2 and callable(res[1])):
            raise TypeError(f"custom_gradient function {name} must return a pair (output, "
                            f"pullback) with a callable pullback, got {_describe(res)}")
        return res

    @functools.wraps(fun)
    def primal(*args):
        return split(args)[0]

    def fwd(*args):
        out, pullback = split(args)
        if not any(isinstance(x, core.Tracer) for x in tree_leaves((args, out))):
            # Eager: the closure itself, carried in the residuals' structure.
            return out, Partial(functools.partial(_eager_pullback, pullback))
        out_leaves, out_tree = tree_flatten(out)
        store = {}

        def flat(*cts):
            cts_in, store["tree"] = tree_flatten(pullback(tree_unflatten(out_tree, list(cts))))
            return cts_in

        jaxpr, consts = pe.trace_to_jaxpr(
            flat, [core.tangent_aval(core.get_aval(o)) for o in out_leaves],
            name=f"pullback of {name}", label="custom_gradient")
        return out, Partial(functools.partial(_staged_pullback, jaxpr, out_tree, store["tree"]),
                            tuple(consts))

    def bwd(pullback, ct):
        return pullback(ct)

    f = custom_vjp(primal)
    f.defvjp(fwd, bwd)
    return f


def _per_argument(cts, tree):
    """The pullback's result as one cotangent per argument (JAX: a lone leaf is
    the cotangent of a one-argument function)."""
    return (cts,) if treedef_is_leaf(tree) else cts


def _eager_pullback(pullback, ct):
    cts = pullback(ct)
    return _per_argument(cts, tree_flatten(cts)[1])


def _staged_pullback(jaxpr, out_tree, in_tree, consts, ct):
    ct_leaves, tree = tree_flatten(ct)
    if tree != out_tree:
        raise TypeError(f"custom_gradient: the output cotangent has structure {tree}, but the "
                        f"function's output has structure {out_tree}")
    return _per_argument(tree_unflatten(in_tree, core.eval_jaxpr(jaxpr, consts, *ct_leaves)),
                         in_tree)


def _describe(x):
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a {type(x).__name__}"
