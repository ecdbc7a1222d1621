"""Ctrl-C (SIGINT) stops loops compiled by the numba backend.

A compiled loop never returns to the interpreter, so Python's own handler
cannot run while it does: the loops poll a flag (``numba_backend.sigint``).
On CPython 3.11-3.13 that flag is CPython's own (3.11's ``signals_pending``,
3.12's and 3.13's ``is_tripped``), which its C handler sets for every signal with
a Python handler, and the poll runs the pending handlers (``Py_MakePendingCalls``,
``PyErr_CheckSignals``); nothing is installed per call.
Elsewhere (or with ``TANGENTIA_SIGNAL_FLAG=own``) the flag is tangentia's own,
set by a C-level SIGINT handler armed for the duration of a call.  Other
signals, ``_thread.interrupt_main`` and the old arming are covered by
tests/test_signals_compiled_loops.py.  These tests run a child process, wait
until it is inside an endless compiled loop, send it SIGINT and check that it
raises ``KeyboardInterrupt`` promptly and stays usable: the next compiled call
computes the right number, Python's handler is still SIGINT's handler (a
SIGINT in pure Python code raises as usual).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process: POSIX")

numba = pytest.importorskip("numba")

# The child: jits a loop under the numba backend, compiles it (a short run, or ahead
# of time: the SIGINT must not land in the compiler), prints READY, then runs it
# endlessly.
CHILD = textwrap.dedent("""
    import signal, sys, time
    import numpy as np
    import tangentia as tg
    from tangentia import lax
    from tangentia.compiler.backend import get_backend

    kind = sys.argv[1]
    if kind == "while":
        def f(x, n):
            return lax.while_loop(lambda c: c[0] < n,
                                  lambda c: (c[0] + 1, c[1] * 0.5 + 1.0), (0, x))[1]
        short, endless = (1.0, 10), (1.0, 2 ** 62)
    else:   # a scan of 2**40 steps (fori_loop with static bounds)
        def f(x, n):
            return lax.fori_loop(0, 2 ** 40, lambda i, c: c * 0.5 + n, x)
        short, endless = None, (1.0, 1.0)
    g = tg.jit(f, backend="numba")
    src = get_backend("numba").source(tg.make_jaxpr(f)(*endless).jaxpr)
    assert "if _interrupted():" in src, src   # the compiled loop polls for Ctrl-C
    if short is not None:
        print("WARM", float(g(*short)), flush=True)
    else:   # (no short run of this program: compile it ahead of time)
        g = g.lower(*endless).compile()
    print("READY", flush=True)
    t0 = time.perf_counter()
    try:
        g(*endless)
        print("RETURNED", flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", round(time.perf_counter() - t0, 3), flush=True)
    print("HANDLER", signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
    h = tg.jit(lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2.0),
                                        (0, x))[1], backend="numba")
    print("AGAIN", float(h(1.5)), flush=True)
    try:   # Python's handler still works: SIGINT in pure Python code raises
        signal.raise_signal(signal.SIGINT)
        time.sleep(5)
        print("NO_PYTHON_INTERRUPT", flush=True)
    except KeyboardInterrupt:
        print("PYTHON_INTERRUPT", flush=True)
