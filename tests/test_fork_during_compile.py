"""A process forked while tiered jit compiles in the background compiles in the child.

Before (session 23, E): ``os.fork`` (``multiprocessing``'s default start method on Linux)
while the compile thread was inside numba copied the locks that thread held (the numba
backend's loader lock, the import system's module locks during numba's first import,
numba's compiler lock) as held for good: the child hung at its first numba compile (a pool
made while a program compiled never returned).  Now the fork waits until the compile in
progress has ended (``backend._before_fork``).  The scripts run in fresh processes with
their own caches, under a timeout: a hang fails, it does not stop the suite.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

_SCRIPT = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import tangentia as tg, tangentia.numpy as tnp
    from tangentia.compiler import backend as B

    tg.config.update("jit_tiered", True)
    g = tg.jit(lambda x: tnp.sin(x) * 2.0 + x, backend="numba")
    x = np.linspace(-1.0, 1.0, 5)
    g(x); g(x)                          # the second call queues the compile
    deadline = time.monotonic() + 60
    while B._RUNNING[0] is None and time.monotonic() < deadline:
        time.sleep(0.002)
    print("COMPILING", B._RUNNING[0] is not None, flush=True)
    pid = os.fork()                     # (numba is being imported, or compiling, now)
    if pid == 0:
        try:
            tg.config.update("jit_tiered", False)
            h = tg.jit(lambda x: tnp.cos(x) * 3.0 + 1.0, backend="numba")
            ok = np.allclose(h(x), np.cos(x) * 3.0 + 1.0)
            print("CHILD", ok, np.allclose(g(x), np.sin(x) * 2.0 + x), flush=True)
        finally:
            os._exit(0)
    deadline = time.monotonic() + 150
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            print("CHILD HUNG", flush=True)
            break
        time.sleep(0.05)
    B.wait_for_compiles(150)
    print("PARENT", np.allclose(g(x), np.sin(x) * 2.0 + x), flush=True)
""")


@pytest.mark.timeout(300)
def test_a_child_forked_during_a_numba_compile_compiles(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=ROOT, TANGENTIA_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    p = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                       timeout=280, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["COMPILING", "True", "CHILD", "True", "True", "PARENT",
                                "True"], (p.stdout, p.stderr[-3000:])
