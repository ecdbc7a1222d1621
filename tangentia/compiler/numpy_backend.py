"""The NumPy backend: a program becomes straight-line Python over NumPy.

It is the reference backend (and the fallback of the numba one).  Each
equation becomes one call of its lowering, a NumPy function with its
parameters bound, so running a compiled program costs about as much as the
NumPy calls themselves.  Every intermediate is deleted right after its last
use, so memory is freed as early as possible, and an elementwise operation
(a NumPy ufunc) writes its result into the buffer of an operand that dies
there (``out=``) when that buffer is one the program allocated itself and
has the result's shape and dtype.  Repeated computations (same primitive,
inputs and parameters) are done once.

Lowering table: ``LOWERINGS[prim](**params) -> callable``.  A call (a
primitive declaring ``call_param``) without an entry runs its program
compiled; any other primitive without an entry is lowered to its ``impl``
with the parameters bound, so only primitives whose implementation is not
plain NumPy (control flow) need one.  Loops run in Python over compiled bodies.
"""
from __future__ import annotations

import threading
from functools import partial

import numpy as np

from ..core import Literal, ProgramMemo, Var
from ..core import eval_primitive
from ..custom_derivatives import custom_lin_p
from ..primitives.contraction import dot_general_p
from ..primitives.control_flow import cond_p, scan_p, split as _split, while_p
from ..primitives.linear_solve import linear_solve_p, solve_operands
from .backend import Backend, register_backend
from .passes import simplify

LOWERINGS = {}


def register_lowering(prim, rule):
    """``rule(**params)`` returns the callable that evaluates ``prim``."""
    LOWERINGS[prim] = rule


def _ufunc(prim):
    impl = prim.impl
    return impl if isinstance(impl, np.ufunc) else None


def _lowering(eqn):
    prim = eqn.prim
    rule = LOWERINGS.get(prim)
    if rule is not None:
        return rule(**eqn.params)
    if prim.call_param is not None:   # a call: its program, compiled
        program = eqn.params[prim.call_param]
        if not program.constvars:
            return compile_jaxpr(program)
    if eqn.params:
        return partial(prim.impl, **eqn.params)
    return prim.impl


def _reusable_input(eqn, i, owned, last_use, outset):
    """An input whose buffer can hold the result of elementwise ``eqn``."""
    out = eqn.outputs[0].aval
    if not out.ndim:
        return None
    for a in eqn.inputs:
        if (type(a) is Var and a in owned and last_use.get(a) == i and a not in outset
                and a.aval.shape == out.shape and a.aval.dtype == out.dtype):
            return a
    return None


def _generate(jaxpr):
    """(source, namespace) of the Python function running ``jaxpr``."""
    names = {}
    ns = {}

    def name(a):
        if type(a) is Literal:
            key = f"k{len(ns)}"
            ns[key] = a.val
            return key
        n = names.get(a)
        if n is None:
            n = names[a] = f"v{len(names)}"
        return n

    eqns, outvars = simplify(jaxpr)  # common subexpressions
    last_use = {}
    for i, eqn in enumerate(eqns):
        for a in eqn.inputs:
            if type(a) is Var:
                last_use[a] = i
    outset = {a for a in outvars if type(a) is Var}
    dead_after = {}
    for v, i in last_use.items():
        if v not in outset:
            dead_after.setdefault(i, []).append(v)

    params = ", ".join(name(v) for v in jaxpr.invars)
    lines = [f"def compiled({params}):"]
    owned = set()  # variables holding arrays this program allocated (never views)
    for i, eqn in enumerate(eqns):
        fname = f"{''.join(c if c.isalnum() else '_' for c in eqn.prim.name)}_{i}"
        ns[fname] = _lowering(eqn)
        args = ", ".join(name(a) for a in eqn.inputs)
        if _ufunc(eqn.prim) is not None and not eqn.params:
            out = eqn.outputs[0]
            reuse = _reusable_input(eqn, i, owned, last_use, outset)
            if reuse is not None:
                args += f", out={name(reuse)}"
            if out.aval.ndim:
                owned.add(out)
        else:
            # Other operations may return views of (or alias) their inputs, so
            # those buffers must not be overwritten later.
            owned.difference_update(eqn.inputs)
            if eqn.prim is dot_general_p and eqn.outputs[0].aval.ndim:
                owned.add(eqn.outputs[0])  # a product is a new array: `W - lr * (x.T @ g)` reuses it
        if eqn.prim.multiple_results:
            outs = "".join(name(v) + ", " for v in eqn.outputs)
            lines.append(f"    ({outs}) = {fname}({args})" if eqn.outputs else f"    {fname}({args})")
        else:
            lines.append(f"    {name(eqn.outputs[0])} = {fname}({args})")
        dead = dead_after.get(i)
        if dead:
            lines.append("    del " + ", ".join(name(v) for v in dead))
    lines.append("    return [" + ", ".join(name(a) for a in outvars) + "]")
    return "\n".join(lines), ns