""")


def _as_at_a_terminal():
    """In the child before it runs Python: SIGINT delivered and handled by default, as in a
    program started at a terminal.  A child inherits ignored and blocked signals, and a test
    run started in the background by a non-interactive shell (``cmd &``, ``nohup``) has
    SIGINT ignored: there the child printed READY and then outlived SIGINT (the compiled loop
    rightly runs on: tangentia leaves a SIGINT it does not own alone)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def library_snapshot(dest):
    """A copy of the tangentia package in ``dest`` (returned: the directory for a child's
    ``PYTHONPATH``), its files' sizes and modification times kept, taken while none of them
    changed, and this process's machine-code cache version (``objcache._version``, of those
    files) left at the copy's.  A child running the copy computes the keys this process
    computes, whatever is edited in the working tree meanwhile: children that ran the tree
    itself missed entries this process had just written, when a file changed in between
    (test_numba_objcache's and test_tiered's cache tests, in a tree shared with others at
    work; the child then compiled with numba, under load past the test's timeout).
    Bytecode is not copied (it may be half-written): the first child writes it."""
    import shutil
    import tangentia
    from tangentia.compiler.numba_backend import objcache
    src = os.path.dirname(os.path.abspath(tangentia.__file__))
    for _ in range(20):
        objcache._VERSION.clear()
        before = objcache._version()
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, os.path.join(dest, "tangentia"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        objcache._VERSION.clear()
        if objcache._version() == before:   # (nothing changed while it was copied)
            return str(dest)
        time.sleep(0.2)
    raise AssertionError("the library's files kept changing for 20 copies")


def child_env(env, root):
    """``env`` for a child that imports tangentia from ``root`` (``library_snapshot``) and
    may write its bytecode there."""
    env = dict(env, PYTHONPATH=os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run_child(kind, tmp_path, root=None):
    """The child in a new process (from ``root``: ``library_snapshot``; else this tree)."""
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(tmp_path), TANGENTIA_JIT_TIERED="0",
               TANGENTIA_COMPILE_PROGRESS="0", PYTHONUNBUFFERED="1")
    if root is not None:
        env = child_env(env, root)
    # stderr goes to a file, not a pipe: a child writing more than a pipe holds (warnings, a
    # traceback) while only stdout is read would block in that write and never finish
    err_file = open(tmp_path / "child.stderr", "w+")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, kind], stdout=subprocess.PIPE,
                            stderr=err_file, text=True, env=env, preexec_fn=_as_at_a_terminal,
                            cwd=root)

    def stderr_text():
        err_file.seek(0)
        return err_file.read()
    lines, stamps = [], []

    def reader():
        for line in proc.stdout:
            stamps.append(time.perf_counter())
            lines.append(line.split())
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        deadline = time.perf_counter() + 60
        while not any(w and w[0] == "READY" for w in lines):
            assert proc.poll() is None, stderr_text()
            assert time.perf_counter() < deadline, "the child never got ready"
            time.sleep(0.02)
        time.sleep(0.5)                       # inside the endless compiled loop by now
        assert proc.poll() is None
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the child did not end within 30 s of SIGINT; its output "
                                 f"{lines}, its stderr {stderr_text()[-3000:]!r}") from None
        t.join(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = stderr_text()
    err_file.close()
    assert proc.returncode == 0, err
    words = {w[0]: (w[1:], s) for w, s in zip(lines, stamps)}
    assert "RETURNED" not in words, lines
    assert "INTERRUPTED" in words, (lines, err)
    # stopped promptly: the KeyboardInterrupt was caught within ~2 s of the signal
    assert words["INTERRUPTED"][1] - sent < 2.0, words["INTERRUPTED"][1] - sent
    assert words["HANDLER"][0] == ["True"]                 # the previous handler is restored
    assert float(words["AGAIN"][0][0]) == 1.5 * 2 ** 5      # the next call works
    assert "PYTHON_INTERRUPT" in words, lines
    return words


@pytest.mark.timeout(120)
def test_sigint_stops_an_endless_compiled_while_loop(tmp_path):
    words = _run_child("while", tmp_path)
    x = 1.0
    for _ in range(10):
        x = x * 0.5 + 1.0
    assert float(words["WARM"][0][0]) == x


@pytest.mark.timeout(120)
def test_sigint_stops_a_long_compiled_scan(tmp_path):
    _run_child("scan", tmp_path)


def test_loops_poll_only_when_they_can_run_long():
    import numpy as np
    import tangentia as tg
    from tangentia import lax
    from tangentia.compiler.backend import get_backend

    def src(f, *args):
        return get_backend("numba").source(tg.make_jaxpr(f)(*args).jaxpr)

    # an unbounded loop always polls, a tight body every 2**k iterations of a counter
    s = src(lambda x, n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 0.5),
                                        (0, x))[1], 1.0, 3)
    assert "if _interrupted():" in s and "& 2047) == 0" in s, s
    # a large body polls every iteration
    s = src(lambda x, n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 0.5),
                                        (0, x))[1], np.ones(1 << 16), 3)
    assert "if _interrupted():" in s and "& " not in s.split("while True:")[1], s
    # a short scan does not poll (nothing to interrupt): no cost, no arming of the call
    s = src(lambda x: lax.fori_loop(0, 10, lambda i, c: c * 0.5 + 1.0, x), 1.0)
    assert "_interrupted()" not in s, s
    # a long one polls between chunks of steps, the steps themselves stay a plain loop
    s = src(lambda x: lax.fori_loop(0, 100_000, lambda i, c: c * 0.5 + 1.0, x), 1.0)
    assert "range(0, 100000, 2048)" in s and "min(" in s, s


@pytest.mark.timeout(60)
def test_chunked_scans_compute_the_same_numbers():
    # the chunked loop visits every step once, in order (forward and reverse)
    import numpy as np
    import tangentia as tg
    from tangentia import lax
    xs = np.linspace(-1.0, 1.0, 5000)

    def f(xs, reverse):
        return lax.scan(lambda c, x: (c * 0.999 + x, c - x), 0.25, xs, reverse=reverse)

    for reverse in (False, True):
        c, ys = tg.jit(lambda xs: f(xs, reverse), backend="numba")(xs)
        want_c, want_ys = 0.25, np.empty_like(xs)
        for i in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
            want_ys[i] = want_c - xs[i]
            want_c = want_c * 0.999 + xs[i]
        np.testing.assert_allclose(c, want_c, rtol=1e-12)
        np.testing.assert_allclose(ys, want_ys, rtol=1e-12, atol=1e-15)
