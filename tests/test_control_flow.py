"""Structured control flow: ``lax.scan``, ``cond``, ``switch``, ``while_loop``,
``fori_loop`` and ``map`` against their definitions, under every
transformation and their compositions.

References used:

* ``scan(f, init, xs)`` is the Python loop ``for x in xs: carry, y = f(carry, x)``
  with the ``y``s stacked (``reverse=True`` walks ``xs`` backwards and stores
  ``y``s at the original positions); its derivatives are those of the loop;
* ``cond``/``switch`` is the Python ``if``/indexing (``switch`` clamps its
  index as JAX does); ``while_loop``/``fori_loop`` are Python loops;
* ``vmap(f)(xs) == stack([f(x) for x in xs])``; ``jit(f) == f``;
* custom rules called inside loop bodies keep their rules (seeds/000:
  "initial-style" staging records them with their primal program and traces
  the rule lazily, since it may call the function itself).

Everything is float64 with tight tolerances.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.interpreters import ad
from tangentia.test_util import check_grads, numerical_jvp
from tangentia.tree_util import tree_leaves, tree_map, tree_structure

HSETTINGS = dict(max_examples=12, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def assert_close(got, want, rtol=1e-12, atol=1e-12):
    assert tree_structure(got) == tree_structure(want), (tree_structure(got),
                                                         tree_structure(want))
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype or (g.dtype.kind == w.dtype.kind == "f"), (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def py_scan(f, init, xs=None, length=None, reverse=False):
    """The definition of ``lax.scan`` as a Python loop (differentiable by tangentia)."""
    x_leaves = tree_leaves(xs)
    n = length if length is not None else np.shape(x_leaves[0])[0]
    idx = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, [None] * n
    for i in idx:
        x = None if xs is None else tree_map(lambda a: a[i], xs)
        carry, ys[i] = f(carry, x)
    return carry, tree_map(lambda *a: tnp.stack(a), *ys)


def prim_names(jaxpr):
    """Names of all primitives in a program, including those in sub-programs."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    out = []
    for e in jaxpr.eqns:
        out.append(e.prim.name)
        for v in e.params.values():
            for sub in (v if isinstance(v, tuple) else (v,)):
                if isinstance(sub, (tg.Jaxpr, tg.ClosedJaxpr)):
                    out.extend(prim_names(sub))
    return out


NONLINEAR = {"sin", "cos", "tanh", "exp", "log", "log1p", "sqrt", "integer_pow", "pow",
             "logistic"}


# ===========================================================================
# scan against the Python loop


def rnn_body(W):
    """Pytree carry {"h": f64[3], "s": (f64[], f64[])}, pytree xs (f64[3], f64[]),
    pytree ys {"h2": f64[3], "p": (f64[], f64[2])}."""
    def body(carry, x):
        xv, xs_ = x
        h = tnp.tanh(W @ carry["h"] + xv) * tnp.cos(xs_)
        s0, s1 = carry["s"]
        new = {"h": h, "s": (s0 * tnp.sin(xs_) + tnp.sum(h), s1 + s0 * h[0])}
        y = {"h2": h * h, "p": (s0 * xs_, tnp.stack([h[1], s1]))}
        return new, y
    return body


def rnn_args(seed=0, T=5):
    W = rand(seed, 3, 3) / 2
    init = {"h": rand(seed + 1, 3), "s": (np.float64(0.3), np.float64(-0.2))}
    xs = (rand(seed + 2, T, 3), rand(seed + 3, T) * 0.5)
    return W, init, xs


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_pytrees_values_match_python_loop(reverse):
    W, init, xs = rnn_args()
    got = lax.scan(rnn_body(W), init, xs, reverse=reverse)
    want = py_scan(rnn_body(W), init, xs, reverse=reverse)
    assert_close(got, want)
    # jit gives the same
    assert_close(tg.jit(lambda i, x: lax.scan(rnn_body(W), i, x, reverse=reverse))(init, xs),
                 want)


