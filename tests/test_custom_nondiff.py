"""Traced arrays passed through custom_vjp ``nondiff_argnums``.

JAX raises for them (seed 002: "the arguments passed into a custom_vjp
function's nondiff_argnums can't be Tracers"); tangentia rewrites them into
inputs and residuals, so the old-style ``clip_gradient(lo, hi, x)`` works
under jit and vmap with traced ``lo``/``hi``: ``fwd`` and ``bwd`` receive the
same values, and their cotangent is zero.  Checked against the new-style
definition of the seed (the same numbers) and against loops.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)


def make_old():
    seen = []

    @partial(tg.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):
        return x  # identity function

    def clip_gradient_fwd(lo, hi, x):
        seen.append(("fwd", lo, hi))
        return x, None  # no residual values to save

    def clip_gradient_bwd(lo, hi, _, g):
        seen.append(("bwd", lo, hi))
        return (tnp.clip(g, lo, hi),)

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
    return clip_gradient, seen


def make_new():
    @tg.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                         lambda res, g: (None, None, tnp.clip(g, *res)))
    return clip_gradient


LO = np.array([-0.5, -1., -4.])
HI = np.array([0.5, 1., 4.])
X = np.array([1., 2., -3.])


def loss_of(clip):
    return lambda x, lo, hi: clip(lo, hi, x) * 3.


@pytest.mark.parametrize("how", ["grad", "jit_grad", "vmap_grad", "vmap_jit_grad",
                                 "grad_of_vmap", "jit_vmap_grad"])
def test_old_style_clip_gradient_with_traced_bounds_matches_new_style(how):
    old, _ = make_old()
    new = make_new()

    def run(clip):
        L = loss_of(clip)
        if how == "grad":
            return [tg.grad(L)(x, lo, hi) for x, lo, hi in zip(X, LO, HI)]
        if how == "jit_grad":
            return [tg.jit(tg.grad(L))(x, lo, hi) for x, lo, hi in zip(X, LO, HI)]
        if how == "vmap_grad":
            return tg.vmap(tg.grad(L))(X, LO, HI)
        if how == "vmap_jit_grad":
            return tg.vmap(tg.jit(tg.grad(L)))(X, LO, HI)
        if how == "jit_vmap_grad":
            return tg.jit(tg.vmap(tg.grad(L)))(X, LO, HI)
        return tg.grad(lambda xs, lo, hi: tnp.sum(tg.vmap(L)(xs, lo, hi)))(X, LO, HI)

    got, want = run(old), run(new)
    close(got, want)
    # The numbers themselves: clip(3, lo, hi) per example.
    close(got, np.clip(3., LO, HI))


def test_fwd_and_bwd_receive_the_same_traced_value():
    old, seen = make_old()
    tg.jit(tg.grad(loss_of(old)))(1., -0.25, 0.75)
    fwd = [s for s in seen if s[0] == "fwd"]
    bwd = [s for s in seen if s[0] == "bwd"]
    assert fwd and bwd
    # Traced under jit: both see tracers of the same shape as the arguments.
    assert all(isinstance(v, tg.core.Tracer) for s in fwd + bwd for v in s[1:])
    seen.clear()
    close(tg.grad(loss_of(old))(1., -0.25, 0.75), 0.75)
    (_, lo_f, hi_f), = [s for s in seen if s[0] == "fwd"]
    (_, lo_b, hi_b), = [s for s in seen if s[0] == "bwd"]
    close([lo_f, hi_f], [-0.25, 0.75])
    close([lo_b, hi_b], [-0.25, 0.75])


def test_nondiff_bounds_get_a_zero_cotangent():
    old, _ = make_old()
    L = loss_of(old)
    g = tg.grad(L, argnums=(0, 1, 2))(1., -0.5, 0.5)
    close(g, (0.5, 0., 0.))
    # lo feeds x as well: only that path contributes (2 * clip(3, lo, hi)).
    close(tg.grad(lambda lo: L(2. * lo, lo, 0.5))(1.), 1.)
    close(tg.grad(lambda lo: L(2. * lo, lo, 0.5))(0.2), 2. * 0.5)
    # Under vmap of grad with respect to all three, per example.
    gs = tg.vmap(tg.grad(L, argnums=(0, 1, 2)))(X, LO, HI)
    close(gs[0], np.clip(3., LO, HI))
    close(gs[1], np.zeros(3))
    close(gs[2], np.zeros(3))


def test_vmap_over_traced_bounds_only_evaluates_the_function():
    old, seen = make_old()
    close(tg.vmap(lambda lo: old(lo, 0.5, 1.))(-np.ones(3)), np.ones(3))
    assert not seen  # evaluation never runs the rules


def test_pytree_nondiff_argument_with_traced_leaves_and_static_leaves():
    @partial(tg.custom_vjp, nondiff_argnums=(0,))
    def scale(cfg, x):
        return cfg["k"] * x if cfg["mode"] == "mul" else x

    def fwd(cfg, x):
        return scale(cfg, x), x

    def bwd(cfg, x, g):
        assert cfg["mode"] == "mul"  # static leaves stay Python values
        return (cfg["k"] * g * 10.,)  # a marker factor: the rule ran

    scale.defvjp(fwd, bwd)
    ks = np.array([1., 2., 3.])
    per_example = [tg.grad(lambda x, k=k: scale({"k": k, "mode": "mul"}, x))(1.) for k in ks]
    close(per_example, 10. * ks)
    close(tg.vmap(tg.grad(lambda x, k: scale({"k": k, "mode": "mul"}, x)))(np.ones(3), ks),
          10. * ks)
    close(tg.jit(tg.grad(lambda x, k: scale({"k": k, "mode": "mul"}, x)))(1., 2.), 20.)
    # The nondiff k is not differentiated even when the caller differentiates it.
    close(tg.grad(lambda k: scale({"k": k, "mode": "mul"}, 2.))(3.), 0.)


def test_traced_nondiff_with_symbolic_zeros():
    @partial(tg.custom_vjp, nondiff_argnums=(1,))
    def f(x, c):
        return tnp.sin(x) * c

    def fwd(x, c):
        assert isinstance(x, tg.custom_derivatives.CustomVJPPrimal)
        assert not isinstance(c, tg.custom_derivatives.CustomVJPPrimal)
        return f(x.value, c), tnp.cos(x.value)

    def bwd(c, cos_x, g):
        return (g * cos_x * c,)

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    cs = np.array([0.5, 2., -1.])
    close(tg.vmap(tg.grad(f))(X, cs), np.cos(X) * cs)
    close(tg.jit(tg.grad(f))(0.3, 2.), np.cos(0.3) * 2.)
