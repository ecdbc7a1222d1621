"""Threads tracing, calling and clearing at once: right results, no deadlock, no crash.

Eight threads jit, grad and vmap functions of their own and one function they share, on
the NumPy backend and on a tiered slow backend (whose background compiles race with the
calls), while one thread keeps calling ``clear_caches()`` and each worker traces a function
that raises half-way every other round; every result is checked against a single-thread
run.  Before 2026-12-07, ``clear_caches()`` called while another thread's first numba
compile was importing ``numba_backend.pool`` raised ``AttributeError: partially
initialized module ... has no attribute 'release'``.  The stress runs in a fresh process
with a timeout (a deadlock fails, as a crash does).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import pytest

import tangentia as tg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_clear_caches_while_another_thread_imports_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    # (what clear_caches finds in sys.modules while the import runs: a module without its names)
    name = "tangentia.compiler.numba_backend.pool"
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    tg.clear_caches()


_STRESS = textwrap.dedent("""
    import faulthandler, sys, threading, time
    faulthandler.dump_traceback_later(150, exit=True)      # (a deadlock: stacks, then exit 1)
    import numpy as np
    import tangentia as tg
    import tangentia.numpy as tnp
    from tangentia import lax
    from tangentia.compiler import backend as B

    class Slow(B.Backend):      # the NumPy backend's code after a pause: a slow, tiered backend
        name = "slow-for-threads"
        slow_compile = True
        def compile(self, jaxpr):
            time.sleep(0.02)
            fn = B.get_backend("numpy").compile(jaxpr)
            return lambda *args: fn(*args)
        def compile_estimate(self, jaxpr):
            return 0.01
        def source(self, jaxpr):
            return ""

    B.register_backend(Slow())
    tg.config.update("jit_tiered", True)

    def loss(w, x, k):
        body = lambda i, c: c + tnp.sin(c) * 0.1
        return tnp.sum(tnp.tanh(x @ w * (1 + 0.1 * k)) ** 2) + lax.fori_loop(0, 3, body, w)[0]

    rng = np.random.default_rng(0)
    ws = [rng.normal(size=3) for _ in range(8)]
    x = rng.normal(size=(5, 3))
    want = [(tg.grad(loss)(ws[i], x, i % 3),
             tg.vmap(lambda v: loss(v, x, i % 3))(np.stack([ws[i], 2 * ws[i]]))) for i in range(8)]
    backends = ("numpy", "slow-for-threads")
    shared = {b: tg.jit(tg.grad(loss), static_argnums=2, backend=b) for b in backends}
    errors, done, stop = [], [], threading.Event()

    class Boom(Exception):
        pass

    def work(i):
        b, k, w = backends[i % 2], i % 3, ws[i]
        own = tg.jit(lambda w, x: loss(w, x, k), backend=b)
        own_vmap = tg.jit(tg.vmap(lambda v: loss(v, x, k)), backend=b)
        try:
            for r in range(12):
                np.testing.assert_allclose(shared[b](w, x, k), want[i][0], rtol=1e-12)
                np.testing.assert_allclose(tg.grad(own)(w, x), want[i][0], rtol=1e-12)
                np.testing.assert_allclose(own_vmap(np.stack([w, 2 * w])), want[i][1], rtol=1e-12)

                def bad(w):
                    y = tnp.sin(w)
                    if r % 2 == 0:
                        raise Boom("half-way through the trace")
                    return y
                try:
                    out = tg.jit(tg.grad(lambda w: tnp.sum(bad(w))), backend=b)(w)
                    np.testing.assert_allclose(out, np.cos(w), rtol=1e-12)
                except Boom:
                    assert r % 2 == 0
            done.append(i)
        except BaseException:
            import traceback
            errors.append(traceback.format_exc())

    def clearer():
        while not stop.is_set():
            try:
                tg.clear_caches()
            except BaseException:
                import traceback
                errors.append(traceback.format_exc())
            time.sleep(0.005)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    c = threading.Thread(target=clearer)
    c.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    c.join()
    assert not errors, errors[0]
    B.wait_for_compiles(60)
    print("done", len(done))
    np.testing.assert_allclose(shared["slow-for-threads"](ws[1], x, 1), want[1][0], rtol=1e-12)
    print("after", 1)
""")


def test_eight_threads_with_tiered_compiles_and_clear_caches_agree_with_one() -> None:
    env = dict(os.environ, PYTHONPATH=ROOT, TANGENTIA_COMPILE_PROGRESS="0")
    p = subprocess.run([sys.executable, "-c", _STRESS], capture_output=True, text=True, timeout=200,
                       cwd=ROOT, env=env)
    assert p.returncode == 0, f"exit status {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    assert p.stdout.split() == ["done", "8", "after", "1"], p.stdout
