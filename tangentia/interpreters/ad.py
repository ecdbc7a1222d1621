"""Forward- and reverse-mode differentiation.

* ``JVPTrace`` pushes tangents forward through each primitive's JVP rule.
* ``linearize`` runs the JVP interpreter on top of a partial evaluator: the
  primal half is computed now, the tangent half is recorded as a linear
  program whose constants are the residuals.
* ``backward_pass`` transposes such a linear program with each primitive's
  transpose rule.  Reverse mode (``vjp``/``grad``) is linearize followed by
  transposition; there is no separate tape.
"""
from __future__ import annotations

import functools
from types import MethodType as _MethodType
from typing import Callable

import numpy as np

from .. import core, dtypes
from .._array import ArrayImpl as _ArrayImpl
from ..tree_util import register_leaf_type
from ..core import Primitive, Tracer, Var, set_trace

_trace_state = core.trace_state
_ROOT_STATE = core.ROOT_STATE
_ndarray = np.ndarray
_asarray = np.asarray
from . import partial_eval as pe

_JaxprTracer = pe.JaxprTracer
_JaxprTrace = pe.JaxprTrace
_custom_partial_eval_rules = pe.custom_partial_eval_rules
_WEAK_SCALAR_AVALS = pe._WEAK_SCALAR_AVALS
_aval_of_ndarray = core.aval_of_ndarray
_NDARRAY_AVALS = core._NDARRAY_AVALS
_new = object.__new__
_suspended = core.run_suspended
_eval_primitive = core.eval_primitive
_Eqn = core.Eqn
_Jaxpr = core.Jaxpr


# ---------------------------------------------------------------------------
# Symbolic zeros


Zero = core.Zero
tangent_aval = core.tangent_aval


def zeros_like_aval(aval):
    return np.zeros(aval.shape, aval.dtype)


def instantiate(t):
    return zeros_like_aval(t.aval) if type(t) is Zero else t


def zero_nonfloat(avals, tangents):
    """Tangents of values of type ``avals``: zero for integer and boolean ones
    (their tangent type is float0, which carries no information)."""
    return [Zero(tangent_aval(a)) if not dtypes.is_inexact(a.dtype) else t
            for a, t in zip(avals, tangents)]


def add_tangents(a, b):
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return add_any(a, b)


# ---------------------------------------------------------------------------
# The differentiation rules, in tables keyed by primitive (JAX's names), filled
# by each primitive's own module (directly or through ``defjvp``, ``defjvp_zero``,
# ``deflinear``), as ``batching.primitive_batchers`` is for vmap.
#   primitive_jvps[p] = rule(primals, tangents, **params) -> (primal_out, tangent_out)
#       a zero tangent is ``Zero``; a rule registered with ``takes_none=True``
#       (``primitive_jvps.define``; every rule ``defjvp`` makes) may also be
#       handed None for one (it then need not build a ``Zero``)
#   primitive_transposes[p] = rule(ct, *args, **params) -> one cotangent per arg
#       (None for a zero one); linear inputs arrive as ``UndefinedPrimal``


class JVPRules(dict):
    """``primitive_jvps``: ``prim -> rule``, JAX's table.  Whether a rule takes
    None as a zero tangent (as well as ``Zero``) is a property of the rule,
    declared when it is registered: ``define(prim, rule, takes_none=True)``
    (every rule ``defjvp`` makes) marks the rule itself (its
    ``jvp_takes_none`` attribute), so an assignment of the same rule
    (``primitive_jvps[p] = rule``, a monkeypatch's undo) keeps the
    declaration; any other rule is handed ``Zero``.  ``entries`` holds
    ``prim -> (rule, takes_none)``, kept by every change to the table: the
    JVP interpreter's one lookup per primitive."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[Primitive, tuple[Callable, bool]] = {}

    def define(self, prim: Primitive, rule: Callable, *, takes_none: bool = False) -> None:
        """Register ``rule`` as ``prim``'s JVP; ``takes_none``: it takes None
        for a zero tangent (as well as ``Zero``)."""
        try:
            rule.jvp_takes_none = bool(takes_none)  # type: ignore[attr-defined]
        except AttributeError:   # (a bound method or a builtin: declared for this entry)
            pass
        dict.__setitem__(self, prim, rule)
        self.entries[prim] = (rule, bool(takes_none))

    def takes_none(self, prim: Primitive) -> bool:
        """Whether ``prim``'s rule was registered as taking None for a zero tangent."""
        entry = self.entries.get(prim)
        return entry is not None and entry[1]

    def __setitem__(self, prim: Primitive, rule: Callable) -> None:
        dict.__setitem__(self, prim, rule)
        self.entries[prim] = (rule, getattr(rule, "jvp_takes_none", False) is True)

    def __delitem__(self, prim: Primitive) -> None:
        dict.__delitem__(self, prim)
        del self.entries[prim]

    def pop(self, prim, *default):  # type: ignore[override]
        self.entries.pop(prim, None)
        return dict.pop(self, prim, *default)

    def popitem(self):
        prim, rule = dict.popitem(self)
        self.entries.pop(prim, None)
        return prim, rule

    def setdefault(self, prim, rule=None):  # type: ignore[override]
        if prim not in self:
            self[prim] = rule
        return self[prim]

    def update(self, *args, **kwargs) -> None:  # type: ignore[override]
        for prim, rule in dict(*args, **kwargs).items():
            self[prim] = rule

    def clear(self) -> None:
        dict.clear(self)
        self.entries.clear()


