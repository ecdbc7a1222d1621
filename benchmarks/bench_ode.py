"""Benchmark: reverse-mode gradient through an adaptive ODE solve (the odeint
pendulum example).

    pend(y, t, b, c) = [y[1], -b * y[1] - c * sin(y[0])]      (damped pendulum)
    loss(y0, b, c)   = sum(odeint(pend, y0, ts, b, c)[-1] ** 2),  ts = linspace(0, 10, 101)

``grad(loss, argnums=(0, 1, 2))`` at y0 = [pi - 0.1, 0], b = 0.25, c = 5.0,
default tolerances (rtol = atol = 1.4e-8), float64:

* tangentia: ``jit(grad(loss))`` with ``tangentia.experimental.ode.odeint``
  (Dormand-Prince 5(4) + adjoint custom_vjp, on ``lax.scan``/``while_loop``);
* JAX: ``jax.jit(jax.grad(loss))`` with ``jax.experimental.ode.odeint``
  ("n/a" if JAX is not importable).

The two gradients must agree to 1e-4 relative (both carry the error of the
integration tolerances; the methods' error estimators differ slightly) and
both are checked against central finite differences of SciPy's solution when
SciPy is available.  Times are medians over several timed runs after warm-up;
the ratio is tangentia time / JAX time (ratio < 1 means tangentia is faster).
This only records the ratio: tangentia's jit runs its program op by op in
NumPy, so per-step overhead dominates here (a later issue compiles it).

Run standalone: ``python benchmarks/bench_ode.py [--quick]``.
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
from tangentia.experimental.ode import odeint  # noqa: E402

Y0 = np.array([np.pi - 0.1, 0.0])
TS = np.linspace(0.0, 10.0, 101)
B, C = 0.25, 5.0


def make_loss(np_, odeint_):
    def pend(y, t, b, c):
        return np_.stack([y[1], -b * y[1] - c * np_.sin(y[0])])

    def loss(y0, b, c):
        return np_.sum(odeint_(pend, y0, TS, b, c)[-1] ** 2)

    return loss


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
        if dt >= min_time or n >= 1 << 12:
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


def flat(g):
    y0, b, c = g
    return np.concatenate([np.asarray(y0, np.float64).ravel(), [float(b), float(c)]])


def finite_differences():
    try:
        from scipy.integrate import odeint as sp_odeint
    except Exception:  # noqa: BLE001 - SciPy is optional here
        return None

    def loss(y0, b, c):
        ys = sp_odeint(lambda y, t: [y[1], -b * y[1] - c * np.sin(y[0])], y0, TS,
                       rtol=1e-12, atol=1e-12)
        return float(np.sum(ys[-1] ** 2))

    eps = 1e-5
    out = [(loss(Y0 + eps * e, B, C) - loss(Y0 - eps * e, B, C)) / (2 * eps) for e in np.eye(2)]
    out.append((loss(Y0, B + eps, C) - loss(Y0, B - eps, C)) / (2 * eps))
    out.append((loss(Y0, B, C + eps) - loss(Y0, B, C - eps)) / (2 * eps))
    return np.array(out)


def close(a, b):
    return np.allclose(a, b, rtol=1e-4, atol=1e-4 * np.max(np.abs(b)))


def main(argv):
    quick = "--quick" in argv
    repeats, min_time = (3, 0.2) if quick else (7, 1.0)

    # -- tangentia ---------------------------------------------------------
    tg_grad = tg.jit(tg.grad(make_loss(tnp, odeint), argnums=(0, 1, 2)))
    t0 = time.perf_counter()
    g_tg = flat(tg_grad(Y0, B, C))
    first_tg = time.perf_counter() - t0
    t_tg = timeit(lambda: tg_grad(Y0, B, C), repeats, min_time)

    # -- JAX ---------------------------------------------------------------
    g_jax, t_jax, first_jax, jax_note = None, None, None, ""
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.experimental.ode import odeint as jax_odeint
    except Exception as e:  # noqa: BLE001 - JAX is an optional peer
        jax_note = f"(JAX not importable: {type(e).__name__}: {e})"
    else:
        jax_grad = jax.jit(jax.grad(make_loss(jnp, jax_odeint), argnums=(0, 1, 2)))

        def run_jax():
            out = jax_grad(Y0, B, C)
            jax.block_until_ready(out)
            return out

        t0 = time.perf_counter()
        g_jax = flat(run_jax())
        first_jax = time.perf_counter() - t0
        t_jax = timeit(run_jax, repeats, min_time)

    # -- agreement -----------------------------------------------------------
    fd = finite_differences()
    ok = True
    notes = []
    if fd is not None:
        ok &= close(g_tg, fd)
        notes.append(f"max|tangentia - fd| = {np.max(np.abs(g_tg - fd)):.3g}")
    if g_jax is not None:
        ok &= close(g_tg, g_jax)
        notes.append(f"max|tangentia - jax| = {np.max(np.abs(g_tg - g_jax)):.3g}")

    print("grad of sum(odeint(pend, y0, linspace(0, 10, 101), b, c)[-1]**2) w.r.t. (y0, b, c), "
          "rtol = atol = 1.4e-8, float64")
    print(f"  {'implementation':40s} {'time/call':>13s}   {'first call':>10s}   ratio")
    print(f"  {'tangentia jit(grad(odeint))':40s} {fmt(t_tg):>13s}   {first_tg * 1e3:8.1f} ms")
    if t_jax is None:
        print(f"  {'jax jit(grad(odeint))':40s} {'n/a':>13s}   {'n/a':>10s}   n/a {jax_note}")
    else:
        print(f"  {'jax jit(grad(odeint))':40s} {fmt(t_jax):>13s}   {first_jax * 1e3:8.1f} ms"
              f"   tangentia/jax = {t_tg / t_jax:.3f}")
    print("  (ratio < 1 means tangentia is faster)")
    print(f"  gradient (tangentia): {np.array2string(g_tg, precision=8)}")
    if g_jax is not None:
        print(f"  gradient (jax):       {np.array2string(g_jax, precision=8)}")
    if fd is not None:
        print(f"  finite differences:   {np.array2string(fd, precision=8)}")
    print("gradients agree: " + ", ".join(notes) + ("  OK" if ok else "  MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
