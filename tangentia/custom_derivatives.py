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

import functools
import inspect
import operator

import numpy as np

from . import core, dtypes
from ._array import ArrayImpl, to_user
from .core import Tracer, Zero
from .interpreters import ad
from .interpreters import partial_eval as pe
from .interpreters.ad import custom_lin_p  # noqa: F401 - the backends find it here
from ._messages import fun_name as _fun_name, jax_type as _jax_type
from .tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten

__all__ = ["custom_jvp", "custom_vjp", "SymbolicZero", "CustomVJPPrimal", "closure_convert",
           "zero_from_primal", "custom_vjp_primal_tree_values", "linear_call", "custom_transpose"]


# ---------------------------------------------------------------------------
# Public helper types


class SymbolicZero:
    """A tangent or cotangent that is known to be zero (``symbolic_zeros=True``).

    Args:
      aval: the abstract value (shape and dtype) of the zero.
    """

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
    """The zero tangent of the primal value ``x``.

    Args:
      x: a primal value (array or scalar).
      symbolic_zeros: return a ``SymbolicZero`` instead of an array of zeros.

    Returns:
      Zeros of the tangent dtype of ``x`` (``float0`` for integers), of its shape.
    """
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


def _custom_jvp_call_transpose(cts, *args, **params):
    """A custom_jvp call in a linear program (``linear_transpose`` of a function
    calling one, ``linear_call``): the transpose of its JVP rule's linearization at
    zero linear inputs, the known inputs fixed.  A rule whose tangent map has a
    custom transpose (``linear_call``'s) keeps it."""
    lin = [ad.is_undefined(a) for a in args]
    point = [ad.zeros_like_aval(a.aval) if is_lin else a for a, is_lin in zip(args, lin)]
    _, program, consts, _, _ = ad.linearize_flat(
        lambda *xs: custom_jvp_call_p.bind(*xs, **params), point, differentiable=lin)
    cts_in = ad.backward_pass(program, consts, list(cts))
    return [c if is_lin else None for c, is_lin in zip(cts_in, lin)]


custom_jvp_call_p.transpose = _custom_jvp_call_transpose


def _as_arrays(outs):
    return [o if type(o) is np.ndarray or isinstance(o, Tracer) else np.asarray(o) for o in outs]


def _user_zero(z, symbolic_zeros):
    """What a user rule sees for the internal zero ``z``."""
    return SymbolicZero(z.aval) if symbolic_zeros else np.zeros(z.aval.shape, z.aval.dtype)


# ---------------------------------------------------------------------------
# The user-facing decorators


def _resolve_kwargs(fun, args, kwargs, kind):
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        if not kwargs:
            return tuple(args)
        raise TypeError(f"{kind} function {_fun_name(fun)} was called with keyword arguments "
                        f"{sorted(kwargs)}, but its signature cannot be inspected to resolve "
                        "them to positions; pass them positionally") from None
    try:
        ba = sig.bind(*args, **kwargs)
        ba.apply_defaults()
        passed = [k for k in ba.kwargs if k in kwargs]  # (defaults of keyword-only ones are fine)
        if passed:
            raise TypeError("The following keyword arguments could not be resolved to positions: "
                            + ", ".join(passed)
                            + " (keyword-only and **kwargs parameters cannot be passed to custom "
                            "rules)")
    except TypeError as e:
        raise TypeError(f"The input arguments to the {kind}-decorated function {_fun_name(fun)} "
                        "could not be resolved to positional-only arguments. Binding failed with "
                        f"the error:\n{e}") from None
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


def require_arrays(leaves, what, hint=""):
    """Raise a TypeError for the first of ``leaves`` that is not an array:
    "``what`` leaf i of type T is not an array``hint``"."""
    for i, x in enumerate(leaves):
        if not core.is_array_like(x):
            raise TypeError(f"{what} leaf {i} of type {type(x).__name__} is not an array{hint}")


