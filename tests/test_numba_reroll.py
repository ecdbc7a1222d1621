"""Repeated runs of an IR block's nodes emitted as one loop (``numba_backend/reroll.py``).

A program written as a Python loop over layers repeats the same nodes once per layer;
``reroll`` emits such a run as a loop over the copies.  The results must be those of
the unrolled nodes bit for bit (the same operations in the same order), and close to
the NumPy backend's.  The threshold is lowered (``TANGENTIA_NUMBA_REROLL``) so that
tiny programs roll; ``reroll.STATS`` counts the runs rolled.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import reroll  # noqa: E402

from _numba_util import compile_numba, empty_cache, program  # noqa: E402
from test_numba_irblock_loops import _layers as _layer_loss  # noqa: E402  (the scan family's loss)


def _layers(n: int, m: int, seed: int) -> Tuple[Callable[..., Any], List[Any]]:
    """jit(grad) of a 3-step scan whose body is n dense m x m layers (the bench_cold
    scan family, small): matrices read in place at a stride, residual rows per layer."""
    rng = np.random.default_rng(seed)
    Ws = [rng.standard_normal((m, m)) / m for _ in range(n)]
    loss = _layer_loss(Ws, rng.standard_normal((3, m)))
    return tg.grad(loss), [rng.standard_normal((m, m)) / m, np.linspace(0.5, 1.0, m)]


def _mixed(n: int, m: int) -> Tuple[Callable[..., Any], List[Any]]:
    """A repeated block of several different operations whose copies read three
    arrays each (interleaved in the buffer: a stride of the three), two in place by
    products and one element by element, with one equation that is not repeated in
    the middle."""
    rng = np.random.default_rng(1)
    As = [rng.standard_normal((m, m)) / m for _ in range(n)]
    Bs = [rng.standard_normal((m, m)) / m for _ in range(n)]
    Us = [rng.standard_normal((4, m)) for _ in range(n)]
    xs = rng.standard_normal((2, m))

    def loss(c0: Any) -> Any:
        def body(c: Any, x: Any) -> Any:
            h = c + x
            for k, (A, B, U) in enumerate(zip(As, Bs, Us)):
                h = tnp.sin(A @ h) * 0.5 + tnp.cos(B @ h) - 0.1 * tnp.sum(U * h, axis=0)
                if k == n // 2:
                    h = h / (1.0 + tnp.abs(h))
            return h, tnp.sum(h)
        cT, ys = lax.scan(body, c0, xs)
        return tnp.sum(cT * cT) + tnp.sum(ys)
    return tg.grad(loss), [np.linspace(-0.5, 0.5, m)]


def _unrolled_mlp(n: int, m: int) -> Tuple[Callable[..., Any], List[Any]]:
    """grad of a Python loop of layers without a scan: the forward layers' values are
    read by the backward pass (so their copies cannot be one loop)."""
    rng = np.random.default_rng(2)
    Ws = [rng.standard_normal((m, m)) / m for _ in range(n)]

    def loss(x: Any) -> Any:
        for W in Ws:
            x = tnp.tanh(W @ x)
        return tnp.sum(x * x)
    return tg.grad(loss), [np.linspace(-1.0, 1.0, m)]


def _run(case: Tuple[Callable[..., Any], List[Any]], setting: str,
         monkeypatch: pytest.MonkeyPatch) -> Tuple[List[np.ndarray], int]:
    """The compiled program's results under TANGENTIA_NUMBA_REROLL=setting, and the
    number of runs rolled while compiling it."""
    monkeypatch.setenv("TANGENTIA_NUMBA_REROLL", setting)
    # an empty cache: the blocks' code is generated here, where the counter sees it (a
    # program another test compiled first, in the same cache, was loaded: 0 runs)
    empty_cache(monkeypatch, "tangentia_reroll_")
    jaxpr, args = program(case[0], *case[1])
    before = reroll.STATS["runs"]
    out = compile_numba(jaxpr)(*args)
    return [np.asarray(o) for o in out], reroll.STATS["runs"] - before


def _numpy(case: Tuple[Callable[..., Any], List[Any]]) -> List[np.ndarray]:
    jaxpr, args = program(case[0], *case[1])
    return [np.asarray(o) for o in get_backend("numpy").compile(jaxpr)(*args)]


def _same_bits(a: List[np.ndarray], b: List[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def _check_rolled(case: Tuple[Callable[..., Any], List[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    plain, runs0 = _run(case, "0", monkeypatch)
    rolled, runs = _run(case, "16", monkeypatch)
    assert runs0 == 0
    assert runs >= 2            # (a forward run and its reverse, at least)
    _same_bits(rolled, plain)
    for g, w in zip(rolled, _numpy(case)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n,m", [(6, 5), (9, 6)])
def test_layers_of_a_scan_roll_bit_for_bit(n: int, m: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _check_rolled(_layers(n, m, seed=n), monkeypatch)


def test_repeated_block_of_several_ops_with_an_interruption(monkeypatch: pytest.MonkeyPatch) -> None:
    _check_rolled(_mixed(8, 5), monkeypatch)


def test_copies_read_later_are_not_rolled_and_the_numbers_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _unrolled_mlp(8, 5)
    plain, _ = _run(case, "0", monkeypatch)
    rolled, _ = _run(case, "16", monkeypatch)
    _same_bits(rolled, plain)
    for g, w in zip(rolled, _numpy(case)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------
# The search itself, on node lists written by hand (no compile)

F8 = np.dtype(np.float64)


def _chain(k: int, extra_read: int = -1) -> Tuple[list, list]:
    """Nodes: two inputs, then k copies of (mul(h, x), add(that, x), neg(that)) carrying
    h; the last copy's value is the output.  ``extra_read``: a copy whose first node is
    also read at the end (so copies up to it cannot be rolled)."""
    nodes: list = [("in", F8, (), 0), ("in", F8, (), 1)]
    h, x = 0, 1
    firsts = []
    for _ in range(k):
        a = len(nodes)
        nodes += [("mul", F8, (h, x), None), ("add", F8, (a, x), None), ("neg", F8, (a + 1,), None)]
        firsts.append(a)
        h = a + 2
    if extra_read >= 0:
        nodes.append(("add", F8, (h, firsts[extra_read]), None))
        h = len(nodes) - 1
    return nodes, list(range(2, len(nodes)))


def test_find_runs_finds_the_copies_and_their_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, order = _chain(12)
    assert reroll.find_runs(nodes, order, None, [order[-1]], 6) == []   # (copies too short)
    monkeypatch.setattr(reroll, "MIN_PERIOD", 2)
    runs = reroll.find_runs(nodes, order, None, [order[-1]], 6)
    assert len(runs) == 1
    r = runs[0]
    assert r.period == 3 and r.copies == 12 and r.start == 0
    assert r.kinds[(0, 0)] == ("carry", 2)      # mul reads the previous copy's neg
    assert r.kinds[(0, 1)] == ("inv",)          # and the input x
    assert r.kinds[(1, 0)] == ("own", 0)
    # below the threshold: nothing
    assert reroll.find_runs(nodes, order, None, [order[-1]], 100) == []


def test_find_runs_stops_before_a_copy_read_later(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reroll, "MIN_PERIOD", 2)
    nodes, order = _chain(12, extra_read=7)
    runs = reroll.find_runs(nodes, order, None, [order[-1]], 6)
    # copy 7's first node is read at the end: a run may end at copy 7 (the loop leaves
    # its last copy's values), none may go past it
    assert runs
    for r in runs:
        copies = range(r.start // 3, r.start // 3 + r.copies)
        assert 7 not in copies or copies[-1] == 7


def test_stores_move_up_to_their_value() -> None:
    nodes: list = [("in", F8, (), 0), ("arr", F8, (), 1), ("in", np.dtype(np.int64), (), 2)]
    order = []
    vals = []
    for k in range(3):
        nodes.append(("mul", F8, (0, 0), None))
        order.append(len(nodes) - 1)
        vals.append(len(nodes) - 1)
    for k, v in enumerate(vals):
        nodes.append(("rowst", F8, (1, 2, v), (k, 0, (1,))))
        order.append(len(nodes) - 1)
    assert reroll.hoist_stores(nodes, order) == [3, 6, 4, 7, 5, 8]
    # a stack also read in the block keeps its stores where they were
    nodes.append(("rowld", F8, (1, 2), (0, 0, (1,))))
    order2 = order + [len(nodes) - 1]
    assert reroll.hoist_stores(nodes, order2) == order2
