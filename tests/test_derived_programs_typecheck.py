"""Deep checks (issue 25, item 5), beyond the programs as they are staged.

``TANGENTIA_CHECK_PROGRAMS=1`` (tests/conftest.py) type-checks every program a
``JaxprTrace`` builds, with the programs it carries.  Other programs are derived
from those without being traced again: dead-code elimination, the known and unknown
halves that partial evaluation cuts out of a loop body or a call, the residual
splits of ``linearize``, the one-equation programs of eager loops
(``compiler.backend.run_equation``).  These tests type-check every program that
reaches a backend (``compile_program``) or transposition (``ad.backward_pass``) on
the paths that derive them: eager and staged ``grad``, ``vjp``, ``linearize``,
``jvp`` and ``vmap`` through ``scan``, ``while_loop``, ``cond``, the custom rules,
``custom_linear_solve`` and ``checkpoint``."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core, lax
from tangentia.api import staging
from tangentia.compiler import backend
from tangentia.interpreters import ad
from tangentia.primitives import call, remat


@tg.custom_jvp
def _softplus(x):
    return tnp.log1p(tnp.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] / (1.0 + tnp.exp(-p[0]))))


@tg.custom_vjp
def _halfgrad(x):
    return x * 1.0


_halfgrad.defvjp(lambda x: (x * 1.0, None), lambda r, g: (g * 0.5,))  # (linear: jvp transposes it)


def _fun(x):
    """Every kind of carried program, with known and unknown parts in each (the
    while loop of ``_fun_fwd`` is a fori_loop with static bounds here: reverse mode)."""
    c, ys = lax.scan(lambda c, v: (c * tnp.cos(v) + _softplus(v), tnp.sin(c) * v), 1.0, x)
    w = lax.fori_loop(0, 3, lambda i, s: s * 0.5 + tnp.sin(x[i]), c)
    b = lax.cond(x[0] > 0, lambda v: tnp.sin(v) * c, lambda v: tnp.cos(v) + c, x[1])
    z = lax.custom_linear_solve(lambda v: 3.0 * v, ys, lambda mv, r: r / 3.0, symmetric=True)
    r = tg.checkpoint(lambda v: tnp.tanh(v) * v)(x)
    return tnp.sum(z * r) + w * b + tnp.sum(_halfgrad(ys))


def _fun_fwd(x):
    n, w = lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 0.5 + x[s[0]]),
                          (0, x[3]))
    return _fun(x) * w


X = np.array([0.3, -0.7, 1.1, 0.2])
PATHS = {
    "grad": lambda: tg.grad(_fun)(X),
    "jit(grad)": lambda: tg.jit(tg.grad(_fun))(X),
    "vjp": lambda: tg.vjp(_fun, X)[1](1.0),
    "linearize": lambda: tg.linearize(_fun, X)[1](np.ones(4)),
    "jvp": lambda: tg.jvp(_fun_fwd, (X,), (np.ones(4),)),
    "jit(jvp)": lambda: tg.jit(lambda x: tg.jvp(_fun_fwd, (x,), (np.ones(4),)))(X),
    "vmap(jacfwd)": lambda: tg.vmap(tg.jacfwd(_fun_fwd))(np.stack([X, -X])),
    "vmap(grad)": lambda: tg.vmap(tg.grad(_fun))(np.stack([X, -X])),
    "grad(grad)": lambda: tg.grad(lambda x: tg.grad(_fun)(x)[2])(X),
}


@pytest.fixture
def checked(monkeypatch):
    """Type-check each program handed to a backend or to transposition; returns the
    list of what was checked (a counter that the test is not vacuous)."""
    seen = []

    def check(jaxpr):
        if getattr(jaxpr, "inline", False):  # eager grad's recorded equations: not a
            for e in jaxpr.eqns:            # program, but the programs they carry are
                for program in core.subjaxprs(e.prim, e.params):
                    core.typecheck_jaxpr(getattr(program, "jaxpr", program))
                    seen.append(program)
        else:
            core.typecheck_jaxpr(jaxpr)
            seen.append(jaxpr)

    compile_program, backward_pass = backend.compile_program, ad.backward_pass

    def compiling(jaxpr, *args, **kwargs):
        check(jaxpr)
        return compile_program(jaxpr, *args, **kwargs)

    def transposing(jaxpr, consts, cts):
        check(jaxpr)
        return backward_pass(jaxpr, consts, cts)

    for module in (backend, staging, call, remat):
        monkeypatch.setattr(module, "compile_program", compiling)
    monkeypatch.setattr(ad, "backward_pass", transposing)
    return seen


@pytest.mark.parametrize("path", list(PATHS))
def test_every_derived_program_typechecks(path, checked):
    got = PATHS[path]()
    assert len(checked) >= 3, [str(j)[:200] for j in checked]
    # and the numbers are right: reverse mode against forward mode
    if path in ("grad", "jit(grad)", "vjp"):
        want = tg.jacfwd(_fun)(X)
        np.testing.assert_allclose(got if path != "vjp" else got[0], want, rtol=1e-12)


def test_the_fixture_sees_a_broken_derived_program(monkeypatch, checked):
    # the same check refuses an ill-typed program handed to a backend (it can fail)
    from tangentia.interpreters import partial_eval as pe
    real = pe.dce_jaxpr

    def broken(jaxpr):
        out = real(jaxpr)
        if not out.eqns:
            return out
        e = out.eqns[-1]
        wrong = core.Var(core.ShapedArray((5, 5), e.outputs[0].aval.dtype))
        return core.Jaxpr(out.constvars, out.invars,
                          out.eqns[:-1] + [core.Eqn(e.prim, e.inputs, [wrong] + e.outputs[1:],
                                                    e.params)], out.outvars)
    monkeypatch.setattr(pe, "dce_jaxpr", broken)
    monkeypatch.setattr(pe, "CHECK_PROGRAMS", False)  # (only this fixture checks)
    with pytest.raises(core.JaxprTypeError):
        tg.grad(_fun)(X)
