#!/usr/bin/env python
"""Benchmark: reverse mode of ``solve`` with and without factorization reuse.

    python benchmarks/bench_linalg.py            # n = 500
    python benchmarks/bench_linalg.py --n 300 --repeats 20
    python benchmarks/bench_linalg.py --threads 1   # pin BLAS to one thread

The gradient of ``sum(solve(A, b))`` with respect to ``A`` and ``b`` for an
``n x n`` matrix ``A``, both versions under ``jit``:

* tangentia: ``tnp.linalg.solve``, whose rule factors ``A`` once (LU) in the
  primal pass and solves the transposed system of the backward pass with the
  same factors (``lu_solve`` with ``trans=1``);
* baseline: a ``tg.custom_vjp`` whose forward pass and backward pass each call
  a plain dense solve (``numpy.linalg.solve``), so ``A`` is factored twice.

Both gradients are checked against each other before timing.  The ideal
speedup is a little under 2x: the baseline does two O(n^3) factorizations, the
reuse version one factorization plus O(n^2) triangular solves.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# --threads must take effect before NumPy loads its BLAS.
for _i, _arg in enumerate(sys.argv):
    if _arg.startswith("--threads"):
        _n = _arg.split("=", 1)[1] if "=" in _arg else sys.argv[_i + 1]
        for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[_var] = _n

import numpy as np  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.primitives import linalg as P  # noqa: E402


def _dense_solve(a, b):
    """A plain dense solve: a primitive-free wrapper over numpy.linalg.solve
    (LAPACK gesv: factor + solve), without any derivative rule of its own."""
    return P.solve_p.bind(a, b)


@tg.custom_vjp
def solve_refactor(a, b):
    return _dense_solve(a, b)


def _fwd(a, b):
    x = _dense_solve(a, b)
    return x, (a, x)


def _bwd(res, g):
    a, x = res
    gb = _dense_solve(tnp.swapaxes(a, -1, -2), g)     # factors A (transposed) again
    return -tnp.matmul(gb, tnp.swapaxes(x, -1, -2)), gb


solve_refactor.defvjp(_fwd, _bwd)


def loss_reuse(a, b):
    return tnp.sum(tnp.linalg.solve(a, b))


def loss_refactor(a, b):
    return tnp.sum(solve_refactor(a, b))


def measure_pair(f1, f2, args, repeats):
    """Alternate the two functions call by call, so that both see the same
    machine load; return the lists of times."""
    f1(*args), f2(*args)  # compile
    t1, t2 = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f1(*args)
        t1.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        f2(*args)
        t2.append(time.perf_counter() - t0)
    return t1, t2


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None,
                    help="BLAS threads (default: the library's own choice)")
    opts = ap.parse_args(argv)
    n = opts.n
    rng = np.random.default_rng(opts.seed)
    a = rng.standard_normal((n, n)) + np.sqrt(n) * np.eye(n)
    b = rng.standard_normal((n, 1))

    reuse = tg.jit(tg.grad(loss_reuse, argnums=(0, 1)))
    refactor = tg.jit(tg.grad(loss_refactor, argnums=(0, 1)))

    ga, gb = reuse(a, b)
    ra, rb = refactor(a, b)
    assert np.allclose(ga, ra, rtol=1e-8, atol=1e-10) and np.allclose(gb, rb, rtol=1e-8,
                                                                       atol=1e-10), \
        "the two gradients disagree"

    t_reuse, t_refactor = measure_pair(reuse, refactor, (a, b), opts.repeats)
    med_reuse, med_refactor = statistics.median(t_reuse), statistics.median(t_refactor)
    ratios = [r / u for u, r in zip(t_reuse, t_refactor)]

    print(f"grad of sum(solve(A, b)), A: {n}x{n} float64, jit(grad), {opts.repeats} alternating "
          "runs each")
    print(f"  factorization reuse (tnp.linalg.solve) : median {med_reuse * 1e3:8.2f} ms, "
          f"min {min(t_reuse) * 1e3:8.2f} ms")
    print(f"  refactorizing custom_vjp (solve twice) : median {med_refactor * 1e3:8.2f} ms, "
          f"min {min(t_refactor) * 1e3:8.2f} ms")
    print(f"  speedup: {med_refactor / med_reuse:.2f}x (medians), "
          f"{min(t_refactor) / min(t_reuse):.2f}x (minima), "
          f"{statistics.median(ratios):.2f}x (median of paired ratios)")
    t_reuse, t_refactor = med_reuse, med_refactor
    return t_refactor / t_reuse


if __name__ == "__main__":
    main()
