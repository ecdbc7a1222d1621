"""User-defined differentiation rules: ``custom_jvp`` and ``custom_vjp``.

A call of a custom function binds a call-like primitive that every
interpreter passes through (the design of seeds/000):

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

import functools
import inspect

import numpy as np

from . import core, dtypes
from .core import Tracer, Zero
from .interpreters import ad
from .interpreters import partial_eval as pe
from .interpreters.ad import custom_lin_p  # noqa: F401 - the backends find it here
from ._messages import fun_name as _fun_name
from .tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten

__all__ = ["custom_jvp", "custom_vjp", "SymbolicZero", "CustomVJPPrimal", "closure_convert",
           "zero_from_primal"]


# ---------------------------------------------------------------------------
# Public helper types


class SymbolicZero:
    """A tangent or cotangent that is known to be zero (``symbolic_zeros=True``)."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    def instantiate(self):
        return np.zeros(self.aval.shape, self.aval.dtype)

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


def zero_from_primal(x, symbolic_zeros=False):
    aval = ad.tangent_aval(core.get_aval(x))
    return SymbolicZero(aval) if symbolic_zeros else np.zeros(aval.shape, aval.dtype)


class CustomVJPPrimal:
    """An argument of ``fwd`` under ``symbolic_zeros=True``: its value and
    whether it is perturbed (differentiated)."""

    __slots__ = ("value", "perturbed")

    def __init__(self, value, perturbed):
        self.value = value
        self.perturbed = perturbed

    def __repr__(self):
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


# ---------------------------------------------------------------------------
# The primitives.  What a call means is decided by the current interpreter
# (``process_custom_jvp_call`` / ``process_custom_vjp_call`` of each trace
# class, in its interpreter module; see ``core.Trace`` for the parameters).
# Inside the library a zero tangent is ``ad.Zero``; the flat wrappers below
# convert to and from ``SymbolicZero`` (or zeros) at the user's rules only.


custom_jvp_call_p = core.CustomJVPCallPrimitive("custom_jvp_call")
custom_vjp_call_p = core.CustomVJPCallPrimitive("custom_vjp_call")


def _print_params(params):
    out = {"name": params["name"]}
    if params.get("call_jaxpr") is not None:
        out["call_jaxpr"] = params["call_jaxpr"]
    if params.get("num_consts"):
        out["num_consts"] = params["num_consts"]
    if params.get("symbolic_zeros"):
        out["symbolic_zeros"] = True
    return out


for _p in (custom_jvp_call_p, custom_vjp_call_p):
    _p.print_params = _print_params
    _p.abstract_eval = lambda *avals, call_jaxpr=None, **_: [v.aval for v in call_jaxpr.outvars]


def _as_arrays(outs):
    return [o if type(o) is np.ndarray or isinstance(o, Tracer) else np.asarray(o) for o in outs]


def _user_zero(z, symbolic_zeros):
    """What a user rule sees for the internal zero ``z``."""
    return SymbolicZero(z.aval) if symbolic_zeros else np.zeros(z.aval.shape, z.aval.dtype)


# ---------------------------------------------------------------------------
# The user-facing decorators


def _resolve_kwargs(fun, args, kwargs, kind):
    if not kwargs:
        return tuple(args)
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        raise TypeError(f"{kind} function {_fun_name(fun)} was called with keyword arguments "
                        f"{sorted(kwargs)}, but its signature cannot be inspected to resolve "
                        "them to positions; pass them positionally") from None
    try:
        ba = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{kind} function {_fun_name(fun)}: {e}") from None
    ba.apply_defaults()
    if ba.kwargs:
        raise TypeError(f"{kind} function {_fun_name(fun)}: keyword arguments {sorted(ba.kwargs)} "
                        "cannot be resolved to positions (keyword-only or **kwargs parameters are "
                        "not supported by custom rules)")
    return tuple(ba.args)


def _check_leaves(leaves, kind, name):
    for i, x in enumerate(leaves):
        if not core.is_array_like(x):
            try:
                core.get_aval(x)
            except TypeError:
                raise TypeError(f"{kind} function {name}: argument leaf {i} of type "
                                f"{type(x).__name__} is not an array; mark non-array arguments "
                                "with nondiff_argnums") from None