def forward_attr(self, name):
    """``__getattr__`` of the custom-rule decorators: attributes the object lacks
    are the wrapped function's, as in JAX (``custom_vjp(custom_vmap(f))`` has
    ``def_vmap``); only reached for missing attributes, never on a call path."""
    fun = self.__dict__.get("fun")
    if fun is None or name.startswith("__"):
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
    return getattr(fun, name)


def check_rule(rule, method, fun):
    """The TypeError of ``method`` (``"custom_jvp.defjvp"``, ...) given a non-callable rule."""
    if not callable(rule):
        raise TypeError(f"{method} of {_fun_name(fun)} expects a callable, got "
                        f"{type(rule).__name__}")


_LEAF_TREE = tree_structure(0)


_ndarray = np.ndarray
_new = object.__new__
_ARRAYS = (np.ndarray, Tracer)
_SCALARS = (np.generic, float, int, complex)
_EVAL = core.EVAL_TRACE
_JaxprTracer = pe.JaxprTracer
_current_trace = core.current_trace
_set_trace = core._trace_ctx.set
_reset_trace = core._trace_ctx.reset


def _flatten_out(out):
    if type(out) is _ndarray or isinstance(out, _ARRAYS):
        return [out], _LEAF_TREE
    return tree_flatten(out)


def _unflatten_out(tree, outs):
    return outs[0] if tree is _LEAF_TREE else tree_unflatten(tree, list(outs))


def _tangent_type_error(pa, ta, jvp_name, name, i):
    return TypeError(
        "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
        f"dtypes. Expected {_jax_type(ad.tangent_aval(pa))} (tangent type of {_jax_type(pa)}) but "
        f"got {_jax_type(ta)}. (Custom JVP rule {jvp_name} for function {name}, tangent output "
        f"{i}.)")


def _check_tangent(p, t, i, jvp_name, name):
    """Check/normalize tangent output ``i`` of a JVP rule against its primal ``p``."""
    if isinstance(t, Tracer):  # the common case: a traced tangent of the primal's type
        ta = t.ir_var.aval if type(t) is _JaxprTracer else t.aval  # (no property call)
        # (An array's own shape and dtype are those of its aval.)
        pa = p if isinstance(p, _ndarray) else core.get_aval(p)
        if ta.shape == pa.shape and ta.dtype == pa.dtype and pa.dtype.kind in "fc":
            return t
    pa = core.get_aval(p)
    if t is None or pa.dtype.kind not in "fc":
        return Zero(ad.tangent_aval(pa))
    if type(t) is SymbolicZero:
        if t.aval.shape != pa.shape:
            raise _tangent_type_error(pa, t.aval, jvp_name, name, i)
        return Zero(ad.tangent_aval(pa))
    ta = core.get_aval(t)
    if ta.shape != pa.shape:
        raise _tangent_type_error(pa, ta, jvp_name, name, i)
    if ta.dtype != pa.dtype:
        if ta.dtype.kind not in "fc" or not np.can_cast(pa.dtype, ta.dtype, "safe"):
            # A narrower tangent (float32 for a float64 primal) would lose precision
            # silently: an error, with JAX's wording.
            raise _tangent_type_error(pa, ta, jvp_name, name, i)
        if isinstance(t, Tracer):
            from .primitives.structural import convert_element_type
            return convert_element_type(t, pa.dtype)
        return np.asarray(t, dtype=pa.dtype)
    if type(t) is not np.ndarray and not isinstance(t, Tracer):
        return np.asarray(t, dtype=pa.dtype)
    return t


