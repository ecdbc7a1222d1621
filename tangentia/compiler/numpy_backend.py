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

from ..core import Literal, Primitive, ProgramMemo, Var
from ..core import eval_primitive, registered_primitives
from ..custom_derivatives import custom_lin_p
from ..interpreters.base_ops import broadcast_to_p, convert_element_type_p, reshape_p
from ..primitives import (contraction as _C, convolution as _CV, elementwise as _E, fft as _F,
                          linalg as _L, misc as _M, reductions as _R, sorting as _SO, special as _SP)
from ..primitives.callback import pure_callback_p
from ..primitives.contraction import dot_general_p
from ..primitives.elementwise import imag_p, integer_pow_p, real_p, select_p
from ..primitives.indexing import ARRAY, getitem_p, scatter_p
from ..primitives.control_flow import cond_p, scan_p, split as _split, while_p
from ..primitives.linear_solve import linear_solve_p, solve_operands
from ..primitives.prng import random_bits_p, random_gamma_p
from ..primitives.structural import concatenate_p
from .backend import AS_RUN, CARRIES, FOREIGN, FRESH, OVERLAPPING, Backend, fresh_in, register_backend
from .passes import simplify

LOWERINGS = {}


def register_lowering(prim, rule):
    """``rule(**params)`` returns the callable that evaluates ``prim``."""
    LOWERINGS[prim] = rule


def _ufunc(prim):
    impl = prim.impl
    return impl if isinstance(impl, np.ufunc) else None


# ``SPECIALIZED[prim](eqn) -> callable or None``: the code of one equation given its types,
# where the primitive's implementation checks what the program's types already settle
# (None: the implementation runs).  An eager ``hessian`` through ``odeint`` runs ~110,000
# selects, ~80,000 reshapes and ~35,000 getitems per call on this backend: there the
# implementations' Python layers were about a third of the call.
SPECIALIZED = {}


def _lowering(eqn):
    prim = eqn.prim
    rule = LOWERINGS.get(prim)
    if rule is not None:
        return rule(**eqn.params)
    special = SPECIALIZED.get(prim)
    if special is not None:
        fn = special(eqn)
        if fn is not None:
            return fn
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

    def typed(a):
        # A weakly typed input or literal is a Python scalar when the program runs, as
        # the ufuncs need (NumPy promotes it as the types say); an operation passing it
        # on, or the program returning it, gives it its dtype (the other backend's types).
        key = f"_{a.aval.dtype.name}"
        ns[key] = a.aval.dtype
        ns["_asarray"] = np.asarray     # (only where used: the constants' names stay)
        return f"_asarray({name(a)}, {key})"

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
        if _ufunc(eqn.prim) is None and any(a.aval.weak_type for a in eqn.inputs):
            lines.extend(f"    {name(v)} = {typed(v)}" for v in eqn.outputs if not v.aval.shape)
        dead = dead_after.get(i)
        if dead:
            lines.append("    del " + ", ".join(name(v) for v in dead))
    lines.append("    return [" + ", ".join(typed(a) if a.aval.weak_type else name(a)
                                             for a in outvars) + "]")
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


def _select(eqn):
    # select's implementation is np.where plus checks for object and string operands and
    # a Python float against bfloat16: with numeric NumPy types throughout, np.where alone
    if all(np.dtype(a.aval.dtype).kind in "biufc" for a in list(eqn.inputs) + list(eqn.outputs)) \
            and not any(type(a) is Literal and type(a.val) is float for a in eqn.inputs):
        return np.where
    return None


def _reshape(eqn):
    new_sizes = eqn.params["new_sizes"]
    reshape = np.reshape

    def run(x):
        # (the method where the operand has it: NumPy's function adds two Python layers)
        return x.reshape(new_sizes) if type(x) is np.ndarray else reshape(x, new_sizes)
    return run


def _getitem(eqn):
    spec = eqn.params["spec"]
    if any(e is ARRAY for e in spec):
        return None
    index = tuple(spec)     # no index arrays: the whole index is known
    asarray = np.asarray

    def run(x):
        return asarray(x)[index]
    return run