def _avals_str(tree, leaves):
    return str(tree_unflatten(tree, [core.get_aval(x).str_short() for x in leaves]))


def _tangent_mismatch(rule, fname, what, expected, got):
    return TypeError(f"Custom JVP rule {rule} for function {fname} must produce {what}; "
                     f"expected {expected}, got {got}.")


_LEAF_TREE = tree_structure(0)


def _flatten_args(args):
    """Flatten positional arguments; ``(list(args), None)`` when all are arrays
    (the common case, which then needs no pytree work)."""
    for a in args:
        if not (type(a) is np.ndarray or isinstance(a, Tracer)):
            leaves, tree = tree_flatten(tuple(args))
            return leaves, tree
    return list(args), None


def _flatten_out(out):
    if type(out) is np.ndarray or isinstance(out, Tracer):
        return [out], _LEAF_TREE
    return tree_flatten(out)


def _unflatten_out(tree, outs):
    return outs[0] if tree is _LEAF_TREE else tree_unflatten(tree, outs)


def _type_str(aval):
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def _check_tangent(p, t, i, jvp_name, name):
    """Check/normalize tangent output ``i`` of a JVP rule against its primal ``p``."""
    pa = core.get_aval(p)
    if t is None or type(t) is SymbolicZero or pa.dtype.kind not in "fc":
        return Zero(ad.tangent_aval(pa))
    ta = core.get_aval(t)
    if ta.shape != pa.shape:
        raise _tangent_mismatch(
            jvp_name, name, "primal and tangent outputs with equal shapes",
            f"tangent {i} of shape {pa.shape} (like primal {pa.str_short()})",
            f"shape {ta.shape} ({ta.str_short()})")
    if ta.dtype != pa.dtype:
        if ta.dtype.kind not in "fc" or not np.can_cast(pa.dtype, ta.dtype, "safe"):
            # A narrower tangent (float32 for a float64 primal) would lose precision
            # silently: an error, with JAX's wording.
            raise TypeError(
                "Custom JVP rule must produce primal and tangent outputs with corresponding "
                f"shapes and dtypes. Expected {_type_str(pa)} (tangent type of {_type_str(pa)}) "
                f"but got {_type_str(ta)}. (Custom JVP rule {jvp_name} for function {name}, "
                f"tangent output {i}.)")
        if isinstance(t, Tracer):
            from .primitives.structural import convert_element_type
            return convert_element_type(t, pa.dtype)
        return np.asarray(t, dtype=pa.dtype)
    if type(t) is not np.ndarray and not isinstance(t, Tracer):
        return np.asarray(t, dtype=pa.dtype)
    return t


