"""The typed IR: programs from every transformation type-check, evaluate to
the function's values, print readably, and malformed programs are rejected."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core, lax


@tg.custom_jvp
def _softplus(x):
    return tnp.log1p(tnp.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] / (1.0 + tnp.exp(-p[0]))))


def _f(x):
    return tnp.sum(tnp.tanh(x) * x[::-1]) + _softplus(x[0])


def _loop(x):
    c, ys = lax.scan(lambda c, v: (c * tnp.cos(v), c + v), 1.0, x)
    return c + tnp.sum(ys) + lax.cond(x[0] > 0, tnp.sin, tnp.cos, x[1])


def _loops(x):
    # a while loop (its cond and body) and a linear solve with aux (its four programs)
    n, y = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, tnp.sin(c[1]) * 0.5),
                          (0, x))

    def solve(matvec, b):
        return b / 2.0, tnp.sum(b)

    z, aux = lax.custom_linear_solve(lambda v: 2.0 * v, y, solve, transpose_solve=solve,
                                     has_aux=True)
    return tnp.sum(z) * aux + n


X = np.array([0.3, -0.7, 1.1, 0.2])

PROGRAMS = {
    "f": (_f, (X,)),
    "grad": (tg.grad(_f), (X,)),
    "hessian": (tg.hessian(_f), (X,)),
    "vmap(grad)": (tg.vmap(tg.grad(_f)), (np.stack([X, 2 * X]),)),
    "jit(grad)": (tg.jit(tg.grad(_f)), (X,)),
    "loop": (_loop, (X,)),
    "grad(loop)": (tg.grad(_loop), (X,)),
    "vmap(loop)": (tg.vmap(_loop), (np.stack([X, -X]),)),
    "jvp(grad(loop))": (lambda x: tg.jvp(tg.grad(_loop), (x,), (np.ones(4),))[1], (X,)),
    "loops": (_loops, (X,)),
    "jvp(loops)": (lambda x: tg.jvp(_loops, (x,), (np.ones(4),)), (X,)),
    "vmap(loops)": (tg.vmap(_loops), (np.stack([X, -X]),)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_typecheck_and_evaluate_to_the_function(name):
    fun, args = PROGRAMS[name]
    closed = tg.make_jaxpr(fun)(*args)
    assert core.typecheck_jaxpr(closed.jaxpr)
    got = closed(*args)
    want = fun(*args)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)  # (a program dropping an output must fail here)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_printed_program_shows_types_and_nesting():
    s = str(tg.make_jaxpr(_loop)(X))
    assert s.startswith("{ lambda ")
    assert "a:f64[4]" in s
    assert "scan[" in s and "cond[" in s and "length=4" in s
    assert s.rstrip().endswith("}")
    s = str(tg.make_jaxpr(_f)(X))
    assert "custom_jvp_call[" in s and "name='_softplus'" in s


def test_typechecker_rejects_a_wrong_output_type():
    closed = tg.make_jaxpr(lambda x: tnp.sin(x) * 2.0)(X)
    jaxpr = closed.jaxpr
    eqn = jaxpr.eqns[0]
    bad_out = core.Var(core.ShapedArray((5,), np.dtype(np.float64)))
    bad = core.Jaxpr(jaxpr.constvars, jaxpr.invars,
                     [core.Eqn(eqn.prim, eqn.inputs, [bad_out], eqn.params)] + jaxpr.eqns[1:],
                     jaxpr.outvars)
    with pytest.raises(core.JaxprTypeError, match=r"equation 0 \(sin\).*f64\[5\].*f64\[4\]"):
        core.typecheck_jaxpr(bad)


def test_typechecker_rejects_an_undefined_variable():
    closed = tg.make_jaxpr(lambda x: tnp.sin(x) * 2.0)(X)
    jaxpr = closed.jaxpr
    stray = core.Var(core.ShapedArray((4,), np.dtype(np.float64)))
    eqn = jaxpr.eqns[-1]
    bad = core.Jaxpr(jaxpr.constvars, jaxpr.invars,
                     jaxpr.eqns[:-1] + [core.Eqn(eqn.prim, [stray] + list(eqn.inputs[1:]),
                                                 eqn.outputs, eqn.params)],
                     jaxpr.outvars)
    with pytest.raises(core.JaxprTypeError, match="undefined variable"):
        core.typecheck_jaxpr(bad)


def test_typechecker_rejects_an_input_that_is_a_value():
    # An equation's inputs are Vars and Literals; a constant is a constvar.
    jaxpr = tg.make_jaxpr(lambda x: tnp.sin(x) * 2.0)(X).jaxpr
    eqn = jaxpr.eqns[-1]
    for value in (np.ones(4), 2.0):
        bad = core.Jaxpr(jaxpr.constvars, jaxpr.invars,
                         jaxpr.eqns[:-1] + [core.Eqn(eqn.prim, [value] + list(eqn.inputs[1:]),
                                                     eqn.outputs, eqn.params)],
                         jaxpr.outvars)
        with pytest.raises(core.JaxprTypeError, match=r"equation 1 \(mul\) has an input that "
                           rf"is neither a Var nor a Literal: {type(value).__name__}"):
            core.typecheck_jaxpr(bad)


def test_literals_print_as_python_values():
    s = str(tg.make_jaxpr(lambda x: x * np.float64(2.0) + np.float32(1.5) + 3)(1.0))
    assert "mul a 2.0" in s and "add b 1.5" in s and "add c 3\n" in s
    assert "np." not in s


# ---------------------------------------------------------------------------
# The checker recurses into the programs that equations carry


def _with_params(program, i, **params):
    """``program`` with equation ``i``'s params updated."""
    e = program.eqns[i]
    eqns = list(program.eqns)
    eqns[i] = core.Eqn(e.prim, e.inputs, e.outputs, {**e.params, **params})
    return core.Jaxpr(program.constvars, program.invars, eqns, program.outvars)


