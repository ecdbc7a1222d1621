"""Vectorization: the interpreter behind ``vmap``.

A ``BatchTracer`` holds an array with an extra batch dimension at ``bdim``
(``None`` means the value is the same for every batch element).  Each
primitive's batching rule maps batched inputs to a batched output.
"""
from __future__ import annotations

import contextvars

import functools

import numpy as np

from .. import core
from ..tree_util import register_leaf_type
from ..core import ShapedArray, Tracer, set_trace
from . import partial_eval as pe
from . import ad
from .ad import add_any_p
from .base_ops import broadcast_front, materialize, move_axis, move_to_front  # noqa: F401
from .base_ops import batch_size as _batch_size_of
from .base_ops import reduce_sum
from .base_ops import primitive_batchers   # the table of batching rules (made there, see it)

_trace_state = core.trace_state
_ROOT_STATE = core.ROOT_STATE
# ``(axis name, axis size)`` of the named vmap whose rule is running: batch_jaxpr
# names the batch axis of the programs it traces, and batch_size gives the size
# to a rule none of whose operands is batched (a program reading the axis).
_rule_axis = contextvars.ContextVar("tangentia_vmap_axis", default=None)


def batch_size(vals, dims):
    """The size of the batch axis of a rule's operands; when none is batched (a
    call whose program reads a named vmap axis), that vmap's axis size."""
    for v, d in zip(vals, dims):
        if d is not None:
            return core.get_aval(v).shape[d]
    axis = _rule_axis.get()
    if axis is not None:
        return axis[1]
    return _batch_size_of(vals, dims)   # its error


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace, val, bdim):
        self._trace = trace
        self.val = val
        self.bdim = bdim

    @property
    def aval(self):
        a = core.get_aval(self.val)
        d = self.bdim
        if d is None:
            return a
        return ShapedArray(a.shape[:d] + a.shape[d + 1:], a.dtype, a.weak_type)

    def __repr__(self):
        return f"BatchTracer(val={self.val!r}, bdim={self.bdim})"


register_leaf_type(BatchTracer)


_AXIS_NAMES = core.ProgramMemo("batching: the axis names a program is over")


def _axis_names(program):
    """The axis names the equations of ``program`` are over (collectives), at any
    depth (a call's, a loop's, a branch's program inside it): computed once per
    program and kept in this interpreter's memo."""
    names = _AXIS_NAMES.get(program)
    if names is None:
        found = set()
        for e in program.eqns:
            n = e.params.get("axis_name")
            if n is not None:
                found.update(n if isinstance(n, (tuple, list)) else (n,))
            for inner in core.subjaxprs(e.prim, e.params):
                found.update(_axis_names(inner))
        names = _AXIS_NAMES.set(program, frozenset(found))
    return names


def _reads_axis(prim, params, name):
    """Whether a program an equation of ``prim`` carries has an equation over the
    named axis ``name``."""
    for program in core.subjaxprs(prim, params):
        if name in _axis_names(program):
            return True
    return False


