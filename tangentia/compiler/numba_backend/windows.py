"""Window reductions as loop nests in generated numba code: ``window_reduce``
(``lax.reduce_window``'s sum, product, max and min: pooling) and
``window_argmax`` (the flat index of each window's max or min, which max/min
pooling differentiate through).

Each output element reads its window's taps in row-major order.  The first tap
starts the accumulator as in NumPy's ``ufunc.reduce`` (NaN propagates through
max and min; a sum starts from 0, so a lone -0.0 sums to 0.0); the others are
combined with the elementwise operation of ``rules`` (NumPy's semantics per
dtype: integers wrap, booleans or/and).  The arg-reduction keeps the first of equal values and the
first NaN, as ``np.argmax``.  Float sums and products may round differently from
NumPy's reduction order (its axes order); complex max/min and empty outputs run
the NumPy implementation.
"""
from __future__ import annotations

import numpy as np

from ...primitives import elementwise as E, windowed as W
from .codegen import AV, _dt, _lit, _shape_str, _wrap

# the elementwise primitive combining two taps, by ``window_reduce``'s ``op``
_COMBINE = {"add": E.add_p, "mul": E.mul_p, "max": E.maximum_p, "min": E.minimum_p}


def _pos(o, s, k, d):
    """The operand index along one axis of output index ``o`` (stride ``s``), tap ``k``
    (dilation ``d``); loop variables are names, size-1 axes the int 0."""
    parts = [v if m == 1 else f"{v} * {m}" for v, m in ((o, s), (k, d)) if v != 0]
    return " + ".join(parts) or "0"


def _windows(g, eqn, ins, init, step):
    """Loops over the output and, inside, over the window's taps: ``init(x, index of
    the first tap)`` emits the start of the accumulator and returns the variable
    holding the result, ``step(x, index of a tap)`` combines the other taps."""
    x = g.array(ins[0])
    p = eqn.params
    out = eqn.outputs[0].aval
    n = g.name("a")
    g.emit(f"{n} = _empty({_shape_str(out.shape)}, {_dt(out.dtype)})")
    res = AV(out.shape, out.dtype, n)
    geometry = list(zip(p["window_strides"], p["window_dilation"]))
    o_idx = g.loops(out.shape)

    def index(k_idx):
        return [_pos(o, s, k, d) for o, k, (s, d) in zip(o_idx, k_idx, geometry)]
    value = init(x, index([0] * len(out.shape)))
    k_idx = g.loops(p["window_dimensions"])
    rest = [k for k in k_idx if k != 0]
    if rest:   # (a window of one tap has no loop)
        g.emit(f"if {' or '.join(f'{k} != 0' for k in rest)}:")
        g.push()
        step(x, index(k_idx))
        g.pop()
    g.close(k_idx)
    g.emit(f"{g.elem(res, o_idx)} = {value}")
    g.close(o_idx)
    return [g.small(res) if g.is_small(out.shape) else res]


def _window_reduce(g, eqn, ins, ops):
    dt = eqn.outputs[0].aval.dtype
    if 0 in eqn.outputs[0].aval.shape or (dt.kind == "c" and eqn.params["op"] in ("max", "min")):
        return NotImplemented
    op = ops[_COMBINE[eqn.params["op"]]]
    acc = g.name("acc")

    def init(x, idx):
        first = g.elem(x, idx)
        if eqn.params["op"] == "add":   # NumPy's sum starts from 0: a lone -0.0 gives 0.0
            first = _wrap(op([_lit(0, dt), first], dt), dt)
        g.emit(f"{acc} = {first}")
        return acc

    def step(x, idx):
        g.emit(f"{acc} = {_wrap(op([acc, g.elem(x, idx)], dt), dt)}")
    return _windows(g, eqn, ins, init, step)


def _window_argmax(g, eqn, ins):
    shape, dt = eqn.inputs[0].aval.shape, eqn.inputs[0].aval.dtype
    if 0 in eqn.outputs[0].aval.shape or dt.kind == "c":
        return NotImplemented
    better = ">" if eqn.params["op"] == "max" else "<"
    strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
    best, bi = g.name("best"), g.name("bi")

    def flat(idx):
        return " + ".join(f"({e}) * {m}" for e, m in zip(idx, strides) if e != "0") or "0"

    def init(x, idx):
        g.emit(f"{best} = {g.elem(x, idx)}")
        g.emit(f"{bi} = {flat(idx)}")
        return bi

    def step(x, idx):
        cand = g.name("s")
        g.emit(f"{cand} = {g.elem(x, idx)}")
        cond = f"{cand} {better} {best}"
        if dt.kind == "f":   # the first NaN wins
            cond += f" or ({cand} != {cand} and {best} == {best})"
        g.emit(f"if {cond}:")
        g.emit(f"    {best} = {cand}")
        g.emit(f"    {bi} = {flat(idx)}")
    return _windows(g, eqn, ins, init, step)


def rules(ops):
    """The lowering rules, keyed by primitive, combining taps with ``ops`` (the
    elementwise operations of ``rules``, keyed by primitive)."""
    return {W.window_reduce_p: lambda g, eqn, ins: _window_reduce(g, eqn, ins, ops),
            W.window_argmax_p: _window_argmax}
