"""Ctrl-C (a real SIGINT, in a child process) stops every loop a user can start, within ~2 s,
and the process stays usable: the next call of the same program computes the same numbers
and, after the interrupted calls, the machine-code cache serves a new process that runs the
same programs (and is interrupted the same way) without numba.

The loops: a jitted ``while_loop`` that never ends on the numba tier, on the NumPy tier while
its background compile runs, and across the switch of tiers; an eager ``while_loop``; ``vmap``
of a ``while_loop`` one lane of which never ends; a jitted ``scan`` of 10^9 steps; ``odeint``
of a stiff problem with a huge ``mxstep``; ``fixed_point`` and ``custom_root`` that never
converge; ``scipy.optimize.minimize`` with a huge ``maxiter``.  And two cases that hung
before 2026-12-07 (``sigint`` polled a flag only its own handler set): a SIGINT handler of
the user's (a Python function: it runs in the compiled loop, which goes on when it returns
and stops with its exception when it raises), and a ``pure_callback`` sleeping inside a
compiled loop (Python's handler interrupts the sleep, as it does outside compiled code).
``test_interrupt.py`` has the first compiled cases' details (the handler restored, polling).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytest.importorskip("numba")
pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals to a child process")]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The child runs the cases of its tier one after another.  For each: a short call (its
# result kept), "READY <case> <signals>" (the parent then sends that many SIGINTs, 0.3 s
# apart, from 0.4 s on), the endless call, "STOPPED <case> <exception> <handler calls>",
# and the short call again, compared with the first.
_CHILD = r"""
import json, os, signal, sys, threading, time
import numpy as np
import tangentia as tg, tangentia.numpy as tnp
from tangentia import lax
from tangentia.compiler import backend as B
from tangentia.experimental.fixed_point import fixed_point
from tangentia.experimental.ode import odeint
from tangentia.scipy.optimize import minimize

tier = sys.argv[1]
tg.config.update("jit_tiered", tier != "numba")
NEVER = 2 ** 62


def w_while(x, n):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0), (0, x))[1]


def vmap_while(v, lim):     # a lane with v = 0 never reaches lim
    return tg.vmap(lambda v: lax.while_loop(lambda c: c < lim, lambda c: c + v, 0.0))(v)


def stiff(y, t, k):
    return tnp.stack([-k * (y[0] - tnp.cos(t)), y[0] - y[1]])


def ode(y0, k, T):          # k = 1e7 over T = 1e6: ~1e13 explicit steps
    return odeint(stiff, y0, tnp.linspace(0.0, T, 5), k, mxstep=10 ** 12)


def fixed(a, x0, m):        # tol < 0: exactly m applications
    return fixed_point(lambda a, x: a * x + 1.0, a, x0, tol=-1.0, max_iter=m)


def root(a, eps):           # eps < 0: the solve never stops
    def solve(g, x0):
        return lax.while_loop(lambda x: tnp.abs(g(x)) > eps, lambda x: x - 0.5 * g(x), x0)
    return lax.custom_root(lambda x: x * x - a, 1.0, solve, lambda g, y: y / 2.0)


def scan(x, n):             # n static: 10 or 10**9 steps
    return lax.fori_loop(0, n, lambda i, s: s * 0.5 + 1.0, x)


def sleepy(x):
    time.sleep(float(x))
    return np.float64(x)


def callback_loop(x, n):
    body = lambda c: (c[0] + 1, tg.pure_callback(sleepy, tg.ShapeDtypeStruct((), np.float64), c[1]))
    return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]


def bfgs(x0, m):
    return minimize(lambda x: tnp.sum(tnp.exp(-x)), x0, method="BFGS",
                    options={"maxiter": m, "gtol": 0.0}).x


class Stop(Exception):
    pass


calls = []


def handler(sig, frame):    # the user's: the first SIGINT is counted, the second stops
    calls.append(sig)
    if len(calls) > 1:
        raise Stop


