"""A run of repeated copies rolls whatever way its per-copy inputs are passed.

``reroll`` emits a run of an IR block's repeated copies as one loop; each copy reads its
own matrix (a layer's weights).  Those arrive packed in one buffer at evenly spaced
offsets while they fit in ``native.PACK_MAX_ELEMENTS`` elements, and past it each as an
array of its own (``native._addressed``).  The copies reading the arrays of their own
were not a run at all, and neither were the packed ones after them: a scan over 1,100
closed-over 8x8 matrices (70,400 elements) compiled a 45,000-node block unrolled, more
than 150 s of CPU where 1,000 matrices took 5 s.  Now a copy's array is read at an
offset growing by a stride where the copies' arrays are so placed, else through a table
of the copies' addresses (``reroll._Run.access``); a run is cut where a stretch of copies
at a stride begins or ends (``reroll._cut``: a table costs per call).  And a stretch of
copies that matched only in part is searched again from where the match stopped (two
layers sharing a matrix, then layers of their own).
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

from numba.core import types as nbt  # noqa: E402

import tangentia as tg  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import native, reroll  # noqa: E402

from _numba_util import compile_numba, empty_cache, program  # noqa: E402
from test_numba_irblock_loops import _layers as _layer_loss  # noqa: E402  (the scan family's loss)

pytestmark = pytest.mark.timeout(120)

F8 = np.dtype(np.float64)
C2 = nbt.Array(nbt.float64, 2, "C")


class _Inputs:
    """What ``reroll`` reads of ``irblock._Inputs``: ``in_map`` (input node -> argument,
    or ``(array, element)``), ``views`` (array -> ``(argument, offset or None, shape)``)
    and ``arrs`` (argument -> ``(numba type, structure)``)."""

    def __init__(self, in_map: list, views: list, arrs: list) -> None:
        self.in_map, self.views, self.arrs = in_map, views, arrs


def _block(places: List[Tuple[int, Any]], n_args: int, shared: int = 0) -> Tuple[list, list, _Inputs]:
    """Nodes of copies ``h = (h * w0 + w1) * w2 - w3`` (w: four elements of the copy's
    own 2x2 matrix, ``places[c]``: its argument and element offset, None: the argument
    itself), a carry ``h`` from an input; the first ``shared`` copies read copy 0's
    matrix (the same nodes).  Returns ``(nodes, order, inputs)``."""
    nodes: list = [("in", F8, (), 0)]
    in_map: list = [0]
    views: list = []
    h, order = 0, []
    for c, (j, off) in enumerate(places):
        if c == 0 or c >= max(shared, 1):     # (the first `shared` copies share one matrix)
            views.append((j, off, (2, 2)))
            w = []
            for k in range(4):
                nodes.append(("in", F8, (), len(in_map)))
                in_map.append((len(views) - 1, k))
                w.append(len(nodes) - 1)
        a = len(nodes)
        nodes += [("mul", F8, (h, w[0]), None), ("add", F8, (a, w[1]), None),
                  ("mul", F8, (a + 1, w[2]), None), ("sub", F8, (a + 2, w[3]), None)]
        order += [a, a + 1, a + 2, a + 3]
        h = a + 3
    return nodes, order, _Inputs(in_map, views, [(C2 if k else nbt.Array(nbt.float64, 1, "C"), None)
                                                for k in range(n_args)])


@pytest.fixture
def short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reroll, "MIN_PERIOD", 2)


def _one_run(nodes: list, order: list, inputs: _Inputs) -> Any:
    runs = reroll.find_runs(nodes, order, inputs, [order[-1]], 8)
    assert len(runs) == 1, [(r.start, r.copies) for r in runs]
    return runs[0]


def test_packed_matrices_at_a_stride(short: None) -> None:
    """Every copy's matrix in buffer 0, 4 elements apart: one run, offsets computed."""
    r = _one_run(*_block([(0, 4 * c) for c in range(12)], 1))
    assert r.copies == 12 and r.period == 4
    assert {r.access(key) for key in r.places} == {("stride", 4)}
    assert r.tables() == 0


def test_matrices_of_their_own_through_a_table(short: None) -> None:
    """Each copy's matrix its own argument (addressed inputs): one run, read through a
    table of addresses; before, no run at all."""
    r = _one_run(*_block([(1 + c, None) for c in range(12)], 13))
    assert r.copies == 12
    assert r.tables() == 1
    kind, places = r.access((0, 1))
    assert kind == "table" and places == tuple((1 + c, None) for c in range(12))


def test_packed_then_addressed_are_two_runs(short: None) -> None:
    """The first copies packed, the later ones past the limit: a run reading the packed
    ones at a stride (here a negative one), and a run reading the others through a table
    (one run with a table for all: 10% slower per call at 1,100 layers)."""
    places = [(0, 4 * (11 - c)) for c in range(12)] + [(1 + c, None) for c in range(12)]
    nodes, order, inputs = _block(places, 13)
    runs = reroll.find_runs(nodes, order, inputs, [order[-1]], 8)
    assert [(r.start, r.period, r.copies) for r in runs] == [(0, 4, 12), (48, 4, 12)]
    assert {runs[0].access(key) for key in runs[0].places} == {("stride", -4)}
    assert runs[1].tables() == 1


def test_a_few_addressed_before_the_packed_ones(short: None) -> None:
    """Two addressed copies (too few for a run), then packed ones: the packed ones are a
    run at a stride, the two stay unrolled."""
    places = [(1, None), (2, None)] + [(0, 4 * c) for c in range(10)]
    nodes, order, inputs = _block(places, 3)
    runs = reroll.find_runs(nodes, order, inputs, [order[-1]], 8)
    assert [(r.start, r.copies) for r in runs] == [(8, 10)]
    assert runs[0].tables() == 0


