"""Loop-free elementwise programs over one large shape, as one loop.

The general generator (``codegen``) fuses a chain of elementwise operations
into one loop, but a value used twice (``e = exp(-x)`` in a sigmoid and its
derivative) becomes an array, written by one loop and read by others.  Over
large arrays those temporaries cost memory traffic (and fresh pages from the
allocator on every call).  A program whose every value either has the one
large shape ``S`` or has one element (broadcast into it) needs none: it is
one loop over the ``size(S)`` elements whose body is the program on scalars,
each value a local variable.  If every operation of the body is branch-free
(``rules.VECTOR_OPS``, with ``exp`` from ``vecmath``), LLVM vectorizes the
loop.

``scalar_program(jaxpr)`` builds that body program (``None`` if the program
is not of this form), ``generate(g, jaxpr, body)`` emits the loop.
"""
from __future__ import annotations

from ...core import Eqn, Jaxpr, Literal, ProgramMemo, ShapedArray, Var
from .codegen import AV, SV, _cast, _dt, _size
from .rules import VECTOR_OPS, vectorizes

__all__ = ["scalar_program", "generate"]

_IDENTITY = {"broadcast_to", "reshape", "stop_gradient", "name"}


class _NotElementwise(Exception):
    pass


def scalar_program(jaxpr):
    """``(body, shape)``: ``jaxpr`` with every value made a scalar and calls
    inlined, and the one large shape, if ``jaxpr`` is a loop-free program of
    vectorizable elementwise operations (see the module docstring); else None.
    Memoized on ``jaxpr``."""
    hit = _SCALAR_PROGRAM.get(jaxpr, default=False)
    if hit is not False:
        return hit
    try:
        res = _ScalarProgram(jaxpr).result()
    except _NotElementwise:
        res = None
    return _SCALAR_PROGRAM.set(jaxpr, res)


_SCALAR_PROGRAM = ProgramMemo("numba backend: the one-loop scalar program (or None)")


class _ScalarProgram:
    def __init__(self, jaxpr):
        self.shape = None
        self.big = {}    # scalar variable -> whether it is an element of a large value
        self.eqns = []
        invars = [self.new_var(v) for v in jaxpr.invars]
        outs = self.flatten(jaxpr, invars)
        if self.shape is None or any(type(o) is not Var or self.big[o] is False for o in outs):
            raise _NotElementwise   # (outputs must be elements of large values)
        self.body = Jaxpr([], invars, self.eqns, outs)

    def result(self):
        return self.body, self.shape

    def kind(self, aval):
        """True for the large shape, False for one element; raises otherwise."""
        if _size(aval.shape) == 1 and len(aval.shape) <= len(self.shape or aval.shape):
            return False
        if self.shape is None:
            self.shape = tuple(aval.shape)
        if tuple(aval.shape) != self.shape:
            raise _NotElementwise
        return True

    def new_var(self, v):
        if v.aval.dtype.kind not in "biuf":
            raise _NotElementwise   # (float0 and complex values take the general path)
        s = Var(ShapedArray((), v.aval.dtype, getattr(v.aval, "weak_type", False)))
        self.big[s] = self.kind(v.aval)
        return s

    def flatten(self, jaxpr, in_vals):
        env = dict(zip(jaxpr.invars, in_vals))

        def read(a):
            if type(a) is Literal:
                if _size(getattr(a.aval, "shape", ())) != 1:
                    raise _NotElementwise
                return a
            return env[a]
        for eqn in jaxpr.eqns:
            name = eqn.prim.name
            ins = [read(a) for a in eqn.inputs]
            call = eqn.prim.call_param   # a call (jit, checkpoint, custom rules'): inlined
            if call is not None and not eqn.params[call].constvars:
                outs = self.flatten(eqn.params[call], ins)
            elif name in _IDENTITY:
                if len(ins) != 1 or len(eqn.outputs) != 1:
                    raise _NotElementwise
                src, out = eqn.inputs[0], eqn.outputs[0]
                if not (_size(src.aval.shape) == 1 or src.aval.shape == out.aval.shape):
                    raise _NotElementwise
                self.kind(out.aval)
                outs = ins
            elif eqn.prim in VECTOR_OPS and vectorizes(eqn):
                outs = [self.new_var(v) for v in eqn.outputs]
                big = self.big[outs[0]]
                if not big and any(type(a) is Var and self.big[a] for a in ins):
                    raise _NotElementwise   # (a reduction to one element)
                self.eqns.append(Eqn(eqn.prim, ins, outs, eqn.params, eqn.source))
            else:
                raise _NotElementwise
            env.update(zip(eqn.outputs, outs))
        return [read(a) for a in jaxpr.outvars]


def generate(g, jaxpr, body, shape, params):
    """Emit the loop computing ``jaxpr`` (whose scalar program is ``body``) into
    ``g``; ``params`` are the names of its array arguments.  Returns the names
    of the output arrays."""
    n = _size(shape)
    in_vals = []
    for p, v, s in zip(params, jaxpr.invars, body.invars):
        if _size(v.aval.shape) == 1:
            in_vals.append(SV((), s.aval.dtype, [g.scalar(f"{p}.reshape(1)[0]")]))
        else:
            in_vals.append(AV((n,), s.aval.dtype, g.scalar(f"{p}.reshape({n})")))
    outs = []
    for v in body.outvars:
        outs.append(AV((n,), v.aval.dtype, g.name("a")))
        g.emit(f"{outs[-1].name} = _empty({n}, {_dt(v.aval.dtype)})")
    i = g.name("i")
    g.emit(f"for {i} in range({n}):")
    g.push()
    vals = [SV((), v.dtype, [g.scalar(g.elem(v, (i,)))]) if type(v) is AV else v for v in in_vals]
    outer, g.vector_loop = g.vector_loop, True   # (its scalars use the inlined vectorizable functions)
    res = g.lower_jaxpr(body, vals)
    g.vector_loop = outer
    for o, r in zip(outs, res):
        g.emit(f"{o.name}[{i}] = {_cast(r.elems[0], r.dtype, o.dtype)}")
    g.pop()
    names = []
    for o in outs:
        names.append(g.scalar(f"{o.name}.reshape({shape!r})") if len(shape) != 1 else o.name)
    return names
