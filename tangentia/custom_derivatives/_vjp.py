"""``custom_vjp``: the decorator, one call's flat fwd and bwd rules, and the
``symbolic_zeros`` arguments of ``fwd`` (``CustomVJPPrimal``)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import core
from ..core import Zero
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_map
from ._base import (_ARRAYS, _LEAF_TREE, _Call, _CustomFunction, _flatten_out, _ndarray,
                    _unflatten_out, _user_zero, custom_vjp_call_p, user_values, wants_jax_arrays,
                    require_arrays)
from ._errors import _flatten_bwd_output, _fwd_pair_message, _reraise_rule_error


class CustomVJPPrimal:
    """An argument of ``fwd`` under ``symbolic_zeros=True``: its value and
    whether it is perturbed (differentiated)."""

    __slots__ = ("value", "perturbed")

    def __init__(self, value: Any, perturbed: bool) -> None:
        self.value, self.perturbed = value, perturbed

    def __repr__(self):
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def _fwd_args(ca, n_dyn, sz, perturbed, xs):
    args = ([CustomVJPPrimal(y, p) for y, p in zip(xs[n_dyn:], perturbed[n_dyn:])]
            if sz else xs[n_dyn:])
    return args if ca is None else tuple(ca.full(xs[:n_dyn], args))


def _bwd_args(ca, n_dyn, nres, res_tree, out_tree, flat):
    return (*(() if ca is None else ca.nondiff(flat[:n_dyn])),
            _unflatten_out(res_tree, flat[n_dyn:nres]), _unflatten_out(out_tree, flat[nres:]))


class _VJPCall(_Call):
    """A call of a ``custom_vjp`` function (``rules``: its function, fwd and
    bwd rules, symbolic_zeros and the rules' names)."""

    __slots__ = ()

    def fwd(self, perturbed, *xs):
        """The fwd rule with flat inputs: ``(outs, residuals, trees)``."""
        _, fwd, _, sz, fwd_name, _ = self.rules
        ca, n_dyn = self.ca, self.n_dyn
        # The differentiable inputs' types, for bwd's checks: the arrays
        # themselves in the common case, else their avals (never tracers,
        # which would make a reference cycle through the recorded program).
        if ca is None:
            in_types = xs
            for x in xs:
                if not isinstance(x, _ndarray):
                    in_types = [core.get_aval(y) for y in xs]
                    break
        else:
            in_types = ca.avals
        fwd_args = xs if ca is None and not sz else _fwd_args(ca, n_dyn, sz, perturbed, xs)
        try:
            res = fwd(*fwd_args)
        except TypeError as e:
            _reraise_rule_error(e, fwd, fwd_args, "Custom VJP fwd rule", self.owner.name,
                                "fwd(*args) (the function's own arguments)", 0)
        except (AttributeError, ValueError) as e:
            wants_jax_arrays(e)
            res = fwd(*_fwd_args(ca, n_dyn, sz, perturbed, user_values(xs)))
        if not (type(res) is tuple or isinstance(res, (tuple, list))) or len(res) != 2:
            name = self.owner.name
            raise TypeError(_fwd_pair_message(fwd_name, name) + "but instead of a pair the "
                            f"fwd rule {fwd_name} produced {res!r}.")
        out, residuals = res
        if type(out) is _ndarray or isinstance(out, _ARRAYS):
            outs, out_tree = [out], _LEAF_TREE
        else:
            outs, out_tree = tree_flatten(out)
        want = self.out_tree
        if want is not out_tree and want is not None and want != out_tree:
            name = self.owner.name
            raise TypeError(
                _fwd_pair_message(fwd_name, name) + "but instead the fwd rule output's first "
                f"element had container/pytree structure:\n    {out_tree}\nwhile the "
                f"custom_vjp-decorated function {name} had output container/pytree "
                f"structure:\n    {want}. (expected {want}, got {out_tree})")
        self.out_tree = out_tree
        if isinstance(residuals, _ndarray):
            res_leaves, res_tree = [residuals], _LEAF_TREE
        else:
            res_leaves, res_tree = _flatten_out(residuals)
            require_arrays(res_leaves, f"Custom VJP fwd rule {fwd_name} for function "
                           f"{self.owner.name}: residual")
        if n_dyn:  # the nondiff arrays are residuals too, for bwd
            res_leaves = [*xs[:n_dyn], *res_leaves]
        return outs, res_leaves, (out_tree, res_tree, in_types)

    def bwd(self, trees, *res_and_cts):
        """The bwd rule with flat inputs (residuals, then output cotangents)
        and outputs (one cotangent per input, ``Zero`` for a zero one)."""
        rules, ca, n_dyn = self.rules, self.ca, self.n_dyn
        bwd, sz = rules[2], rules[3]
        out_tree, res_tree, in_types = trees
        if (ca is None and res_tree is _LEAF_TREE and out_tree is _LEAF_TREE
                and len(res_and_cts) == 2):
            c = res_and_cts[1]  # one residual array, one output: the common case
            bwd_args = flat = (res_and_cts if type(c) is not Zero
                               else (res_and_cts[0], _user_zero(c, sz)))
        else:
            nres = n_dyn + res_tree.num_leaves
            flat = (*res_and_cts[:nres],
                    *[_user_zero(c, sz) if type(c) is Zero else c for c in res_and_cts[nres:]])
            bwd_args = _bwd_args(ca, n_dyn, nres, res_tree, out_tree, flat)
        try:
            got = bwd(*bwd_args)
        except TypeError as e:
            _reraise_rule_error(e, bwd, bwd_args, "Custom VJP bwd rule", self.owner.name,
                                "bwd(*nondiff_args, residuals, cotangents)", len(bwd_args) - 2)
        except (AttributeError, ValueError) as e:
            wants_jax_arrays(e)
            got = bwd(*_bwd_args(ca, n_dyn, n_dyn + res_tree.num_leaves, res_tree, out_tree,
                                 user_values(flat)))
        if ca is None and type(got) is tuple and len(got) == len(in_types):
            for c, x in zip(got, in_types):  # the common case: arrays of the right types
                if not ((type(c) is _ndarray or isinstance(c, _ARRAYS)) and c.shape == x.shape
                        and (c.dtype is x.dtype or c.dtype == x.dtype)):
                    break
            else:
                return got
        out = _flatten_bwd_output(got, ca, in_types, rules[5], self.owner.name, sz)
        if n_dyn:
            return [Zero.from_primal(d) for d in res_and_cts[:n_dyn]] + out
        return out


def _set_rules(params, call):
    """A call's flat rules (methods of its ``_VJPCall``) into its parameters."""
    params["fun"] = call.fun
    params["fwd"] = call.fwd
    params["bwd"] = call.bwd


class custom_vjp(_CustomFunction):
    """A function with a user-defined VJP (reverse-mode) rule.

    ``f.defvjp(fwd, bwd)``: ``fwd`` takes ``f``'s arguments and returns
    ``(out, residuals)``; ``bwd(*nondiff, residuals, cotangent)`` returns a
    tuple with one cotangent (or ``None``) per differentiable argument.

    Arrays passed through ``nondiff_argnums``, traced ones included (the
    old-style ``clip_gradient(lo, hi, x)`` under jit and vmap), are rewritten
    into inputs and residuals: ``fwd`` and ``bwd`` receive them as the same
    values, and their cotangent is zero.

    Forward mode (``jvp``, ``jacfwd``) through a ``custom_vjp`` differentiates
    ``fwd`` and transposes ``bwd``, as the rule defines reverse mode only.

    Args:
      fun: the function; its own code gives the values.
      nondiff_argnums: positions of arguments that are not differentiated;
        ``bwd`` receives them first.
      nondiff_argnames: names of such arguments.

    Returns:
      (Construct it as a decorator.)  Calling the ``custom_vjp`` calls
      ``fun``; ``defvjp`` sets the rules.

    Raises:
      TypeError: (when differentiated) no rule was defined, or ``bwd``
        returns the wrong number, structure or dtypes of cotangents.

    Examples:
      Gradient clipping: the value is ``x``, the gradient is clipped.

      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> @tg.custom_vjp
      ... def clip_gradient(lo, hi, x):
      ...     return x
      >>> def fwd(lo, hi, x):
      ...     return x, (lo, hi)
      >>> def bwd(res, g):
      ...     lo, hi = res
      ...     return None, None, tnp.clip(g, lo, hi)
      >>> clip_gradient.defvjp(fwd, bwd)
      >>> tg.grad(lambda x: 3.0 * clip_gradient(-1.0, 1.0, x))(2.0)
      Array(1.)
    """

    kind = "custom_vjp"
    _BINDING = (_VJPCall, _set_rules, custom_vjp_call_p)

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()) -> None:
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None
        self._undefined = f"No VJP defined for custom_vjp function {self.name} using defvjp."

    def defvjp(self, fwd: Callable[..., tuple[Any, Any]], bwd: Callable[..., tuple[Any, ...]],
               symbolic_zeros: bool = False, optimize_remat: bool = False) -> None:
        """Define the forward and backward rules.

        Args:
          fwd: ``fwd(*args) -> (out, residuals)``: the value and what
            ``bwd`` needs (any pytree of arrays).
          bwd: ``bwd(*nondiff, residuals, cotangent) -> tuple``: one
            cotangent (or ``None`` for zero) per differentiable argument.
          symbolic_zeros: ``fwd`` receives ``CustomVJPPrimal`` arguments
            (value and whether it is perturbed) and ``bwd`` may receive
            ``SymbolicZero`` cotangents.
          optimize_remat: accepted for JAX compatibility; no effect here.
        """
        for what, f in (("fwd", fwd), ("bwd", bwd)):
            if not callable(f):
                raise TypeError(f"custom_vjp.defvjp of {_fun_name(self.fun)}: {what} must be "
                                f"callable, got {type(f).__name__}")
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros
        self._undefined = None
        self.fwd_name, self.bwd_name = _fun_name(fwd), _fun_name(bwd)
        self._rules = (self.fun, fwd, bwd, symbolic_zeros, self.fwd_name, self.bwd_name)
        # What every call binds with (``__call__`` adds the call's flat rules).
        self._params = dict(fun=None, fwd=None, bwd=None, num_consts=0,
                            symbolic_zeros=symbolic_zeros, name=self.name,
                            rule_name=self.fwd_name, call_jaxpr=None)
        self._set_state()


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """Strip the perturbation information from the arguments of a ``fwd`` rule
    defined with ``symbolic_zeros=True``: each ``CustomVJPPrimal`` becomes its value.

    Args:
      tree: a pytree whose leaves may be ``CustomVJPPrimal``.

    Returns:
      The pytree with each ``CustomVJPPrimal`` replaced by its ``value``.
    """
    return tree_map(lambda x: x.value if type(x) is CustomVJPPrimal else x, tree)
