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
