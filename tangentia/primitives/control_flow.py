"""Structured control flow: ``cond`` (and ``switch``), ``while``, ``scan``.

Bodies are traced once to programs ("initial style") and carried as
parameters, so every interpreter can transform them again: JVP -> the JVP
of the bodies, vmap -> batched bodies, partial evaluation -> a known loop
that saves per-step residuals and an unknown (linear) loop, transposition
-> a reverse loop.  Custom-rule calls inside bodies are recorded with their
primal program and keep their rules.
"""
from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..compiler.backend import run_equation
from ..core import Jaxpr, Primitive, ShapedArray, Var
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero, is_undefined
from ..interpreters.call_rules import (  # noqa: F401  (split is re-exported for the backends)
    batch_programs, common_hoisted, jvp_outputs, jvp_programs, merge_outputs, scatter_linear,
    split, transpose_programs, unknowns)
from . import elementwise as E
from . import reductions as R
from . import structural as S


# The elementwise primitives (``elementwise.elementwise``'s, wherever defined): they promote
# their operands as NumPy's ufuncs do, so a weakly typed operand adapts to the others.
_ELEMENTWISE = frozenset(p for p in vars(E).values() if isinstance(p, core.Primitive))


def _is_elementwise(prim):
    return prim in _ELEMENTWISE or getattr(prim.abstract_eval, "__qualname__", "").startswith(
        "elementwise_abstract_eval.")


def strong_inputs(jaxpr, keep_inputs=False):
    """``jaxpr`` with strongly typed inputs, where an input was weakly typed.

    As in JAX, a loop body or a branch is traced with the carry's (or operands') weak
    types: ``c * x32`` with a carry ``c`` started at the Python scalar ``1.0`` is
    float32.  Such an equation relies on its operand being a Python scalar when the
    program runs, but a carry is an array from the second step on (NumPy multiplies a
    float64 array and a float32 as float64).  So each use whose type depends on the
    operand's weak type gets an explicit conversion to the promoted dtype (the one
    NumPy would give the Python scalar), and the inputs become strong: the program
    computes the same types whatever its inputs hold.  If an equation cannot be made
    explicit (no conversion gives its recorded types), the program is returned as is.

    With ``keep_inputs`` the inputs stay weakly typed (a ``jit`` program's Python-scalar
    arguments: the NumPy backend runs them as Python scalars), and only the conversions
    are made explicit, so that a backend computing ``x32 * s`` converts ``s`` to float32
    first, as JAX does (numba's float64 arithmetic rounded afterwards differed).
    """
    weak = {v for v in jaxpr.invars if v.aval.weak_type}
    if not weak:
        return jaxpr
    new = {v: v if keep_inputs else core.Var(v.aval.strip_weak()) for v in weak}
    eqns = []
    for eqn in jaxpr.eqns:
        if not any(type(a) is core.Var and a in weak for a in eqn.inputs):
            eqns.append(eqn)
            continue
        want = [(v.aval.shape, v.aval.dtype) for v in eqn.outputs]
        plain = [new.get(a, a) if type(a) is core.Var else a for a in eqn.inputs]
        target = None
        try:
            target = dtypes.result_type(*[(a.aval.dtype, a.aval.weak_type)
                                               for a in eqn.inputs])[0] \
                if _is_elementwise(eqn.prim) else (want[0][1] if len(want) == 1 else None)
        except TypeError:
            pass
        tries = [(plain, [])]
        if target is not None and any(type(a) is core.Var and a in weak and a.aval.dtype
                                      != target for a in eqn.inputs):
            converted, pre = [], []
            for a, b in zip(eqn.inputs, plain):
                if type(a) is core.Var and a in weak and a.aval.dtype != target:
                    c = core.Var(ShapedArray(a.aval.shape, target))
                    pre.append(core.Eqn(S.convert_element_type_p, [b], [c],
                                        {"new_dtype": target, "weak_type": False}, eqn.source))
                    b = c
                converted.append(b)
            # elementwise: the conversion first (a comparison's output type is bool
            # either way, but NumPy compares a Python scalar in the other's dtype)
            # (pow's integer exponent stays an integer where it can: its derivative at a
            # zero exponent is 0, where a float exponent's is 0 * 0**-1 at x == 0)
            y = eqn.inputs[-1]
            int_exponent = eqn.prim is E.pow_p and type(y) is core.Var and y in weak \
                and y.aval.dtype.kind in "iu"
            tries = [(converted, pre), (plain, [])] if _is_elementwise(eqn.prim) \
                and not int_exponent else [(plain, []), (converted, pre)]
        for ins, pre in tries:
            try:
                out = eqn.prim.abstract_eval(*[a.aval for a in ins], **eqn.params)
            except Exception:   # noqa: BLE001  (a rule refusing the dtype: not this try)
                continue
            out = list(out) if eqn.prim.multiple_results else [out]
            if [(o.shape, o.dtype) for o in out] == want:
                eqns.extend(pre)
                eqns.append(core.Eqn(eqn.prim, ins, eqn.outputs, eqn.params, eqn.source))
                break
        else:
            return jaxpr
    return core.Jaxpr(list(jaxpr.constvars), [new.get(v, v) for v in jaxpr.invars], eqns,
                      [new.get(v, v) if type(v) is core.Var else v for v in jaxpr.outvars])


