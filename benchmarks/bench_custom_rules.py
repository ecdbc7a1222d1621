"""Overhead of a custom-rule call in eager grad, relative to a plain primitive.

Target (issue: custom_jvp and custom_vjp): a custom_jvp or custom_vjp call costs
at most 3x a plain primitive per call under eager ``grad``.  The workload is a
chain of 100 ``sin`` applications on a length-8 vector: plain ``tnp.sin``, a
``custom_jvp`` sin and a ``custom_vjp`` sin.  Peers (JAX without jit, PyTorch
autograd.Function) are measured the same way when installed.

    python benchmarks/bench_custom_rules.py
"""
import time

import numpy as np

import tangentia as tg
import tangentia.numpy as tnp

N_CALLS = 100


def _timeit(f, *args, repeat=5, min_time=0.3):
    f(*args)
    best = []
    for _ in range(repeat):
        n, t0 = 0, time.perf_counter()
        while True:
            f(*args)
            n += 1
            dt = time.perf_counter() - t0
            if dt > min_time:
                break
        best.append(dt / n)
    return float(np.median(best))


def chain(f):
    def g(x):
        for _ in range(N_CALLS):
            x = f(x)
        return tnp.sum(x)
    return g


@tg.custom_jvp
def sin_jvp(x):
    return tnp.sin(x)


sin_jvp.defjvp(lambda p, t: (sin_jvp(p[0]), tnp.cos(p[0]) * t[0]))


@tg.custom_vjp
def sin_vjp(x):
    return tnp.sin(x)


sin_vjp.defvjp(lambda x: (tnp.sin(x), tnp.cos(x)), lambda c, g: (c * g,))


def tangentia_times(x):
    out = {}
    ref = None
    for name, f in [("plain", tnp.sin), ("custom_jvp", sin_jvp), ("custom_vjp", sin_vjp)]:
        g = tg.grad(chain(f))
        val = g(x)
        ref = val if ref is None else ref
        np.testing.assert_allclose(val, ref, rtol=1e-12)
        out[name] = _timeit(g, x) / N_CALLS
    return out


def jax_times(x):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    @jax.custom_jvp
    def jsin(x):
        return jnp.sin(x)

    jsin.defjvp(lambda p, t: (jsin(p[0]), jnp.cos(p[0]) * t[0]))

    def jchain(f):
        def g(x):
            for _ in range(N_CALLS):
                x = f(x)
            return jnp.sum(x)
        return g

    xj = jnp.asarray(x)
    out = {}
    for name, f in [("plain", jnp.sin), ("custom_jvp", jsin)]:
        g = jax.grad(jchain(f))
        out[name] = _timeit(lambda v: g(v).block_until_ready(), xj) / N_CALLS
    return out


def main():
    x = np.linspace(0.1, 0.8, 8)
    t = tangentia_times(x)
    print("eager grad, cost per call (chain of 100 sin on a length-8 vector)")
    print(f"{'':12s}{'tangentia':>14s}{'ratio to plain':>16s}")
    for k, v in t.items():
        print(f"{k:12s}{v * 1e6:12.1f}us{v / t['plain']:14.2f}x")
    j = jax_times(x)
    if j is None:
        print("jax: n/a (not installed)")
    else:
        for k, v in j.items():
            print(f"jax {k:8s}{v * 1e6:12.1f}us  (tangentia/jax = {t[k] / v:.2f})")
    worst = max(t["custom_jvp"], t["custom_vjp"]) / t["plain"]
    print(f"custom-rule overhead: {worst:.2f}x a plain primitive (target <= 3x): "
          f"{'met' if worst <= 3 else 'MISSED'}")
    return t, j


if __name__ == "__main__":
    main()
