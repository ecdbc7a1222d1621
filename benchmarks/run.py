#!/usr/bin/env python
"""Run the tangentia benchmark suite and print a table.

    python benchmarks/run.py                    # everything (a few minutes)
    python benchmarks/run.py --quick            # short timings, for a smoke test
    python benchmarks/run.py --only ode,scan    # some workloads (names, prefixes or groups)
    python benchmarks/run.py --only eager       # a group: eager, jit, ode (see --list)
    python benchmarks/run.py --backends numba   # tangentia jit backends to measure
    python benchmarks/run.py --threads 0        # library defaults instead of one pinned core
    python benchmarks/run.py --peers jax        # only some peers ('none': tangentia alone)
    python benchmarks/run.py --wait-idle 60     # shared machine: wait for / re-run on quiet CPU
    python benchmarks/run.py --list             # list workload names and groups

For every workload: the median time per call of tangentia (per jit backend)
and of each peer (JAX with x64, autograd, PyTorch in float64, hand-written
references) and ratios.  RATIO < 1 MEANS TANGENTIA IS FASTER.  Peers are
optional; a missing peer is reported as "n/a".  Every output is checked
against a reference output with np.allclose before it is timed.  By default
the process (and the fresh processes it starts) is pinned to the least busy
core with every library on one thread.  Machine-readable results go to
benchmarks/results.json (or --json PATH; --no-json for none);
``render_results.py`` turns them into RESULTS.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(1, ROOT)  # run against this checkout even if tangentia is not installed

import _cpu  # noqa: E402  (imports nothing numerical)

# Steady-state workloads time the native code: jit compiles before the first call here
# (untiered), so no timing round can catch a program still on the NumPy tier.  The cold
# first call, tiered as users get it, is bench_cold.py's.
os.environ.setdefault("TANGENTIA_JIT_TIERED", "0")

# NumPy, tangentia and the peers are imported only after the command line is
# parsed, because the thread limits must take effect before any BLAS library loads.
np = _harness = fmt_time = None
WORKLOADS = []
MODULES = ["w1_eager_grad", "w7_jit_dispatch", "bench_custom_rules", "w6_chain_jit",
           "w2_mlp_sgd", "w3_per_example", "w4_hvp", "w5_memory", "bench_scan",
           "bench_sigmoid", "bench_ode"]
WORKLOAD_NAMES = ["eager_grad", "jit_dispatch", "custom_rules", "chain_jit", "mlp_sgd",
                  "per_example_grads", "hvp", "memory", "scan", "sigmoid", "ode"]
GROUPS = {
    "eager": ["eager_grad", "jit_dispatch", "custom_rules"],
    "jit": ["chain_jit", "mlp_sgd", "per_example_grads", "hvp", "memory", "scan", "sigmoid"],
    "ode": ["ode"],
}


def load():
    global np, _harness, fmt_time, WORKLOADS
    import importlib

    import numpy
    import _harness as h
    np, _harness, fmt_time = numpy, h, h.fmt_time
    WORKLOADS = [importlib.import_module(m) for m in MODULES]
    assert [w.NAME for w in WORKLOADS] == WORKLOAD_NAMES


def apply_threads(n):
    """Limit every library to ``n`` threads on ``n`` cores (before they load); see _cpu.pin."""
    return _cpu.pin(n)


RATIO_NOTE = ("ratio = this time / the other's time (tangentia / peer): ratio < 1 means "
              "tangentia is faster (median over rounds of the paired ratio)")


def source_digest(path):
    """A short digest of tangentia's .py sources, to tell which code was measured."""
    import hashlib
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                full = os.path.join(dirpath, fn)
                h.update(os.path.relpath(full, path).encode())
                with open(full, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()[:16]


def machine_info():
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {
        "nproc": os.cpu_count(),
        "cpu": cpu or platform.processor() or "unknown",
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    try:
        import tangentia
        info["tangentia"] = getattr(tangentia, "__version__", "unknown")
        info["tangentia_path"] = os.path.dirname(tangentia.__file__)
        info["tangentia_source_sha256"] = source_digest(info["tangentia_path"])
    except Exception as e:  # noqa: BLE001
        info["tangentia"] = f"import failed: {e}"
    info.update(_harness.peer_versions())
    torch, _ = _harness.peer("torch")
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
    if hasattr(os, "sched_getaffinity"):
        info["cpus_allowed"] = len(os.sched_getaffinity(0))
    try:
        import threadpoolctl
        info["blas"] = [{"api": p.get("internal_api"), "threads": p.get("num_threads")}
                        for p in threadpoolctl.threadpool_info()]
    except Exception:  # noqa: BLE001
        pass
    return info


def select(only):
    if not only:
        return WORKLOADS
    chosen = []
    for name in only.split(","):
        name = name.strip()
        names = GROUPS.get(name, [name])
        hits = [w for w in WORKLOADS if w.NAME in names] or \
               [w for w in WORKLOADS if w.NAME.startswith(name) or name in w.NAME]
        if not hits:
            raise SystemExit(f"unknown workload {name!r}; known: "
                             + ", ".join(w.NAME for w in WORKLOADS)
                             + "; groups: " + ", ".join(GROUPS))
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def sections(res):
    """The (title, entries, notes) tables of one workload's result."""
    return res.get("sections") or [res]


def all_entries(res):
    return [e for sec in sections(res) for e in sec.get("entries", [])]


# ---------------------------------------------------------------------------
# Table


def _status_cell(e):
    st = e.get("status")
    if st == "ok":
        return None
    if st == "n/a":
        return "n/a"
    return st.upper() if st else "?"


def _fmt_ratio(r):
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


def _ratios_cell(e):
    return ", ".join(f"/{k} {_fmt_ratio(v)}" for k, v in (e.get("ratios") or {}).items())


def _targets_cell(e):
    out = []
    for other, t in (e.get("targets") or {}).items():
        verdict = {True: "met", False: "MISSED", None: "not measured"}[t["met"]]
        out.append(f"/{other} <= {t['max_ratio']:.2g}: {verdict}")
    return "; ".join(out)


W_LABEL = 60


def _entry_lines(e):
    label = "  " + e["label"]
    bad = _status_cell(e)
    if bad:
        lines = [f"{label:<{W_LABEL}} {bad:>11}"]
        if e.get("reason"):
            lines.append(f"{'':<6}reason: {e['reason']}")
        return lines
    metric = e.get("metric")
    if metric == "memory":
        cell = f"peak = {e['peak_arrays']:.2f} arrays"
        if e.get("ideal_arrays") is not None:
            cell += f" (ideal {e['ideal_arrays']:.0f})"
        tgt = ""
        if "target" in e:
            tgt = f"<= {e['target']:g} arrays: " + ("met" if e.get("target_met") else "MISSED")
        return [f"{label:<{W_LABEL}} {cell:<34} {_ratios_cell(e)}  {tgt}".rstrip()]
    if metric == "first_call":
        cell = f"first call {fmt_time(e['first_s']):>9} (import {fmt_time(e['import_s'])})"
        return [f"{label:<{W_LABEL}} {cell:<34} {_ratios_cell(e)}".rstrip()]
    rc = f"{len(e['runs_s'])} x {e['calls_per_run']}"
    line = (f"{label:<{W_LABEL}} {fmt_time(e['median_s']):>11} {fmt_time(e['min_s']):>10} "
            f"{100 * e['spread']:>5.0f}% {fmt_time(e.get('first_call_s')):>9} {rc:>10}  "
            f"{_ratios_cell(e)}")
    tg = _targets_cell(e)
    return [line.rstrip() + (f"  [{tg}]" if tg else "")] + [
        f"{'':<6}warning (first call): {w}" for w in e.get("warnings", [])]


def format_table(results):
    hdr = (f"{'workload / implementation':<{W_LABEL}} {'median/call':>11} {'min':>10} "
           f"{'spread':>6} {'1st call':>9} {'runs x n':>10}  ratios (this / other)")
    lines = [RATIO_NOTE,
             "spread = (slowest run - fastest run) / median; min = fastest run; "
             "ratios are medians of per-round ratios",
             "", hdr, "-" * (len(hdr) + 20)]
    for res in results.values():
        secs = sections(res)
        for sec in secs:
            lines.append(sec["title"])
            for e in sec.get("entries", []):
                lines.extend(_entry_lines(e))
            for n in sec.get("notes", []) if sec is not res else []:
                lines.append(f"  note: {n}")
            if sec is not res:
                lines.append("")
        for n in res.get("notes", []):
            lines.append(f"  note: {n}")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------


def _early_threads(argv):
    """The --threads value, read before argparse (pinning precedes every import)."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    threads = _early_threads(argv)
    pinned = apply_threads(threads) if threads else None
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="short timings (about 0.15 s per measurement, 3 runs) instead of "
                         "about 2 s in 15 interleaved runs")
    ap.add_argument("--only", metavar="NAMES",
                    help="comma-separated workload names, prefixes or groups ("
                         + ", ".join(GROUPS) + "): " + ", ".join(WORKLOAD_NAMES))
    ap.add_argument("--threads", type=int, default=1, metavar="N",
                    help="pin the process to the N least busy cores and every library to N "
                         "threads (default 1; 0: each library's own default)")
    ap.add_argument("--backends", metavar="LIST",
                    help="comma-separated tangentia jit backends to measure (default: all "
                         "that this tangentia offers)")
    ap.add_argument("--json", metavar="PATH", default=os.path.join(HERE, "results.json"),
                    help="where to write machine-readable results (default: %(default)s)")
    ap.add_argument("--no-json", action="store_true", help="do not write a JSON file")
    ap.add_argument("--peers", default="jax,autograd,torch", metavar="LIST",
                    help="comma-separated peers to compare with, or 'none' "
                         "(default: %(default)s; a peer that is not installed shows as n/a)")
    ap.add_argument("--list", action="store_true", help="list the workloads and exit")
    ap.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                    help="for shared machines: before each workload, wait up to SECONDS for "
                         "other processes to stop using the CPU, and re-run timing rounds "
                         "during which they used it (default: do not wait)")
    args = ap.parse_args(argv)
    load()
    wanted = {p.strip() for p in args.peers.split(",") if p.strip() and p.strip() != "none"}
    unknown = wanted - {"jax", "autograd", "torch"}
    if unknown:
        raise SystemExit(f"unknown peer(s) {sorted(unknown)}; known: jax, autograd, torch")
    _harness.DISABLED.update({"jax", "autograd", "torch"} - wanted)
    if args.threads:
        _harness.TORCH_THREADS = args.threads
    if args.backends:
        _harness.SELECTED_BACKENDS = [b.strip() for b in args.backends.split(",") if b.strip()]
    if args.list:
        for w in WORKLOADS:
            print(f"{w.NAME:<20} {w.TITLE}")
        for g, names in GROUPS.items():
            print(f"group {g:<14} {', '.join(names)}")
        return 0
    cfg = _harness.QUICK if args.quick else _harness.FULL
    if args.wait_idle > 0:
        cfg = _harness.replace(cfg, guard_wait=min(args.wait_idle, 60.0))
    chosen = select(args.only)

    t_start = time.perf_counter()
    info = machine_info()
    info["threads_option"] = args.threads or "library defaults"
    if pinned is not None:
        info["pinned_cpus"] = pinned
    try:
        info["jit_backends"] = [f"{n} ({how})" for n, how in _harness.tg_backends()]
    except Exception as e:  # noqa: BLE001 - tangentia itself may not import
        info["jit_backends"] = f"unknown: {e!r}"
    print(f"tangentia benchmarks, {datetime.date.today().isoformat()}, "
          f"{'quick' if cfg.quick else 'full'} mode "
          f"(~{cfg.budget:g} s and {cfg.repeats} runs per measurement; median run reported)")
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()
                                  if k not in ("blas", "tangentia_path")))
    print(RATIO_NOTE)
    print()
    results = {}
    for w in chosen:
        print(f"[{w.NAME}] {w.TITLE}")
        if args.wait_idle > 0:
            _harness.wait_for_idle(args.wait_idle)
        t0 = time.perf_counter()
        mon = _harness.CpuMonitor()
        try:
            res = w.run(cfg)
        except Exception as e:  # noqa: BLE001 - one broken workload must not stop the others
            import traceback
            traceback.print_exc()
            res = {"title": w.TITLE, "entries": [], "notes": [f"workload crashed: {e!r}"]}
        res["wall_s"] = time.perf_counter() - t0
        res["other_processes_cores"] = mon.others_cores()  # whole workload, incl. compiling
        # What matters is the load during the timed rounds (when there are any).
        timed = [e for e in all_entries(res) if e.get("status") == "ok" and "runs_s" in e]
        kept = [x for e in timed[:1] for x in e["others_cores_per_round"] if x is not None]
        if kept:
            others = sum(kept) / len(kept)
            where = f"on average during the timed rounds (worst round {max(kept):.2f})"
            if timed[0]["rounds_discarded_busy"]:
                res.setdefault("notes", []).append(
                    f"{timed[0]['rounds_discarded_busy']} timing round(s) re-run because other "
                    "processes used the CPU during them (--wait-idle)")
        elif any(e.get("metric") == "time" for e in all_entries(res)):
            others, where = res["other_processes_cores"], "on average"
        else:
            others, where = None, ""  # memory only: not sensitive to other processes
        res["other_processes_cores_timed"] = others
        if others is not None and others > cfg.busy_threshold:
            res.setdefault("notes", []).append(
                f"WARNING: other processes used {others:.2f} of {os.cpu_count()} cores {where} "
                "while this workload was measured; its timings are unreliable")
            print(f"    warning: other processes used {others:.2f} cores {where}")
        print(f"    ({res['wall_s']:.1f} s)")
        results[w.NAME] = res
        print()
    total = time.perf_counter() - t_start

    print("=" * 120)
    print(format_table(results))
    print(f"total wall time {total:.1f} s")

    if args.no_json:
        return 0
    doc = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "mode": "quick" if cfg.quick else "full",
        "config": {"budget_s": cfg.budget, "repeats": cfg.repeats, "settle_s": cfg.settle,
                   "min_runs": cfg.min_runs, "slow_factor": cfg.slow_factor,
                   "guard_wait_s": cfg.guard_wait, "wait_idle_s": args.wait_idle},
        "command": "python benchmarks/run.py " + " ".join(argv),
        "ratio": RATIO_NOTE,
        "machine": info,
        "total_wall_s": total,
        "workloads": results,
    }
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1, default=_json_default)
    print(f"wrote {args.json}")
    return 0


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    return str(o)


if __name__ == "__main__":
    sys.exit(main())