primitive_jvps = JVPRules()
_jvp_entries = primitive_jvps.entries
primitive_transposes: dict[Primitive, Callable] = {}


# A primitive that adds two tangents of the same type (used to accumulate).
add_any_p = Primitive("add_any")
add_any_p.impl = np.add
add_any_p.abstract_eval = lambda x, y: x.strip_weak() if x.weak_type and not y.weak_type else x
primitive_jvps[add_any_p] = lambda primals, tangents: (add_any(*primals),
                                                       add_tangents(*tangents))
primitive_transposes[add_any_p] = lambda ct, x, y: (ct, ct)
add_any = core.eager_dispatch(add_any_p, np.add, nin=2)

# ``convert_element_type``, installed by ``base_ops`` (which defines it and
# imports this module).  Tangents and cotangents always have their primal's
# tangent dtype: a rule whose result was promoted (a float32 primal meeting a
# float64 constant, say) is cast back here, once, for every rule.
_convert = [None]


def fit_dtype(t, dtype):
    """``t`` with the floating ``dtype`` of its primal (cast only if it differs)."""
    if _dtype_of(t) != dtype and dtypes.is_inexact(dtype):
        return _convert[0](t, dtype)
    return t

# Its batching rule is in ``batching`` (it moves and broadcasts batch axes).


# ---------------------------------------------------------------------------
# The JVP interpreter


class JVPTracer(Tracer):
    """A value carrying its tangent under a ``JVPTrace``: made by
    ``maybe_jvp_tracer`` (and inline in ``JVPTrace.process_primitive``)."""

    __slots__ = ("primal", "tangent")

    @property
    def aval(self):
        return core.get_aval(self.primal)

    def __repr__(self):
        return f"JVPTracer(primal={self.primal!r}, tangent={self.tangent!r})"


register_leaf_type(JVPTracer)


def _internal(x):
    """A value computed by user code (a custom rule) as carried inside the
    machinery: an eager result (``ArrayImpl``, from a public function) as the
    plain ndarray it views, on which NumPy is faster; other values unchanged."""
    return x.view(_ndarray) if type(x) is _ArrayImpl else x


def _dtype_of(x):
    """The dtype of a tangent (a staged value, an array or a Python scalar)."""
    if type(x) is _JaxprTracer:
        return x.ir_var.aval.dtype
    return x.dtype if hasattr(x, "dtype") else core.get_aval(x).dtype


def maybe_jvp_tracer(trace, primal, tangent):
    """``primal`` carrying ``tangent`` under ``trace``: a ``JVPTracer``, or
    ``primal`` itself when the tangent is a symbolic zero.  The one place that
    makes a JVPTracer inside the interpreter (without an ``__init__`` frame),
    but for ``JVPTrace.process_primitive``'s single-result case, which has its
    body inline (a call fewer per differentiated primitive: -0.5% instructions
    per eager ``grad``)."""
    if type(tangent) is Zero:
        return primal
    r = _new(JVPTracer)
    r._trace, r.primal, r.tangent = trace, primal, tangent
    return r


def _out_tangent_aval(o):
    """The tangent type of a custom_vjp function's output ``o`` (a float array's
    own aval, cached; float0 for integers)."""
    if type(o) is _ndarray:
        a = _NDARRAY_AVALS.get((o.shape, o.dtype)) or _aval_of_ndarray(o)
        if a.dtype.kind in "fc":
            return a
    else:
        a = core.get_aval(o)
    # (a float aval is its own tangent aval; both are strong)
    return a if dtypes.is_inexact(a.dtype) and not a.weak_type else tangent_aval(a)


