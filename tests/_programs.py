"""Small programs that several test modules compile (shared, so each is written once)."""
from __future__ import annotations

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax


def rk_loop(th):
    """A while loop of Runge-Kutta stages on a 2-element state (pendulum-like)."""
    def f(y):
        return tnp.stack([y[1], -th[0] * tnp.sin(y[0]) - th[1] * y[1]])

    def body(c):
        i, y = c
        h = 0.05
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        return i + 1, y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return tnp.sum(lax.while_loop(lambda c: c[0] < 20, body, (0, tnp.array([1.0, 0.0])))[1] ** 2)


def custom_rules_in_scan():
    """``(f, softplus)``: ``f(w, xs)`` is a scan whose body calls ``softplus``, a
    custom_jvp function, and a custom_vjp function that clips its cotangent."""
    @tg.custom_jvp
    def softplus(x):
        return tnp.log1p(tnp.exp(x))
    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] / (1 + tnp.exp(-p[0]))))

    @tg.custom_vjp
    def clip_grad(x):
        return x
    clip_grad.defvjp(lambda x: (x, None), lambda _, g: (tnp.clip(g, -0.5, 0.5),))

    def f(w, xs):
        def body(c, x):
            return c + softplus(w * x) + clip_grad(c * x), c
        return lax.scan(body, 0.0, xs)[0]
    return f, softplus
