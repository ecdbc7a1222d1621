"""Small programs that several test modules compile (shared, so each is written once), and
``loop_body``, which reads a loop out of the source the numba backend generates for them."""
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


def loops(x0, xs):
    """while, scan (forward and reversed, pytree outputs) and fori loops with small and
    large carries."""
    def wbody(c):
        i, v, big = c
        return i + 1, v * 0.5 + tnp.sum(big[:2]), big * 1.01 + v[0]
    _, v, big = lax.while_loop(lambda c: c[0] < 7, wbody, (0, x0, xs))

    def sbody(c, x):
        return c + x * v[1], (c * x, x > 0.5)
    c, (ys, flags) = lax.scan(sbody, 0.0, xs)
    rc, rys = lax.scan(lambda c, x: (c - x, c), 1.0, xs, reverse=True)
    f = lax.fori_loop(0, 5, lambda i, a: a + i * xs[i], 0.0)
    return v, big, c, ys, flags, rc, rys, f


def branches(i, x):
    """switch over three branches and a cond on the data."""
    return lax.switch(i, [lambda x: x + 1, lambda x: x * 2, lambda x: -x], x), \
        lax.cond(x[0] > 0, lambda x: tnp.sin(x), lambda x: tnp.cos(x), x)


def nested(x):
    """A scan whose body holds a while loop, a cond and nested fori loops."""
    def outer(c, xi):
        inner = lax.while_loop(lambda d: d[1] < 3, lambda d: (d[0] * 1.5 + xi, d[1] + 1),
                               (c, 0))[0]
        y = lax.cond(xi > 0.5, lambda v: v * 2.0, lambda v: v - 1.0, inner)
        z = lax.fori_loop(0, 3, lambda j, a: a + lax.fori_loop(0, j, lambda k, b: b + k, 0.0), 0.0)
        return y * 0.1, y + z
    return lax.scan(outer, 0.0, x)


def scan_tanh_loss(xs):
    """``loss(W, c0)``: a tanh recurrence over the rows of ``xs``, summed."""
    def loss(W, c0):
        def body(c, x):
            c = tnp.tanh(W @ c + x)
            return c, c[0]
        cT, ys = lax.scan(body, c0, xs)
        return tnp.sum(cT ** 2) + 0.1 * tnp.sum(ys)
    return loss


def loop_body(src: str, header: str) -> str:
    """The lines of the loop (or block) opened by the first line of ``src`` containing
    ``header`` (e.g. ``"while True:"``)."""
    lines = src.splitlines()
    start = next(k for k, line in enumerate(lines) if header in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return "\n".join(body)
