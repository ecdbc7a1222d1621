"""Run one of JAX's own test files on tangentia (through the test shim), or on real JAX for
the baseline, and write a summary.

    python tests/external/run_jax_tests.py lax_numpy_test.py tangentia   # shim, x64
    python tests/external/run_jax_tests.py lax_numpy_test.py jax         # real JAX, x64
    python tests/external/run_jax_tests.py lax_numpy_test.py jax --not-passed-in tangentia
    python tests/external/run_jax_tests.py lax_numpy_test.py compare     # per-test comparison

The test files are JAX's (``tests/<name>.py`` of the jax-ml/jax repository); they are not in
this repository: put them in ``/tmp/jax_tests/`` (or the directory ``JAX_TESTS_DIR`` names).
Options after the mode: ``-k EXPR`` and other pytest options are passed to pytest;
``--timeout N`` (default 60 s per test); ``--not-passed-in MODE`` runs only the tests that
did not pass in the last run of MODE (the JAX baseline of tangentia's failures: a full run on
real JAX compiles every program and is slow on this machine).  Results go to
tests/external/results/ (git-ignored): ``<file>.<mode>.xml`` (JUnit) and ``<file>.<mode>.txt``
(passed/failed/error/skipped per test class); ``compare`` writes ``<file>.compare.txt``.

``tangentia`` mode puts ``tests/external/shim`` first on ``PYTHONPATH`` (``import jax`` is
tangentia; JAX's private modules the tests import are the stand-ins under
``shim/_standins/``), with ``JAX_ENABLE_X64=1`` and the NumPy jit backend.  ``jax`` mode runs
real JAX with ``JAX_ENABLE_X64=1`` and the ``jax._src.test_util`` of the installed wheel.
Both draw the same sampled cases (``JAX_NUM_GENERATED_CASES``, 10 by default), so a test id
names the same case in both runs.
"""
import collections
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHIM = os.path.join(HERE, "shim")
OUT = os.path.join(HERE, "results")
TESTS_DIR = os.environ.get("JAX_TESTS_DIR", "/tmp/jax_tests")


def _stem(test_file):
    return os.path.splitext(os.path.basename(test_file))[0]


def _path(test_file):
    path = test_file if os.path.isabs(test_file) else os.path.join(TESTS_DIR, test_file)
    if not os.path.isfile(path):
        sys.exit(f"{path}: no such file (JAX's test files are not in the repository: put "
                 f"{os.path.basename(test_file)} in {TESTS_DIR} or set JAX_TESTS_DIR)")
    return path


def _env(mode):
    env = dict(os.environ)
    env["JAX_ENABLE_X64"] = "1"
    env.pop("PYTHONPATH", None)
    paths = []
    if mode == "tangentia":
        paths += [SHIM, ROOT]
        # the NumPy backend: the numba backend compiles each program (~1 s), and these
        # files stage thousands of small programs
        env.setdefault("TANGENTIA_JIT_BACKEND", "numpy")
        env.setdefault("TANGENTIA_JIT_TIERED", "0")
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def run(test_file, mode, args):
    timeout = "60"
    if "--timeout" in args:
        i = args.index("--timeout")
        timeout = args[i + 1]
        del args[i:i + 2]
    path = _path(test_file)
    stem = _stem(test_file)
    targets = [path]
    if "--not-passed-in" in args:
        i = args.index("--not-passed-in")
        other = args[i + 1]
        del args[i:i + 2]
        targets = [node_id(path, t) for t, (k, _) in outcomes(stem, other).items()
                   if k != "passed"]
        if not targets:
            print(f"every test passed in the {other} run: nothing to run")
            return 0
    os.makedirs(OUT, exist_ok=True)
    xml = os.path.join(OUT, f"{stem}.{mode}.xml")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "-c", os.devnull, "--rootdir", os.path.dirname(path),
           "--confcutdir", os.path.dirname(path),
           "--timeout", timeout, "--timeout-method", "thread",
           "-o", "junit_family=xunit2", "--junitxml", xml,
           "-W", "ignore::DeprecationWarning", *args]
    if len(targets) > 200:  # long node-id lists go through a file
        listing = os.path.join(OUT, f"{stem}.{mode}.targets")
        with open(listing, "w") as fh:
            fh.write("\n".join(targets) + "\n")
        cmd += [f"@{listing}"]
    else:
        cmd += targets
    print(" ".join(cmd[:20]), "...", flush=True)
    rc = subprocess.call(cmd, env=_env(mode), cwd=OUT)
    summarize(stem, mode)
    return rc


def node_id(path, tid):
    """pytest node id of a JUnit ``classname::name`` (``lax_numpy_test.Cls::testFoo3``)."""
    cls, name = tid.split("::")
    return f"{path}::{cls.rsplit('.', 1)[-1]}::{name}" if cls else path


def outcomes(stem, mode):
    """{test id: (outcome, first line of the message)} of the last run of ``mode``."""
    res = {}
    tree = ET.parse(os.path.join(OUT, f"{stem}.{mode}.xml"))
    for tc in tree.iter("testcase"):
        tid = f"{tc.get('classname')}::{tc.get('name')}"
        kind, msg = "passed", ""
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                kind = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                text = child.get("message") or (child.text or "")
                msg = text.strip().splitlines()[0][:240] if text.strip() else ""
                break
        res[tid] = (kind, msg)
    return res


def summarize(stem, mode):
    res = outcomes(stem, mode)
    total = collections.Counter(k for k, _ in res.values())
    per_class = collections.defaultdict(collections.Counter)
    for tid, (k, _) in res.items():
        per_class[tid.split("::")[0]][k] += 1
    kinds = ("passed", "failed", "error", "skipped")
    lines = [f"{stem} on {mode}: " + ", ".join(f"{k} {total[k]}" for k in kinds)]
    for c in sorted(per_class):
        lines.append(f"  {c}: " + ", ".join(f"{k} {per_class[c][k]}" for k in kinds
                                            if per_class[c][k]))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, f"{stem}.{mode}.txt"), "w") as fh:
        fh.write(text)
    print(text)


def compare(test_file):
    stem = _stem(test_file)
    tg, jx = outcomes(stem, "tangentia"), outcomes(stem, "jax")
    # tests tangentia passes that were not run on JAX (``jax --not-passed-in tangentia``)
    # count as JAX passes
    unrun = {t for t, (k, _) in tg.items() if k == "passed" and t not in jx}
    base = {t for t, (k, _) in jx.items() if k == "passed"} | unrun
    ok = {t for t in base if tg.get(t, ("missing",))[0] == "passed"}
    lines = [f"{stem}: JAX (x64) passes {len(base)} ({len(unrun)} of them not run on JAX: "
             f"passed on tangentia); tangentia passes {len(ok)} of them "
             f"({100.0 * len(ok) / max(len(base), 1):.1f}%); tangentia passes "
             f"{sum(k == 'passed' for k, _ in tg.values())} in all, of {len(tg)}", ""]
    msgs = collections.Counter()
    for t in sorted(base - ok):
        k, m = tg.get(t, ("missing", ""))
        lines.append(f"{k:7s} {t}  {m}")
        msgs[m[:110]] += 1
    lines += ["", "most common messages:"] + [f"{n:4d} {m}" for m, n in msgs.most_common(50)]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, f"{stem}.compare.txt"), "w") as fh:
        fh.write(text)
    print("\n".join(lines[:1] + lines[-52:]))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    test_file, mode, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "compare":
        compare(test_file)
    elif mode in ("tangentia", "jax"):
        sys.exit(run(test_file, mode, rest))
    else:
        sys.exit(__doc__)
