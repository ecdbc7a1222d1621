"""Benchmark: tangentia.distributed on a Dask LocalCluster of this machine.

Sweep: 64 (``--n``) independent pendulum gradient solves, ``grad(loss, argnums=(1, 2))``
of the odeint loss of ``bench_ode`` (y0 = [pi - 0.1, 0], ts = linspace(0, 10,
101)) at 64 parameter pairs (b, c) drawn around (0.25, 5.0), mapped with
``in_axes=(None, 0, 0)``:

* local ``jit(vmap(g))`` in this process (one core);
* ``distributed.vmap(g)`` on a cluster of 1 worker and then on one of 2
  workers (one process with one thread each; each cluster alone on the
  machine, as a user runs one, the local sweep timed with each as the common
  reference), with the default chunking (one chunk per worker thread: 1 x 64
  and 2 x 32) and with ``chunk_size=32`` (the same two
  chunks on both clusters, so the ratio isolates the parallelism), through a
  client with Dask's defaults (which calls the actors straight on the workers
  once it has connected to them) and, default chunks only, through one with
  ``direct_to_workers=False`` (actor calls through the scheduler's proxy).
  NumPy inputs take the actor path (one actor per worker); that the chunks
  ran on the actors, and the default client's calls straight on the workers,
  is checked.

Targets (issue 15): 2 workers >= 1.7x one worker; 1 worker <= 1.15x local.

Per-call overhead: ``distributed.vmap(lambda x: x + 1.0, chunk_size=1)`` over
64 elements (64 tiny chunks) against ``chunk_size=64`` (one chunk), on each
cluster and client: (t64 - t1) / 63 is the cost of one more chunk; t1 minus
the local call is the fixed cost of a call; and with the default chunks (one
tiny chunk per worker: the cost of a call that runs on both workers at once).
The floors: plain Dask tasks (``client.submit(noop, x).result()``, and 64
tasks of ``client.map(noop, rows)``) and a plain actor call
(``actor.noop(x).result()``, which Dask sends through the scheduler's proxy
unless the client has ``direct_to_workers=True``).

All runs are timed in interleaved rounds (``_harness.measure_interleaved``);
the median round is reported.  Every distributed result is checked against
the local one.  Thread-pool variables are set to 1 (each worker uses one
core); the process is not pinned, since the clusters need both cores.  Each
available jit backend is measured: selected here with
``config.update("jit_backend", ...)`` and in the workers with
``TANGENTIA_JIT_BACKEND`` (a variable set in this process after tangentia is
imported would not reach its ``jit``); the backend each side ran is checked
(the local function's compiled programs, the workers' ``worker_cache_info``)
and reported.

The CPU used by other processes is measured over each timing (machine busy
time minus this process and its cluster's workers): the harness's own
per-round figure counts the workers as "others".  Since a shared 2-core
machine is rarely idle, the target ratios are also estimated from what load
distorts little: the CPU time of the local batches and the least cost of a
call with tiny chunks (see ``expected_ratios``).

Standalone only (the suite's ``run.py`` pins one core):
``python benchmarks/bench_distributed.py [--quick] [--backends numpy] [--n 64] [--json PATH]``.
With the numba backend the first call compiles the batched odeint gradient
(about 6-9 s of CPU per chunk shape); the workers then load it from the
on-disk cache (``TANGENTIA_CACHE_DIR``) when the shape was compiled before.
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

from _harness import (FULL, QUICK, CpuMonitor, fmt_time, measure_interleaved,  # noqa: E402
                      paired_ratio)

NAME = "distributed"
TITLE = "tangentia.distributed: 64 pendulum gradient solves on a Dask LocalCluster"
N = 64     # pendulum solves in the sweep (--n)
TINY = 64  # elements of the tiny-task overhead measurement
TARGETS = {"2 workers / 1 worker speedup": 1.7, "1 worker / local time": 1.15}


def sweep_inputs(n=N):
    from bench_ode import Y0
    rng = np.random.default_rng(0)
    return Y0, rng.uniform(0.15, 0.35, n), rng.uniform(4.0, 6.0, n)


def grad_fn():
    import tangentia as tg
    import tangentia.numpy as tnp
    from tangentia.experimental.ode import odeint

    from bench_ode import make_loss
    loss, _ = make_loss(tnp, odeint)
    return tg.grad(loss, argnums=(1, 2))


def _cluster(n, backend):
    """``(cluster, client, proxy client)``: a LocalCluster of ``n`` worker
    processes and two clients, the second with ``direct_to_workers=False`` (its
    actor calls and gathers go through the scheduler's proxy)."""
    from dask.distributed import Client, LocalCluster
    env = {} if backend is None else {"TANGENTIA_JIT_BACKEND": backend}
    cluster = LocalCluster(n_workers=n, processes=True, threads_per_worker=1,
                           dashboard_address=":0", silence_logs=40, env=env)
    return (cluster, Client(cluster, set_as_default=False),
            Client(cluster, set_as_default=False, direct_to_workers=False))


def _cluster_pids(clients):
    """The worker processes of ``clients`` and their parents (the nannies and
    the scheduler run in this process, which is not counted again)."""
    pids = set()
    for cl in clients:
        pids.update(cl.run(os.getpid).values())
        pids.update(cl.run(os.getppid).values())
    pids.discard(os.getpid())
    return sorted(pids)


def _cpu_seconds(pids):
    """User + system CPU seconds of the processes ``pids`` (Linux; 0 elsewhere)."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return total


class LoadMeter:
    """Cores used during a ``with`` block by this process's clusters and by
    everything else on the machine (``others``), from /proc."""

    def __init__(self, pids):
        self.pids = pids

    def __enter__(self):
        self.mon = CpuMonitor()  # machine busy time minus this process's
        self.start = _cpu_seconds(self.pids)
        return self

    def __exit__(self, *exc):
        wall = time.perf_counter() - self.mon.start[1] if self.mon.start else 0.0
        others = self.mon.others_cores()
        self.cluster = (_cpu_seconds(self.pids) - self.start) / wall if wall > 0 else None
        self.others = None if others is None else max(0.0, others - self.cluster)
        return False

    def describe(self):
        if self.others is None:
            return "load of other processes unknown (no /proc)"
        return (f"other processes used {self.others:.2f} of {os.cpu_count()} cores meanwhile "
                f"(the clusters {self.cluster:.2f})"
                + ("; busy machine: parallel speedups shrink and overheads grow"
                   if self.others > 0.2 else ""))


def _max_rel(a, b):
    a = np.concatenate([np.ravel(x) for x in a])
    b = np.concatenate([np.ravel(x) for x in b])
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _backends_ran(local, clients):
    """``(local, workers)``: the jit backends the local function compiled with
    and the workers' default backend (what their jitted functions run on)."""
    import tangentia.distributed as tgd
    here = sorted(b for b, c in local.fast_caches.items() if c)
    there = sorted({i["backend"] for cl in clients for i in cl.run(tgd.worker_cache_info).values()})
    return here, there


def _fmt_target(name, value):
    target = next((t for k, t in TARGETS.items() if name.startswith(k)), None)
    if target is None:
        return ""
    met = value >= target if "speedup" in name else value <= target
    return (f"   target {'>=' if 'speedup' in name else '<='} {target}: "
            + ("met" if met else "NOT met"))


def run_cluster(cfg, log, backend, n, workers, local, y0, bs, cs):
    """One cluster of ``workers`` workers, alone on the machine (as a user
    runs one): its sweeps interleaved with the local one, and its call
    overheads.  Returns the timings and the overheads."""
    import tangentia.distributed as tgd

    g = grad_fn()
    chunk = n // 2  # the default chunks of 2 workers, run one after the other by 1 worker
    cluster, cl, proxy = _cluster(workers, backend)
    name = f"{workers} worker{'s' if workers > 1 else ''}"
    try:
        fns = {"local": lambda: local(y0, bs, cs),
               f"{name}, default chunks": (
                   lambda f=tgd.vmap(g, (None, 0, 0), client=cl): f(y0, bs, cs)),
               f"{name}, chunk_size={chunk}": (
                   lambda f=tgd.vmap(g, (None, 0, 0), client=cl, chunk_size=chunk): f(y0, bs, cs)),
               f"{name}, proxy, default chunks": (
                   lambda f=tgd.vmap(g, (None, 0, 0), client=proxy): f(y0, bs, cs))}
        first, outs = {}, {}
        for k, fn in fns.items():  # first calls: tracing and compiling (on each worker)
            t0 = time.perf_counter()
            outs[k] = fn()
            first[k] = time.perf_counter() - t0
        time.sleep(0.2)  # the default client's connections to the workers are made meanwhile
        _check_paths([cl, proxy])
        ran = dict(zip(("local", "workers"), _backends_ran(local, [cl])))
        log(f"    {name}: backends that ran: local {ran['local']}, workers {ran['workers']}")
        if backend is not None and (ran["local"] != [backend] or ran["workers"] != [backend]):
            raise RuntimeError(f"asked for the {backend} backend everywhere, got {ran}")
        errors = {k: _max_rel(v, outs["local"]) for k, v in outs.items() if k != "local"}
        log(f"    max relative difference to local: {max(errors.values()):.2g}")
        keys = list(fns)
        with LoadMeter(_cluster_pids([cl])) as load:
            stats = dict(zip(keys, measure_interleaved([fns[k] for k in keys], cfg)))
        for k in keys:
            log(f"    {k:<34} {fmt_time(stats[k]['median_s']):>10}   first call "
                f"{fmt_time(first[k])}")
        log(f"    {load.describe()}")
        overhead = task_overhead(cfg, log, {name: cl, f"{name}, proxy": proxy})
    finally:
        proxy.close()
        cl.close()
        cluster.close()
    return {"stats": stats, "first": first, "errors": errors, "ran": ran,
            "others_cores": load.others, "clusters_cores": load.cluster, "overhead": overhead}


def run_backend(cfg, log, backend, n):
    """The 1-worker and the 2-worker cluster in turn, each with the local
    sweep as the common reference: a ratio between the clusters is the
    quotient of their ratios to the local time (median over paired rounds)."""
    import tangentia as tg

    y0, bs, cs = sweep_inputs(n)
    local = tg.jit(tg.vmap(grad_fn(), in_axes=(None, 0, 0)))
    chunk = n // 2
    one = run_cluster(cfg, log, backend, n, 1, local, y0, bs, cs)
    two = run_cluster(cfg, log, backend, n, 2, local, y0, bs, cs)

    def to_local(res, key):
        return paired_ratio(res["stats"][key], res["stats"]["local"])

    ratios = {}
    for how in ("default chunks", f"chunk_size={chunk}", "proxy, default chunks"):
        r1, r2 = to_local(one, f"1 worker, {how}"), to_local(two, f"2 workers, {how}")
        ratios[f"1 worker / local time ({how})"] = r1
        ratios[f"2 workers / 1 worker speedup ({how})"] = r1 / r2
    ratios["2 workers / local speedup (default chunks)"] = 1 / to_local(
        two, "2 workers, default chunks")
    for k, v in ratios.items():
        log(f"    {k:<50} {v:.2f}{_fmt_target(k, v)}")
    overhead = {**one["overhead"], **two["overhead"]}
    scaling = batch_scaling(cfg, local, y0, bs, cs, log)
    expected = expected_ratios(scaling, overhead, n, log)
    times = {k: {"median_s": res["stats"][k]["median_s"], "first_s": res["first"][k],
                 "runs_s": res["stats"][k]["runs_s"]}
             for res in (one, two) for k in res["stats"] if k != "local"}
    return {"backends_ran": {"1 worker": one["ran"], "2 workers": two["ran"]},
            "others_cores": [one["others_cores"], two["others_cores"]],
            "clusters_cores": [one["clusters_cores"], two["clusters_cores"]],
            "local_s": [one["stats"]["local"]["median_s"], two["stats"]["local"]["median_s"]],
            "times": times, "ratios": ratios,
            "max_rel_diff_to_local": {**one["errors"], **two["errors"]},
            "task_overhead": overhead, "local_batch_scaling": scaling,
            "expected_idle_ratios": expected}


def _check_paths(clients):
    """Raise unless the sweep's chunks ran on the workers' actors (the path
    ``distributed.vmap`` takes for NumPy inputs), as ``worker_cache_info``
    counts, and the clients with Dask's default ``direct_to_workers`` call
    them straight on the workers (this machine's client reaches its workers)."""
    import tangentia.distributed as tgd
    for cl in clients:
        info = cl.run(tgd.worker_cache_info)
        if not all(i["actor_calls"] for i in info.values()):
            raise RuntimeError(f"a worker ran no chunk on its actor: {info}")
        direct = tgd._client_runners(cl).direct
        if cl.direct_to_workers is None and direct != set(info):
            raise RuntimeError(f"the client calls {sorted(direct)} directly, not all of "
                               f"{sorted(info)}")


def _noop(x):
    return x


class Noop:
    """A Dask actor whose call returns its argument: the floor under an actor call."""

    def noop(self, x):
        return x


def task_overhead(cfg, log, clients):
    """Cost of one more tiny chunk, of one call with one tiny chunk and of one
    with a tiny chunk on each worker, for ``distributed.vmap`` (its chunks run
    on the workers' actors) and for plain Dask (``submit(noop).result()``,
    ``map(noop, rows)``, an actor's ``noop(x).result()``: the floors under a
    call on tasks and on actors)."""
    import tangentia as tg
    import tangentia.distributed as tgd

    def tiny(x):
        return x + 1.0

    x = np.arange(float(TINY))
    local = tg.jit(tg.vmap(tiny))
    fns = {"local jit(vmap)": lambda: local(x)}
    rows = [x[i:i + 1] for i in range(TINY)]
    for name, cl in clients.items():
        fns[f"{name}, dask round trip"] = lambda cl=cl: cl.submit(_noop, x, pure=False).result()
        with cl.as_current():  # the actor handle calls through cl
            actor = cl.submit(Noop, actor=True, pure=False).result()
        fns[f"{name}, dask actor round trip"] = lambda a=actor: a.noop(x).result()
        fns[f"{name}, dask {TINY} tasks"] = (
            lambda cl=cl: np.concatenate(cl.gather(cl.map(_noop, rows, pure=False))))
        for cs in (TINY, 1):
            fns[f"{name}, {TINY // cs} chunk(s)"] = (
                lambda f=tgd.vmap(tiny, client=cl, chunk_size=cs): f(x))
        fns[f"{name}, a chunk per worker"] = lambda f=tgd.vmap(tiny, client=cl): f(x)
    for k, fn in fns.items():
        np.testing.assert_array_equal(fn(), x if "dask" in k else x + 1.0)
    keys = list(fns)
    with LoadMeter(_cluster_pids(clients.values())) as load:
        stats = dict(zip(keys, measure_interleaved([fns[k] for k in keys], cfg)))
    out = {"local_call_s": stats[keys[0]]["median_s"], "others_cores": load.others}
    log(f"  per-call and per-chunk overhead (tiny chunks: x + 1.0 on {TINY} elements)")
    for name in clients:
        one = stats[f"{name}, 1 chunk(s)"]["median_s"]
        many = stats[f"{name}, {TINY} chunk(s)"]["median_s"]
        floor = stats[f"{name}, dask round trip"]["median_s"]
        floor_many = stats[f"{name}, dask {TINY} tasks"]["median_s"]
        floor_actor = stats[f"{name}, dask actor round trip"]["median_s"]
        each = stats[f"{name}, a chunk per worker"]["median_s"]
        out[name] = {"call_with_1_chunk_s": one, f"call_with_{TINY}_chunks_s": many,
                     "call_with_a_chunk_per_worker_s": each,
                     "least_call_with_1_chunk_s": stats[f"{name}, 1 chunk(s)"]["min_s"],
                     "least_call_with_a_chunk_per_worker_s":
                         stats[f"{name}, a chunk per worker"]["min_s"],
                     "per_extra_chunk_s": (many - one) / (TINY - 1),
                     "fixed_call_overhead_s": one - out["local_call_s"],
                     "dask_round_trip_s": floor, "dask_actor_round_trip_s": floor_actor,
                     "dask_per_extra_task_s": (floor_many - floor) / (TINY - 1)}
        log(f"    {name:<17} call with 1 chunk {fmt_time(one):>9}, with {TINY} chunks "
            f"{fmt_time(many):>9}: {fmt_time((many - one) / (TINY - 1))} per extra chunk; "
            f"with a chunk per worker {fmt_time(each)} (local call "
            f"{fmt_time(out['local_call_s'])})")
        log(f"    {'':<17} plain Dask: submit(noop).result() {fmt_time(floor):>9}, "
            f"{fmt_time((floor_many - floor) / (TINY - 1))} per extra task; an actor's "
            f"noop(x).result() {fmt_time(floor_actor)}")
    log(f"    {load.describe()}")
    return out


def _cpu_time(fn, runs=3):
    """The least CPU time of this process over ``runs`` calls of ``fn``: the
    computation's cost, which other processes on the machine hardly change."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def batch_scaling(cfg, local, y0, bs, cs, log):
    """Local jit(vmap) time (wall and CPU) for the whole batch, half and an
    eighth of it: how the compute of a chunk scales with its size on this
    backend, which bounds what splitting it across workers can gain."""
    n = len(bs)
    fns = {m: (lambda m=m: local(y0, bs[:m], cs[:m])) for m in (n, n // 2, n // 8)}
    for fn in fns.values():
        fn()
    stats = dict(zip(fns, measure_interleaved(list(fns.values()), cfg)))
    out = {str(m): stats[m]["median_s"] for m in fns}
    cpu = {str(m): _cpu_time(fn) for m, fn in fns.items()}
    log("  local jit(vmap) per batch size: " + ", ".join(
        f"{m}: {fmt_time(t)} ({fmt_time(cpu[m])} CPU)" for m, t in out.items())
        + f"  ({n} / {n // 2} CPU time ratio {cpu[str(n)] / cpu[str(n // 2)]:.2f}; "
        "2.0 = compute-bound)")
    return {"wall_s": out, "cpu_s": cpu}


def expected_ratios(scaling, overhead, n, log):
    """The targets' ratios expected on an idle machine from quantities that
    load distorts little: the CPU time C(m) of a batch of m solves and the
    cost of a call with one tiny chunk on one worker, o1, and with one tiny
    chunk on each of two workers, o2 (the least of the timed rounds, each the
    mean of several calls; still inflated by load, so these are conservative):
    1 worker / local = (C(n) + o1) / C(n), 2 workers / 1
    worker = (C(n) + o1) / (C(n/2) + o2); for the default and the proxy clients."""
    c_all, c_half = scaling["cpu_s"][str(n)], scaling["cpu_s"][str(n // 2)]
    out = {}
    for how, suffix in (("", ""), (" (proxy)", ", proxy")):
        o1 = overhead["1 worker" + suffix]["least_call_with_1_chunk_s"]
        o2 = overhead["2 workers" + suffix]["least_call_with_a_chunk_per_worker_s"]
        out["1 worker / local time" + how] = (c_all + o1) / c_all
        out["2 workers / 1 worker speedup" + how] = (c_all + o1) / (c_half + o2)
    log(f"  expected on an idle machine from CPU times (C({n}) {fmt_time(c_all)}, "
        f"C({n // 2}) {fmt_time(c_half)}) and the least call overheads (o1 "
        f"{fmt_time(overhead['1 worker']['least_call_with_1_chunk_s'])}, o2 "
        f"{fmt_time(overhead['2 workers']['least_call_with_a_chunk_per_worker_s'])}): "
        + ", ".join(f"{k} {v:.2f}" for k, v in out.items()))
    return out


def run(cfg, log=print, n=N):
    """Each backend in turn, selected here and in the workers."""
    import tangentia as tg
    from _harness import tg_backends
    results = {}
    for name, how in tg_backends():
        backend = name if how == "backend=" else None
        if backend is not None:
            tg.config.update("jit_backend", backend)
        try:
            log(f"  backend {name}: sweep of {n} pendulum gradients")
            results[name] = run_backend(cfg, log, backend, n)
        finally:
            if backend is not None:
                tg.config.update("jit_backend", None)
    return {"title": TITLE, "cpus": os.cpu_count(), "n": n, "backends": results}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="short timings (smoke test)")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--backends", help="comma-separated jit backends (default: all available)")
    p.add_argument("--n", type=int, default=N, help=f"solves in the sweep (default {N})")
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
    res = run(QUICK if a.quick else FULL, n=a.n)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