class JVPTrace(core.Trace):
    """Pushes tangents through each primitive's JVP rule."""

    __slots__ = ()

    def describe(self):
        return "differentiation (jvp/grad)"

    def process_primitive(self, prim, args, params):
        # Unpack: the primals, and the tangents of this trace's tracers (None for
        # other values: a zero the rule need not build if it takes None, see ``JVPRules``;
        # ``Zero`` for any other number of arguments).
        parent = self.parent
        if len(args) == 1:  # (the most common case, without growing lists)
            x = args[0]
            if type(x) is not JVPTracer or x._trace is not self:
                if isinstance(x, Tracer):
                    self.check_foreign(x)
                return parent.process_primitive(prim, args, params)  # a zero tangent
            primals, tangents = [x.primal], [x.tangent]
            some_none = False
        elif len(args) == 2:  # (binary: the next most common)
            x, y = args
            mine = type(x) is JVPTracer and x._trace is self
            if type(y) is JVPTracer and y._trace is self:
                if mine:
                    primals, tangents = [x.primal, y.primal], [x.tangent, y.tangent]
                    some_none = False
                else:
                    if isinstance(x, Tracer):
                        self.check_foreign(x)
                    primals, tangents, some_none = [x, y.primal], [None, y.tangent], True
            else:
                if isinstance(y, Tracer):
                    self.check_foreign(y)
                if not mine:
                    if isinstance(x, Tracer):
                        self.check_foreign(x)
                    return parent.process_primitive(prim, args, params)
                primals, tangents, some_none = [x.primal, y], [x.tangent, None], True
        else:  # (zero tangents as ``Zero``)
            primals, tangents, nonzero = self._unpack_all(args)
            if not nonzero:  # every tangent is zero: the parent handles it
                return parent.process_primitive(prim, args, params)
            some_none = False
        try:
            rule, takes_none = _jvp_entries[prim]
        except KeyError:
            raise NotImplementedError(
                f"Differentiation rule for '{prim.name}' not implemented") from None
        if some_none and not takes_none:
            tangents = [Zero.from_primal(p) if t is None else t
                        for p, t in zip(primals, tangents)]
        # The rule runs with the parent current: switched in place on this
        # context's ``core.TraceState`` (not the shared root one, see ``core.run_in``).
        state = _trace_state()
        if state is _ROOT_STATE:
            with set_trace(self):
                return self.process_primitive(prim, args, params)
        old = state.trace
        state.trace = parent
        try:
            out, tan = rule(primals, tangents, **params) if params else rule(primals, tangents)
            # A tangent has its primal's dtype (a rule's result may have been promoted).
            if prim.multiple_results:
                tan = [t if type(t) is Zero else fit_dtype(t, core.get_aval(p).dtype)
                       for p, t in zip(out, tan)]
            elif type(tan) is not Zero:
                want = out.dtype if type(out) is _ndarray else core.get_aval(out).dtype
                d = tan.ir_var.aval.dtype if type(tan) is _JaxprTracer else _dtype_of(tan)
                if d is not want and d != want:
                    tan = fit_dtype(tan, want)
        finally:
            state.trace = old
        if prim.multiple_results:
            return [maybe_jvp_tracer(self, p, t) for p, t in zip(out, tan)]
        if type(tan) is Zero:
            return out
        r = _new(JVPTracer)  # (maybe_jvp_tracer's body, inline: the hot path of eager grad)
        r._trace, r.primal, r.tangent = self, out, tan
        return r

    def concrete_value(self, tracer, context):
        if context in core.STRICT_CONVERSIONS:   # as JAX: float() would drop the derivative
            raise core.concretization_error(
                tracer, context,
                f"The value carries a derivative under {self.describe()}, and {context}() "
                "would return its value alone, silently cutting the dependence.",
                "Keep it an array (use x.astype(...) or tangentia.numpy functions, not float() "
                "or the math module); to drop the derivative on purpose, convert "
                "tangentia.lax.stop_gradient(x).")
        p = tracer.primal
        if isinstance(p, Tracer):
            return p.concrete_value(context)
        return p

    def unpack(self, x):
        """(primal, tangent) of an output; foreign values have zero tangent."""
        if type(x) is JVPTracer and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, Zero.from_primal(x)

    # Custom rules: differentiation runs the rule (see core.Trace) ----------

    def _unpack_all(self, args, num_consts=0, first_diff=0, kind="", name=""):
        """Primals of all arguments, tangents of the differentiable ones (from
        position ``first_diff``; ``Zero`` when unperturbed), and whether any is
        perturbed.  A tangent on one of the ``num_consts`` leading closed-over
        values (of the custom function ``name``, a ``kind``) is an error."""
        primals, tangents = [], []
        perturbed = False
        for i, x in enumerate(args):
            p, t = self.unpack(x)
            primals.append(p)
            if type(t) is not Zero:
                if i < num_consts:
                    raise core.closure_error(kind, name)
                perturbed = perturbed or i >= first_diff
            if i >= first_diff:
                tangents.append(t)
        return primals, tangents, perturbed

    def process_custom_jvp_call(self, prim, args, params):
        nc = params["num_consts"]
        name = params["name"]
        # A linearization or staging records the rule's equations: they carry
        # its name (``pe.JaxprTrace.source``).
        parent = self.parent
        lin = isinstance(parent, _JaxprTrace)
        if lin:
            old = parent.source
            parent.source = name
        try:
            x = args[0] if len(args) == 1 else None
            if type(x) is JVPTracer and x._trace is self and not nc and not params["num_nondiff"]:
                # One argument, perturbed: the common case.
                outs = _suspended(self, "custom_jvp", name, params["jvp"], x.primal, x.tangent)
            else:
                primals, tangents, perturbed = self._unpack_all(
                    args, nc, nc + params["num_nondiff"], "custom_jvp", name)
                # Suspended either way, so that a function closing over one of this trace's
                # tracers is reported instead of silently losing its derivative.
                if not perturbed:
                    return _suspended(self, "custom_jvp", name,
                                      self.parent.process_custom_jvp_call, prim, primals, params)
                outs = _suspended(self, "custom_jvp", name, params["jvp"], *primals, *tangents)
        finally:
            if lin:
                parent.source = old
        if len(outs) == 2:  # one output: ``[maybe_jvp_tracer(self, _internal(p), t)]``, inline
            p, t = outs
            if type(p) is _ArrayImpl:
                p = p.view(_ndarray)
            if type(t) is Zero:
                return [p]
            r = _new(JVPTracer)
            r._trace, r.primal, r.tangent = self, p, t
            return [r]
        n = len(outs) // 2
        return [maybe_jvp_tracer(self, _internal(p), t) for p, t in zip(outs[:n], outs[n:])]

    def process_custom_vjp_call(self, prim, args, params):
        nc = params["num_consts"]
        name = params["name"]
        x = args[0] if len(args) == 1 else None
        if type(x) is JVPTracer and x._trace is self and not nc:
            # One argument, perturbed: the common case.
            tangents = (x.tangent,)
            outs, res, res_tree = _suspended(self, "custom_vjp", name, params["fwd"], (True,),
                                             x.primal)
        else:
            primals, tangents, perturbed = self._unpack_all(args, nc, nc, "custom_vjp", name)
            if not perturbed:
                return _suspended(self, "custom_vjp", name, self.parent.process_custom_vjp_call,
                                  prim, primals, params)
            outs, res, res_tree = _suspended(self, "custom_vjp", name, params["fwd"],
                                             tuple([type(t) is not Zero for t in tangents]),
                                             *primals)
        # The linear step carrying ``bwd``, bound with the parent (a linearization
        # records it); its inputs are the residuals and the materialized tangents.
        # Eager results (ArrayImpl, from public functions) become the plain arrays
        # they view.
        lin_in = []
        for r in res:
            lin_in.append(r.view(_ndarray) if type(r) is _ArrayImpl else r)
        for t in tangents:
            lin_in.append(zeros_like_aval(t.aval) if type(t) is Zero else t)
        if len(outs) == 1:  # one output: the common case, without growing lists
            o = outs[0]
            if type(o) is _ArrayImpl:
                o = o.view(_ndarray)
            plain_outs, out_avals = [o], (_out_tangent_aval(o),)
        else:
            plain_outs = [o.view(_ndarray) if type(o) is _ArrayImpl else o for o in outs]
            out_avals = tuple([_out_tangent_aval(o) for o in plain_outs])
        # (``bwd`` with ``res_tree`` bound first: a method object is one object
        # to keep until transposition, a partial three)
        lin_params = {"num_res": len(res), "out_avals": out_avals, "name": name,
                      "bwd": _MethodType(params["bwd"], res_tree)}
        out_tans = self.parent.process_primitive(custom_lin_p, lin_in, lin_params)
        if len(plain_outs) == 1:  # one output: the common case (maybe_jvp_tracer, inline)
            p, t = plain_outs[0], out_tans[0]
            if out_avals[0].dtype is dtypes.float0 or type(t) is Zero:
                return [p]
            r = _new(JVPTracer)
            r._trace, r.primal, r.tangent = self, p, t
            return [r]
        return [p if a.dtype is dtypes.float0 else maybe_jvp_tracer(self, p, t)
                for p, t, a in zip(plain_outs, out_tans, out_avals)]

    def process_custom_vmap_call(self, prim, args, params):
        # jvp(custom_vmap(f, rule)) = custom_vmap(jvp(f), jvp(rule)), as in JAX:
        # the function is differentiated as written (closed-over values too);
        # under vmap the JVP of its rule batches it (``custom_vmap_jvp_rule``).
        name = params["name"]
        primals, tangents, perturbed = self._unpack_all(args, 0, 0, "custom_vmap", name)
        with set_trace(self.parent):
            if not perturbed:
                return self.parent.process_custom_vmap_call(prim, primals, params)
            call_jaxpr = params["call_jaxpr"]
            nonzeros = tuple([type(t) is not Zero for t in tangents])
            jvp_call, hoisted = jvp_jaxpr(call_jaxpr, nonzeros)
            rule = functools.partial(custom_vmap_jvp_rule[0], params["rule"], name,
                                     params["num_consts"], nonzeros)
            outs = prim.bind(*hoisted, *primals, *[t for t in tangents if type(t) is not Zero],
                             fun=core.jaxpr_as_fun(jvp_call), rule=rule, num_consts=len(hoisted),
                             name=name, call_jaxpr=jvp_call)
        n = len(call_jaxpr.outvars)
        tans = zero_nonfloat(call_jaxpr.out_avals, outs[n:])
        return [maybe_jvp_tracer(self, p, t) for p, t in zip(outs[:n], tans)]


