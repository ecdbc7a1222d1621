"""``closure_convert``: a function's closed-over floating values as explicit
arguments, so that a custom rule can differentiate with respect to them."""
from __future__ import annotations

import functools

from .. import core
from ..interpreters import partial_eval as pe
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_unflatten


def closure_convert(fun, *example_args):
    """Hoist the floating values ``fun`` closes over into explicit arguments.

    Floating constants (traced or not) are hoisted, so that a custom rule
    can differentiate with respect to them; integer and boolean constants
    cannot be perturbed and stay closed over, as in JAX.

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
      >>> w = tnp.array([1.0, 2.0])
      >>> f, consts = tg.closure_convert(lambda x: tnp.sum(w * x), tnp.ones(2))
      >>> len(consts), float(f(tnp.ones(2), *consts))
      (1, 3.0)
    """
    leaves, in_tree = tree_flatten(example_args)
    avals = [core.get_aval(x) for x in leaves]
    store = {}

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        outs, store["out_tree"] = tree_flatten(out)
        return outs

    jaxpr, consts = pe.trace_to_jaxpr(flat, avals, name=_fun_name(fun), label="closure_convert")
    hoist = tuple(core.get_aval(c).dtype.kind in "fc" for c in consts)
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
