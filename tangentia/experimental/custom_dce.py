"""``custom_dce``, as ``jax.experimental.custom_dce``: a function with a
user-defined dead-code-elimination rule.

``f = custom_dce(fun)`` and ``f.def_dce(rule)`` with ``rule(used_outs, *args)``
returning ``fun``'s output structure, ``None`` where ``used_outs`` is False.
A call binds ``custom_dce_call`` carrying ``fun``'s program and the rule:

* evaluation (eagerly nothing is staged) computes ``fun``;
* staging (``jit``) records the call; when dead-code elimination finds some of
  its outputs unused, the call is replaced by the rule's program for the used
  ones (partial_eval's ``dce_rules``), and that program keeps the rule for a
  later round;
* ``vmap`` batches the function and the rule;
* ``jvp`` (and so ``grad``) differentiates ``fun``'s program: the rule is not
  used for derivatives (as in JAX).
"""
from __future__ import annotations

import contextvars
import functools

from .. import core
from ..custom_derivatives import _resolve_kwargs, check_rule, forward_attr, require_arrays
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["custom_dce"]


class custom_dce:
    """Customize how dead-code elimination treats a function.

    Args:
      fun: the function.
      static_argnums: positions of arguments that are not traced (callables,
        shapes); the rule receives them first, before ``used_outs``.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia.experimental.custom_dce import custom_dce
      >>> @custom_dce
      ... def f(x):
      ...     return tnp.sin(x), tnp.cos(x)
      >>> @f.def_dce
      ... def rule(used_outs, x):            # deliberately not f, to show which runs
      ...     return (2 * x if used_outs[0] else None, 3 * x if used_outs[1] else None)
      >>> float(tg.jit(lambda x: f(x)[1])(1.0))
      3.0
    """

    def __init__(self, fun: Callable[..., Any], *, static_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.static_argnums = tuple(sorted(int(i) for i in static_argnums))
        self.dce_rule = None

    __getattr__ = forward_attr

    def def_dce(self, dce_rule: Callable[..., Any]) -> Callable[..., Any]:
        """Define the DCE rule; returns it (so it can be used as a decorator).

        Args:
          dce_rule: ``dce_rule(*static_args, used_outs, *args)``: ``used_outs``
            has the output's structure with a bool per leaf; the rule returns
            the output's structure, with ``None`` for unused parts.

        Returns:
          ``dce_rule``.
        """
        check_rule(dce_rule, "custom_dce.def_dce", self.fun)
        self.dce_rule = dce_rule
        return dce_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = _fun_name(self.fun)
        if self.dce_rule is None:
            raise AttributeError(f"No DCE rule defined for custom_dce function {name} using "
                                 "def_dce.")
        args = _resolve_kwargs(self.fun, args, kwargs, "custom_dce")
        if core.is_eager():  # evaluation: the function, untraced
            return self.fun(*args)
        static = [args[i] for i in self.static_argnums]
        dyn = [a for i, a in enumerate(args) if i not in self.static_argnums]
        leaves, in_tree = tree_flatten(tuple(dyn))
        require_arrays(leaves, f"custom_dce function {name}: argument",
                       " (mark non-array arguments with static_argnums)")
        store = {}

        def merged(dyn_args):
            it = iter(dyn_args)
            return [args[i] if i in self.static_argnums else next(it) for i in range(len(args))]

        def flat_fun(*xs):
            out = self.fun(*merged(tree_unflatten(in_tree, list(xs))))
            outs, store["out_tree"] = tree_flatten(out)
            return outs

        rule, rule_name = self.dce_rule, _fun_name(self.dce_rule)

        def rule_for(used):
            """The rule as a flat function of the call's inputs: the used outputs."""
            def flat_rule(*xs):
                out_tree = store["out_tree"]
                out = rule(*static, tree_unflatten(out_tree, list(used)),
                           *tree_unflatten(in_tree, list(xs)))
                return _used_outputs(out, out_tree, used, store["out_avals"], rule_name, name)
            return flat_rule

        outs = _bind(flat_fun, rule_for, list(leaves), name)
        store["out_avals"] = [core.get_aval(o) for o in outs]  # read when the rule runs
        return tree_unflatten(store["out_tree"], outs)


def _used_outputs(out, out_tree, used, out_avals, rule_name, name):
    """The rule's output ``out`` for the used outputs, checked (JAX's errors)."""
    if isinstance(out, list) and len(out) == len(out_tree.children()):
        out = tuple(out)
    missing = object()
    # The rule's output on the function's structure, a None standing for a whole subtree.
    dummy = tree_unflatten(out_tree, [missing] * out_tree.num_leaves)
    flat = []

    def append(x, d):
        n = tree_structure(d).num_leaves
        flat.extend([missing] * n if x is None else [x] * n)

    try:
        tree_map(append, out, dummy, is_leaf=lambda x: x is None)
    except Exception:  # noqa: BLE001 - reported with both structures
        raise TypeError(
            f"Custom DCE rule {rule_name} for function {name} must produce an output with the "
            f"same container (pytree) structure as the output of the function {name}. But, the "
            f"DCE rule returned structure {tree_structure(out)}, while {name} returned "
            f"{out_tree}.") from None
    results = []
    for i, (u, aval, val) in enumerate(zip(used, out_avals, flat)):
        if not u:
            continue
        if val is missing:
            raise ValueError(
                f"Custom DCE rule {rule_name} for function {name} must produce values for all "
                "of the required outputs (as specified by the used_outs argument to the rule). "
                f"But, at output[{i}], the DCE rule returned None instead of an output with "
                f"shape/dtype {aval.str_short()}.")
        got = core.get_aval(val)
        if got.shape != aval.shape or got.dtype != aval.dtype:
            raise ValueError(
                f"Custom DCE rule {rule_name} for function {name} must produce an output with "
                f"the same shapes/dtypes as the output of the function {name}. But, at "
                f"output[{i}], the DCE rule returned an output with shape/dtype "
                f"{got.str_short()}, while {aval.str_short()} was expected.")
        results.append(val)
    return results


def _bind(flat_fun, rule_for, ins, name):
    """Stage ``flat_fun`` on ``ins`` and bind ``custom_dce_call`` with it;
    ``rule_for(used)`` is the rule as a flat function of ``ins``."""
    jaxpr, consts = pe.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in ins], name=name,
                                      label="custom_dce")
    program = pe.convert_constvars_to_invars(jaxpr)
    n = len(consts)

    def dce_rule(used):
        return lambda *xs: rule_for(used)(*xs[n:])

    return custom_dce_call_p.bind(*consts, *ins, call_jaxpr=program, call_consts=(),
                                  dce_rule=dce_rule, name=name)


