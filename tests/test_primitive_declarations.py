"""Primitives declare the programs their equations carry, and every walk over
nested programs finds them through that one declaration (``core.subjaxprs``).

A staged example of every primitive that carries programs (calls, loops,
branches, the custom-rule calls) is walked by an independent reference (every
parameter holding a ``Jaxpr``); each program it finds gets a marker equation
(with effects, over a named axis), and every walk must see it: the type
checker, dead-code elimination, program sizes, axis names, pictures, the
numba backend's size estimates.  Programs' memos (``core.ProgramMemo``) are
private to their owner and die with the program.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core, lax
from tangentia._jaxpr_dot import to_dot
from tangentia.compiler import backend
from tangentia.custom_batching import custom_vmap
from tangentia.experimental.custom_dce import custom_dce
from tangentia.interpreters import ad, batching
from tangentia.interpreters import partial_eval as pe

X = np.array([0.5, 1.5, 2.0])


def _f_jit(x):
    return tg.jit(lambda y: tnp.sin(y) * 2.0)(x)


def _f_checkpoint(x):
    return tg.checkpoint(lambda y: tnp.sin(y) * 2.0)(x)


def _f_cond(x):
    return lax.cond(x[0] > 0, lambda y: tnp.sin(y), lambda y: tnp.cos(y), x)


def _f_while(x):
    return lax.while_loop(lambda c: c[0] < 10.0, lambda c: c * 2.0 + 1.0, x)


def _f_scan(x):
    return lax.scan(lambda c, y: (c + tnp.sin(y), c * y), 0.0, x)[1]


@tg.custom_jvp
def _cj(x):
    return tnp.sin(x)


@_cj.defjvp
def _cj_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return tnp.sin(x), tnp.cos(x) * t


@tg.custom_vjp
def _cv(x):
    return tnp.sin(x)


_cv.defvjp(lambda x: (tnp.sin(x), x), lambda x, g: (tnp.cos(x) * g,))


@custom_vmap
def _cm(x):
    return tnp.sin(x)


@_cm.def_vmap
def _cm_rule(axis_size, in_batched, x):
    return tnp.sin(x), in_batched[0]


@custom_dce
def _cd(x):
    return tnp.sin(x), tnp.cos(x)


@_cd.def_dce
def _cd_rule(used, x):
    return (tnp.sin(x) if used[0] else None, tnp.cos(x) if used[1] else None)


def _f_linear_solve(x):
    return lax.custom_linear_solve(lambda v: 2.0 * v, x, lambda mv, b: b / 2.0,
                                   lambda mv, b: b / 2.0)


EXAMPLES = {
    "jit": _f_jit, "checkpoint": _f_checkpoint, "cond": _f_cond, "while": _f_while,
    "scan": _f_scan, "custom_jvp_call": lambda x: _cj(x) * 2.0,
    "custom_vjp_call": lambda x: _cv(x) * 2.0, "custom_vmap_call": lambda x: _cm(x) * 2.0,
    "custom_dce_call": lambda x: _cd(x)[0] + _cd(x)[1],
    "custom_linear_solve": _f_linear_solve,
}


def _staged(name):
    """The example's program and its equation of primitive ``name``."""
    closed = tg.make_jaxpr(EXAMPLES[name])(X)
    eqns = [e for e in closed.jaxpr.eqns if e.prim.name == name]
    assert eqns, f"the example of {name} stages no {name} equation:\n{closed}"
    return closed.jaxpr, eqns[0]


def _reference_programs(params):
    """``{param: [(index or None, Jaxpr)]}`` of every parameter holding programs,
    found by type (independently of the primitives' declarations)."""
    found = {}
    for k, v in params.items():
        items = list(enumerate(v)) if isinstance(v, (tuple, list)) else [(None, v)]
        for i, q in items:
            if isinstance(q, core.ClosedJaxpr):
                q = q.jaxpr
            if isinstance(q, core.Jaxpr):
                found.setdefault(k, []).append((i, q))
    return found


