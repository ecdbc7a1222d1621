"""A short tour of tangentia: ``python -m tangentia``.

Every derivative printed here is checked against central finite differences.
"""
import numpy as np

import tangentia as tg
import tangentia.numpy as tnp


def _fd(f, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _show(label, value, reference):
    ok = np.allclose(value, reference, rtol=1e-6, atol=1e-8)
    print(f"  {label:<44} {np.array2string(np.asarray(value), precision=6):<36} "
          f"{'ok' if ok else 'MISMATCH'} vs finite differences")
    if not ok:
        raise SystemExit(f"demo check failed: {label}")


def main():
    print("tangentia: composable transformations with custom rules that survive them\n")

    def loss(w):
        return tnp.sum(tnp.tanh(w * np.arange(1.0, 4.0)) ** 2)

    w = np.array([0.3, -0.2, 0.5])
    print("f(w) = sum(tanh(w * [1, 2, 3])**2), w =", w)
    g_fd = _fd(lambda v: float(loss(v)), w)
    _show("grad(f)(w)", tg.grad(loss)(w), g_fd)
    _show("jit(grad(f))(w)", tg.jit(tg.grad(loss))(w), g_fd)
    _, jv = tg.jvp(loss, (w,), (np.ones(3),))
    _show("jvp(f, (w,), (ones,))", jv, g_fd.sum())
    _, pullback = tg.vjp(loss, w)
    _show("vjp(f, w)[1](1.0)[0]", pullback(1.0)[0], g_fd)
    _show("jacfwd(f)(w)", tg.jacfwd(loss)(w), g_fd)
    _show("jacrev(f)(w)", tg.jacrev(loss)(w), g_fd)
    hess_fd = np.stack([_fd(lambda v: np.asarray(tg.grad(loss)(v))[i], w) for i in range(3)])
    _show("hessian(f)(w) (row sums)", tg.hessian(loss)(w).sum(1), hess_fd.sum(1))
    ws = np.stack([w, 2 * w])
    _show("vmap(grad(f))(two points)[1]", tg.vmap(tg.grad(loss))(ws)[1],
          _fd(lambda v: float(loss(v)), 2 * w))
    _show("4th derivative of sin at 1.0",
          tg.grad(tg.grad(tg.grad(tg.grad(tnp.sin))))(1.0), np.sin(1.0))

    print("\nA custom rule that survives vmap and jit (a deliberately wrong bwd that returns 3*g):")

    @tg.custom_vjp
    def f(x):
        return 2.0 * x

    f.defvjp(lambda x: (f(x), None), lambda _, g: (3.0 * g,))
    print("  grad(f)(1.)                         ", tg.grad(f)(1.0))
    print("  vmap(grad(f))(ones(4))              ", tg.vmap(tg.grad(f))(np.ones(4)))
    print("  grad(lambda x: vmap(f)(x).sum())    ", tg.grad(lambda x: tg.vmap(f)(x).sum())(np.ones(4)))
    print("  jit(grad(jit(f)))(1.)               ", tg.jit(tg.grad(tg.jit(f)))(1.0))

    print("\nA numerically stable rule: log(1 + exp(x)) with a custom_jvp")

    @tg.custom_jvp
    def log1pexp(x):
        return tnp.log1p(tnp.exp(x))

    @log1pexp.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + tnp.exp(x)))

    _show("grad(log1pexp)(3.)", tg.grad(log1pexp)(3.0), _fd(lambda v: float(np.log1p(np.exp(v))), 3.0))
    naive = tg.grad(lambda x: tnp.log1p(tnp.exp(x)))
    with np.errstate(over="ignore", invalid="ignore"):  # exp(1000.) overflows: inf * 0
        naive_at_1000 = naive(1000.0)
        custom_at_1000 = tg.grad(log1pexp)(1000.0)
    print("  grad(log1pexp)(1000.)               ", custom_at_1000, "(the custom rule)")
    print("  naive grad of log1p(exp(x)) at 1000.", naive_at_1000, "(automatic differentiation "
          "of the formula overflows)")

    print("\nThe staged program of jit(grad(f)):")
    print(tg.make_jaxpr(tg.grad(loss))(w))


if __name__ == "__main__":
    main()
