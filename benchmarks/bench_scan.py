"""Benchmark: reverse-mode gradient of a 1000-step ``scan`` over a small state.

    loss(W, c0) = sum(c_T ** 2) + 0.1 * sum(ys)
    c_{t+1} = tanh(W @ c_t + x_t),  y_t = c_{t+1}[0]      (state of 8 floats, W 8x8)

``grad(loss, argnums=(0, 1))``:

* tangentia ``jit(grad(loss))`` with ``lax.scan``, per jit backend;
* JAX ``jax.jit(jax.grad(loss))`` with ``jax.lax.scan`` (float64);
* context: tangentia's eager ``grad`` of the same loop unrolled in Python (no
  jit, no scan), i.e. 1000 steps of op-by-op differentiation.

All gradients must agree (rtol 1e-10).  Ratio = tangentia time / JAX time.

Standalone: ``python benchmarks/bench_scan.py [--quick]`` (= ``run.py --only scan``).
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only scan`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only", "scan",
                              "--no-json", *sys.argv[1:]])

import numpy as np  # noqa: E402

from _harness import (Impl, backend_note, jit_targets, peer, run_impls,  # noqa: E402
                      tg_impls, tg_jit)

TARGETS = {"jax": 1.0}  # issue 9: at most JAX jit
NAME = "scan"
TITLE = "jit(grad) of a 1000-step scan, state f64[8], c = tanh(W @ c + x)"
T = 1000   # scan length
N = 8      # state size


def data():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((N, N)) / np.sqrt(N)
    c0 = rng.standard_normal(N)
    xs = rng.standard_normal((T, N))
    return W, c0, xs


def make_scan_loss(np_, scan):
    def loss(W, c0, xs):
        def body(c, x):
            c = np_.tanh(W @ c + x)
            return c, c[0]
        cT, ys = scan(body, c0, xs)
        return np_.sum(cT ** 2) + 0.1 * np_.sum(ys)
    return loss


def unrolled_loss(W, c0, xs):
    import tangentia.numpy as tnp
    c = c0
    total_y = 0.0
    for t in range(xs.shape[0]):
        c = tnp.tanh(W @ c + xs[t])
        total_y = total_y + c[0]
    return tnp.sum(c ** 2) + 0.1 * total_y


def impls():
    W, c0, xs = data()

    def tg_scan(backend):
        import tangentia as tg
        import tangentia.numpy as tnp
        from tangentia import lax
        g = tg_jit(tg.grad(make_scan_loss(tnp, lax.scan), argnums=(0, 1)), backend)
        return lambda: g(W, c0, xs)

    def jax_scan():
        jax, _ = peer("jax")
        import jax.numpy as jnp
        g = jax.jit(jax.grad(make_scan_loss(jnp, jax.lax.scan), argnums=(0, 1)))
        Wj, cj, xj = jnp.asarray(W), jnp.asarray(c0), jnp.asarray(xs)
        return lambda: jax.block_until_ready(g(Wj, cj, xj))

    def tg_unrolled():
        import tangentia as tg
        g = tg.grad(unrolled_loss, argnums=(0, 1))
        return lambda: g(W, c0, xs)

    return tg_impls("tangentia", "tangentia[{backend}]: tg.jit(tg.grad(scan))", tg_scan,
                    ratio_to=["jax", "tangentia-unrolled"]) + [
        Impl("jax", "jax: jax.jit(jax.grad(scan))", jax_scan, requires="jax"),
        Impl("tangentia-unrolled", "context: tangentia eager grad, Python-unrolled loop",
             tg_unrolled, role="context", ratio_to=["jax"]),
    ]


def run(cfg, log=print):
    entries = run_impls(impls(), cfg, rtol=1e-10, atol=1e-12, targets=jit_targets(TARGETS),
                        log=log)
    return {"title": TITLE, "entries": entries, "notes": [backend_note()]}
