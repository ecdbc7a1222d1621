"""``checkpoint`` (rematerialization): a call primitive whose reverse mode
saves only its inputs and recomputes everything else on the way back.

* partial evaluation computes the known outputs now, and stages the whole
  program for the unknown (tangent) outputs, so the only residuals are the
  call's inputs;
* transposition re-evaluates the program's non-linear equations (the primal
  recomputation) before transposing its linear ones.
"""
from __future__ import annotations

from .. import core
from ..compiler.backend import get_backend
from ..core import Jaxpr, Primitive
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero, is_undefined

remat_p = Primitive("checkpoint", multiple_results=True)


def _remat_impl(*args, jaxpr):
    return get_backend().compile(jaxpr)(*args)


remat_p.impl = _remat_impl
remat_p.abstract_eval = lambda *avals, jaxpr: [v.aval for v in jaxpr.outvars]


def _remat_jvp(primals, tangents, jaxpr):
    nonzeros = [type(t) is not Zero for t in tangents]
    new, hoisted = ad.jvp_jaxpr(jaxpr, nonzeros)
    tans = [t for t in tangents if type(t) is not Zero]
    outs = remat_p.bind(*hoisted, *primals, *tans, jaxpr=new)
    n = len(jaxpr.outvars)
    out_t = [Zero(ad.tangent_aval(v.aval)) if v.aval.dtype.kind not in "fc" else t
             for v, t in zip(jaxpr.outvars, outs[n:])]
    return outs[:n], out_t


def _remat_batch(args, dims, jaxpr):
    size = batching.batch_size(args, dims)
    new, hoisted = batching.batch_jaxpr(jaxpr, tuple(dims), size)
    outs = remat_p.bind(*hoisted, *args, jaxpr=new)
    return outs, [0] * len(outs)


def _remat_partial_eval(trace, args, params):
    jaxpr = params["jaxpr"]
    unknowns = [type(x) is pe.JaxprTracer and x._trace is trace for x in args]
    known, _, out_uk, num_res, _ = pe.partial_eval_jaxpr(jaxpr, unknowns)
    n_known = len(known.outvars) - num_res
    # Known outputs now (residuals dropped: nothing inside is saved) ...
    known_only = pe.dce_jaxpr(Jaxpr([], known.invars, known.eqns, known.outvars[:n_known]))
    with core.set_trace(trace.parent):
        kouts = remat_p.bind(*[x for x, u in zip(args, unknowns) if not u], jaxpr=known_only)
    # ... and the unknown ones by the whole program, from the inputs alone.
    unknown_only = pe.dce_jaxpr(Jaxpr([], jaxpr.invars, jaxpr.eqns,
                                      [v for v, u in zip(jaxpr.outvars, out_uk) if u]))
    uouts = iter(trace.stage(remat_p, list(args), {"jaxpr": unknown_only}))
    kit = iter(kouts)
    return [next(uouts) if u else next(kit) for u in out_uk]


def _remat_transpose(cts, *args, jaxpr):
    linear = [is_undefined(a) for a in args]
    new, hoisted = ad.transpose_jaxpr(jaxpr, linear)
    res = [a for a in args if not is_undefined(a)]
    cts = [ad.instantiate(c) for c in cts]
    outs = iter(core.eval_jaxpr(new, (), *hoisted, *res, *cts))
    return [next(outs) if lin else None for lin in linear]


remat_p.jvp = _remat_jvp
remat_p.batch = _remat_batch
remat_p.partial_eval = _remat_partial_eval
remat_p.transpose = _remat_transpose