def _rnn_loss(scan_fn, reverse):
    def loss(W, init, xs):
        c, ys = scan_fn(rnn_body(W), init, xs, reverse=reverse)
        return (tnp.sum(c["h"] ** 2) + c["s"][0] * c["s"][1] + tnp.sum(ys["h2"] * 0.5)
                + tnp.sum(tnp.sin(ys["p"][0])) + tnp.sum(ys["p"][1] ** 2))
    return loss


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_grads_match_python_loop_grads(reverse):
    W, init, xs = rnn_args()
    g = tg.grad(_rnn_loss(lax.scan, reverse), argnums=(0, 1, 2))(W, init, xs)
    g_ref = tg.grad(_rnn_loss(py_scan, reverse), argnums=(0, 1, 2))(W, init, xs)
    assert_close(g, g_ref, rtol=1e-11, atol=1e-12)
    # and jit(grad), and the Hessian wrt W (forward-over-reverse)
    gj = tg.jit(tg.grad(_rnn_loss(lax.scan, reverse), argnums=(0, 1, 2)))(W, init, xs)
    assert_close(gj, g_ref, rtol=1e-11, atol=1e-12)
    H = tg.hessian(lambda W: _rnn_loss(lax.scan, reverse)(W, init, xs))(W)
    H_ref = tg.hessian(lambda W: _rnn_loss(py_scan, reverse)(W, init, xs))(W)
    assert H.shape == (3, 3, 3, 3)
    assert_close(H, H_ref, rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_check_grads_order2(reverse):
    W, init, xs = rnn_args(T=3)
    check_grads(lambda W, init, xs: lax.scan(rnn_body(W), init, xs, reverse=reverse),
                (W, init, xs), order=2, atol=1e-6, rtol=1e-6)


def test_scan_xs_none_with_length():
    def body(c, _):
        a, b = c
        return (a * tnp.cos(b) + 1.0, b + a * 0.1), {"a": a, "ab": a * b}

    def f(a, b):
        return lax.scan(body, (a, b), None, length=6)

    got = f(0.4, 0.7)
    want = py_scan(body, (0.4, 0.7), None, length=6)
    assert_close(got, want)
    assert got[1]["a"].shape == (6,)
    np.testing.assert_allclose(got[1]["a"][0], 0.4, rtol=0, atol=0)
    g = tg.grad(lambda a, b: tnp.sum(f(a, b)[1]["ab"]), argnums=(0, 1))(0.4, 0.7)
    g_ref = tg.grad(lambda a, b: tnp.sum(py_scan(body, (a, b), None, length=6)[1]["ab"]),
                    argnums=(0, 1))(0.4, 0.7)
    assert_close(g, g_ref)
    check_grads(f, (0.4, 0.7), order=2, atol=1e-6, rtol=1e-6)


def test_scan_reverse_exact_values():
    # c_{t} = c * x + 1 walking backwards: ys[i] is the carry *entering* step i.
    xs = np.array([1.0, 2.0, 3.0])
    c, ys = lax.scan(lambda c, x: (c * x + 1.0, c), 1.0, xs, reverse=True)
    # steps: i=2: c=1 -> 4; i=1: c=4 -> 9; i=0: c=9 -> 10
    np.testing.assert_array_equal(ys, [9.0, 4.0, 1.0])
    assert float(c) == 10.0
    # d(sum ys)/dxs: ys[1] = 1*3+1 = 4 (d/dx2 = 1); ys[0] = 4*x1+1 (d/dx1 = 4, d/dx2 = x1)
    g = tg.grad(lambda xs: tnp.sum(lax.scan(lambda c, x: (c * x + 1.0, c), 1.0, xs,
                                            reverse=True)[1]))(xs)
    np.testing.assert_allclose(g, [0.0, 4.0, 1.0 + 2.0], rtol=0, atol=1e-15)


def test_scan_length_zero():
    c, ys = lax.scan(lambda c, x: (c * x, c * 2), 1.5, np.zeros(0))
    assert float(c) == 1.5 and ys.shape == (0,)
    assert float(tg.grad(lambda c: lax.scan(lambda c, x: (c * x, c), c, np.zeros(0))[0])(1.5)) \
        == 1.0


@settings(**HSETTINGS)
@given(T=st.integers(1, 7), n=st.integers(1, 4), reverse=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_scan_property_matches_loop(T, n, reverse, seed):
    W = rand(seed, n, n) / np.sqrt(n)
    c0 = rand(seed + 1, n)
    xs = {"u": rand(seed + 2, T, n), "v": rand(seed + 3, T)}

    def body(c, x):
        c = tnp.tanh(W @ c + x["u"]) + x["v"] * tnp.sin(c)
        return c, (tnp.sum(c * c), c * x["v"])

    def loss(scan_fn, c0, xs):
        c, (s, m) = scan_fn(body, c0, xs, reverse=reverse)
        return tnp.sum(c) + tnp.sum(tnp.cos(s)) + tnp.sum(m ** 2)

    assert_close(lax.scan(body, c0, xs, reverse=reverse),
                 py_scan(body, c0, xs, reverse=reverse), rtol=1e-12, atol=1e-13)
    g = tg.grad(lambda c0, xs: loss(lax.scan, c0, xs), argnums=(0, 1))(c0, xs)
    g_ref = tg.grad(lambda c0, xs: loss(py_scan, c0, xs), argnums=(0, 1))(c0, xs)
    assert_close(g, g_ref, rtol=1e-10, atol=1e-12)
    # forward mode agrees with reverse mode
    v = rand(seed + 4, n)
    _, t = tg.jvp(lambda c0: loss(lax.scan, c0, xs), (c0,), (v,))
    np.testing.assert_allclose(t, np.dot(g[0], v), rtol=1e-10, atol=1e-12)


# ===========================================================================
# scan under vmap


def test_vmap_scan_batched_carry_and_xs():
    W = rand(0, 3, 3) / 2
    c0s = rand(1, 4, 3)
    xss = rand(2, 4, 5, 3)

    def run(c0, xs):
        return lax.scan(lambda c, x: (tnp.tanh(W @ c + x), tnp.sum(c * x)), c0, xs)

    got = tg.vmap(run)(c0s, xss)
    want = [run(c, x) for c, x in zip(c0s, xss)]
    assert_close(got, tree_map(lambda *a: np.stack(a), *want))
    # only xs batched, along axis 1 of a (T, B, 3) array; carry unbatched
    got2 = tg.vmap(run, in_axes=(None, 1))(c0s[0], np.swapaxes(xss, 0, 1))
    want2 = [run(c0s[0], x) for x in xss]
    assert_close(got2, tree_map(lambda *a: np.stack(a), *want2))
    # only a closed-over constant batched
    Ws = rand(3, 4, 3, 3) / 2
    got3 = tg.vmap(lambda W: lax.scan(lambda c, x: (tnp.tanh(W @ c + x), c[0]), c0s[0],
                                      xss[0]))(Ws)
    want3 = [lax.scan(lambda c, x, W=W: (tnp.tanh(W @ c + x), c[0]), c0s[0], xss[0])
             for W in Ws]
    assert_close(got3, tree_map(lambda *a: np.stack(a), *want3))


def test_vmap_grad_and_grad_vmap_of_scan():
    xs = rand(0, 6, 3)
    Ws = rand(1, 3, 3, 3) / 2
    c0 = rand(2, 3)

    def loss(W, scan_fn=lax.scan):
        c, ys = scan_fn(lambda c, x: (tnp.tanh(W @ c + x), tnp.sum(c)), c0, xs)
        return tnp.sum(c ** 2) + tnp.sum(ys)

    got = tg.vmap(tg.grad(loss))(Ws)
    want = np.stack([tg.grad(lambda W: loss(W, py_scan))(W) for W in Ws])
    assert_close(got, want, rtol=1e-11, atol=1e-13)
    got2 = tg.grad(lambda Ws: tnp.sum(tg.vmap(loss)(Ws)))(Ws)
    assert_close(got2, want, rtol=1e-11, atol=1e-13)


# ===========================================================================
# cond and switch


def cond_f(x):
    return lax.cond(x[0] > 0, lambda x: tnp.sin(x) * tnp.exp(x), lambda x: tnp.cos(x) * x, x)


def cond_ref(x):
    return np.sin(x) * np.exp(x) if x[0] > 0 else np.cos(x) * x


def cond_ref_jac(x):
    if x[0] > 0:
        return np.diag(np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x))
    return np.diag(-np.sin(x) * x + np.cos(x))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_values_and_derivatives(sign):
    x = np.array([0.7, -0.3, 1.2]) * sign
    assert_close(cond_f(x), cond_ref(x))
    assert_close(tg.jit(cond_f)(x), cond_ref(x))
    v = rand(0, 3)
    p, t = tg.jvp(cond_f, (x,), (v,))
    assert_close(t, cond_ref_jac(x) @ v)
    assert_close(tg.grad(lambda x: tnp.sum(cond_f(x)))(x), cond_ref_jac(x).sum(0))
    assert_close(tg.jit(tg.grad(lambda x: tnp.sum(cond_f(x))))(x), cond_ref_jac(x).sum(0))
    assert_close(tg.jacrev(cond_f)(x), cond_ref_jac(x))
    check_grads(cond_f, (x,), order=2)


def test_cond_unbatched_pred_under_vmap():
    xs = rand(0, 4, 3)
    got = tg.vmap(lambda x, p: lax.cond(p, tnp.sin, tnp.cos, x), in_axes=(0, None))(xs, True)
    assert_close(got, np.sin(xs))
    jaxpr = tg.make_jaxpr(tg.vmap(lambda x: lax.cond(True, tnp.sin, tnp.cos, x)))(xs)
    assert "cond" in prim_names(jaxpr)  # stays a cond: only one branch runs


def test_cond_batched_pred_runs_both_branches_and_selects():
    xs = np.array([-1.5, -0.2, 0.3, 2.0])

    def f(x):
        return lax.cond(x > 0, lambda x: tnp.sin(x) * x, lambda x: tnp.cos(x) + x, x)

    want = np.where(xs > 0, np.sin(xs) * xs, np.cos(xs) + xs)
    assert_close(tg.vmap(f)(xs), want)
    assert_close(tg.jit(tg.vmap(f))(xs), want)
    names = prim_names(tg.make_jaxpr(tg.vmap(f))(xs))
    assert "cond" not in names and "select" in names
    assert "sin" in names and "cos" in names  # both branches evaluated
    d_want = np.where(xs > 0, np.cos(xs) * xs + np.sin(xs), -np.sin(xs) + 1)
    assert_close(tg.vmap(tg.grad(f))(xs), d_want)
    assert_close(tg.grad(lambda xs: tnp.sum(tg.vmap(f)(xs)))(xs), d_want)
    assert_close(tg.jvp(tg.vmap(f), (xs,), (np.ones(4),))[1], d_want)
    # the unselected branch's NaN does not leak into the value or gradient
    g = lambda x: lax.cond(x > 0, tnp.sqrt, lambda x: -x, x)  # noqa: E731
    with np.errstate(all="ignore"):
        assert_close(tg.vmap(g)(np.array([4.0, -1.0])), np.array([2.0, 1.0]))
        assert_close(tg.vmap(tg.grad(g))(np.array([4.0, -1.0])), np.array([0.25, -1.0]))


def test_switch_clamps_index_like_jax():
    branches = [lambda x: x + 1.0, lambda x: 2.0 * x, lambda x: x ** 3]
    for i, want in [(-5, 4.0), (0, 4.0), (1, 6.0), (2, 27.0), (3, 27.0), (100, 27.0)]:
        assert float(lax.switch(i, branches, 3.0)) == want
        assert float(tg.jit(lambda i, x: lax.switch(i, branches, x))(i, 3.0)) == want
    grads = {-5: 1.0, 1: 2.0, 7: 27.0}
    for i, want in grads.items():
        assert float(tg.grad(lambda x: lax.switch(i, branches, x))(3.0)) == want
    # batched indices (including out-of-range ones) under vmap, vmap(grad), jit(vmap)
    idx = np.array([-1, 0, 1, 2, 9])
    x = np.array([3.0, 1.5, -2.0, 0.5, 2.0])
    want = np.array([4.0, 2.5, -4.0, 0.125, 8.0])
    assert_close(tg.vmap(lambda i, x: lax.switch(i, branches, x))(idx, x), want)
    assert_close(tg.jit(tg.vmap(lambda i, x: lax.switch(i, branches, x)))(idx, x), want)
    dwant = np.array([1.0, 1.0, 2.0, 0.75, 12.0])
    assert_close(tg.vmap(tg.grad(lambda x, i: lax.switch(i, branches, x)))(x, idx), dwant)
    check_grads(lambda x: tg.vmap(lambda i, x: lax.switch(i, branches, x))(idx, x), (x,),
                order=2)


def test_cond_pytree_operands_closures_and_int_operands():
    def f(x, y):
        return lax.cond(x > 0, lambda a, b: {"s": a * b[0], "t": b[1] * 2.0},
                        lambda a, b: {"s": a + b[0], "t": b[1] - a}, x, (y, 3.0 * y))

    assert_close(f(2.0, 0.5), {"s": np.float64(1.0), "t": np.float64(3.0)})
    g = tg.grad(lambda x, y: f(x, y)["s"] + f(x, y)["t"], argnums=(0, 1))(2.0, 0.5)
    assert_close(g, (np.float64(0.5), np.float64(2.0 + 6.0)))
    g = tg.grad(lambda x, y: f(x, y)["s"] + f(x, y)["t"], argnums=(0, 1))(-2.0, 0.5)
    assert_close(g, (np.float64(1.0 - 1.0), np.float64(1.0 + 3.0)))
    # closure over a differentiated value, integer operand, no operands
    assert float(tg.grad(lambda x: lax.cond(True, lambda: x * 3.0, lambda: x))(2.0)) == 3.0
    assert float(tg.grad(lambda x: lax.cond(x > 0, lambda x, n: x * n, lambda x, n: x,
                                            x, 4))(2.0)) == 4.0
    assert float(lax.cond(False, lambda x: x, lambda x: -x, operand=1.5)) == -1.5


# ===========================================================================
# while_loop


def wl(x, k=0.9):
    """Iterate x <- sin(x) * 2 + k*x, with an iteration counter, 5 times."""
    return lax.while_loop(lambda c: c[0] < 5,
                          lambda c: (c[0] + 1, tnp.sin(c[1]) * 2.0 + k * c[1]), (0, x))[1]


def wl_py(x, k=0.9):
    for _ in range(5):
        x = tnp.sin(x) * 2.0 + k * x
    return x


def test_while_loop_values_and_forward_mode():
    x = np.array([0.3, -1.1])
    assert_close(wl(x), wl_py(x))
    assert_close(tg.jit(wl)(x), wl_py(x))
    v = np.array([1.0, -0.5])
    p, t = tg.jvp(wl, (x,), (v,))
    assert_close(p, wl_py(x))
    assert_close(t, tg.jvp(wl_py, (x,), (v,))[1], rtol=1e-12)
    np.testing.assert_allclose(t, numerical_jvp(wl, (x,), (v,), eps=1e-6), rtol=1e-7)
    assert_close(tg.jacfwd(wl)(x), tg.jacfwd(wl_py)(x), rtol=1e-12)
    assert_close(tg.jit(lambda x, v: tg.jvp(wl, (x,), (v,))[1])(x, v), t)
    check_grads(wl, (x,), order=2, modes=("fwd",))
    # forward mode wrt a closed-over value
    _, tk = tg.jvp(lambda k: wl(x, k), (0.9,), (1.0,))
    np.testing.assert_allclose(tk, numerical_jvp(lambda k: wl(x, k), (0.9,), (1.0,), eps=1e-6),
                               rtol=1e-7)


def test_while_loop_reverse_mode_raises_clear_error():
    msg = (r"Reverse-mode differentiation does not work for lax\.while_loop or lax\.fori_loop "
           r"with dynamic start/stop values\. Try using lax\.scan")
    with pytest.raises(ValueError, match=msg):
        tg.grad(lambda x: wl(x))(0.3)
    with pytest.raises(ValueError, match=msg):
        tg.vjp(wl, np.array([0.3]))[1](np.ones(1))
    with pytest.raises(ValueError, match=msg):
        tg.jit(tg.grad(wl))(0.3)
    with pytest.raises(ValueError, match=msg):
        tg.jacrev(wl)(np.array([0.3, 0.2]))
    with pytest.raises(ValueError, match=msg):  # traced fori_loop bounds lower to while
        tg.jit(tg.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0)))(
            2.0, np.array(3))


