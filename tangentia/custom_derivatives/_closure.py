"""``closure_convert``: a function's closed-over floating values as explicit
arguments, so that a custom rule can differentiate with respect to them."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import core, dtypes
from ..interpreters import ad, batching, partial_eval as pe
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_unflatten


def _maybe_perturbed(x):
    """Whether closed-over ``x`` may carry a tangent, as JAX decides it: a
    concrete value cannot; a JVP value with a zero tangent only if its primal
    can; a staged value if its dtype has tangents (not integer or boolean);
    a batched value if the values it batches can."""
    if not isinstance(x, core.Tracer):
        return False
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return False
    if isinstance(x, ad.JVPTracer):
        return type(x.tangent) is not core.Zero or _maybe_perturbed(x.primal)
    if isinstance(x, batching.BatchTracer):
        return _maybe_perturbed(x.val)
    return True  # staged (or an unknown kind of tracer): it may be differentiated later


def _is_float(x):
    return dtypes.is_inexact(core.get_aval(x).dtype)


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list[Any]]:
    """Hoist the closed-over values of ``fun`` that may be differentiated
    into explicit arguments.

    As in JAX, the hoisted constants are the traced ones that may carry a
    tangent: floating values of an enclosing ``grad``/``jvp``, or staged by
    an enclosing ``jit`` (which may be differentiated later). Concrete
    values (Python floats, NumPy arrays, eager results), integer and boolean
    values, and values only batched by ``vmap`` stay closed over.

    Args:
      fun: the function, closing over arrays (for example a tracer of an
        outer ``grad``).
      *example_args: arguments of ``fun`` (their shapes and dtypes are used
        to trace it).

    Returns:
      ``(converted_fun, hoisted_consts)`` with
      ``converted_fun(*args, *hoisted_consts) == fun(*args)``.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> def g(w):
      ...     f, consts = tg.closure_convert(lambda x: tnp.sum(w * x) * 2.0, tnp.ones(2))
      ...     assert len(consts) == 1  # w, traced by grad; 2.0 stays closed over
      ...     return f(tnp.ones(2), *consts)
      >>> tg.grad(g)(tnp.array([1.0, 2.0]))
      Array([2., 2.])
    """
    return _closure_convert(fun, example_args, _maybe_perturbed)


def _closure_convert(fun, example_args, should_hoist):
    """``closure_convert`` hoisting the constants for which ``should_hoist``
    is true (odeint hoists every floating constant, concrete ones included,
    so that one compiled solve serves dynamics that differ only in them)."""
    leaves, in_tree = tree_flatten(example_args)
    avals = [core.get_aval(x) for x in leaves]
    store = {}

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        outs, store["out_tree"] = tree_flatten(out)
        return outs

    jaxpr, consts = pe.trace_to_jaxpr(flat, avals, name=_fun_name(fun), label="closure_convert")
    hoist = tuple(bool(should_hoist(c)) for c in consts)
    hoisted = [c for c, h in zip(consts, hoist) if h]
    kept = tuple(c for c, h in zip(consts, hoist) if not h)
    n_hoisted = len(hoisted)
    out_tree = store["out_tree"]

    def converted(*args):
        xs, hs = args[:len(args) - n_hoisted], args[len(args) - n_hoisted:]
        x_leaves, tree = tree_flatten(tuple(xs))
        if tree != in_tree:
            raise TypeError(
                "The inputs to the closure produced by closure_convert must have the same Pytree "
                "structure as the example arguments passed when closure_convert was called. "
                f"Expected {in_tree}, but got {tree}. (The converted {_fun_name(fun)} takes the "
                f"example arguments followed by the {n_hoisted} hoisted constants.)")
        it_h, it_k = iter(hs), iter(kept)
        cvals = [next(it_h) if h else next(it_k) for h in hoist]
        return tree_unflatten(out_tree, core.eval_jaxpr(jaxpr, cvals, *x_leaves))

    functools.update_wrapper(converted, fun)
    # What identifies the converted function (for callers that cache on it).
    converted.program = (jaxpr, kept, hoist, in_tree, out_tree)
    return converted, hoisted