pe.weak_inputs_explicit[0] = lambda jaxpr: strong_inputs(jaxpr, keep_inputs=True)


def _fresh(avals):
    return [Var(a) for a in avals]


def _trace(fun, avals, name):
    """Trace ``fun`` into a program taking ``avals`` and returning a list.

    Returns ``(program, hoisted)``: the constants ``fun`` closes over are the
    program's leading inputs (see ``partial_eval.trace_to_program``).
    """
    return pe.trace_to_program(fun, avals, name=name, label="control flow")


def _zeros_like(aval):
    return np.zeros(aval.shape, aval.dtype)


def _same_type(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


# ===========================================================================
# cond: outputs = branches[index](*operands)

cond_p = Primitive("cond", multiple_results=True, program_params=("branches",))


def _cond_program_types(params, in_avals, out_avals):
    """What the type checker holds each branch to: the operands in, the outputs out."""
    index = in_avals[0]
    if index.shape != () or index.dtype.kind not in "biu":
        raise core.JaxprTypeError(f"cond's index has type {index.str_short()}, not an "
                                  "integer scalar")
    return [(f"branch {k}", b, in_avals[1:], out_avals)
            for k, b in enumerate(core.subjaxprs(cond_p, params))]


cond_p.impl = lambda *args, **params: run_equation(cond_p, args, params)
cond_p.program_types = _cond_program_types
cond_p.abstract_eval = lambda index, *ops, branches: [v.aval for v in branches[0].outvars]
cond_p.print_params = lambda params: {f"branch{i}": b for i, b in enumerate(params["branches"])}


def _cond_jvp(primals, tangents, branches):
    index, ops = primals[0], primals[1:]
    new, hoisted, tans = jvp_programs(branches, tangents[1:])
    outs = cond_p.bind(index, *hoisted, *ops, *tans, branches=new)
    return jvp_outputs(branches[0].out_avals, outs)


def _cond_batch(args, dims, branches):
    size = batching.batch_size(args, dims)
    index, ops = args[0], args[1:]
    idim, odims = dims[0], dims[1:]
    if idim is None:
        new, hoisted = batch_programs(branches, odims, size)
        outs = cond_p.bind(index, *hoisted, *ops, branches=new)
        return outs, [0] * len(outs)
    # A batched index: run every branch and select per batch element.  As in JAX,
    # branch i reads its floating operands where it is selected and their
    # stop_gradient elsewhere, so that a branch not taken (sqrt at 0, say) gives
    # a zero, not a NaN, derivative.
    index = batching.move_to_front(index, idim)
    guarded = [core.get_aval(x).dtype.kind in "fc" for x in ops]
    ops = [batching.materialize(x, d, size) if g else x for x, d, g in zip(ops, odims, guarded)]
    odims = [0 if g else d for d, g in zip(odims, guarded)]
    pairs = [batching.batch_jaxpr(b, tuple(odims), size) for b in branches]
    taken = [E.eq(index, i) for i in range(len(branches))]
    stopped = [S.stop_gradient(x) if g else None for x, g in zip(ops, guarded)]
    results = []
    for (b, h), t in zip(pairs, taken):
        ops_i = [_where_batched(t, x, s) if g else x for x, s, g in zip(ops, stopped, guarded)]
        results.append(core.eval_jaxpr(b, (), *h, *ops_i))
    outs = []
    for k in range(len(results[0])):
        out = results[0][k]
        for t, r in zip(taken[1:], results[1:]):
            out = _where_batched(t, r[k], out)
        outs.append(out)
    return outs, [0] * len(outs)


def _where_batched(pred, x, y):
    """``x`` where ``pred`` (one flag per batch element, axis 0) else ``y``."""
    shape = core.get_aval(x).shape
    return E.select(S.reshape(pred, (shape[0],) + (1,) * (len(shape) - 1)), x, y)


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    unknown = unknowns(trace, args)
    if unknown[0]:
        return trace.stage(cond_p, args, params)
    index, ops = args[0], args[1:]
    ops_uk = unknown[1:]
    out_uk = [False] * len(branches[0].outvars)
    for b in branches:
        b_uk = pe.partial_eval_jaxpr(b, ops_uk).out_unknowns
        out_uk = [a or b_ for a, b_ in zip(out_uk, b_uk)]
    splits = [pe.partial_eval_jaxpr(b, ops_uk, instantiate=out_uk) for b in branches]
    kops = [x for x, u in zip(ops, ops_uk) if not u]
    # A residual that is a known operand is not an output of the known cond: the
    # unknown cond takes that operand directly (as JAX forwards it).  Routing it
    # through the known cond made, under nested conds, a known cond per level at
    # each level of transposition: O(D^2) conds in grad of D nested conds.
    fwd = []  # per branch: per residual, the index among kops it is, or None
    for sp in splits:
        nkc = len(sp.known_consts)
        fwd.append([j - nkc if j is not None and j >= nkc else None for j in sp.res_forward])
    fwd_ops = sorted({k for f in fwd for k in f if k is not None})
    fwd_pos = {k: p for p, k in enumerate(fwd_ops)}
    # Residual slots shared by the branches (only one runs): a branch's residual
    # takes a slot of its type that the branch has not used yet, as in JAX.
    res_avals = []
    slots = []  # per branch: the slot of each of its computed residuals
    for sp, f in zip(splits, fwd):
        mine = []
        res_vars = sp.known.outvars[len(sp.known.outvars) - sp.num_res:]
        for v, k in zip(res_vars, f):
            if k is not None:
                continue
            j = next((j for j, a in enumerate(res_avals) if j not in mine and a == v.aval),
                     None)
            if j is None:
                j = len(res_avals)
                res_avals.append(v.aval)
            mine.append(j)
        slots.append(mine)
    k_in = [v.aval for v, u in zip(branches[0].invars, ops_uk) if not u]
    u_in = [v.aval for v, u in zip(branches[0].invars, ops_uk) if u]
    n_known_out = sum(1 for u in out_uk if not u)
    n_res, n_fwd = len(res_avals), len(fwd_ops)

    def known_branch(i):
        sp = splits[i]

        def f(*kops):
            outs = core.eval_jaxpr(sp.known, (), *sp.known_consts, *kops)
            full = [_zeros_like(a) for a in res_avals]
            computed = [r for r, k in zip(outs[n_known_out:], fwd[i]) if k is None]
            for j, r in zip(slots[i], computed):
                full[j] = r
            return list(outs[:n_known_out]) + full
        return _trace(f, k_in, f"known branch {i}")

    def unknown_branch(i):
        sp = splits[i]

        def f(*xs):
            res_all, fops, uops = xs[:n_res], xs[n_res:n_res + n_fwd], xs[n_res + n_fwd:]
            slot = iter(slots[i])
            res = [res_all[next(slot)] if k is None else fops[fwd_pos[k]] for k in fwd[i]]
            return core.eval_jaxpr(sp.unknown, (), *res, *uops)
        return _trace(f, res_avals + [k_in[k] for k in fwd_ops] + u_in, f"unknown branch {i}")

    known_bs, k_hoisted = common_hoisted([known_branch(i) for i in range(len(branches))])
    if n_known_out or n_res or any(e.prim.has_effects or pe.has_nested_effects(e)
                                   for b in known_bs for e in b.eqns):
        kouts = trace.process_known(cond_p, [index, *k_hoisted, *kops], {"branches": known_bs})
    else:  # nothing to compute now (every residual is an operand)
        kouts = []
    known_outs, residuals = kouts[:n_known_out], kouts[n_known_out:]
    uops = [x for x, u in zip(ops, ops_uk) if u]
    unknown_bs, u_hoisted = common_hoisted([unknown_branch(i) for i in range(len(branches))])
    uouts = trace.stage(cond_p, [index, *u_hoisted, *residuals, *[kops[k] for k in fwd_ops],
                                 *uops], {"branches": unknown_bs})
    return merge_outputs(out_uk, known_outs, uouts)


def _cond_transpose(cts, index, *ops, branches):
    if is_undefined(index):
        raise TypeError("cond: the branch index cannot be linear")
    new, hoisted, res, lin = transpose_programs(branches, ops)
    cts = [ad.instantiate(c) for c in cts]
    outs = cond_p.bind(index, *hoisted, *res, *cts, branches=new)
    return [None] + scatter_linear(lin, outs)


ad.primitive_jvps[cond_p] = _cond_jvp
batching.primitive_batchers[cond_p] = _cond_batch
pe.custom_partial_eval_rules[cond_p] = _cond_partial_eval
ad.primitive_transposes[cond_p] = _cond_transpose

# ===========================================================================
# while: carry = body(carry) while cond(carry)

while_p = Primitive("while", multiple_results=True,
                    program_params=("cond_jaxpr", "body_jaxpr"))


def _while_program_types(params, in_avals, out_avals):
    """The predicate takes its consts and the carry and gives a bool; the body
    takes its consts and the carry and gives the carry."""
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    carry = in_avals[nc + nb:]
    cond_jaxpr, body_jaxpr = core.subjaxprs(while_p, params)
    return [("cond_jaxpr", cond_jaxpr, in_avals[:nc] + carry, [ShapedArray((), np.dtype(bool))]),
            ("body_jaxpr", body_jaxpr, in_avals[nc:nc + nb] + carry, carry)]


while_p.program_types = _while_program_types


while_p.impl = lambda *args, **params: run_equation(while_p, args, params)
while_p.abstract_eval = lambda *avals, body_jaxpr, **_: [v.aval for v in body_jaxpr.outvars]
while_p.print_params = lambda params: {"cond_jaxpr": params["cond_jaxpr"],
                                       "body_jaxpr": params["body_jaxpr"]}


def _while_jvp(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = split(primals, cond_nconsts, body_nconsts)
    _, bc_t, carry_t = split(tangents, cond_nconsts, body_nconsts)
    n = len(carry)
    bc_nz = [type(t) is not Zero for t in bc_t]
    if not any(bc_nz) and all(type(t) is Zero for t in carry_t):
        outs = while_p.bind(*primals, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                            cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
        return outs, [Zero.from_primal(o) for o in outs]
    jj, hoisted = ad.jvp_jaxpr(body_jaxpr, bc_nz + [True] * n)
    nb, nbt, nh = len(bc), sum(bc_nz), len(hoisted)
    h_v, p_bc, p_carry, t_bc, t_carry = split(jj.invars, nh, nb, n, nbt)
    body = Jaxpr([], h_v + p_bc + t_bc + p_carry + t_carry, jj.eqns, jj.outvars)
    carry_t_avals = [ad.tangent_aval(v.aval) for v in body_jaxpr.outvars]
    cond = Jaxpr([], list(cond_jaxpr.invars) + _fresh(carry_t_avals), cond_jaxpr.eqns,
                 cond_jaxpr.outvars)
    init_t = [ad.instantiate(t) for t in carry_t]
    outs = while_p.bind(*cc, *hoisted, *bc, *[t for t in bc_t if type(t) is not Zero], *carry,
                        *init_t, cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=cond_nconsts,
                        body_nconsts=nh + nb + nbt)
    return jvp_outputs(body_jaxpr.out_avals, outs)


def _while_batch(args, dims, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = batching.batch_size(args, dims)
    cc, bc, carry = split(args, cond_nconsts, body_nconsts)
    ccd, bcd, card = split(dims, cond_nconsts, body_nconsts)
    batched = _batched_carries(body_jaxpr, bcd, card, size)
    init = carry
    carry = [batching.materialize(x, d, size) if b else x for x, d, b in zip(init, card, batched)]
    car_dims = tuple(0 if b else None for b in batched)
    cond_b, hc, pred_dims = batching.batch_jaxpr_natural(cond_jaxpr, tuple(ccd) + car_dims, size)
    if pred_dims[0] is not None and not all(batched):
        # a batched predicate: every carry is frozen per element, so all are batched
        batched = [True] * len(carry)
        carry = [batching.materialize(x, d, size) for x, d in zip(init, card)]
        car_dims = (0,) * len(carry)
        cond_b, hc, pred_dims = batching.batch_jaxpr_natural(cond_jaxpr, tuple(ccd) + car_dims,
                                                             size)
    body_b, hb = batching.batch_jaxpr(body_jaxpr, tuple(bcd) + car_dims, size,
                                      out_batched=tuple(batched))
    if pred_dims[0] is None:
        outs = while_p.bind(*hc, *cc, *hb, *bc, *carry, cond_jaxpr=cond_b, body_jaxpr=body_b,
                            cond_nconsts=len(hc) + cond_nconsts,
                            body_nconsts=len(hb) + body_nconsts)
        return outs, list(car_dims)
    # A batched predicate: loop while any element runs; freeze finished ones.
    nc, nb = len(cc), len(bc)
    c_avals = [core.get_aval(x) for x in cc]
    b_avals = [core.get_aval(x) for x in bc]
    carry_avals = [core.get_aval(x) for x in carry]

    def new_cond(*xs):
        pred, = core.eval_jaxpr(cond_b, (), *hc, *xs)
        return [R.reduce_or_p.bind(batching.move_to_front(pred, pred_dims[0]), axes=(0,))]

    def new_body(*xs):
        ccs, bcs, cs = split(xs, nc, nb)
        pred, = core.eval_jaxpr(cond_b, (), *hc, *ccs, *cs)
        pred = batching.move_to_front(pred, pred_dims[0])
        new = core.eval_jaxpr(body_b, (), *hb, *bcs, *cs)
        return [_where_batched(pred, nw, old) for old, nw in zip(cs, new)]

    cond_j, hcj = _trace(new_cond, c_avals + carry_avals, "while cond")
    body_j, hbj = _trace(new_body, c_avals + b_avals + carry_avals, "while body")
    outs = while_p.bind(*hcj, *cc, *hbj, *cc, *bc, *carry, cond_jaxpr=cond_j, body_jaxpr=body_j,
                        cond_nconsts=len(hcj) + nc, body_nconsts=len(hbj) + nc + nb)
    return outs, [0] * len(outs)


def _batched_carries(body_jaxpr, const_dims, carry_dims, size, x_dims=()):
    """Which carries of a loop must be batched (JAX's fixpoint): those batched
    initially and those the body makes batched from batched consts, carries or
    ``xs`` slices.  The body takes (consts, carries, xs) and returns the carries first."""
    batched = [d is not None for d in carry_dims]
    while True:
        _, _, out_dims = batching.batch_jaxpr_natural(
            body_jaxpr, tuple(const_dims) + tuple(0 if b else None for b in batched)
            + tuple(x_dims), size)
        new = [b or d is not None for b, d in zip(batched, out_dims[:len(batched)])]
        if new == batched:
            return batched
        batched = new


def _while_partial_eval(trace, args, params):
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    ncc, nbc = params["cond_nconsts"], params["body_nconsts"]
    unknown = unknowns(trace, args)
    cc_uk, bc_uk, carry_uk = split(unknown, ncc, nbc)
    carry_uk = list(carry_uk)
    while True:
        out_uk = pe.partial_eval_jaxpr(body_jaxpr, bc_uk + carry_uk,
                                       instantiate=carry_uk).out_unknowns
        new = [a or b for a, b in zip(carry_uk, out_uk)]
        if new == carry_uk:
            break
        carry_uk = new
    cond_uk = pe.partial_eval_jaxpr(cond_jaxpr, cc_uk + carry_uk).out_unknowns[0]
    if cond_uk or all(carry_uk) or any(cc_uk):
        return trace.stage(while_p, args, params)
    # Compute the known carries with a loop over them alone; the unknown ones
    # are computed by the whole loop, staged (recomputing the known part).
    sp = pe.partial_eval_jaxpr(body_jaxpr, bc_uk + carry_uk, instantiate=carry_uk)
    n_known = sum(1 for u in carry_uk if not u)
    body_k = pe.dce_jaxpr(Jaxpr([], sp.known.invars, sp.known.eqns, sp.known.outvars[:n_known]))
    cc_vars, carry_vars = cond_jaxpr.invars[:ncc], cond_jaxpr.invars[ncc:]
    cond_k = Jaxpr([], list(cc_vars) + [v for v, u in zip(carry_vars, carry_uk) if not u],
                   cond_jaxpr.eqns, cond_jaxpr.outvars)
    cc, bc, carry = split(args, ncc, nbc)
    k_bc = sp.known_consts + [x for x, u in zip(bc, bc_uk) if not u]
    kouts = trace.process_known(
        while_p, [*cc, *k_bc, *[x for x, u in zip(carry, carry_uk) if not u]],
        dict(cond_jaxpr=cond_k, body_jaxpr=body_k, cond_nconsts=ncc, body_nconsts=len(k_bc)))
    # The staged loop computes every carry; its known ones are replaced.
    uouts = trace.stage(while_p, args, params)
    return merge_outputs(carry_uk, kouts, [o for o, u in zip(uouts, carry_uk) if u])


def _while_transpose(cts, *args, **params):
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
        "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
        "start/stop. (The number of iterations is unknown, so the residuals of the forward "
        "pass cannot be saved; forward mode, jvp, works with while_loop.)")


ad.primitive_jvps[while_p] = _while_jvp
batching.primitive_batchers[while_p] = _while_batch
pe.custom_partial_eval_rules[while_p] = _while_partial_eval
ad.primitive_transposes[while_p] = _while_transpose

# ===========================================================================
# scan: (carry, xs) -> (carry, ys), body(consts, carry, x) -> (carry, y)

scan_p = Primitive("scan", multiple_results=True, program_params=("jaxpr",))


def _scan_program_types(params, in_avals, out_avals):
    """The body takes the consts, the carry and one slice of each ``xs``, and
    gives the carry and one slice of each output ``ys``."""
    nc, ncar, length = params["num_consts"], params["num_carry"], params["length"]
    xs = in_avals[nc + ncar:]
    for k, x in enumerate(xs):
        if not x.shape or x.shape[0] != length:
            raise core.JaxprTypeError(f"scan's xs[{k}] has type {x.str_short()}, whose leading "
                                      f"axis is not the length {length}")
    ys = out_avals[ncar:]
    for k, y in enumerate(ys):
        if not y.shape or y.shape[0] != length:
            raise core.JaxprTypeError(f"scan's output ys[{k}] has type {y.str_short()}, whose "
                                      f"leading axis is not the length {length}")
    body_in = in_avals[:nc + ncar] + [ShapedArray(x.shape[1:], x.dtype) for x in xs]
    body_out = in_avals[nc:nc + ncar] + [ShapedArray(y.shape[1:], y.dtype) for y in ys]
    (body,) = core.subjaxprs(scan_p, params)
    return [("jaxpr", body, body_in, body_out)]


scan_p.program_types = _scan_program_types


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    return [v.aval for v in jaxpr.outvars[:num_carry]] + [
        ShapedArray((length,) + v.aval.shape, v.aval.dtype, v.aval.weak_type)
        for v in jaxpr.outvars[num_carry:]]


scan_p.impl = lambda *args, **params: run_equation(scan_p, args, params)
scan_p.abstract_eval = _scan_abstract_eval
scan_p.print_params = lambda params: {k: params[k] for k in
                                      ("length", "reverse", "num_consts", "num_carry", "jaxpr")}


def _scan_jvp(primals, tangents, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = split(primals, num_consts, num_carry)
    ct, cart, xst = split(tangents, num_consts, num_carry)
    c_nz = [type(t) is not Zero for t in ct]
    x_nz = [type(t) is not Zero for t in xst]
    ncar, ny = num_carry, len(jaxpr.outvars) - num_carry
    jj, hoisted = ad.jvp_jaxpr(jaxpr, c_nz + [True] * ncar + x_nz)
    nh = len(hoisted)
    h_v, p_c, p_car, p_x, t_c, t_car, t_x = split(jj.invars, nh, num_consts, ncar, len(xs),
                                                   sum(c_nz), ncar)
    o_car, o_y, o_tcar, o_ty = split(jj.outvars, ncar, ny, ncar)
    body = Jaxpr([], h_v + p_c + t_c + p_car + t_car + p_x + t_x, jj.eqns,
                 o_car + o_tcar + o_y + o_ty)
    outs = scan_p.bind(*hoisted, *consts, *[t for t in ct if type(t) is not Zero], *carry,
                       *[ad.instantiate(t) for t in cart], *xs,
                       *[t for t in xst if type(t) is not Zero],
                       jaxpr=body, num_consts=nh + num_consts + sum(c_nz), num_carry=2 * ncar,
                       length=length, reverse=reverse, unroll=unroll)
    car, tcar, ys, tys = split(outs, ncar, ncar, ny)
    return jvp_outputs(jaxpr.out_avals, car + ys + tcar + tys)


def _scan_batch(args, dims, jaxpr, num_consts, num_carry, length, reverse, unroll):
    size = batching.batch_size(args, dims)
    consts, carry, xs = split(args, num_consts, num_carry)
    cd, card, xd = split(dims, num_consts, num_carry)
    xs = [x if d is None else batching.move_axis(x, d, 1) for x, d in zip(xs, xd)]
    body_xd = [None if d is None else 0 for d in xd]
    batched = _batched_carries(jaxpr, cd, card, size, body_xd)
    carry = [batching.materialize(x, d, size) if b else x for x, d, b in zip(carry, card, batched)]
    body, hoisted = batching.batch_jaxpr(
        jaxpr, tuple(cd) + tuple(0 if b else None for b in batched) + tuple(body_xd), size,
        out_batched=tuple(batched) + (True,) * (len(jaxpr.outvars) - num_carry))
    outs = scan_p.bind(*hoisted, *consts, *carry, *xs, jaxpr=body,
                       num_consts=len(hoisted) + num_consts,
                       num_carry=num_carry, length=length, reverse=reverse, unroll=unroll)
    return outs, [0 if b else None for b in batched] + [1] * (len(outs) - num_carry)


def _scan_partial_eval(trace, args, params):
    jaxpr = params["jaxpr"]
    nc, ncar = params["num_consts"], params["num_carry"]
    unknown = unknowns(trace, args)
    c_uk, car_uk, x_uk = split(unknown, nc, ncar)
    ny = len(jaxpr.outvars) - ncar
    car_uk = list(car_uk)
    while True:
        out_uk = pe.partial_eval_jaxpr(jaxpr, c_uk + car_uk + x_uk,
                                       instantiate=car_uk + [False] * ny).out_unknowns
        new = [a or b for a, b in zip(car_uk, out_uk[:ncar])]
        if new == car_uk:
            break
        car_uk = new
    in_uk = c_uk + car_uk + x_uk
    sp = pe.partial_eval_jaxpr(jaxpr, in_uk, instantiate=car_uk + [False] * ny)
    known, unknown_j, out_uk, nres = sp.known, sp.unknown, sp.out_unknowns, sp.num_res
    consts, carry, xs = split(args, nc, ncar)
    # The known body's consts: its own (constants made while splitting), then
    # the scan's known consts.
    k_consts = sp.known_consts + [x for x, u in zip(consts, c_uk) if not u]
    n_kc = len(k_consts)
    n_kcar = sum(1 for u in car_uk if not u)
    n_kout = len(known.outvars) - nres
    # Residuals that are loop-invariant known consts are passed once; those
    # that are slices of known xs are those xs (not copies stacked by the
    # loop); the others are stacked along the loop (one per-step-sized array each).
    invariant = [j is not None and j < n_kc for j in sp.res_forward]
    from_xs = [j is not None and j >= n_kc + n_kcar for j in sp.res_forward]
    res_vars = known.outvars[n_kout:]
    body_k = pe.dce_jaxpr(Jaxpr([], known.invars, known.eqns, known.outvars[:n_kout] + [
        v for v, inv, fx in zip(res_vars, invariant, from_xs) if not (inv or fx)]))
    k_args = k_consts + [x for x, u in zip(carry, car_uk) if not u] + \
        [x for x, u in zip(xs, x_uk) if not u]
    kouts = trace.process_known(scan_p, k_args, dict(
        params, jaxpr=body_k, num_consts=n_kc, num_carry=n_kcar))
    k_car, k_ys, computed = split(kouts, n_kcar, n_kout - n_kcar)
    computed = iter(computed)
    stacked = [k_args[j] if fx else next(computed)
               for j, inv, fx in zip(sp.res_forward, invariant, from_xs) if not inv]
    inv_vals = [k_args[j] for j, inv in zip(sp.res_forward, invariant) if inv]
    # Unknown body: (invariant res, unknown consts, unknown carry, stacked res, unknown xs).
    u_res, u_c, u_car, u_x = split(unknown_j.invars, nres, sum(c_uk), sum(car_uk))
    body_u = Jaxpr([], [v for v, inv in zip(u_res, invariant) if inv] + u_c + u_car
                   + [v for v, inv in zip(u_res, invariant) if not inv] + u_x,
                   unknown_j.eqns, unknown_j.outvars)
    u_args = inv_vals + [x for x, u in zip(consts, c_uk) if u] + \
        [x for x, u in zip(carry, car_uk) if u] + list(stacked) + \
        [x for x, u in zip(xs, x_uk) if u]
    uouts = trace.stage(scan_p, u_args, dict(
        params, jaxpr=body_u, num_consts=len(inv_vals) + sum(c_uk), num_carry=sum(car_uk)))
    return merge_outputs(out_uk, list(k_car) + list(k_ys), uouts)


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = split(args, num_consts, num_carry)
    # Every carry is treated as linear: a carry whose initial value is known
    # here is an instantiated zero tangent, whose cotangent is not needed.
    c_lin = [is_undefined(c) for c in consts]
    x_lin = [is_undefined(x) for x in xs]
    ncar = num_carry
    ct_car = [ad.instantiate(c) for c in cts[:ncar]]
    ct_ys = [ad.instantiate(c) for c in cts[ncar:]]
    res_c = [c for c in consts if not is_undefined(c)]
    res_x = [x for x in xs if not is_undefined(x)]
    lin_c_avals = [ad.tangent_aval(c.aval) for c in consts if is_undefined(c)]
    key = (tuple(c_lin), tuple(x_lin))
    hit = _SCAN_TRANSPOSED.get(jaxpr, key)
    if hit is not None:
        body_t, ht = hit
    else:
        bt, hoisted = ad.transpose_jaxpr(jaxpr, c_lin + [True] * ncar + x_lin)
        n_rc, n_lc = len(res_c), len(lin_c_avals)
        car_avals = [ad.tangent_aval(v.aval) for v in jaxpr.outvars[:ncar]]
        y_avals = [ad.tangent_aval(v.aval) for v in jaxpr.outvars[ncar:]]
        rx_avals = [v.aval for v, lin in zip(jaxpr.invars[num_consts + ncar:], x_lin) if not lin]
        rc_avals = [v.aval for v, lin in zip(jaxpr.invars[:num_consts], c_lin) if not lin]

        def body(*a):
            rc, acc, ctc, rx, cty = split(a, n_rc, n_lc, ncar, len(rx_avals))
            out = core.eval_jaxpr(bt, (), *hoisted, *rc, *rx, *ctc, *cty)
            d_lc, d_car, d_lx = split(out, n_lc, ncar)
            return [ad.add_any_p.bind(x, y) for x, y in zip(acc, d_lc)] + d_car + d_lx

        body_t, ht = pe.memoize_program(_SCAN_TRANSPOSED, jaxpr, key, _trace(
            body, rc_avals + lin_c_avals + car_avals + rx_avals + y_avals, "scan transpose"))
    acc0 = [_zeros_like(a) for a in lin_c_avals]
    outs = scan_p.bind(*ht, *res_c, *acc0, *ct_car, *res_x, *ct_ys, jaxpr=body_t,
                       num_consts=len(ht) + len(res_c), num_carry=len(acc0) + ncar,
                       length=length,
                       reverse=not reverse, unroll=unroll)
    acc, ct_init, ct_xs = split(outs, len(acc0), ncar)
    acc_it, xs_it = iter(acc), iter(ct_xs)
    ct_init = [c if is_undefined(x) else None for c, x in zip(ct_init, carry)]
    return ([next(acc_it) if lin else None for lin in c_lin] + ct_init
            + [next(xs_it) if lin else None for lin in x_lin])


_SCAN_TRANSPOSED = core.ProgramMemo("scan: transposed bodies")
ad.primitive_jvps[scan_p] = _scan_jvp
batching.primitive_batchers[scan_p] = _scan_batch
pe.custom_partial_eval_rules[scan_p] = _scan_partial_eval
ad.primitive_transposes[scan_p] = _scan_transpose
