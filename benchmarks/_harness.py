"""Shared machinery for the benchmark suite: optional peers, timing,
numerical agreement checks and result records.

Every workload module defines ``NAME``, ``TITLE`` and ``run(cfg) -> dict``.
A workload builds a list of :class:`Impl` (tangentia first, then the peers)
and hands it to :func:`run_impls`, which

* marks a peer "n/a" when it is not installed (the peers are optional extras),
* runs each implementation once (the first call, which includes tracing and
  compilation for jit, is timed separately),
* checks that every peer's output agrees with tangentia's (``np.allclose``),
  so that the same computation is being compared,
* times the implementation with :func:`measure`.

A failure of tangentia itself is reported as "skipped" with the reason; it is
never worked around.
"""
from __future__ import annotations

import gc
import importlib
import os
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field, replace  # noqa: F401 (replace used by run.py)
from typing import Any, Callable

import numpy as np

# ---------------------------------------------------------------------------
# Configuration


@dataclass
class Config:
    budget: float = 2.0      # seconds spent timing one implementation of one workload
    repeats: int = 15        # timed runs (rounds) per measurement; the median run is reported
    settle: float = 0.1      # pause before each timed run (lets spinning thread pools park)
    quick: bool = False
    guard_wait: float = 0.0  # > 0: redo rounds disturbed by other processes (see measure_interleaved)
    busy_threshold: float = 0.2  # cores used by other processes above which a round is disturbed


FULL = Config()
QUICK = Config(budget=0.15, repeats=3, settle=0.02, quick=True)

# ---------------------------------------------------------------------------
# Optional peers

_PEERS: dict[str, Any] = {}
TORCH_THREADS = None  # set by run.py --threads
DISABLED: set[str] = set()  # peers turned off with run.py --peers


def peer(name):
    """Return ``(module, None)`` for an installed peer or ``(None, reason)``.

    ``name`` is one of "jax", "autograd", "torch".  JAX is switched to float64
    (``jax_enable_x64``) and torch's default dtype to float64 on first import.
    """
    if name in _PEERS:
        return _PEERS[name]
    if name in DISABLED:
        return None, f"{name} disabled (--peers)"
    try:
        if name == "jax":
            mod = importlib.import_module("jax")
            mod.config.update("jax_enable_x64", True)
            importlib.import_module("jax.numpy")
        elif name == "autograd":
            mod = importlib.import_module("autograd")
            importlib.import_module("autograd.numpy")
        elif name == "torch":
            mod = importlib.import_module("torch")
            mod.set_default_dtype(mod.float64)
            if TORCH_THREADS:
                mod.set_num_threads(TORCH_THREADS)
            importlib.import_module("torch.func")
        else:
            raise ValueError(name)
        res = (mod, None)
    except Exception as e:  # noqa: BLE001 - any import failure makes the peer "n/a"
        res = (None, f"{name} not importable ({type(e).__name__}: {e})")
    _PEERS[name] = res
    return res


def peer_versions():
    out = {}
    for name in ("jax", "autograd", "torch"):
        mod, _ = peer(name)
        if mod is None:
            out[name] = None
            continue
        ver = getattr(mod, "__version__", None)
        if ver is None:
            try:
                from importlib.metadata import version
                ver = version(name)
            except Exception:  # noqa: BLE001
                ver = "unknown"
        out[name] = ver
        if name == "jax":
            try:
                import jaxlib
                out["jaxlib"] = jaxlib.__version__
            except Exception:  # noqa: BLE001
                pass
    return out


# ---------------------------------------------------------------------------
# Converting outputs for comparison


def to_numpy_leaves(x):
    """Flatten nested lists/tuples/dicts of numpy/jax/torch arrays to numpy arrays."""
    out = []

    def rec(v):
        if isinstance(v, (list, tuple)):
            for a in v:
                rec(a)
        elif isinstance(v, dict):
            for k in sorted(v):
                rec(v[k])
        elif type(v).__module__.startswith("torch"):
            out.append(v.detach().cpu().numpy())
        else:
            out.append(np.asarray(v))

    rec(x)
    return out


def check_close(ref, got, rtol, atol):
    """Return None if the two flattened outputs agree, else a message."""
    if len(ref) != len(got):
        return f"output has {len(got)} arrays, tangentia's has {len(ref)}"
    for i, (a, b) in enumerate(zip(ref, got)):
        if a.shape != b.shape:
            return f"output {i}: shape {b.shape} vs tangentia's {a.shape}"
        if not np.allclose(a, b, rtol=rtol, atol=atol):
            err = float(np.max(np.abs(a - b)))
            return f"output {i}: max abs difference {err:.3g} (rtol={rtol}, atol={atol})"
    return None


