"""What custom_jvp and custom_vjp share: their call primitives and those
primitives' rules, the user-facing zero (``SymbolicZero``), how a call's
arguments reach the flat rules (``_Args``), the decorators' common base
(``_CustomFunction``, whose ``__call__`` binds a call) and one call's flat
rules (``_Call``, specialised in ``_jvp`` and ``_vjp``)."""
from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import core
from .._array import ArrayImpl, to_user
from ..core import Tracer
from ..interpreters import ad
from ..interpreters import partial_eval as pe
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_structure, tree_unflatten

if TYPE_CHECKING:
    from ..typing import Array


# ---------------------------------------------------------------------------
# Public helper types


class SymbolicZero:
    """A tangent or cotangent that is known to be zero (``symbolic_zeros=True``).

    Args:
      aval: the abstract value (shape and dtype) of the zero.
    """

    __slots__ = ("aval",)

    def __init__(self, aval: core.ShapedArray) -> None:
        self.aval = aval

    shape = property(lambda self: self.aval.shape, doc="The zero's shape.")
    dtype = property(lambda self: self.aval.dtype, doc="The zero's dtype.")

    def instantiate(self) -> Array:
        return np.zeros(self.aval.shape, self.aval.dtype)

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


def zero_from_primal(x: Any, symbolic_zeros: bool = False) -> Any:
    """The zero tangent of the primal value ``x``, leaf by leaf of a pytree (as JAX's:
    optimistix passes a tuple).

    Args:
      x: a primal value (array or scalar), or a pytree of them.
      symbolic_zeros: return ``SymbolicZero`` values instead of arrays of zeros.

    Returns:
      For each leaf, zeros of its tangent dtype (``float0`` for integers), of its shape.
    """
    leaves, tree = tree_flatten(x)
    avals = [ad.tangent_aval(core.get_aval(v)) for v in leaves]
    return tree_unflatten(tree, [SymbolicZero(a) if symbolic_zeros else np.zeros(a.shape, a.dtype)
                                 for a in avals])


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


ad.primitive_transposes[custom_jvp_call_p] = _custom_jvp_call_transpose


def _as_arrays(outs):
    return [o if type(o) is np.ndarray or isinstance(o, Tracer) else np.asarray(o) for o in outs]


def _as_arrays_but_py_scalars(outs):
    """``outs`` as arrays, but Python floats and complex numbers as they are: an
    eager call of a custom function returns what the function returned, as JAX's."""
    return [o if type(o) is float or type(o) is complex or type(o) is np.ndarray
            or isinstance(o, Tracer) else np.asarray(o) for o in outs]


def _user_zero(z, symbolic_zeros):
    """What a user rule sees for the internal zero ``z``."""
    return SymbolicZero(z.aval) if symbolic_zeros else np.zeros(z.aval.shape, z.aval.dtype)


def user_values(xs):
    """The flat values ``xs`` as JAX's rules get them: the interpreters' exact ndarrays
    viewed as tangentia arrays, so that ``x.at[i]``, ``x[traced_i]`` and JAX's other array
    methods work, and ``x *= 2`` makes a new array as on a JAX array; ``xs`` itself when
    it holds none."""
    for x in xs:
        if type(x) is _ndarray:
            return tuple([y.view(ArrayImpl) if type(y) is _ndarray else y for y in xs])
    return xs


def _read_only(x):
    v = x.view()
    v.flags.writeable = False
    return v


def read_only(xs):
    """``xs`` with each writable exact ndarray as a read-only view of itself: a JVP rule's
    tangents (the user's own tangent array under an eager ``jvp``, or one the interpreters
    share with other operations), which an in-place ``t *= 2`` in the rule would otherwise
    change for everyone (JAX's arrays make a new array there). Under ``grad`` the tangents
    are tracers, and this costs a type test."""
    for x in xs:
        if type(x) is _ndarray and x.flags.writeable:
            return tuple([_read_only(y) if type(y) is _ndarray and y.flags.writeable else y
                          for y in xs])
    return xs


