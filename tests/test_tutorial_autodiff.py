"""Behaviours JAX's autodiff tutorials rely on (custom derivative rules, the autodiff
cookbook, advanced autodiff, gradient checkpointing), each found different from JAX by
running those tutorials with only their imports changed; our own code and numbers."""
import sys

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


def test_bwd_structure_error_begins_with_jax_wording_then_names_the_rule():
    @tg.custom_vjp
    def tap(x):
        return x

    def tap_bwd(res, g):
        return g                                    # not a tuple

    tap.defvjp(lambda x: (x, None), tap_bwd)
    with pytest.raises(TypeError) as ei:
        tg.grad(lambda x: tnp.cos(tap(x * x)))(1.5)
    msg = str(ei.value)
    assert msg.startswith("Custom VJP bwd rule must produce an output with the same container "
                          "(pytree) structure as the args tuple of the primal function"), msg
    assert "tap_bwd of function tap" in msg


def test_bwd_shape_error_begins_with_jax_wording_then_names_the_rule():
    @tg.custom_vjp
    def total(x):
        return tnp.sum(x)

    def total_bwd(res, g):
        return (tnp.ones(4) * g,)

    total.defvjp(lambda x: (total(x), None), total_bwd)
    with pytest.raises(ValueError) as ei:
        tg.grad(total)(np.arange(3.0))
    msg = str(ei.value)
    assert msg.startswith("Custom VJP bwd rule must produce an output with the same type as the "
                          "args tuple of the primal function, but at output[0] the bwd rule "
                          "produced an output of type float64[4] corresponding to an input of "
                          "type float64[3], so the shapes do not match"), msg
    assert "total_bwd of function total" in msg


def _report(f, *args, **kwargs):
    from tangentia.ad_checkpoint import saved_residuals
    return [f"{aval.str_short()} {what}" for aval, what in saved_residuals(f, *args, **kwargs)]


def _two_layer(params, x, scale=2.0):
    from tangentia.ad_checkpoint import checkpoint_name
    h = checkpoint_name(tnp.tanh(params["w"] @ x), "hidden")
    return tnp.sum(tnp.sin(params["v"] @ h)) * scale


PARAMS = {"w": np.full((3, 2), 0.5), "v": np.full((4, 3), 0.25)}


def _at(fun, line, col):
    """JAX's summary of a source position: line ``line`` of ``fun``'s body (1 = its first)."""
    return f"{__file__}:{fun.__code__.co_firstlineno + line}:{col} ({fun.__qualname__})"


def test_saved_residuals_name_arguments_by_parameter_and_path_then_values_in_order():
    # arguments first (in signature order, pytree paths), then computed values in program
    # order, each with the line and column of the user's code that computed it
    assert _report(_two_layer, PARAMS, np.ones(2)) == [
        "f64[4,3] from the argument params['v']",
        "f64[3,2] from the argument params['w']",
        "f64[2] from the argument x",
        f"f64[3] output of sub from {_at(_two_layer, 2, 24)}",   # 1 - tanh^2 (of tnp.tanh)
        f"f64[3] named 'hidden' from {_at(_two_layer, 2, 8)}",
        f"f64[4] output of cos from {_at(_two_layer, 3, 19)}"]
    # a policy inside checkpoint: the saved value is described from inside the checkpoint,
    # at the line that computed it (programs re-traced by transformations keep it)
    policy = tg.checkpoint_policies.save_only_these_names("hidden")
    assert _report(tg.checkpoint(_two_layer, policy=policy), PARAMS, np.ones(2)) == [
        "f64[4,3] from the argument params['v']",
        "f64[3,2] from the argument params['w']",
        "f64[2] from the argument x",
        f"f64[3] named 'hidden' from {_at(_two_layer, 2, 8)}"]
    # keyword arguments come after positional ones (sorted), **kwargs by key
    def g(a, *rest, **kw):
        return tnp.sum(tnp.sin(a * rest[0] * kw["z"]))
    lines = _report(g, np.ones(2), np.ones(2), z=np.ones(2))
    assert lines[:3] == ["f64[2] from the argument a", "f64[2] from the argument rest[0]",
                         "f64[2] from the argument kw['z']"], lines


def test_saved_residuals_of_a_jitted_function_name_it_and_see_through_forwarded_inputs():
    def inner(a, b):
        return tnp.sin(a * b)
    assert _report(tg.jit(inner), 2.0, 3.0) == [
        "f64[] from the argument a", "f64[] from the argument b",
        "f64[] output of jitted function 'inner' from "]    # no user frame computed it
    assert _report(lambda a, b: tg.jit(inner)(a, b) * 1.0, 2.0, 3.0)[-1] == (
        f"f64[] output of jitted function 'inner' from {__file__}:"
        f"{sys._getframe().f_lineno - 2}:32 (test_saved_residuals_of_a_jitted_function_name_it_"
        "and_see_through_forwarded_inputs.<locals>.<lambda>)")