class _Args:
    """How one call's positional arguments reach the flat rules.

    The array leaves of nondiff arguments (``dyn``: traced values, arrays)
    become leading inputs of the call, so that every interpreter sees them; the
    differentiable arguments are flattened (``in_tree`` is None when each is
    one array).  ``full(dyn_vals, diff_leaves)`` rebuilds the positional
    arguments, ``nondiff(dyn_vals)`` the nondiff ones.  It holds no tracer
    (``avals`` are the types of the differentiable leaves): the rules that
    keep it live in the programs that the tracers' interpreters record, and a
    tracer here would make a reference cycle.
    """

    __slots__ = ("n", "nd", "nd_leaves", "nd_tree", "dyn_pos", "in_tree", "avals")

    @staticmethod
    def split(args, nd, kind, name):
        """``(how, dyn, leaves)`` for the positional ``args``."""
        self = _Args()
        self.nd, self.n = nd, len(args)
        dyn = ()
        if nd:
            nd_set = set(nd)
            nd_leaves, self.nd_tree = tree_flatten([args[i] for i in nd])
            self.dyn_pos = [i for i, x in enumerate(nd_leaves) if isinstance(x, _ARRAYS)]
            dyn = [nd_leaves[i] for i in self.dyn_pos]
            for i in self.dyn_pos:
                nd_leaves[i] = None  # filled in by ``nondiff``
            self.nd_leaves = nd_leaves
            diff = [a for i, a in enumerate(args) if i not in nd_set]
        else:
            diff = args
        for a in diff:
            if not (type(a) is _ndarray or isinstance(a, _ARRAYS)):
                leaves, self.in_tree = tree_flatten(tuple(diff))
                _check_leaves(leaves, kind, name)
                break
        else:
            leaves, self.in_tree = list(diff), None
        self.avals = [core.get_aval(x) for x in leaves]
        return self, dyn, leaves

    def diff(self, diff_leaves):
        return (tuple(diff_leaves) if self.in_tree is None
                else tree_unflatten(self.in_tree, list(diff_leaves)))

    def nondiff(self, dyn_vals):
        if not self.nd:
            return []
        nl = list(self.nd_leaves)
        for p, v in zip(self.dyn_pos, dyn_vals):
            nl[p] = v
        return tree_unflatten(self.nd_tree, nl)

    def full(self, dyn_vals, diff_leaves):
        diff_vals = self.diff(diff_leaves)
        if not self.nd:
            return diff_vals
        out, it_n, it_d = [], iter(self.nondiff(dyn_vals)), iter(diff_vals)
        nd = self.nd
        for i in range(self.n):
            out.append(next(it_n) if i in nd else next(it_d))
        return out