def max_abs_diff(ref, got):
    return max((float(np.max(np.abs(a - b))) if a.size else 0.0) for a, b in zip(ref, got))


# ---------------------------------------------------------------------------
# Other processes competing for the CPU


class CpuMonitor:
    """CPU time used by *other* processes while a workload runs (Linux only).

    The machine's busy time from /proc/stat minus this process's own CPU
    time, in cores: 0 on a quiet machine, up to nproc when other programs
    compete for every core.  Results measured under load are unreliable.
    """

    def __init__(self):
        self.start = self._sample()

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                parts = f.readline().split()[1:]
            vals = [int(v) for v in parts]
            idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
            busy = sum(vals[:8]) - idle  # user..steal, without guest (already in user)
            hz = os.sysconf("SC_CLK_TCK")
            return busy / hz, time.perf_counter(), time.process_time()
        except (OSError, ValueError, IndexError):
            return None

    def others_cores(self):
        end = self._sample()
        if self.start is None or end is None:
            return None
        busy = end[0] - self.start[0]
        wall = end[1] - self.start[1]
        own = end[2] - self.start[2]
        return max(0.0, (busy - own) / wall) if wall > 0 else None


def wait_for_idle(max_wait, threshold=0.15, window=3.0, quiet=False):
    """Wait (at most ``max_wait`` s) until other processes use < ``threshold`` cores."""
    deadline = time.perf_counter() + max_wait
    while True:
        mon = CpuMonitor()
        time.sleep(window)
        load = mon.others_cores()
        if load is None or load < threshold:
            return load
        if time.perf_counter() > deadline:
            if not quiet:
                print(f"warning: machine still busy ({load:.2f} cores used by other "
                      f"processes) after waiting {max_wait:g} s; starting anyway",
                      file=sys.stderr)
            return load
        if not quiet:
            print(f"waiting for an idle machine: other processes use {load:.2f} cores",
                  flush=True)


# ---------------------------------------------------------------------------
# Timing


def calibrate(fn, cfg: Config):
    """Warm ``fn`` up and return the number of calls per timed run.

    Two warm-up calls, then the loop is doubled until it takes >= 20 ms (or
    one run's share of the budget); the calls per run are chosen so that
    ``cfg.repeats`` runs take about ``cfg.budget`` seconds (at least 1 call).
    """
    fn()
    fn()
    target_run = cfg.budget / cfg.repeats
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min(0.02, target_run) or n >= 1 << 20:
            break
        n *= 2
    per_call = dt / n
    return max(1, int(round(target_run / per_call))) if per_call > 0 else 1