def wants_jax_arrays(e):
    """Re-raise ``e`` unless it is what a JAX array would not have raised: an attribute
    that NumPy's arrays lack and tangentia's have (``.at``, ``.device``, ...), or a write
    into a read-only array (``x *= 2``; raised before anything is written).

    Custom functions and rules are called with the interpreters' exact ndarrays (NumPy's
    arithmetic on them is about 1 us per operation cheaper than on a subclass, 10-15% of an
    eager custom-rule call); when one fails that way, its call site calls it again on
    ``user_values(...)``: arrays with JAX's methods, whose in-place operators make new
    arrays as JAX's do. Only the rules that need them pay the subclass's cost."""
    if isinstance(e, AttributeError):
        if type(getattr(e, "obj", None)) is _ndarray and hasattr(ArrayImpl, e.name or ""):
            return
    elif isinstance(e, ValueError) and str(e).endswith("is read-only"):
        return
    raise e


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


def bind_as_method(self, obj, objtype=None):
    """``__get__`` of the custom-rule decorators: one used as a method is
    called with its instance first, as the function it wraps would be."""
    return self if obj is None else functools.partial(self, obj)


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
_trace_state = core.trace_state  # (the current trace is _trace_state().trace)
_run_in = core.run_in


def _flatten_out(out):
    if type(out) is _ndarray or isinstance(out, _ARRAYS):
        return [out], _LEAF_TREE
    return tree_flatten(out)


def _unflatten_out(tree, outs):
    return outs[0] if tree is _LEAF_TREE else tree_unflatten(tree, list(outs))


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
        self._state = None  # (until the rules are defined: ``_set_state``)

    __get__ = bind_as_method
    __getattr__ = forward_attr

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The subclass's call primitive bound (the current trace's
        ``process_custom_*_call`` decides what the call means) with the
        definition's parameters and this call's flat rules: methods of a
        ``_Call`` made for it (the subclass's ``_BINDING``: the ``_Call``
        class, a function setting those methods into the parameters, and the
        primitive).

        What a call reads of the definition is one attribute, ``_state``
        (None until the rules are defined; see ``_set_state``): the class
        forwards missing attributes (``__getattr__``), which makes each
        attribute read several times slower than on a plain object.

        A call on concrete arguments (arrays and scalars) under eager
        evaluation, or under an interpreter that evaluates untraced values as
        eager evaluation does (``Trace.eval_known``), is not bound: it gives
        the function's value, as eager evaluation of the bound call does
        (rules never run)."""
        state = self._state
        if state is None:
            raise AttributeError(self._undefined)
        n, fun, rules, base_params, binding = state
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
                    trace = _trace_state().trace
                    if trace is _EVAL or trace.eval_known:  # evaluated, not bound
                        out = fun(*args) if trace is _EVAL else _run_in(_EVAL, fun, *args)
                        if type(out) is ArrayImpl:
                            return out
                        if type(out) is _ndarray:
                            return out.view(ArrayImpl)
                        leaves, tree = tree_flatten(out)
                        return to_user(tree_unflatten(tree, _as_arrays_but_py_scalars(leaves)))
                split = scalar  # each argument one array: the flat rules take them as they are
        if split:
            ca, dyn, leaves = self._args(args, kwargs)
        else:
            ca, dyn, leaves = None, (), args
        call_class, set_rules, prim = binding
        call = _new(call_class)  # call_class(self, ca, len(dyn)) without an __init__ frame
        call.owner, call.rules, call.ca, call.n_dyn, call.out_tree = (
            self, rules, ca, len(dyn), None)
        params = base_params.copy()
        set_rules(params, call)
        if dyn or type(leaves) is not tuple:
            if "num_nondiff" in params:
                params["num_nondiff"] = len(dyn)
            leaves = (*dyn, *leaves)
        outs = prim.bind_with_trace(_trace_state().trace, leaves, params)  # (bind, not repacked)
        if call.out_tree is _LEAF_TREE and isinstance(outs[0], Tracer):
            return outs[0]  # one traced output: the common case
        return call.value(outs)

    def _set_state(self):
        """What ``__call__`` reads, in one attribute: set when the rules are
        defined (``defjvp``, ``defvjp``)."""
        self._state = (self._n_plain, self.fun, self._rules, self._params, self._BINDING)

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
        try:
            out = fun(*xs) if ca is None else fun(*ca.full(xs[:self.n_dyn], xs[self.n_dyn:]))
        except (AttributeError, ValueError) as e:
            wants_jax_arrays(e)
            xs = user_values(xs)
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