class _CustomFunction:
    """What custom_jvp and custom_vjp share: the wrapped function, its
    nondiff_argnums, method binding and argument resolution."""

    kind = "custom"

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.name = _fun_name(fun)
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
        # Calls with exactly the positional parameters need no signature
        # binding (the common, fast case); others are bound as in JAX, so
        # defaults are applied and a missing argument gets JAX's error.
        try:
            ps = inspect.signature(fun).parameters.values()
        except (TypeError, ValueError):
            self._n_pos = None
        else:
            self._n_pos = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in ps)
            if any(p.kind is p.VAR_POSITIONAL for p in ps):
                self._n_pos = -1 - self._n_pos  # at least -1 - n arguments
            elif any(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in ps):
                self._n_pos = -10 ** 9  # always bound
        # The number of positional arguments (None: any) of the common calls,
        # which need no resolution (``__call__``); never matched with nondiff_argnums.
        self._n_plain = -2 if self.nondiff_argnums else self._n_pos

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    __getattr__ = forward_attr

    def __call__(self, *args, **kwargs):
        """The subclass's call primitive bound through the current trace's
        method for it, as its ``bind`` would, with ``params`` as they are, and
        this call's flat rules: methods of a ``_Call`` made for it (the
        subclass's ``_BINDING``: the ``_Call`` class, the names of the rule
        parameters, a getter of those methods, the trace method's name and the
        primitive; one class attribute, read once).

        A call on concrete arguments (arrays and scalars) under eager
        evaluation, or under an interpreter that evaluates untraced values as
        eager evaluation does (``Trace.eval_known``), is not bound: it gives
        the function's value, as eager evaluation of the bound call does
        (rules never run)."""
        if self._undefined is not None:
            raise AttributeError(self._undefined)
        n = self._n_plain
        split = True  # the arguments go through ``_args``
        if not kwargs and (n is None or len(args) == n):
            # The common calls: positional arrays (and scalars), no nondiff_argnums.
            traced = scalar = False
            for a in args:
                if isinstance(a, Tracer):
                    traced = True
                elif not isinstance(a, _ndarray):
                    if not isinstance(a, _SCALARS):
                        break
                    scalar = True
            else:
                if not traced:
                    trace = _current_trace()
                    if trace is _EVAL or trace.eval_known:  # evaluated, not bound
                        token = None if trace is _EVAL else _set_trace(_EVAL)
                        try:
                            out = self.fun(*args)
                        finally:
                            if token is not None:
                                _reset_trace(token)
                        if type(out) is ArrayImpl:
                            return out
                        if type(out) is _ndarray:
                            return out.view(ArrayImpl)
                        leaves, tree = tree_flatten(out)
                        return to_user(tree_unflatten(tree, _as_arrays(leaves)))
                split = scalar  # each argument one array: the flat rules take them as they are
        if split:
            ca, dyn, leaves = self._args(args, kwargs)
        else:
            ca, dyn, leaves = None, (), args
        call_class, rule_params, rule_methods, process, prim = self._BINDING
        call = _new(call_class)  # call_class(self, ca, len(dyn)) without an __init__ frame
        call.owner, call.rules, call.ca, call.n_dyn, call.out_tree = (
            self, self._rules, ca, len(dyn), None)
        params = self._params.copy()
        params.update(zip(rule_params, rule_methods(call)))
        if dyn or type(leaves) is not tuple:
            if "num_nondiff" in params:
                params["num_nondiff"] = len(dyn)
            leaves = (*dyn, *leaves)
        outs = getattr(_current_trace(), process)(prim, leaves, params)
        if call.out_tree is _LEAF_TREE and isinstance(outs[0], Tracer):
            return outs[0]  # one traced output: the common case
        return call.value(outs)

    def _args(self, args, kwargs):
        """``(how, dyn, leaves)``: the call's arguments split for the flat
        rules (kwargs resolved, nondiff_argnums checked; see ``_Args``), for
        the calls that ``__call__`` does not take as they are."""
        n = self._n_pos
        if kwargs or not (n is None or len(args) == n or (n < 0 and len(args) >= -1 - n)):
            args = _resolve_kwargs(self.fun, args, kwargs, self.kind)
        nd = self.nondiff_argnums
        if nd and nd[-1] >= len(args):
            raise TypeError(f"{self.kind} function {self.name}: nondiff_argnums={nd} but only "
                            f"{len(args)} positional arguments were given")
        return _Args.split(args, nd, self.kind, self.name)


def rule_key(fn, role):
    """A stable, hashable identity for a callable carried in a custom call's
    parameters (``role`` is the parameter's name), or None.  The flat rules a
    call makes are new at every call, their behaviour is not: a call's own
    are methods of its ``_Call`` (which holds its custom function's definition
    and the call's structure), staged ones record the rule they wrap
    (``rule_of``); the key is computed from those here, when a cache of
    compiled programs (odeint's) asks."""
    call = getattr(fn, "__self__", None)
    if not isinstance(call, _Call):
        of = getattr(fn, "rule_of", None)
        if of is None:
            return None
        if of[0] == "program":      # runs the call's own program (carried as call_jaxpr)
            return ("program",)
        # a staged rule: the rule it wraps, at these input types
        inner = rule_key(of[1], role)
        return None if inner is None else ("staged", inner, of[2])
    owner, ca = call.owner, call.ca
    key = (owner, call.rules, role)
    if ca is not None:
        key += (ca.n, ca.nd, getattr(ca, "nd_tree", None), tuple(getattr(ca, "nd_leaves", ())),
                ca.in_tree, tuple(ca.avals))
    try:
        hash(key)
    except TypeError:
        return None
    return key