def _broadcast_to(eqn):
    shape = eqn.params["shape"]
    if type(eqn.inputs[0]) is Literal or int(np.prod(shape)) > _SMALL_BROADCAST:
        return None
    empty, broadcast_to = np.empty, np.broadcast_to

    def run(x):
        # a small result as a copy: np.broadcast_to's view costs ~10 Python calls (no code
        # here writes into a buffer it did not allocate, so a view and a copy are alike)
        dtype = getattr(x, "dtype", None)
        if dtype is None:
            return broadcast_to(x, shape)
        out = empty(shape, dtype)
        out[...] = x
        return out
    return run


_SMALL_BROADCAST = 4096      # elements


SPECIALIZED[select_p] = _select
SPECIALIZED[broadcast_to_p] = _broadcast_to
SPECIALIZED[reshape_p] = _reshape
SPECIALIZED[getitem_p] = _getitem


def _linear_solve(jaxprs, const_lengths, num_b):
    fn = compile_jaxpr(jaxprs[2])
    start, stop, first_b = solve_operands(const_lengths)

    def run(*args):
        return fn(*args[start:stop], *args[first_b:])
    return run


register_lowering(linear_solve_p, _linear_solve)


# ---------------------------------------------------------------------------
# Which outputs are new arrays on every backend and tier (``backend._aliased_outputs``:
# jit's results that may share memory with an input, a constant, a callback's array or
# another result are copied, as JAX's jit returns new buffers).  Claimed only where no
# backend returns an input or a view: computations (the elementwise primitives but the
# views ``real``/``imag`` and ``x ** 1``, contractions, reductions over some axis, sorts,
# linear algebra, special functions, FFTs, convolutions, random bits, scatters, a scan's
# stacked outputs); everything else (reshapes, slices, transposes, converts, loops'
# carries, identities) passes on the memory of its inputs.

def _fresh_modules():
    for p in registered_primitives():     # (a ufunc's result is a new array)
        if _ufunc(p) is not None:
            FRESH.setdefault(p, None)
    for mod in (_E, _C, _CV, _F, _L, _SO, _SP):
        for p in vars(mod).values():
            if isinstance(p, Primitive) and p.call_param is None and not p.program_params:
                FRESH.setdefault(p, None)
    for p in (real_p, imag_p):
        FRESH.pop(p, None)


_fresh_modules()
# (one operand: NumPy's einsum returns a view for 'ij->ji', 'ij->ij', 'ii->i')
FRESH[_C.einsum_p] = lambda eqn: len(eqn.inputs) > 1
for _p in (concatenate_p, scatter_p, random_bits_p, random_gamma_p, _M.cummax_p, _M.cummin_p,
           _M.cumprod_p, _R.cumsum_p, _R.argmax_p, _R.argmin_p):
    FRESH[_p] = None
for _p in (_R.reduce_sum_p, _R.reduce_max_p, _R.reduce_min_p,
           _R.reduce_prod_p, _R.reduce_and_p, _R.reduce_or_p):
    FRESH[_p] = lambda eqn: bool(eqn.params["axes"])            # (over no axis: x itself)
FRESH[integer_pow_p] = lambda eqn: eqn.params["y"] != 1
FRESH[convert_element_type_p] = lambda eqn: eqn.inputs[0].aval.dtype != eqn.outputs[0].aval.dtype

def _scan_fresh(eqn):
    # the stacked outputs are new; a carry is the body's new array after one step at least
    p = eqn.params
    body = fresh_in(p["jaxpr"]) if p["length"] > 0 else []
    return [k >= p["num_carry"] or (p["length"] > 0 and body[k]) for k in range(len(eqn.outputs))]


def _cond_fresh(eqn):
    # what every branch allocates
    per = [fresh_in(b) for b in eqn.params["branches"]]
    return [all(f[k] for f in per) for k in range(len(eqn.outputs))]


FRESH[scan_p] = _scan_fresh


def _while_carries(eqn):
    # a carry is its initial value (zero trips) or what the body allocates
    p = eqn.params
    first, body = p["cond_nconsts"] + p["body_nconsts"], fresh_in(p["body_jaxpr"])
    return [(first + k, body[k]) for k in range(len(eqn.outputs))]


CARRIES[while_p] = _while_carries
FRESH[cond_p] = _cond_fresh
FOREIGN.add(pure_callback_p)
OVERLAPPING.add(broadcast_to_p)
AS_RUN[0] = simplify