def test_while_loop_grad_ok_when_loop_does_not_depend_on_input():
    # only the known part of the loop runs; nothing to transpose
    f = lambda x: x * lax.while_loop(lambda c: c[0] < 10,  # noqa: E731
                                     lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))[1]
    assert float(tg.grad(f)(3.0)) == 1024.0


def test_while_loop_vmap_batched_predicate_freezes_finished_elements():
    calls = {"n": 0}

    def body(c):
        calls["n"] += 1
        return c[0] + 1, c[1] * 2.0 + 0.5

    def f(x, lim):
        return lax.while_loop(lambda c: c[1] < lim, body, (0, x))

    xs = np.array([1.0, 3.0, 20.0, 0.1])
    lims = np.array([10.0, 10.0, 10.0, 100.0])
    n, v = tg.vmap(f)(xs, lims)
    want = [f(x, l) for x, l in zip(xs, lims)]
    np.testing.assert_array_equal(n, [w[0] for w in want])
    np.testing.assert_array_equal(v, [w[1] for w in want])
    np.testing.assert_array_equal(n, [3, 2, 0, 8])  # different trip counts: frozen when done
    n2, v2 = tg.jit(tg.vmap(f))(xs, lims)
    np.testing.assert_array_equal(n2, n)
    np.testing.assert_array_equal(v2, v)
    # forward mode under vmap with a batched predicate: d v / d x = 2 ** n
    t = tg.vmap(lambda x, l: tg.jvp(lambda x: f(x, l)[1], (x,), (1.0,))[1])(xs, lims)
    np.testing.assert_array_equal(t, 2.0 ** n)
    # unbatched predicate (only the carry's float part batched)
    calls["n"] = 0

    def body2(c):  # a fresh function: traced bodies are memoized per function and types
        calls["n"] += 1
        return c[0] + 1, c[1] * 2.0 + 0.5

    out = tg.vmap(lambda x: lax.while_loop(lambda c: c[0] < 4, body2, (0, x))[1])(xs)
    assert calls["n"] == 1
    want = []
    for x in xs:
        c = (0, x)
        for _ in range(4):
            c = (c[0] + 1, c[1] * 2.0 + 0.5)
        want.append(c[1])
    assert_close(out, np.array(want))