class _CustomFunction:
    """What custom_jvp and custom_vjp share: the wrapped function, its
    nondiff_argnums, method binding and argument resolution."""

    kind = "custom"

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        nums = {int(i) for i in nondiff_argnums}
        if isinstance(nondiff_argnames, str):
            nondiff_argnames = (nondiff_argnames,)
        if nondiff_argnames:
            # Names become positions, as in JAX: the rules receive them first.
            try:
                params = [p.name for p in inspect.signature(fun).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            except (TypeError, ValueError):
                params = []
            for n in nondiff_argnames:
                if n not in params:
                    raise ValueError(
                        f"{self.kind} of {_fun_name(fun)}: nondiff_argnames contains {n!r}, "
                        f"which is not a positional parameter of the function (its parameters: "
                        f"{', '.join(params) or 'unknown'})")
                nums.add(params.index(n))
        self.nondiff_argnums = tuple(sorted(nums))
        self.symbolic_zeros = False

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _resolve(self, args, kwargs):
        """Positional arguments (kwargs resolved), checked against nondiff_argnums."""
        args = _resolve_kwargs(self.fun, args, kwargs, self.kind)
        nd = self.nondiff_argnums
        for i in nd:
            if i >= len(args):
                raise TypeError(f"{self.kind} function {_fun_name(self.fun)}: "
                                f"nondiff_argnums={nd} but only {len(args)} positional arguments "
                                "were given")
        return args


class custom_jvp(_CustomFunction):
    """A function with a user-defined JVP (forward-mode) rule.

    Use as a decorator, then ``f.defjvp(rule)`` with
    ``rule(*nondiff, primals, tangents) -> (primal_out, tangent_out)``.
    The rule is used by jvp, by reverse mode (it is linearized and
    transposed), under vmap, jit and control flow, and at any order.
    """

    kind = "custom_jvp"

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None

    def defjvp(self, jvp, symbolic_zeros=False):
        """Define the JVP rule; returns ``jvp`` so it can be used as a decorator."""
        if not callable(jvp):
            raise TypeError(f"custom_jvp.defjvp of {_fun_name(self.fun)} expects a callable, "
                            f"got {type(jvp).__name__}")
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        """Define the JVP rule by one function per argument: ``fn(t, ans, *primals)``."""
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

    def __call__(self, *args, **kwargs):
        name = _fun_name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = self._resolve(args, kwargs)
        nd = self.nondiff_argnums
        if nd:
            nondiff = [args[i] for i in nd]
            diff = tuple(a for i, a in enumerate(args) if i not in nd)
            nd_leaves, nd_tree = tree_flatten(nondiff)
            dyn_pos = [i for i, x in enumerate(nd_leaves) if isinstance(x, (Tracer, np.ndarray))]
            dyn = [nd_leaves[i] for i in dyn_pos]
        else:
            diff, dyn, dyn_pos = args, (), ()
        leaves, in_tree = _flatten_args(diff)
        _check_leaves(leaves, "custom_jvp", name)
        store = {}
        fun, rule, sz = self.fun, self.jvp, self.symbolic_zeros
        jvp_name = _fun_name(rule)
        n_dyn, n_diff = len(dyn), len(leaves)

        def rebuild(dyn_vals, diff_leaves):
            if not nd:
                return (), (tuple(diff_leaves) if in_tree is None
                            else tree_unflatten(in_tree, diff_leaves))
            nl = list(nd_leaves)
            for p, v in zip(dyn_pos, dyn_vals):
                nl[p] = v
            nondiff_vals = tree_unflatten(nd_tree, nl)
            return nondiff_vals, (tuple(diff_leaves) if in_tree is None
                                  else tree_unflatten(in_tree, list(diff_leaves)))

        def full_args(nondiff_vals, diff_vals):
            if not nd:
                return diff_vals
            out, it_n, it_d = [], iter(nondiff_vals), iter(diff_vals)
            for i in range(len(args)):
                out.append(next(it_n) if i in nd else next(it_d))
            return out

        def flat_fun(*xs):
            nondiff_vals, diff_vals = rebuild(xs[:n_dyn], xs[n_dyn:])
            out = fun(*full_args(nondiff_vals, diff_vals))
            outs, store["out_tree"] = _flatten_out(out)
            return outs

        def flat_jvp(*xs):
            nondiff_vals, primals = rebuild(xs[:n_dyn], xs[n_dyn:n_dyn + n_diff])
            tans = tuple([_user_zero(t, sz) if type(t) is Zero else t
                          for t in xs[n_dyn + n_diff:]])
            tangents = tans if in_tree is None else tree_unflatten(in_tree, list(tans))
            res = _call_rule(rule, (*nondiff_vals, tuple(primals), tuple(tangents)),
                             "Custom JVP rule", name, "jvp(*nondiff_args, primals, tangents)",
                             len(nondiff_vals))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must return a "
                                f"pair (primal_out, tangent_out), got {type(res).__name__}")
            p_out, t_out = res
            if type(p_out) is np.ndarray or isinstance(p_out, Tracer):  # one array: fast path
                want = store.get("out_tree")
                if want is not None and want != _LEAF_TREE:
                    raise _tangent_mismatch(jvp_name, name, "a primal output with the same "
                                            "structure as the function's output", want,
                                            _LEAF_TREE)
                store["out_tree"] = _LEAF_TREE
                if t_out is None or type(t_out) is SymbolicZero or core.is_array_like(t_out):
                    return [p_out, _check_tangent(p_out, t_out, 0, jvp_name, name)]
            p_leaves, p_tree = tree_flatten(p_out)
            t_leaves, t_tree = tree_flatten(t_out, is_leaf=lambda x: x is None or
                                            type(x) is SymbolicZero)
            want = store.get("out_tree")
            if want is not None and want != p_tree:
                raise _tangent_mismatch(jvp_name, name,
                                        "a primal output with the same structure as the function's "
                                        "output", want, p_tree)
            store["out_tree"] = p_tree
            if p_tree != t_tree:
                raise _tangent_mismatch(jvp_name, name, "primal and tangent outputs with equal "
                                        "container structure", p_tree, t_tree)
            fixed = [_check_tangent(p, t, i, jvp_name, name)
                     for i, (p, t) in enumerate(zip(p_leaves, t_leaves))]
            return _as_arrays(p_leaves) + fixed

        outs = custom_jvp_call_p.bind(*dyn, *leaves, fun=flat_fun, jvp=flat_jvp, num_consts=0,
                                      num_nondiff=n_dyn, symbolic_zeros=sz, name=name,
                                      rule_name=jvp_name, call_jaxpr=None)
        return _unflatten_out(store["out_tree"], outs)


