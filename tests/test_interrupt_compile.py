"""A signal whose Python handler raises during a numba compile is never lost.

Python runs the main thread's signal handlers between any two bytecodes, also those of a
callback that C code makes: llvmlite's object-cache callbacks, called by LLVM while numba
compiles, are such (``ctypes`` callbacks), and an exception raised there is printed as
"Exception ignored on calling ctypes callback function" and dropped.  Ctrl-C landing there
(more likely the longer the compile: under load) was lost, and the endless loop the compile
was for then ran for ever (tests/test_interrupt_audit.py's eager ``while_loop`` at load 13).
``backend._SignalsKept`` keeps such an exception and raises it when the compile ends.

The child makes the signal land there every time: it sends itself the signal from
llvmlite's callback (``ExecutionEngine._find_module_ptr``, which the callbacks call), so
the handler runs inside it.  SIGINT (Python's ``default_int_handler``) for an eager
``while_loop``, and SIGTERM with a handler of the user's that raises, for a jitted one.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba")
pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = textwrap.dedent(r"""
    import os, signal
    import tangentia as tg
    from tangentia import lax
    tg.config.update("jit_tiered", False)

    def w_while(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0), (0, x))[1]

    def w_while2(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 0.25 + 2.0), (0, x))[1]

    class Stop(Exception):
        pass

    def stop(sig, frame):
        raise Stop

    print("FIRST", float(tg.jit(w_while)(1.0, 10)), flush=True)   # numba imported and working
    from llvmlite.binding import executionengine as ee
    find = ee.ExecutionEngine._find_module_ptr
    pending = []

    def find_and_signal(self, ptr):     # the signal arrives in llvmlite's callback
        if pending:
            os.kill(os.getpid(), pending.pop())
        return find(self, ptr)
    ee.ExecutionEngine._find_module_ptr = find_and_signal
    signal.signal(signal.SIGTERM, stop)
    for name, f, sig in (("eager_while", w_while, signal.SIGINT),
                         ("jit_sigterm", tg.jit(w_while2), signal.SIGTERM)):
        pending.append(sig)
        try:
            f(1.0, 2 ** 62)
            print("RETURNED", name, flush=True)
        except (KeyboardInterrupt, Stop) as e:
            print("STOPPED", name, type(e).__name__, "sent" if not pending else "unsent", flush=True)
        pending.clear()
        print("AGAIN", name, float(f(1.0, 10)), flush=True)
""")


def test_a_signal_raised_in_an_llvm_callback_during_the_compile_stops_the_call(tmp_path):
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(tmp_path), TANGENTIA_COMPILE_PROGRESS="0",
               TANGENTIA_NUMBA_FAST_LOAD="0", TANGENTIA_JIT_BACKEND="numba")
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    try:
        # (before the fix the child never ends: the signal was dropped, the loop is endless;
        # quiet, the child takes ~2 s of CPU, but with cold numba caches at load 12 it took
        # 25 s of CPU in 151 s of wall time, so the bound is the module's 300 s less a margin)
        r = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                           text=True, timeout=270)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        raise AssertionError(f"the child still runs 270 s on: a signal was lost\n{out}") from None
    lines = [ln.split() for ln in r.stdout.splitlines()]
    assert r.returncode == 0, r.stderr[-3000:]
    first = float(lines[0][1])
    assert lines[0][0] == "FIRST" and abs(first - 1.9990234375) < 1e-12, lines
    # the signal was sent inside the callback (whose exception Python printed and dropped)
    assert "Exception ignored" in r.stderr, r.stderr[-3000:]
    assert ["STOPPED", "eager_while", "KeyboardInterrupt", "sent"] in lines, lines
    assert ["STOPPED", "jit_sigterm", "Stop", "sent"] in lines, lines
    # the programs compiled, and compute what they should after the interrupted call
    again = {w[1]: float(w[2]) for w in lines if w[0] == "AGAIN"}
    x1 = x2 = 1.0
    for _ in range(10):
        x1, x2 = x1 * 0.5 + 1.0, x2 * 0.25 + 2.0
    assert again == {"eager_while": x1, "jit_sigterm": x2}, (again, lines)


_WINDOWS = textwrap.dedent(r"""
    import signal
    from tangentia.compiler import backend as B

    calls = []

    def mine(sig, frame):
        calls.append(sig)
        raise KeyboardInterrupt

    def other(sig, frame):
        pass
    install = B._signal
    for at in (1, 2, 3, 4, 0):  # the signal handled after the at-th handler change, or in the block
        signal.signal(signal.SIGINT, mine)
        signal.signal(signal.SIGTERM, other)
        changes = []

        def changing(sig, handler):
            install(sig, handler)
            changes.append(sig)
            if len(changes) == at:
                signal.raise_signal(signal.SIGINT)
        B._signal = changing
        body = False
        try:
            with B._SignalsKept():
                body = True
                if at == 0:
                    signal.raise_signal(signal.SIGINT)
            print("RETURNED", at, flush=True)
        except KeyboardInterrupt:
            pass
        B._signal = install
        print("CASE", at, body, len(changes), signal.getsignal(signal.SIGINT) is mine,
              signal.getsignal(signal.SIGTERM) is other, len(calls), flush=True)
""")


def test_a_signal_while_the_handlers_are_wrapped_or_restored_leaves_them_as_they_were():
    # (the handler changes of _SignalsKept: SIGINT's and SIGTERM's wrapped, then restored;
    # a handler raising between two of them must not leave a wrapper installed)
    r = subprocess.run([sys.executable, "-c", _WINDOWS], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                           [ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])), cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    cases = [ln.split()[1:] for ln in r.stdout.splitlines() if ln.startswith("CASE")]
    assert "RETURNED" not in r.stdout, r.stdout
    # the handler ran once per signal; both handlers are back; the block ran where the
    # signal came after the wrappers went in (changes 3 and 4: while restoring them)
    assert cases == [["1", "False", "2", "True", "True", "1"],
                     ["2", "False", "4", "True", "True", "2"],
                     ["3", "True", "4", "True", "True", "3"],
                     ["4", "True", "4", "True", "True", "4"],
                     ["0", "True", "4", "True", "True", "5"]], cases
