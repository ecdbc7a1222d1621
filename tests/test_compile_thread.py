"""The background compile thread of tiered jit never leaves anyone waiting forever.

Before 2026-12-07: a compile that failed while warnings were errors (``-W error``,
pytest's ``filterwarnings = error``) killed the thread (its warning was raised there), so
``wait_for_compiles()`` and ``Tiered.wait()`` hung and no later program was ever compiled;
a wait after the interpreter had started to exit hung (the thread had stopped); and a child
made by ``fork`` (``multiprocessing``'s default on Linux) had no compile thread, so a wait
there hung and its programs stayed on the NumPy tier.  Each case runs in a fresh process
(a backend of its own, slow but numba-free) with a timeout: a hang fails.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PRELUDE = textwrap.dedent("""
    import os, sys, threading, time, warnings
    import numpy as np
    import tangentia as tg
    from tangentia.compiler import backend as B

    class Slow(B.Backend):     # the NumPy backend's code, after a pause (a slow compile)
        name = "slow-for-test"
        slow_compile = True
        pause = 0.3
        fail = False
        def compile(self, jaxpr):
            time.sleep(self.pause)
            if self.fail:
                raise RuntimeError("cannot compile this")
            fn = B.get_backend("numpy").compile(jaxpr)
            return lambda *args: fn(*args)      # (its own callable: not the fallback)
        def compile_estimate(self, jaxpr):
            return 0.1
        def source(self, jaxpr):
            return ""

    B.register_backend(Slow())
    tg.config.update("jit_tiered", True)

    def tier(g):
        fns = [f for c in g.fast_caches.values() for f, _, _ in c.values()]
        return fns[0] if fns and type(fns[0]) is B.Tiered else None
    x = np.arange(3.0)