class _Call:
    """One call of a custom function as its flat rules see them (its bound
    methods: ``fun``, and the subclasses' ``jvp`` or ``fwd``/``bwd``): the
    function's definition when called (``rules``), how the arguments were
    split (``ca``, see ``_Args``; None when each argument is one array), the
    number of leading nondiff arrays (``n_dyn``), and the output structure
    (``out_tree``, None until a rule computing the primal output records it).
    It holds no tracer (see ``_Args``).  ``_CustomFunction.__call__`` makes one
    per call, setting the slots directly (no ``__init__`` frame)."""

    __slots__ = ("owner", "rules", "ca", "n_dyn", "out_tree")

    def fun(self, *xs):
        """The custom function with flat inputs (see ``_Args``) and outputs."""
        ca = self.ca
        fun = self.rules[0]
        out = fun(*xs) if ca is None else fun(*ca.full(xs[:self.n_dyn], xs[self.n_dyn:]))
        if type(out) is _ndarray or isinstance(out, _ARRAYS):
            self.out_tree = _LEAF_TREE
            return [out]
        outs, self.out_tree = tree_flatten(out)
        return outs

    def value(self, outs):
        """The call's value, as handed to the user, from its flat outputs."""
        tree = self.out_tree
        return to_user(outs[0] if tree is _LEAF_TREE else tree_unflatten(tree, outs))


