"""Programs carried by primitives hold their constants one way: as leading
inputs, which the binder passes as operands (issue 14).  No nested program has
constvars or embeds a value, and caches keyed on a program or on a function
never hand back stale constant values: two closures with the same code over
different arrays give their own numbers under jit, scan, cond, while,
custom_jvp and odeint (which shares one compiled solve between them)."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.core import Jaxpr
from tangentia.experimental import ode
from tangentia.interpreters import ad

W1 = np.array([1.0, 2.0, 3.0])
W2 = np.array([-0.5, 0.25, 4.0])
X = np.array([0.3, -1.2, 0.7])


def nested_programs(jaxpr):
    """Every program carried by an equation of ``jaxpr``, recursively."""
    for eqn in jaxpr.eqns:
        for v in eqn.params.values():
            for j in (v if isinstance(v, tuple) else (v,)):
                if isinstance(j, Jaxpr):
                    yield j
                    yield from nested_programs(j)


def all_eqns(jaxpr):
    yield from jaxpr.eqns
    for j in nested_programs(jaxpr):
        yield from j.eqns


def _scan_loss(x):
    return tnp.sum(lax.scan(lambda c, _: (tnp.sin(c) * W1, tnp.cos(c)), x, None, length=3)[0])


def _cond_fn(x):
    return lax.cond(tnp.sum(x) > 0, lambda y: y * W1, lambda y: tnp.tanh(y) + W2, x)


def _while_fn(x):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * W1 + 0.1),
                          (0, x))[1]


@tg.custom_jvp
def _cj(x):
    return tnp.sin(x) * W1


_cj.defjvp(lambda p, t: (_cj(p[0]), tnp.cos(p[0]) * W1 * t[0]))


def _solve_fn(b):
    a = np.array([[3.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 1.0, 5.0]])
    return lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, r: tnp.linalg.solve(a, r),
                                   symmetric=True)


PROGRAMS = {
    "jit(grad(scan))": tg.jit(tg.grad(_scan_loss)),
    "vmap(cond)": lambda x: tg.vmap(
        lambda y, p: lax.cond(p, lambda z: z * W1, lambda z: tnp.tanh(z) + W2, y), (0, None))(
        tnp.stack([x, 2 * x]), tnp.sum(x) > 0),
    "grad(cond)": tg.grad(lambda x: tnp.sum(_cond_fn(x))),
    "jvp(while)": lambda x: tg.jvp(_while_fn, (x,), (W2,)),
    "vmap(while), batched predicate": lambda x: tg.vmap(
        lambda y: lax.while_loop(lambda c: c[0] < 3.0, lambda c: (c[0] + tnp.abs(c[1][0]),
                                                                    c[1] * W1), (0.0, y))[1])(
        tnp.stack([x, 2 * x])),
    "value_and_grad(checkpoint)": tg.value_and_grad(
        lambda x: tnp.sum(tg.checkpoint(lambda y: tnp.sin(y) * W1)(x))),
    "jit(grad(custom_jvp))": tg.jit(tg.grad(lambda x: tnp.sum(_cj(x) * W2))),
    "grad(custom_linear_solve)": tg.grad(lambda x: tnp.sum(_solve_fn(x * W1) ** 2)),
    "jit(vmap(grad(scan)))": tg.jit(lambda x: tg.vmap(tg.grad(_scan_loss))(
        tnp.stack([x, 2 * x]))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_nested_programs_take_constants_as_inputs(name):
    f = PROGRAMS[name]
    closed = tg.make_jaxpr(f)(X)
    nested = list(nested_programs(closed.jaxpr))
    assert nested, "the function should stage a primitive carrying a program"
    for j in nested:
        assert not j.constvars
        assert str(j).startswith("{ lambda ; ")
    assert not any(e.prim.name == "constant" for e in all_eqns(closed.jaxpr))
    # The program (constants as inputs) computes what the function does.
    want = tg.tree_util.tree_leaves(f(X))
    got = closed(*tg.tree_util.tree_leaves(X))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_printed_ir_shows_a_closed_over_array_as_an_input_of_the_loop():
    closed = tg.make_jaxpr(lambda x: lax.scan(lambda c, _: (c * W1, None), x, None,
                                              length=2)[0])(X)
    assert len(closed.consts) == 1 and closed.consts[0] is W1
    eqn, = [e for e in closed.eqns if e.prim.name == "scan"]
    assert eqn.params["num_consts"] == 1 and eqn.inputs[0] is closed.jaxpr.constvars[0]
    body = eqn.params["jaxpr"]
    assert not body.constvars and len(body.invars) == 2
    text = str(closed)
    assert text.startswith("{ lambda a:f64[3]") and "; b:f64[3]. let" in text.splitlines()[0]
    assert "scan[jaxpr={ lambda ; d:f64[3] e:f64[3]. let" in text and "] a b" in text
    np.testing.assert_allclose(closed(X)[0], X * W1 ** 2)


def test_transformed_programs_keep_their_concrete_constants_in_the_cache():
    # The JVP of stop_gradient's output is an instantiated zero: a concrete
    # constant of the JVP program, which becomes its leading input.
    j = tg.make_jaxpr(lambda x: [tnp.sin(x), lax.stop_gradient(x) * 2.0])(X).jaxpr
    prog, consts = ad.jvp_jaxpr(j, (True,))
    assert not prog.constvars and len(prog.invars) == len(consts) + 2
    assert any(isinstance(c, np.ndarray) and not c.any() for c in consts)
    again = ad.jvp_jaxpr(j, (True,))
    assert again[0] is prog and all(a is b for a, b in zip(again[1], consts))
    outs = tg.core.eval_jaxpr(prog, (), *consts, X, W2)
    np.testing.assert_allclose(outs[2], np.cos(X) * W2)
    np.testing.assert_array_equal(outs[3], np.zeros(3))


# ---------------------------------------------------------------------------
# Two closures with the same code over different arrays: no stale values.


def _both(make):
    return [(w, make(w)) for w in (W1, W2)]


def test_jit_closures_over_different_arrays():
    def make(w):
        def f(x):
            return tnp.sin(x) * w
        return f

    for w, f in _both(make):
        np.testing.assert_allclose(tg.jit(f)(X), np.sin(X) * w, rtol=1e-14)
        np.testing.assert_allclose(tg.jit(tg.grad(lambda x: tnp.sum(f(x))))(X), np.cos(X) * w,
                                   rtol=1e-14)
        np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(tg.jit(f)(x)))(X), np.cos(X) * w,
                                   rtol=1e-14)
        np.testing.assert_allclose(tg.vmap(tg.jit(f))(np.stack([X, 2 * X])),
                                   np.sin(np.stack([X, 2 * X])) * w, rtol=1e-14)


def _loop_reference(w, x, steps=3):
    c, ys = x, []
    for _ in range(steps):
        ys.append(np.cos(c))
        c = np.sin(c) * w
    return c, np.stack(ys)


def test_scan_closures_over_different_arrays():
    def make(w):
        def body(c, _):
            return tnp.sin(c) * w, tnp.cos(c)
        return body

    for w, body in _both(make):
        c, ys = lax.scan(body, X, None, length=3)
        rc, rys = _loop_reference(w, X)
        np.testing.assert_allclose(c, rc, rtol=1e-14)
        np.testing.assert_allclose(ys, rys, rtol=1e-14)
        loss = lambda x: tnp.sum(lax.scan(body, x, None, length=3)[0])  # noqa: E731
        g = tg.grad(loss)(X)
        eps = 1e-6
        fd = np.array([(np.sum(_loop_reference(w, X + eps * e)[0])
                        - np.sum(_loop_reference(w, X - eps * e)[0])) / (2 * eps)
                       for e in np.eye(3)])
        np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(tg.jit(tg.grad(loss))(X), g, rtol=1e-13)


def test_cond_closures_over_different_arrays():
    def make(w):
        return lambda x, p: lax.cond(p, lambda y: y * w, lambda y: y - w, x)

    for w, f in _both(make):
        np.testing.assert_allclose(f(X, True), X * w)
        np.testing.assert_allclose(f(X, False), X - w)
        np.testing.assert_allclose(tg.jit(f)(X, True), X * w)
        np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(f(x, True) ** 2))(X), 2 * X * w * w)
        np.testing.assert_allclose(tg.vmap(f, (0, 0))(np.stack([X, X]), np.array([True, False])),
                                   np.stack([X * w, X - w]))


def test_while_closures_over_different_arrays():
    def make(w):
        return lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * w),
                                        (0, x))[1]

    for w, f in _both(make):
        np.testing.assert_allclose(f(X), X * w ** 3)
        np.testing.assert_allclose(tg.jit(f)(X), X * w ** 3)
        out, tan = tg.jvp(f, (X,), (np.ones(3),))
        np.testing.assert_allclose(tan, w ** 3)
        np.testing.assert_allclose(tg.vmap(f)(np.stack([X, -X])), np.stack([X, -X]) * w ** 3)


def test_custom_jvp_closures_over_different_arrays():
    def make(w, s):
        @tg.custom_jvp
        def f(x):
            return tnp.sin(x) * w

        # The rule also closes over ``s``, which the function does not use (a
        # constant only the rule's program has); its derivative is scaled by it.
        f.defjvp(lambda p, t: (f(p[0]), tnp.cos(p[0]) * w * s * t[0]))
        return f

    for w, s in ((W1, 2.0 * np.ones(3)), (W2, np.array([5.0, -1.0, 0.5]))):
        f = make(w, s)
        np.testing.assert_allclose(f(X), np.sin(X) * w)
        loss = lambda x: tnp.sum(f(x))  # noqa: E731
        want = np.cos(X) * w * s
        np.testing.assert_allclose(tg.grad(loss)(X), want, rtol=1e-14)
        np.testing.assert_allclose(tg.jit(tg.grad(loss))(X), want, rtol=1e-14)
        np.testing.assert_allclose(tg.grad(tg.jit(loss))(X), want, rtol=1e-14)
        np.testing.assert_allclose(tg.vmap(tg.grad(loss))(np.stack([X, X])),
                                   np.stack([want, want]), rtol=1e-14)
        np.testing.assert_allclose(
            tg.grad(lambda x: tnp.sum(lax.scan(lambda c, _: (f(c), None), x, None,
                                               length=1)[0]))(X), want, rtol=1e-14)


def test_odeint_closures_over_different_arrays_share_one_compiled_solve():
    ts = np.array([0.0, 0.5, 1.0])
    y0 = np.array([1.0, 2.0, 0.5])

    def make(w):
        # Nested control flow closing over w, and a literal unique to this test
        # (so the solve is new here).
        def f(y, t):
            return lax.fori_loop(0, 2, lambda i, acc: acc - 0.5 * w * y, 0.0 * y) * 0.3125
        return f

    # Same code, different constants: one converted dynamics, one compiled
    # solve (a second one for the solves under grad, whose inputs are traced).
    before = len(ode._DYNAMICS)
    for w, f in _both(make):
        ys = ode.odeint(f, y0, ts)
        np.testing.assert_allclose(ys, y0 * np.exp(-np.outer(ts, 0.3125 * w)), rtol=1e-6)
    assert len(ode._DYNAMICS) - before == 1
    for w, f in _both(make):
        g = tg.grad(lambda y: tnp.sum(ode.odeint(f, y, ts)[-1]))(y0)
        np.testing.assert_allclose(g, np.exp(-0.3125 * w * ts[-1]), rtol=1e-6)
    assert len(ode._DYNAMICS) - before == 2