# The batching rule of a custom_vmap call's JVP, ``rule(user_rule, name, num_consts,
# nonzeros, axis_size, in_batched, *primals_and_nonzero_tangents)``; installed by
# ``batching`` (it broadcasts batch axes, which this module cannot).
custom_vmap_jvp_rule = [None]


class LinearizeTrace(pe.JaxprTrace):
    """The partial evaluator under ``linearize``'s JVP interpreter.

    Operations on known values (the primal computation) go to the parent now;
    those touching a tangent are recorded into the linear program.  Under
    eager evaluation (``eval_known``, see ``core.Trace``) known values are
    computed with each primitive's NumPy implementation directly, as the
    parent would, and the eager-dispatch point takes its fast path for them.
    """

    __slots__ = ("eval_known",)

    def __init__(self, parent, builder):
        super().__init__(parent, builder, forward_known=True)
        self.eval_known = parent is core.EVAL_TRACE

    def process_primitive(self, prim, args, params, stage=False):
        # The hot path of eager ``grad``.  An operation on none of the trace's
        # own tracers (tangents) is known: computed now, by evaluation itself
        # under eager evaluation (``eval_known``), else by the parent.  An
        # operation on a tangent is recorded as an ``Eqn`` whose known inputs
        # are held inline (``pe.LinearBuilder``: no constant variables).
        if not stage:
            for x in args:
                if type(x) is _JaxprTracer and x._trace is self:
                    break
            else:
                if self.eval_known:
                    return _eval_primitive(prim, args, params)
                return self.parent.process_primitive(prim, args, params)
            rule = _custom_partial_eval_rules.get(prim)
            if rule is not None:
                return rule(self, args, params)
        # The equation's inputs (own tracers as their variables) and their
        # types; a binary operation (most tangent equations: a tangent times a
        # residual) without growing lists.
        ins = None
        if len(args) == 2:
            x, y = args
            t = type(x)
            if t is _JaxprTracer and x._trace is self:
                x = x.ir_var
                ax = x.aval
            elif t is _ndarray:  # (``core.aval_of_ndarray(x)``, its cache read inline)
                ax = _NDARRAY_AVALS.get((x.shape, x.dtype)) or _aval_of_ndarray(x)
            else:
                ax = _WEAK_SCALAR_AVALS.get(t)
            t = type(y)
            if t is _JaxprTracer and y._trace is self:
                y = y.ir_var
                ay = y.aval
            elif t is _ndarray:
                ay = _NDARRAY_AVALS.get((y.shape, y.dtype)) or _aval_of_ndarray(y)
            else:
                ay = _WEAK_SCALAR_AVALS.get(t)
            if ax is not None and ay is not None:
                ins = (x, y)
                out_aval = (prim.abstract_eval(ax, ay, **params) if params
                            else prim.abstract_eval(ax, ay))
        if ins is None:
            ins, in_avals = self._plain_args(args)
            ins = tuple(ins)
            out_aval = (prim.abstract_eval(*in_avals, **params) if params
                        else prim.abstract_eval(*in_avals))
        # As in NumPy, only Python scalars are weakly typed: results are strong.
        if prim.multiple_results:
            out, tracers = [], []
            for a in out_aval:  # Var(a) and JaxprTracer(self, v) without __init__ frames
                v = _new(Var)
                v.aval = a.strip_weak() if a.weak_type else a
                out.append(v)
                r = _new(_JaxprTracer)
                r._trace, r.ir_var = self, v
                tracers.append(r)
        else:
            # Var(aval) and JaxprTracer(self, v) without __init__ frames.
            v = _new(Var)
            v.aval = out_aval.strip_weak() if out_aval.weak_type else out_aval
            out = (v,)
        # Eqn(prim, ins, out, params, source) without an __init__ frame.
        e = _new(_Eqn)
        e.prim = prim
        e.inputs = ins
        e.outputs = out
        e.params = params
        e.source = self.source
        self.builder.eqns.append(e)
        if prim.multiple_results:
            return tracers
        r = _new(_JaxprTracer)
        r._trace, r.ir_var = self, v
        return r

    def stage(self, prim, args, params):
        return self.process_primitive(prim, args, params, True)

    def _plain_args(self, args):
        """An equation's inputs from ``args``: the trace's own tracers as their
        variables, plain ndarrays (residuals, most often) and Python scalars as
        they are, every other value made plain (``plain_value``; the value of a
        ``Literal``); and their avals."""
        ins, avals = [], []
        for x in args:
            t = type(x)
            if t is _JaxprTracer and x._trace is self:
                x = x.ir_var
                avals.append(x.aval)
            elif t is _ndarray:  # (``core.aval_of_ndarray(x)``, its cache read inline)
                avals.append(_NDARRAY_AVALS.get((x.shape, x.dtype)) or _aval_of_ndarray(x))
            elif t in _WEAK_SCALAR_AVALS:
                avals.append(_WEAK_SCALAR_AVALS[t])
            else:
                x = self.plain_value(x)
                if type(x) is core.Literal:
                    x = x.val
                avals.append(core.get_aval(x))
            ins.append(x)
        return ins, avals