class custom_vjp(_CustomFunction):
    """A function with a user-defined VJP (reverse-mode) rule.

    ``f.defvjp(fwd, bwd)``: ``fwd`` takes ``f``'s arguments and returns
    ``(out, residuals)``; ``bwd(*nondiff, residuals, cotangent)`` returns a
    tuple with one cotangent (or ``None``) per differentiable argument.
    """

    kind = "custom_vjp"

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        """Define the forward and backward rules."""
        for what, f in (("fwd", fwd), ("bwd", bwd)):
            if not callable(f):
                raise TypeError(f"custom_vjp.defvjp of {_fun_name(self.fun)}: {what} must be "
                                f"callable, got {type(f).__name__}")
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

    def __call__(self, *args, **kwargs):
        name = _fun_name(self.fun)
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = self._resolve(args, kwargs)
        nd = self.nondiff_argnums
        for i in nd:
            for leaf in tree_flatten(args[i])[0]:
                if isinstance(leaf, Tracer):
                    raise TypeError(
                        f"custom_vjp function {name} got a traced value (a {leaf.aval.str_short()} "
                        f"array under a transformation) for its argument {i}, which is in "
                        f"nondiff_argnums={nd}. For custom_vjp, nondiff_argnums is only for "
                        "non-array values such as functions, shapes or strings. Pass arrays as "
                        "regular arguments instead, and return None for them from bwd (see the "
                        "custom_vjp nondiff_argnums update guide).")
        nondiff = [args[i] for i in nd]
        diff = tuple(a for i, a in enumerate(args) if i not in nd)
        leaves, in_tree = _flatten_args(diff)
        _check_leaves(leaves, "custom_vjp", name)
        in_avals = [core.get_aval(x) for x in leaves]

        def unflat(xs):
            return tuple(xs) if in_tree is None else tree_unflatten(in_tree, list(xs))
        store = {}
        fun, fwd, bwd, sz = self.fun, self.fwd, self.bwd, self.symbolic_zeros
        fwd_name, bwd_name = _fun_name(fwd), _fun_name(bwd)
        n_args = len(diff)

        def full_args(diff_vals):
            out, it_n, it_d = [], iter(nondiff), iter(diff_vals)
            for i in range(len(args)):
                out.append(next(it_n) if i in nd else next(it_d))
            return out

        def flat_fun(*xs):
            out = fun(*full_args(unflat(xs)))
            outs, store["out_tree"] = _flatten_out(out)
            return outs

        def flat_fwd(perturbed, *xs):
            if sz:
                xs = [CustomVJPPrimal(x, p) for x, p in zip(xs, perturbed)]
            res = _call_rule(fwd, tuple(full_args(unflat(xs))), "Custom VJP fwd rule", name,
                             "fwd(*args) (the function's own arguments)", 0)
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(f"Custom VJP fwd rule {fwd_name} for function {name} must return "
                                f"a pair (output, residuals), got {type(res).__name__}")
            out, residuals = res
            outs, out_tree = _flatten_out(out)
            want = store.get("out_tree")
            if want is not None and want != out_tree:
                raise TypeError(f"Custom VJP fwd rule {fwd_name} for function {name} must produce "
                                f"a primal output with the structure of the function's output; "
                                f"expected {want}, got {out_tree}.")
            store["out_tree"] = out_tree
            res_leaves, res_tree = _flatten_out(residuals)
            for i, r in enumerate(res_leaves):
                if not core.is_array_like(r):
                    raise TypeError(f"Custom VJP fwd rule {fwd_name} for function {name}: residual "
                                    f"leaf {i} of type {type(r).__name__} is not an array")
            return outs, res_leaves, res_tree

        def flat_bwd(res_tree, *res_and_cts):
            nres = res_tree.num_leaves
            res = _unflatten_out(res_tree, list(res_and_cts[:nres]))
            cts = _unflatten_out(store["out_tree"], [_user_zero(c, sz) if type(c) is Zero else c
                                                     for c in res_and_cts[nres:]])
            got = _call_rule(bwd, (*nondiff, res, cts), "Custom VJP bwd rule", name,
                             "bwd(*nondiff_args, residuals, cotangents)", len(nondiff))
            return _flatten_bwd_output(got, in_tree, in_avals, n_args, bwd_name, name)

        outs = custom_vjp_call_p.bind(*leaves, fun=flat_fun, fwd=flat_fwd, bwd=flat_bwd,
                                      num_consts=0, symbolic_zeros=sz, name=name,
                                      rule_name=fwd_name, call_jaxpr=None)
        return _unflatten_out(store["out_tree"], outs)