def _all_equations(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for programs in _reference_programs(eqn.params).values():
            for _, q in programs:
                yield from _all_equations(q)


def test_every_primitive_carrying_programs_declares_them():
    seen = set()
    for name in EXAMPLES:
        jaxpr, _ = _staged(name)
        for eqn in _all_equations(jaxpr):
            prim = eqn.prim
            carried = _reference_programs(eqn.params)
            undeclared = sorted(set(carried) - set(prim.program_params))
            assert not undeclared, (f"{prim.name} carries programs in {undeclared} but declares "
                                    f"program_params={prim.program_params}")
            for k in prim.program_params:   # a declared parameter holds programs (or None)
                v = eqn.params[k]
                for q in (v if isinstance(v, (tuple, list)) else (v,)):
                    assert q is None or isinstance(q, (core.Jaxpr, core.ClosedJaxpr)), (prim, k)
            if carried:
                seen.add(prim.name)
                # the helper gives exactly these programs, in declaration order
                want = [q for k in prim.program_params for _, q in carried.get(k, ())]
                got = list(core.subjaxprs(prim, eqn.params))
                assert len(got) == len(want) and all(a is b for a, b in zip(got, want))
    declaring = {p.name for p in core.registered_primitives() if p.program_params}
    assert declaring == seen, (
        f"primitives declaring programs without an example here: {sorted(declaring - seen)}; "
        f"examples of primitives not declaring them: {sorted(seen - declaring)}")


def test_declarations_are_well_formed():
    calls = set()
    for p in core.registered_primitives():
        assert type(p.program_params) is tuple and all(type(k) is str for k in p.program_params)
        if p.call_param is not None:
            assert p.call_param in p.program_params, p
            calls.add(p.name)
        if p.program_types is not None:
            assert p.program_params, p
    assert calls == {"jit", "checkpoint", "custom_jvp_call", "custom_vjp_call",
                     "custom_vmap_call", "custom_dce_call"}
    with pytest.raises(TypeError, match="program_params must be a tuple"):
        core.Primitive("bad", program_params="jaxpr")
    with pytest.raises(TypeError, match="call_param 'jaxpr' is not among program_params"):
        core.Primitive("bad", program_params=("body",), call_param="jaxpr")


def test_a_program_in_an_undeclared_parameter_fails_the_type_check():
    jaxpr, eqn = _staged("jit")
    sneaky = core.Primitive("sneaky", multiple_results=True)   # declares nothing
    sneaky.abstract_eval = lambda *avals, jaxpr, name, backend=None: [
        v.aval for v in jaxpr.outvars]
    bad = core.Jaxpr(jaxpr.constvars, jaxpr.invars,
                     [core.Eqn(sneaky, e.inputs, e.outputs, e.params) if e is eqn else e
                      for e in jaxpr.eqns], jaxpr.outvars)
    with pytest.raises(core.JaxprTypeError, match="'jaxpr' of sneaky holds a program, but the "
                                                  "primitive does not declare it"):
        core.typecheck_jaxpr(bad)


# A marker equation put into each carried program: it has effects, is over the
# named axis "marker_axis", and gives one float64 scalar (its declared type).
_MARK = core.Primitive("declarations_test_marker", multiple_results=True)
_MARK.abstract_eval = lambda axis_name: [core.ShapedArray((), np.dtype(np.float64))]
_MARK.has_effects = True


def _with_marker(jaxpr, dtype=np.float64):
    eqn = core.Eqn(_MARK, [], [core.Var(core.ShapedArray((), np.dtype(dtype)))],
                   {"axis_name": "marker_axis"})
    return core.Jaxpr(jaxpr.constvars, jaxpr.invars, [eqn, *jaxpr.eqns], jaxpr.outvars)


def _marked_variants(name, dtype=np.float64):
    """``(label, program)``: the example's program with the marker put into one of
    the programs its ``name`` equation carries, one variant per carried program."""
    jaxpr, eqn = _staged(name)
    out = []
    for k, programs in _reference_programs(eqn.params).items():
        for i, q in programs:
            v = eqn.params[k]
            old = v if i is None else v[i]
            one = _with_marker(q, dtype)
            if isinstance(old, core.ClosedJaxpr):
                one = core.ClosedJaxpr(one, old.consts)
            if i is None:
                new = one
            else:
                new = list(v)
                new[i] = one
                new = type(v)(new)
            marked = core.Eqn(eqn.prim, eqn.inputs, eqn.outputs, dict(eqn.params, **{k: new}),
                              eqn.source)
            program = core.Jaxpr(jaxpr.constvars, jaxpr.invars,
                                 [marked if e is eqn else e for e in jaxpr.eqns], jaxpr.outvars)
            out.append((k if i is None else f"{k}[{i}]", program, marked))
    assert out
    return out


def _reference_size(jaxpr):
    return sum(1 + sum(_reference_size(q) for ps in _reference_programs(e.params).values()
                       for _, q in ps) for e in jaxpr.eqns)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_walk_finds_every_carried_program(name):
    from tangentia.compiler.numba_backend import codegen
    base_size = _reference_size(_staged(name)[0])
    for label, program, marked in _marked_variants(name):
        where = f"{name}'s {label}"
        # the type checker recurses into it (and the marker's declared type fits)
        assert core.typecheck_jaxpr(program), where
        # dead-code elimination keeps the call for the effect inside, unused outputs or not
        assert pe.has_nested_effects(marked), where
        kept, _ = pe._dce([marked], [])
        assert kept == [marked], where
        # sizes: the backends' (tiering estimate) and the numba backend's
        assert backend.program_size(program) == base_size + 1 == _reference_size(program), where
        assert codegen._weight(program) == base_size + 1, where
        # vmap sees the named axis inside
        assert "marker_axis" in batching._axis_names(program), where
        assert batching._reads_axis(marked.prim, marked.params, "marker_axis"), where
        # the picture draws it
        assert "declarations_test_marker" in to_dot(core.ClosedJaxpr(program, [])), where


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_type_checker_checks_inside_every_carried_program(name):
    for label, program, _ in _marked_variants(name, dtype=np.int32):
        with pytest.raises(core.JaxprTypeError, match=r"\(declarations_test_marker\) has "
                                                      r"output types \['i32\[\]'\]"):
            core.typecheck_jaxpr(program)


@pytest.mark.filterwarnings("ignore:numba. no native lowering for custom_dce_call")
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_backends_run_every_program_carrying_primitive(name):
    f = EXAMPLES[name]
    want = np.asarray(f(X))
    for b in ("numpy", "numba"):
        got = np.asarray(tg.jit(f, backend=b)(X))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{name} on {b}")


def test_program_memos_are_private_and_die_with_the_program():
    a, b = core.ProgramMemo("a"), core.ProgramMemo("b")
    jaxpr = tg.make_jaxpr(lambda x: tnp.sin(x))(X).jaxpr
    assert a.get(jaxpr) is None and a.get(jaxpr, default=7) == 7
    assert a.set(jaxpr, 1) == 1
    assert a.get(jaxpr) == 1 and b.get(jaxpr) is None          # b sees nothing of a's
    assert a.set(jaxpr, 2, key=("k",)) == 2
    assert a.get(jaxpr) == 1 and a.get(jaxpr, ("k",)) == 2 and b.get(jaxpr, ("k",)) is None
    assert a.setdefault(jaxpr, 9) == 1 and b.setdefault(jaxpr, 9) == 9

    class Compiled:   # a memoized value that refers back to its program (a Tiered does)
        def __init__(self, program):
            self.program = program
    value = a.set(jaxpr, Compiled(jaxpr))
    ref = weakref.ref(value)
    del value, jaxpr
    gc.collect()
    assert ref() is None


def test_transformed_programs_are_memoized_per_owner():
    jaxpr = tg.make_jaxpr(lambda x: tnp.sin(x) * x)(X).jaxpr
    first = ad.jvp_jaxpr(jaxpr, (True,))
    assert ad.jvp_jaxpr(jaxpr, (True,)) is first
    assert ad.transpose_jaxpr(ad.jvp_jaxpr(jaxpr, (True,))[0], (False, True))[0] is not first[0]
    batched = batching.batch_jaxpr(jaxpr, (0,), 4)
    assert batching.batch_jaxpr(jaxpr, (0,), 4) is batched
    assert batching.batch_jaxpr(jaxpr, (0,), 5) is not batched
    split = pe.partial_eval_jaxpr(jaxpr, (True,))
    assert pe.partial_eval_jaxpr(jaxpr, (True,)) is split


def test_linearized_programs_are_marked_all_linear():
    def f(x):
        return [tnp.sin(x) * x + tnp.exp(x)]
    _, jaxpr, consts, _, _ = ad.linearize_flat(f, [X])
    assert jaxpr.all_linear is True
    assert tg.make_jaxpr(f)(X).jaxpr.all_linear is None
    ct = np.array([1.0, -2.0, 0.5])
    got = ad.backward_pass(jaxpr, consts, [ct])
    unmarked = core.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    assert unmarked.all_linear is None
    again = ad.backward_pass(unmarked, consts, [ct])   # (evaluates the non-linear part first)
    want = ct * (np.cos(X) * X + np.sin(X) + np.exp(X))
    assert len(got) == len(again) == 1
    np.testing.assert_allclose(got[0], want, rtol=1e-13)
    np.testing.assert_allclose(again[0], want, rtol=1e-13)


def test_the_registry_names_the_module_defining_a_primitive():
    # a custom call made here is this module's, not the library's (the subclass's
    # __init__ in core is not where it is defined)
    mine = core.CustomVmapCallPrimitive("declarations_test_call")
    assert mine.call_param == "call_jaxpr" and mine.program_params == ("call_jaxpr",)
    assert mine not in core.registered_primitives()
    assert mine in core.registered_primitives(__name__)
    plain = core.Primitive("declarations_test_plain")
    assert plain not in core.registered_primitives() and plain in core.registered_primitives(__name__)