def test_while_loop_batched_predicate_jvp_check_grads():
    f = lambda x: tg.vmap(lambda x: lax.while_loop(  # noqa: E731
        lambda c: c[1] < 10.0, lambda c: (c[0] + 1, c[1] * 1.7 + 0.1 * tnp.sin(c[1])),
        (0, x))[1])(x)
    check_grads(f, (np.array([0.5, 2.0, 7.0]),), order=2, modes=("fwd",))


@settings(**HSETTINGS)
@given(idx=st.lists(st.integers(-4, 6), min_size=1, max_size=6), seed=st.integers(0, 2 ** 16))
def test_vmap_switch_property(idx, seed):
    branches = [lambda x: tnp.sin(x) * 2.0, lambda x: x ** 3 - x, lambda x: tnp.exp(-x)]
    dbranches = [lambda x: np.cos(x) * 2.0, lambda x: 3 * x ** 2 - 1, lambda x: -np.exp(-x)]
    idx = np.array(idx, dtype=np.int64)
    x = rand(seed, len(idx))
    clamped = np.clip(idx, 0, 2)
    want = np.array([branches[i](v) for i, v in zip(clamped, x)])
    dwant = np.array([dbranches[i](v) for i, v in zip(clamped, x)])
    f = lambda i, x: lax.switch(i, branches, x)  # noqa: E731
    assert_close(tg.vmap(f)(idx, x), want, rtol=1e-14, atol=0)
    assert_close(tg.vmap(tg.grad(f, argnums=1))(idx, x), dwant, rtol=1e-14, atol=0)
    assert_close(tg.grad(lambda x: tnp.sum(tg.vmap(f)(idx, x)))(x), dwant, rtol=1e-14, atol=0)


@settings(**HSETTINGS)
@given(x=st.lists(st.floats(0.05, 30.0), min_size=1, max_size=5),
       lim=st.floats(1.0, 50.0))
def test_vmap_while_property_matches_per_element_loops(x, lim):
    x = np.array(x)

    def f(x, lim):
        return lax.while_loop(lambda c: c[1] < lim,
                              lambda c: (c[0] + 1, c[1] * 1.5 + tnp.sin(c[1]) * 0.1), (0, x))

    def py(x):
        n = 0
        while x < lim:
            n, x = n + 1, x * 1.5 + np.sin(x) * 0.1
        return n, x

    n, v = tg.vmap(f, in_axes=(0, None))(x, lim)
    want = [py(xi) for xi in x]
    np.testing.assert_array_equal(n, [w[0] for w in want])
    np.testing.assert_allclose(v, [w[1] for w in want], rtol=1e-14)
    t = tg.vmap(lambda x: tg.jvp(lambda x: f(x, lim)[1], (x,), (1.0,))[1])(x)
    dwant = []
    for xi, (ni, _) in zip(x, want):
        d = 1.0
        for _ in range(ni):
            d, xi = d * (1.5 + np.cos(xi) * 0.1), xi * 1.5 + np.sin(xi) * 0.1
        dwant.append(d)
    np.testing.assert_allclose(t, dwant, rtol=1e-13)


def test_linearize_scan_public_api():
    xs = np.arange(1.0, 4.0)
    f = lambda c: lax.scan(lambda c, x: (tnp.sin(c) * x, c * c), c, xs)  # noqa: E731
    out, f_jvp = tg.linearize(f, 0.5)
    assert_close(out, f(0.5))
    for v in (1.0, -2.5):
        assert_close(f_jvp(v), tg.jvp(f, (0.5,), (v,))[1], rtol=1e-14)


# ===========================================================================
# fori_loop


def fori_body(i, c):
    return tnp.sin(c) * c + 0.1 * i


def fori_py(x, lo, hi):
    for i in range(lo, hi):
        x = fori_body(i, x)
    return x


def test_fori_loop_static_bounds_reverse_mode():
    x = np.array([0.4, -0.8, 1.3])
    f = lambda x: lax.fori_loop(2, 6, fori_body, x)  # noqa: E731
    assert_close(f(x), fori_py(x, 2, 6))
    names = prim_names(tg.make_jaxpr(f)(x))
    assert "scan" in names and "while" not in names
    g = tg.grad(lambda x: tnp.sum(f(x)))(x)
    assert_close(g, tg.grad(lambda x: tnp.sum(fori_py(x, 2, 6)))(x))
    assert_close(tg.jit(tg.grad(lambda x: tnp.sum(f(x))))(x), g)
    assert_close(tg.vmap(tg.grad(lambda x: tnp.sum(f(x))))(np.stack([x, 2 * x])),
                 np.stack([g, tg.grad(lambda x: tnp.sum(fori_py(x, 2, 6)))(2 * x)]))
    check_grads(f, (x,), order=2)
    # numpy integer bounds are static too; empty and negative ranges are no-ops
    assert_close(lax.fori_loop(np.int64(2), np.int64(6), fori_body, x), fori_py(x, 2, 6))
    assert_close(lax.fori_loop(5, 3, fori_body, x), x)
    assert float(tg.grad(lambda x: lax.fori_loop(3, 3, fori_body, x))(0.5)) == 1.0


def test_fori_loop_traced_bounds_forward_mode():
    x = np.array([0.4, -0.8])
    v = np.array([1.0, 0.3])

    def f(x, hi):
        return lax.fori_loop(1, hi, fori_body, x)

    hi = np.array(5)
    assert "while" in prim_names(tg.make_jaxpr(f)(x, hi))
    assert_close(f(x, hi), fori_py(x, 1, 5))
    assert_close(tg.jit(f)(x, 5), fori_py(x, 1, 5))
    _, t = tg.jvp(lambda x: f(x, hi), (x,), (v,))
    assert_close(t, tg.jvp(lambda x: fori_py(x, 1, 5), (x,), (v,))[1])
    assert_close(tg.jacfwd(lambda x: f(x, hi))(x), tg.jacfwd(lambda x: fori_py(x, 1, 5))(x))
    # batched upper bound: a batched predicate
    his = np.array([1, 2, 4])
    got = tg.vmap(lambda h, x: tg.jvp(lambda x: f(x, h), (x,), (1.0,)))(his, np.full(3, 0.7))
    want = [tg.jvp(lambda x: fori_py(x, 1, int(h)), (0.7,), (1.0,)) for h in his]
    assert_close(got, (np.array([w[0] for w in want]), np.array([w[1] for w in want])))


# ===========================================================================
# map


def test_map_matches_stack_under_transformations():
    xs = {"a": rand(0, 4, 3), "b": rand(1, 4)}

    def f(x):
        return {"p": tnp.sin(x["a"]) * x["b"], "q": tnp.sum(x["a"] ** 2)}

    want = {"p": np.sin(xs["a"]) * xs["b"][:, None], "q": np.sum(xs["a"] ** 2, axis=1)}
    assert_close(lax.map(f, xs), want)
    assert_close(tg.jit(lambda xs: lax.map(f, xs))(xs), want)
    loss = lambda xs: tnp.sum(lax.map(f, xs)["p"]) + tnp.sum(lax.map(f, xs)["q"])  # noqa: E731
    g = tg.grad(loss)(xs)
    assert_close(g, {"a": np.cos(xs["a"]) * xs["b"][:, None] + 2 * xs["a"],
                     "b": np.sum(np.sin(xs["a"]), axis=1)})
    gv = tg.vmap(tg.grad(loss))(tree_map(lambda a: np.stack([a, 2 * a]), xs))
    assert_close(tree_map(lambda a: a[1], gv), tg.grad(loss)(tree_map(lambda a: 2 * a, xs)))
    check_grads(lambda a: lax.map(tnp.tanh, a), (xs["a"],), order=2)