def _call_rule(rule, args, what, name, expected, n_nondiff):
    """``rule(*args)``; a call that does not fit the rule's signature, or a rule
    written with the nondiff arguments last, gets an error saying so."""
    try:
        return rule(*args)
    except TypeError as e:
        err = _rule_call_error(rule, args, what, name, expected, n_nondiff)
        if err is None:
            raise
        raise err from e


def _rule_call_error(rule, args, what, name, expected, n_nondiff):
    try:
        sig = inspect.signature(rule)
    except (TypeError, ValueError):
        return None
    rule_name = _fun_name(rule)
    received = ", ".join(_describe_arg(a) for a in args)
    try:
        sig.bind(*args)
    except TypeError as bind_err:
        return TypeError(
            f"{what} {rule_name}{sig} for function {name} does not accept the arguments it is "
            f"called with: it is called as {expected}, here with {len(args)} positional "
            f"arguments ({received}); {bind_err}.")
    params = list(sig.parameters)
    if n_nondiff and params and params[0].startswith("primal"):
        return TypeError(
            f"{what} {rule_name}{sig} for function {name} takes the primals first, but with "
            f"nondiff_argnums the nondiff arguments come first: it is called as {expected}, here "
            f"with ({received}). Write it as {rule_name}(*nondiff_args, primals, tangents), as "
            "in JAX.")
    return None


def _describe_arg(x):
    if core.is_array_like(x):
        return core.get_aval(x).str_short()
    if isinstance(x, tuple):
        return "(" + ", ".join(_describe_arg(a) for a in x) + ("," if len(x) == 1 else "") + ")"
    return getattr(x, "__name__", type(x).__name__)


