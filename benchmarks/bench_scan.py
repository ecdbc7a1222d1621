"""Benchmark: reverse-mode gradient of a 1000-step ``scan`` over a small state.

    loss(W, c0) = sum(c_T ** 2) + 0.1 * sum(ys)
    c_{t+1} = tanh(W @ c_t + x_t),  y_t = c_{t+1}[0]      (state of 8 floats, W 8x8)

Three implementations of ``grad(loss, argnums=(0, 1))``:

* tangentia: ``jit(grad(loss))`` with ``lax.scan``;
* JAX (float64): ``jax.jit(jax.grad(loss))`` with ``jax.lax.scan`` ("n/a" if
  JAX is not importable);
* tangentia eager: ``grad`` of the same loop unrolled in Python (no jit, no
  scan), i.e. 1000 steps of op-by-op differentiation.

The three gradients must agree numerically (the script exits non-zero
otherwise).  Times are the median of several timed runs after warm-up; a ratio
is ``tangentia time / other time``, so a ratio < 1 means tangentia is faster.

Run standalone: ``python benchmarks/bench_scan.py [--quick]``.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402

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
    c = c0
    total_y = 0.0
    for t in range(xs.shape[0]):
        c = tnp.tanh(W @ c + xs[t])
        total_y = total_y + c[0]
    return tnp.sum(c ** 2) + 0.1 * total_y


def timeit(fn, repeats, min_time):
    """Median seconds per call: ``repeats`` runs of enough calls to last ``min_time``."""
    fn()
    fn()  # warm-up (tracing / compilation happens here)
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or n >= 1 << 16:
            break
        n *= 2
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n)
    return statistics.median(runs)


def fmt(t):
    return "n/a" if t is None else f"{t * 1e3:10.3f} ms"


def main(argv):
    quick = "--quick" in argv
    repeats, min_time = (3, 0.05) if quick else (7, 0.2)
    W, c0, xs = data()

    # -- tangentia, jit(grad(scan)) ---------------------------------------
    tg_loss = make_scan_loss(tnp, lax.scan)
    tg_grad = tg.jit(tg.grad(tg_loss, argnums=(0, 1)))
    t0 = time.perf_counter()
    g_tg = tg_grad(W, c0, xs)
    first_tg = time.perf_counter() - t0
    t_tg = timeit(lambda: tg_grad(W, c0, xs), repeats, min_time)

    # -- tangentia, eager grad of the unrolled Python loop ----------------
    un_grad = tg.grad(unrolled_loss, argnums=(0, 1))
    g_un = un_grad(W, c0, xs)
    t_un = timeit(lambda: un_grad(W, c0, xs), max(1, repeats // 2), min_time)

    # -- JAX ---------------------------------------------------------------
    g_jax, t_jax, first_jax, jax_note = None, None, None, ""
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
    except Exception as e:  # noqa: BLE001 - JAX is an optional peer
        jax_note = f"(JAX not importable: {type(e).__name__}: {e})"
    else:
        jax_loss = make_scan_loss(jnp, jax.lax.scan)
        jax_grad = jax.jit(jax.grad(jax_loss, argnums=(0, 1)))

        def run_jax():
            out = jax_grad(W, c0, xs)
            jax.block_until_ready(out)
            return out

        t0 = time.perf_counter()
        g_jax = [np.asarray(g) for g in run_jax()]
        first_jax = time.perf_counter() - t0
        t_jax = timeit(run_jax, repeats, min_time)

    # -- agreement -----------------------------------------------------------
    def maxdiff(a, b):
        return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b))

    ok = True
    d_un = maxdiff(g_tg, g_un)
    ok &= all(np.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(g_tg, g_un))
    d_jax = None
    if g_jax is not None:
        d_jax = maxdiff(g_tg, g_jax)
        ok &= all(np.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(g_tg, g_jax))

    print(f"grad of a {T}-step scan, state {N} floats, body c = tanh(W @ c + x), float64")
    print(f"  {'implementation':44s} {'time/call':>13s}   {'first call':>10s}   ratio")
    print(f"  {'tangentia jit(grad(scan))':44s} {fmt(t_tg):>13s}   {first_tg * 1e3:8.1f} ms")
    if t_jax is None:
        print(f"  {'jax jit(grad(scan))':44s} {'n/a':>13s}   {'n/a':>10s}   n/a {jax_note}")
    else:
        print(f"  {'jax jit(grad(scan))':44s} {fmt(t_jax):>13s}   {first_jax * 1e3:8.1f} ms"
              f"   tangentia/jax = {t_tg / t_jax:.3f}")
    print(f"  {'tangentia eager grad, Python-unrolled loop':44s} {fmt(t_un):>13s}   {'':>10s}"
          f"   tangentia(scan)/unrolled = {t_tg / t_un:.3f}")
    print("  (ratio < 1 means tangentia's jit(grad(scan)) is faster)")
    print(f"gradients agree: max|scan - unrolled| = {d_un:.3g}"
          + ("" if d_jax is None else f", max|scan - jax| = {d_jax:.3g}")
          + ("  OK" if ok else "  MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
