"""jit's results share memory with nothing: no argument, no constant, no memory a callback
returned, no other result, and no element with another of the same result.

JAX's jit returns new buffers.  Before 2026-12-07 the NumPy backend (tier 0 of tiered jit,
``TANGENTIA_JIT_BACKEND=numpy``) returned views of the caller's array for ``x.reshape``,
``x[2:5]``, ``.T``, ``x[::-1]``, ``x[None]``, a loop that ran zero times and a ``cond``
passing its operand through, a read-only broadcast view for ``broadcast_to``, and two views
of one array for ``(y, y.T)``; the numba backend did the same on the NumPy calls it runs for
large arrays, and returned the argument itself for ``stop_gradient``; both returned a
``pure_callback``'s own array.  Writing into such a result changed the caller's array or
the next call's result: a silently wrong number, and a tier-dependent one.
``compiler/backend._aliased_outputs`` finds, per program, the outputs that may share
memory (every equation that does not allocate passes on its inputs' memory), and only those
are copied: programs computing their results pay nothing (checked below on a gradient).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.compiler import backend as B

G = np.arange(6.0)      # a callback's own array


def _cb(x: Any) -> Any:
    return tg.pure_callback(lambda x: G, tg.ShapeDtypeStruct((6,), np.float64), x)


def _cases(n: int) -> dict[str, Callable[..., Any]]:
    C = np.arange(float(n))
    return {
        "reshape": lambda x: x.reshape(3, -1),
        "slice": lambda x: x[2:5],
        "T": lambda x: x.reshape(3, -1).T,
        "rev": lambda x: x[::-1],
        "broadcast": lambda x: tnp.broadcast_to(x, (3, n)),
        "broadcast_new": lambda x: tnp.broadcast_to(x * 2.0, (3, n)),
        "expand": lambda x: x[None],
        "squeeze": lambda x: tnp.squeeze(x[None]),
        "value_and_view": lambda x: ((x + 1).reshape(3, -1), (x + 1).reshape(3, -1).T),
        "twice_computed": lambda x: (x * 2, (x * 2)[1:]),
        "constant_view": lambda x: (x * 2, C[2:5]),
        "while_zero_trips": lambda x: lax.while_loop(lambda c: c[0] > 0, lambda c: c, x),
        "fori_zero_trips": lambda x: lax.fori_loop(0, 0, lambda i, c: c + 1, x),
        "cond": lambda x: lax.cond(True, lambda x: x, lambda x: x * 2, x),
        "callback": _cb,
        "stop_gradient": lambda x: lax.stop_gradient(x),
        "einsum_T": lambda x: tnp.einsum("ij->ji", x.reshape(3, -1)),     # (NumPy: a view)
        "einsum_same": lambda x: tnp.einsum("ij->ij", x.reshape(3, -1)),
        "sin_and_stop_gradient": lambda x: (tnp.sin(x), lax.stop_gradient(x)),
    }


def _check(g: Callable[..., Any], f: Callable[..., Any], n: int, name: str) -> None:
    x = np.arange(float(n))
    consts = [np.arange(float(n)), G]
    g_before = G.copy()
    want = f(np.arange(float(n)))
    out = g(x)
    outs = out if isinstance(out, tuple) else (out,)
    wants = want if isinstance(want, tuple) else (want,)
    for k, (o, w) in enumerate(zip(outs, wants)):
        np.testing.assert_allclose(o, w, rtol=1e-14)   # (numba: its own sin)
        assert not np.shares_memory(o, x), (name, k)
        assert not any(np.shares_memory(o, c) for c in consts), (name, k)
        assert not any(np.shares_memory(o, p) for p in outs[:k]), (name, k)
        assert o.flags.writeable, (name, k)
        o[...] = -7.0
        if o.size > 1:      # (a broadcast view repeats its elements)
            o.reshape(-1)[0] = 5.0
            assert (o.reshape(-1)[1:] == -7.0).all(), (name, k)
    np.testing.assert_array_equal(x, np.arange(float(n)))
    np.testing.assert_array_equal(G, g_before)
    again = g(np.arange(float(n)))
    for o, w in zip(again if isinstance(again, tuple) else (again,), wants):
        np.testing.assert_allclose(o, w, rtol=1e-14)   # (numba: its own sin)


@pytest.mark.parametrize("name", sorted(_cases(12)))
def test_numpy_backend(name: str) -> None:
    # (tier 0 of tiered jit runs the same code: compile_program's Tiered wraps it alike)
    for n in (12, 3000):
        f = _cases(n)[name]
        _check(tg.jit(f, backend="numpy"), f, n, name)


@pytest.mark.parametrize("n", [12, 120_000])      # (120,000: NumPy calls inside numba's)
def test_numba_backend(n: int) -> None:
    pytest.importorskip("numba")
    tg.config.update("jit_tiered", False)
    try:
        for name, f in _cases(n).items():
            if n == 12 and name in ("broadcast", "broadcast_new", "value_and_view", "einsum_T",
                                    "einsum_same"):
                continue    # (compiled like their siblings; saves three compiles)
            _check(tg.jit(f, backend="numba"), f, n, name)
    finally:
        tg.config.update("jit_tiered", None)


def test_tier_zero_of_tiered_numba() -> None:
    pytest.importorskip("numba")
    tg.config.update("jit_tiered", True)
    try:
        for name in ("reshape", "value_and_view", "callback"):
            f = _cases(12)[name]
            g = tg.jit(f, backend="numba")
            x = np.arange(12.0)
            out = g(x)          # the first call: the NumPy tier, nothing compiled
            outs = out if isinstance(out, tuple) else (out,)
            assert not any(np.shares_memory(o, x) or np.shares_memory(o, G) for o in outs), name
            assert len(outs) == 1 or not np.shares_memory(outs[0], outs[1]), name
    finally:
        tg.config.update("jit_tiered", None)


def test_programs_computing_their_results_are_not_wrapped() -> None:
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((4, 4)), rng.standard_normal(4)) for _ in range(3)]
    X = rng.standard_normal((5, 4))

    def loss(p: Any) -> Any:
        h = X
        for W, b in p:
            h = h + tnp.tanh(h @ W + b)
        return tnp.mean(h ** 2)
    for f, args in [(tg.grad(loss), (params,)),
                    (tg.value_and_grad(lambda x: tnp.sum(tnp.sin(x))), (np.ones(3),)),
                    (lambda x: lax.fori_loop(0, 10, lambda i, c: c * 0.5 + 1, x), (np.ones(3),)),
                    (lambda x: lax.cond(x[0] > 0, tnp.sin, tnp.cos, x), (np.ones(3),)),
                    (lambda x: (x.sum(0), x.T @ x, x.astype(np.float32)), (np.ones((3, 2)),))]:
        assert B._aliased_outputs(tg.make_jaxpr(f)(*args).jaxpr) == ()
    # and the ones that may share memory are found
    x = np.ones(3)
    for f, want in [(lambda x: (x * 2, x.reshape(3, 1)), (1,)),
                    (lambda x: (lax.fori_loop(0, 10, lambda i, c: c, x), x * 2), (0,)),
                    (lambda x: (x.astype(np.float64), x.sum(axis=())), (0, 1))]:
        assert B._aliased_outputs(tg.make_jaxpr(f)(x).jaxpr) == want


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_ahead_of_time_compiled(backend: str) -> None:
    # jit(f).lower(...).compile() runs the backend's code directly (no tiers): copied alike
    if backend == "numba":
        pytest.importorskip("numba")
    for name in ("slice", "value_and_view", "stop_gradient"):
        f = _cases(12)[name]
        _check(tg.jit(f, backend=backend).lower(np.arange(12.0)).compile(), f, 12, name)


def test_a_program_the_walk_cannot_read_copies_every_output(monkeypatch: Any) -> None:
    from tangentia.primitives.elementwise import mul_p

    def unreadable(eqn: Any) -> bool:
        raise KeyError("a parameter this rule does not know")
    monkeypatch.setitem(B.FRESH, mul_p, unreadable)
    jaxpr = tg.make_jaxpr(lambda x: (x * 2.0, x + 1.0))(np.ones(3)).jaxpr
    assert B._aliased_outputs(jaxpr) == (0, 1)     # (not an error: jit still runs)


def test_a_while_loops_carry_is_its_initial_value_or_what_its_body_allocates() -> None:
    x = np.ones(3)

    def loop(init: Any) -> Any:
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.5), (0, init))[1]
    cases = [(lambda x: loop(x * 2.0), ()),                   # a computed start: not wrapped
             (lambda x: loop(x), (0,)),                        # the argument at zero trips
             (lambda x: (loop(x * 2.0), x * 2.0), (1,)),       # the start is also a result
             (lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1]),
                                       (0, x * 2.0))[1], (0,))]  # (passed on: any input's)
    for f, want in cases:
        assert B._aliased_outputs(tg.make_jaxpr(f)(x).jaxpr) == want
        for backend in ("numpy",):
            g = tg.jit(f, backend=backend)
            out = g(x)
            outs = out if isinstance(out, tuple) else (out,)
            assert not any(np.shares_memory(o, x) for o in outs)
            assert len(outs) == 1 or not np.shares_memory(outs[0], outs[1])