class BatchTrace(core.Trace):
    """Batching interpreter.  Tracers are recognized by ``tag``: a sub-trace
    made for a custom rule shares its parent's tag, so values the custom
    function closes over are still seen as batched."""

    __slots__ = ("axis_size", "axis_name", "tag")

    def __init__(self, parent, axis_size, axis_name=None, tag=None):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = axis_name
        self.tag = tag if tag is not None else object()

    def describe(self):
        return "vmap"

    def process_primitive(self, prim, args, params):
        if self.axis_name is not None and params.get("axis_name") == self.axis_name:
            return self._process_collective(prim, args, params)
        vals = []
        dims = []
        batched = False
        tag = self.tag
        for x in args:
            if type(x) is BatchTracer and x._trace.tag is tag:
                vals.append(x.val)
                dims.append(x.bdim)
                batched = True
            else:
                if isinstance(x, Tracer):
                    self.check_foreign(x)
                vals.append(x)
                dims.append(None)
        if not batched and (self.axis_name is None or not _reads_axis(prim, params, self.axis_name)):
            # Nothing of ours: the parent handles it (it sets its own context for
            # any rule it runs).
            return self.parent.process_primitive(prim, args, params)
        # Otherwise batched operands, or a call, loop or branch whose program uses
        # this trace's named axis (``lax.axis_index('i')`` in a jit or loop body,
        # with or without operands): its rule batches the program, whose
        # collectives make the outputs batched (JAX's named-axis effect); with no
        # batched operand the rule gets the axis size from ``batch_size``.
        rule = primitive_batchers.get(prim)
        if rule is None:
            raise NotImplementedError(f"batching rule for '{prim.name}' not implemented")
        # The rule runs with the parent current: switched in place on this
        # context's ``core.TraceState`` (not the shared root one, see ``core.run_in``).
        state = _trace_state()
        if state is _ROOT_STATE:
            with set_trace(self):
                return self.process_primitive(prim, args, params)
        old = state.trace
        state.trace = self.parent
        # Programs a rule batches (jit, loops) see this trace's axis name too.
        named = _rule_axis.set((self.axis_name, self.axis_size)) \
            if self.axis_name is not None else None
        try:
            out, out_dim = rule(vals, dims, **params)
        finally:
            state.trace = old
            if named is not None:
                _rule_axis.reset(named)
        if prim.multiple_results:
            return [o if d is None else BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return out if out_dim is None else BatchTracer(self, out, out_dim)

    def _process_collective(self, prim, args, params):
        """A collective over this trace's named axis (``lax.psum(x, name)``): its
        batch rule gets ``axis_size`` and reduces over the batch axis, even when
        nothing is batched; other names pass through the ordinary path."""
        vals, dims = zip(*[self.unpack(x) for x in args]) if args else ((), ())
        with set_trace(self.parent):
            out, out_dim = primitive_batchers[prim](list(vals), list(dims),
                                                    axis_size=self.axis_size, **params)
        return out if out_dim is None else BatchTracer(self, out, out_dim)

    def concrete_value(self, tracer, context):
        raise core.concretization_error(
            tracer, context,
            "It is batched by vmap, so it stands for many values at once; a Python "
            "branch can only take one of them.")

    def unpack(self, x):
        if type(x) is BatchTracer and x._trace.tag is self.tag:
            return x.val, x.bdim
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, None

    # Custom rules: vmap maps the function and the rules (see core.Trace),
    # ``vmap(custom_jvp_call(f, jvp)) == custom_jvp_call(vmap(f), vmap(jvp))``.
    # There is no shortcut when nothing is batched: the function may close over
    # batched values, which the sub-traces (sharing this trace's tag) see.

    def _forward_custom_call(self, prim, vals, params, out_dims=None):
        """Bind with the parent; ``out_dims`` (filled by the rule that ran) says
        which outputs are batched (in front), None: all of them."""
        with set_trace(self.parent):
            outs = prim.bind(*vals, **params)  # the parent's process_custom_*_call
        if not out_dims:
            return [BatchTracer(self, o, 0) for o in outs]
        return [o if d is None else BatchTracer(self, o, 0) for o, d in zip(outs, out_dims)]

    def process_custom_jvp_call(self, prim, args, params):
        vals, dims = zip(*[self.unpack(x) for x in args]) if args else ((), ())
        size, tag, name = self.axis_size, self.tag, self.axis_name
        fun, jvp = params["fun"], params["jvp"]
        first_diff = params["num_consts"] + params["num_nondiff"]
        # Which outputs are batched, as the first rule to run (the function, or the JVP
        # rule for primal and tangent together) finds: an output that depends on no
        # batched value stays unbatched (a custom_jvp of a parameter inside vmap, as in
        # JAX); a rule run later (a staged call's JVP) follows it.
        out_dims = []

        def batched_fun(*xs):
            pairs = _run_batched(fun, xs, dims, size, tag, name)
            if not out_dims:
                out_dims.extend([None if d is None else 0 for _, d in pairs])
            return _conform(pairs, out_dims, size, _jvp_rule_batched_error(params["name"]))

        def batched_jvp(*xs):
            n = len(dims)
            primals, tangents = list(xs[:n]), list(xs[n:])
            tdims = list(dims[first_diff:])
            for i, t in enumerate(tangents):
                if type(t) is core.Zero:  # unbatched, of the per-example type
                    d = tdims[i]
                    if d is not None:
                        s = t.aval.shape
                        tangents[i] = core.Zero(ShapedArray(s[:d] + s[d + 1:], t.aval.dtype))
                    tdims[i] = None
            pairs = _run_keeping_zeros(jvp, primals + tangents, list(dims) + tdims, size, tag,
                                       name)
            k = len(pairs) // 2
            if not out_dims:
                out_dims.extend([None if dp is None and dt is None else 0
                                 for (_, dp), (_, dt) in zip(pairs[:k], pairs[k:])])
            error = _jvp_rule_batched_error(params["name"])
            outs = _conform(pairs[:k], out_dims, size, error)
            tans = _conform([(p, 0 if d == 0 else None) if v is None else (v, dt)
                             for p, d, (v, dt) in zip(outs, out_dims, pairs[k:])],
                            out_dims, size, error)
            return outs + [core.Zero.from_primal(p) if v is None else t
                           for p, t, (v, _) in zip(outs, tans, pairs[k:])]

        return self._forward_custom_call(
            prim, vals, dict(params, fun=batched_fun, jvp=batched_jvp, call_jaxpr=None), out_dims)

    def process_custom_vjp_call(self, prim, args, params):
        vals, dims = zip(*[self.unpack(x) for x in args]) if args else ((), ())
        size, tag, name = self.axis_size, self.tag, self.axis_name
        fun, fwd, bwd = params["fun"], params["fwd"], params["bwd"]
        diff_dims = dims[params["num_consts"]:]
        diff_vals = vals[params["num_consts"]:]

        def batched_fun(*xs):
            return vmap_flat(fun, xs, dims, size, _all_zero, tag=tag, axis_name=name)

        def batched_fwd(perturbed, *xs):
            info = {}

            def f(*ys):
                outs, res, res_tree = fwd(perturbed, *ys)
                info["n"], info["res_tree"] = len(outs), res_tree
                return list(outs) + list(res)
            flat = vmap_flat(f, xs, dims, size, _all_zero, tag=tag, axis_name=name)
            n = info["n"]
            return flat[:n], flat[n:], info["res_tree"]

        def batched_bwd(res_tree, *res_and_cts):
            # Zero cotangents stay symbolic: unbatched, of the per-example type.
            rc = [core.Zero(ShapedArray(c.aval.shape[1:], c.aval.dtype))
                  if type(c) is core.Zero else c for c in res_and_cts]
            cts = _vmap_keeping_zeros(functools.partial(bwd, res_tree), rc,
                                      [None if type(c) is core.Zero else 0 for c in rc], size, tag,
                                      name)
            return [core.Zero.from_primal(v) if c is None
                    else reduce_sum(c, (0,)) if d is None else move_axis(c, 0, d)
                    for c, d, v in zip(cts, diff_dims, diff_vals)]

        return self._forward_custom_call(
            prim, vals, dict(params, fun=batched_fun, fwd=batched_fwd, bwd=batched_bwd,
                             call_jaxpr=None))


    def process_custom_vmap_call(self, prim, args, params):
        # The rule replaces batching the function (see core.Trace); batched
        # arguments reach it with their batch axis first.
        vals, dims = zip(*[self.unpack(x) for x in args]) if args else ((), ())
        with set_trace(self.parent):
            if all(d is None for d in dims):
                return self.parent.process_custom_vmap_call(prim, list(vals), params)
            nc = params["num_consts"]
            if any(d is not None for d in dims[:nc]):
                raise _batched_closure_error(params["name"])
            xs = [move_to_front(v, d) for v, d in zip(vals[nc:], dims[nc:])]
            outs, out_batched = params["rule"](self.axis_size,
                                                [d is not None for d in dims[nc:]], *xs)
        return [BatchTracer(self, o, 0) if b else o for o, b in zip(outs, out_batched)]


def _batched_closure_error(name):
    return ValueError(
        f"custom_vmap function {name} closes over a value that vmap batches (or whose tangent "
        "it batches, as under jacfwd), but its batching rule only sees the function's "
        "arguments. Pass the value to the function as an argument.")


def _all_zero(n):
    return [0] * n


def _run_keeping_zeros(fun, args, in_dims, axis_size, tag, axis_name=None):
    """``_run_batched(fun, ...)`` for a custom rule whose inputs and outputs may be
    ``Zero``: a zero input is passed as it is (with ``in_dims`` None), a zero
    output comes back as ``(None, None)``."""
    zero = []

    def f(*xs):
        outs = fun(*xs)
        zero[:] = [type(o) is core.Zero for o in outs]
        return [o for o in outs if type(o) is not core.Zero]

    it = iter(_run_batched(f, args, in_dims, axis_size, tag, axis_name))
    return [(None, None) if z else next(it) for z in zero]


def _vmap_keeping_zeros(fun, args, in_dims, axis_size, tag, axis_name=None):
    """``vmap_flat(fun, ...)`` (every output batched in front) for a custom rule
    whose inputs and outputs may be ``Zero``; a zero output comes back as None."""
    pairs = _run_keeping_zeros(fun, args, in_dims, axis_size, tag, axis_name)
    return [None if v is None else _conform([(v, d)], [0], axis_size, None)[0]
            for v, d in pairs]


def _instantiate(t):
    return np.zeros(t.aval.shape, t.aval.dtype) if type(t) is core.Zero else t


# ---------------------------------------------------------------------------
# Helpers for batching rules (they run under the parent interpreter); they are
# defined with the primitives they bind, in ``base_ops``.


def _add_any_batch(args, dims):
    # The batching rule of ``ad.add_any`` (it needs transpose and broadcast_to,
    # which are defined above ``ad``).
    x, y = args
    dx, dy = dims
    if dx == dy:
        return add_any_p.bind(x, y), dx
    size = batch_size(args, dims)
    return add_any_p.bind(materialize(x, dx, size), materialize(y, dy, size)), 0


primitive_batchers[add_any_p] = _add_any_batch


def vmap_flat(fun, args, in_dims, axis_size, out_dims_fn, tag=None, axis_name=None,
              out_path=None):
    """Run ``fun`` (flat in/out) batched.  ``out_dims_fn(n)`` gives the output
    axes for ``n`` outputs; ``axis_name`` names the batch axis for collectives;
    ``out_path(i)``, the key path of flat output ``i`` in the outputs' tree (JAX's
    error names it).  Returns the flat outputs."""
    pairs = _run_batched(fun, args, in_dims, axis_size, tag, axis_name)
    return _conform(pairs, out_dims_fn(len(pairs)), axis_size, lambda i, d: ValueError(
        f"at vmap out_axes{out_path(i) if out_path else ''}, got axis spec None but output "
        f"was batched on axis {d} (flat output {i}: out_axes=None requires the output not "
        "to depend on the mapped inputs)"))


def _conform(pairs, targets, axis_size, unbatched_error):
    """The values of ``pairs`` ``(value, batch axis or None)`` with their batch axis
    at ``targets`` (an unbatched value is broadcast; None: the value must be
    unbatched, else ``unbatched_error(i, axis)`` is raised)."""
    result = []
    for i, ((v, d), od) in enumerate(zip(pairs, targets)):
        if od is None:
            if d is not None:
                raise unbatched_error(i, d)
            result.append(_check_output(v))
            continue
        if d is None:
            v = broadcast_front(_check_output(v), axis_size)
            d = 0
        nd = core.get_aval(v).ndim
        if not -nd <= od < nd:
            raise ValueError(
                f"axis {od} is out of bounds for array of dimension {nd} (vmap out_axes={od} for "
                f"an output of rank {nd - 1}; out_axes must be in [{-nd}, {nd}))")
        if od < 0:
            od += nd
        result.append(move_axis(v, d, od))
    return result


def _check_output(v):
    """``v``, an unbatched output of a batched function, if it is an array (JAX's error if not)."""
    if not core.is_array_like(v):
        try:
            core.get_aval(v)
        except TypeError:
            raise TypeError(f"Output from batched function {v!r:.80} with type {type(v)} is not a "
                            "valid JAX type") from None
    return v


def _jvp_rule_batched_error(name):
    return lambda i, d: ValueError(
        f"custom_jvp function {name} under vmap: output {i} of its JVP rule depends on the "
        "batched inputs, but the function's output does not (the rule must give the "
        "function's value; its tangent may not depend on what the value does not depend on)")


def _run_batched(fun, args, in_dims, axis_size, tag=None, axis_name=None):
    """``fun`` (flat in/out) run batched: its outputs as ``(value, batch axis or None)``."""
    trace = BatchTrace(core.current_trace(), axis_size, axis_name=axis_name, tag=tag)
    ins = [a if d is None else BatchTracer(trace, a, d) for a, d in zip(args, in_dims)]
    try:
        with set_trace(trace):
            outs = fun(*ins)
        return [trace.unpack(o) for o in outs]
    finally:
        trace.alive = False


def _batched_in_avals(jaxpr, in_dims, axis_size):
    """The program's input types with a batch axis of ``axis_size`` inserted."""
    out = []
    for v, d in zip(jaxpr.invars, in_dims):
        a = v.aval
        if d is not None:
            a = ShapedArray(a.shape[:d] + (axis_size,) + a.shape[d:], a.dtype, a.weak_type)
        out.append(a)
    return out


def batch_jaxpr(jaxpr, in_dims, axis_size, out_batched=None):
    """A program computing the batched outputs (batch axis 0 on every output, or,
    given ``out_batched`` (a tuple of bools), on those where it is true; the others
    must not depend on the batched inputs).

    Returns ``(program, hoisted)`` (see ``partial_eval.trace_to_program``)."""
    axis = _rule_axis.get()
    name = None if axis is None else axis[0]
    key = (tuple(in_dims), axis_size) + ((name,) if name is not None else ())
    if out_batched is not None:
        key += (tuple(out_batched),)
    hit = _BATCHED.get(jaxpr, key)
    if hit is not None:
        return hit
    in_avals = _batched_in_avals(jaxpr, in_dims, axis_size)
    out_dims = (lambda n: [0] * n) if out_batched is None else (
        lambda n: [0 if b else None for b in out_batched])

    def fun(*args):
        return vmap_flat(lambda *xs: core.eval_jaxpr(jaxpr, (), *xs), args, in_dims, axis_size,
                         out_dims, axis_name=name)

    return pe.memoize_program(_BATCHED, jaxpr, key,
                              pe.trace_to_program(fun, in_avals, name="vmap"))


_BATCHED = core.ProgramMemo("batch_jaxpr: batched programs")
_BATCHED_NATURAL = core.ProgramMemo("batch_jaxpr_natural: batched programs and their out_dims")


def batch_jaxpr_natural(jaxpr, in_dims, axis_size):
    """Like ``batch_jaxpr`` but unbatched outputs stay unbatched.

    Returns ``(program, hoisted, out_dims)`` with out_dims entries 0 or None.
    """
    axis = _rule_axis.get()
    name = None if axis is None else axis[0]
    key = (tuple(in_dims), axis_size) + ((name,) if name is not None else ())
    hit = _BATCHED_NATURAL.get(jaxpr, key)
    if hit is not None:
        return hit
    in_avals = _batched_in_avals(jaxpr, in_dims, axis_size)
    out_dims = []

    def fun(*args):
        pairs = _run_batched(lambda *xs: core.eval_jaxpr(jaxpr, (), *xs), args, in_dims,
                             axis_size, axis_name=name)
        out_dims[:] = [None if d is None else 0 for _, d in pairs]
        return [v if d is None else move_to_front(v, d) for v, d in pairs]

    new, hoisted = pe.trace_to_program(fun, in_avals, name="vmap")
    return pe.memoize_program(_BATCHED_NATURAL, jaxpr, key, (new, hoisted, list(out_dims)))


def _custom_lin_batch(args, dims, *, num_res, bwd, out_avals, name, forward=None):
    """A batched linear step is a linear step of the batched maps: ``bwd`` (and
    ``forward``) under vmap, so it stays transposable when its tangents are
    unknown (a custom_jvp rule batched inside a linearization)."""
    size = batch_size(args, dims)
    t_avals = [ad.tangent_aval(_unbatched_aval(x, d)) for x, d in zip(args[num_res:], dims[num_res:])]

    def batched_bwd(*res_and_cts):
        def one(*zs):
            return [_instantiate(a if c is None else c) for c, a in
                    zip(bwd(*zs), [core.Zero(a) for a in t_avals])]
        xs = [_instantiate(x) for x in res_and_cts]
        return vmap_flat(one, xs, [0] * len(xs), size, lambda n: [0] * n)

    def batched_forward(*xs):
        return vmap_flat(forward, xs, [0] * len(xs), size, lambda n: [0] * n)

    outs = ad.custom_lin_p.bind(
        *[materialize(x, d, size) for x, d in zip(args, dims)], num_res=num_res,
        bwd=batched_bwd, name=name, forward=None if forward is None else batched_forward,
        out_avals=tuple(ShapedArray((size,) + a.shape, a.dtype) for a in out_avals))
    return outs, [0] * len(outs)


def _unbatched_aval(x, d):
    a = core.get_aval(x)
    return a if d is None else ShapedArray(a.shape[:d] + a.shape[d + 1:], a.dtype)


primitive_batchers[ad.custom_lin_p] = _custom_lin_batch


def _custom_vmap_jvp_rule(rule, name, num_consts, nonzeros, axis_size, in_batched, *xs):
    """The batching rule of a custom_vmap call's JVP: the JVP of ``rule``, as in JAX.

    ``rule`` batches the arguments whose primal and tangent are both batched (its
    ``in_batched`` says which); a primal or a tangent batched without its partner
    is mapped by an ordinary vmap of the JVP of the rule's call, so that ``rule``
    sees such an argument unbatched and an output that nothing batched reaches
    stays unbatched (a tangent of a linear rule, under ``jacfwd``).  When both
    kinds occur in one call, each unbatched partner is broadcast instead (one
    batch axis for all)."""
    n = len(nonzeros)
    p_b = list(in_batched[:n])
    t_it = iter(zip(xs[n:], in_batched[n:]))
    primals, tangents, t_b = list(xs[:n]), [], []
    for nz in nonzeros:
        t, tb = next(t_it) if nz else (None, False)
        tangents.append(t)
        t_b.append(tb)
    if any(p_b[:num_consts]) or any(t_b[:num_consts]):
        raise _batched_closure_error(name)
    mutual = [pb and tb for pb, tb in zip(p_b, t_b)]
    extra = [pb != tb for pb, tb in zip(p_b, t_b)]
    if any(mutual) and any(extra):
        for i, (p, t) in enumerate(zip(primals, tangents)):
            if t_b[i] and not p_b[i]:
                primals[i] = broadcast_front(p, axis_size)
            elif p_b[i] and t is not None and not t_b[i]:
                tangents[i] = broadcast_front(t, axis_size)
        mutual = [pb or tb for pb, tb in zip(p_b, t_b)]
        p_b = t_b = [False] * n
    store = {}

    def jvp_of_call(*ps_ts):
        ps, it = ps_ts[:n], iter(ps_ts[n:])
        ts = [next(it) if nz else core.Zero.from_primal(p) for p, nz in zip(ps, nonzeros)]

        def call(*qs):
            outs, store["out_batched"] = rule(axis_size, mutual[num_consts:], *qs[num_consts:])
            return outs

        outs, out_tans = ad.jvp_flat(call, ps, ts)
        return list(outs) + [ad.instantiate(t) for t in out_tans]

    ins = primals + [t for t in tangents if t is not None]
    in_dims = [0 if pb and not tb else None for pb, tb in zip(p_b, t_b)] + [
        0 if tb and not pb else None for pb, tb, nz in zip(p_b, t_b, nonzeros) if nz]
    if any(d is not None for d in in_dims):
        pairs = _run_batched(jvp_of_call, ins, in_dims, axis_size)
    else:
        pairs = [(o, None) for o in jvp_of_call(*ins)]
    rule_b = list(store["out_batched"]) * 2  # the rule's flags, for primals and tangents
    outs = [v if d is None else move_to_front(v, d) for v, d in pairs]
    return outs, [rb or d is not None for rb, (_, d) in zip(rule_b, pairs)]


ad.custom_vmap_jvp_rule[0] = _custom_vmap_jvp_rule


class _AxisPrimitiveBatchers:
    """JAX's ``batching.axis_primitive_batchers[p] = rule(axis_size, axis_name, trace,
    args, dims, **params)`` (equinox registers its primitives' rules so): stored as an
    ordinary ``primitive_batchers`` rule, the axis size read from a batched operand."""

    def __setitem__(self, prim, rule):
        def batch(vals, dims, **params):
            size = next(np.shape(v)[d] for v, d in zip(vals, dims) if d is not None)
            return rule(size, None, None, vals, dims, **params)
        primitive_batchers[prim] = batch


axis_primitive_batchers = _AxisPrimitiveBatchers()
