"""Rules shared by call-like primitives: primitives whose parameters carry
programs they run (``jit``, ``checkpoint``, ``cond``, loops, ...).

Each interpreter transforms the carried programs and binds the primitive
again: JVP -> the JVP programs, vmap -> the batched programs, transposition
-> the transposed programs, partial evaluation -> a known call now and an
unknown (staged) call later.  Transformed programs take the constants they
close over (concrete arrays made by rules, values of outer interpreters) as
leading inputs ("hoisted", see ``partial_eval.trace_to_program``), which the
rules pass as the leading operands of the primitive they bind.

``def_call_rules(prim)`` gives a primitive that carries one program in
``params["jaxpr"]`` and takes exactly its inputs all four rules; the pieces
(``jvp_programs``, ``transpose_programs``, ``batch_programs``,
``jvp_outputs``, ``merge_outputs``, ...) serve primitives with more programs
or other operands (``cond``, ``scan``, ``while``).
"""
from __future__ import annotations

from .. import core
from ..core import Jaxpr, Var, Zero
from . import ad, batching
from . import partial_eval as pe
from .ad import is_undefined, zero_nonfloat


def with_program(params, jaxpr, what=None):
    """``params`` carrying ``jaxpr``; a ``name`` parameter becomes ``what(name)``."""
    new = dict(params, jaxpr=jaxpr)
    if what is not None and "name" in params:
        new["name"] = f"{what}({params['name']})"
    return new


def jvp_outputs(out_avals, outs):
    """Split the outputs of a JVP program (primals, then tangents)."""
    n = len(out_avals)
    return list(outs[:n]), zero_nonfloat(out_avals, outs[n:])


def unknowns(trace, args):
    """Which of ``args`` are unknown to the partial evaluator ``trace``."""
    return [not trace.is_known(x) for x in args]


def split(seq, *sizes):
    """``seq`` cut into pieces of the given sizes, then the rest (operands of
    loops and calls: their groups of consts, carries, ...)."""
    out, i = [], 0
    for n in sizes:
        out.append(list(seq[i:i + n]))
        i += n
    out.append(list(seq[i:]))
    return out


def merge_outputs(out_unknown, known_outs, unknown_outs):
    """Interleave known and unknown outputs back into one list."""
    k, u = iter(known_outs), iter(unknown_outs)
    return [next(u) if uk else next(k) for uk in out_unknown]


def common_hoisted(pairs):
    """Give programs (each with its own hoisted leading inputs) one signature:
    all hoisted values, then the original inputs.  Returns (programs, hoisted)."""
    if len(pairs) == 1:
        jaxpr, hoisted = pairs[0]
        return (jaxpr,), list(hoisted)
    all_h = [h for _, hs in pairs for h in hs]
    out = []
    before = 0
    for j, hs in pairs:
        n = len(hs)
        pad_b = [Var(core.get_aval(h)) for h in all_h[:before]]
        pad_a = [Var(core.get_aval(h)) for h in all_h[before + n:]]
        out.append(Jaxpr([], pad_b + list(j.invars[:n]) + pad_a + list(j.invars[n:]), j.eqns,
                         j.outvars))
        before += n
    return tuple(out), all_h


def jvp_programs(jaxprs, tangents):
    """JVP programs of ``jaxprs`` (one signature) for ``tangents``.

    Returns ``(programs, hoisted, nonzero_tangents)``: bind the programs with
    ``*hoisted, *primals, *nonzero_tangents``."""
    nonzeros = [type(t) is not Zero for t in tangents]
    new, hoisted = common_hoisted([ad.jvp_jaxpr(j, nonzeros) for j in jaxprs])
    return new, hoisted, [t for t in tangents if type(t) is not Zero]


def transpose_programs(jaxprs, args):
    """Transposed programs of ``jaxprs`` (one signature) for the linear ``args``.

    Returns ``(programs, hoisted, residuals, linear)``: bind the programs with
    ``*hoisted, *residuals, *cotangents``; they give the cotangents of the
    arguments where ``linear`` is true."""
    linear = [is_undefined(a) for a in args]
    new, hoisted = common_hoisted([ad.transpose_jaxpr(j, linear) for j in jaxprs])
    return new, hoisted, [a for a in args if not is_undefined(a)], linear


def batch_programs(jaxprs, dims, size):
    """Batched programs of ``jaxprs`` (every output batched along axis 0).
    Returns ``(programs, hoisted)``."""
    return common_hoisted([batching.batch_jaxpr(j, tuple(dims), size) for j in jaxprs])


def scatter_linear(linear, cts):
    """Cotangents per argument: ``cts`` for the linear ones, None elsewhere."""
    it = iter(cts)
    return [next(it) if lin else None for lin in linear]


# ---------------------------------------------------------------------------
# checkpoint policies: which primal values a rematerialized program may save


