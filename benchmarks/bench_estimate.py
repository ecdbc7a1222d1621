"""Benchmark: the numba backend's compile estimate against the compile it estimates.

``NumbaBackend.compile_estimate`` (numba_backend/__init__.py) decides tiering's rent-or-buy
(compile at the second call, or once the calls on the NumPy tier have cost half the
estimate) and is printed by the compile-progress line.  This runs bench_cold's cases and its
``--sizes`` families, each in a fresh process pinned to one core with empty caches,
untiered, and reports for every program the backend compiles (the outermost compile: a
program's compile units are part of it): its equations, the estimate, the CPU seconds the
compile took (less the one-time GEMM calibration, which a machine pays once, cached), and
their ratio.  The estimate is meant to stay within about 2x of the compile on all of them.

    python benchmarks/bench_estimate.py                       # bench_cold's cases + families
    python benchmarks/bench_estimate.py --only ode_grad,mlp=3,mlp=10
    python benchmarks/bench_estimate.py --tree /tmp/base      # another tree's estimate
    python benchmarks/bench_estimate.py --json est.json

A family is named ``family=n``; without ``--only``, every family runs at two sizes
(``SIZES``).  The first compile in a process includes numba's import and registries
(~0.3-0.5 s CPU, the ``SECONDS_BASE`` of the estimate); later ones in the same process do not.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_cold  # noqa: E402

# two sizes per family: small and large enough to show the growth, each compiling in
# well under a minute on one core
SIZES = {"chain": (100, 1000), "scan": (3, 30), "mlp": (3, 10), "hessian": (4, 12),
         "vmapwhile": (3, 10), "fori": (3, 10), "physics": (3, 10), "special": (30, 300)}
# bench_cold's cases that compile with numba (minimize_bfgs, custom_root_eager, eager
# jacrev/hessian: several programs each, all reported)
CASES = tuple(bench_cold.CASES)

CHILD = """
import os, sys, time, json
os.sched_setaffinity(0, {{{cpu}}})
import numpy as np
{prelude}
from tangentia.compiler import numba_backend as NB
_rows, _depth, _calib = [], [0], [0.0]
_orig = NB.NumbaBackend.compile
def _compile(self, jaxpr):
    if _depth[0]:
        return _orig(self, jaxpr)
    est = self.compile_estimate(jaxpr)
    _depth[0] += 1
    cal0 = _calib[0]; c0 = time.process_time(); t0 = time.perf_counter()
    try:
        return _orig(self, jaxpr)
    finally:
        c1 = time.process_time(); t1 = time.perf_counter(); _depth[0] -= 1
        _rows.append(dict(estimate=est, cpu_s=c1 - c0 - (_calib[0] - cal0), wall_s=t1 - t0,
                          calibration_s=_calib[0] - cal0, features=_features(jaxpr)))
NB.NumbaBackend.compile = _compile
def _features(jaxpr):
    from tangentia.compiler.backend import program_size
    out = dict(size=program_size(jaxpr))
    for name in ("equation_kinds", "estimate_inputs"):     # (the tree's own, if any)
        if name in vars(NB):
            out[name] = vars(NB)[name](jaxpr)
    return out
import importlib
def _hook_calibration():
    g = importlib.import_module("tangentia.compiler.numba_backend.gemm")
    orig = g.calibration
    def calibration(dtype):
        c0 = time.process_time()
        try:
            return orig(dtype)
        finally:
            _calib[0] += time.process_time() - c0
    g.calibration = calibration
_orig_native, _hooked = NB._native, []
def _native():
    m = _orig_native()
    if not _hooked:
        _hooked.append(1)
        _hook_calibration()
    return m
NB._native = _native
{setup}
{run}
print(json.dumps(_rows))
"""

CASE_RUN = """
r = {first}
jax.block_until_ready(r)
if {has_second}:
    jax.block_until_ready({second})
"""

FAMILY_RUN = """
g = jax.jit(fn)
jax.block_until_ready(g(*args))
jax.block_until_ready(g(*args2))
"""


def child(name, cpu):
    if "=" in name:
        fam, n = name.split("=")
        setup, run = bench_cold.SIZE_FAMILIES[fam].format(n=int(n)), FAMILY_RUN
    else:
        setup, first, second, _ = bench_cold.CASES[name]
        run = CASE_RUN.format(first=first, second=second or "None", has_second=second is not None)
    return CHILD.format(cpu=cpu, prelude=textwrap.dedent(bench_cold.PRELUDE["tangentia"]),
                        setup=textwrap.dedent(setup), run=textwrap.dedent(run))


def run_child(code, tree=None, timeout=1800):
    """The last line of ``code``'s output, as JSON, run in a fresh interpreter (one thread per
    library, untiered, no progress line, empty caches; ``tree``: the tangentia tree to
    import), or ``{"error": its last line on stderr}``."""
    env = dict(os.environ, TANGENTIA_JIT_TIERED="0", TANGENTIA_COMPILE_PROGRESS="0",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([tree or ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    with tempfile.TemporaryDirectory() as cache:
        env["TANGENTIA_CACHE_DIR"] = cache
        env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba_own")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                              text=True, timeout=timeout, env=env, cwd=tree or ROOT)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_one(name, cpu, tree=None):
    r = run_child(child(name, cpu), tree)
    return r if "error" in r else {"rows": r}


def arguments(doc, cases, sizes, argv=None, **extra):
    """The command line shared with bench_jit_eager: ``(args, names, cpu)``."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--only", default="", help="cases and family=n, comma-separated")
    for name, default in extra.items():
        ap.add_argument(f"--{name}", type=type(default), default=default)
    ap.add_argument("--cpu", type=int, default=None, help="the core to pin to (default: the last)")
    ap.add_argument("--tree", default=None, metavar="DIR", help="the tangentia tree to import")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else \
        list(cases) + [f"{f}={n}" for f, ns in sizes.items() for n in ns]
    return args, names, args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))


def main(argv=None):
    args, names, cpu = arguments(__doc__, CASES, SIZES, argv)
    out, ratios = {}, []
    for name in names:
        r = run_one(name, cpu, args.tree)
        out[name] = r
        if "error" in r:
            print(f"{name:<24} error: {r['error']}", flush=True)
            continue
        for i, row in enumerate(r["rows"]):
            if row["cpu_s"] < 0.02 and i:
                continue            # (compiled already, in this process)
            ratio = row["estimate"] / max(row["cpu_s"], 1e-3)
            if row["cpu_s"] > 0.05:      # (programs loaded or run as NumPy calls: no compile)
                ratios.append(ratio)
            cal = f" (+{row['calibration_s']:.1f} s calibration)" if row["calibration_s"] > 0.01 else ""
            print(f"{name:<24} #{i:<2} {row['features']['size']:>6} eqns  estimate "
                  f"{row['estimate']:8.2f} s  compile cpu {row['cpu_s']:8.2f} s{cal}"
                  f"  ratio {ratio:6.2f}  {json.dumps(row['features'])}", flush=True)
    if ratios:
        print(f"estimate / compile over {len(ratios)} compiles: median {statistics.median(ratios):.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