# ===========================================================================
# nesting and compositions


def nested(x, w):
    def outer(c, xi):
        def inner(d, y):
            return d * tnp.sin(y + c) + w, d
        d, ds = lax.scan(inner, c, xi * np.arange(3.0))
        c2 = lax.fori_loop(0, 2, lambda i, e: lax.cond(e > 0, tnp.sin, tnp.cos, e) + d, c)
        return d + c2 * w, tnp.sum(ds)
    c, ys = lax.scan(outer, x, np.linspace(0.1, 0.5, 4))
    return c + tnp.sum(ys)


def nested_py(x, w):
    c, ys = x, []
    for xi in np.linspace(0.1, 0.5, 4):
        d, ds = c, []
        for y in xi * np.arange(3.0):
            ds.append(d)
            d = d * tnp.sin(y + c) + w
        e = c
        for _ in range(2):
            e = (tnp.sin(e) if e > 0 else tnp.cos(e)) + d
        ys.append(sum(ds))
        c = d + e * w
    return c + sum(ys)


def test_nested_loops():
    for x, w in [(0.3, 0.2), (-0.6, 0.1)]:
        assert_close(nested(x, w), nested_py(x, w), rtol=1e-12)
        g = tg.grad(nested, argnums=(0, 1))(x, w)
        assert_close(g, tg.grad(nested_py, argnums=(0, 1))(x, w), rtol=1e-11)
        assert_close(tg.jit(tg.grad(nested, argnums=(0, 1)))(x, w), g, rtol=1e-12)
    # (the function is steep in w: a smaller finite-difference step keeps the truncation
    # error of the second-order check below the tolerance)
    check_grads(nested, (0.3, 0.2), order=2, atol=1e-6, rtol=1e-6, eps=1e-5)
    assert_close(tg.hessian(nested, argnums=(0, 1))(0.3, 0.2),
                 tg.hessian(nested_py, argnums=(0, 1))(0.3, 0.2), rtol=1e-11)
    xs = np.array([0.3, -0.6, 0.9])
    assert_close(tg.vmap(tg.grad(nested), in_axes=(0, None))(xs, 0.2),
                 np.array([tg.grad(nested_py)(x, 0.2) for x in xs]), rtol=1e-11)


def test_loop_in_jit_in_vmap_in_grad():
    xs = np.array([0.1, 0.2, 0.3])

    def h(w, loop):
        per = tg.jit(lambda x, w: loop(x, w))
        return tnp.sum(tg.vmap(per, in_axes=(0, None))(xs, w))

    def fori(x, w):
        return lax.fori_loop(0, 3, lambda i, c: tnp.sin(c * w + i), x)

    def scan(x, w):
        return lax.scan(lambda c, i: (tnp.sin(c * w + i), c), x, np.arange(3.0))[0]

    def py(x, w):
        for i in range(3):
            x = tnp.sin(x * w + i)
        return x

    want = tg.grad(lambda w: tnp.sum(tnp.stack([py(x, w) for x in xs])))(0.7)
    for loop in (fori, scan):
        assert_close(tg.grad(lambda w: h(w, loop))(0.7), want, rtol=1e-12)
        assert_close(tg.jit(tg.grad(lambda w: h(w, loop)))(0.7), want, rtol=1e-12)
    # forward mode through a while-based loop in the same nesting
    def wloop(x, w):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, tnp.sin(c[1] * w + c[0])),
                              (0, x))[1]
    _, t = tg.jvp(lambda w: h(w, wloop), (0.7,), (1.0,))
    np.testing.assert_allclose(t, want, rtol=1e-12)


# ===========================================================================
# custom rules inside loop bodies


@tg.custom_vjp
def twice(x):
    return 2.0 * x


twice.defvjp(lambda x: (2.0 * x, None), lambda _, g: (3.0 * g,))


@tg.custom_jvp
def csin(x):
    return tnp.sin(x)


@csin.defjvp
def _csin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return csin(x), 2.0 * tnp.cos(x) * t


def apply_twice(fn, kind):
    """``fn(fn(x))`` expressed with the control-flow construct ``kind``."""
    if kind == "scan":
        return lambda x: lax.scan(lambda c, _: (fn(c), None), x, None, length=2)[0]
    if kind == "scan_xs":
        return lambda x: lax.scan(lambda c, k: (fn(c) * k, c), x, np.ones(2))[0]
    if kind == "fori":
        return lambda x: lax.fori_loop(0, 2, lambda i, c: fn(c), x)
    if kind == "fori_traced":  # bounds traced by jit: a while loop
        return lambda x: tg.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: fn(c), x))(
            x, np.array(2))
    if kind == "while":
        return lambda x: lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, fn(c[1])),
                                        (0, x))[1]
    if kind == "cond":
        return lambda x: lax.cond(x > -100.0, lambda x: fn(fn(x)), lambda x: x, x)
    if kind == "nested":  # a cond inside a scan body inside a fori body
        return lambda x: lax.fori_loop(0, 1, lambda i, c: lax.scan(
            lambda c, _: (lax.cond(c < 100.0, fn, tnp.sin, c), None), c, None, length=2)[0], x)
    raise ValueError(kind)


REVERSE_KINDS = ["scan", "scan_xs", "fori", "cond", "nested"]
ALL_KINDS = REVERSE_KINDS + ["while", "fori_traced"]


@pytest.mark.parametrize("kind", REVERSE_KINDS)
def test_custom_vjp_in_body_keeps_rule(kind):
    f = apply_twice(twice, kind)
    x = 0.7
    assert_close(f(x), np.float64(4 * x))
    assert float(tg.grad(f)(x)) == 9.0
    assert float(tg.jit(tg.grad(f))(x)) == 9.0
    assert float(tg.grad(tg.jit(f))(x)) == 9.0
    np.testing.assert_array_equal(tg.vmap(tg.grad(f))(np.array([0.7, -0.2, 3.0])), [9.0] * 3)
    np.testing.assert_array_equal(tg.grad(lambda x: tnp.sum(tg.vmap(f)(x)))(np.ones(2)),
                                  [9.0, 9.0])
    # grad(grad): the first derivative is 9 + (fwd's primal output 4x)' = 13, as for the
    # same code without control flow
    gg = tg.grad(tg.grad(lambda x: f(x) * x))(x)
    gg_py = tg.grad(tg.grad(lambda x: twice(twice(x)) * x))(x)
    assert float(gg) == float(gg_py) == 13.0
    assert float(tg.jit(tg.grad(tg.grad(lambda x: f(x) * x)))(x)) == 13.0


@pytest.mark.parametrize("kind", ["while", "fori_traced"])
def test_custom_vjp_in_while_body(kind):
    f = apply_twice(twice, kind)
    assert float(f(0.7)) == 2.8
    np.testing.assert_array_equal(tg.vmap(f)(np.array([1.0, 2.0])), [4.0, 8.0])
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         r"lax\.while_loop"):
        tg.grad(f)(0.7)
    # Forward mode transposes bwd (g -> 3 g) at each of the two applications.
    assert float(tg.jvp(f, (0.7,), (1.0,))[1]) == 9.0


