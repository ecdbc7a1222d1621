"""Compile a program to straight-line Python over NumPy.

Each equation becomes one call of its primitive's lowering (a NumPy
function with its parameters bound), so running a compiled program costs
about as much as the NumPy calls themselves.  Every intermediate is
deleted right after its last use, so memory is freed as early as possible,
and an elementwise operation writes its result into the buffer of an
operand that dies there (``out=``) when that buffer is one the program
allocated itself and has the result's shape and dtype.  Repeated
computations (same primitive, inputs and parameters) are done once.
"""
from __future__ import annotations

from functools import partial

from ..core import Eqn, Literal, Var


def _lowering(eqn):
    prim = eqn.prim
    if prim.lower is not None:
        return prim.lower(**eqn.params)
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


def _cse_eqns(jaxpr):
    """Common-subexpression elimination; returns (eqns, outvars)."""
    seen, subst, eqns = {}, {}, []
    for eqn in jaxpr.eqns:
        ins = [subst.get(a, a) if type(a) is Var else a for a in eqn.inputs]
        key = None
        if not eqn.prim.multiple_results:
            key = (eqn.prim, tuple(a if type(a) is Var else ("literal", a.val, a.aval.dtype)
                                   for a in ins), tuple(sorted(eqn.params.items())))
            try:
                hash(key)
            except TypeError:  # unhashable parameters (arrays, programs, slices)
                key = None
        if key is not None:
            prev = seen.get(key)
            if prev is not None:
                subst[eqn.outputs[0]] = prev
                continue
            seen[key] = eqn.outputs[0]
        eqns.append(Eqn(eqn.prim, ins, eqn.outputs, eqn.params, eqn.source)
                    if any(a is not b for a, b in zip(ins, eqn.inputs)) else eqn)
    return eqns, [subst.get(a, a) if type(a) is Var else a for a in jaxpr.outvars]


def compile_jaxpr(jaxpr):
    """Return ``fn(*args) -> list of outputs`` for a program without constvars."""
    fn = jaxpr.cache.get("numpy_fn")
    if fn is not None:
        return fn
    assert not jaxpr.constvars, "compile_jaxpr expects constants to be inputs"
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

    eqns, outvars = _cse_eqns(jaxpr)
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
        fname = f"f{i}"
        ns[fname] = _lowering(eqn)
        args = ", ".join(name(a) for a in eqn.inputs)
        if eqn.prim.ufunc is not None:
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
        if eqn.prim.multiple_results:
            outs = "".join(name(v) + ", " for v in eqn.outputs)
            lines.append(f"    ({outs}) = {fname}({args})" if eqn.outputs else f"    {fname}({args})")
        else:
            lines.append(f"    {name(eqn.outputs[0])} = {fname}({args})")
        dead = dead_after.get(i)
        if dead:
            lines.append("    del " + ", ".join(name(v) for v in dead))
    lines.append("    return [" + ", ".join(name(a) for a in outvars) + "]")
    src = "\n".join(lines)
    exec(compile(src, f"<tangentia-jit-{id(jaxpr):x}>", "exec"), ns)
    fn = ns["compiled"]
    fn.source = src
    jaxpr.cache["numpy_fn"] = fn
    return fn
