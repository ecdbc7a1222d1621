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
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_typecheck_and_evaluate_to_the_function(name):
    fun, args = PROGRAMS[name]
    closed = tg.make_jaxpr(fun)(*args)
    assert core.typecheck_jaxpr(closed.jaxpr)
    got = closed(*args)
    want = fun(*args)
    want = want if isinstance(want, (list, tuple)) else [want]
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