def _eqn_index(jaxpr, name):
    return next(i for i, e in enumerate(jaxpr.eqns) if e.prim.name == name)


def test_checker_rejects_a_scan_body_taking_another_carry_type():
    def body(c, v):
        return c.astype(np.float64) * tnp.cos(v), v

    def run(x, carry):
        return lax.scan(body, carry, x)

    jaxpr = tg.make_jaxpr(run)(X, 1.0).jaxpr
    i = _eqn_index(jaxpr, "scan")
    # The same body traced for a float32 carry: same output types, other input types.
    other = tg.make_jaxpr(body)(np.float32(1.0), 0.5).jaxpr
    assert core.typecheck_jaxpr(jaxpr)
    bad = _with_params(jaxpr, i, jaxpr=other)
    with pytest.raises(core.JaxprTypeError,
                       match=r"equation \d+ \(scan\), its jaxpr: the inputs have types "
                             r"\['f32\[\]', 'f64\[\]'\] but \['f64\[\]', 'f64\[\]'\]"):
        core.typecheck_jaxpr(bad)


def test_checker_rejects_a_branch_reading_a_variable_of_the_outer_program():
    jaxpr = tg.make_jaxpr(lambda x: lax.cond(x[0] > 0, tnp.sin, tnp.cos, x))(X).jaxpr
    i = _eqn_index(jaxpr, "cond")
    branches = list(jaxpr.eqns[i].params["branches"])
    b = getattr(branches[1], "jaxpr", branches[1])
    e = b.eqns[0]
    leaky = core.Jaxpr(b.constvars, b.invars,
                       [core.Eqn(e.prim, [jaxpr.invars[0]], e.outputs, e.params)] + b.eqns[1:],
                       b.outvars)
    branches[1] = leaky
    with pytest.raises(core.JaxprTypeError,
                       match=r"\(cond\), its branch 1: equation 0 \(sin\) uses undefined"):  # (true)
        core.typecheck_jaxpr(_with_params(jaxpr, i, branches=tuple(branches)))


def test_checker_finds_a_wrong_type_two_programs_deep():
    f = tg.jit(lambda x: lax.scan(lambda c, v: (c + tnp.sin(v), c), 0.0, x))
    jaxpr = tg.make_jaxpr(f)(X).jaxpr
    i = _eqn_index(jaxpr, "jit")
    inner = jaxpr.eqns[i].params["jaxpr"]
    j = _eqn_index(inner, "scan")
    body = inner.eqns[j].params["jaxpr"]
    k = _eqn_index(body, "sin")
    e = body.eqns[k]
    bad_out = core.Var(core.ShapedArray((2,), np.dtype(np.float64)))
    body_bad = core.Jaxpr(body.constvars, body.invars,
                          body.eqns[:k] + [core.Eqn(e.prim, e.inputs, [bad_out], e.params)],
                          body.outvars)
    with pytest.raises(core.JaxprTypeError,
                       match=rf"equation {i} \(jit\), its jaxpr: equation {j} \(scan\), its "
                             rf"jaxpr: equation {k} \(sin\) has output types \['f64\[2\]'\]"):
        core.typecheck_jaxpr(_with_params(jaxpr, i, jaxpr=_with_params(inner, j, jaxpr=body_bad)))


def test_checker_rejects_a_while_cond_that_is_not_boolean():
    def run(x):
        return lax.while_loop(lambda c: c[0] < 3.0, lambda c: c * 2.0, x)

    jaxpr = tg.make_jaxpr(run)(X).jaxpr
    i = _eqn_index(jaxpr, "while")
    not_bool = tg.make_jaxpr(lambda c: c[0] * 1.0)(X).jaxpr
    with pytest.raises(core.JaxprTypeError,
                       match=r"\(while\), its cond_jaxpr: the outputs have types \['f64\[\]'\] "
                             r"but \['bool\[\]'\]"):
        core.typecheck_jaxpr(_with_params(jaxpr, i, cond_jaxpr=not_bool))


