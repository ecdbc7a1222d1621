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
import warnings
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
    guard_wait: float = 0.0  # > 0: redo rounds disturbed by other processes
    #                                (see measure_interleaved)
    busy_threshold: float = 0.2  # cores used by other processes above which a round is disturbed
    min_runs: int = 3        # timed runs of an implementation too slow for ``repeats`` runs
    slow_factor: float = 2.0  # ... which may take up to slow_factor * budget seconds


FULL = Config()
QUICK = Config(budget=0.15, repeats=3, settle=0.02, quick=True, min_runs=2)

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


def calibrate(fn, cfg: Config, first_s=None):
    """Warm ``fn`` up; return ``(calls per timed run, rounds, seconds per call)``.

    ``first_s`` is the duration of the call just made (if any).  One warm-up
    call, then the loop is doubled until it takes >= 20 ms (or one run's share
    of the budget); the calls per run are chosen so that ``cfg.repeats`` runs
    take about ``cfg.budget`` seconds (at least 1 call).  A function slower
    than that gets fewer rounds (at least ``cfg.min_runs``), so that it costs
    at most ``cfg.slow_factor * cfg.budget`` seconds.
    """
    target_run = cfg.budget / cfg.repeats
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    n = 1
    while dt < min(0.02, target_run) and n < 1 << 20:
        n = n * 2 if n > 1 or dt == 0 else max(2, int(0.02 / dt))
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
    if n > 1:  # a second loop of the same length: one slow call must not skew the estimate
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = min(dt, time.perf_counter() - t0)
    per_call = dt / n
    calls = max(1, int(round(target_run / per_call))) if per_call > 0 else 1
    rounds = cfg.repeats
    if calls == 1 and per_call * cfg.repeats > cfg.slow_factor * cfg.budget:
        rounds = max(cfg.min_runs, int(cfg.slow_factor * cfg.budget / per_call))
    return calls, min(rounds, cfg.repeats), per_call


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
    A slow function takes part in the first rounds only (its paired ratios
    use those rounds).  Returns one :func:`summarize` dict per function.
    """
    plan = []
    for fn in fns:
        gc.collect()
        time.sleep(cfg.settle)
        plan.append(calibrate(fn, cfg))
    runs = [[] for _ in fns]
    idx = list(range(len(fns)))
    loads, discarded = [], 0
    guard_deadline = time.perf_counter() + 3 * cfg.guard_wait
    r = 0
    while r < cfg.repeats:
        mon = CpuMonitor()
        this = {}
        for i in (idx if r % 2 == 0 else idx[::-1]):
            calls, rounds, _ = plan[i]
            if r >= rounds:
                continue
            time.sleep(cfg.settle)
            this[i] = timed_run(fns[i], calls)
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
    out = [summarize(rs, p[0]) for rs, p in zip(runs, plan)]
    for o in out:
        o["rounds_discarded_busy"] = discarded
        o["others_cores_per_round"] = loads
    return out


def paired_ratio(a, b):
    """Median over the common rounds of ``a``'s run time / ``b``'s run time."""
    return statistics.median(x / y for x, y in zip(a["runs_s"], b["runs_s"]))


# ---------------------------------------------------------------------------
# Implementations of one workload


@dataclass
class Impl:
    key: str                      # unique in its workload: "tangentia[numba]", "jax", ...
    label: str                    # what exactly is measured, e.g. "jax.jit(jax.grad)"
    build: Callable[[], Callable[[], Any]]   # returns a zero-argument function to time
    requires: str | None = None   # optional peer module this needs
    role: str = "peer"            # "tangentia", "peer", "reference" or "context"
    check: bool = True            # compare the output with the reference output
    extra: dict = field(default_factory=dict)
    # Ratios reported for this entry: its time / the time of each of these keys.
    # None: a "tangentia" entry gets one per peer, others none.
    ratio_to: list | None = None
    check_against: str | None = None   # key whose output this must match (default: first tangentia)
    rtol: float | None = None          # tolerances of that check (default: run_impls's)
    atol: float | None = None


def _short_exc(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def run_impls(impls, cfg: Config, rtol=1e-8, atol=1e-10, targets=None, log=print,
              outputs=None):
    """Build, check and time each implementation; returns a list of entry dicts.

    Every entry gets ``ratios`` (``{other key: paired ratio}``, see
    :class:`Impl.ratio_to`); a peer entry also gets ``ratio`` (the first
    tangentia entry's time / its time), as before.  ``targets`` maps a peer key
    (for the first tangentia entry) or ``"tangentia key/other key"`` to the
    maximum allowed ratio.  Implementations are timed interleaved (see
    :func:`measure_interleaved`).  ``outputs``, if given, is a dict that
    receives every implementation's first output (flattened NumPy arrays).
    """
    targets = targets or {}
    entries = []
    ready = []  # (entry, fn)
    outputs = {} if outputs is None else outputs
    first_tg = None
    for impl in impls:
        e = {"impl": impl.key, "label": impl.label, "role": impl.role, "metric": "time"}
        e.update(impl.extra)
        entries.append(e)
        if impl.requires:
            mod, reason = peer(impl.requires)
            if mod is None:
                e.update(status="n/a", reason=reason)
                log(f"    {impl.label:<56} n/a ({reason})")
                continue
        stage = "building"
        try:
            # Warnings of the first call are kept: a backend that falls back to
            # another one says so with a warning, and the row must show it.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fn = impl.build()
                stage = "first call"
                t0 = time.perf_counter()
                out = fn()
                e["first_call_s"] = time.perf_counter() - t0
            if caught:
                e["warnings"] = sorted({f"{w.category.__name__}: {w.message}"[:300]
                                        for w in caught})
                for w in e["warnings"]:
                    log(f"    {impl.label:<56} warning: {w}")
            arrays = to_numpy_leaves(out)
        except Exception as ex:  # noqa: BLE001
            status = "skipped" if impl.role == "tangentia" else "error"
            e.update(status=status, reason=f"{stage} failed: {_short_exc(ex)}",
                     traceback=traceback.format_exc(limit=6))
            log(f"    {impl.label:<56} {status.upper()}: {e['reason']}")
            continue
        outputs[impl.key] = arrays
        if impl.role == "tangentia" and first_tg is None:
            first_tg = impl.key
        against = impl.check_against or first_tg
        if impl.check and against != impl.key:
            if against not in outputs:
                e["agreement"] = f"not checked (no output of {against})"
            else:
                rt = rtol if impl.rtol is None else impl.rtol
                at = atol if impl.atol is None else impl.atol
                msg = check_close(outputs[against], arrays, rt, at)
                if msg is not None:
                    e.update(status="mismatch", reason=f"disagrees with {against}: {msg}")
                    log(f"    {impl.label:<56} MISMATCH, not timed: {msg}")
                    continue
                e["agreement"] = (f"allclose to {against} (max abs diff "
                                  f"{max_abs_diff(outputs[against], arrays):.2g})")
        log(f"    {impl.label:<56} first call {fmt_time(e['first_call_s']):>9}"
            + (f", {e['agreement']}" if "agreement" in e else ""))
        ready.append((e, fn))
    try:
        stats = measure_interleaved([fn for _, fn in ready], cfg)
    except Exception as ex:  # noqa: BLE001
        for e, _ in ready:
            e.update(status="error", reason=f"timing failed: {_short_exc(ex)}")
        log(f"    timing failed: {_short_exc(ex)}")
        stats = []
    for (e, _), st in zip(ready, stats):
        e.update(st)
        e["status"] = "ok"
    ok = {e["impl"]: e for e in entries if e.get("status") == "ok"}
    peers = [e["impl"] for e in entries if e["role"] == "peer"]
    for impl, e in zip(impls, entries):
        if e.get("status") != "ok":
            continue
        wanted = impl.ratio_to if impl.ratio_to is not None else (
            peers if impl.role == "tangentia" else [])
        e["ratios"] = {k: paired_ratio(e, ok[k]) for k in wanted if k in ok}
        if e["role"] == "peer" and first_tg in ok:
            # Paired ratio: tangentia's run and the peer's run of the same round
            # are close in time, so machine-speed drift cancels in their ratio.
            e["ratio"] = paired_ratio(ok[first_tg], e)
            e["ratio_of_medians"] = ok[first_tg]["median_s"] / e["median_s"]
        rs = ", ".join(f"/{k} = {_fmt_ratio(v)}" for k, v in e["ratios"].items())
        log(f"    {e['label']:<56} {fmt_time(e['median_s']):>10} per call"
            + (f"   {rs}" if rs else ""))
    for spec, limit in targets.items():
        tg_key, _, other = spec.rpartition("/")
        tg_key = tg_key or first_tg
        e = next((x for x in entries if x["impl"] == tg_key), None)
        if e is None:
            continue
        e.setdefault("targets", {})[other] = {
            "max_ratio": limit,
            "met": (e["ratios"][other] <= limit) if other in e.get("ratios", {}) else None}
        if not spec.count("/"):  # the old form: recorded on the peer's entry too
            pe = next((x for x in entries if x["impl"] == other), None)
            if pe is not None:
                pe["target"] = limit
                pe["target_met"] = e["targets"][other]["met"]
    return entries


def _fmt_ratio(r):
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


# ---------------------------------------------------------------------------
# tangentia's jit backends


_BACKENDS = None
SELECTED_BACKENDS = None  # run.py --backends


def tg_backends():
    """The jit backends to measure, as ``[(name, how)]``.

    ``how`` is ``"backend="`` when ``jit(f, backend=name)`` selects it, or
    ``"default"`` when this tangentia's ``jit`` has no working ``backend=``
    (then the one default backend is measured, under its name).  An unknown
    backend name must raise; if it does not, ``backend=`` is being ignored.
    """
    global _BACKENDS
    if _BACKENDS is None:
        import tangentia as tg
        try:
            from tangentia.compiler import backend as B
            names = list(B.available_backends())
            default = B.default_backend_name()
        except Exception:  # noqa: BLE001 - older tangentia: one NumPy backend
            names, default = [], "numpy"
        accepts = False
        try:
            tg.jit(lambda x: x, backend="no-such-backend")(1.0)
        except (ValueError, KeyError):
            accepts = True
        except TypeError:
            accepts = False
        if accepts and names:
            _BACKENDS = [(n, "backend=") for n in names]
        else:
            _BACKENDS = [(default, "default")]
    if SELECTED_BACKENDS:
        chosen = [b for b in _BACKENDS if b[0] in SELECTED_BACKENDS]
        return chosen or _BACKENDS[:1]
    return list(_BACKENDS)


def jit_targets(targets):
    """``targets`` (``{peer key: max ratio}``) for every measured jit backend,
    in the ``"tangentia[backend]/peer"`` form :func:`run_impls` takes.  The
    issues' targets are for the default (compiling) backend; the NumPy
    backend's rows show the same limit for comparison."""
    return {f"tangentia[{b}]/{peer_key}": limit for b, _ in tg_backends()
            for peer_key, limit in targets.items()}


def backend_note():
    """One line saying which backends were measured and how they were selected."""
    bs = tg_backends()
    if bs[0][1] == "default":
        return (f"tangentia jit backend: {bs[0][0]} (the default; this jit has no working "
                "backend= option, so no other backend could be measured)")
    return "tangentia jit backends measured: " + ", ".join(n for n, _ in bs)


def tg_jit(f, backend, **kw):
    """``tg.jit(f, backend=backend)`` (or plain ``tg.jit(f)`` without ``backend=``)."""
    import tangentia as tg
    name, how = backend
    return tg.jit(f, backend=name, **kw) if how == "backend=" else tg.jit(f, **kw)


def in_backend(backend, fn):
    """``fn`` wrapped so that eager control flow runs on ``backend`` during each call
    (``config.update("jit_backend", ...)``, else the environment variable)."""
    import tangentia as tg
    name, how = backend
    if how != "backend=":
        return fn
    try:
        tg.config.update("jit_backend", None)
        use_config = True
    except Exception:  # noqa: BLE001 - no config option yet: the environment variable
        use_config = False

    def call():
        if use_config:
            tg.config.update("jit_backend", name)
            try:
                return fn()
            finally:
                tg.config.update("jit_backend", None)
        old = os.environ.get("TANGENTIA_JIT_BACKEND")
        os.environ["TANGENTIA_JIT_BACKEND"] = name
        try:
            return fn()
        finally:
            if old is None:
                del os.environ["TANGENTIA_JIT_BACKEND"]
            else:
                os.environ["TANGENTIA_JIT_BACKEND"] = old
    return call


def tg_impls(key, label, make, backends=None, **kw):
    """One tangentia :class:`Impl` per backend: ``make(backend)`` returns the
    zero-argument function; ``{backend}`` in ``label`` is the backend's name and
    keys are ``key[name]``.  ``kw`` goes to every :class:`Impl` (role defaults
    to "tangentia")."""
    kw.setdefault("role", "tangentia")
    return [Impl(f"{key}[{b[0]}]", label.format(backend=b[0]), (lambda b=b: make(b)), **kw)
            for b in (backends or tg_backends())]


# ---------------------------------------------------------------------------
# Fresh processes


def run_fresh(code, timeout=300, env=None):
    """Run Python ``code`` in a fresh interpreter (same CPU affinity and thread
    limits) and return the JSON object it prints on its last stdout line."""
    import json
    import subprocess
    full_env = dict(os.environ)
    full_env.update(env or {})
    here = os.path.dirname(os.path.abspath(__file__))
    full_env["PYTHONPATH"] = os.pathsep.join(
        [here, os.path.dirname(here)] + [p for p in [full_env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=full_env)
    if proc.returncode != 0:
        raise RuntimeError(f"fresh process failed ({proc.returncode}): "
                           + (proc.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt_time(s):
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"