# custom_lin: the linear step of a custom_vjp function under linearization.
# Inputs ``(*residuals, *input tangents)``; transposition calls ``bwd`` on the
# residuals and output cotangents (``Zero`` for zero ones).  Evaluating it is
# forward mode through the custom_vjp function: ``bwd`` is linear in its
# cotangents, so the output tangents are its transpose applied to the input
# tangents (``bwd`` is staged as a function of the cotangents, at the
# residuals, and that linear program is transposed).  This works under every
# transformation, because the evaluation is itself made of primitives.

custom_lin_p = Primitive("custom_lin", multiple_results=True)


def custom_lin_forward(*args, num_res, bwd, out_avals, name, forward=None):
    if forward is not None:  # the definer gave the linear map itself (its transpose is bwd)
        return list(forward(*args))
    res, t_in = args[:num_res], args[num_res:]
    in_avals = [tangent_aval(core.get_aval(t)) for t in t_in]

    def bwd_of_cts(*cts):
        cts_in = bwd(*res, *cts)
        return [zeros_like_aval(a) if c is None or type(c) is Zero else c
                for c, a in zip(cts_in, in_avals)]

    jaxpr, consts = pe.trace_to_jaxpr(bwd_of_cts, list(out_avals), name=f"bwd of {name}",
                                      label="forward mode through custom_vjp")
    try:
        cts = backward_pass(jaxpr, consts, list(t_in))
    except (NotImplementedError, TypeError) as err:
        raise TypeError(
            "can't apply forward-mode autodiff (jvp) to a custom_vjp function. (Forward mode "
            f"(jvp, jacfwd, hessian, linearize) of the custom_vjp function {name} transposes "
            f"its bwd rule, which must be linear in the cotangents, but it is not ({err}). "
            "Define the derivative with custom_jvp instead, which serves both modes.)") from None
    return [zeros_like_aval(a) if c is None or type(c) is Zero else c
            for c, a in zip(cts, out_avals)]


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, name, forward=None):
    for c in cts:
        if c is None:
            cts = [Zero(a) if c is None else c for c, a in zip(cts, out_avals)]
            break
    out = [None] * num_res
    for c in bwd(*args[:num_res], *cts):
        out.append(None if type(c) is Zero else c)
    return out