def _csin2_derivs(x):
    """d/dx and d2/dx2 of csin(csin(x)) under the custom rule (2 cos)."""
    s = np.sin(x)
    d1 = 4.0 * np.cos(s) * np.cos(x)
    # the rule calls csin, so csin's own derivative inside the rule is again 2 cos
    d2 = 4.0 * (-np.sin(s) * 2.0 * np.cos(x) * np.cos(x) - np.cos(s) * np.sin(x))
    return d1, d2


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_custom_jvp_in_body_keeps_rule_forward(kind):
    f = apply_twice(csin, kind)
    x = 0.7
    d1, d2 = _csin2_derivs(x)
    assert_close(f(x), np.float64(np.sin(np.sin(x))), rtol=1e-14)
    p, t = tg.jvp(f, (x,), (1.0,))
    np.testing.assert_allclose(t, d1, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(lambda x: tg.jvp(f, (x,), (1.0,))[1])(x), d1, rtol=1e-13)
    xs = np.array([0.7, -0.4])
    np.testing.assert_allclose(tg.vmap(lambda x: tg.jvp(f, (x,), (1.0,))[1])(xs),
                               _csin2_derivs(xs)[0], rtol=1e-13)
    tt = tg.jvp(lambda x: tg.jvp(f, (x,), (1.0,))[1], (x,), (1.0,))[1]
    np.testing.assert_allclose(tt, d2, rtol=1e-12)


@pytest.mark.parametrize("kind", REVERSE_KINDS)
def test_custom_jvp_in_body_keeps_rule_reverse(kind):
    f = apply_twice(csin, kind)
    x = 0.7
    d1, d2 = _csin2_derivs(x)
    np.testing.assert_allclose(tg.grad(f)(x), d1, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(tg.grad(f))(x), d1, rtol=1e-13)
    xs = np.array([0.7, -0.4, 1.9])
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(xs), _csin2_derivs(xs)[0], rtol=1e-13)
    np.testing.assert_allclose(tg.grad(tg.grad(f))(x), d2, rtol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.grad(tg.grad(f)))(x), d2, rtol=1e-12)
    np.testing.assert_allclose(tg.jacfwd(tg.grad(f))(x), d2, rtol=1e-12)
    np.testing.assert_allclose(tg.vmap(tg.grad(tg.grad(f)))(xs), _csin2_derivs(xs)[1],
                               rtol=1e-12)


def test_custom_jvp_in_cond_with_batched_predicate():
    f = lambda x: lax.cond(x > 0, csin, tnp.cos, x)  # noqa: E731
    xs = np.array([0.5, -0.5, 1.5])
    want = np.where(xs > 0, 2 * np.cos(xs), -np.sin(xs))
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(xs), want, rtol=1e-14)
    np.testing.assert_allclose(tg.jvp(tg.vmap(f), (xs,), (np.ones(3),))[1], want, rtol=1e-14)
    g = lambda x: lax.cond(x > 0, twice, tnp.cos, x)  # noqa: E731
    np.testing.assert_allclose(tg.vmap(tg.grad(g))(xs), np.where(xs > 0, 3.0, -np.sin(xs)),
                               rtol=1e-14)


@tg.custom_jvp
def cexp(x):
    return tnp.exp(x)


@cexp.defjvp
def _cexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return cexp(x), cexp(x) * t  # the rule calls the function itself


@tg.custom_vjp
def csin_v(x):
    return tnp.sin(x)


csin_v.defvjp(lambda x: (csin_v(x), x),
              lambda x, g: (g * 3.0 * csin_v(x + np.pi / 2),))  # 3 cos(x), via itself


def test_rule_calling_itself_in_scan_body_terminates_and_higher_derivatives():
    x = 0.3
    f = lambda x: lax.scan(lambda c, _: (cexp(c), None), x, None, length=1)[0]  # noqa: E731
    d = f
    for _ in range(4):
        d = tg.grad(d)
        np.testing.assert_allclose(d(x), np.exp(x), rtol=1e-14)
    np.testing.assert_allclose(tg.jit(tg.grad(tg.grad(tg.grad(f))))(x), np.exp(x), rtol=1e-14)
    j = lambda g: (lambda x: tg.jvp(g, (x,), (1.0,))[1])  # noqa: E731
    np.testing.assert_allclose(j(j(j(f)))(x), np.exp(x), rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(tg.grad(f)))(np.array([x, 0.0])),
                               [np.exp(x), 1.0], rtol=1e-14)
    # applied twice: d/dx e^(e^x) = e^(e^x + x), second derivative e^(e^x + x) (e^x + 1)
    f2 = lambda x: lax.fori_loop(0, 2, lambda i, c: cexp(c), x)  # noqa: E731
    np.testing.assert_allclose(tg.grad(f2)(x), np.exp(np.exp(x) + x), rtol=1e-13)
    np.testing.assert_allclose(tg.grad(tg.grad(f2))(x),
                               np.exp(np.exp(x) + x) * (np.exp(x) + 1), rtol=1e-13)
    # a custom_vjp whose fwd and bwd call the function, in a scan: same as without the scan
    fv = lambda x: lax.scan(lambda c, _: (csin_v(c), None), x, None, length=2)[0]  # noqa: E731
    np.testing.assert_allclose(tg.grad(fv)(x), 9 * np.cos(np.sin(x)) * np.cos(x), rtol=1e-13)
    np.testing.assert_allclose(tg.grad(tg.grad(fv))(x), tg.grad(tg.grad(
        lambda x: csin_v(csin_v(x))))(x), rtol=1e-13)
    # and the while loop in forward mode
    fw = lambda x: lax.while_loop(lambda c: c[0] < 2,  # noqa: E731
                                  lambda c: (c[0] + 1, cexp(c[1])), (0, x))[1]
    np.testing.assert_allclose(j(j(fw))(x), np.exp(np.exp(x) + x) * (np.exp(x) + 1),
                               rtol=1e-13)


# ===========================================================================
# errors


def _raises(exc, fn, *fragments):
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    return msg


def test_cond_branch_mismatch_errors_show_both_sides():
    _raises(TypeError, lambda: lax.cond(True, lambda x: (x, x), lambda x: x, 1.0),
            "cond branch outputs must have the same pytree structure, but they differ:",
            "false_fun returns f64[]", "true_fun returns ('f64[]', 'f64[]')")
    _raises(TypeError, lambda: lax.cond(True, lambda x: x, lambda x: tnp.stack([x, x]), 1.0),
            "false_fun returns f64[2]", "true_fun returns f64[]")
    _raises(TypeError, lambda: lax.cond(True, lambda x: x,
                                        lambda x: tnp.asarray(x, np.float32), 1.0),
            "false_fun returns f32[]", "true_fun returns f64[]")
    _raises(TypeError, lambda: lax.switch(0, [lambda x: x, lambda x: x,
                                              lambda x: tnp.stack([x, x])], 1.0),
            "switch branches must have equal output types but they differ.",
            "branch 0 returns f64[]",
            "branch 2 returns f64[2]")
    # also when traced under transformations
    _raises(TypeError, lambda: tg.grad(lambda y: lax.cond(y > 0, lambda x: x,
                                                          lambda x: {"a": x}, y))(1.0),
            "false_fun returns {'a': 'f64[]'}", "true_fun returns f64[]")