def _flatten_bwd_output(got, in_tree, in_avals, n_args, bwd_name, name):
    """The flat cotangents of a bwd rule's output (``Zero`` for zero ones), checked."""
    if not isinstance(got, (tuple, list)):
        raise TypeError(f"Custom VJP bwd rule {bwd_name} for function {name} must return a tuple "
                        f"with one cotangent per differentiable argument ({n_args}), got "
                        f"{type(got).__name__}")
    if len(got) != n_args:
        raise TypeError(f"Custom VJP bwd rule {bwd_name} for function {name} must return a tuple "
                        f"of length equal to the number of differentiable arguments ({n_args}), "
                        f"got a tuple of length {len(got)}")
    if in_tree is None:  # every argument is one array: the common, fast case
        for c, a in zip(got, in_avals):
            if not ((type(c) is np.ndarray or isinstance(c, Tracer)) and c.shape == a.shape
                    and c.dtype == a.dtype):
                break
        else:
            return list(got)
    arg_trees = [_LEAF_TREE] * n_args if in_tree is None else in_tree.children()
    out = []
    it_avals = iter(in_avals)
    for k, (g, t) in enumerate(zip(got, arg_trees)):
        avals = [next(it_avals) for _ in range(t.num_leaves)]
        if g is None:
            out.extend(_zero_ct(a) for a in avals)
            continue
        try:
            g_leaves = t.flatten_up_to(g)
        except Exception:  # noqa: BLE001 - reported with both structures
            raise TypeError(f"Custom VJP bwd rule {bwd_name} for function {name} returned a "
                            f"cotangent for argument {k} with structure {tree_structure(g)}, but "
                            f"the argument has structure {t}") from None
        for j, (c, a) in enumerate(zip(g_leaves, avals)):
            if c is None or type(c) is SymbolicZero:
                out.append(_zero_ct(a))
                continue
            if not core.is_array_like(c):
                raise TypeError(
                    f"Custom VJP bwd rule {bwd_name} for function {name} returned a cotangent for "
                    f"argument {k} with structure {tree_structure(g)}, but the argument has "
                    f"structure {t}: leaf {j} is a {type(c).__name__}, not an array")
            ca = core.get_aval(c)
            want = ad.tangent_aval(a)
            if want.dtype == dtypes.float0:
                out.append(_zero_ct(a))
                continue
            if ca.shape != a.shape:
                raise TypeError(f"Custom VJP bwd rule {bwd_name} for function {name} returned a "
                                f"cotangent of shape {ca.shape} for argument {k} (leaf {j}), but "
                                f"the argument has shape {a.shape}")
            if not isinstance(c, Tracer):
                c = np.asarray(c, dtype=want.dtype)
            elif ca.dtype != want.dtype:
                from .primitives.structural import convert_element_type
                c = convert_element_type(c, want.dtype)
            out.append(c)
    return out


def _zero_ct(aval):
    return Zero(ad.tangent_aval(aval))


def closure_convert(fun, *example_args):
    """Hoist the traced values ``fun`` closes over into explicit arguments.

    Returns ``(converted_fun, hoisted_consts)`` with
    ``converted_fun(*args, *hoisted_consts) == fun(*args)``.
    """
    leaves, in_tree = tree_flatten(example_args)
    avals = [core.get_aval(x) for x in leaves]
    store = {}

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        outs, store["out_tree"] = tree_flatten(out)
        return outs

    jaxpr, consts = pe.trace_to_jaxpr(flat, avals, name=_fun_name(fun), label="closure_convert")
    hoist = [isinstance(c, Tracer) or core.get_aval(c).dtype.kind in "fc" for c in consts]
    hoisted = [c for c, h in zip(consts, hoist) if h]
    kept = [c for c, h in zip(consts, hoist) if not h]
    n_args = len(leaves)
    out_tree = store["out_tree"]

    def converted(*args):
        xs, hs = args[:len(args) - len(hoisted)], args[len(args) - len(hoisted):]
        x_leaves, tree = tree_flatten(tuple(xs))
        if len(x_leaves) != n_args:
            raise TypeError(f"closure_convert: converted function of {_fun_name(fun)} expected "
                            f"{n_args} array leaves, got {len(x_leaves)}")
        it_h, it_k = iter(hs), iter(kept)
        cvals = [next(it_h) if h else next(it_k) for h in hoist]
        return tree_unflatten(out_tree, core.eval_jaxpr(jaxpr, cvals, *x_leaves))

    functools.update_wrapper(converted, fun)
    # What identifies the converted function (for callers that cache on it).
    converted.program = (jaxpr, tuple(kept), tuple(hoist), in_tree, out_tree)
    return converted, hoisted