def test_a_shared_matrix_then_matrices_of_their_own(short: None) -> None:
    """Copies 0 and 1 read one matrix (the same nodes), copies 2.. their own, packed: the
    run from copy 0 stops at copy 2 (two copies are too few); the search goes on from
    copy 1, whose matrix starts the stride (before: the whole stretch was given up)."""
    r = _one_run(*_block([(0, 4 * max(c - 1, 0)) for c in range(12)], 1, shared=2))
    assert r.start == 4 and r.copies == 11
    assert {r.access(key) for key in r.places} == {("stride", 4)}


def test_arrays_the_block_writes_are_not_per_copy_inputs() -> None:
    """An array argument the block stores into is never read through a table."""
    nodes, order, inputs = _block([(1 + c, None) for c in range(3)], 4)
    nodes.append(("arrst", F8, (2, order[-1]), 0))   # (node 2: an element of copy 0's matrix)
    nodes[2] = ("arr", F8, (), nodes[2][3])
    order.append(len(nodes) - 1)
    written = reroll._written(nodes, order, inputs)
    assert written == {1}
    assert reroll._mem_place(nodes, inputs, 2, written) is None
    assert reroll._mem_place(nodes, inputs, 2) is not None


# ---------------------------------------------------------------------------
# Compiled: a scan of closed-over matrices past the packing limit

M = 5           # (5x5 matrices: arrays read in place, not scalarized)


def _scan(n: int) -> Tuple[Callable[..., Any], List[Any]]:
    """grad of bench_cold's scan family, small: a 3-step scan whose body has ``n`` dense
    layers, each its own closed-over M x M matrix."""
    rng = np.random.default_rng(n)
    Ws = [rng.standard_normal((M, M)) / M for _ in range(n)]
    loss = _layer_loss(Ws, rng.standard_normal((3, M)))
    return tg.grad(loss), [rng.standard_normal((M, M)) / M, np.linspace(0.5, 1.0, M)]


def _compiled(case: Tuple[Callable[..., Any], List[Any]], setting: str,
              monkeypatch: pytest.MonkeyPatch) -> Tuple[List[np.ndarray], list]:
    """The outputs under ``TANGENTIA_NUMBA_REROLL=setting`` and the runs rolled (per
    block searched: its runs' copies and tables)."""
    monkeypatch.setenv("TANGENTIA_NUMBA_REROLL", setting)
    empty_cache(monkeypatch, "tangentia_reroll_places_")
    seen: list = []
    find = reroll.find_runs

    def spy(*a: Any, **k: Any) -> Any:
        runs = find(*a, **k)
        seen.append([(r.copies, r.tables() if hasattr(r, "tables") else 0) for r in runs])
        return runs
    monkeypatch.setattr(reroll, "find_runs", spy)
    jaxpr, args = program(case[0], *case[1])
    out = compile_numba(jaxpr)(*args)
    monkeypatch.setattr(reroll, "find_runs", find)
    return [np.asarray(o) for o in out], seen


@pytest.mark.parametrize("n", [12, 24])
def test_layers_past_the_packing_limit_roll(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit lowered to 4 layers' matrices: the later layers' matrices are addressed.
    Both directions' layers are rolled (all copies but the first layer's, which reads the
    carry otherwise): the packed ones at a stride, the addressed ones through a table; the
    results are the unrolled code's bit for bit and the NumPy backend's."""
    case = _scan(n)
    jaxpr, _ = program(case[0], *case[1])
    monkeypatch.setattr(native, "PACK_MAX_ELEMENTS", 4 * M * M + 2 * M + 3 * M)
    inputs = native._inputs(jaxpr, native.SMALL)
    assert inputs.packed and len(inputs.addressed) >= n - 5       # (the case: past the limit)
    plain, none = _compiled(case, "0", monkeypatch)
    rolled, seen = _compiled(case, "16", monkeypatch)
    assert not any(none)
    covered = sorted((sum(copies for copies, _ in runs) for runs in seen if runs), reverse=True)
    assert len(covered) >= 2 and all(c >= n - 1 for c in covered[:2]), seen
    assert any(tables for runs in seen for _, tables in runs), seen
    assert len(rolled) == len(plain)
    for a, b in zip(rolled, plain):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    jaxpr, args = program(case[0], *case[1])
    want = get_backend("numpy").compile(jaxpr)(*args)
    for g, w in zip(rolled, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-14)


def test_a_block_many_times_the_split_size_is_still_rolled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks were searched for runs only up to 8 * SPLIT_NODES nodes (128,000): a scan over
    2,600 or more closed-over 8x8 matrices was emitted unrolled.  With the split size made
    300 here, a 40-layer scan's blocks (2,700-2,900 nodes, 220-270 of them left once rolled)
    are past 8 times it: both directions are still rolled (``reroll.MAX_ORDER``), with the
    NumPy backend's numbers."""
    from tangentia.compiler.numba_backend import irblock
    monkeypatch.setattr(irblock, "_ROLL_OPS", irblock._ROLL_OPS._replace(split_nodes=300))
    case = _scan(40)
    before = reroll.STATS["runs"]
    out, seen = _compiled(case, str(reroll.MIN_SAVED), monkeypatch)
    assert reroll.STATS["runs"] - before >= 2, seen
    jaxpr, args = program(case[0], *case[1])
    want = get_backend("numpy").compile(jaxpr)(*args)
    for g, w in zip(out, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-14)