custom_lin_p.impl = custom_lin_forward
custom_lin_p.abstract_eval = (lambda *avals, num_res, bwd, out_avals, name, forward=None:
                              list(out_avals))
custom_lin_p.print_params = lambda params: {"name": params["name"], "num_res": params["num_res"]}
primitive_transposes[custom_lin_p] = _custom_lin_transpose


def _custom_lin_jvp(primals, tangents, **params):
    return jvp_flat(lambda *xs: custom_lin_forward(*xs, **params), list(primals),
                    [Zero.from_primal(p) if t is None else t for p, t in zip(primals, tangents)])


# (its batching rule is in batching.py, which imports this module)
primitive_jvps[custom_lin_p] = _custom_lin_jvp


# Helpers for defining rules ------------------------------------------------


def defjvp(prim, *tangent_fns):
    """Define ``prim``'s JVP by one linear function per argument.

    Each ``fn(t, ans, *primals, **params)`` gives that argument's contribution
    to the output tangent; ``None`` means the output does not depend on it.
    Zero tangents (``Zero``, or None: the rule takes None for a zero) are
    skipped.  The primal output is ``prim`` bound on the primals (the JVP
    interpreter runs the rule with its parent current).
    """
    get = core.trace_state  # (the current trace is get().trace)

    if len(tangent_fns) == 1 and tangent_fns[0] is not None and not prim.multiple_results:
        fn = tangent_fns[0]

        def rule(primals, tangents, **params):  # one argument: the hot path of eager grad
            ans = get().trace.process_primitive(prim, primals, params)  # (prim.bind, unpacked)
            t = tangents[0]
            if t is None or type(t) is Zero:
                return ans, Zero.from_primal(ans)
            return ans, fn(t, ans, primals[0], **params) if params else fn(t, ans, primals[0])
    else:
        def rule(primals, tangents, **params):
            ans = get().trace.process_primitive(prim, primals, params)  # (prim.bind, unpacked)
            out = None
            for fn, t in zip(tangent_fns, tangents):
                if fn is None or t is None or type(t) is Zero:
                    continue
                contrib = fn(t, ans, *primals, **params)
                out = contrib if out is None else add_any(out, contrib)
            if out is None:
                return ans, Zero.from_primal(ans)
            return ans, out
    primitive_jvps.define(prim, rule, takes_none=True)


def defjvp_zero(prim):
    """The output of ``prim`` has zero derivative (integer/bool outputs, steps)."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if prim.multiple_results:
            return ans, [Zero.from_primal(a) for a in ans]
        return ans, Zero.from_primal(ans)
    primitive_jvps[prim] = rule


def deflinear(prim, transpose_rule):
    """``prim`` is linear in all its array arguments."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            return ans, Zero.from_primal(ans)
        tans = [instantiate(t) for t in tangents]
        return ans, prim.bind(*tans, **params)
    primitive_jvps[prim] = rule
    primitive_transposes[prim] = transpose_rule


# ---------------------------------------------------------------------------
# Transposition


# A transpose rule receives each linear input of its equation as the input's
# variable: a value whose type (``.aval``) is known and whose value is not.
# The equations being transposed hold their linear inputs as
# variables already, so they are passed to the rules as they are.
UndefinedPrimal = Var


def is_undefined(x):
    """Whether ``x``, an argument of a transpose rule, is a linear input."""
    return type(x) is Var


is_undefined_primal = is_undefined   # (JAX's names, which libraries' rules use)
instantiate_zeros = instantiate


