"""jit binds a program's constants once (``api/staging._bound``, the numba runner's
``bind``), and takes their values when it traces, as JAX's jit does.

The numba backend's runner converts and packs the leading inputs it is bound to once
(``objcache.runner``'s ``bind``); the calls then pass only the arguments.  The bound
callable must give the same bits as the unbound one, check its arguments as the unbound
one does, and a closed-over array changed in place after the trace is not seen, on
either backend, tiered or not (JAX: ``jit(lambda x: x + a)(1.0)`` stays ``a + 1`` for the
old ``a``; a new trace -- another argument type -- sees the new value).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.compiler import backend as B
from tangentia.compiler.numba_backend import objcache

NB = (np.arange(16) + 1) % 16


def _sim(x0, v0, n=2):
    """The spring chain of ``bench_cold.py``'s physics family (gathers at constant index
    arrays, ``.at[].set``): its gradient closes over 3 constants per step."""
    x, v = x0, v0
    for _ in range(n):
        f = (x[NB] - x) * 2.0 - (x - x[NB - 1]) * 1.5 - 0.1 * v
        v = (v + 0.01 * f).at[0].set(0.0)
        x = x + 0.01 * v
        x = x.at[:, 1].set(tnp.maximum(x[:, 1], 0.0))
    return tnp.sum(x ** 2) + tnp.sum(v ** 2)


def _args():
    rng = np.random.default_rng(0)
    return rng.standard_normal((16, 2)), rng.standard_normal((16, 2)) * 0.1


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_closed_over_array_changed_after_trace_is_not_seen(backend):
    a = np.ones(3)
    f = tg.jit(lambda x: x + a, backend=backend)
    np.testing.assert_array_equal(f(1.0), [2.0, 2.0, 2.0])
    a[:] = 5.0
    np.testing.assert_array_equal(f(1.0), [2.0, 2.0, 2.0])     # (the fast path)
    np.testing.assert_array_equal(f(x=1.0), [6.0, 6.0, 6.0])   # (a new trace: JAX's too)


def test_tiered_native_code_keeps_the_traced_constants():
    a = np.arange(4.0)
    f = tg.jit(lambda x: tnp.sin(x) * a + a[::-1])
    x = np.linspace(0.0, 1.0, 4)
    tg.config.update("jit_tiered", True)
    tg.config.update("jit_backend", "numba")
    try:
        first = np.asarray(f(x))    # (the NumPy backend)
        a[:] = -1.0
        f(x)                        # (the second call queues the compile)
        B.wait_for_compiles(300)
        after = np.asarray(f(x))    # (the native code, its constants bound)
    finally:
        B.wait_for_compiles(300)
        tg.config.update("jit_tiered", None)
        tg.config.update("jit_backend", None)
    assert type(f.fast_caches["numba"][((4,), np.dtype(np.float64)),][0]).__name__ != "Tiered"
    np.testing.assert_allclose(first, np.sin(x) * np.arange(4.0) + np.arange(4.0)[::-1], rtol=1e-15)
    np.testing.assert_allclose(after, first, rtol=1e-15)


def _runner(fn):
    """The numba runner of the program ``jit(fn)`` traces for ``_args()``, its constants,
    and the arguments."""
    from tangentia.api.staging import _abstractify, _stage
    from tangentia.tree_util import tree_flatten
    x0, v0 = _args()
    leaves, tree = tree_flatten(((x0, v0), {}))
    jaxpr, consts, _ = _stage(fn, (), tree, tuple(_abstractify(a) for a in leaves), "jit",
                              as_program=True)
    return B.get_backend("numba").compile(jaxpr), consts, (x0, v0)


def test_bound_runner_gives_the_same_bits_and_checks_arguments():
    run, consts, args = _runner(tg.grad(_sim, argnums=(0, 1)))
    # (the gradient of 2 steps: index arrays (not packed) and zeros and scalars (packed))
    kinds = {(np.asarray(c).dtype.kind, np.ndim(c)) for c in consts}
    assert ("i", 1) in kinds and ("f", 2) in kinds and ("f", 0) in kinds, kinds
    assert run.packed and any(i < len(consts) for i in run.packed)
    bound = run.bind(consts)
    want = run(*consts, *args)
    got = bound(*args)
    assert len(got) == len(want) == 2
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()
    again = bound(*args)            # (the bound prefix is not consumed by a call)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(again, want))
    # the arguments are checked as the unbound runner checks them
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        bound(args[0])
    with pytest.raises(TypeError, match="shape"):
        bound(args[0], np.zeros((16, 3)))
    with pytest.raises(TypeError, match="shape"):
        run.bind([np.zeros(3)] + list(consts[1:]))
    assert run.bind(()) is run
    # a list, a float32 array: converted as the unbound runner converts them
    other = (args[0].tolist(), args[1].astype(np.float32))
    got, want = bound(*other), run(*consts, *other)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(got, want))


def test_jit_of_grad_against_numpy_backend_eager_and_finite_differences():
    x0, v0 = _args()
    g = tg.grad(_sim, argnums=(0, 1))
    nb = [np.asarray(t) for t in tg.jit(g, backend="numba")(x0, v0)]
    npb = [np.asarray(t) for t in tg.jit(g, backend="numpy")(x0, v0)]
    eager = [np.asarray(t) for t in g(x0, v0)]
    again = [np.asarray(t) for t in tg.jit(g, backend="numba")(x0, v0)]   # (bound, fast path)
    for a, b, c, d in zip(nb, npb, eager, again):
        assert a.tobytes() == b.tobytes() == c.tobytes() == d.tobytes()
    f = lambda x, v: float(_sim(tnp.asarray(x), tnp.asarray(v)))  # noqa: E731
    eps = 1e-6
    for k, arg in enumerate((x0, v0)):
        for idx in [(0, 0), (3, 1), (15, 0), (7, 1)]:
            p, m = [x0.copy(), v0.copy()], [x0.copy(), v0.copy()]
            p[k][idx] += eps
            m[k][idx] -= eps
            fd = (f(*p) - f(*m)) / (2 * eps)
            assert abs(nb[k][idx] - fd) <= 1e-7 * max(1.0, abs(fd)), (k, idx, nb[k][idx], fd)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_fast_path_results_keep_their_tree(backend):
    """The fast path returns a flat tuple of results as a tuple without unflattening
    (``staging._tuple_tree``); every other tree as before, the same on the first call
    (traced) and the later ones, leaves tangentia arrays."""
    x = np.arange(3.0)
    fns = [lambda x: (x, x * 2.0), lambda x: [x, x + 1.0], lambda x: (x,), lambda x: (),
           lambda x: ((x, x),), lambda x: {"a": x}, lambda x: (x, 1.0), lambda x: (x[0], x)]
    for f in fns:
        j = tg.jit(f, backend=backend)
        first, second = j(x), j(x)
        want = tg.tree_util.tree_structure(f(tnp.asarray(x)))
        for r in (first, second):
            assert tg.tree_util.tree_structure(r) == want
            assert type(r) is type(f(x))
            for a, b in zip(tg.tree_util.tree_leaves(r), tg.tree_util.tree_leaves(f(x))):
                assert type(a).__name__ == "ArrayImpl"
                np.testing.assert_array_equal(a, b)