class _JVPCall(_Call):
    """A call of a ``custom_jvp`` function (``rules``: its function, JVP
    rule, symbolic_zeros and the rule's name)."""

    __slots__ = ()

    def jvp(self, *xs):
        """The JVP rule with flat inputs (primals, then the differentiable
        inputs' tangents) and outputs (primals, then tangents)."""
        _, rule, sz, jvp_name = self.rules
        name = self.owner.name
        ca, n_dyn = self.ca, self.n_dyn
        n_diff = (len(xs) - n_dyn) // 2
        tans = xs[n_dyn + n_diff:]
        for t in tans:
            if type(t) is Zero:
                tans = tuple([_user_zero(t, sz) if type(t) is Zero else t for t in tans])
                break
        if ca is None:
            rule_args = (xs[:n_diff], tans)
        else:
            rule_args = (*ca.nondiff(xs[:n_dyn]), ca.diff(xs[n_dyn:n_dyn + n_diff]),
                         ca.diff(tans))
        try:
            res = rule(*rule_args)
        except TypeError as e:
            _reraise_rule_error(e, rule, rule_args, "Custom JVP rule", name,
                                "jvp(*nondiff_args, primals, tangents)", len(rule_args) - 2)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce a "
                            "pair (list or tuple of length two) representing primal and "
                            f"tangent outputs, but got {res!r}.")
        p_out, t_out = res
        if type(p_out) is _ndarray or isinstance(p_out, _ARRAYS):  # one array: fast path
            if (isinstance(t_out, _ARRAYS) or t_out is None or type(t_out) is SymbolicZero
                    or core.is_array_like(t_out)):
                tree = self.out_tree
                if tree is None:
                    self.out_tree = _LEAF_TREE
                elif tree is not _LEAF_TREE:
                    _check_out_tree(self, _LEAF_TREE, jvp_name, name, [p_out], xs,
                                    n_dyn + n_diff)
                if type(t_out) is _JaxprTracer and isinstance(p_out, _ndarray):
                    ta = t_out.ir_var.aval  # a staged tangent of the primal's type: as it is
                    if ta.shape == p_out.shape and ta.dtype == p_out.dtype and ta.dtype.kind in "fc":
                        return [p_out, t_out]
                try:
                    return [p_out, _check_tangent(p_out, t_out, 0, jvp_name, name)]
                except TypeError:  # a primal output of the wrong type is reported first
                    _check_primal_types(self, [p_out], xs[:n_dyn + n_diff], jvp_name, name)
                    raise
        p_leaves, p_tree = tree_flatten(p_out)
        t_leaves, t_tree = tree_flatten(t_out, is_leaf=lambda x: x is None or
                                        type(x) is SymbolicZero)
        if p_tree != t_tree:
            raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce "
                            "primal and tangent outputs with equal container (pytree) "
                            f"structures, but got {p_tree} and {t_tree} respectively.")
        _check_out_tree(self, p_tree, jvp_name, name, p_leaves, xs, n_dyn + n_diff)
        try:
            fixed = [_check_tangent(p, t, i, jvp_name, name)
                     for i, (p, t) in enumerate(zip(p_leaves, t_leaves))]
        except TypeError:  # a primal output of the wrong type is reported first
            _check_primal_types(self, p_leaves, xs[:n_dyn + n_diff], jvp_name, name)
            raise
        return _as_arrays(p_leaves) + fixed


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
            in_types = fwd_args = xs
            for x in xs:
                if not isinstance(x, _ndarray):
                    in_types = [core.get_aval(y) for y in xs]
                    break
        else:
            in_types = ca.avals
        if sz:
            fwd_args = [CustomVJPPrimal(y, p) for y, p in zip(xs[n_dyn:], perturbed[n_dyn:])]
        if ca is not None:
            fwd_args = tuple(ca.full(xs[:n_dyn], fwd_args if sz else xs[n_dyn:]))
        try:
            res = fwd(*fwd_args)
        except TypeError as e:
            _reraise_rule_error(e, fwd, fwd_args, "Custom VJP fwd rule", self.owner.name,
                                "fwd(*args) (the function's own arguments)", 0)
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
        _, _, bwd, sz, _, bwd_name = self.rules
        ca, n_dyn = self.ca, self.n_dyn
        out_tree, res_tree, in_types = trees
        if (ca is None and res_tree is _LEAF_TREE and out_tree is _LEAF_TREE
                and len(res_and_cts) == 2):
            c = res_and_cts[1]  # one residual array, one output: the common case
            bwd_args = (res_and_cts[0], _user_zero(c, sz) if type(c) is Zero else c)
        else:
            nres = n_dyn + res_tree.num_leaves
            cts = [_user_zero(c, sz) if type(c) is Zero else c for c in res_and_cts[nres:]]
            bwd_args = (*(() if ca is None else ca.nondiff(res_and_cts[:n_dyn])),
                        _unflatten_out(res_tree, res_and_cts[n_dyn:nres]),
                        _unflatten_out(out_tree, cts))
        try:
            got = bwd(*bwd_args)
        except TypeError as e:
            _reraise_rule_error(e, bwd, bwd_args, "Custom VJP bwd rule", self.owner.name,
                                "bwd(*nondiff_args, residuals, cotangents)", len(bwd_args) - 2)
        if ca is None and type(got) is tuple and len(got) == len(in_types):
            for c, x in zip(got, in_types):  # the common case: arrays of the right types
                if not ((type(c) is _ndarray or isinstance(c, _ARRAYS)) and c.shape == x.shape
                        and (c.dtype is x.dtype or c.dtype == x.dtype)):
                    break
            else:
                return got
        out = _flatten_bwd_output(got, ca, in_types, bwd_name, self.owner.name, sz)
        if n_dyn:
            return [Zero.from_primal(d) for d in res_and_cts[:n_dyn]] + out
        return out


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
    _BINDING = (_JVPCall, ("fun", "jvp"), operator.attrgetter("fun", "jvp"),
                "process_custom_jvp_call", custom_jvp_call_p)

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self._undefined = f"No JVP defined for custom_jvp function {self.name} using defjvp."

    def defjvp(self, jvp, symbolic_zeros=False):
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
        return jvp

    def defjvps(self, *jvps):
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


def _check_out_tree(call, tree, jvp_name, name, leaves, xs, n_primals):
    """The primal output of a JVP rule (``leaves`` with structure ``tree``) has the
    function's output structure; the message shows both with their leaves' types,
    as JAX's (the function's are traced from ``xs[:n_primals]``, the call's inputs)."""
    want = call.out_tree
    if want is not None and want != tree:
        got_s = _typed_tree(tree, [core.get_aval(x) for x in leaves])
        program = _fun_program(call, xs[:n_primals], name)
        want_s = _typed_tree(want, [v.aval for v in program.outvars])
        raise TypeError(
            f"Custom JVP rule {jvp_name} for function {name} must produce a pair (list or tuple "
            "of length two) where the first element represents the primal output (equal in value "
            f"to the output of the custom_jvp-decorated function {name}, and in particular of "
            "the same container/pytree structure), but instead the JVP rule output's first "
            f"element had container/pytree structure:\n    {got_s}\nwhile the "
            f"custom_jvp-decorated function {name} had output container/pytree structure:\n"
            f"    {want_s}. (expected {want}, got {tree})")
    call.out_tree = tree