def backward_pass(jaxpr, consts, cts_out):
    """Transpose the linear program ``jaxpr`` (linear in its invars), a
    ``core.Jaxpr`` with the values ``consts`` of its constvars, or one as
    linearization recorded it (``inline``: its equations hold their known
    inputs as values, see ``core.Eqn``; eager ``grad``), which is the one form
    transposition reads.

    Equations that do not depend on the linear inputs are evaluated forward
    first (programs made by ``linearize`` have none: they are marked
    ``all_linear`` and go straight to transposition); when a call, loop or
    branch mixes linear and non-linear inputs, the program is split by
    partial evaluation first (``_eval_known_part``).  Returns one cotangent
    per invar (``None`` for a zero cotangent).
    """
    if type(jaxpr) is not _Jaxpr:
        raise TypeError(f"backward_pass: jaxpr must be a core.Jaxpr (the one form of a linear "
                        f"program), got {type(jaxpr).__name__}")
    if jaxpr.inline:
        env = {}
        eqns = jaxpr.eqns
    else:
        all_linear = jaxpr.all_linear
        if not all_linear and _splits_mixed(jaxpr):
            jaxpr, consts = _eval_known_part(jaxpr, consts)
        env = dict(zip(jaxpr.constvars, consts))
        # Into the recorded form: the linear inputs stay variables, the others
        # become their values.
        eqns = [_Eqn(e.prim, [env.get(a, a) if type(a) is Var else a.val for a in e.inputs],
                     e.outputs, e.params, e.source)
                for e in (jaxpr.eqns if all_linear else _eval_nonlinear(jaxpr, env))]
    # From here on, a variable is linear exactly when it has no value in env.
    ct_env = {}
    get = ct_env.get
    for v, ct in zip(jaxpr.outvars, cts_out):
        if type(v) is Var and v not in env and ct is not None and type(ct) is not Zero:
            old = get(v)
            ct_env[v] = ct if old is None else add_any(old, ct)
    pop = ct_env.pop
    for e in reversed(eqns):
        prim = e.prim
        if prim.multiple_results:
            out = e.outputs
            if len(out) == 1:  # (a custom_vjp function's linear step, most often)
                cts = pop(out[0], None)
                if cts is None:
                    continue
                cts = [cts]
            else:
                cts = [pop(v, None) for v in out]
                for c in cts:  # (not all(...) of a generator, which costs ~3k when it stops early)
                    if c is not None:
                        break
                else:
                    continue
                cts = [Zero(tangent_aval(v.aval)) if c is None else c for v, c in zip(out, cts)]
        else:
            cts = pop(e.outputs[0], None)
            if cts is None:
                continue
        inputs = e.inputs
        params = e.params
        try:
            try:
                rule = primitive_transposes[prim]
            except KeyError:
                raise NotImplementedError(
                    f"transpose rule for '{prim.name}' not implemented: it appeared in a "
                    "linear program but is not linear") from None
            # (the linear inputs are variables: ``UndefinedPrimal``)
            cts_in = rule(cts, *inputs, **params) if params else rule(cts, *inputs)
        except (NotImplementedError, TypeError) as err:
            source = e.source
            if source is None:
                raise
            raise TypeError(
                f"The custom_jvp rule of {source} is not linear in its tangents, so it cannot "
                f"be used for reverse-mode differentiation (grad/vjp): it applies "
                f"'{prim.name}' to a tangent in a non-linear way ({err}). A JVP rule's "
                "tangent output must be a linear function of the input tangents.") from None
        for a, c in zip(inputs, cts_in):
            if c is not None and type(a) is Var and type(c) is not Zero:
                want = a.aval.dtype
                d = c.dtype if type(c) is _ndarray else getattr(c, "dtype", want)
                if d is not want and d != want:
                    c = fit_dtype(c, want)
                old = get(a)
                ct_env[a] = c if old is None else add_any(old, c)
    return [get(v) for v in jaxpr.invars]


def _splits_mixed(jaxpr):
    """Whether an equation of ``jaxpr`` reads both linear values (depending on
    its invars) and non-linear ones and has a partial-evaluation rule: a call,
    loop or branch carrying a program (a checkpoint's recomputation holds the
    JVP of a ``scan``, whose primal carries are not linear)."""
    linear = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        lin = [type(a) is Var and a in linear for a in eqn.inputs]
        if any(lin):
            if eqn.prim in _custom_partial_eval_rules and not all(lin):
                return True
            linear.update(eqn.outputs)
    return False


def _eval_known_part(jaxpr, consts):
    """Split ``jaxpr`` by partial evaluation (its invars unknown) and evaluate
    the known part now.  Returns the unknown part, linear in its invars (those
    of ``jaxpr``), as a program whose constvars are the residuals and the
    known outputs, and their values.  The primitives' partial-eval rules split
    the equations that mix linear and non-linear inputs, as under linearize."""
    nc, n = len(jaxpr.constvars), len(jaxpr.invars)
    split = pe.partial_eval_jaxpr(
        core.Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.eqns, jaxpr.outvars),
        [False] * nc + [True] * n)
    kouts = core.eval_jaxpr(split.known, (), *split.known_consts, *consts)
    nk = len(kouts) - split.num_res
    unknown = split.unknown
    res_vars = list(unknown.invars[:split.num_res])
    uouts = iter(unknown.outvars)
    known = iter(kouts[:nk])
    outvars, known_vars, known_vals = [], [], []
    for uk in split.out_unknowns:
        if uk:
            outvars.append(next(uouts))
        else:
            v = Var(jaxpr.outvars[len(outvars)].aval)
            known_vars.append(v)
            known_vals.append(next(known))
            outvars.append(v)
    return (core.Jaxpr(res_vars + known_vars, list(unknown.invars[split.num_res:]),
                       unknown.eqns, outvars),
            list(kouts[nk:]) + known_vals)


def _eval_nonlinear(jaxpr, env):
    """Evaluate the equations of ``jaxpr`` that do not depend on its (linear)
    inputs, storing their values in ``env``; returns the other equations."""
    linear = set(jaxpr.invars)
    lin_eqns = []
    for eqn in jaxpr.eqns:
        mask = [type(a) is Var and a in linear for a in eqn.inputs]
        if any(mask):
            lin_eqns.append(eqn)
            linear.update(eqn.outputs)
        else:
            out = eqn.prim.bind(*[env[a] if type(a) is Var else a.val for a in eqn.inputs],
                                **eqn.params)
            if eqn.prim.multiple_results:
                env.update(zip(eqn.outputs, out))
            else:
                env[eqn.outputs[0]] = out
    return lin_eqns


# ---------------------------------------------------------------------------
# Flat entry points used by the public API


def jvp_flat(fun, primals, tangents):
    """Run ``fun`` (flat in, flat out) under a new JVP interpreter."""
    trace = JVPTrace(core.current_trace())
    ins = [maybe_jvp_tracer(trace, p, t) for p, t in zip(primals, tangents)]
    try:
        with set_trace(trace):
            outs = fun(*ins)
        pairs = [trace.unpack(o) for o in outs]
    finally:
        trace.alive = False
    return [p for p, _ in pairs], [t for _, t in pairs]


