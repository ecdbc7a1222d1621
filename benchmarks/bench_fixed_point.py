"""Benchmark: reverse-mode peak memory of ``tangentia.experimental.fixed_point``
at 10 and at 1000 iterations.

    x* = fixed_point(f, a, 0),   f(a, x) = 0.5 x + 0.5 a cos(x),   a, x in f64[N]
    loss(a) = sum(x*),           measured: grad(loss)(a)

``tol=-1`` disables the convergence test, so the forward iteration and the
adjoint iteration of the backward pass each run exactly ``max_iter``
applications: 10 or 1000 (``f`` is a contraction, rate <= 0.5, so at 1000
iterations the result is converged to machine precision).  Reverse mode is a
custom_vjp whose residuals are only ``(a, x*)`` and whose backward pass solves
the adjoint fixed-point equation by iteration too, so the peak memory of
``grad`` must not depend on the iteration count (saving every iterate would
cost ``max_iter * N * 8`` bytes: 800 MB at 1000 iterations for N = 100000).

Peak memory is measured with ``tracemalloc`` (NumPy registers its array
allocations with it) around one call of ``grad(loss)`` after a warm-up call,
eager and under ``jit``.  The script exits non-zero if the two peaks differ by
more than 5% + 64 KiB (noise), or if the gradient at 1000 iterations
disagrees with the implicit-function formula ``dx*/da = f_a / (1 - f_x)``.

Run standalone: ``python benchmarks/bench_fixed_point.py [--quick]``.
"""
from __future__ import annotations

import gc
import os
import sys
import time
import tracemalloc

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.experimental import fixed_point  # noqa: E402

def f(a, x):
    return 0.5 * x + 0.5 * a * tnp.cos(x)


def make_grad(n, max_iter, use_jit):
    def loss(a):
        return tnp.sum(fixed_point(f, a, tnp.zeros(n), tol=-1.0, max_iter=max_iter))
    g = tg.grad(loss)
    return tg.jit(g) if use_jit else g


def peak_bytes(fn, a):
    fn(a)  # warm-up: tracing, compilation, caches
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    out = fn(a)
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak, dt, out


def reference_grad(a, x):
    """Implicit-function gradient at the iterate x (elementwise system):
    x = f(a, x)  =>  dx/da = f_a / (1 - f_x)."""
    f_x = 0.5 - 0.5 * a * np.sin(x)
    f_a = 0.5 * np.cos(x)
    return f_a / (1.0 - f_x)


def main(argv):
    quick = "--quick" in argv
    n = 20_000 if quick else 100_000
    a = np.linspace(0.1, 1.0, n)
    ok = True
    print(f"grad of sum(fixed_point(f, a, 0)) with f(a, x) = 0.5 x + 0.5 a cos(x), "
          f"a in f64[{n}] ({n * 8 / 1e6:.2f} MB per array), exactly max_iter iterations")
    print(f"  {'mode':6s} {'iterations':>10s} {'peak memory':>14s} {'(arrays)':>9s} "
          f"{'time':>10s}")
    for use_jit in (False, True):
        peaks = {}
        for it in (10, 1000):
            peak, dt, g = peak_bytes(make_grad(n, it, use_jit), a)
            peaks[it] = peak
            print(f"  {'jit' if use_jit else 'eager':6s} {it:10d} {peak / 1e6:11.2f} MB "
                  f"{peak / (8 * n):9.1f} {dt * 1e3:8.1f} ms")
            if it == 1000:
                x = fixed_point(f, a, np.zeros(n), tol=-1.0, max_iter=it)
                want = reference_grad(a, np.asarray(x))
                rel = float(np.max(np.abs(np.asarray(g) - want)) / np.max(np.abs(want)))
                ok &= rel < 1e-10
                print(f"         gradient vs implicit-function formula: max rel diff {rel:.3g}")
        same = abs(peaks[1000] - peaks[10]) <= 0.05 * peaks[10] + 65536
        ok &= same
        print(f"  {'jit' if use_jit else 'eager'}: peak(1000) - peak(10) = "
              f"{(peaks[1000] - peaks[10]) / 1e3:+.1f} KB  "
              + ("equal within noise  OK" if same else "GROWS with iterations  FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