_LOCK = threading.Lock()


def compile_jaxpr(jaxpr):
    """Return ``fn(*args) -> list of outputs`` for a program without constvars."""
    fn = _COMPILED.get(jaxpr)
    if fn is not None:
        return fn
    assert not jaxpr.constvars, "compile_jaxpr expects constants to be inputs"
    src, ns = _generate(jaxpr)
    exec(compile(src, f"<tangentia-jit-{id(jaxpr):x}>", "exec"), ns)
    fn = ns["compiled"]
    fn.source = src
    with _LOCK:
        return _COMPILED.setdefault(jaxpr, fn)


_COMPILED = ProgramMemo("numpy backend: compiled code")


class NumpyBackend(Backend):
    name = "numpy"

    def compile(self, jaxpr):
        return compile_jaxpr(jaxpr)

    def source(self, jaxpr):
        src, ns = _generate(jaxpr)
        return src


register_backend(NumpyBackend())


# ---------------------------------------------------------------------------
# Lowerings of the primitives that carry programs and are not calls (calls run
# their program compiled: ``_lowering``).


def _custom_lin(**params):
    def run(*args):
        return eval_primitive(custom_lin_p, args, params)
    return run


register_lowering(custom_lin_p, _custom_lin)


def _cond(branches):
    fns = [compile_jaxpr(b) for b in branches]
    last = len(fns) - 1

    def run(index, *ops):
        i = int(index)
        return fns[0 if i < 0 else last if i > last else i](*ops)
    return run


register_lowering(cond_p, _cond)


def _while(cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_f = compile_jaxpr(cond_jaxpr)
    body_f = compile_jaxpr(body_jaxpr)

    def run(*args):
        cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
        while cond_f(*cc, *carry)[0]:
            carry = body_f(*bc, *carry)
        return carry
    return run


register_lowering(while_p, _while)


def _scan(jaxpr, num_consts, num_carry, length, reverse, unroll):
    f = compile_jaxpr(jaxpr)
    y_avals = [v.aval for v in jaxpr.outvars[num_carry:]]
    steps = range(length - 1, -1, -1) if reverse else range(length)

    def run(*args):
        consts, carry, xs = _split(args, num_consts, num_carry)
        ys = [np.empty((length,) + a.shape, a.dtype) for a in y_avals]
        for i in steps:
            out = f(*consts, *carry, *[x[i] for x in xs])
            carry = out[:num_carry]
            for buf, y in zip(ys, out[num_carry:]):
                buf[i] = y
        return list(carry) + ys
    return run


register_lowering(scan_p, _scan)


def _linear_solve(jaxprs, const_lengths, num_b):
    fn = compile_jaxpr(jaxprs[2])
    start, stop, first_b = solve_operands(const_lengths)

    def run(*args):
        return fn(*args[start:stop], *args[first_b:])
    return run


register_lowering(linear_solve_p, _linear_solve)
