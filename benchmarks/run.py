#!/usr/bin/env python
"""Run the tangentia benchmark suite in one process and print a table.

    python benchmarks/run.py                 # full run (a minute or two)
    python benchmarks/run.py --quick         # short timings, for a smoke test
    python benchmarks/run.py --only hvp      # one workload (comma-separated names/prefixes)
    python benchmarks/run.py --threads 1     # pin every library to one core
    python benchmarks/run.py --peers jax     # only some peers ('none': tangentia alone)
    python benchmarks/run.py --wait-idle 60  # on a shared machine: wait for / re-run on quiet CPU
    python benchmarks/run.py --list          # list workload names

For every workload: the median time per call of tangentia and of each peer
(JAX with x64, autograd, PyTorch in float64) and the ratio tangentia/peer.
RATIO < 1 MEANS TANGENTIA IS FASTER.  Peers are optional; a missing peer is
reported as "n/a".  Every peer's output is checked against tangentia's with
np.allclose before it is timed.  Machine-readable results go to
benchmarks/results.json (or --json PATH).
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

# NumPy, tangentia and the peers are imported only after the command line is
# parsed, because --threads must take effect before any BLAS library loads.
np = _harness = fmt_time = None
WORKLOADS = []
WORKLOAD_NAMES = ["eager_grad", "mlp_sgd", "per_example_grads", "hvp", "memory"]


def load():
    global np, _harness, fmt_time, WORKLOADS
    import numpy
    import _harness as h
    import w1_eager_grad
    import w2_mlp_sgd
    import w3_per_example
    import w4_hvp
    import w5_memory
    np, _harness, fmt_time = numpy, h, h.fmt_time
    WORKLOADS = [w1_eager_grad, w2_mlp_sgd, w3_per_example, w4_hvp, w5_memory]
    assert [w.NAME for w in WORKLOADS] == WORKLOAD_NAMES


def apply_threads(n):
    """Limit every library to ``n`` threads on ``n`` cores (before they load).

    Sets the usual BLAS/OpenMP environment variables, restricts the process's
    CPU affinity to its first ``n`` allowed cores (this also confines XLA's
    thread pool, which has no portable thread-count switch) and later calls
    torch.set_num_threads(n).
    """
    if "numpy" in sys.modules:
        print("warning: numpy was imported before --threads was applied", file=sys.stderr)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[var] = str(n)
    pinned = None
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:n]
        os.sched_setaffinity(0, cpus)
        pinned = cpus
    return pinned

RATIO_NOTE = ("ratio = tangentia time / peer time: ratio < 1 means tangentia is faster "
              "(median over rounds of the paired ratio)")


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
        hits = [w for w in WORKLOADS if w.NAME == name] or \
               [w for w in WORKLOADS if w.NAME.startswith(name) or name in w.NAME]
        if not hits:
            raise SystemExit(f"unknown workload {name!r}; known: "
                             + ", ".join(w.NAME for w in WORKLOADS))
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


# ---------------------------------------------------------------------------
# Table


def _status_cell(e):
    st = e.get("status")
    if st == "ok":
        return None
    if st == "n/a":
        return "n/a"
    return st.upper() if st else "?"


def _target_cell(e):
    if "target" not in e:
        return ""
    met = e.get("target_met")
    verdict = "met" if met else ("MISSED" if met is False else "not measured")
    return f"<= {e['target']:g}: {verdict}"


def _fmt_ratio(r):
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


def format_table(results):
    lines = []
    hdr = (f"{'workload / implementation':<52} {'median/call':>11} {'spread':>7} "
           f"{'1st call':>9} {'runs x calls':>12} {'tangentia/peer':>14}  target")
    lines.append(RATIO_NOTE)
    lines.append("spread = (slowest run - fastest run) / median, over the timed runs")
    lines.append("")
    lines.append(hdr)
    lines.append("-" * len(hdr))
    for name, res in results.items():
        lines.append(res["title"])
        for e in res["entries"]:
            label = "  " + e["label"]
            bad = _status_cell(e)
            if e.get("metric") == "memory":
                if bad:
                    cell = bad
                else:
                    cell = f"peak = {e['peak_arrays']:.2f} arrays"
                    if e.get("ideal_arrays") is not None:
                        cell += f" (ideal {e['ideal_arrays']:.0f})"
                tgt = ""
                if "target" in e:
                    tgt = f"<= {e['target']:g} arrays: " + (
                        "met" if e.get("target_met") else "MISSED")
                lines.append(f"{label:<52} {cell:<48}  {tgt}")
                if bad and e.get("reason"):
                    lines.append(f"{'':<6}reason: {e['reason']}")
                continue
            if bad:
                ratio = "n/a" if e["role"] == "peer" else ""
                lines.append(f"{label:<52} {bad:>11} {'':>7} {'':>9} {'':>12} {ratio:>14}  "
                             f"{_target_cell(e)}")
                if e.get("reason"):
                    lines.append(f"{'':<6}reason: {e['reason']}")
                continue
            ratio = _fmt_ratio(e["ratio"]) if "ratio" in e else (
                "-" if e["role"] != "peer" else "n/a")
            first = fmt_time(e.get("first_call_s"))
            rc = f"{len(e['runs_s'])} x {e['calls_per_run']}"
            spread = f"{100 * e['spread']:.0f}%"
            lines.append(f"{label:<52} {fmt_time(e['median_s']):>11} {spread:>7} {first:>9} {rc:>12} "
                         f"{ratio:>14}  {_target_cell(e)}")
        for n in res.get("notes", []):
            lines.append(f"  note: {n}")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="short timings (about 0.15 s per measurement, 3 runs) instead of "
                         "about 2 s in 15 interleaved runs")
    ap.add_argument("--only", metavar="NAME",
                    help="comma-separated workload names (or prefixes): "
                         + ", ".join(WORKLOAD_NAMES))
    ap.add_argument("--threads", type=int, metavar="N",
                    help="limit numpy's BLAS, torch and XLA to N threads on N cores "
                         "(default: each library's own default)")
    ap.add_argument("--json", metavar="PATH", default=os.path.join(HERE, "results.json"),
                    help="where to write machine-readable results (default: %(default)s)")
    ap.add_argument("--peers", default="jax,autograd,torch", metavar="LIST",
                    help="comma-separated peers to compare with, or 'none' "
                         "(default: %(default)s; a peer that is not installed shows as n/a)")
    ap.add_argument("--list", action="store_true", help="list the workloads and exit")
    ap.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                    help="for shared machines: before each workload, wait up to SECONDS for "
                         "other processes to stop using the CPU, and re-run timing rounds "
                         "during which they used it (default: do not wait)")
    args = ap.parse_args(argv)
    pinned = apply_threads(args.threads) if args.threads else None
    load()
    wanted = {p.strip() for p in args.peers.split(",") if p.strip() and p.strip() != "none"}
    unknown = wanted - {"jax", "autograd", "torch"}
    if unknown:
        raise SystemExit(f"unknown peer(s) {sorted(unknown)}; known: jax, autograd, torch")
    _harness.DISABLED.update({"jax", "autograd", "torch"} - wanted)
    if args.threads:
        _harness.TORCH_THREADS = args.threads
    if args.list:
        for w in WORKLOADS:
            print(f"{w.NAME:<20} {w.TITLE}")
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
        timed = [e for e in res.get("entries", []) if e.get("status") == "ok" and "runs_s" in e]
        kept = [x for x in timed[0]["others_cores_per_round"] if x is not None] if timed else []
        if kept:
            others = sum(kept) / len(kept)
            where = f"on average during the timed rounds (worst round {max(kept):.2f})"
            if timed[0]["rounds_discarded_busy"]:
                res.setdefault("notes", []).append(
                    f"{timed[0]['rounds_discarded_busy']} timing round(s) re-run because other "
                    "processes used the CPU during them (--wait-idle)")
        elif any(e.get("metric") == "time" for e in res.get("entries", [])):
            others, where = res["other_processes_cores"], "on average"
        else:
            others, where = None, ""  # memory only: not sensitive to other processes
        res["other_processes_cores_timed"] = others
        if others is not None and others > cfg.busy_threshold:
            res.setdefault("notes", []).append(
                f"WARNING: other processes used {others:.2f} of {os.cpu_count()} cores {where} "
                "while this workload was measured; its timings are unreliable")
            print(f"    warning: other processes used {others:.2f} cores {where}")
        results[w.NAME] = res
        print()
    total = time.perf_counter() - t_start

    print("=" * 110)
    print(format_table(results))
    print(f"total wall time {total:.1f} s")

    doc = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "mode": "quick" if cfg.quick else "full",
        "config": {"budget_s": cfg.budget, "repeats": cfg.repeats, "settle_s": cfg.settle,
                   "guard_wait_s": cfg.guard_wait, "wait_idle_s": args.wait_idle},
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