def test_scan_carry_type_change_errors_show_both_sides():
    base = "scan body function carry input and carry output must have"

    def body(c, x):
        return tnp.stack([c, x]), x
    _raises(TypeError, lambda: lax.scan(body, 1.0, np.ones(3)), base,
            "input carry is f64[]", "output carry is f64[2]")

    def body(c, x):  # noqa: F811
        return tnp.asarray(c, np.float32), x
    _raises(TypeError, lambda: lax.scan(body, np.float64(1.0), np.ones(3)), base,
            "input carry is f64[]", "output carry is f32[]")

    def body(c, x):  # noqa: F811
        return (c, c), x
    _raises(TypeError, lambda: lax.scan(body, 1.0, np.ones(3)), base,
            "input carry is f64[]", "output carry is ('f64[]', 'f64[]')")

    def body(c, x):  # noqa: F811
        return c[0], x
    _raises(TypeError, lambda: lax.scan(body, (1.0, np.ones(2)), np.ones(3)), base,
            "input carry is ('f64[]', 'f64[2]')", "output carry is f64[]")
    _raises(TypeError, lambda: lax.while_loop(lambda c: c < 3.0,
                                              lambda c: tnp.asarray(c, np.float32),
                                              np.float64(1.0)),
            "while_loop body function carry input and carry output must have equal types",
            "input carry is f64[]",
            "output carry is f32[]")
    _raises(TypeError, lambda: lax.fori_loop(0, 3, lambda i, c: tnp.stack([c, c]), 1.0),
            "input carry is", "f64[2]")


def test_cond_predicate_errors():
    _raises(TypeError, lambda: lax.cond(np.array([True, False]), lambda x: x, lambda x: x, 1.0),
            "Pred must be a scalar, got [ True False] of shape (2,).")
    _raises(TypeError, lambda: lax.cond(np.ones((2, 2)) > 0, lambda x: x, lambda x: x, 1.0),
            "Pred must be a scalar", "of shape (2, 2)")
    _raises(TypeError, lambda: lax.cond(np.complex128(1.0), lambda x: x, lambda x: -x, 1.0),
            "Pred type must be either boolean or number, got complex128.")
    _raises(TypeError, lambda: lax.cond("yes", lambda x: x, lambda x: -x, 1.0),
            "Pred must be a scalar, got yes of type <class 'str'>")
    _raises(TypeError, lambda: lax.while_loop(lambda c: c, lambda c: c, 1.0),
            "cond_fun must return a boolean scalar, but got output type(s) "
            "[ShapedArray(float64[])].")
    _raises(TypeError, lambda: lax.switch(1.0, [lambda x: x], 1.0),
            "Index type must be an integer, got 1.0 as float64")
    _raises(TypeError, lambda: lax.switch(np.array([0, 1]), [lambda x: x], 1.0),
            "Branch index must be scalar, got [0 1] of shape (2,).")
    # numeric predicates are accepted as in JAX (nonzero is true)
    assert float(lax.cond(np.int64(2), lambda x: x, lambda x: -x, 1.0)) == 1.0
    assert float(lax.cond(0.0, lambda x: x, lambda x: -x, 1.0)) == -1.0


def test_scan_xs_leading_size_errors():
    _raises(ValueError, lambda: lax.scan(lambda c, x: (c, x), 0.0, (np.ones(3), np.ones(4))),
            "scan got values with different leading axis sizes: 3, 4.")
    _raises(ValueError, lambda: lax.scan(lambda c, x: (c, x), 0.0, np.ones(3), length=5),
            "scan got `length` argument of 5 which disagrees with leading axis sizes [3].")
    _raises(ValueError, lambda: lax.scan(lambda c, x: (c, x), 0.0, None),
            "scan got no values to scan over and `length` not provided.")
    _raises(ValueError, lambda: lax.scan(lambda c, x: (c, x), 0.0, {"a": np.float64(1.0)}),
            "scan got value with no leading axis to scan over: 1.0.")


def test_custom_jvp_closure_over_differentiated_value_in_scan_body_errors():
    def f(x, w):
        @tg.custom_jvp
        def g(y):
            return y * w

        g.defjvp(lambda p, t: (g(p[0]), 7.0 * t[0]))
        return lax.scan(lambda c, _: (g(c), None), x, None, length=2)[0]

    assert float(tg.grad(f)(1.0, 2.0)) == 49.0  # w closed over but not differentiated: fine
    np.testing.assert_array_equal(tg.vmap(tg.grad(f), in_axes=(None, 0))(1.0, np.array([2., 3.])),
                                  [49.0, 49.0])
    _raises(tg.core.CustomRuleClosureError,
            lambda: tg.grad(f, argnums=1)(1.0, 2.0),
            "custom_jvp function (g) with respect to a closed-over value")


# ===========================================================================
# the memory claim: residuals of a 1000-step scan are per-step arrays stacked once


T_MEM, N_MEM = 1000, 8


def _mem_problem():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((N_MEM, N_MEM)) / np.sqrt(N_MEM)
    xs = rng.standard_normal((T_MEM, N_MEM))
    c0 = rng.standard_normal(N_MEM)

    def body(W):
        def step(c, x):
            h = tnp.tanh(W @ c + x)
            return h * tnp.cos(c) + 0.5 * tnp.sin(x) * c, tnp.sum(h * h)
        return step

    def loss(c0, W, scan_fn=lax.scan):
        c, ys = scan_fn(body(W), c0, xs)
        return tnp.sum(c ** 2) + tnp.sum(ys)
    return W, xs, c0, loss


@pytest.mark.parametrize("wrt_W", [False, True])
def test_scan_linearization_stacks_per_step_residuals_once(wrt_W):
    W, xs, c0, loss = _mem_problem()
    if wrt_W:
        fun, primals = (lambda c0, W: [loss(c0, W)]), [c0, W]
    else:
        fun, primals = (lambda c0: [loss(c0, W)]), [c0]
    outs, jaxpr, consts, _, _ = ad.linearize_flat(fun, primals)
    np.testing.assert_allclose(outs[0], loss(c0, W), rtol=1e-14)
    step_size = N_MEM  # the carry, and x, are per-step arrays of N_MEM elements
    total = 0
    for c in consts:
        shape = np.shape(c)
        if shape[:1] == (T_MEM,):
            # stacked along the loop: one per-step-sized array per step
            assert int(np.prod(shape[1:])) <= step_size, shape
        else:
            # not stacked: the loop-invariant W (passed once) or the final carry used
            # after the loop; nothing whose size grows with the number of steps
            assert shape in [(N_MEM, N_MEM), (N_MEM,)], shape
            if shape == (N_MEM, N_MEM):
                np.testing.assert_array_equal(c, W)
        total += np.size(c)
    n_stacked = sum(1 for c in consts if np.shape(c)[:1] == (T_MEM,))
    assert 2 <= n_stacked <= 8, n_stacked  # a few per-step arrays for a body of a few ops
    assert sum(1 for c in consts if np.shape(c) == (N_MEM, N_MEM)) == 1  # W not duplicated
    assert total <= 8 * T_MEM * step_size, total  # O(T x state size), with a small constant
    # one scan in the linear program, over 1000 steps, with only linear ops in its body:
    # the forward program is not replayed
    scans = [e for e in jaxpr.eqns if e.prim.name == "scan"]
    assert len(scans) == 1 and scans[0].params["length"] == T_MEM
    body_names = prim_names(scans[0].params["jaxpr"])
    assert "scan" not in body_names
    assert not NONLINEAR & set(prim_names(jaxpr)), prim_names(jaxpr)
    assert "dot_general" in body_names and "mul" in body_names
    # and the linear program gives the right gradient
    res = ad.backward_pass(jaxpr, consts, [np.float64(1.0)])
    g_ref = tg.grad(lambda c0, W: loss(c0, W, py_scan), argnums=(0, 1))(c0, W)
    np.testing.assert_allclose(res[0], g_ref[0], rtol=1e-10, atol=1e-12)
    if wrt_W:
        np.testing.assert_allclose(res[1], g_ref[1], rtol=1e-10, atol=1e-12)