def timed_run(fn, calls):
    """Seconds per call of one run of ``calls`` back-to-back calls."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def summarize(runs, calls):
    med = statistics.median(runs)
    return {
        "median_s": med,
        "min_s": min(runs),
        "max_s": max(runs),
        "spread": (max(runs) - min(runs)) / med if med > 0 else 0.0,
        "runs_s": list(runs),
        "calls_per_run": calls,
    }


def measure_interleaved(fns, cfg: Config):
    """Time several zero-argument functions fairly on a noisy machine.

    Each function is calibrated (see :func:`calibrate`); then ``cfg.repeats``
    rounds are run, and in each round every function gets one timed run (the
    order alternates between rounds, with a short pause before each run so
    that thread pools spinning from the previous library can park).  Slow
    drifts of the machine's speed therefore hit all implementations alike.
    Returns one :func:`summarize` dict per function.
    """
    calls = []
    for fn in fns:
        gc.collect()
        time.sleep(cfg.settle)
        calls.append(calibrate(fn, cfg))
    runs = [[] for _ in fns]
    idx = list(range(len(fns)))
    loads, discarded = [], 0
    guard_deadline = time.perf_counter() + 3 * cfg.guard_wait
    r = 0
    while r < cfg.repeats:
        mon = CpuMonitor()
        this = {}
        for i in (idx if r % 2 == 0 else idx[::-1]):
            time.sleep(cfg.settle)
            this[i] = timed_run(fns[i], calls[i])
        load = mon.others_cores()
        # With guard_wait, a round during which other processes used the CPU
        # is thrown away and re-run once the machine is quiet again; this stops
        # after 3 * guard_wait seconds, so that a permanently busy machine
        # still finishes (its remaining rounds are kept, and flagged).
        if (cfg.guard_wait > 0 and load is not None and load > cfg.busy_threshold
                and time.perf_counter() < guard_deadline):
            discarded += 1
            wait_for_idle(min(cfg.guard_wait, max(0.0, guard_deadline - time.perf_counter())),
                          threshold=cfg.busy_threshold / 2, window=1.0, quiet=True)
            continue
        for i, t in this.items():
            runs[i].append(t)
        loads.append(load)
        r += 1
    out = [summarize(r, c) for r, c in zip(runs, calls)]
    for o in out:
        o["rounds_discarded_busy"] = discarded
        o["others_cores_per_round"] = loads
    return out


# ---------------------------------------------------------------------------
# Implementations of one workload


@dataclass
class Impl:
    key: str                      # "tangentia", "jax", "autograd", "torch" (or a context name)
    label: str                    # what exactly is measured, e.g. "jax.jit(jax.grad)"
    build: Callable[[], Callable[[], Any]]   # returns a zero-argument function to time
    requires: str | None = None   # optional peer module this needs
    role: str = "peer"            # "tangentia", "peer" (gets a ratio) or "context" (no ratio)
    check: bool = True            # compare the output with tangentia's
    extra: dict = field(default_factory=dict)


def _short_exc(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def run_impls(impls, cfg: Config, rtol=1e-8, atol=1e-10, targets=None, log=print):
    """Build, check and time each implementation; returns a list of entry dicts.

    ``targets`` maps a peer key to the maximum allowed ratio tangentia/peer.
    Implementations are timed interleaved (see :func:`measure_interleaved`).
    """
    targets = targets or {}
    entries = []
    ready = []  # (entry, fn)
    ref = None
    for impl in impls:
        e = {"impl": impl.key, "label": impl.label, "role": impl.role, "metric": "time"}
        e.update(impl.extra)
        entries.append(e)
        if impl.requires:
            mod, reason = peer(impl.requires)
            if mod is None:
                e.update(status="n/a", reason=reason)
                log(f"    {impl.label:<48} n/a ({reason})")
                continue
        stage = "building"
        try:
            fn = impl.build()
            stage = "first call"
            t0 = time.perf_counter()
            out = fn()
            e["first_call_s"] = time.perf_counter() - t0
            arrays = to_numpy_leaves(out)
        except Exception as ex:  # noqa: BLE001
            status = "skipped" if impl.role == "tangentia" else "error"
            e.update(status=status, reason=f"{stage} failed: {_short_exc(ex)}",
                     traceback=traceback.format_exc(limit=6))
            log(f"    {impl.label:<48} {status.upper()}: {e['reason']}")
            continue
        if impl.role == "tangentia":
            ref = arrays
        elif impl.check:
            if ref is None:
                e["agreement"] = "not checked (no tangentia output)"
            else:
                msg = check_close(ref, arrays, rtol, atol)
                if msg is not None:
                    e.update(status="mismatch", reason=f"disagrees with tangentia: {msg}")
                    log(f"    {impl.label:<48} MISMATCH, not timed: {msg}")
                    continue
                e["agreement"] = f"allclose (max abs diff {max_abs_diff(ref, arrays):.2g})"
        log(f"    {impl.label:<48} first call {fmt_time(e['first_call_s']):>9}"
            + (f", {e['agreement']}" if "agreement" in e else ""))
        ready.append((e, fn))
    try:
        stats = measure_interleaved([fn for _, fn in ready], cfg)
    except Exception as ex:  # noqa: BLE001
        for e, _ in ready:
            e.update(status="error", reason=f"timing failed: {_short_exc(ex)}")
        log(f"    timing failed: {_short_exc(ex)}")
        stats = []
    tg = None
    for (e, _), st in zip(ready, stats):
        e.update(st)
        e["status"] = "ok"
        if e["role"] == "tangentia":
            tg = e
    for e, _ in ready:
        if e.get("status") != "ok":
            continue
        if e["role"] == "peer" and tg is not None:
            # Paired ratio: tangentia's run and the peer's run of the same round
            # are close in time, so machine-speed drift cancels in their ratio.
            e["ratio"] = statistics.median(a / b for a, b in zip(tg["runs_s"], e["runs_s"]))
            e["ratio_of_medians"] = tg["median_s"] / e["median_s"]
        log(f"    {e['label']:<48} {fmt_time(e['median_s']):>10} per call"
            + (f"   tangentia/peer = {e['ratio']:.2f}" if "ratio" in e else ""))
    for e in entries:
        if e["impl"] in targets and e["role"] == "peer":
            e["target"] = targets[e["impl"]]
            e["target_met"] = (e["ratio"] <= e["target"]) if "ratio" in e else None
    return entries


def fmt_time(s):
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"
