"""``custom_jvp``: the decorator and one call's flat JVP rule."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import core
from ..core import Zero
from .._array import ArrayImpl
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_map
from ._base import (_ARRAYS, _LEAF_TREE, SymbolicZero, _Call, _CustomFunction, _JaxprTracer,
                    _as_arrays, _ndarray, _user_zero, check_rule, custom_jvp_call_p,
                    read_only, user_values, wants_jax_arrays, zero_from_primal)
from ._errors import _check_out_tree, _check_primal_types, _check_tangent, _reraise_rule_error


def _jvp_args(ca, n_dyn, prims, tans):
    return (*ca.nondiff(prims[:n_dyn]), ca.diff(prims[n_dyn:]), ca.diff(tans))


class _JVPCall(_Call):
    """A call of a ``custom_jvp`` function (``rules``: its function, JVP
    rule, symbolic_zeros and the rule's name)."""

    __slots__ = ()

    def jvp(self, *xs):
        """The JVP rule with flat inputs (primals, then the differentiable
        inputs' tangents) and outputs (primals, then tangents)."""
        rules, ca, n_dyn = self.rules, self.ca, self.n_dyn
        rule = rules[1]
        n_prims = (len(xs) + n_dyn) // 2  # (n_dyn nondiff, then n_diff primals and tangents)
        prims, tans = xs[:n_prims], xs[n_prims:]
        for t in tans:  # (under grad the tangents are tracers: two type tests each)
            if type(t) is Zero or type(t) is _ndarray:
                sz = rules[2]
                tans = read_only(tuple([_user_zero(t, sz) if type(t) is Zero else t
                                        for t in tans]))
                break
        rule_args = (prims, tans) if ca is None else _jvp_args(ca, n_dyn, prims, tans)
        try:
            res = rule(*rule_args)
        except TypeError as e:
            _reraise_rule_error(e, rule, rule_args, "Custom JVP rule", self.owner.name,
                                "jvp(*nondiff_args, primals, tangents)", len(rule_args) - 2)
        except (AttributeError, ValueError) as e:
            wants_jax_arrays(e)
            prims, tans = user_values(prims), user_values(tans)
            res = rule(*((prims, tans) if ca is None else _jvp_args(ca, n_dyn, prims, tans)))
        if not ((type(res) is tuple or isinstance(res, (tuple, list))) and len(res) == 2):
            raise TypeError(f"Custom JVP rule {rules[3]} for function {self.owner.name} must "
                            "produce a pair (list or tuple of length two) representing primal "
                            f"and tangent outputs, but got {res!r}.")
        p_out, t_out = res
        # (``type(...) is`` tests first: the common types, without an isinstance call)
        tp, staged = type(p_out), type(t_out) is _JaxprTracer
        if tp is ArrayImpl or tp is _ndarray or isinstance(p_out, _ARRAYS):  # one array: fast path
            if (staged or isinstance(t_out, _ARRAYS) or t_out is None
                    or type(t_out) is SymbolicZero or core.is_array_like(t_out)):
                tree = self.out_tree
                if tree is None:
                    self.out_tree = _LEAF_TREE
                elif tree is not _LEAF_TREE:
                    _check_out_tree(self, _LEAF_TREE, rules[3], self.owner.name, [p_out], xs,
                                    n_prims)
                if staged and (tp is ArrayImpl or tp is _ndarray or isinstance(p_out, _ndarray)):
                    ta = t_out.ir_var.aval  # a staged tangent of the primal's type: as it is
                    if ta.shape == p_out.shape and ta.dtype == p_out.dtype and ta.dtype.kind in "fc":
                        return [p_out, t_out]
                jvp_name, name = rules[3], self.owner.name
                try:
                    return [p_out, _check_tangent(p_out, t_out, 0, jvp_name, name)]
                except TypeError:  # a primal output of the wrong type is reported first
                    _check_primal_types(self, [p_out], xs[:n_prims], jvp_name, name)
                    raise
        jvp_name, name = rules[3], self.owner.name
        p_leaves, p_tree = tree_flatten(p_out)
        t_leaves, t_tree = tree_flatten(t_out, is_leaf=lambda x: x is None or
                                        type(x) is SymbolicZero)
        if p_tree != t_tree:   # None where the primal output has None too, as JAX's
            t_leaves2, t_tree2 = tree_flatten(t_out, is_leaf=lambda x: type(x) is SymbolicZero)
            if t_tree2 == p_tree:
                t_leaves, t_tree = t_leaves2, t_tree2
        if p_tree != t_tree:
            raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce "
                            "primal and tangent outputs with equal container (pytree) "
                            f"structures, but got {p_tree} and {t_tree} respectively.")
        _check_out_tree(self, p_tree, jvp_name, name, p_leaves, xs, n_prims)
        try:
            fixed = [_check_tangent(p, t, i, jvp_name, name)
                     for i, (p, t) in enumerate(zip(p_leaves, t_leaves))]
        except TypeError:  # a primal output of the wrong type is reported first
            _check_primal_types(self, p_leaves, xs[:n_prims], jvp_name, name)
            raise
        outs = _as_arrays(p_leaves) + fixed
        n = len(p_leaves)
        for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            if type(p) in _PY_SCALARS and type(t) is type(p):
                # Python scalars out of the rule stay Python scalars, as JAX's (an
                # eager jvp returns them as they are)
                outs[i], outs[n + i] = p, t
        return outs


