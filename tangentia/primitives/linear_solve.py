"""The ``custom_linear_solve`` primitive (``lax.linear_solve_p``, named as in JAX) behind
``lax.custom_linear_solve``.

Inputs: ``(*matvec_consts, *vecmat_consts, *solve_consts, *tr_solve_consts, *b)``.
Params: ``jaxprs = (matvec, vecmat, solve, transpose_solve)``, each a program
taking its consts then the vector leaves (``vecmat`` / ``transpose_solve`` may
be None); ``const_lengths`` = the four const counts; ``num_b`` = the number of
``b`` leaves.  Outputs: the solution leaves followed by aux leaves (if any).

Evaluating it runs the ``solve`` program; it is differentiated implicitly
from ``A x = b`` (JVP: another solve; transpose: ``transpose_solve`` on the
transposed operator), and batched by batching all four programs (the leaves of
``b`` and of the solution that no batched value reaches stay unbatched).
"""
from __future__ import annotations

from .. import core
from ..compiler.backend import run_equation
from ..core import Primitive
from ..interpreters import ad, batching
from ..interpreters.ad import Zero, is_undefined
from ..interpreters.call_rules import split
from . import elementwise as E

linear_solve_p = Primitive("custom_linear_solve", multiple_results=True,
                           program_params=("jaxprs",))


def _ls_program_types(params, in_avals, out_avals):
    """Each program takes its consts, then the vector (x and b have the same
    types); the operators give a vector, ``solve`` the equation's outputs (the
    solution, then any aux), ``transpose_solve`` a vector and its own aux."""
    lengths = params["const_lengths"]
    b = in_avals[sum(lengths):]
    outs = (b, b, out_avals, core.LeadingTypes(b))
    found, start = [], 0
    for role, program, n, want in zip(("matvec", "vecmat", "solve", "transpose_solve"),
                                      params["jaxprs"], lengths, outs):
        if program is not None:
            found.append((role, getattr(program, "jaxpr", program),
                          in_avals[start:start + n] + b, want))
        start += n
    return found


linear_solve_p.program_types = _ls_program_types


def _transposed(const_lengths, jaxprs):
    m, v, s, t = const_lengths
    jm, jv, js, jt = jaxprs
    return (v, m, t, s), (jv, jm, jt, js)


def solve_operands(const_lengths):
    """Where the ``solve`` program's inputs are among a ``custom_linear_solve``'s inputs:
    ``(start, stop, first_b)`` - its consts are ``args[start:stop]``, then ``args[first_b:]``."""
    start = const_lengths[0] + const_lengths[1]
    return start, start + const_lengths[2], sum(const_lengths)


linear_solve_p.impl = lambda *args, **params: run_equation(linear_solve_p, args, params)
linear_solve_p.abstract_eval = lambda *avals, jaxprs, **_: [v.aval for v in jaxprs[2].outvars]
linear_solve_p.print_params = lambda params: {
    "matvec": params["jaxprs"][0], "solve": params["jaxprs"][2]}


def _ls_jvp(primals, tangents, jaxprs, const_lengths, num_b):
    # A x = b  =>  dA x + A dx = db  =>  dx = A^{-1} (db - dA x)
    params = dict(jaxprs=jaxprs, const_lengths=const_lengths, num_b=num_b)
    outs = linear_solve_p.bind(*primals, **params)
    mc = split(primals, *const_lengths)[0]
    mc_dot, _, _, _, b_dot = split(tangents, *const_lengths)
    x = outs[:num_b]
    nz_a = any(type(t) is not Zero for t in mc_dot)
    nz_b = any(type(t) is not Zero for t in b_dot)
    out_zero = [Zero.from_primal(o) for o in outs]
    if not nz_a and not nz_b:
        return outs, out_zero
    rhs = list(b_dot)
    if nz_a:
        matvec = jaxprs[0]
        _, ax_dot = ad.jvp_flat(lambda *c: core.eval_jaxpr(matvec, (), *c, *x), mc, mc_dot)
        rhs = [ad.add_tangents(r, t if type(t) is Zero else E.neg(t))
               for r, t in zip(rhs, ax_dot)]
    rhs = [ad.instantiate(r) for r in rhs]
    x_dot = linear_solve_p.bind(*primals[:len(primals) - num_b], *rhs, **params)
    return outs, list(x_dot[:num_b]) + out_zero[num_b:]


