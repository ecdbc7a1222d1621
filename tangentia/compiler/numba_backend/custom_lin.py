"""``custom_lin`` lowered as the program of its linear map, not in object mode.

A ``custom_lin`` equation reaching a backend is the linear step of a ``custom_vjp``
function (or of odeint's forward sensitivities) under forward mode: its evaluation
(``ad.custom_lin_forward``) applies the given ``forward`` map, or traces the user's
``bwd`` as a function of the cotangents at the residuals and transposes it.  Both are
made of primitives, so at compile time, with the equation's input types known, the same
function is staged once into a program (``pe.trace_to_program``) and that program is
lowered like a called one.  Before, numba ran the equation in object mode: inside a loop
(``hessian`` of an odeint loss: the adjoint's scan calling the forward sensitivities of
each interval) the whole loop was compiled in object mode and every step traced the map
again.

The equation keeps its object-mode path where staging fails (a ``bwd`` branching on the
residuals' values, a ``bwd`` that is not linear: the error is then raised when the
program runs, as before) or closes over values of an enclosing interpreter.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ...core import Tracer
from ...interpreters import ad, partial_eval as pe
from .codegen import AV, SV, ZV, _is_float0, _lit

__all__ = ["program", "rule"]


def program(eqn):
    """``(program, consts)`` computing ``eqn`` (a ``custom_lin``): its inputs are the
    consts followed by the equation's inputs; None where it cannot be staged."""
    params = eqn.params

    def linear_map(*args):
        return ad.custom_lin_forward(*args, **params)

    try:
        jaxpr, consts = pe.trace_to_program(linear_map, [v.aval for v in eqn.inputs],
                                            name=f"linear step of {params.get('name')}",
                                            label="custom_lin")
    except Exception:  # noqa: BLE001 - not stageable: the equation runs in object mode
        return None
    if any(isinstance(c, Tracer) for c in consts):
        return None
    if [v.aval for v in jaxpr.outvars] != [v.aval for v in eqn.outputs]:
        return None
    return jaxpr, [np.asarray(c) for c in consts]


def _const_value(g, c):
    """The generator's value of the constant array ``c``: literals when it is small,
    else a copy of a global array, named in the source by a hash of its bytes (compile
    units are keyed by their source)."""
    dtype = c.dtype
    if _is_float0(dtype):
        return ZV(c.shape, dtype)
    if g.is_small(c.shape):
        return SV(c.shape, dtype, [_lit(x, dtype) for x in c.ravel()])
    arr = np.ascontiguousarray(c)
    name = g.glob(arr, "_c")
    digest = hashlib.sha256(arr.tobytes()).hexdigest()[:24]
    g.notes.append(f"# {name}: constant {dtype.str}{arr.shape} {digest}")
    out = g.name("a")
    g.emit(f"{out} = {name}.copy()")
    return AV(arr.shape, dtype, out)


def rule(g, eqn, ins):
    """``rules.RULES[custom_lin_p]``: the outputs of ``eqn`` computed by its staged
    program (lowered by the generator ``g`` as a called program is), or
    ``NotImplemented`` (object mode) where it cannot be staged."""
    key = ("custom_lin", id(eqn))
    found = g.helpers.get(key)
    if found is None:
        found = g.helpers[key] = (eqn, program(eqn))   # (the equation kept: its id stays its)
    staged = found[1]
    if staged is None:
        return NotImplemented
    jaxpr, consts = staged
    vals = [_const_value(g, c) for c in consts]
    return g.lower_jaxpr(jaxpr, vals + list(ins))
