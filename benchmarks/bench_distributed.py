"""Benchmark: tangentia.distributed on a Dask LocalCluster of this machine.

Sweep: 64 independent pendulum gradient solves, ``grad(loss, argnums=(1, 2))``
of the odeint loss of ``bench_ode`` (y0 = [pi - 0.1, 0], ts = linspace(0, 10,
101)) at 64 parameter pairs (b, c) drawn around (0.25, 5.0), mapped with
``in_axes=(None, 0, 0)``:

* local ``jit(vmap(g))`` in this process (one core);
* ``distributed.vmap(g)`` on a cluster of 1 worker and of 2 workers (one
  process with one thread each), with the default chunking (one chunk per
  worker thread: 1 x 64 and 2 x 32) and with ``chunk_size=32`` (the same two
  tasks on both clusters, so the ratio isolates the parallelism).

Targets (issue 15): 2 workers >= 1.7x one worker; 1 worker <= 1.15x local.

Per-task overhead: ``distributed.vmap(lambda x: x + 1.0, chunk_size=1)`` over
64 elements (64 tiny tasks) against ``chunk_size=64`` (one task), on each
cluster: (t64 - t1) / 63 is the cost of one more task; t1 minus the local
call is the fixed cost of a call.

All runs are timed in interleaved rounds (``_harness.measure_interleaved``);
the median round is reported.  Every distributed result is checked against
the local one.  Thread-pool variables are set to 1 (each worker uses one
core); the process is not pinned, since the clusters need both cores.  Each
available jit backend is measured (selected with ``TANGENTIA_JIT_BACKEND``
in this process and the workers, which inherit it).

Standalone only (the suite's ``run.py`` pins one core):
``python benchmarks/bench_distributed.py [--quick] [--backends numpy] [--json PATH]``.
With the numba backend the first call compiles the batched odeint gradient in
every worker process (minutes each on a loaded 2-core machine: the program
uses object mode, so the on-disk cache does not apply).
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    from _cpu import THREAD_VARS
    for _v in THREAD_VARS:
        os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from _harness import FULL, QUICK, fmt_time, measure_interleaved, paired_ratio  # noqa: E402

NAME = "distributed"
TITLE = "tangentia.distributed: 64 pendulum gradient solves on a Dask LocalCluster"
N = 64
TARGETS = {"2 workers / 1 worker speedup": 1.7, "1 worker / local time": 1.15}


def sweep_inputs():
    from bench_ode import Y0
    rng = np.random.default_rng(0)
    return Y0, rng.uniform(0.15, 0.35, N), rng.uniform(4.0, 6.0, N)


def grad_fn():
    import tangentia as tg
    import tangentia.numpy as tnp
    from tangentia.experimental.ode import odeint

    from bench_ode import make_loss
    loss, _ = make_loss(tnp, odeint)
    return tg.grad(loss, argnums=(1, 2))


def _cluster(n):
    from dask.distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=n, processes=True, threads_per_worker=1,
                           dashboard_address=":0", silence_logs=40)
    return cluster, Client(cluster, set_as_default=False)


def _max_rel(a, b):
    a = np.concatenate([np.ravel(x) for x in a])
    b = np.concatenate([np.ravel(x) for x in b])
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def run_backend(cfg, log):
    import tangentia as tg
    import tangentia.distributed as tgd

    g = grad_fn()
    y0, bs, cs = sweep_inputs()
    local = tg.jit(tg.vmap(g, in_axes=(None, 0, 0)))
    chunk = N // 2  # the default chunks of 2 workers, run one after the other by 1 worker
    c1, c2 = _cluster(1), _cluster(2)
    try:
        fns = {"local": lambda: local(y0, bs, cs)}
        for name, (_, cl) in (("1 worker", c1), ("2 workers", c2)):
            fns[f"{name}, default chunks"] = (
                lambda f=tgd.vmap(g, (None, 0, 0), client=cl): f(y0, bs, cs))
            fns[f"{name}, chunk_size={chunk}"] = (
                lambda f=tgd.vmap(g, (None, 0, 0), client=cl, chunk_size=chunk): f(y0, bs, cs))
        first, outs = {}, {}
        for k, fn in fns.items():  # first calls: tracing and compiling (on each worker)
            t0 = time.perf_counter()
            outs[k] = fn()
            first[k] = time.perf_counter() - t0
        errors = {k: _max_rel(v, outs["local"]) for k, v in outs.items() if k != "local"}
        log(f"    max relative difference to local: {max(errors.values()):.2g}")
        keys = list(fns)
        stats = dict(zip(keys, measure_interleaved([fns[k] for k in keys], cfg)))
        for k in keys:
            log(f"    {k:<34} {fmt_time(stats[k]['median_s']):>10}   first call "
                f"{fmt_time(first[k])}")
        loads = [x for x in stats["local"]["others_cores_per_round"] if x is not None]
        if loads:
            log(f"    other processes used {np.median(loads):.2f} cores (median over rounds; "
                f"this machine has {os.cpu_count()}): parallel speedups shrink accordingly")
        ratios = {
            "1 worker / local time (default chunks)":
                paired_ratio(stats["1 worker, default chunks"], stats["local"]),
            "2 workers / 1 worker speedup (default chunks)":
                paired_ratio(stats["1 worker, default chunks"], stats["2 workers, default chunks"]),
            f"2 workers / 1 worker speedup (chunk_size={chunk})":
                paired_ratio(stats[f"1 worker, chunk_size={chunk}"],
                             stats[f"2 workers, chunk_size={chunk}"]),
            f"1 worker / local time (chunk_size={chunk})":
                paired_ratio(stats[f"1 worker, chunk_size={chunk}"], stats["local"]),
            "2 workers / local speedup (default chunks)":
                paired_ratio(stats["local"], stats["2 workers, default chunks"]),
        }
        for k, v in ratios.items():
            target = next((t for name, t in TARGETS.items() if k.startswith(name)), None)
            met = "" if target is None else (
                f"   target {'>=' if 'speedup' in k else '<='} {target}: "
                + ("met" if (v >= target if "speedup" in k else v <= target) else "NOT met"))
            log(f"    {k:<50} {v:.2f}{met}")
        overhead = task_overhead(cfg, log, {"1 worker": c1[1], "2 workers": c2[1]})
        scaling = batch_scaling(cfg, local, y0, bs, cs, log)
    finally:
        for cluster, cl in (c1, c2):
            cl.close()
            cluster.close()
    return {"others_cores_median": float(np.median(loads)) if loads else None,
            "times": {k: {"median_s": stats[k]["median_s"], "first_s": first[k],
                          "runs_s": stats[k]["runs_s"]} for k in keys},
            "ratios": ratios, "max_rel_diff_to_local": errors, "task_overhead": overhead,
            "local_batch_scaling": scaling}


def task_overhead(cfg, log, clients):
    """Cost of one more tiny task, and of one call with one tiny task."""
    import tangentia as tg
    import tangentia.distributed as tgd

    def tiny(x):
        return x + 1.0

    x = np.arange(float(N))
    local = tg.jit(tg.vmap(tiny))
    fns = {"local jit(vmap)": lambda: local(x)}
    for name, cl in clients.items():
        for cs in (N, 1):
            fns[f"{name}, {N // cs} task(s)"] = (
                lambda f=tgd.vmap(tiny, client=cl, chunk_size=cs): f(x))
    for fn in fns.values():
        np.testing.assert_array_equal(fn(), x + 1.0)
    keys = list(fns)
    stats = dict(zip(keys, measure_interleaved([fns[k] for k in keys], cfg)))
    out = {"local_call_s": stats[keys[0]]["median_s"]}
    log("  per-task overhead (tiny tasks: x + 1.0 on 64 elements)")
    for name in clients:
        one = stats[f"{name}, 1 task(s)"]["median_s"]
        many = stats[f"{name}, {N} task(s)"]["median_s"]
        out[name] = {"call_with_1_task_s": one, f"call_with_{N}_tasks_s": many,
                     "per_extra_task_s": (many - one) / (N - 1),
                     "fixed_call_overhead_s": one - out["local_call_s"]}
        log(f"    {name:<10} call with 1 task {fmt_time(one):>9}, with {N} tasks "
            f"{fmt_time(many):>9}: {fmt_time((many - one) / (N - 1))} per extra task "
            f"(local call {fmt_time(out['local_call_s'])})")
    return out


def batch_scaling(cfg, local, y0, bs, cs, log):
    """Local jit(vmap) time for batches of 64, 32 and 8 (how the compute of a
    chunk scales with its size on this backend: what chunking can gain)."""
    fns = {n: (lambda n=n: local(y0, bs[:n], cs[:n])) for n in (N, N // 2, N // 8)}
    for fn in fns.values():
        fn()
    stats = dict(zip(fns, measure_interleaved(list(fns.values()), cfg)))
    out = {str(n): stats[n]["median_s"] for n in fns}
    log("  local jit(vmap) per batch size: " + ", ".join(
        f"{n}: {fmt_time(s)}" for n, s in out.items())
        + f"  (64 / 32 time ratio {out[str(N)] / out[str(N // 2)]:.2f}; 2.0 = compute-bound)")
    return out


def run(cfg, log=print):
    from _harness import tg_backends
    results = {}
    old = os.environ.get("TANGENTIA_JIT_BACKEND")
    try:
        for name, how in tg_backends():
            if how == "backend=":
                os.environ["TANGENTIA_JIT_BACKEND"] = name
            log(f"  backend {name}: sweep of {N} pendulum gradients")
            results[name] = run_backend(cfg, log)
    finally:
        if old is None:
            os.environ.pop("TANGENTIA_JIT_BACKEND", None)
        else:
            os.environ["TANGENTIA_JIT_BACKEND"] = old
    return {"title": TITLE, "cpus": os.cpu_count(), "backends": results}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="short timings (smoke test)")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--backends", help="comma-separated jit backends (default: all available)")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="S",
                   help="first wait up to S seconds for other processes to leave the CPU")
    a = p.parse_args(argv)
    if a.backends:
        import _harness
        _harness.SELECTED_BACKENDS = a.backends.split(",")
    if a.wait_idle:
        from _harness import wait_for_idle
        wait_for_idle(a.wait_idle)
    import dask
    dask.config.set({"distributed.logging.distributed": "warning"})
    import logging
    for name in ("distributed", "distributed.scheduler", "distributed.core", "distributed.nanny"):
        logging.getLogger(name).setLevel(logging.WARNING)
    print(TITLE)
    res = run(QUICK if a.quick else FULL)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