def _ls_transpose(cts, *args, jaxprs, const_lengths, num_b):
    if jaxprs[3] is None:
        raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                        "of custom_linear_solve (reverse mode: grad/vjp; pass "
                        "transpose_solve=..., or symmetric=True if the operator is symmetric)")
    *consts, b = split(args, *const_lengths)
    if any(is_undefined(c) for cs in consts for c in cs):
        raise TypeError("custom_linear_solve: the solution is linear in b only; it cannot be "
                        "transposed with respect to the values matvec or solve close over")
    ct_x = [ad.instantiate(c) for c in cts[:num_b]]
    t_lengths, t_jaxprs = _transposed(const_lengths, jaxprs)
    m, v, s, t = consts
    ct_b = linear_solve_p.bind(*v, *m, *t, *s, *ct_x, jaxprs=t_jaxprs, const_lengths=t_lengths,
                               num_b=num_b)
    return [None] * sum(const_lengths) + [c if is_undefined(bi) else None
                                          for c, bi in zip(ct_b[:num_b], b)]


def _dims(batched):
    return tuple(0 if t else None for t in batched)


def _natural(jaxpr, in_dims, size, num_b):
    """Which of the first ``num_b`` outputs of ``jaxpr`` vmap batches (given ``in_dims``)."""
    if jaxpr is None:
        return [False] * num_b
    return [d is not None for d in batching.batch_jaxpr_natural(jaxpr, in_dims, size)[2][:num_b]]


def _ls_batch(args, dims, jaxprs, const_lengths, num_b):
    # The four programs map between two spaces: matvec and transpose_solve take
    # an x and give a b, vecmat and solve take a b and give an x.  Which leaves of
    # x and of b are batched must be the same in all four (transposition swaps
    # them), so start from the batched leaves of b and add what each program
    # batches until nothing changes (at most 2 * num_b rounds); unbatched leaves
    # stay unbatched, as in JAX (vmap(..., out_axes=None) can return them).
    size = batching.batch_size(args, dims)
    *consts, b = split(args, *const_lengths)
    *cdims, bdims = split(dims, *const_lengths)
    mv, vm, sv, ts = jaxprs
    b_bat = [d is not None for d in bdims]
    x_bat = [False] * num_b
    while True:
        x_new = [any(t) for t in zip(x_bat, _natural(sv, (*cdims[2], *_dims(b_bat)), size, num_b),
                                     _natural(vm, (*cdims[1], *_dims(b_bat)), size, num_b))]
        b_new = [any(t) for t in zip(b_bat, _natural(mv, (*cdims[0], *_dims(x_new)), size, num_b),
                                     _natural(ts, (*cdims[3], *_dims(x_new)), size, num_b))]
        if x_new == x_bat and b_new == b_bat:
            break
        x_bat, b_bat = x_new, b_new
    ins = (x_bat, b_bat, b_bat, x_bat)      # the vector each program takes
    outs_bat = (b_bat, x_bat, x_bat, b_bat)  # and the one it gives
    new_jaxprs, new_consts = [], []
    for i, (j, cs, ds, vin, vout) in enumerate(zip(jaxprs, consts, cdims, ins, outs_bat)):
        if j is None:
            new_jaxprs.append(None)
            new_consts.append([])
            continue
        in_dims = (*ds, *_dims(vin))
        bj, hoisted, natural = batching.batch_jaxpr_natural(j, in_dims, size)
        aux = [d is not None for d in natural[num_b:]]
        if [d is not None for d in natural[:num_b]] != vout:   # batch what it does not reach
            bj, hoisted = batching.batch_jaxpr(j, in_dims, size, out_batched=tuple(vout + aux))
        new_jaxprs.append(bj)
        new_consts.append(list(hoisted) + list(cs))
        if i == 2:  # solve: its outputs are the primitive's
            out_dims = _dims(x_bat + aux)
    b = [batching.materialize(x, d, size) if t else x for x, d, t in zip(b, bdims, b_bat)]
    outs = linear_solve_p.bind(*[c for cs in new_consts for c in cs], *b,
                               jaxprs=tuple(new_jaxprs),
                               const_lengths=tuple(len(cs) for cs in new_consts), num_b=num_b)
    return outs, list(out_dims)


ad.primitive_jvps[linear_solve_p] = _ls_jvp
ad.primitive_transposes[linear_solve_p] = _ls_transpose
batching.primitive_batchers[linear_solve_p] = _ls_batch


