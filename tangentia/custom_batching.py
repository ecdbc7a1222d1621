"""Custom batching rules: ``custom_vmap`` and ``sequential_vmap``, as
``jax.custom_batching``.

``@custom_vmap`` marks a function whose ``vmap`` is given by a rule,
``f.def_vmap(rule)`` with ``rule(axis_size, in_batched, *args) -> (out,
out_batched)``: ``in_batched`` is a list of pytrees of bools matching the
arguments (batched arguments carry their batch axis first), ``out_batched`` a
pytree of bools matching the output.  A call binds ``custom_vmap_call``, a
call-like primitive that every interpreter handles through its
``process_custom_vmap_call`` method (the one dispatch path of ``core``):

* evaluation calls the function (eagerly it is not even traced, so it may
  print or stop in pdb);
* ``vmap`` calls the rule instead of batching the function;
* ``jvp`` differentiates the function as written and, under ``vmap``, batches
  its JVP with the JVP of the rule (``jacfwd`` of a custom_vmap function uses
  the rule), as JAX does;
* staging (``jit``) records the call with the function's program, which the
  backends compile inline;
* reverse mode (partial evaluation with unknown inputs) is an error, as in
  JAX; a custom_vjp around the function (or inside its rules) gives it one.

Under any transformation the function is traced when called, and the values
it closes over become leading operands of the call; they must not be batched
(the rule only sees the arguments).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from . import core
from .custom_derivatives import _resolve_kwargs, check_rule, forward_attr, require_arrays
from .interpreters import partial_eval as pe
from ._messages import fun_name as _fun_name
from .lax import map as _lax_map
from .tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["custom_vmap", "sequential_vmap"]


custom_vmap_call_p = core.CustomVmapCallPrimitive("custom_vmap_call")
custom_vmap_call_p.abstract_eval = lambda *avals, call_jaxpr, **_: [v.aval for v in
                                                                   call_jaxpr.outvars]
custom_vmap_call_p.print_params = lambda params: {"name": params["name"],
                                                  "call_jaxpr": params["call_jaxpr"]}
# (a call: the backends run or inline its program, ``call_jaxpr``, as the
# primitive declares; see ``core.CustomVmapCallPrimitive``)


def _as_arrays(leaves):
    return [x if type(x) is np.ndarray or isinstance(x, core.Tracer) else np.asarray(x)
            for x in leaves]


class custom_vmap:
    """A function with a user-defined ``vmap`` rule (``jax.custom_batching.custom_vmap``).

    Under ``vmap`` the rule computes the batched result; elsewhere ``fun``
    runs.  The rule is used under ``jit`` and inside loops too, and
    differentiating the function differentiates ``fun``.

    Args:
      fun: the function (arrays or pytrees in and out).

    Returns:
      (Construct it as a decorator.)  Calling it calls ``fun``;
      ``def_vmap(rule)`` sets the batching rule.

    Raises:
      TypeError: the rule is not callable, or its output or ``out_batched``
        does not match ``fun``'s output structure.

    Examples:
      >>> import numpy as np, tangentia as tg, tangentia.numpy as tnp
      >>> @tg.custom_batching.custom_vmap
      ... def f(x, y):
      ...     return x + y
      >>> @f.def_vmap
      ... def f_vmap_rule(axis_size, in_batched, xs, ys):
      ...     return xs * ys, in_batched[0] or in_batched[1]   # deliberately not x + y
      >>> tg.vmap(f)(np.arange(3.0), np.arange(3.0)).tolist()
      [0.0, 1.0, 4.0]
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.vmap_rule = None

    def def_vmap(self, vmap_rule: Callable[..., tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
        """Define the batching rule; returns it unchanged (so it can be used as a decorator).

        Args:
          vmap_rule: ``vmap_rule(axis_size, in_batched, *args) -> (out,
            out_batched)``: ``in_batched`` has one bool per argument leaf
            (whether it carries the batch axis, in front), ``out_batched``
            likewise for the output.

        Returns:
          ``vmap_rule``.
        """
        check_rule(vmap_rule, "custom_vmap.def_vmap", self.fun)
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    __getattr__ = forward_attr

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = _fun_name(self.fun)
        # Bound to the signature (defaults applied), so a missing or unknown
        # argument gets JAX's error naming the custom_vmap function.
        args = _resolve_kwargs(self.fun, args, kwargs, "custom_vmap")
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                                 "using def_vmap.")
        leaves, in_tree = tree_flatten(args)
        require_arrays(leaves, f"custom_vmap function {name}: argument",
                       " (close over non-array values instead of passing them)")
        if core.is_eager():  # evaluation: the function, as Python, untraced
            out_leaves, out_tree = tree_flatten(self.fun(*args))
            return tree_unflatten(out_tree, _as_arrays(out_leaves))
        store = {}

        def flat_fun(*xs):
            out_leaves, store["out_tree"] = tree_flatten(self.fun(*tree_unflatten(in_tree, xs)))
            return out_leaves

        jaxpr, consts = pe.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in leaves],
                                          name=name, label="custom_vmap")
        call_jaxpr = pe.convert_constvars_to_invars(jaxpr)
        out_tree = store["out_tree"]
        rule = functools.partial(_flat_rule, self.vmap_rule, name, in_tree, out_tree,
                                 tuple(call_jaxpr.out_avals))
        outs = custom_vmap_call_p.bind(*consts, *leaves, fun=core.jaxpr_as_fun(call_jaxpr),
                                       rule=rule, num_consts=len(consts), name=name,
                                       call_jaxpr=call_jaxpr)
        return tree_unflatten(out_tree, outs)


