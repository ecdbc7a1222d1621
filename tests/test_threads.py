"""Tracing is thread-safe: the current interpreter lives in a context variable,
so transformations running in different threads do not see each other."""
import threading

import numpy as np

import tangentia as tg
import tangentia.numpy as tnp


def _loss(w, x):
    return tnp.sum(tnp.tanh(x @ w) ** 2)


def test_concurrent_grad_vmap_jit_agree_with_serial():
    rng = np.random.default_rng(0)
    ws = [rng.normal(size=3) for _ in range(8)]
    x = rng.normal(size=(5, 3))
    want = [tg.grad(_loss)(w, x) for w in ws]
    jitted = tg.jit(tg.grad(_loss))
    results = {}
    errors = []

    def work(i):
        try:
            for _ in range(20):
                w = ws[i]
                a = tg.grad(_loss)(w, x)
                b = jitted(w, x)
                c = tg.vmap(tg.grad(_loss), in_axes=(0, None))(np.stack([w, w]), x)[1]
                d = tg.jvp(lambda v: tg.grad(_loss)(v, x), (w,), (np.ones(3),))[1]
                results[i] = (a, b, c, d)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(ws))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    hess = [tg.hessian(lambda v: _loss(v, x))(w) @ np.ones(3) for w in ws]
    for i in range(len(ws)):
        a, b, c, d = results[i]
        np.testing.assert_allclose(a, want[i], rtol=1e-12)
        np.testing.assert_allclose(b, want[i], rtol=1e-12)
        np.testing.assert_allclose(c, want[i], rtol=1e-12)
        np.testing.assert_allclose(d, hess[i], rtol=1e-10)


def test_trace_state_does_not_leak_between_threads():
    seen = []
    barrier = threading.Barrier(2)

    def inside_jit(x):
        barrier.wait(timeout=10)  # the other thread runs eagerly meanwhile
        return x * 2

    def eager():
        barrier.wait(timeout=10)
        seen.append(type(tnp.sin(np.ones(2))))

    t1 = threading.Thread(target=lambda: seen.append(tg.jit(inside_jit)(np.ones(2))))
    t2 = threading.Thread(target=eager)
    t1.start(); t2.start(); t1.join(); t2.join()
    assert any(isinstance(s, type) and issubclass(s, np.ndarray) for s in seen)  # eager result
    arrays = [s for s in seen if isinstance(s, np.ndarray)]
    np.testing.assert_array_equal(arrays[0], [2.0, 2.0])