def test_scan_transpose_is_one_reverse_scan():
    W, xs, c0, loss = _mem_problem()
    # the backward program of grad is a single scan walking the steps backwards
    jaxpr = tg.make_jaxpr(tg.grad(lambda c0: loss(c0, W)))(c0)
    scans = [e for e in jaxpr.jaxpr.eqns if e.prim.name == "scan"]
    assert len(scans) == 2  # the forward (known) scan and the reverse linear scan
    assert sorted(e.params["reverse"] for e in scans) == [False, True]
    rev = [e for e in scans if e.params["reverse"]][0]
    assert not NONLINEAR & set(prim_names(rev.params["jaxpr"]))


# ===========================================================================
# bodies are traced once


def test_bodies_traced_once_not_per_iteration():
    calls = {"scan": 0, "wcond": 0, "wbody": 0, "fori": 0, "true": 0, "false": 0}

    def make_body():
        # A new function object each time: traced bodies are memoized per
        # function and argument types (as in JAX), so each run counts afresh.
        def body(c, x):
            calls["scan"] += 1
            return c * tnp.sin(x) + 0.1, c + x
        return body

    xs = np.linspace(0.0, 1.0, 200)
    body = make_body()
    lax.scan(body, 1.0, xs)
    calls["scan"] = 0
    lax.scan(body, 2.0, xs)  # same function and types: the traced body is reused
    assert calls["scan"] == 0
    body = make_body()
    loss = lambda c: tnp.sum(lax.scan(body, c, xs)[1]) + lax.scan(body, c, xs)[0]  # noqa: E731
    for name, run in [
            ("eager", lambda: lax.scan(body, 1.0, xs)),
            ("jit", lambda: tg.jit(lambda c: lax.scan(body, c, xs))(1.0)),
            ("jvp", lambda: tg.jvp(lambda c: lax.scan(body, c, xs), (1.0,), (1.0,))),
            ("vmap", lambda: tg.vmap(lambda c: lax.scan(body, c, xs))(np.ones(3))),
            ("grad", lambda: tg.grad(lambda c: lax.scan(body, c, xs)[0])(1.0)),
            ("vmap(grad)", lambda: tg.vmap(tg.grad(lambda c: lax.scan(body, c, xs)[0]))(
                np.ones(3))),
            ("grad(grad)", lambda: tg.grad(tg.grad(lambda c: lax.scan(body, c, xs)[0]))(1.0))]:
        body = make_body()
        calls["scan"] = 0
        run()
        assert calls["scan"] == 1, (name, calls["scan"])
    body = make_body()
    calls["scan"] = 0
    tg.grad(loss)(1.0)
    assert calls["scan"] == 1  # two scans of one function and signature: traced once
    # jit caches: a second call does not retrace
    body = make_body()
    f = tg.jit(tg.grad(lambda c: lax.scan(body, c, xs)[0]))
    calls["scan"] = 0
    f(1.0)
    f(2.0)
    assert calls["scan"] == 1

    def make_while():
        def wcond(c):
            calls["wcond"] += 1
            return c[0] < 100

        def wbody(c):
            calls["wbody"] += 1
            return c[0] + 1, c[1] * 1.01
        return wcond, wbody

    for run in (lambda wcond, wbody: lax.while_loop(wcond, wbody, (0, 1.0)),
                lambda wcond, wbody: tg.jvp(lambda x: lax.while_loop(wcond, wbody, (0, x))[1],
                                            (1.0,), (1.0,)),
                lambda wcond, wbody: tg.vmap(lambda n: lax.while_loop(
                    lambda c: wcond(c) & (c[0] < n), wbody, (0, 1.0)))(np.array([3, 50]))):
        calls["wcond"] = calls["wbody"] = 0
        run(*make_while())
        assert calls["wcond"] == 1 and calls["wbody"] == 1, calls

    def make_fbody():
        def fbody(i, c):
            calls["fori"] += 1
            return c + i
        return fbody

    for run in (lambda fbody: lax.fori_loop(0, 500, fbody, 0.0),
                lambda fbody: lax.fori_loop(0, np.array(500), fbody, 0.0),
                lambda fbody: tg.grad(lambda x: lax.fori_loop(0, 500, fbody, x))(0.0)):
        calls["fori"] = 0
        run(make_fbody())
        assert calls["fori"] == 1

    def make_branches():
        def t(x):
            calls["true"] += 1
            return tnp.sin(x)

        def fl(x):
            calls["false"] += 1
            return tnp.cos(x)
        return t, fl

    for run in (lambda t, fl: lax.cond(True, t, fl, 1.0),
                lambda t, fl: tg.grad(lambda x: lax.cond(x > 0, t, fl, x))(1.0),
                lambda t, fl: tg.vmap(lambda x: lax.cond(x > 0, t, fl, x))(np.array([-1.0, 1.0]))):
        calls["true"] = calls["false"] = 0
        run(*make_branches())
        assert calls["true"] == 1 and calls["false"] == 1, calls

    body = make_body()
    calls["scan"] = 0
    lax.map(lambda x: body(x, x)[0], xs)
    assert calls["scan"] == 1


def test_scan_unroll_is_accepted_and_changes_nothing():
    xs = np.linspace(0.0, 1.0, 7)
    body = lambda c, x: (c * 0.5 + x, c)  # noqa: E731
    want = lax.scan(body, 1.0, xs)
    for unroll in (0, 1, 3, True, False, np.int64(2)):   # (0: as JAX)
        got = lax.scan(body, 1.0, xs, unroll=unroll)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`"):
        lax.scan(body, 1.0, xs, unroll=-2)
    for bad in (1.5, "2"):
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
            lax.scan(body, 1.0, xs, unroll=bad)


def test_map_with_batch_size_matches_map_and_a_loop():
    xs = np.arange(14.0).reshape(7, 2)
    f = lambda x: {"a": tnp.sum(x ** 2), "b": x * 2.0}  # noqa: E731
    want = {"a": np.array([np.sum(x ** 2) for x in xs]), "b": xs * 2.0}
    for bs in (None, 1, 2, 3, 7, 10):
        got = lax.map(f, xs, batch_size=bs)
        np.testing.assert_allclose(got["a"], want["a"], rtol=1e-14)
        np.testing.assert_allclose(got["b"], want["b"], rtol=1e-14)
    g = tg.grad(lambda x: tnp.sum(lax.map(lambda r: tnp.sin(r).sum(), x, batch_size=3)))(xs)
    np.testing.assert_allclose(g, np.cos(xs), rtol=1e-14)
    np.testing.assert_allclose(tg.jit(lambda x: lax.map(lambda r: r * 3.0, x, batch_size=2))(xs),
                               xs * 3.0)
    for bad in (-1, 2.5, True):  # (0 maps one element at a time, as in JAX)
        with pytest.raises(ValueError, match="map: batch_size must be a positive integer"):
            lax.map(f, xs, batch_size=bad)
