"""Benchmark: the warm-cache first call (a user's second run of the same script).

Per case of ``bench_cold.py``: one fresh process fills a new cache directory (untiered, then
tiered), then ``--rounds`` rounds of fresh processes measure the first call with that cache
(tiered and untiered, ``--modes``), interleaved with JAX's cold first call (JAX keeps no
persistent cache by default).  Pinned to one core (``--cpu``).  Reported per mode: the
median first call (wall and CPU seconds of the process: a loaded machine inflates wall time)
and the import time; "RESULTS DIFFER" if a measured process's result is not bit-equal to the
filling process's (the NumPy tier's first calls may differ within rounding).

    python benchmarks/bench_warm.py                       # bench_cold's five small cases
    python benchmarks/bench_warm.py --only ode_grad --rounds 5 --no-jax
    python benchmarks/bench_warm.py --root /path/to/another/tree   # A/B against a clone
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_cold  # noqa: E402

SMALL = "jit_elementwise,jit_grad_elementwise,jit_grad_mlp,jit_grad_scan,ode_grad"


def run(lib, case, tiered, cache, root, cpu):
    """One fresh process running ``case`` with the cache directory ``cache`` (kept)."""
    env = dict(os.environ, PYTHONPATH=root, TANGENTIA_COMPILE_PROGRESS="0",
               TANGENTIA_JIT_TIERED="1" if tiered else "0", TANGENTIA_CACHE_DIR=cache,
               NUMBA_CACHE_DIR=os.path.join(cache, "numba_own"))
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    code = bench_cold.child_code(lib, case, cpu, 300)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, env=env,
                       timeout=900)
    if p.returncode:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(HERE), help="the tree to measure")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=SMALL)
    ap.add_argument("--cpu", type=int, default=os.cpu_count() - 1)
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--modes", default="tiered,untiered")
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    for case in a.only.split(","):
        rows = {m: [] for m in modes + ([] if a.no_jax else ["jax"])}
        with tempfile.TemporaryDirectory() as cache:
            fill = run("tangentia", case, False, cache, a.root, a.cpu)
            if "error" in fill:
                print(f"{case:<22} fill: {fill['error']}", flush=True)
                continue
            run("tangentia", case, True, cache, a.root, a.cpu)
            for _ in range(a.rounds):
                for m in rows:
                    rows[m].append(run("jax" if m == "jax" else "tangentia", case, m == "tiered",
                                       cache, a.root, a.cpu))
        out = []
        for m, rs in rows.items():
            good = [r for r in rs if "error" not in r]
            errs = [r["error"] for r in rs if "error" in r]
            if not good:
                out.append(f"{m}: {errs[:1]}")
                continue
            med = {k: statistics.median(r[k] for r in good) for k in ("first_s", "first_cpu_s", "import_s")}
            differ = m != "jax" and any(r["result"] != fill["result"] for r in good)
            out.append(f"{m} first {med['first_s'] * 1e3:.0f} ms (cpu {med['first_cpu_s'] * 1e3:.0f} ms, "
                       f"import {med['import_s'] * 1e3:.0f} ms)" + ("  RESULTS DIFFER" if differ else "")
                       + (f"  errors: {errs}" if errs else ""))
        print(f"{case:<22} " + " | ".join(out), flush=True)


if __name__ == "__main__":
    main()