v2 = (np.array([1.0, 2.0]), 5.0), (np.array([1.0, 0.0]), 5.0)
if tier == "numba":
    cases = [("jit while", tg.jit(w_while), (1.0, 10), (1.0, NEVER)),
             ("eager while", w_while, (1.0, 10), (1.0, NEVER)),
             ("jit vmap while", tg.jit(vmap_while), *v2),
             ("jit scan", tg.jit(scan, static_argnums=1), (1.0, 10), (1.0, 10 ** 9)),
             ("odeint", ode, (np.array([0.0, 1.0]), 1.0, 1.0), (np.array([0.0, 1.0]), 1e7, 1e6)),
             ("fixed_point", fixed, (0.5, 0.0, 10), (0.5, 0.0, NEVER)),
             ("jit custom_root", tg.jit(root), (2.0, 1e-9), (2.0, -1.0)),
             ("pure_callback", tg.jit(callback_loop), (0.0, 2), (100.0, 3)),
             ("user handler", tg.jit(w_while), (1.0, 10), (1.0, NEVER))]
elif tier == "cached":      # a new process: the machine code kept by the first child
    cases = [("jit while", tg.jit(w_while), (1.0, 10), (1.0, NEVER)),
             ("jit vmap while", tg.jit(vmap_while), *v2)]
else:                       # tiered: the first calls run on the NumPy tier; after the
    #                         tier switch's case, on the NumPy backend
    cases = [("tier switch", tg.jit(w_while), (1.0, 10), (1.0, NEVER)),
             ("eager vmap while", vmap_while, *v2),
             ("minimize", tg.jit(bfgs), (np.full(300, 0.3), 3), (np.full(300, 0.3), NEVER)),
             ("odeint", ode, (np.array([0.0, 1.0]), 1.0, 1.0), (np.array([0.0, 1.0]), 1e7, 1e6)),
             ("fixed_point", fixed, (0.5, 0.0, 10), (0.5, 0.0, NEVER))]