_PY_SCALARS = (float, complex)


def _set_rules(params, call):
    """A call's flat rules (methods of its ``_JVPCall``) into its parameters."""
    params["fun"] = call.fun
    params["jvp"] = call.jvp


class custom_jvp(_CustomFunction):
    """A function with a user-defined JVP (forward-mode) rule.

    Use as a decorator, then ``f.defjvp(rule)`` with
    ``rule(*nondiff, primals, tangents) -> (primal_out, tangent_out)``.
    The rule is used by jvp, by reverse mode (it is linearized and
    transposed), under vmap, jit and control flow, and at any order.

    Args:
      fun: the function; its own code gives the values (and is used when
        nothing differentiates it).
      nondiff_argnums: positions of arguments that are not differentiated
        (Python values such as callables, or arrays); the rule receives them
        first, before ``primals``.
      nondiff_argnames: names of such arguments.

    Returns:
      (Construct it as a decorator.)  Calling the ``custom_jvp`` calls
      ``fun``; ``defjvp``/``defjvps`` set the rule.

    Raises:
      TypeError: (when called under differentiation) no rule was defined,
        or the rule's output does not match ``fun``'s structure or dtypes.

    Examples:
      ``log(1 + exp(x))`` whose derivative stays finite for large ``x``:

      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> @tg.custom_jvp
      ... def log1pexp(x):
      ...     return tnp.log1p(tnp.exp(x))
      >>> @log1pexp.defjvp
      ... def log1pexp_jvp(primals, tangents):
      ...     x, = primals
      ...     t, = tangents
      ...     return log1pexp(x), t * (1 - 1 / (1 + tnp.exp(x)))
      >>> tg.grad(log1pexp)(100.0)
      Array(1.)
      >>> tg.vmap(tg.grad(log1pexp))(tnp.array([0.0, 100.0]))
      Array([0.5, 1. ])
    """

    kind = "custom_jvp"
    _BINDING = (_JVPCall, _set_rules, custom_jvp_call_p)

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()) -> None:
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self._undefined = f"No JVP defined for custom_jvp function {self.name} using defjvp."

    def defjvp(self, jvp: Callable[..., tuple[Any, Any]], symbolic_zeros: bool = False
               ) -> Callable[..., tuple[Any, Any]]:
        """Define the JVP rule; returns ``jvp`` so it can be used as a decorator.

        Args:
          jvp: ``jvp(*nondiff, primals, tangents) -> (primal_out, tangent_out)``
            with ``primals`` and ``tangents`` tuples of the differentiable
            arguments; ``tangent_out`` has ``primal_out``'s structure.
          symbolic_zeros: tangents of arguments that are not perturbed are
            passed as ``SymbolicZero`` instead of arrays of zeros.

        Returns:
          ``jvp``.
        """
        check_rule(jvp, "custom_jvp.defjvp", self.fun)
        self.jvp = jvp
        self._undefined = None
        self.jvp_name = _fun_name(jvp)
        self.symbolic_zeros = symbolic_zeros
        self._rules = (self.fun, jvp, symbolic_zeros, self.jvp_name)
        # What every call binds with (``__call__`` adds the call's flat rules).
        self._params = dict(fun=None, jvp=None, num_consts=0, num_nondiff=0,
                            symbolic_zeros=symbolic_zeros, name=self.name,
                            rule_name=self.jvp_name, call_jaxpr=None)
        self._set_state()
        return jvp

    def defjvps(self, *jvps: Callable[..., Any] | None) -> None:
        """Define the JVP rule by one function per argument.

        Args:
          *jvps: one ``fn(t, ans, *primals) -> tangent contribution`` per
            argument (``None`` for an argument with a zero derivative); the
            contributions are summed.

        Examples:
          >>> import tangentia as tg, tangentia.numpy as tnp
          >>> f = tg.custom_jvp(lambda x, y: x * y)
          >>> f.defjvps(lambda t, ans, x, y: t * y, lambda t, ans, x, y: x * t)
          >>> tg.grad(f, argnums=(0, 1))(2.0, 3.0)
          (Array(3.), Array(2.))
        """
        if self.nondiff_argnums:
            raise TypeError("custom_jvp.defjvps is not supported with nondiff_argnums")

        def jvp(primals, tangents):
            ans = self(*primals)
            out = None
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                c = fn(t, ans, *primals)
                out = c if out is None else tree_map(lambda a, b: a + b, out, c)
            if out is None:
                out = tree_map(lambda a: zero_from_primal(a), ans)
            return ans, out

        self.defjvp(jvp)
