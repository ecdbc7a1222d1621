"""Faults during a compile, in real processes (issue 23: "a background compile that fails
or is interrupted never loses the user's result, and never leaves a half-written cache
entry"; the other halves are in test_tiered.py and test_numba_objcache.py).

* Ctrl-C (a real SIGINT) that lands while the first compile of a process imports numba
  or loads its registries: the KeyboardInterrupt reaches the user after the import, and
  the next call compiles natively.  Without ``numba_backend._interrupts_held`` every later
  call failed in that process ("module 'numba' has no attribute 'core'").
* A process killed (SIGKILL) while it writes a machine-code cache entry, and one that
  exits while its background compile runs: the cache holds no damaged entry, and the next
  process computes the same numbers and fills it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

pytest.importorskip("numba")
pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals to a child process")]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _as_at_a_terminal():
    # SIGINT handled by default in the child even when the test run's own is ignored
    # (a run started in the background: see test_interrupt._as_at_a_terminal)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _env(cache, **extra):
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(cache), TANGENTIA_COMPILE_PROGRESS="0",
               PYTHONUNBUFFERED="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


_PROGRAM = """
import numpy as np
import tangentia as tg, tangentia.numpy as tnp
from tangentia import lax
def f(x):
    return tnp.sum(lax.fori_loop(0, 5, lambda i, c: tnp.sin(c) * 1.5 + 0.25, x) ** 2)
x = np.linspace(0.0, 1.0, 6)
"""
# the same numbers by NumPy
_WANT = (lambda c: float(np.sum(c ** 2)))(
    __import__("functools").reduce(lambda c, _: np.sin(c) * 1.5 + 0.25, range(5), np.linspace(0.0, 1.0, 6)))

_INTERRUPTED_IMPORT = _PROGRAM + """
import json, os, signal, sys, warnings
target, fired = sys.argv[1], []
class SigintAt:          # a real SIGINT, sent when ``target`` starts to be imported
    def find_spec(self, name, path=None, spec_target=None):
        if name == target and not fired:
            fired.append(name)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        return None
import time
sys.meta_path.insert(0, SigintAt())
tg.config.update("jit_tiered", False)
g = tg.jit(tg.grad(f), backend="numba")
h = tg.jit(f, backend="numba")
try:
    h(x)
    interrupted = False
except KeyboardInterrupt:
    interrupted = True
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    r = float(h(x))
    gr = np.asarray(g(x)).tolist()
print(json.dumps({"fired": fired, "interrupted": interrupted, "r": r, "g": gr,
                  "warnings": [str(m.message) for m in w], "numba": "numba" in sys.modules}))
"""


@pytest.mark.parametrize("target", ["numba.core.config", "numba.core.types.misc"])   # (both fail at e052b57)
def test_ctrl_c_in_the_first_compiles_imports_loses_nothing(tmp_path, target):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_INTERRUPTED_IMPORT), target],
                          env=_env(tmp_path, TANGENTIA_NUMBA_FAST_LOAD="0"), capture_output=True,
                          text=True, timeout=240, preexec_fn=_as_at_a_terminal)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["fired"] == [target]              # the signal was sent inside that import
    assert got["interrupted"]                    # and reached the user's call
    assert got["warnings"] == []                 # the next calls compiled with numba
    assert got["numba"]
    assert abs(got["r"] - _WANT) < 1e-12
    # the gradient, against central differences
    x = np.linspace(0.0, 1.0, 6)

    def F(v):
        c = v
        for _ in range(5):
            c = np.sin(c) * 1.5 + 0.25
        return float(np.sum(c ** 2))
    fd = [(F(x + 1e-6 * e) - F(x - 1e-6 * e)) / 2e-6 for e in np.eye(6)]
    np.testing.assert_allclose(got["g"], fd, rtol=1e-6, atol=1e-8)


_KILLED_WRITER = _PROGRAM + """
import json, os, sys, time
from tangentia.compiler import backend as B
tg.config.update("jit_tiered", False)
if sys.argv[1] == "hang":       # stop at the rename of a machine-code entry: the parent kills us
    _replace = os.replace
    def replace(src, dst):
        if str(dst).endswith(".bin"):
            print("WRITING", src, flush=True)
            time.sleep(600)
        return _replace(src, dst)
    os.replace = replace
run = B.compile_jaxpr(tg.make_jaxpr(f)(x).jaxpr, "numba")
r = float(run(x)[0])
disp = getattr(run, "dispatcher", None)
objcache = sys.modules.get("tangentia.compiler.numba_backend.objcache")
print(json.dumps({"r": r, "numba": "numba" in sys.modules, "stats": objcache.STATS if objcache else None,
                  "numba_cache": None if disp is None else
                  [sum(disp._cache_hits.values()), sum(disp._cache_misses.values())]}))
"""


def _hanging_writer(env):
    """A process stopped at the rename of its machine-code entry (its whole entry in its
    temporary file): the process and that file's path."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_KILLED_WRITER), "hang"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.time() + 240
        line = ""
        while not line.startswith("WRITING") and time.time() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
        assert line.startswith("WRITING"), (line, proc.poll())
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, line.split()[1]


