"""Pinning a benchmark process to cores, before any numerical library loads.

The machine the suite runs on is small and shared, so every benchmark
process runs on one core by default: the BLAS/OpenMP/numba thread-count
variables are set to the number of cores and the process's CPU affinity is
restricted to the least busy allowed cores (sampled from ``/proc/stat``).
Child processes (the fresh-process first-call and memory measurements)
inherit both.  This module imports nothing heavy, so it can run first.
"""
from __future__ import annotations

import os
import sys
import time

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")


def _per_cpu_busy():
    """``{cpu: busy jiffies}`` from /proc/stat (empty if unavailable)."""
    out = {}
    try:
        with open("/proc/stat") as f:
            for line in f:
                if not line.startswith("cpu") or line.startswith("cpu "):
                    continue
                name, *vals = line.split()
                vals = [int(v) for v in vals]
                idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
                out[int(name[3:])] = sum(vals[:8]) - idle
    except (OSError, ValueError):
        pass
    return out


def least_busy_cpus(n, window=0.3):
    """The ``n`` allowed CPUs that other processes used least over ``window`` seconds."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) <= n:
        return allowed
    a = _per_cpu_busy()
    time.sleep(window)
    b = _per_cpu_busy()
    load = {c: b.get(c, 0) - a.get(c, 0) for c in allowed}
    return sorted(sorted(allowed, key=lambda c: (load[c], -c))[:n])


def pin(n=1):
    """Limit every library to ``n`` threads on the ``n`` least busy cores.

    Returns the CPUs pinned to (``None`` where affinity is unsupported).
    ``n = 0`` leaves the libraries' defaults alone.
    """
    if not n:
        return None
    if "numpy" in sys.modules:
        print("warning: numpy was imported before the thread limit was applied", file=sys.stderr)
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    # XLA's CPU client sizes its pools from the affinity mask; Eigen's
    # intra-op pool is switched off explicitly as well.
    flags = os.environ.get("XLA_FLAGS", "")
    if n == 1 and "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1").strip()
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = least_busy_cpus(n)
    os.sched_setaffinity(0, cpus)
    return cpus