def test_checker_takes_the_input_types_it_is_given():
    jaxpr = tg.make_jaxpr(tnp.sin)(X).jaxpr
    assert core.typecheck_jaxpr(jaxpr, [core.ShapedArray((4,), np.dtype(np.float64))])
    with pytest.raises(core.JaxprTypeError, match=r"inputs have types \['f64\[4\]'\] but "
                                                  r"\['f32\[4\]'\]"):
        core.typecheck_jaxpr(jaxpr, [core.ShapedArray((4,), np.dtype(np.float32))])


def _lying_primitive():
    """A primitive whose shape rule gives f64[7] from its second call on: a
    staged program records the first answer, which checking it contradicts."""
    calls = []
    p = core.Primitive("lying_shape")
    p.impl = lambda x: x

    def abstract_eval(x):
        calls.append(x)
        return x if len(calls) == 1 else core.ShapedArray((7,), x.dtype)

    p.abstract_eval = abstract_eval
    return p


def test_check_programs_setting_checks_every_staged_program(monkeypatch):
    from tangentia.interpreters import partial_eval as pe
    run = lambda p: lambda x: lax.scan(lambda c, v: (c + p.bind(v), c), 0.0, x)  # noqa: E731
    monkeypatch.setattr(pe, "CHECK_PROGRAMS", False)
    tg.make_jaxpr(run(_lying_primitive()))(X)  # not checked: no error
    monkeypatch.setattr(pe, "CHECK_PROGRAMS", True)
    with pytest.raises(core.JaxprTypeError, match=r"equation 0 \(lying_shape\) has output "
                                                  r"types \['f64\[\]'\] but its rule gives "
                                                  r"\['f64\[7\]'\]"):
        tg.make_jaxpr(run(_lying_primitive()))(X)  # the scan body, as it is built


def _call_programs():
    """One staged call of each primitive that carries its program as a call
    (``call_param``): the function applied is ``sin(x) * 2``."""
    from tangentia.custom_batching import custom_vmap
    from tangentia.experimental.custom_dce import custom_dce

    def g(x):
        return tnp.sin(x) * 2.0

    cj = tg.custom_jvp(g)
    cj.defjvp(lambda p, t: (cj(p[0]), 2.0 * tnp.cos(p[0]) * t[0]))
    cv = tg.custom_vjp(g)
    cv.defvjp(lambda x: (cv(x), tnp.cos(x)), lambda r, ct: (2.0 * ct * r,))
    cm = custom_vmap(g)
    cm.def_vmap(lambda size, batched, x: (g(x), batched[0]))
    cd = custom_dce(g)
    cd.def_dce(lambda used, x: g(x))
    return {"custom_jvp_call": cj, "custom_vjp_call": cv, "custom_vmap_call": cm,
            "custom_dce_call": cd, "jit": tg.jit(g), "checkpoint": tg.checkpoint(g)}


@pytest.mark.parametrize("prim", ["custom_jvp_call", "custom_vjp_call", "custom_vmap_call",
                                  "custom_dce_call", "jit", "checkpoint"])
def test_checker_rejects_a_wrong_type_inside_a_call(prim):
    # custom rules' calls and jit (JAX's pjit), checkpoint: an equation of the carried
    # program giving the wrong type is found, and named through the call
    fun = _call_programs()[prim]
    jaxpr = tg.make_jaxpr(fun)(X).jaxpr
    i = _eqn_index(jaxpr, prim)
    eqn = jaxpr.eqns[i]
    param = eqn.prim.call_param
    inner = eqn.params[param]
    np.testing.assert_allclose(core.eval_jaxpr(jaxpr, [], X)[0], np.sin(X) * 2.0, rtol=1e-15)
    k = _eqn_index(inner, "sin")
    e = inner.eqns[k]
    bad_out = core.Var(core.ShapedArray((3,), np.dtype(np.float64)))
    bad = core.Jaxpr(inner.constvars, inner.invars,
                     inner.eqns[:k] + [core.Eqn(e.prim, e.inputs, [bad_out], e.params)]
                     + inner.eqns[k + 1:], inner.outvars)
    assert core.typecheck_jaxpr(jaxpr)
    with pytest.raises(core.JaxprTypeError,
                       match=rf"equation {i} \({prim}\), its {param}: equation {k} \(sin\) has "
                             r"output types \['f64\[3\]'\] but its rule gives \['f64\[4\]'\]"):
        core.typecheck_jaxpr(_with_params(jaxpr, i, **{param: bad}))