first = {}
for name, f, short, endless in cases:
    first[name] = np.asarray(f(*short))
    signals = 1
    if name == "user handler":
        signal.signal(signal.SIGINT, handler)
        signals = 2
    if name == "tier switch":   # the endless call queues the compile and runs on the NumPy
        def switched():         # tier; "SWITCHED" once the native code is there (mid-loop)
            while not B._QUEUE:
                time.sleep(0.01)
            B.wait_for_compiles(120)
            print("SWITCHED", flush=True)
        threading.Thread(target=switched, daemon=True).start()
    if name == "eager vmap while":  # the other cases on the NumPy tier: no compile meanwhile
        tg.config.update("jit_backend", "numpy")
    print("READY", name.replace(" ", "_"), signals, flush=True)
    try:
        f(*endless)
        print("RETURNED", flush=True)
    except (KeyboardInterrupt, Stop) as e:
        print("STOPPED", name.replace(" ", "_"), type(e).__name__, len(calls), flush=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    again = np.asarray(f(*short))
    print("AGAIN", name.replace(" ", "_"), bool(np.array_equal(again, first[name])), flush=True)
B.wait_for_compiles(120)
same = {n: bool(np.allclose(np.asarray(f(*short)), first[n], rtol=1e-12, atol=1e-12))
        for n, f, short, _ in cases}
print("FINAL", json.dumps({"same": same, "numba": "numba" in sys.modules}), flush=True)
"""


def _as_at_a_terminal():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _run(tier, cache):
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(cache), TANGENTIA_COMPILE_PROGRESS="0",
               TANGENTIA_NUMBA_FAST_LOAD="1", TANGENTIA_JIT_BACKEND="numba", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    err = open(cache / f"{tier}.stderr", "w+")
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_CHILD), tier], env=env,
                            stdout=subprocess.PIPE, stderr=err, text=True, preexec_fn=_as_at_a_terminal)
    lines: list = []
    cond = threading.Condition()

    def reader():
        assert proc.stdout is not None
        for line in proc.stdout:
            with cond:
                lines.append((time.perf_counter(), line.split()))
                cond.notify()
        with cond:
            lines.append((time.perf_counter(), ["EOF"]))
            cond.notify()
    threading.Thread(target=reader, daemon=True).start()
    latency, stopped, again, final = {}, {}, {}, None
    seen = 0
    try:
        while True:
            with cond:
                if not cond.wait_for(lambda: len(lines) > seen, timeout=200):
                    raise AssertionError(f"{tier}: no output for 200 s after {lines[-3:]}")
                stamp, words = lines[seen]
            seen += 1
            if words[0] == "EOF":
                break
            if words[0] == "READY":
                if words[1] == "tier_switch":   # the signal once the native code is ready
                    with cond:
                        assert cond.wait_for(lambda: any(w[0] == "SWITCHED" for _, w in lines[seen:]),
                                             timeout=150), lines[-3:]
                sent = None
                for k in range(int(words[2])):
                    time.sleep(0.4 if k == 0 else 0.3)
                    with cond:      # (the second signal only while the call still runs)
                        if any(w[0] in ("STOPPED", "RETURNED") for _, w in lines[seen:]):
                            break
                    sent = time.perf_counter()
                    proc.send_signal(signal.SIGINT)

                def ended():
                    return next(((t, w) for t, w in lines[seen:] if w[0] in ("STOPPED", "RETURNED", "EOF")), None)
                with cond:
                    if not cond.wait_for(lambda: ended() is not None, timeout=30):
                        raise AssertionError(f"{tier}: {words[1]} still running 30 s after SIGINT")
                    stamp, words2 = ended()
                    seen = next(i for i in range(seen, len(lines)) if lines[i][1] is words2) + 1
                assert words2[0] == "STOPPED" and words2[1] == words[1], (words, words2)
                latency[words[1]] = stamp - sent
                stopped[words[1]] = words2[2:]
            elif words[0] == "AGAIN":
                again[words[1]] = words[2]
            elif words[0] == "FINAL":
                final = json.loads(" ".join(words[1:]))
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err.seek(0)
    text = err.read()
    err.close()
    assert proc.returncode == 0, text[-3000:]
    assert final is not None, text[-3000:]
    assert all(v < 2.0 for v in latency.values()), latency      # stopped within 2 s
    assert all(v == "True" for v in again.values()), again      # the next call: the same numbers
    assert all(final["same"].values()), final                   # native code too, after the compiles
    return latency, stopped, final


def test_ctrl_c_stops_every_loop_on_the_numba_tier_and_in_cached_code(tmp_path):
    latency, stopped, final = _run("numba", tmp_path)
    assert set(latency) == {"jit_while", "eager_while", "jit_vmap_while", "jit_scan", "odeint",
                            "fixed_point", "jit_custom_root", "pure_callback", "user_handler"}
    assert all(s == ["KeyboardInterrupt", "0"] for k, s in stopped.items() if k != "user_handler"), stopped
    # the user's handler ran in the loop at the first SIGINT (the loop went on), and its
    # exception stopped the loop at the second
    assert stopped["user_handler"] == ["Stop", "2"], stopped
    assert final["numba"]
    # a new process: the machine code kept above, run without numba, interrupted the same way
    latency, stopped, final = _run("cached", tmp_path)
    assert set(latency) == {"jit_while", "jit_vmap_while"} and not final["numba"], (latency, final)


def test_ctrl_c_stops_loops_on_the_numpy_tier_and_across_the_switch(tmp_path):
    latency, stopped, final = _run("tiered", tmp_path)
    assert set(latency) == {"tier_switch", "eager_vmap_while", "minimize", "odeint", "fixed_point"}
    assert all(s[0] == "KeyboardInterrupt" for s in stopped.values()), stopped