def test_checkpoint_keeps_only_the_inputs_its_recomputation_reads():
    def f(x, y, z):
        return tnp.sum(tnp.sin(x) * 3.0) + tnp.sum(y * 2.0)    # linear in y, z unused

    ckpt = tg.checkpoint(f)
    args = (np.arange(3.0), np.ones(4), np.ones(5))
    assert _report(ckpt, *args) == ["f64[3] from the argument x"]
    policy = tg.checkpoint_policies.everything_saveable
    assert _report(tg.checkpoint(f, policy=policy), *args) == _report(f, *args)
    for g in (ckpt, tg.jit(ckpt), tg.checkpoint(f, policy=policy)):
        dx, dy, dz = tg.grad(g, (0, 1, 2))(*args)
        np.testing.assert_allclose(dx, 3.0 * np.cos(args[0]), rtol=1e-15)
        assert dy.tolist() == [2.0] * 4 and dz.tolist() == [0.0] * 5


def test_scan_residuals_that_are_slices_of_its_inputs_are_those_inputs():
    from tangentia import lax

    def layer(h, wb):
        w, b = wb
        return tnp.tanh(w @ h + b), None

    def net(ws, bs, h):
        return tnp.sum(lax.scan(layer, h, (ws, bs))[0])

    ws = np.linspace(-1.0, 1.0, 5 * 3 * 3).reshape(5, 3, 3)
    bs = np.linspace(0.0, 0.5, 5 * 3).reshape(5, 3)
    h0 = np.array([0.3, -0.2, 0.1])
    lines = _report(net, ws, bs, h0)
    assert lines[0] == "f64[5,3,3] from the argument ws"      # not a stacked copy made by the loop
    assert "f64[5,3,3] output of scan" not in lines
    assert [ln.split()[0] for ln in lines if "output of scan" in ln] == ["f64[5,3]", "f64[5,3]"]
    # the gradient is unchanged: against a Python loop
    def unrolled(ws, bs, h):
        for w, b in zip(ws, bs):
            h = tnp.tanh(w @ h + b)
        return tnp.sum(h)
    for got, want in zip(tg.grad(net, (0, 1, 2))(ws, bs, h0),
                         tg.grad(unrolled, (0, 1, 2))(ws, bs, h0)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    rev = lambda ws, bs, h: tnp.sum(lax.scan(layer, h, (ws, bs), reverse=True)[0])  # noqa: E731
    for got, want in zip(tg.grad(rev, (0, 1, 2))(ws, bs, h0),
                         tg.grad(unrolled, (0, 1, 2))(ws[::-1], bs[::-1], h0)):
        np.testing.assert_allclose(got[::-1] if got.ndim > 1 else got, want, rtol=1e-13, atol=1e-15)


def _nested_checkpoints(funs):
    """f1(checkpoint(f2)(x)) recursively: checkpoints inside checkpoints (O(log n) residuals)."""
    if len(funs) == 1:
        return funs[0]
    if len(funs) == 2:
        return lambda x: funs[0](funs[1](x))
    head = _nested_checkpoints(funs[:len(funs) // 2])
    tail = tg.checkpoint(_nested_checkpoints(funs[len(funs) // 2:]))
    return lambda x: head(tail(x))


@pytest.mark.parametrize("n", [5, 8])
def test_checkpoint_inside_checkpoint_differentiates(n):
    funs = [tnp.sin, tnp.tanh, lambda v: v * 1.5 + 0.25, tnp.cos] * 2
    nested = _nested_checkpoints(funs[:n])

    def plain(x):
        for fun in reversed(funs[:n]):
            x = fun(x)
        return x

    x = np.array([0.3, -1.1, 2.0])
    loss = lambda f: lambda x: tnp.sum(f(x) ** 2)  # noqa: E731
    want = tg.grad(loss(plain))(x)
    np.testing.assert_allclose(tg.grad(loss(nested))(x), want, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(tg.grad(loss(nested)))(x), want, rtol=1e-13)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(tg.jvp(tg.grad(loss(nested)), (x,), (v,))[1],
                               tg.jvp(tg.grad(loss(plain)), (x,), (v,))[1], rtol=1e-12)
    # the pullback is a pytree of residuals: rebuilt from its leaves it gives the same cotangents
    from tangentia.tree_util import tree_flatten, tree_unflatten
    y, pullback = tg.vjp(nested, x)
    leaves, tree = tree_flatten(pullback)
    rebuilt = tg.jit(lambda leaves, ct: tree_unflatten(tree, leaves)(ct))
    np.testing.assert_allclose(rebuilt(leaves, y)[0], tg.vjp(plain, x)[1](y)[0], rtol=1e-13)


def test_fwd_and_bwd_split_reverse_mode_into_two_reusable_functions():
    def layer(w, x):
        return tnp.tanh(x @ w)

    w1, w2 = np.full((3, 3), 0.2), np.full((3, 3), -0.4)
    x0 = np.arange(6.0).reshape(2, 3) / 5
    fwd, bwd = tg.fwd_and_bwd(layer, argnums=(0, 1))
    x1, res1 = fwd(w1, x0)
    x2, res2 = fwd(w2, x1)                      # the same compiled forward, reused
    dw2, dx1 = bwd(res2, np.ones_like(x2))
    dw1, dx0 = bwd(res1, dx1)
    want = tg.grad(lambda w1, w2, x: tnp.sum(layer(w2, layer(w1, x))), (0, 1, 2))(w1, w2, x0)
    for got, ref in zip((dw1, dw2, dx0), want):
        np.testing.assert_allclose(got, ref, rtol=1e-14)
    # one argnum: bwd returns that cotangent itself; has_aux; jitted=False
    fwd, bwd = tg.fwd_and_bwd(lambda w, x: (tnp.sum(layer(w, x)), x.shape[0]), argnums=1,
                              has_aux=True, jitted=False)
    y, res, aux = fwd(w1, x0)
    assert aux == 2
    np.testing.assert_allclose(bwd(res, 1.0), tg.grad(lambda x: tnp.sum(layer(w1, x)))(x0),
                               rtol=1e-14)
    with pytest.raises(TypeError, match="fwd_and_bwd"):
        tg.fwd_and_bwd(3, argnums=0)


def test_jit_trace_gives_the_staged_program_before_lowering():
    def softplus(x):
        return tnp.log(1.0 + tnp.exp(x))

    traced = tg.jit(tg.grad(softplus)).trace(40.0)
    assert str(traced.jaxpr) == str(tg.make_jaxpr(tg.grad(softplus))(40.0))
    assert [e.prim.name for e in traced.jaxpr.jaxpr.eqns] == ["exp", "add", "div", "mul"]
    assert traced.out_info.shape == () and traced.out_info.dtype == np.float64
    np.testing.assert_allclose(traced.lower().compile()(2.0), 1.0 / (1.0 + np.exp(-2.0)),
                               rtol=1e-15)
    # pytrees and static arguments; lower() reuses the staged program (f runs once)
    calls = []

    def scale(p, n):
        calls.append(n)
        return p["w"] * n

    traced = tg.jit(scale, static_argnums=1).trace({"w": np.ones(3)}, 4)
    assert traced.out_info.shape == (3,) and traced.in_avals[0][0]["w"].shape == (3,)
    assert traced.lower().compile()({"w": np.arange(3.0)}).tolist() == [0.0, 4.0, 8.0]
    assert calls == [4]


def test_offloading_policies_save_on_a_cpu():
    from tangentia.ad_checkpoint import checkpoint_name
    policy = tg.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=["u"], names_which_can_be_offloaded=["v"],
        offload_src="device", offload_dst="pinned_host")

    def body(x):
        u = checkpoint_name(tnp.cos(x), "u")      # kept
        v = checkpoint_name(tnp.cos(u), "v")      # offloaded: on a CPU, kept too
        w = checkpoint_name(tnp.cos(v), "w")      # recomputed
        return tnp.sum(w)

    x = np.linspace(0.0, 1.0, 4)
    np.testing.assert_allclose(tg.grad(tg.checkpoint(body, policy=policy))(x), tg.grad(body)(x),
                               rtol=1e-14)
    saved = [line.split(" from /")[0] for line in _report(tg.checkpoint(body, policy=policy), x)]
    assert saved == ["f64[4] from the argument x", "f64[4] named 'u'", "f64[4] named 'v'"]


def test_forward_mode_of_a_custom_vjp_with_a_nonlinear_bwd_raises_jax_s_error():
    @tg.custom_vjp
    def clipped(lo, hi, x):
        return x

    clipped.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                   lambda res, g: (None, None, tnp.clip(g, *res)))      # not linear in g
    with pytest.raises(TypeError) as ei:
        tg.jvp(lambda x: clipped(-0.5, 0.5, x), (2.0,), (1.0,))
    msg = str(ei.value)
    assert msg.startswith("can't apply forward-mode autodiff (jvp) to a custom_vjp function."), msg
    assert "clipped" in msg
    # a bwd rule linear in the cotangent is transposed: forward mode works (beyond JAX)
    @tg.custom_vjp
    def scaled(x):
        return 3.0 * x

    scaled.defvjp(lambda x: (3.0 * x, None), lambda _, g: (3.0 * g,))
    assert tg.jvp(scaled, (2.0,), (1.5,))[1] == 4.5


def test_checkpoint_static_argnames():
    def power(x, n, *, shift=0.0):
        for _ in range(n):                  # Python control flow on the static n
            x = tnp.sin(x) + shift
        return x

    for ck in (tg.checkpoint(power, static_argnames="n"),
               tg.checkpoint(power, static_argnames=("n", "shift")),
               tg.checkpoint(power, static_argnums=1)):
        np.testing.assert_allclose(tg.grad(ck)(0.7, 3), tg.grad(power)(0.7, 3), rtol=1e-15)
        np.testing.assert_allclose(tg.grad(lambda x: ck(x, n=2, shift=0.5))(0.7),
                                   tg.grad(lambda x: power(x, 2, shift=0.5))(0.7), rtol=1e-15)
