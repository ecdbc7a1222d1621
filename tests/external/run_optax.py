"""Run optax's own test suite (the version installed in the venv) on tangentia, or on
real JAX for the baseline, and write a summary.

    python tests/external/run_optax.py tangentia   # jax -> tangentia shim first on the path
    python tests/external/run_optax.py jax         # real JAX, JAX_ENABLE_X64=1 (baseline)
    python tests/external/run_optax.py compare     # per-test comparison of the two last runs

Options after the mode: ``-k EXPR`` / file filters are passed to pytest; ``--timeout N``
(default 120 s per test).  Results go to tests/external/results/ (not committed):
``<mode>.xml`` (JUnit), ``<mode>.txt`` (summary: passed/failed/errors/skipped, per file).
optax's files stay in site-packages; nothing of optax is copied into the repository.
"""
import collections
import glob
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHIM = os.path.join(HERE, "shim")
OUT = os.path.join(HERE, "results")


def optax_dir():
    # found without importing optax (which would import jax)
    import importlib.util
    spec = importlib.util.find_spec("optax")
    if spec is None:
        sys.exit("optax is not installed: pip install optax==0.2.8 --no-deps")
    return os.path.dirname(spec.origin)


def test_files(filters):
    files = sorted(glob.glob(os.path.join(optax_dir(), "**", "*_test.py"), recursive=True))
    if filters:
        files = [f for f in files if any(s in f for s in filters)]
    return files


def run(mode, args):
    timeout = "120"
    if "--timeout" in args:
        i = args.index("--timeout")
        timeout = args[i + 1]
        del args[i:i + 2]
    filters = [a for a in args if not a.startswith("-") and a.endswith(".py")]
    extra = [a for a in args if a not in filters]
    files = test_files(filters)
    if "--not-passed-in" in extra:
        # only the tests that did not pass in the last run of another mode (e.g. the JAX
        # baseline of tangentia's failures: the whole suite takes long on real JAX, which
        # compiles every program); results are merged into <mode>.xml's summary
        i = extra.index("--not-passed-in")
        other = extra[i + 1]
        del extra[i:i + 2]
        site = os.path.dirname(optax_dir())
        files = [node_id(site, t) for t, (k, _) in outcomes(other).items() if k != "passed"]
    os.makedirs(OUT, exist_ok=True)
    env = dict(os.environ)
    env["JAX_ENABLE_X64"] = "1"
    env.pop("PYTHONPATH", None)
    if mode == "tangentia":
        env["PYTHONPATH"] = SHIM + os.pathsep + ROOT
        # the NumPy backend: the numba backend compiles each program (~1 s), and
        # optax's tests stage thousands of small programs
        env.setdefault("TANGENTIA_JIT_BACKEND", "numpy")
    xml = os.path.join(OUT, f"{mode}.xml")
    site = os.path.dirname(optax_dir())
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "-c", os.devnull, "--rootdir", site, "--confcutdir", site,
           "--timeout", timeout, "--timeout-method", "thread", "--continue-on-collection-errors",
           "-o", "junit_family=xunit2", "--junitxml", xml, "-W", "ignore::DeprecationWarning",
           *extra, *files]
    print(" ".join(cmd), flush=True)
    rc = subprocess.call(cmd, env=env, cwd=OUT)
    summarize(mode)
    return rc


def node_id(site, tid):
    """pytest node id of a JUnit ``classname::name`` (optax's tests are unittest classes)."""
    cls, name = tid.split("::")
    if not cls:   # a file that failed to collect
        return os.path.join(site, *name.split(".")) + ".py"
    parts = cls.split(".")
    return os.path.join(site, *parts[:-1]) + ".py::" + parts[-1] + "::" + name


def outcomes(mode):
    """{test id: (outcome, message)} from the JUnit file of the last run of ``mode``."""
    res = {}
    tree = ET.parse(os.path.join(OUT, f"{mode}.xml"))
    for tc in tree.iter("testcase"):
        tid = f"{tc.get('classname')}::{tc.get('name')}"
        kind, msg = "passed", ""
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                kind = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                msg = (child.get("message") or "").splitlines()[0][:200] if child.get("message") else ""
                break
        res[tid] = (kind, msg)
    return res


def summarize(mode):
    res = outcomes(mode)
    total = collections.Counter(k for k, _ in res.values())
    per_file = collections.defaultdict(collections.Counter)
    for tid, (k, _) in res.items():
        per_file[tid.split("::")[0].rsplit(".", 1)[0]][k] += 1
    lines = [f"{mode}: " + ", ".join(f"{k} {total[k]}" for k in
                                     ("passed", "failed", "error", "skipped"))]
    for f in sorted(per_file):
        c = per_file[f]
        lines.append(f"  {f}: " + ", ".join(f"{k} {c[k]}" for k in
                                            ("passed", "failed", "error", "skipped") if c[k]))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, f"{mode}.txt"), "w") as fh:
        fh.write(text)
    print(text)


def compare():
    tg, jx = outcomes("tangentia"), outcomes("jax")
    base = {t for t, (k, _) in jx.items() if k == "passed"}
    # tests tangentia passes that were not run on JAX (run_optax.py jax --not-passed-in
    # tangentia runs only tangentia's failures) count as passing on JAX too
    unrun = {t for t, (k, _) in tg.items() if k == "passed" and t not in jx}
    base |= unrun
    ok = {t for t in base if tg.get(t, ("missing",))[0] == "passed"}
    lines = [f"JAX (x64) passes {len(base)} ({len(unrun)} of them not run on JAX: passed on "
             f"tangentia); tangentia passes {len(ok)} of them "
             f"({100.0 * len(ok) / max(len(base), 1):.1f}%); tangentia passes "
             f"{sum(k == 'passed' for k, _ in tg.values())} in all", ""]
    msgs = collections.Counter()
    for t in sorted(base - ok):
        k, m = tg.get(t, ("missing", ""))
        lines.append(f"{k:7s} {t}  {m}")
        msgs[m[:100]] += 1
    lines += ["", "most common messages:"] + [f"{n:4d} {m}" for m, n in msgs.most_common(40)]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, "compare.txt"), "w") as fh:
        fh.write(text)
    print("\n".join(lines[:1] + lines[-42:]))


if __name__ == "__main__":
    mode, rest = (sys.argv[1] if len(sys.argv) > 1 else "tangentia"), sys.argv[2:]
    if mode == "compare":
        compare()
    elif mode in ("tangentia", "jax"):
        sys.exit(run(mode, rest))
    else:
        sys.exit(__doc__)
