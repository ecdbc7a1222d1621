"""Benchmark: a jitted program against the same program run eagerly, at steady state.

Issue 23: "A jitted program is never slower than the same program run eagerly."  For
bench_cold's cases and its ``--sizes`` families (each in a fresh process pinned to one core,
untiered, so the jitted calls run numba's code once compiled), the CPU time per call of the
jitted function against the same expression under ``disable_jit()`` (every ``jit`` runs its
function eagerly, as JAX's), after a warm-up of both; rounds interleaved, medians.  A ratio
jit / eager above 1 is a case where jit loses.

    python benchmarks/bench_jit_eager.py                      # every case and family
    python benchmarks/bench_jit_eager.py --only ode_grad,mlp=10 --rounds 7
"""
from __future__ import annotations

import json
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_cold  # noqa: E402
import bench_estimate  # noqa: E402

SIZES = {"chain": (100,), "scan": (10,), "mlp": (10,), "hessian": (12,), "vmapwhile": (10,),
         "fori": (3,), "physics": (10,), "special": (100,)}
# bench_cold's cases whose work is under jit (the eager ones have nothing to compare)
CASES = tuple(c for c in bench_cold.CASES if c not in ("minimize_bfgs", "custom_root_eager",
                                                       "ode_jacrev_grad", "ode_hessian"))

CHILD = """
import os, time, json, statistics
os.sched_setaffinity(0, {{{cpu}}})
import numpy as np
{prelude}
{setup}
def call():
    return jax.block_until_ready({expr})
call()                                  # (the compile)
with jax.disable_jit():
    call()
def per_call(reps):
    c0 = time.process_time()
    for _ in range(reps):
        call()
    return (time.process_time() - c0) / reps
def reps_for(t):
    return max(1, min(2000, int(0.15 / max(t, 1e-7))))
rj = reps_for(per_call(3))
with jax.disable_jit():
    re = reps_for(per_call(1))
jit, eager = [], []
for _ in range({rounds}):
    jit.append(per_call(rj))
    with jax.disable_jit():
        eager.append(per_call(re))
print(json.dumps({{"jit_s": statistics.median(jit), "eager_s": statistics.median(eager),
                   "jit_all": jit, "eager_all": eager}}))
"""


def child(name, cpu, rounds):
    if "=" in name:
        fam, n = name.split("=")
        setup = textwrap.dedent(bench_cold.SIZE_FAMILIES[fam].format(n=int(n))) + "fj = jax.jit(fn)\n"
        expr = "fj(*args)"
    else:
        setup, expr, _, _ = bench_cold.CASES[name]
    return CHILD.format(cpu=cpu, prelude=textwrap.dedent(bench_cold.PRELUDE["tangentia"]),
                        setup=textwrap.dedent(setup), expr=expr, rounds=rounds)


def run_one(name, cpu, rounds, tree=None):
    return bench_estimate.run_child(child(name, cpu, rounds), tree)


def _fmt(s):
    return f"{s * 1e6:9.1f} us" if s < 1e-3 else f"{s * 1e3:9.2f} ms"


def main(argv=None):
    args, names, cpu = bench_estimate.arguments(__doc__, CASES, SIZES, argv, rounds=5)
    out = {}
    for name in names:
        r = out[name] = run_one(name, cpu, args.rounds, args.tree)
        if "error" in r:
            print(f"{name:<24} error: {r['error']}", flush=True)
            continue
        ratio = r["jit_s"] / r["eager_s"]
        print(f"{name:<24} jit {_fmt(r['jit_s'])}  eager {_fmt(r['eager_s'])}  jit/eager {ratio:6.3f}"
              + ("  JIT LOSES" if ratio > 1.0 else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