def _flat_rule(rule, name, in_tree, out_tree, out_avals, axis_size, in_batched, *xs):
    """The user's rule on flat arguments: ``(flat outputs, flat out_batched)``, checked
    against the function's output (structure, then each output's type)."""
    args = tree_unflatten(in_tree, list(xs))
    batched = list(tree_unflatten(in_tree, [bool(b) for b in in_batched]))
    rule_name = _fun_name(rule)
    res = rule(axis_size, batched, *args)
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"custom vmap rule ({rule_name}) of function {name} must return a pair "
                        f"(output, out_batched), got {type(res).__name__}")
    out, out_batched = res
    outs, tree = tree_flatten(out)
    flags, flags_tree = tree_flatten(out_batched)
    if tree != flags_tree:
        raise ValueError(
            "structure of output value and output batching specification returned by custom "
            f"vmap rule ({rule_name}) do not match.\nOutput values: {tree}\n"
            f"Batching spec: {flags_tree}\n(custom_vmap function {name})")
    if tree != out_tree:
        raise ValueError(
            f"structure of output returned by custom vmap rule ({rule_name}) does not match "
            f"that of original custom-vmapped function.\nOriginal output: {out_tree}\n"
            f"Rule output: {tree}\n(custom_vmap function {name})")
    outs = _as_arrays(outs)
    for i, (o, b, a) in enumerate(zip(outs, flags, out_avals)):
        if not isinstance(b, (bool, np.bool_)):
            raise TypeError(f"custom vmap rule ({rule_name}) of function {name}: out_batched "
                            f"must be a pytree of bools, got {b!r} for output {i}")
        want = ((axis_size,) if b else ()) + a.shape
        got = core.get_aval(o)
        # A batched output needs only its batch axis in front: JAX does not check
        # the rest of its shape (a rule may broadcast a closed-over value into it).
        if ((got.shape[:1] != want[:1] if b else got.shape != want)
                or got.dtype != a.dtype):
            raise ValueError(
                f"custom vmap rule ({rule_name}) of function {name}: output {i} is marked "
                f"{'batched' if b else 'unbatched'} in out_batched, so it must be "
                f"{core.ShapedArray(want, a.dtype).str_short()} (the function's output "
                f"{a.str_short()}{f' with a leading batch axis of {axis_size}' if b else ''}), "
                f"but the rule returned {got.str_short()}")
    return outs, [bool(b) for b in flags]


def sequential_vmap(f: Callable) -> custom_vmap:
    """A ``custom_vmap`` whose rule maps ``f`` over the batch sequentially (a
    loop, ``lax.map``), for functions that have no batched form.

    Args:
      f: the function.

    Returns:
      A ``custom_vmap`` of ``f``.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia.custom_batching import sequential_vmap
      >>> tg.vmap(sequential_vmap(lambda x: tnp.sum(x) * 2))(tnp.ones((3, 2)))
      Array([4., 4., 4.])
    """
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        del axis_size
        if not any(tree_flatten(in_batched)[0]):
            # Nothing to map (the JVP of a call whose tangents alone are batched,
            # as under jacfwd): the function itself, unbatched; JAX's lax.map fails.
            out = f.fun(*args)
            return out, tree_map(lambda _: False, out)
        mapped = tree_map(lambda b, x: x if b else None, in_batched, list(args))
        fixed = tree_map(lambda b, x: None if b else x, in_batched, list(args))

        def one(m):
            return f(*tree_map(lambda b, x, y: x if b else y, in_batched, m, fixed,
                               is_leaf=lambda x: x is None))
        out = _lax_map(one, mapped)
        return out, tree_map(lambda _: True, out)

    return f