""")


def _run(code: str) -> list[str]:
    p = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=60, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout.split()


def test_a_failed_compile_with_warnings_as_errors_leaves_the_thread_alive() -> None:
    out = _run("""
        warnings.simplefilter("error")
        Slow.fail = True
        bad = tg.jit(lambda x: x * 2.0, backend="slow-for-test")
        bad(x); t = tier(bad); bad(x)                 # (the second call queues the compile)
        B.wait_for_compiles()                         # (hung: the thread had died)
        Slow.fail = False
        print("FELLBACK", t.native is t.fallback)
        ok = tg.jit(lambda x: x * 3.0, backend="slow-for-test")
        ok(x); t2 = tier(ok); ok(x)
        print("COMPILED", t2.wait(30) is not t2.fallback, np.array_equal(ok(x), x * 3.0))
    """)
    assert out == ["FELLBACK", "True", "COMPILED", "True", "True"], out


def test_waits_while_the_interpreter_exits_return() -> None:
    out = _run("""
        g = tg.jit(lambda x: x * 2.0, backend="slow-for-test")
        g(x); t = tier(g)
        h = tg.jit(lambda x: x + 1.0, backend="slow-for-test")
        h(x); h(x)
        B.wait_for_compiles()        # (the thread runs)
        B._EXITING.set()             # (as atexit does)
        t0 = time.perf_counter()
        B.wait_for_compiles()
        native = t.wait()            # queued now: no compile starts, the NumPy code serves
        print("RETURNED", native is t.fallback, time.perf_counter() - t0 < 5,
              np.array_equal(g(x), x * 2.0))
    """)
    assert out == ["RETURNED", "True", "True", "True"], out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_compiles_in_its_own_thread() -> None:
    out = _run("""
        Slow.pause = 1.0
        g = tg.jit(lambda x: x * 2.0, backend="slow-for-test")
        g(x); t = tier(g); g(x)      # queued: compiling in the parent's thread for 1 s
        time.sleep(0.2)
        pid = os.fork()
        if pid == 0:                 # the child: the parent's thread is not here
            try:
                Slow.pause = 0.0
                native = t.wait(30)  # (hung: queued in the parent, no thread in the child)
                h = tg.jit(lambda x: x + 1.0, backend="slow-for-test")
                h(x); th = tier(h); h(x)
                B.wait_for_compiles(30)
                print("CHILD", native is not t.fallback, th.native is not None
                      and th.native is not th.fallback, np.array_equal(g(x), x * 2.0), flush=True)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        print("PARENT", t.wait(30) is not t.fallback, flush=True)
    """)
    assert out == ["CHILD", "True", "True", "True", "PARENT", "True"], out


def test_the_interpreter_exits_after_the_c_call_the_compile_is_in() -> None:
    # The interpreter used to go on to its end while the compile thread was inside LLVM
    # (the GIL released), and LLVM's static destructors ran under it: SIGSEGV/SIGABRT in
    # 3 of 18 runs of a script whose second call queued compiles.  Exit then waited for the
    # whole compile.  Now the compile is abandoned at its next bytecode: exit waits for the
    # C call it is in (here ``time.sleep``, as LLVM would be), the compile never reaches its
    # end, and none of the queued ones starts.
    out = _run("""
        class Said(Slow):
            name = "said-for-test"
            pause = 1.0
            def compile(self, jaxpr):
                print("START", flush=True)
                fn = Slow.compile(self, jaxpr)
                print("END", flush=True)
                return fn
        B.register_backend(Said())
        fs = [tg.jit(lambda x, k=k: x * k, backend="said-for-test") for k in (2.0, 3.0, 4.0)]
        for f in fs:
            f(x); f(x)               # (the second call queues its compile)
        while not B._COMPILING.locked():
            time.sleep(0.01)
        time.sleep(0.3)              # (the first compile is inside its one-second C call)
        import atexit
        atexit.register(lambda: print("LAST", B._COMPILING.locked(), flush=True))
        print("EXIT", flush=True)
    """)
    # (atexit runs the script's handler first: the compile is still in its C call then)
    assert out == ["START", "EXIT", "LAST", "True"], out


def test_a_compile_running_python_code_is_abandoned_at_exit() -> None:
    # A compile of 200 steps of Python (numba's typing and lowering are Python), 10 s in
    # all: the script ends after a few of them, and the compile stops within a step or two
    # of exit (at most 20 counted, for a machine under load), not after all 200.
    out = _run("""
        class Steps(Slow):
            name = "steps-for-test"
            def compile(self, jaxpr):
                for i in range(200):
                    print("STEP", flush=True)
                    time.sleep(0.05)
                print("END", flush=True)
                return Slow.compile(self, jaxpr)
        B.register_backend(Steps())
        f = tg.jit(lambda x: x * 2.0, backend="steps-for-test")
        f(x); f(x)
        while not B._COMPILING.locked():
            time.sleep(0.01)
        time.sleep(0.1)
        print("EXIT", flush=True)
    """)
    assert "END" not in out, out
    assert out.index("EXIT") >= 1 and len(out) - out.index("EXIT") - 1 <= 20, out


def test_a_compile_inside_a_c_callback_is_abandoned_quietly() -> None:
    # Raised inside a Python callback that C code calls (llvmlite's object cache during
    # numba's compile; here libc's qsort, for about a second), the exception would be
    # printed as "Exception ignored" and dropped, and the compile would run to its end.
    # Exit keeps it quiet and raises it again until it lands in the compile's own code:
    # here in the first of the 100 steps after the sort.
    p = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent("""
        import ctypes, ctypes.util
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
        def cmp(a, b):
            time.sleep(0.0005)
            return a[0] - b[0]
        class InC(Slow):
            name = "in-c-for-test"
            def compile(self, jaxpr):
                arr = (ctypes.c_int * 200)(*range(200, 0, -1))
                print("SORT", flush=True)
                libc.qsort(arr, 200, ctypes.sizeof(ctypes.c_int), CMP(cmp))
                for i in range(100):
                    print("STEP", flush=True)
                    time.sleep(0.02)
                print("END", flush=True)
                return Slow.compile(self, jaxpr)
        B.register_backend(InC())
        f = tg.jit(lambda x: x * 2.0, backend="in-c-for-test")
        f(x); f(x)
        while not B._COMPILING.locked():
            time.sleep(0.01)
        time.sleep(0.2)
        print("EXIT", flush=True)
    """)], capture_output=True, text=True, timeout=60, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout.split()
    assert out[:2] == ["SORT", "EXIT"] and "END" not in out and out.count("STEP") <= 20, out
    assert "Exception ignored" not in p.stderr and "_Abandoned" not in p.stderr, p.stderr[-3000:]
