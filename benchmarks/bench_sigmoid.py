#!/usr/bin/env python
"""Benchmark: a work-sharing derivative rule for the sigmoid (seed 004).

    python benchmarks/bench_sigmoid.py [--n 1000000] [--repeats 21]

Times ``jit(grad(lambda x: sum(sigmoid(x))))`` on float64[n] (n = 10^6) for

* ``tangentia.nn.sigmoid``: a custom_jvp rule computing ``e = exp(-|x|)``
  once and reusing it for the derivative ``e / (1 + e)^2`` (the value,
  ``1/(1+e)`` or ``e/(1+e)``, is dead under grad and eliminated);
* the plain composition ``1 / (1 + exp(-x))`` differentiated by tangentia
  (neg, exp, add, div forward; four more array operations backward);
* ``jax.nn.sigmoid`` (x64) for reference, if JAX is importable.

Prints the median time per call of each, and the speedup of the rule over
the plain composition (target: >= 1.3x).  The results are checked to agree
before timing.  Standalone: not part of ``benchmarks/run.py``.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import tangentia as tg  # noqa: E402
import tangentia.nn as nn  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402

TARGET = 1.3


def plain_loss(x):
    return tnp.sum(1.0 / (1.0 + tnp.exp(-x)))


def rule_loss(x):
    return tnp.sum(nn.sigmoid(x))


def measure(fns, x, repeats):
    """(median, min) wall time of each ``fn(x)`` over ``repeats`` rounds.

    The functions are interleaved round by round, so that a change of machine
    load during the run affects all of them alike.
    """
    for fn in fns:
        fn(x)  # warm-up (tracing and compilation)
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, ts in zip(fns, times):
            gc.collect()
            t0 = time.perf_counter()
            fn(x)
            ts.append(time.perf_counter() - t0)
    return [(statistics.median(ts), min(ts)) for ts in times]


def count_ops(fn, x):
    prog = tg.make_jaxpr(fn)(x)
    return len(prog.eqns) if hasattr(prog, "eqns") else len(str(prog).splitlines()) - 2


def jax_grad_fn():
    try:
        import jax
    except Exception:  # noqa: BLE001 - optional peer
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    g = jax.jit(jax.grad(lambda x: jnp.sum(jax.nn.sigmoid(x))))
    return lambda x: g(x).block_until_ready()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10 ** 6, help="number of elements (default 10^6)")
    ap.add_argument("--repeats", type=int, default=21, help="timed calls per variant")
    args = ap.parse_args(argv)

    x = np.random.default_rng(0).standard_normal(args.n) * 3.0
    rule = tg.jit(tg.grad(rule_loss))
    plain = tg.jit(tg.grad(plain_loss))

    g_rule, g_plain = rule(x), plain(x)
    if not np.allclose(g_rule, g_plain, rtol=1e-12, atol=1e-15):
        raise SystemExit("bench_sigmoid: the two gradients disagree; not timing")

    print(f"grad of sum(sigmoid(x)) under jit, x: float64[{args.n}], median of "
          f"{args.repeats} calls")
    print(f"  program size (equations): work-sharing rule {count_ops(tg.grad(rule_loss), x)}, "
          f"plain composition {count_ops(tg.grad(plain_loss), x)}")
    (t_rule, m_rule), (t_plain, m_plain) = measure([rule, plain], x, args.repeats)
    print(f"  tangentia, work-sharing rule (nn.sigmoid) : {t_rule * 1e3:8.2f} ms "
          f"(min {m_rule * 1e3:.2f})")
    print(f"  tangentia, plain 1/(1+exp(-x))            : {t_plain * 1e3:8.2f} ms "
          f"(min {m_plain * 1e3:.2f})")
    speedup = t_plain / t_rule
    verdict = "meets" if speedup >= TARGET else "BELOW"
    print(f"  speedup of the rule: {speedup:.2f}x median, {m_plain / m_rule:.2f}x best-of "
          f"({verdict} the {TARGET}x target)")

    jg = jax_grad_fn()
    if jg is None:
        print("  jax.nn.sigmoid                            :      n/a (jax not importable)")
    else:
        if not np.allclose(np.asarray(jg(x)), g_rule, rtol=1e-12, atol=1e-15):
            print("  jax.nn.sigmoid: gradient disagrees with tangentia's; not timed")
        else:
            ((t_jax, m_jax),) = measure([jg], x, args.repeats)
            print(f"  jax.nn.sigmoid (x64, jit, reference)      : {t_jax * 1e3:8.2f} ms "
                  f"(min {m_jax * 1e3:.2f}); tangentia rule / jax = {t_rule / t_jax:.2f}")
    return 0 if speedup >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
