"""checkpoint around control flow, and control flow under every transformation:
the cases where tangentia differed from JAX (its tests/checkpoint_test.py,
api_test.py RematTest and lax_control_flow_test.py were run against tangentia
through a shim).  Each case is checked against the same function without
checkpoint and against central finite differences in float64."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax


def _fd_grad(f, args, argnum, eps=1e-6):
    """Central finite differences of the scalar ``f`` in argument ``argnum``."""
    x = np.asarray(args[argnum], float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        lo = list(args)
        hi = list(args)
        lo[argnum], hi[argnum] = x - d, x + d
        g[i] = (float(f(*hi)) - float(f(*lo))) / (2 * eps)
    return g


# --- checkpoint of a body whose loop/branch multiplies a carry by a differentiated value


def _scan_power(w, x):
    def step(c, _):
        return tnp.sin(c) * w, None
    return tnp.sum(lax.scan(step, x, None, length=3)[0])


def _scan_with_xs(w, x):
    def step(c, xi):
        c = c * w + tnp.cos(xi * c)
        return c, c * xi
    c, ys = lax.scan(step, x, np.linspace(0.2, 0.9, 4))
    return tnp.sum(c) + tnp.sum(ys ** 2)


def _fori(w, x):
    return tnp.sum(lax.fori_loop(0, 4, lambda i, c: tnp.tanh(c * w) + i * 0.1, x))


def _cond_in_scan(w, x):
    def step(c, _):
        c = lax.cond(tnp.sum(c) > 0, lambda c: c * w, lambda c: tnp.sin(c) * w * w, c)
        return c, None
    return tnp.sum(lax.scan(step, x, None, length=3)[0])


def _cond_carry(w, x):
    def step(c, _):
        return lax.cond(c[0] > 0.5, lambda: c * w, lambda: c * 2.0), None
    return tnp.sum(lax.scan(step, x, None, length=3)[0] * w)


def _switch_of_products(w, x):
    y = lax.switch(1, [lambda v: v * w, lambda v: tnp.sin(v) * w * v, lambda v: v], x)
    return tnp.sum(y)


BODIES = [_scan_power, _scan_with_xs, _fori, _cond_in_scan, _cond_carry, _switch_of_products]
W = np.array([0.9, 1.1])
X = np.array([0.7, 0.4])


@pytest.mark.parametrize("body", BODIES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_grad_of_checkpointed_control_flow_matches_plain_and_finite_differences(body, argnums):
    want = tg.grad(body, argnums=argnums)(W, X)
    got = tg.grad(tg.checkpoint(body), argnums=argnums)(W, X)
    for g, h in zip(np.atleast_1d(got) if argnums != (0, 1) else got,
                    np.atleast_1d(want) if argnums != (0, 1) else want):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-14)
    for k in (argnums if isinstance(argnums, tuple) else (argnums,)):
        g = got[k] if isinstance(argnums, tuple) else got
        np.testing.assert_allclose(g, _fd_grad(body, (W, X), k), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("body", [_scan_power, _cond_in_scan], ids=lambda f: f.__name__)
def test_checkpoint_of_control_flow_under_jit_vmap_and_second_order(body):
    cb = tg.checkpoint(body)
    want = tg.grad(body)(W, X)
    np.testing.assert_allclose(tg.jit(tg.grad(cb))(W, X), want, rtol=1e-12)
    np.testing.assert_allclose(tg.grad(tg.jit(cb))(W, X), want, rtol=1e-12)
    ws = np.stack([W, W * 0.5])
    np.testing.assert_allclose(tg.vmap(tg.grad(cb), (0, None))(ws, X),
                               np.stack([tg.grad(body)(w, X) for w in ws]), rtol=1e-12)
    np.testing.assert_allclose(tg.hessian(cb)(W, X), tg.hessian(body)(W, X), rtol=1e-10)


def test_nested_checkpoint_inside_a_checkpointed_scan():
    inner = tg.checkpoint(lambda c, w: tnp.sin(c) * w)

    def f(w, x):
        return tnp.sum(lax.scan(lambda c, _: (inner(c, w), None), x, None, length=4)[0])

    want = tg.grad(f, argnums=(0, 1))(W, X)
    got = tg.grad(tg.checkpoint(f), argnums=(0, 1))(W, X)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-12)


# --- control flow: behaviour and errors as in JAX


def test_grad_of_vmapped_cond_ignores_the_branch_not_taken():
    # sqrt has an infinite derivative at 0; the batched cond runs both branches,
    # and the branch not taken must contribute zero, not NaN
    def safe_sqrt(x):
        return lax.cond(x < 1e-3, lambda: 1e-3, lambda: tnp.sqrt(x))

    x = np.array([0.0, 4.0, 0.0, 0.25])
    with np.errstate(all="ignore"):
        g = tg.grad(lambda x: tnp.sum(tg.vmap(safe_sqrt)(x)))(x)
        g_jit = tg.jit(tg.grad(lambda x: tnp.sum(tg.vmap(safe_sqrt)(x))))(x)
    np.testing.assert_array_equal(g, [0.0, 0.25, 0.0, 1.0])
    np.testing.assert_array_equal(g_jit, g)
    # the values are those of a Python loop, for three branches too
    ops = [lambda v: v * 2.0, lambda v: tnp.sin(v), lambda v: -v]
    idx = np.array([2, 0, 1, 0])
    got = tg.vmap(lambda i, v: lax.switch(i, ops, v))(idx, x)
    np.testing.assert_allclose(got, [float(ops[i](v)) for i, v in zip(idx, x)], rtol=1e-15)


def test_fori_loop_with_concrete_non_int_bounds_is_a_scan():
    # as JAX: bounds with concrete values (floats, arrays, values being differentiated)
    # give a scan, so reverse mode works; bounds traced by jit give a while loop
    body = lambda i, c: c * 1.5  # noqa: E731
    assert float(tg.grad(lambda x: lax.fori_loop(x, x + 2.0, lambda i, c: c, x))(1.0)) == 1.0
    g = tg.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0))(2.0, np.array(3))
    assert float(g) == 12.0
    assert float(tg.grad(lambda x: lax.fori_loop(np.int32(1), np.int32(4), body, x))(1.0)) \
        == 1.5 ** 3
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop or lax.fori_loop with dynamic"):
        tg.jit(tg.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0)))(
            2.0, np.array(3))
    with pytest.raises(TypeError, match="lower and upper arguments to fori_loop must have "
                                        "equal types, got int16 and int32"):
        lax.fori_loop(np.int16(0), np.int32(3), body, 1.0)
    assert float(lax.fori_loop(0, np.int16(3), body, 1.0)) == 1.5 ** 3   # a Python int is weak


def test_cond_with_per_branch_operands():
    # JAX's older signature cond(pred, true_operand, true_fun, false_operand, false_fun)
    f = lambda x: lax.cond(x > 0, x, lambda a: a * 3.0, 2.0, lambda b: b - x)  # noqa: E731
    assert float(f(2.0)) == 6.0 and float(f(-1.0)) == 3.0
    assert float(tg.grad(f)(2.0)) == 3.0 and float(tg.grad(f)(-1.0)) == -1.0
    assert float(tg.jit(f)(-1.0)) == 3.0


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: lax.fori_loop(0, 1, 42, 0), TypeError,
     "lax.fori_loop: body_fun argument should be callable."),
    (lambda: lax.while_loop(42, 42, 0), TypeError,  # type: ignore[arg-type]  # deliberately wrong
     "lax.while_loop: body_fun and cond_fun arguments should be callable."),
    (lambda: lax.switch(0, [42]), TypeError,  # type: ignore[list-item]  # deliberately wrong
     "lax.switch: branches argument should be a sequence of callables."),
    (lambda: lax.cond(True, 42, 42), TypeError,  # type: ignore[arg-type]  # deliberately wrong
     "lax.cond: true_fun and false_fun arguments should be callable."),
    (lambda: lax.scan(42, 0, np.ones(2)), TypeError,  # type: ignore[arg-type]  # deliberately wrong
     "lax.scan: f argument should be a callable."),
    (lambda: lax.associative_scan(42, np.ones(2)), TypeError,  # type: ignore[arg-type]  # deliberately wrong
     "lax.associative_scan: fn argument should be callable."),
    (lambda: lax.cond(None, lambda: 1.0, lambda: 2.0), TypeError, "cond predicate is None"),
    (lambda: lax.cond(print, lambda: 1.0, lambda: 2.0), TypeError,
     "Pred type must be either boolean or number, got <built-in function print>."),
    (lambda: lax.cond((1.0, 1.0), lambda: 1.0, lambda: 2.0), TypeError,
     "Pred must be a scalar, got (1.0, 1.0) of type <class 'tuple'>"),
    (lambda: lax.switch("foo", [lambda: 1.0]), TypeError, "Index type must be an integer, got foo."),
    (lambda: lax.switch((1, 1), [lambda: 1.0]), TypeError,
     "Branch index must be scalar, got (1, 1) of shape (2,)."),
    (lambda: lax.switch(0, []), ValueError, "Empty branch sequence"),
    (lambda: lax.switch(1, [lambda: 1.0, lambda: (1.0, 1.0)]), TypeError,
     "switch branch outputs must have the same pytree structure, but they differ:"),
    (lambda: lax.cond(True, lambda: np.ones(1), lambda: 1.0), TypeError,
     "cond branches must have equal output types but they differ."),
    (lambda: lax.scan(lambda c, x: (c, x), 0, [1, 2]), ValueError,
     "scan got value with no leading axis to scan over: 1, 2."),
    (lambda: lax.scan(lambda c, x: 0.0,  # type: ignore[arg-type, return-value]  # deliberately
                      0.0, np.ones(2, np.float32)), TypeError,
     "scan body output must be a pair, got float64[]."),
    (lambda: lax.scan(lambda c, x: ((c, c), x), 0.0, np.ones(2)), TypeError,
     "scan body function carry input and carry output must have the same pytree structure"),
    (lambda: lax.while_loop(lambda c: (True, True), lambda c: c, 0.0), TypeError,
     "cond_fun must return a boolean scalar, but got pytree PyTreeDef((*, *))."),
    (lambda: lax.while_loop(lambda c: c, lambda c: c, np.float32(0.0)), TypeError,
     "cond_fun must return a boolean scalar, but got output type(s) [ShapedArray(float32[])]."),
    (lambda: lax.while_loop(lambda c: c < 3.0, lambda c: tnp.asarray(c, np.int32), 1.0),
     TypeError, "while_loop body function carry input and carry output must have equal types"),
])
def test_control_flow_errors_begin_with_jax_wording(call, exc, msg):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value).startswith(msg), str(info.value)


def test_weakly_typed_initial_carry_takes_the_dtype_the_body_gives_it():
    # a Python scalar carry meeting a uint64 array: the carry is uint64, as in JAX
    # (NumPy would promote int64 with uint64 to float64)
    x = np.arange(1, 6, dtype=np.uint64)
    carry, ys = lax.scan(lambda c, v: (c + v, v), 0, x)
    assert carry.dtype == np.uint64 and int(carry) == 15
    np.testing.assert_array_equal(ys, x)
    out = lax.while_loop(lambda v: v < 2, lambda v: v + np.uint64(1), 0)
    assert out.dtype == np.uint64 and int(out) == 2
    # a weak float carry given float32 by the body is float32
    c32, _ = lax.scan(lambda c, v: (tnp.asarray(c * v, np.float32), None), 1.0,
                      np.full(3, 2.0, np.float32))
    assert c32.dtype == np.float32 and float(c32) == 8.0


def test_vmap_keeps_an_unbatched_loop_counter_unbatched():
    # only carries that depend on batched values are batched (JAX's fixpoint): the
    # counter stays a scalar and the predicate needs no reduction over the batch
    f = lambda x: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 2.0),  # noqa
                                 (0, x))
    xs = np.array([1.0, -2.0, 0.5])
    jaxpr = tg.make_jaxpr(tg.vmap(f))(xs).jaxpr
    loop, = [e for e in jaxpr.eqns if e.prim.name == "while"]
    assert loop.params["cond_jaxpr"].invars[0].aval.shape == ()
    counts, vals = tg.vmap(f)(xs)
    np.testing.assert_array_equal(counts, 4)
    np.testing.assert_array_equal(vals, xs * 16.0)
    # scan: an unbatched carry beside a batched one; values as a Python loop
    g = lambda x: lax.scan(lambda c, v: ((c[0] + 1.0, c[1] * v + c[0]), c[0] * v),  # noqa
                           (0.0, x), np.arange(1.0, 4.0))
    (n, acc), ys = tg.vmap(g)(xs)
    np.testing.assert_array_equal(n, [3.0] * 3)
    for i, x in enumerate(xs):
        (n1, acc1), ys1 = g(x)
        np.testing.assert_allclose(acc[i], acc1, rtol=1e-15)
        np.testing.assert_allclose(ys[i], ys1, rtol=1e-15)
    np.testing.assert_allclose(tg.vmap(tg.grad(lambda x: g(x)[0][1]))(xs),
                               [float(tg.grad(lambda x: g(x)[0][1])(x)) for x in xs], rtol=1e-14)


def test_checkpoint_names_and_printed_program():
    from tangentia import ad_checkpoint
    assert ad_checkpoint.checkpoint is tg.checkpoint and ad_checkpoint.remat is tg.remat
    text = str(tg.make_jaxpr(tg.checkpoint(lambda y: tnp.sin(y) * 2.0))(1.0))
    assert "checkpoint[jaxpr={" in text and "sin" in text and "policy" not in text


def test_branches_share_residual_slots_of_the_same_type():
    # only one branch runs, so its residuals reuse the slots of the others: sin and cos
    # each save one f64[] (one slot between them); sin + cos needs a second slot
    def residuals(branches):
        jaxpr = tg.make_jaxpr(tg.grad(lambda x, i: lax.switch(i, branches, x)))(0.3, 0).jaxpr
        fwd = [e for e in jaxpr.eqns if e.prim.name == "cond"][0]
        return len(fwd.params["branches"][0].outvars) - 1   # minus the primal output

    two = [tnp.sin, tnp.cos]
    assert residuals(two) == residuals(two + [tnp.sinh]) == 1
    assert residuals(two + [tnp.sinh, lambda x: tnp.sin(x) + tnp.cos(x)]) == 2
    fns = two + [tnp.sinh, lambda x: tnp.sin(x) + tnp.cos(x)]
    for i, fn in enumerate(fns):
        g = tg.grad(lambda x: lax.switch(i, fns, x))(0.3)
        np.testing.assert_allclose(g, _fd_grad(fn, (0.3,), 0), rtol=1e-8)


def test_scan_reverse_mode_keeps_xs_as_they_are():
    # the per-step slices of xs that the backward pass needs are xs itself (no stacked
    # copy); under checkpoint the residuals are the inputs only
    def cumprod(x):
        return lax.scan(lambda s, v: (v * s, s), tnp.ones((2, 8)), x)

    x = np.random.RandomState(0).randn(16, 2, 8)
    for f, copies in [(cumprod, 1), (tg.checkpoint(cumprod), 0)]:
        _, pullback = tg.vjp(f, x)
        big = [r for r in tg.tree_util.tree_leaves(pullback) if np.shape(r) == x.shape]
        assert any(np.shares_memory(r, x) for r in big)
        # the only other full-size residual is the stacked carry (v * s needs s)
        assert sum(not np.shares_memory(r, x) for r in big) == copies
        ct = (np.ones((2, 8)), np.ones((16, 2, 8)))
        np.testing.assert_allclose(pullback(ct)[0], tg.vjp(cumprod, x)[1](ct)[0], rtol=1e-13)


def test_checkpoint_removed_concrete_option_and_control_flow_hint():
    with pytest.raises(NotImplementedError, match="The `concrete` option to `jax.checkpoint` "
                                                  "was deprecated"):
        tg.checkpoint(tnp.sin, concrete=True)

    def g(x):
        return tnp.sin(x) if x > 0 else tnp.cos(x)

    with pytest.raises(tg.errors.TracerBoolConversionError, match="static_argnums / "
                                                                  "static_argnames of jit or "
                                                                  "checkpoint"):
        tg.checkpoint(g)(3.0)
    h = tg.checkpoint(lambda x, pos: tnp.sin(x) if pos else tnp.cos(x), static_argnums=(1,))
    np.testing.assert_allclose(tg.grad(h)(3.0, True), np.cos(3.0), rtol=1e-15)


def test_linearized_loop_of_a_python_scalar_is_the_loop_alone():
    # a weakly typed initial carry of the loop's dtype enters the loop as it is (no
    # convert_element_type equation in the linear program, as in JAX)
    f = lambda x: lax.scan(lambda c, v: (tnp.sin(c) * v, None), x, np.arange(1.0, 4.0))[0]  # noqa
    jaxpr = tg.make_jaxpr(tg.linearize(f, 0.4)[1])(1.0).jaxpr
    assert [e.prim.name for e in jaxpr.eqns] == ["scan"]
    np.testing.assert_allclose(tg.linearize(f, 0.4)[1](1.0), _fd_grad(f, (0.4,), 0), rtol=1e-8)
    w = lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)  # noqa: E731
    assert float(tg.jit(w)(1.0)) == 16.0
    assert [float(v) for v in tg.jit(lambda x: tg.jvp(w, (x,), (1.0,)))(1.0)] == [16.0, 16.0]


def test_named_axis_inside_a_loop_or_jit_that_is_not_batched_otherwise():
    # the loop's operands are not batched, but its cond_fun reads the vmap's named axis:
    # the loop is batched anyway (each element stops at its own index), as in JAX
    fun = lambda x: lax.while_loop(lambda v: v < lax.axis_index("i"), lambda v: v + 2, x)  # noqa
    want = [0, 2, 2, 4]
    np.testing.assert_array_equal(tg.vmap(fun, axis_name="i")(np.zeros(4, np.int64)), want)
    np.testing.assert_array_equal(
        tg.vmap(lambda _, x: tg.jit(fun)(x), axis_name="i", in_axes=(0, None))(np.zeros(4), 0),
        want)
    # a psum over the axis in a scan body started from an unbatched carry
    f = lambda x: lax.scan(lambda c, _: (c + lax.psum(x, "i"), None), 0.0, None, length=2)[0]  # noqa
    np.testing.assert_allclose(tg.vmap(lambda x, y: f(y), axis_name="i", in_axes=(0, None))(
        np.arange(3.0), 1.5), [9.0] * 3)