def _fun_program(call, primals, name):
    """The call's function traced on the types of its flat inputs ``primals``
    (for error messages only)."""
    out_tree = call.out_tree
    try:
        return pe.trace_to_jaxpr(call.fun, [core.get_aval(x) for x in primals], name=name,
                                 label="custom_jvp")[0]
    finally:
        call.out_tree = out_tree


def _check_primal_types(call, leaves, primals, jvp_name, name):
    """Raise JAX's error if the JVP rule's primal outputs ``leaves`` do not have
    the types of the function's outputs."""
    pe.check_primal_outs(f"Custom JVP rule {jvp_name}", name, _fun_program(call, primals, name),
                         leaves)


class _TypeName(str):
    """A leaf printed as its type, ``float32[3]``, in a structure's repr."""

    __slots__ = ()

    def __repr__(self):
        return str(self)


def _typed_tree(tree, avals):
    return tree_unflatten(tree, [_TypeName(_jax_type(a)) for a in avals])


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
    _BINDING = (_VJPCall, ("fun", "fwd", "bwd"), operator.attrgetter("fun", "fwd", "bwd"),
                "process_custom_vjp_call", custom_vjp_call_p)

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None
        self._undefined = f"No VJP defined for custom_vjp function {self.name} using defvjp."

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
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