def test_a_process_killed_while_writing_the_cache_leaves_no_entry(tmp_path):
    """SIGKILL while the machine-code entry is being put in place (the whole entry written to
    its temporary file, not yet renamed): no entry is left, the next process compiles from
    numba's own cache (whole: written before) and keeps the entry, and a third loads it
    without numba; every result the same.  The killed writer's temporary file is removed by
    the next compile once it is a minute old, and a live writer's is not, however old."""
    env = _env(tmp_path, TANGENTIA_NUMBA_FAST_LOAD="1")
    proc, tmp = _hanging_writer(env)
    try:
        assert os.path.getsize(tmp) > 0
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    fast = tmp_path / "numba" / "fast"
    assert os.path.exists(tmp) and not [n for n in os.listdir(fast) if n.endswith(".bin")]

    def child():
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(_KILLED_WRITER), "run"], env=env,
                             capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])
    # (before the cleaning: a writer that is alive, and the killed one's files, a minute old
    # and just written; numba's own temporary files, an hour old and ten minutes old)
    live, live_tmp = _hanging_writer(env)
    try:
        young = f"{tmp[:-len('.tmp')]}7.tmp"
        numbas = [str(tmp_path / "numba" / f"x{k}.nbi.tmp.0123456789abcdef") for k in range(2)]
        for path in [young] + numbas:
            with open(path, "w") as f:
                f.write("part of an entry")
        for path, age in [(tmp, 61), (live_tmp, 7200), (numbas[0], 3601), (numbas[1], 600)]:
            os.utime(path, (time.time() - age, time.time() - age))

        second = child()
        assert not os.path.exists(tmp) and not os.path.exists(numbas[0])      # stale: removed
        assert os.path.exists(live_tmp) and os.path.exists(young) and os.path.exists(numbas[1])
    finally:
        live.kill()
        live.wait()
    assert second["numba"] and second["numba_cache"] == [1, 0], second    # numba's entry, whole
    assert second["stats"]["saved"] == 1 and abs(second["r"] - _WANT) < 1e-12
    third = child()
    assert not third["numba"] and third["stats"]["loaded"] == 1, third
    assert third["r"] == second["r"]


_EXIT_WHILE_COMPILING = """
import json, sys, time
import numpy as np
import tangentia as tg, tangentia.numpy as tnp
from tangentia.compiler import backend as B
rng = np.random.default_rng(0)
params = [(rng.standard_normal((16, 16)) / 4.0, rng.standard_normal(16) * 0.1) for _ in range(6)]
X = rng.standard_normal((8, 16))
def loss(p, X):
    h = X
    for W, b in p:
        h = h + 0.5 * tnp.tanh(h @ W + b)
    return tnp.mean(h ** 2)
args = tg.tree_util.tree_leaves(params) + [X]
tree = tg.tree_util.tree_structure(params)
tg.config.update("jit_tiered", sys.argv[1] == "exit")
g = tg.jit(lambda *a: tg.grad(loss)(tg.tree_util.tree_unflatten(tree, a[:-1]), a[-1]), backend="numba")
g(*args)
leaves = [np.asarray(a).tolist() for a in tg.tree_util.tree_leaves(g(*args))]   # (tiered: queues the compile)
fn = [f for c in g.fast_caches.values() for f, _, _ in c.values()]
fn = fn[0] if len(fn) == 1 else None
running = type(fn) is B.Tiered and fn.queued and fn.native is None
deadline = time.time() + 120
while sys.argv[1] == "exit" and not B._COMPILING.locked() and fn.native is None and time.time() < deadline:
    time.sleep(0.002)                  # (until the compile has started: exit then waits for it)
print(json.dumps({"leaves": leaves, "t": time.time(), "numba": "numba" in sys.modules,
                  "running": running}), flush=True)
"""


def test_a_program_that_ends_while_its_background_compile_runs(tmp_path):
    """The script ends right after the call that queued the background compile (a compile of
    a few seconds, just started): the process has its result and exits at once, the compile
    abandoned at its next Python instruction (an interpreter that went on to its end under a
    compile in LLVM ran LLVM's static destructors under it and died: SIGSEGV/SIGABRT in 3 of
    18 runs; one that waited for the whole compile made the script wait for the compiler).
    The cache holds no half-written entry: the next process computes the same numbers and
    fills it, and the one after loads it without numba."""
    env = _env(tmp_path, TANGENTIA_NUMBA_FAST_LOAD="1", TANGENTIA_JIT_TIERED="1")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_EXIT_WHILE_COMPILING), "exit"], env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Exception" not in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
    first = json.loads(out.stdout.strip().splitlines()[-1])
    assert first["running"]                # the compile was under way when the script ended
    assert not [f for _, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".tmp")]
    runs = []
    for _ in range(2):
        again = subprocess.run([sys.executable, "-c", textwrap.dedent(_EXIT_WHILE_COMPILING), "untiered"],
                               env=env, capture_output=True, text=True, timeout=240)
        assert again.returncode == 0, again.stderr[-2000:]
        runs.append(json.loads(again.stdout.strip().splitlines()[-1]))
        np.testing.assert_allclose(np.concatenate([np.ravel(a) for a in runs[-1]["leaves"]]),
                                   np.concatenate([np.ravel(a) for a in first["leaves"]]), rtol=1e-12, atol=1e-15)
    assert not runs[1]["numba"]            # the second run's machine code, loaded