def linearize_flat(fun, primals, differentiable=None, aux_holder=None, records=False):
    """Linearize ``fun`` at ``primals``.

    Returns ``(primals_out, jaxpr, consts, out_tangent_avals, aux)`` where
    ``jaxpr`` maps the input tangents to the output tangents and is linear.
    ``differentiable[i]`` False skips input i (its tangent is a zero).  If
    ``aux_holder`` is given, ``fun`` stores auxiliary outputs in
    ``aux_holder["aux"]``; they are returned with their tangents stripped.
    With ``records``, ``jaxpr`` is the program as recorded (marked ``inline``,
    for ``backward_pass`` only) and ``consts`` is None: no program is built.
    """
    builder = pe.LinearBuilder("linearized")
    pe_trace = LinearizeTrace(core.current_trace(), builder)
    jvp_trace = JVPTrace(pe_trace)
    ins = []
    in_tracers = []
    for i, p in enumerate(primals):
        aval = tangent_aval(core.get_aval(p))
        t = pe_trace.new_arg(aval)
        in_tracers.append(t)
        if aval.dtype == dtypes.float0 or (differentiable is not None and not differentiable[i]):
            ins.append(p)
        else:
            ins.append(maybe_jvp_tracer(jvp_trace, p, t))
    aux = None
    try:
        with set_trace(jvp_trace):
            outs = fun(*ins)
        out_primals, out_tangents = [], []
        for o in outs:
            p, t = jvp_trace.unpack(o)
            out_primals.append(p)
            out_tangents.append(instantiate(t))
        out_tan_avals = [tangent_aval(core.get_aval(p)) for p in out_primals]
        if records:
            jaxpr = builder.recorded(in_tracers, out_tangents, pe_trace)
            consts = None
        else:
            jaxpr, consts = builder.build(in_tracers, out_tangents, pe_trace)
            # Every recorded equation has an unknown (tangent) input.
            jaxpr.all_linear = True
        if aux_holder is not None:
            from ..tree_util import tree_map
            aux = tree_map(lambda x: jvp_trace.unpack(x)[0] if isinstance(x, Tracer) else x,
                           aux_holder.get("aux"))
    finally:
        jvp_trace.alive = False
        pe_trace.alive = False
        builder.eqns = []  # handed over (the builder is the trace's: no cycle)
    return out_primals, jaxpr, consts, out_tan_avals, aux


# ---------------------------------------------------------------------------
# Program-level transformations used by call-like primitives


def jvp_jaxpr(jaxpr, nonzeros):
    """A program computing (primals_out..., tangents_out...) from
    (primals..., tangents of the nonzero inputs...).

    Returns ``(program, hoisted)``; ``hoisted`` are the constants the program
    closes over, passed as its leading inputs (see ``trace_to_program``)."""
    key = tuple(nonzeros)
    hit = _JVP_PROGRAMS.get(jaxpr, key)
    if hit is not None:
        return hit
    n = len(jaxpr.invars)
    in_avals = [v.aval for v in jaxpr.invars]
    tan_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    out_nonzero = []

    def fun(*args):
        primals, tans = args[:n], iter(args[n:])
        tangents = [next(tans) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
        tangents = zero_nonfloat(in_avals, tangents)
        outs, out_tans = jvp_flat(lambda *xs: core.eval_jaxpr(jaxpr, (), *xs), primals, tangents)
        out_nonzero[:] = [type(t) is not Zero for t in out_tans]
        return list(outs) + [instantiate(t) for t in out_tans]

    new = pe.trace_to_program(fun, in_avals + tan_avals, name="jvp")
    return pe.memoize_program(_JVP_PROGRAMS, jaxpr, key, new)


_JVP_PROGRAMS = core.ProgramMemo("jvp_jaxpr: JVP programs per nonzero tangents")
_TRANSPOSED = core.ProgramMemo("transpose_jaxpr: transposed programs per linear inputs")


def transpose_jaxpr(jaxpr, linear_mask):
    """A program mapping (non-linear inputs..., output cotangents...) to the
    cotangents of the linear inputs.  Returns ``(program, hoisted)``."""
    key = tuple(linear_mask)
    hit = _TRANSPOSED.get(jaxpr, key)
    if hit is not None:
        return hit
    in_avals = [v.aval for v in jaxpr.invars]
    res_avals = [a for a, lin in zip(in_avals, linear_mask) if not lin]
    ct_avals = [tangent_aval(v.aval) for v in jaxpr.outvars]
    lin_avals = [tangent_aval(a) for a, lin in zip(in_avals, linear_mask) if lin]
    nres = len(res_avals)

    def fun(*args):
        res, cts = iter(args[:nres]), args[nres:]
        # Bind residuals as constants; linear inputs are the program's invars.
        lin_vars = [v for v, lin in zip(jaxpr.invars, linear_mask) if lin]
        res_vars = [v for v, lin in zip(jaxpr.invars, linear_mask) if not lin]
        sub = core.Jaxpr(res_vars, lin_vars, jaxpr.eqns, jaxpr.outvars)
        out = backward_pass(sub, list(res), cts)
        return [zeros_like_aval(a) if c is None or type(c) is Zero else c for c, a in zip(out, lin_avals)]

    new = pe.trace_to_program(fun, res_avals + ct_avals, name="transpose")
    return pe.memoize_program(_TRANSPOSED, jaxpr, key, new)