custom_dce_call_p = core.Primitive("custom_dce_call", multiple_results=True,
                                   call_param="call_jaxpr")


def _impl(*xs, call_jaxpr, call_consts, **_):
    return core.eval_jaxpr(call_jaxpr, list(call_consts), *xs)


def _jvp(primals, tangents, *, call_jaxpr, call_consts, **_):
    # Derivatives differentiate the function's program (the rule is dropped, as in JAX).
    return ad.jvp_flat(lambda *xs: _impl(*xs, call_jaxpr=call_jaxpr, call_consts=call_consts),
                       list(primals), list(tangents))


def _batch(args, dims, *, call_jaxpr, call_consts, dce_rule, name):
    size = batching.batch_size(args, dims)
    xs = [x if d is None else batching.move_to_front(x, d) for x, d in zip(args, dims)]
    in_dims = [None if d is None else 0 for d in dims]

    def batched(fn):
        return lambda *ys: batching.vmap_flat(fn, ys, in_dims, size, lambda n: [0] * n)

    outs = _bind(batched(lambda *ys: _impl(*ys, call_jaxpr=call_jaxpr, call_consts=call_consts)),
                 lambda used: batched(dce_rule(used)), xs, name)
    return outs, [0] * len(outs)


# True while a rule is traced: the custom_dce calls it makes (a rule may call its
# own function) are kept whole there, or eliminating their outputs would recurse.
_tracing_rule = contextvars.ContextVar("tangentia_custom_dce_rule", default=False)


def _dce(eqn, used):
    """The call with only its ``used`` outputs: the rule's program for them."""
    if all(used) or _tracing_rule.get():
        return eqn
    params = eqn.params
    token = _tracing_rule.set(True)
    try:
        program, consts = pe.trace_to_jaxpr(params["dce_rule"](tuple(used)),
                                            [a.aval for a in eqn.inputs], name=params["name"],
                                            label="custom_dce rule")
    finally:
        _tracing_rule.reset(token)
    positions = [i for i, u in enumerate(used) if u]

    def dce_rule(sub_used):   # a later round: the original rule on the original outputs
        full = [False] * len(used)
        for p, u in zip(positions, sub_used):
            full[p] = u
        return params["dce_rule"](tuple(full))

    outputs = [o for o, u in zip(eqn.outputs, used) if u]
    return core.Eqn(eqn.prim, eqn.inputs, outputs,
                    dict(params, call_jaxpr=program, call_consts=tuple(consts),
                         dce_rule=dce_rule), eqn.source)


custom_dce_call_p.impl = _impl
custom_dce_call_p.abstract_eval = lambda *avals, call_jaxpr, **_: [v.aval for v in
                                                                    call_jaxpr.outvars]
ad.primitive_jvps[custom_dce_call_p] = _jvp
batching.primitive_batchers[custom_dce_call_p] = _batch
custom_dce_call_p.print_params = lambda params: {"name": params["name"],
                                                 "call_jaxpr": params["call_jaxpr"]}
pe.dce_rules[custom_dce_call_p] = _dce
