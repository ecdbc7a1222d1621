"""Repeated runs of a program's array equations emitted as calls of one function
(``codegen.repeated_segments``).

A network written as a Python loop over layers repeats the same equations on arrays once
per layer (and once more, reversed, in its gradient).  Each copy becomes a call of one
outlined njit function per structure, which numba types and compiles once.  The results
must be those of the inline code bit for bit (the same operations in the same order), and
close to the NumPy backend's; scalarized programs (the IR blocks' domain) are left alone.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import codegen, native  # noqa: E402
from tangentia.compiler.numba_backend.plan import program_plan  # noqa: E402
from tangentia.compiler.numba_backend.rules import FUSIBLE, ROWS  # noqa: E402

from _numba_util import compile_numba, empty_cache, program  # noqa: E402

Case = Tuple[Callable[..., Any], List[Any]]


def _mlp(n: int, width: int = 6, batch: int = 4, odd: int = -1) -> Case:
    """grad of a residual MLP as a Python loop of n layers (a matrix, a bias and a
    scalar gain each, all differentiated); layer ``odd`` computes something else."""
    rng = np.random.default_rng(n)
    params = [(rng.standard_normal((width, width)) / width, rng.standard_normal(width) * 0.1,
               np.float64(0.5 + 0.1 * i)) for i in range(n)]
    X = rng.standard_normal((batch, width))

    def loss(p: Any) -> Any:
        h = X
        for i, (W, b, a) in enumerate(p):
            if i == odd:
                h = h * tnp.sin(h @ W) - b
            else:
                h = h + a * tnp.tanh(h @ W + b)
        return tnp.mean(h ** 2)
    return tg.grad(loss), [params]


def _sim(n: int, edited: bool = False) -> Case:
    """grad of n steps of a spring chain: a gather of neighbours and ``.at[].set`` (edited:
    one more term in the loss's last line, after the steps)."""
    nb = (np.arange(6) + 1) % 6

    def sim(x0: Any, v0: Any) -> Any:
        x, v = x0, v0
        for _ in range(n):
            f = (x[nb] - x) * 2.0 - 0.1 * v
            v = (v + 0.01 * f).at[0].set(0.0)
            x = x + 0.01 * v
            x = x.at[:, 1].set(tnp.maximum(x[:, 1], 0.0))
        out = tnp.sum(x ** 2) + tnp.sum(v ** 2)
        return out + 0.5 * tnp.sum(x) if edited else out
    rng = np.random.default_rng(0)
    return tg.grad(sim, argnums=(0, 1)), [rng.standard_normal((6, 3)), np.zeros((6, 3))]


def _run(case: Case, setting: str, monkeypatch: pytest.MonkeyPatch) -> Tuple[List[np.ndarray], int]:
    """The compiled program's results under TANGENTIA_NUMBA_SEGMENTS=setting (an empty
    cache: its code is generated here), and the copies emitted as calls."""
    monkeypatch.setenv("TANGENTIA_NUMBA_SEGMENTS", setting)
    empty_cache(monkeypatch, "tangentia_segments_")
    jaxpr, args = program(case[0], *case[1])
    args = tg.tree_util.tree_leaves(args)
    before = codegen.SEG_STATS["copies"]
    out = compile_numba(jaxpr)(*args)
    return [np.asarray(o) for o in out], codegen.SEG_STATS["copies"] - before


def _numpy(case: Case) -> List[np.ndarray]:
    jaxpr, args = program(case[0], *case[1])
    return [np.asarray(o) for o in get_backend("numpy").compile(jaxpr)(*tg.tree_util.tree_leaves(args))]


def _check(case: Case, monkeypatch: pytest.MonkeyPatch, min_copies: int) -> None:
    plain, copies0 = _run(case, "0", monkeypatch)
    calls, copies = _run(case, "1", monkeypatch)
    assert copies0 == 0
    assert copies >= min_copies
    assert len(calls) == len(plain)
    for x, y in zip(calls, plain):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
    for g, w in zip(calls, _numpy(case)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_layer_loop_grad_is_calls_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    _check(_mlp(6), monkeypatch, min_copies=2 * 3)     # forward and backward runs


def test_a_different_layer_in_the_middle(monkeypatch: pytest.MonkeyPatch) -> None:
    _check(_mlp(9, odd=4), monkeypatch, min_copies=2 * 3)


def test_gather_and_scatter_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    _check(_sim(5), monkeypatch, min_copies=3)


def _segments(case: Case) -> dict:
    jaxpr, _ = program(case[0], *case[1])
    settings = native._settings()
    plan = program_plan(jaxpr, settings, ROWS, FUSIBLE)
    return codegen.repeated_segments(plan.eqns, plan.outvars, plan.consumers, settings.limit)


def test_one_function_per_structure() -> None:
    case = _mlp(8)
    segs = _segments(case)
    keys = [key for _, _, key, _ in segs.values()]
    assert len(segs) >= 2 * 6
    assert len(set(keys)) <= 4        # the forward layer, the backward layer (and ends)
    for start, (period, sub, _, _) in segs.items():
        assert len(sub.eqns) == period and sub.outvars
    jaxpr, _ = program(case[0], *case[1])
    source = get_backend("numba").source(jaxpr)
    # (a copy is a call of a compile unit of its structure; a unit is also keyed by how
    # its inputs arrive: the first layer reads the program's input X, the others a
    # computed array, so the forward structure may be two units; never one per copy)
    assert source.count("@_jit") <= 1 + 2 * len(set(keys)) < len(segs)


def test_a_deeper_network_compiles_no_layer_again(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Any) -> None:
    """The copies are compile units cached by their structure: a network with one more
    layer (a changed program) loads every layer's code, compiling only its own."""
    import weakref
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TANGENTIA_NUMBA_UNITS", raising=False)
    monkeypatch.setenv("TANGENTIA_NUMBA_SEGMENTS", "1")
    c0 = native.UNIT_STATS["compiled"]
    for n in (6, 7):
        case = _mlp(n)
        jaxpr, args = program(case[0], *case[1])
        got = compile_numba(jaxpr)(*tg.tree_util.tree_leaves(args))
        if n == 6:
            c1 = native.UNIT_STATS["compiled"]
            assert c1 > c0                                  # the layers' units
        for g, w in zip(got, _numpy(case)):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-14)
    assert native.UNIT_STATS["compiled"] == c1              # none compiled again


def test_scalarized_programs_are_left_to_the_blocks() -> None:
    def f(x: Any) -> Any:
        for i in range(30):
            x = tnp.sin(x) * 1.01 + 0.1 if i % 2 else x * x * 0.5
        return tnp.sum(x)
    assert _segments((tg.grad(f), [np.linspace(0.0, 1.0, 8)])) == {}


def test_short_programs_have_no_segments() -> None:
    assert _segments(_mlp(2)) == {}


def test_runs_of_two_programs_do_not_share_a_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run at the top and a run of the same shape but other operations in a loop body,
    lowered by the same generator: each copy calls the function of its own operations."""
    rng = np.random.default_rng(3)
    Ws = [rng.standard_normal((6, 6)) / 6 for _ in range(4)]
    bs = [rng.standard_normal(6) * 0.1 for _ in range(4)]

    def f(x: Any) -> Any:
        h = x
        for W, b in zip(Ws, bs):
            h = tnp.tanh(h @ W + b)

        def body(c: Any, _: Any) -> Any:
            for W, b in zip(Ws, bs):
                c = tnp.sin(c @ W - b)
            return c, tnp.sum(c)
        c, ys = tg.lax.scan(body, h, None, length=3)
        return c, ys
    case = (f, [rng.standard_normal((4, 6))])
    _check(case, monkeypatch, min_copies=2 * 3)
