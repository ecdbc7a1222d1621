"""``jit``: a call primitive carrying a staged program.

Its rules transform the carried program: JVP -> the JVP program, vmap ->
the batched program, transpose -> the transposed program, and partial
evaluation splits it into a known and an unknown program, so ``grad(jit(f))``
keeps both halves compiled.
"""
from __future__ import annotations

from .. import core
from ..compiler.backend import get_backend
from ..core import Primitive
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero, is_undefined

jit_p = Primitive("jit", multiple_results=True)


def _jit_impl(*args, jaxpr, name, backend=None):
    return get_backend(backend).compile(jaxpr)(*args)


jit_p.impl = _jit_impl
jit_p.abstract_eval = lambda *avals, jaxpr, name, backend=None: [v.aval for v in jaxpr.outvars]
jit_p.print_params = lambda params: {"name": params["name"], "jaxpr": params["jaxpr"]}


def _jit_jvp(primals, tangents, jaxpr, name, backend=None):
    nonzeros = [type(t) is not Zero for t in tangents]
    new, hoisted = ad.jvp_jaxpr(jaxpr, nonzeros)
    tans = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*hoisted, *primals, *tans, jaxpr=new, name=f"jvp({name})",
                      backend=backend)
    n = len(jaxpr.outvars)
    out_tans = [Zero(ad.tangent_aval(v.aval)) if v.aval.dtype.kind not in "fc" else t
                for v, t in zip(jaxpr.outvars, outs[n:])]
    return outs[:n], out_tans


def _jit_transpose(cts, *args, jaxpr, name, backend=None):
    linear = [is_undefined(a) for a in args]
    new, hoisted = ad.transpose_jaxpr(jaxpr, linear)
    res = [a for a in args if not is_undefined(a)]
    cts = [ad.instantiate(c) for c in cts]
    outs = iter(jit_p.bind(*hoisted, *res, *cts, jaxpr=new, name=f"transpose({name})",
                           backend=backend))
    return [next(outs) if lin else None for lin in linear]


def _jit_batch(args, dims, jaxpr, name, backend=None):
    size = batching.batch_size(args, dims)
    new, hoisted = batching.batch_jaxpr(jaxpr, tuple(dims), size)
    outs = jit_p.bind(*hoisted, *args, jaxpr=new, name=f"vmap({name})", backend=backend)
    return outs, [0] * len(outs)


def _jit_partial_eval(trace, args, params):
    jaxpr = params["jaxpr"]
    unknowns = [type(x) is pe.JaxprTracer and x._trace is trace for x in args]
    known, unknown, out_unknowns, num_res, _ = pe.partial_eval_jaxpr(jaxpr, unknowns)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    with core.set_trace(trace.parent):
        kouts = jit_p.bind(*known_args, **dict(params, jaxpr=known))
    nk = len(kouts) - num_res
    known_outs, residuals = kouts[:nk], kouts[nk:]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    uouts = iter(trace.stage(jit_p, list(residuals) + unknown_args,
                             dict(params, jaxpr=unknown)))
    kit = iter(known_outs)
    return [next(uouts) if u else next(kit) for u in out_unknowns]


jit_p.jvp = _jit_jvp
jit_p.transpose = _jit_transpose
jit_p.batch = _jit_batch
jit_p.partial_eval = _jit_partial_eval