def _fwd_pair_message(fwd_name, name):
    return (f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair (list or "
            "tuple of length two) where the first element represents the primal output (equal to "
            f"the output of the custom_vjp-decorated function {name}) and the second element "
            "represents residuals (i.e. values stored from the forward pass for use on the "
            "backward pass), ")


def custom_vjp_primal_tree_values(tree):
    """Strip the perturbation information from the arguments of a ``fwd`` rule
    defined with ``symbolic_zeros=True``: each ``CustomVJPPrimal`` becomes its value.

    Args:
      tree: a pytree whose leaves may be ``CustomVJPPrimal``.

    Returns:
      The pytree with each ``CustomVJPPrimal`` replaced by its ``value``.
    """
    return tree_map(lambda x: x.value if type(x) is CustomVJPPrimal else x, tree)


def _reraise_rule_error(e, rule, args, what, name, expected, n_nondiff):
    """Re-raise the TypeError ``e`` of ``rule(*args)``: a call that does not fit
    the rule's signature, or a rule written with the nondiff arguments last,
    gets an error saying so; any other error passes through."""
    err = _rule_call_error(rule, args, what, name, expected, n_nondiff)
    if err is None:
        raise e
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


def _bwd_structure_error(bwd_name, name, got, ca, avals, detail):
    in_tree = (ca.in_tree if ca is not None and ca.in_tree is not None
               else tree_structure(tuple(avals)))
    return TypeError(
        "Custom VJP bwd rule must produce an output with the same "
        "container (pytree) structure as the args tuple of the primal function, and in "
        "particular must produce a tuple of length equal to the number of arguments to the "
        f"primal function, but got bwd output structure {_structure_of(got)} for primal input "
        f"structure {in_tree}. (bwd rule {bwd_name} of function {name}: {detail})")


def _structure_of(x):
    return tree_structure(x, is_leaf=lambda v: v is None or type(v) is SymbolicZero)


def _flatten_bwd_output(got, ca, in_types, bwd_name, name, sz):
    """The flat cotangents of a bwd rule's output (``Zero`` for zero ones),
    checked against the differentiable inputs' types (arrays or avals)."""
    avals_in = [x if type(x) is core.ShapedArray else core.get_aval(x) for x in in_types]
    in_tree = None if ca is None else ca.in_tree
    n_args = len(avals_in) if ca is None else ca.n - len(ca.nd)
    if not isinstance(got, (tuple, list)):
        raise _bwd_structure_error(bwd_name, name, got, ca, avals_in, f"a tuple with one "
                                   f"cotangent per differentiable argument ({n_args}) is "
                                   f"expected, got a {type(got).__name__}")
    if len(got) != n_args:
        raise _bwd_structure_error(bwd_name, name, got, ca, avals_in, f"a tuple of length equal "
                                   f"to the number of differentiable arguments ({n_args}) is "
                                   f"expected, got a tuple of length {len(got)}")
    arg_trees = [_LEAF_TREE] * n_args if in_tree is None else in_tree.children()
    out = []
    it_avals = iter(avals_in)
    for k, (g, t) in enumerate(zip(got, arg_trees)):
        avals = [next(it_avals) for _ in range(t.num_leaves)]
        if g is None:
            out.extend(_zero_ct(a) for a in avals)
            continue
        try:
            g_leaves = t.flatten_up_to(g)
        except Exception:  # noqa: BLE001 - reported with both structures
            if t.num_leaves == 1 and core.is_array_like(g):
                g_leaves = [g]  # one array for a one-leaf container: JAX accepts it too
            else:
                raise _bwd_structure_error(
                    bwd_name, name, got, ca, avals_in, f"the cotangent for argument {k} has "
                    f"structure {_structure_of(g)}, but the argument has structure {t}") from None
        for j, (c, a) in enumerate(zip(g_leaves, avals)):
            where = f"output[{k}]" + (f" (leaf {j})" if t is not _LEAF_TREE else "")
            want = ad.tangent_aval(a)
            if c is None:
                out.append(_zero_ct(a))
                continue
            if type(c) is SymbolicZero:
                if c.aval.shape != a.shape or (want.dtype != dtypes.float0
                                               and c.aval.dtype != want.dtype):
                    raise ValueError(
                        "Custom VJP bwd rule produced a "
                        "SymbolicZero with a shape/dtype that does not match the corresponding "
                        f"input tangent shape/dtype: at {where} the SymbolicZero had shape/dtype "
                        f"{c.aval.str_short()} while the corresponding input had shape/dtype "
                        f"{a.str_short()}. Consider just returning a None here instead of a "
                        f"SymbolicZero object. (bwd rule {bwd_name} of function {name})")
                out.append(_zero_ct(a))
                continue
            if not core.is_array_like(c):
                raise _bwd_structure_error(
                    bwd_name, name, got, ca, avals_in, f"the cotangent for argument {k} has structure "
                    f"{_structure_of(g)}, but the argument has structure {t}: leaf {j} is a "
                    f"{type(c).__name__}, not an array")
            ca_ = core.get_aval(c)
            if want.dtype == dtypes.float0:
                out.append(_zero_ct(a))
                continue
            if ca_.shape != a.shape:
                hint = (" Consider just returning a None here instead of a zero array." if sz
                        and isinstance(c, np.ndarray) and not c.any() else "")
                raise ValueError(
                    "Custom VJP bwd rule must produce an output "
                    "with the same type as the args tuple of the primal function, but at "
                    f"{where} the bwd rule produced an output of type {_jax_type(ca_)} "
                    f"corresponding to an input of type {_jax_type(a)}, so the shapes do not "
                    f"match (bwd rule {bwd_name} of function {name}, argument {k}: cotangent "
                    f"of shape {ca_.shape}, argument of shape {a.shape}).{hint}")
            if not isinstance(c, Tracer):
                c = np.asarray(c, dtype=want.dtype)
            elif ca_.dtype != want.dtype:
                from .primitives.structural import convert_element_type
                c = convert_element_type(c, want.dtype)
            out.append(c)
    return out


def _zero_ct(aval):
    return Zero(ad.tangent_aval(aval))


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


def linear_call(fun, fun_transpose, residual_args, linear_args):
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

    def __init__(self, fun):
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.transpose = None

    __getattr__ = forward_attr

    def def_transpose(self, transpose):
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

    def __call__(self, out_types, res_arg, lin_arg):
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
