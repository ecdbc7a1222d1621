"""Staging: the interpreter that records primitives into an IR program.

One trace class serves two purposes:

* **staging** (``jit``, ``make_jaxpr``, control-flow bodies): every primitive
  is recorded; values of outer interpreters become constants of the program.
* **partial evaluation** (``linearize``): primitives whose inputs are all
  known are forwarded to the parent interpreter (computed now); only those
  touching an unknown value are recorded.  The recorded program is the linear
  part of a JVP, and the known values it reads are its residuals.

Constants: a traced program's constants (concrete arrays and values of outer
interpreters alike) are its constvars only until it is carried by a
primitive; ``trace_to_program`` makes them the program's leading inputs,
which the binder passes as operands (as JAX does).  No program embeds a
value, so the printed IR shows constants as inputs and a cache keyed on a
program cannot hand back stale values.  ``make_jaxpr`` alone keeps the
constvars, in the ``ClosedJaxpr`` it returns.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import core
from .._gc import quiet_trace as _quiet_gc
from .._array import ArrayImpl
from .._messages import jax_type
from ..tree_util import register_leaf_type
from ..core import Literal, Tracer, Var, set_trace


_compile_time_eval_get = core.compile_time_eval_ctx.get
_run_in = core.run_in


class JaxprTracer(Tracer):
    # The IR variable is ``ir_var`` (not ``var``, which is the array method).
    __slots__ = ("ir_var",)

    def __init__(self, trace, var):
        self._trace = trace
        self.ir_var = var

    @property
    def aval(self):
        return self.ir_var.aval


register_leaf_type(JaxprTracer)
core.register_aval_type(JaxprTracer, lambda x: x.ir_var.aval)   # (eager grad's tangents)


class JaxprBuilder:
    """Accumulates equations and constants for one program."""

    __slots__ = ("eqns", "constvars", "constvals", "const_ids", "invars", "name", "arg_names")

    def __init__(self, name="fun", arg_names=None):
        self.arg_names = arg_names
        self.eqns = []
        self.constvars = []
        self.constvals = []
        self.const_ids = {}
        self.invars = []
        self.name = name

    def const_var(self, x, aval=None):
        key = id(x)
        v = self.const_ids.get(key)
        if v is None:
            v = Var(aval if aval is not None else core.get_aval(x))
            self.const_ids[key] = v
            self.constvars.append(v)
            self.constvals.append(x)
        return v

    def build(self, in_tracers, outs, trace):
        """Make (jaxpr, consts) with ``in_tracers`` as inputs and ``outs`` as outputs."""
        invars = [t.ir_var for t in in_tracers]
        outvars = [trace.to_atom(o) for o in outs]
        eqns, live = _dce(self.eqns, outvars)
        constvars, constvals = [], []
        for v, x in zip(self.constvars, self.constvals):
            if v in live:
                constvars.append(v)
                constvals.append(x)
        jaxpr = core.Jaxpr(constvars, invars, eqns, outvars)
        if CHECK_PROGRAMS:  # every staged program, with the programs it carries
            core.typecheck_jaxpr(jaxpr)
        return jaxpr, constvals


# TANGENTIA_CHECK_PROGRAMS=1: type-check every program as it is built (tests/conftest.py).
CHECK_PROGRAMS = os.environ.get("TANGENTIA_CHECK_PROGRAMS", "0") not in ("", "0")


class LinearBuilder(JaxprBuilder):
    """The builder of linearize's partial evaluator (``ad.LinearizeTrace``).

    Its equations are ``core.Eqn``s like any builder's, recorded by
    ``LinearizeTrace.process_primitive``, but their known inputs are held
    inline (see ``core.Eqn``): the trace's own tracers appear as their ``Var``
    (the linear inputs), residual arrays and Python scalars as they are, any
    other value as ``JaxprTrace.plain_value`` makes it (the value of a
    ``Literal``, a tracer of an outer interpreter).  So recording makes no
    constant variable per residual.  ``build`` hoists the inline values
    (arrays and tracers into constvars, scalars into ``Literal``s) when a
    program is needed; eager ``grad`` transposes the equations as recorded
    (``ad.backward_pass`` of the ``inline`` program that ``recorded`` makes).
    """

    __slots__ = ()

    def recorded(self, in_tracers, outs, trace):
        """The equations as recorded, as a ``Jaxpr`` marked ``inline`` (for
        ``ad.backward_pass`` only); the builder is emptied."""
        outvars = [o.ir_var if type(o) is JaxprTracer and o._trace is trace else o for o in outs]
        jaxpr = core.Jaxpr([], [t.ir_var for t in in_tracers], self.eqns, outvars,
                           all_linear=True, inline=True)
        self.eqns = []
        return jaxpr

    def build(self, in_tracers, outs, trace):
        const_ids = self.const_ids
        const_var = self.const_var
        eqns = []
        for e in self.eqns:
            inputs = []
            for x in e.inputs:
                t = type(x)
                if t is Var or t is Literal:  # a linear input (or a literal already)
                    a = x
                elif t is _ndarray or isinstance(x, Tracer):  # a tracer of an outer trace
                    a = const_ids.get(id(x))
                    if a is None:
                        a = const_var(x)
                elif t in _WEAK_SCALAR_AVALS:  # a Python scalar
                    a = _scalar_literal(x, t, _WEAK_SCALAR_AVALS[t])
                else:  # a NumPy scalar
                    a = trace.plain_value(x)
                inputs.append(a)
            eqns.append(_Eqn(e.prim, inputs, e.outputs, e.params, e.source))
        self.eqns = eqns
        return super().build(in_tracers, outs, trace)


def has_nested_effects(eqn):
    """Whether a program that ``eqn`` carries (a branch, a loop body) has an
    equation with effects (``debug.print`` in a ``cond`` branch)."""
    return any(e.prim.has_effects or has_nested_effects(e)
               for program in core.subjaxprs(eqn.prim, eqn.params) for e in program.eqns)


# Special staging rules (loops and branches: a known part now, an unknown part
# staged): ``rule(trace, args, params)``, used by partial evaluation when an
# operand is unknown.  Filled by the primitives' modules.
custom_partial_eval_rules = {}

# Primitives whose equations change when some of their outputs are unused:
# ``rule(eqn, used) -> eqn`` computing only the used outputs (custom_dce's).
dce_rules = {}
# ``weak_inputs_explicit[0](jaxpr)``: ``jaxpr`` with the conversions its weakly typed inputs
# meet made explicit (primitives.control_flow.strong_inputs, kept weak), for the custom
# rules' primal programs: ``x32 * s`` of a Python-scalar ``s`` converts ``s`` to float32
# first in every backend, as JAX does.
weak_inputs_explicit = [lambda jaxpr: jaxpr]


def _dce(eqns, outvars):
    """Drop equations whose outputs are unused (unless they or the programs
    they carry have effects); returns (eqns, live variables)."""
    live = {v for v in outvars if type(v) is Var}
    add = live.add
    kept = []
    for e in reversed(eqns):
        outs = e.outputs
        if e.prim.has_effects:
            pass
        elif len(outs) == 1:
            if outs[0] not in live and not has_nested_effects(e):
                continue
        elif not any(o in live for o in outs) and not has_nested_effects(e):
            continue
        elif e.prim in dce_rules:
            e = dce_rules[e.prim](e, [o in live for o in outs])
        kept.append(e)
        for a in e.inputs:
            if type(a) is Var:
                add(a)
    kept.reverse()
    return kept, live


def dce_jaxpr(jaxpr):
    eqns, _ = _dce(jaxpr.eqns, jaxpr.outvars)
    return core.Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


_aval_of_ndarray = core.aval_of_ndarray
_ndarray = np.ndarray
_Eqn = core.Eqn
_WEAK_SCALAR_AVALS = {t: core.get_aval(t()) for t in (int, float, bool, complex)}
# Literals of Python scalars, shared per (type, value): literals are immutable,
# and the same constants (``y * 0.5``) are staged again at every call of eager
# ``grad``.  Zeros (0.0 and -0.0 are equal keys) and NaNs (not equal to
# themselves) are not cached; the cache is bounded.
_SCALAR_LITERALS = {}


def _scalar_literal(x, t, aval):
    key = (t, x)
    lit = _SCALAR_LITERALS.get(key)
    if lit is None:
        lit = Literal(x, aval)
        if x and x == x:
            if len(_SCALAR_LITERALS) >= 1024:
                _SCALAR_LITERALS.clear()
            _SCALAR_LITERALS[key] = lit
    return lit


class JaxprTrace(core.Trace):
    """Records primitives; with ``forward_known`` it partially evaluates."""

    # ``source``: the name of the custom JVP rule running with this trace
    # current (set by ``ad.JVPTrace.process_custom_jvp_call``), recorded on
    # each equation for the error naming a non-linear rule.  A trace
    # attribute, not a context variable: CPython caches a context variable's
    # value only once it has been set, so reading one unset outside custom
    # rules cost a HAMT lookup per recorded equation, and setting it one per
    # custom rule call.
    __slots__ = ("builder", "forward_known", "label", "source")

    def __init__(self, parent, builder, forward_known=False, label="jit"):
        super().__init__(parent)
        self.builder = builder
        self.forward_known = forward_known
        self.label = label
        self.source = None

    def describe(self):
        if self.forward_known:
            return "linearization (partial evaluation)"
        return f"{self.label} of {self.builder.name}"

    def new_arg(self, aval):
        v = Var(aval)
        self.builder.invars.append(v)
        return JaxprTracer(self, v)

    def to_atom(self, x):
        t = type(x)
        if t is _ndarray:  # the common constant: a residual of linearization
            v = self.builder.const_ids.get(id(x))
            return v if v is not None else self.builder.const_var(x, _aval_of_ndarray(x))
        aval = _WEAK_SCALAR_AVALS.get(t)
        if aval is not None:  # a Python scalar
            return _scalar_literal(x, t, aval)
        if t is JaxprTracer and x._trace is self:
            return x.ir_var
        if isinstance(x, Tracer):
            v = self.builder.const_ids.get(id(x))
            if v is not None:
                return v
        x = self.plain_value(x)
        return x if type(x) is Literal else self.builder.const_var(x)

    def plain_value(self, x):
        """A value that is not one of this trace's tracers, as a program holds
        it: a ``Literal`` for a scalar, a plain ndarray, or a tracer of an
        active outer interpreter (checked here)."""
        if isinstance(x, Tracer):
            self.check_foreign(x)
            return x
        if isinstance(x, np.generic):
            return Literal(x, core.get_aval(x))
        if not isinstance(x, np.ndarray):
            x = core.as_array(x)
            if x.ndim == 0:
                return Literal(x[()], core.get_aval(x))
        elif type(x) is ArrayImpl:  # an eager result: programs hold plain ndarrays
            x = x.view(_ndarray)
        return x

    def process_primitive(self, prim, args, params):
        if self.forward_known:
            for x in args:
                if type(x) is JaxprTracer and x._trace is self:
                    break
            else:
                return self.parent.process_primitive(prim, args, params)
            rule = custom_partial_eval_rules.get(prim)
            if rule is not None:
                return rule(self, args, params)
        elif _compile_time_eval_get() and not any(isinstance(x, Tracer) for x in args):
            return core.EVAL_TRACE.process_primitive(prim, args, params)
        return self.stage(prim, args, params)

    def is_known(self, x):
        """Whether ``x`` is known to this trace: not one of its own (staged) values."""
        return not (type(x) is JaxprTracer and x._trace is self)

    def process_known(self, prim, args, params):
        """Bind ``prim`` on known values with the parent interpreter (computed now)."""
        return self.parent.process_primitive(prim, args, params)

    # Custom rules: staging records the call with its primal program; the
    # rule's program is traced lazily, only when something differentiates it,
    # because a rule may call the function itself (see core.Trace).

    def _computes_now(self, args):
        """Whether a partial evaluator computes a call now, with its parent
        (all its inputs are known).  The hot path of eager ``grad``."""
        if not self.forward_known:  # staging: only under ensure_compile_time_eval
            return _compile_time_eval_get() and not any(isinstance(x, Tracer) for x in args)
        for x in args:
            if type(x) is JaxprTracer and x._trace is self:
                return False
        return True

    def _in_parent(self, process, prim, args, params):
        """A custom call that ``_computes_now``: ``process`` (the parent's
        ``process_custom_*_call``) with the parent as the current trace."""
        return _run_in(self.parent, process, prim, args, params)

    def _inline_unknown(self, params, args):
        """A custom call with unknown inputs under partial evaluation: its
        inputs are tangents (partial evaluation builds linear programs), so the
        rules are no longer needed and the function's body is recorded, where
        transposition sees its linear operations (as in JAX)."""
        return [o if type(o) is _ndarray or isinstance(o, Tracer) else np.asarray(o)
                for o in params["fun"](*args)]

    def process_custom_jvp_call(self, prim, args, params):
        if self._computes_now(args):
            return self._in_parent(self.parent.process_custom_jvp_call, prim, args, params)
        if self.forward_known and not params.get("linear_map"):
            # (a linear map with a custom transpose, linear_call's, is recorded instead)
            return self._inline_unknown(params, args)
        avals = [core.get_aval(a) for a in args]
        name = params["name"]
        call_jaxpr, consts = trace_to_program(params["fun"], avals, name, "custom_jvp")
        call_jaxpr = weak_inputs_explicit[0](call_jaxpr)
        nc_new = len(consts)
        nd = params["num_consts"] + params["num_nondiff"]
        lazy = LazyRuleProgram(params["jvp"], consts, avals, name, "custom_jvp")
        diff_avals = avals[nd:]
        what = f"Custom JVP rule {params['rule_name']}"

        def staged_jvp(*xs):
            n = nc_new + len(avals)
            primals, tangents = xs[:n], xs[n:]
            nonzero = tuple([type(t) is not core.Zero for t in tangents])

            def wrap(rule, tracers):
                ins = tracers[:len(avals)]
                tans = iter(tracers[len(avals):])
                tan_args = [next(tans) if nz else core.Zero(core.tangent_aval(a))
                            for nz, a in zip(nonzero, diff_avals)]
                outs = rule(*ins, *tan_args)
                k = len(outs) // 2
                check_primal_outs(what, name, call_jaxpr, outs[:k])
                out_zero = tuple([type(t) is core.Zero for t in outs[k:]])
                return list(outs[:k]) + [t for t in outs[k:] if type(t) is not core.Zero], out_zero

            extra = [core.tangent_aval(a) for nz, a in zip(nonzero, diff_avals) if nz]
            jaxpr, hoisted, out_zero = lazy.program(extra, nonzero, wrap)
            nz_tans = [t for t in tangents if type(t) is not core.Zero]
            res = core.eval_jaxpr(jaxpr, (), *hoisted, *primals, *nz_tans)
            k = len(out_zero)
            prim_out, tan_it = res[:k], iter(res[k:])
            return list(prim_out) + [core.Zero.from_primal(p) if z else next(tan_it)
                                     for p, z in zip(prim_out, out_zero)]

        _keyed(staged_jvp, params["jvp"], avals)
        new = dict(params, fun=_program_fun(call_jaxpr), jvp=staged_jvp,
                   num_consts=nc_new + params["num_consts"], call_jaxpr=call_jaxpr)
        return self.stage(prim, list(consts) + list(args), new)

    def process_custom_vjp_call(self, prim, args, params):
        if self._computes_now(args):
            return self._in_parent(self.parent.process_custom_vjp_call, prim, args, params)
        if self.forward_known:
            return self._inline_unknown(params, args)
        avals = [core.get_aval(a) for a in args]
        name = params["name"]
        call_jaxpr, consts = trace_to_program(params["fun"], avals, name, "custom_vjp")
        call_jaxpr = weak_inputs_explicit[0](call_jaxpr)
        lazy = LazyRuleProgram(params["fwd"], consts, avals, name, "custom_vjp")
        what = f"Custom VJP fwd rule {params['rule_name']}"

        def staged_fwd(perturbed, *xs):
            def wrap(fwd, tracers):
                outs, res, res_tree = fwd(perturbed, *tracers)
                check_primal_outs(what, name, call_jaxpr, outs)
                return list(outs) + list(res), (len(outs), res_tree)

            jaxpr, hoisted, (n_out, res_tree) = lazy.program([], perturbed, wrap)
            flat = core.eval_jaxpr(jaxpr, (), *hoisted, *xs)
            return flat[:n_out], flat[n_out:], res_tree

        _keyed(staged_fwd, params["fwd"], avals)
        new = dict(params, fun=_program_fun(call_jaxpr), fwd=staged_fwd,
                   num_consts=len(consts) + params["num_consts"], call_jaxpr=call_jaxpr)
        return self.stage(prim, list(consts) + list(args), new)

    def process_custom_vmap_call(self, prim, args, params):
        if self._computes_now(args):
            return self._in_parent(self.parent.process_custom_vmap_call, prim, args, params)
        if self.forward_known:
            raise ValueError(
                "Linearization failed to produce known values for all output primals. This is "
                "typically caused by attempting to differentiate a function uses an operation "
                "that does not support reverse-mode autodiff. (The custom_vmap function "
                f"{params['name']} has inputs that depend on the differentiated values: a "
                "custom batching rule has no reverse-mode derivative, as in JAX. Use forward "
                "mode (jvp, jacfwd), or give the function a custom_vjp.)")
        return self.stage(prim, args, params)

    def stage(self, prim, args, params):
        # The hot path of eager ``grad`` (every tangent operation is staged
        # here): one pass over the arguments, no intermediate lists.
        builder = self.builder
        const_ids = builder.const_ids
        inputs = []
        in_avals = []
        for x in args:
            t = type(x)
            if t is JaxprTracer and x._trace is self:
                a = x.ir_var
            elif t is _ndarray:  # a residual of linearization, most often
                a = const_ids.get(id(x))
                if a is None:
                    a = builder.const_var(x, _aval_of_ndarray(x))
            elif t is ArrayImpl:  # a value of user code (a custom rule): held plain
                a = builder.const_var(x.view(_ndarray), _aval_of_ndarray(x))
            else:
                a = self.to_atom(x)
            inputs.append(a)
            in_avals.append(a.aval)
        out_aval = prim.abstract_eval(*in_avals, **params)
        # As in NumPy, only Python scalars are weakly typed: results are strong.
        if prim.multiple_results:
            outvars = [Var(a.strip_weak()) for a in out_aval]
            builder.eqns.append(_Eqn(prim, inputs, outvars, params, self.source))
            return [JaxprTracer(self, v) for v in outvars]
        v = Var(out_aval.strip_weak() if out_aval.weak_type else out_aval)
        builder.eqns.append(_Eqn(prim, inputs, [v], params, self.source))
        return JaxprTracer(self, v)

    def concrete_value(self, tracer, context):
        if self.forward_known:
            raise core.concretization_error(
                tracer, context,
                "It is a tangent or cotangent inside a linearization, which has no concrete value.")
        deps = self._input_dependencies(tracer.ir_var)
        reason = f"The value is traced by {self.describe()}"
        if deps:
            reason += f" and depends on {', '.join(deps)}, whose value is unknown during tracing."
        else:
            reason += "."
        raise core.concretization_error(tracer, context, reason)

    def _input_dependencies(self, var):
        """Names of the traced arguments that ``var`` depends on."""
        producer = {}
        for e in self.builder.eqns:
            for o in e.outputs:
                producer[o] = e
        seen, stack, found = set(), [var], set()
        inputs = {v: i for i, v in enumerate(self.builder.invars)}
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in inputs:
                found.add(inputs[v])
            e = producer.get(v)
            if e is not None:
                stack.extend(a for a in e.inputs if type(a) is Var)
        names = self.builder.arg_names
        out = []
        for i in sorted(found):
            out.append(names[i] if names and i < len(names) else f"argument {i}")
        return out


def trace_to_jaxpr(fun, in_avals, name="fun", label="jit", arg_names=None):
    """Stage ``fun`` (taking flat arrays, returning a flat list) into a program.

    Returns ``(jaxpr, consts)``; ``consts`` may include tracers of outer
    interpreters (closed-over values), which callers pass as inputs.

    Every staging trace goes through here (``jit``, loop and branch bodies,
    custom rules' programs, ``vmap``/``jvp``/``transpose`` of programs), and
    runs with the objects that existed before it kept off the cyclic
    collector (``_gc.quiet_gc``, ~1 us; nested traces share one period): a
    large trace allocates enough to trigger full collections, each walking
    every object of the process (0.45 s of an eager ``hessian`` of an odeint
    loss's 1.9 s).
    """
    builder = JaxprBuilder(name, arg_names)
    trace = JaxprTrace(core.current_trace(), builder, forward_known=False, label=label)
    in_tracers = [trace.new_arg(a) for a in in_avals]
    try:
        with _quiet_gc():
            with set_trace(trace):
                outs = fun(*in_tracers)
            jaxpr, consts = builder.build(in_tracers, outs, trace)
    finally:
        trace.alive = False
    return jaxpr, consts


def trace_to_program(fun, in_avals, name="fun", label="jit", arg_names=None):
    """Stage ``fun`` into a program to be carried by a primitive.

    Returns ``(program, consts)``: the program has no constvars; its first
    ``len(consts)`` inputs are the constants ``fun`` closed over (concrete
    arrays and values of outer interpreters alike), which the binder passes
    as the primitive's leading operands.  This is the one way programs carried
    by primitives hold constants, so a program never embeds a value: caches
    keyed on a program (or its text) cannot hand back stale values.
    """
    jaxpr, consts = trace_to_jaxpr(fun, in_avals, name=name, label=label, arg_names=arg_names)
    return convert_constvars_to_invars(jaxpr), consts


def memoize_program(memo, jaxpr, key, result):
    """Store ``result = (program, consts, ...)``, transformed from ``jaxpr``, in
    ``memo`` (a ``core.ProgramMemo``) under ``key`` unless its consts include
    tracers (values of an enclosing transformation, specific to this call);
    concrete consts are derived from the transformed program itself, so they
    are kept with it.  Returns ``result``."""
    if not any(isinstance(c, Tracer) for c in result[1]):
        memo.set(jaxpr, result, key)
    return result


def check_primal_outs(rule, name, call_jaxpr, outs):
    """A custom rule's primal outputs must have the types of the function's."""
    want = [v.aval for v in call_jaxpr.outvars]
    got = [core.get_aval(o) for o in outs]
    if len(want) != len(got) or any(a.shape != b.shape or a.dtype != b.dtype
                                    for a, b in zip(want, got)):
        types = [", ".join(map(jax_type, avals)) for avals in (got, want)]
        if rule.startswith("Custom JVP"):  # JAX's wording, then ours
            equal = (f"(equal in value to the output of the custom_jvp-decorated function {name}, "
                     "and in particular with leaves of the same shape/dtype)")
            kind = "custom_jvp"
        else:
            equal = (f"(equal to the output of the custom_vjp-decorated function {name}) and the "
                     "second element represents residuals (i.e. values stored from the forward "
                     "pass for use on the backward pass)")
            kind = "custom_vjp"
        raise TypeError(
            f"{rule} for function {name} must produce a pair (list or tuple of length two) where "
            f"the first element represents the primal output {equal}, but instead the "
            f"{'JVP' if kind == 'custom_jvp' else 'fwd'} rule output's first element had "
            f"shapes/dtypes of:\n    {types[0]}\nwhile the {kind}-decorated function {name} had "
            f"output shapes/dtypes of:\n    {types[1]}\n(the primal outputs must have the "
            f"function's shapes and dtypes: expected {[a.str_short() for a in want]}, got "
            f"{[a.str_short() for a in got]})")


def _keyed(staged, rule, avals):
    """Record what a staged rule wraps, for a stable identity of it
    (``custom_derivatives.rule_key``): the user's rule at these input types."""
    staged.rule_of = ("staged", rule, tuple(avals))


def _program_fun(jaxpr):
    """``jaxpr`` as a function, identified by the program it runs (which the
    staged call also carries as ``call_jaxpr``)."""
    fun = core.jaxpr_as_fun(jaxpr)
    fun.rule_of = ("program",)
    return fun


class LazyRuleProgram:
    """Traces a staged custom call's rule to a program on first use, per zero pattern.

    The closed-over values of the primal function (which became leading
    inputs of the staged call) are mapped by identity to the program's
    leading inputs, so a rule that closes over the same values works after
    the staging trace has ended.
    """

    __slots__ = ("rule", "consts", "in_avals", "name", "kind", "memo")

    def __init__(self, rule, consts, in_avals, name, kind):
        self.rule = rule
        self.consts = consts
        self.in_avals = in_avals
        self.name = name
        self.kind = kind
        self.memo = {}

    def program(self, extra_avals, key, wrap):
        """``(program, hoisted, info)`` for ``wrap(rule, in_tracers) -> (outs, info)``."""
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        consts = self.consts
        builder = JaxprBuilder(f"{self.kind} rule of {self.name}")
        trace = JaxprTrace(core.current_trace(), builder, label=self.kind)
        const_tracers = [trace.new_arg(core.get_aval(c)) for c in consts]
        for c, t in zip(consts, const_tracers):
            builder.const_ids[id(c)] = t.ir_var
        in_tracers = [trace.new_arg(a) for a in list(self.in_avals) + list(extra_avals)]
        try:
            with set_trace(trace):
                outs, info = wrap(self.rule, in_tracers)
            jaxpr, jconsts = builder.build(const_tracers + in_tracers, outs, trace)
        finally:
            trace.alive = False
        # Values only the rule closes over become leading inputs ("hoisted");
        # a program hoisting traced values is specific to this call.
        result = (convert_constvars_to_invars(jaxpr), jconsts, info)
        if not any(isinstance(c, Tracer) for c in jconsts):   # (as memoize_program)
            self.memo[key] = result
        return result


def convert_constvars_to_invars(jaxpr):
    return core.Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.eqns, jaxpr.outvars)


class PartialEval(NamedTuple):
    """A program split by ``partial_eval_jaxpr`` into a known and an unknown part.

    ``known`` maps ``(*known_consts, *known inputs)`` to the known outputs
    followed by ``num_res`` residuals; ``unknown`` maps the residuals followed
    by the unknown inputs to the unknown outputs.  ``res_forward[j]`` is the
    index among ``known``'s inputs (consts first) of the input that residual j
    simply is, or None.
    """
    known: core.Jaxpr
    known_consts: list
    unknown: core.Jaxpr
    out_unknowns: list
    num_res: int
    res_forward: list


def partial_eval_jaxpr(jaxpr, in_unknowns, instantiate=None):
    """Split a program (without constvars) into a known and an unknown part
    (a ``PartialEval``); ``instantiate[i]`` forces output i to be unknown."""
    in_unknowns = tuple(bool(u) for u in in_unknowns)
    instantiate = tuple(bool(i) for i in instantiate) if instantiate is not None else None
    key = (in_unknowns, instantiate)
    hit = _PARTIAL_EVAL.get(jaxpr, key)
    if hit is not None:
        return hit
    assert not jaxpr.constvars
    known_avals = [v.aval for v, u in zip(jaxpr.invars, in_unknowns) if not u]
    unknown_avals = [v.aval for v, u in zip(jaxpr.invars, in_unknowns) if u]
    result = {}

    def known_fun(*known_args):
        ubuilder = JaxprBuilder("unknown")
        pe = JaxprTrace(core.current_trace(), ubuilder, forward_known=True)
        try:
            ktr = iter(known_args)
            u_tracers = [pe.new_arg(a) for a in unknown_avals]
            utr = iter(u_tracers)
            args = [next(utr) if u else next(ktr) for u in in_unknowns]
            with set_trace(pe):
                outs = core.eval_jaxpr(jaxpr, (), *args)
            out_unknowns = [(type(o) is JaxprTracer and o._trace is pe)
                            or bool(instantiate and instantiate[i]) for i, o in enumerate(outs)]
            unknown_outs = [o for o, u in zip(outs, out_unknowns) if u]
            ujaxpr, residuals = ubuilder.build(u_tracers, unknown_outs, pe)
        finally:
            pe.alive = False
        result["known_args"] = known_args
        result["residuals"] = residuals
        result["unknown"] = convert_constvars_to_invars(ujaxpr)
        result["out_unknowns"] = out_unknowns
        known_outs = [o for o, u in zip(outs, out_unknowns) if not u]
        return known_outs + list(residuals)

    known, kconsts = trace_to_program(known_fun, known_avals, name="known")
    # A residual that is a known input, or a constant (made while tracing), is
    # forwarded: its index among the known program's inputs.
    ids = {id(a): j for j, a in enumerate(list(kconsts) + list(result["known_args"]))}
    residuals = result["residuals"]
    out = PartialEval(known, list(kconsts), result["unknown"], result["out_unknowns"],
                      len(residuals), [ids.get(id(r)) for r in residuals])
    return memoize_program(_PARTIAL_EVAL, jaxpr, key, out)


_PARTIAL_EVAL = core.ProgramMemo("partial_eval_jaxpr: the split per unknown inputs")


# ---------------------------------------------------------------------------
# JAX's partial-evaluation API (``jax.interpreters.partial_eval``), which flax calls
# (``lazy_init``, the broadcast variables of ``nn.scan``): made with the partial
# evaluator above, the one ``linearize`` uses: operations on known values are computed
# now, those touching an unknown one are recorded.


class PartialVal(NamedTuple):
    """A value known (``PartialVal.known(x)``: ``(None, x)``) or only by its type
    (``PartialVal.unknown(aval)``: ``(aval, None)``), as JAX's."""

    pv: Any
    const: Any

    @classmethod
    def known(cls, const: Any) -> PartialVal:
        return cls(None, const)

    @classmethod
    def unknown(cls, aval: Any) -> PartialVal:
        return cls(aval, None)

    def is_known(self) -> bool:
        return self.pv is None

    def get_known(self) -> Any:
        return self.const if self.pv is None else None

    def get_aval(self) -> Any:
        return core.get_aval(self.const) if self.pv is None else self.pv


def trace_to_jaxpr_nounits(fun: Any, pvals: Sequence[PartialVal], instantiate: Any = False
                           ) -> tuple[core.Jaxpr, list[PartialVal], list[Any]]:
    """Run ``fun`` (a ``WrappedFun`` or a function of the flat values) with the known
    values of ``pvals`` and the unknown ones traced: ``(jaxpr, out_pvals, consts)``,
    the program of the unknown outputs (inputs: the unknown ``pvals``) and each
    output as a ``PartialVal`` (``instantiate``: a bool, or one per output, makes known
    outputs outputs of the program too), as JAX's."""
    call: Callable = getattr(fun, "call_wrapped", fun)
    builder = JaxprBuilder(getattr(fun, "__name__", "fun"))
    trace = JaxprTrace(core.current_trace(), builder, forward_known=True,
                           label="partial evaluation")
    in_tracers = [trace.new_arg(p.pv) for p in pvals if p.pv is not None]
    it = iter(in_tracers)
    args = [next(it) if p.pv is not None else p.const for p in pvals]
    try:
        with set_trace(trace):
            outs = list(call(*args))
        inst = (instantiate if isinstance(instantiate, (list, tuple))
                else [instantiate] * len(outs))
        unknown = [not trace.is_known(o) or bool(i) for o, i in zip(outs, inst)]
        jaxpr, consts = builder.build(in_tracers, [o for o, u in zip(outs, unknown) if u],
                                      trace)
    finally:
        trace.alive = False
    out_pvals = [PartialVal.unknown(core.get_aval(o) if trace.is_known(o) else o.aval)
                 if u else PartialVal.known(o) for o, u in zip(outs, unknown)]
    return jaxpr, out_pvals, consts
