"""Every signal with a Python handler stops a compiled loop, not SIGINT alone; a signal
without one keeps its default action.

Compiled loops poll CPython's own flag (``_PyRuntime.ceval.signals_pending`` on 3.11,
``_PyRuntime.signals.is_tripped`` on 3.12 and 3.13, which its C handler sets for any signal
that has a Python handler; ``numba_backend/sigint.py``), so a
timeout written with ``signal.alarm`` or pytest-timeout's signal method, or a SIGTERM
handler, runs inside the loop, and nothing is armed per call.  Before 2026-12-07 only SIGINT
was polled: a SIGTERM/SIGALRM/SIGUSR1/SIGUSR2/SIGHUP handler never ran and the loop hung.

Each test runs a fresh child process (signals), whose loop never ends by itself.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("numba")
pytestmark = [pytest.mark.timeout(200),
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One cache directory for the module's children: the later ones load the loop."""
    return {"TANGENTIA_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}

_PRELUDE = """
import os, signal, sys, threading, time
import tangentia as tg
from tangentia import lax
from tangentia.compiler.numba_backend import sigint

def body(c):
    return c[0] + 1, c[1] * 0.5 + 1.0

g = tg.jit(lambda x, n: lax.while_loop(lambda c: c[0] < n, body, (0, x))[1], backend="numba")
warm = float(g(1.0, 10))
NEVER = 2 ** 62

def later(delay, sig):      # the signal sent to this process from another thread
    t = threading.Timer(delay, os.kill, (os.getpid(), sig))
    t.daemon = True
    t.start()
"""

# the user's handler returns on its first signal (the loop goes on) and raises on the second
_HANDLERS = _PRELUDE + """
print("FLAG", sigint.CPYTHON_FLAG, flush=True)
class Stop(Exception):
    pass
calls = []
def handler(sig, frame):
    calls.append(sig)
    if calls.count(sig) == 2:
        raise Stop(sig)
for sig in SIGNALS:
    signal.signal(sig, handler)
    later(0.3, sig)
    later(0.6, sig)
    t0 = time.perf_counter()
    try:
        g(1.0, NEVER)
        print("RETURNED", sig, flush=True)
    except Stop as e:
        print("STOPPED", sig, e.args[0], calls.count(sig), round(time.perf_counter() - t0, 3),
              flush=True)
    signal.signal(sig, signal.SIG_DFL)
    print("AGAIN", float(g(1.0, 10)) == warm, flush=True)
"""


def _child(code, signals=(), env=None, timeout=90):
    """Run ``code`` in a fresh process with SIGNALS defined, dispositions and mask reset
    (a child inherits ignored and blocked signals: ``nohup`` ignores SIGHUP)."""
    def reset():
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM,
                  signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(s, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
    full = f"SIGNALS = {[int(s) for s in signals]!r}\n" + code
    e = dict(os.environ, TANGENTIA_JIT_TIERED="0", TANGENTIA_COMPILE_PROGRESS="0",
             PYTHONPATH=ROOT, **(env or {}))
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", full], capture_output=True, text=True,
                           env=e, timeout=timeout, preexec_fn=reset, cwd=ROOT)
    except subprocess.TimeoutExpired as ex:
        raise AssertionError(f"the child hung: {ex.stdout!r} {ex.stderr!r}") from None
    lines = [ln.split() for ln in p.stdout.splitlines()]
    return p, lines, time.perf_counter() - t0


@pytest.mark.parametrize("names", [("SIGTERM", "SIGALRM", "SIGUSR1"), ("SIGUSR2", "SIGHUP")])
def test_a_python_handler_of_any_signal_runs_in_a_compiled_loop(names, cache):
    sigs = [getattr(signal, n) for n in names]
    p, lines, _ = _child(_HANDLERS, sigs, cache)
    assert p.returncode == 0, (lines, p.stderr[-3000:])
    assert ["FLAG", "True"] in lines, lines     # CPython 3.11-3.13: its own flag is polled
    stopped = [w for w in lines if w[0] == "STOPPED"]
    assert [int(w[1]) for w in stopped] == [int(s) for s in sigs], (lines, p.stderr[-2000:])
    for w in stopped:
        assert w[2] == w[1]            # the handler's own exception, raised in the loop
        assert w[3] == "2"             # the first call returned: the loop went on
        assert float(w[4]) < 5.0       # (sent at 0.3 s and 0.6 s)
    assert [w for w in lines if w[0] == "AGAIN"] == [["AGAIN", "True"]] * len(sigs), lines


def test_signal_alarm_times_out_a_compiled_loop(cache):
    # a timeout as pytest-timeout's signal method and user code write it
    code = _PRELUDE + """
def on_alarm(sig, frame):
    raise TimeoutError("alarm")
signal.signal(signal.SIGALRM, on_alarm)
signal.alarm(1)
t0 = time.perf_counter()
try:
    g(1.0, NEVER)
    print("RETURNED", flush=True)
except TimeoutError as e:
    print("TIMEOUT", e, round(time.perf_counter() - t0, 3), flush=True)
print("AGAIN", float(g(1.0, 10)) == warm, flush=True)
"""
    p, lines, _ = _child(code, env=cache)
    assert p.returncode == 0, (lines, p.stderr[-3000:])
    timeout = [w for w in lines if w[0] == "TIMEOUT"]
    assert timeout and timeout[0][1] == "alarm" and 0.5 < float(timeout[0][2]) < 6.0, lines
    assert ["AGAIN", "True"] in lines


def test_a_signal_without_handler_keeps_its_default_action(cache):
    # SIGTERM with SIG_DFL: the process dies in the loop, as in any long C call
    code = _PRELUDE + """
assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
later(0.3, signal.SIGTERM)
print("LOOP", flush=True)
g(1.0, NEVER)
print("RETURNED", flush=True)
"""
    p, lines, _ = _child(code, env=cache)
    assert p.returncode == -signal.SIGTERM, (p.returncode, lines, p.stderr[-3000:])
    assert ["LOOP"] in lines and ["RETURNED"] not in lines, lines


def test_a_loop_on_another_thread_leaves_the_main_threads_handler_alone(cache):
    # the handler runs in the main thread (here in a sleep), never in the worker's loop,
    # which runs on (as a Python thread would) and does not keep the process from exiting
    code = _PRELUDE + """
class Stop(Exception):
    pass
def handler(sig, frame):
    raise Stop(threading.current_thread() is threading.main_thread())
signal.signal(signal.SIGUSR1, handler)
ended = []
def work():
    try:
        g(1.0, NEVER)
    finally:
        ended.append(1)
w = threading.Thread(target=work, daemon=True)
w.start()
later(0.5, signal.SIGUSR1)
try:
    time.sleep(30)
    print("SLEPT", flush=True)
except Stop as e:
    time.sleep(0.3)
    print("STOPPED", e.args[0], not ended, flush=True)
print("AGAIN", float(g(1.0, 10)) == warm, flush=True)
"""
    p, lines, _ = _child(code, env=cache)
    assert p.returncode == 0, (lines, p.stderr[-3000:])
    assert ["STOPPED", "True", "True"] in lines and ["AGAIN", "True"] in lines, lines


def test_sigint_on_the_fallback_flag(cache):
    # TANGENTIA_SIGNAL_FLAG=own: the flag of an unknown CPython layout, SIGINT's C handler
    # armed around each call; the user's SIGINT handler stops the loop as before
    code = _PRELUDE + """
print("FLAG", sigint.CPYTHON_FLAG, flush=True)
def handler(sig, frame):
    raise ValueError("mine")
signal.signal(signal.SIGINT, handler)
later(0.3, signal.SIGINT)
try:
    g(1.0, NEVER)
    print("RETURNED", flush=True)
except ValueError as e:
    print("STOPPED", e, flush=True)
print("AGAIN", float(g(1.0, 10)) == warm, flush=True)
print("HANDLER", signal.getsignal(signal.SIGINT) is handler, flush=True)
"""
    p, lines, _ = _child(code, env=dict(cache, TANGENTIA_SIGNAL_FLAG="own"))
    assert p.returncode == 0, (lines, p.stderr[-3000:])
    assert ["FLAG", "False"] in lines and ["STOPPED", "mine"] in lines, lines
    assert ["AGAIN", "True"] in lines and ["HANDLER", "True"] in lines, lines


def test_the_flag_is_cpythons_signals_pending():
    # the address the loops poll reads 1 between a Python-handled signal's arrival and the
    # running of its handler (a C function raising it and reading the flag around it)
    code = """
import ctypes, signal
from tangentia.compiler.numba_backend import sigint
assert sigint.CPYTHON_FLAG
e = sigint.jit_ir('''
declare i32 @raise(i32)
define i32 @probe(i32* %p, i32 %sig) {
  %a = load atomic i32, i32* %p monotonic, align 4
  %r = call i32 @raise(i32 %sig)
  %b = load atomic i32, i32* %p monotonic, align 4
  %s = shl i32 %b, 8
  %o = or i32 %a, %s
  ret i32 %o
}''')
probe = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int)(e.get_function_address("probe"))
seen = []
signal.signal(signal.SIGUSR1, lambda s, f: seen.append(s))
print("PROBE", probe(sigint._PENDING, signal.SIGUSR1), seen, ctypes.c_int.from_address(sigint._PENDING).value)
"""
    p, lines, _ = _child(code)
    assert p.returncode == 0, p.stderr[-3000:]
    # before: 0, after: 1 (0x100); the handler ran afterwards and the flag is clear again
    assert ["PROBE", "256", f"[{int(signal.SIGUSR1)}]", "0"] in lines, lines


def test_interrupt_main_from_another_thread_stops_a_compiled_loop(cache):
    # _thread.interrupt_main() (a watchdog thread, an IDE's stop button) sends no signal: it
    # trips Python's SIGINT flag alone, which only the poll of CPython's flag sees (hung before)
    code = _PRELUDE + """
import _thread
threading.Timer(0.3, _thread.interrupt_main).start()
t0 = time.perf_counter()
try:
    g(1.0, NEVER)
    print("RETURNED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", round(time.perf_counter() - t0, 3), flush=True)
print("AGAIN", float(g(1.0, 10)) == warm, flush=True)
"""
    p, lines, _ = _child(code, env=cache)
    assert p.returncode == 0, (lines, p.stderr[-3000:])
    stopped = [w for w in lines if w[0] == "INTERRUPTED"]
    assert stopped and float(stopped[0][1]) < 5.0 and ["AGAIN", "True"] in lines, lines