def _remat_saved(trace, prim, params, jaxpr, args, uk, unknown_outvars):
    """The values of ``jaxpr`` that ``params["policy"]`` lets a checkpoint save
    for its unknown (tangent) part: ``({var: None}, [known values])``.

    A known equation (all inputs known) whose outputs the unknown part reads
    is saveable when ``policy(prim, *in_avals, **params)`` says so (JAX's
    convention); its outputs are computed now by a program of the known
    equations and enter the unknown program as inputs instead of being
    recomputed.  Without a policy nothing is saved.
    """
    policy = params.get("policy")
    if policy is None:
        return {}, []
    known = {v for v, u in zip(jaxpr.invars, uk) if not u}
    known_eqns, candidates = [], []
    for e in jaxpr.eqns:
        if all(type(x) is not Var or x in known for x in e.inputs) \
                and not getattr(e.prim, "has_effects", False):
            known_eqns.append(e)
            known.update(e.outputs)
            if policy(e.prim, *[x.aval for x in e.inputs], **e.params):
                candidates.extend(e.outputs)
    if not candidates:
        return {}, []
    # Keep the candidates the recomputation would read.
    cand = dict.fromkeys(candidates)
    eqns = pe.dce_jaxpr(Jaxpr([], [], [e for e in jaxpr.eqns
                                       if not any(o in cand for o in e.outputs)],
                              unknown_outvars)).eqns
    read = {x for e in eqns for x in e.inputs if type(x) is Var} | set(unknown_outvars)
    saved = {v: None for v in candidates if v in read}
    if not saved:
        return {}, []
    kin = [v for v, u in zip(jaxpr.invars, uk) if not u]
    program = pe.dce_jaxpr(Jaxpr([], kin, known_eqns, list(saved)))
    params = {k: v for k, v in params.items() if k != "policy"}
    vals = trace.process_known(prim, [x for x, u in zip(args, uk) if not u],
                               with_program(params, program))
    return saved, list(vals)


# ---------------------------------------------------------------------------
# The four rules of a primitive carrying one program (``params["jaxpr"]``)
# and taking exactly its inputs.


def def_call_rules(prim, remat=False):
    """Give ``prim`` its JVP, batching, transpose and partial-eval rules.

    ``remat=True`` (checkpoint) saves no residuals: partial evaluation
    computes the known outputs now and stages the whole program for the
    unknown ones, and transposition re-evaluates the program inline.
    """

    def jvp(primals, tangents, **params):
        jaxpr = params["jaxpr"]
        (new,), hoisted, tans = jvp_programs([jaxpr], tangents)
        outs = prim.bind(*hoisted, *primals, *tans, **with_program(params, new, "jvp"))
        return jvp_outputs(jaxpr.out_avals, outs)

    def batch(args, dims, **params):
        size = batching.batch_size(args, dims)
        (new,), hoisted = batch_programs([params["jaxpr"]], dims, size)
        outs = prim.bind(*hoisted, *args, **with_program(params, new, "vmap"))
        return outs, [0] * len(outs)

    def transpose(cts, *args, **params):
        (new,), hoisted, res, linear = transpose_programs([params["jaxpr"]], args)
        cts = [ad.instantiate(c) for c in cts]
        if remat:  # the primal recomputation happens here, inline
            outs = core.eval_jaxpr(new, (), *hoisted, *res, *cts)
        else:
            outs = prim.bind(*hoisted, *res, *cts, **with_program(params, new, "transpose"))
        return scatter_linear(linear, outs)

    def partial_eval(trace, args, params):
        jaxpr = params["jaxpr"]
        uk = unknowns(trace, args)
        split = pe.partial_eval_jaxpr(jaxpr, uk)
        known, out_uk, num_res = split.known, split.out_unknowns, split.num_res
        known_args = split.known_consts + [x for x, u in zip(args, uk) if not u]
        if remat:
            # Known outputs now (residuals dropped: nothing inside is saved but
            # what the policy allows) ...
            n_known = len(known.outvars) - num_res
            known = pe.dce_jaxpr(Jaxpr([], known.invars, known.eqns, known.outvars[:n_known]))
            known_outs = trace.process_known(prim, known_args, with_program(params, known))
            # ... and the unknown ones by the whole program, from the inputs and
            # the saved values alone.
            unknown_outvars = [v for v, u in zip(jaxpr.outvars, out_uk) if u]
            saved, saved_vals = _remat_saved(trace, prim, params, jaxpr, args, uk, unknown_outvars)
            eqns = pe.dce_jaxpr(Jaxpr([], [], [e for e in jaxpr.eqns
                                               if not any(o in saved for o in e.outputs)],
                                      unknown_outvars)).eqns
            # Known inputs the recomputation does not read are not kept.
            read = {x for e in eqns for x in e.inputs if type(x) is Var} | set(unknown_outvars)
            keep = [u or v in read for v, u in zip(jaxpr.invars, uk)]
            unknown = Jaxpr([], list(saved) + [v for v, k in zip(jaxpr.invars, keep) if k],
                            eqns, unknown_outvars)
            unknown_args = saved_vals + [x for x, k in zip(args, keep) if k]
        else:
            kouts = trace.process_known(prim, known_args, with_program(params, known))
            nk = len(kouts) - num_res
            known_outs, residuals = kouts[:nk], kouts[nk:]
            unknown_args = list(residuals) + [x for x, u in zip(args, uk) if u]
            unknown = split.unknown
        uouts = trace.stage(prim, unknown_args, with_program(params, unknown))
        return merge_outputs(out_uk, known_outs, uouts)

    ad.primitive_jvps[prim] = jvp
    batching.primitive_batchers[prim] = batch
    ad.primitive_transposes[prim] = transpose
    pe.custom_partial_eval_rules[prim] = partial_eval
