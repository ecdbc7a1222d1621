"""``tangentia.custom_batching``: ``custom_vmap`` and ``sequential_vmap``.

The contract (``jax.custom_batching``): evaluation calls the function, ``vmap``
calls the rule ``rule(axis_size, in_batched, *args) -> (out, out_batched)``;
``jvp`` differentiates the function and, under ``vmap`` (``jacfwd``), uses the
JVP of the rule; ``jit`` stages the call and compiles the function's program;
reverse mode is an error (as in JAX) unless a custom_vjp supplies it.

Rules that deliberately differ from the function (``x * y`` for ``x + y``)
make it visible which one ran; values are checked against NumPy loops.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.custom_batching import custom_vmap, sequential_vmap


def make_add():
    """``x + y`` whose vmap rule computes ``x * y`` (and records its calls)."""
    calls = []

    @custom_vmap
    def add(x, y):
        return x + y

    @add.def_vmap
    def add_rule(axis_size, in_batched, xs, ys):
        calls.append((axis_size, in_batched, np.shape(xs), np.shape(ys)))
        return xs * ys, in_batched[0] or in_batched[1]

    return add, calls


X = np.array([0.5, -1.0, 2.0])
Y = np.array([3.0, 0.25, -2.0])


def test_evaluation_calls_the_function_and_vmap_the_rule():
    add, calls = make_add()
    np.testing.assert_array_equal(add(X, Y), X + Y)
    assert calls == []
    np.testing.assert_array_equal(tg.vmap(add)(X, Y), X * Y)
    assert calls == [(3, [True, True], (3,), (3,))]


def test_mixed_batched_and_unbatched_arguments():
    add, calls = make_add()
    M = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(tg.vmap(add, in_axes=(1, None))(M, 2.0), M.T * 2.0)
    assert calls == [(3, [True, False], (3, 2), ())]
    # No batched argument: the function runs (under vmap, the output is broadcast).
    np.testing.assert_array_equal(tg.vmap(lambda x: add(1.0, 2.0) + 0 * x)(X), [3.0] * 3)
    assert len(calls) == 1


def test_unbatched_output_and_out_axes():
    @custom_vmap
    def total(x, y):
        return tnp.sum(x) * y, y

    @total.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        assert in_batched == [True, False]
        return (tnp.sum(xs, axis=1) * ys, ys), (True, False)

    M = np.arange(6.0).reshape(3, 2)
    a, b = tg.vmap(total, in_axes=(0, None), out_axes=(0, None))(M, 2.0)
    np.testing.assert_array_equal(a, M.sum(1) * 2.0)
    np.testing.assert_array_equal(b, 2.0)


def test_pytrees_with_none_leaves_and_kwargs():
    seen = []

    @custom_vmap
    def f(p, scale=1.0):
        return {"out": p["w"] * scale + p["b"][0], "none": None}

    @f.def_vmap
    def rule(axis_size, in_batched, p, scale):
        seen.append(in_batched)
        return {"out": p["w"] * scale + p["b"][0], "none": None}, {"out": True, "none": None}

    p = {"w": X, "b": (np.array(1.0), None)}
    np.testing.assert_array_equal(f(p, scale=2.0)["out"], 2 * X + 1)
    out = tg.vmap(lambda w: f({"w": w, "b": (np.array(1.0), None)}, scale=2.0))(X)
    np.testing.assert_array_equal(out["out"], 2 * X + 1)
    assert out["none"] is None
    assert seen == [[{"b": (False, None), "w": True}, False]]


def test_closures_over_unbatched_values_and_batched_ones():
    c = np.array(10.0)

    @custom_vmap
    def f(x):
        return x + c

    @f.def_vmap
    def rule(axis_size, in_batched, xs):
        return xs - c, True

    np.testing.assert_array_equal(tg.vmap(f)(X), X - 10.0)

    def g(x, y):
        h = custom_vmap(lambda z: z * y)
        h.def_vmap(lambda n, b, zs: (zs * y, True))
        return h(x)

    with pytest.raises(ValueError, match="custom_vmap function <lambda> closes over a value "
                                         "that vmap batches"):
        tg.vmap(g)(X, Y)
    np.testing.assert_array_equal(tg.vmap(g, in_axes=(0, None))(X, 2.0), 2 * X)


def test_under_jit_in_both_orders():
    add, calls = make_add()
    np.testing.assert_array_equal(tg.jit(tg.vmap(add))(X, Y), X * Y)
    np.testing.assert_array_equal(tg.vmap(tg.jit(add))(X, Y), X * Y)
    np.testing.assert_array_equal(tg.jit(add)(X, Y), X + Y)   # the staged function
    jaxpr = str(tg.make_jaxpr(add)(X, Y))
    assert "custom_vmap_call" in jaxpr and "add" in jaxpr
    assert len(calls) == 2


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba is not installed")
def test_numba_backend_inlines_the_call():
    add, _ = make_add()
    np.testing.assert_array_equal(tg.jit(add, backend="numba")(X, Y), X + Y)


def test_jvp_differentiates_the_function_jacfwd_uses_the_rule():
    add, calls = make_add()
    _, t = tg.jvp(add, (X, Y), (np.ones(3), 2 * np.ones(3)))
    np.testing.assert_array_equal(t, 3 * np.ones(3))       # d(x + y), not the rule
    assert calls == []
    # jacfwd = vmap of jvp over the basis: the JVP of the rule x * y.
    np.testing.assert_allclose(tg.jacfwd(add)(X, Y), np.diag(Y))
    np.testing.assert_allclose(tg.jacfwd(add, argnums=1)(X, Y), np.diag(X))
    # vmap of jvp: the rule's primal and its JVP, batched.
    p, t = tg.vmap(lambda x, y: tg.jvp(add, (x, y), (1.0, 0.0)))(X, Y)
    np.testing.assert_allclose(p, X * Y)
    np.testing.assert_allclose(t, Y)


def test_jvp_of_a_closure_differentiates_the_closed_over_value():
    def f(x, c):
        g = custom_vmap(lambda z: tnp.sin(z) * c)
        g.def_vmap(lambda n, b, zs: (tnp.sin(zs) * c, True))
        return g(x)

    _, t = tg.jvp(f, (0.3, 2.0), (0.0, 1.0))
    np.testing.assert_allclose(t, np.sin(0.3))
    with pytest.raises(ValueError, match="closes over a value that vmap batches \\(or whose "
                                         "tangent it batches, as under jacfwd\\)"):
        tg.jacfwd(f, argnums=1)(X, 2.0)


def test_reverse_mode_is_an_error_with_jax_wording():
    add, _ = make_add()
    with pytest.raises(ValueError, match="^Linearization failed to produce known values for all "
                                         "output primals.*custom_vmap function add"):
        tg.grad(lambda x: tnp.sum(add(x, Y)))(X)
    # Inputs that do not depend on the differentiated value are computed now.
    g = tg.grad(lambda x: tnp.sum(add(Y, Y) * x))(X)
    np.testing.assert_array_equal(g, 2 * Y)


def make_square():
    @tg.custom_vjp
    def square(x):
        return x * x

    square.defvjp(lambda x: (x * x, x), lambda x, g: (2.0 * x * g,))
    return square


def test_custom_vjp_around_a_custom_vmap_function():
    add, calls = make_add()

    @tg.custom_vjp
    def f(x, y):
        return add(x, y)

    f.defvjp(lambda x, y: (add(x, y), None), lambda res, g: (g, g))
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(f(x, Y)))(X), np.ones(3))
    # Under vmap, fwd runs the custom_vmap function batched: its rule.
    out = tg.vmap(tg.value_and_grad(f))(X, Y)
    np.testing.assert_allclose(out[0], X * Y)
    np.testing.assert_allclose(out[1], np.ones(3))
    assert calls and calls[-1][1] == [True, True]


def test_custom_vjp_inside_the_function_and_the_rule():
    square = make_square()

    @custom_vmap
    def f(x):
        return square(x) + 1.0

    @f.def_vmap
    def rule(axis_size, in_batched, xs):
        return square(xs) + 1.0, in_batched[0]

    np.testing.assert_allclose(tg.vmap(f)(X), X * X + 1)
    # Forward mode through the custom_vjp inside (the transpose of its bwd).
    np.testing.assert_allclose(tg.jvp(f, (X,), (np.ones(3),))[1], 2 * X)
    np.testing.assert_allclose(tg.jacfwd(f)(X), np.diag(2 * X))
    # A custom_vjp whose fwd and bwd call custom_vmap functions, differentiated
    # under vmap: the rules batch them.
    add, calls = make_add()

    @tg.custom_vjp
    def g(x):
        return x * 3.0

    g.defvjp(lambda x: (x * 3.0, x), lambda x, ct: (add(ct, x),))   # bwd "ct + x", rule "ct x"
    np.testing.assert_allclose(tg.grad(g)(1.5), 2.5)
    np.testing.assert_allclose(tg.vmap(tg.grad(g))(X), X)   # the seed ct = 1 is unbatched
    assert calls[-1][1] == [False, True]


def test_errors_with_jax_wording():
    f = custom_vmap(lambda x: x)
    with pytest.raises(AttributeError, match="^No batching rule defined for custom_vmap function "
                                             "<lambda> using def_vmap."):
        f(1.0)

    @custom_vmap
    def g(x):
        return x

    @g.def_vmap
    def bad_structure(axis_size, in_batched, xs):
        return (xs, xs), (True, True)

    with pytest.raises(ValueError, match=r"^structure of output returned by custom vmap rule "
                                         r"\(bad_structure\) does not match that of original "
                                         r"custom-vmapped function"):
        tg.vmap(g)(X)

    @g.def_vmap
    def bad_spec(axis_size, in_batched, xs):
        return xs, (True,)

    with pytest.raises(ValueError, match=r"^structure of output value and output batching "
                                         r"specification returned by custom vmap rule "
                                         r"\(bad_spec\) do not match"):
        tg.vmap(g)(X)

    @g.def_vmap
    def wrong_flag(axis_size, in_batched, xs):
        return xs, False

    with pytest.raises(ValueError, match=r"output 0 is marked unbatched in out_batched, so it "
                                         r"must be f64\[\].*returned f64\[3\]"):
        tg.vmap(g)(X)

    @custom_vmap
    def h(x, *, y):
        return x * y

    h.def_vmap(lambda n, b, x: (x, True))
    with pytest.raises(TypeError, match="^The input arguments to the custom_vmap-decorated "
                                        "function h could not be resolved"):
        h(1.0, y=2.0)


def test_sequential_vmap_maps_with_a_loop():
    traced = []

    @sequential_vmap
    def f(x, y):
        traced.append(np.shape(x))
        return tnp.sum(x) * y

    M = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(tg.vmap(f, in_axes=(0, None))(M, 2.0), M.sum(1) * 2.0)
    assert traced and set(traced) == {(2,)}     # the body sees one element at a time
    np.testing.assert_allclose(tg.vmap(f)(M, Y), M.sum(1) * Y)
    assert "scan" in str(tg.make_jaxpr(tg.vmap(f))(M, Y))
    np.testing.assert_allclose(tg.jacfwd(f, argnums=1)(M[0], 2.0), M[0].sum())


@settings(max_examples=25, deadline=None)
@given(st.lists(st.booleans(), min_size=3, max_size=3), st.integers(1, 4))
def test_rule_matches_the_loop_for_any_batching(batched, n):
    # A correct rule (the batched computation) equals the loop over examples.
    @custom_vmap
    def f(a, b, c):
        return a * b + tnp.sin(c), tnp.sum(a)

    @f.def_vmap
    def rule(axis_size, in_batched, a, b, c):
        s = tnp.sum(a, axis=-1)
        return (a * (b[:, None] if in_batched[1] else b) + tnp.sin(c), s), \
            (any(in_batched), in_batched[0])

    rng = np.random.default_rng(n)
    args = [rng.normal(size=(n, 2)) if batched[0] else rng.normal(size=2),
            rng.normal(size=n) if batched[1] else np.array(rng.normal()),
            rng.normal(size=(n, 2)) if batched[2] else rng.normal(size=2)]
    if not any(batched):
        return
    in_axes = tuple(0 if b else None for b in batched)
    out = tg.vmap(f, in_axes=in_axes)(*args)
    for i in range(n):
        ex = [x[i] if b else x for x, b in zip(args, batched)]
        want = (ex[0] * ex[1] + np.sin(ex[2]), ex[0].sum())
        np.testing.assert_allclose(out[0][i], want[0], rtol=1e-12)
        np.testing.assert_allclose(out[1][i], want[1], rtol=1e-12)
