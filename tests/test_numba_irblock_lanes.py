"""Vector lanes in the numba backend's IR blocks (``irblock._Block.group``,
``irblock._emit_lanes``): the same operation on the elements of a batched value
is one ``<n x T>`` operation.  The results must be bit for bit those of the
scalar emission (``irblock.LANES = False``; ``TANGENTIA_NUMBA_LANES=0``) and
agree with the NumPy backend.  One program holds several batch sizes (values of
at most ``codegen.SMALL`` elements are in blocks: 1, 3, 8 rows of 2), batched and
unbatched operands mixed, float32/float64/int32/bool lanes, a reduction, a stack
of batched values, a scan's batched rows read and written as vectors: two
compiles in all.  How packs are formed is tested on hand-made blocks.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.numba_backend import irblock, native  # noqa: E402

from _numba_util import empty_cache  # noqa: E402
from test_numba_irblock import _numpy, _program, assert_bitwise, assert_close  # noqa: E402

SIZES = (1, 3, 8)


def _one(x, k, p, w):
    """A batched row's function: ``x`` f64[2], ``k`` i32[], ``p`` bool[], ``w``
    unbatched f64[2] (closed over by the vmap)."""
    a = x * w + x[::-1] / (1.5 + w * w)
    b = tnp.where(p & (a[0] < a[1]), tnp.maximum(a, -w), tnp.minimum(a, 0.25) - tnp.sqrt(tnp.abs(a)))
    i = (k * 3 - 1) ^ (k & 5)
    c = tnp.sum(b * b) + i.astype(np.float64) + tnp.sin(a[0])
    y = tnp.stack([c, -b[1], (b[0] > c).astype(np.float64)])
    f32 = (a.astype(np.float32) * np.float32(0.5) + np.float32(1.0)) / np.float32(3.0)
    return y, i, ~p | (i > 2), f32, tnp.isfinite(a / b)


def _scan(c0, xs):
    """A scan over batched rows (``rowio``'s row loads and stores)."""
    def body(c, x):
        c = c * 0.5 + x * c[::-1] - 0.125
        return c, c * c
    return lax.scan(body, c0, xs)


def _program_fn(*args):
    w = np.array([0.75, -1.25])
    outs = []
    for j in range(len(SIZES)):
        x, k, p = args[3 * j:3 * j + 3]
        outs.extend(tg.vmap(_one, in_axes=(0, 0, 0, None))(x, k, p, w))
    c, ys = _scan(args[-2], args[-1])
    return outs + [c, ys]


def _inputs(seed):
    rng = np.random.default_rng(seed)
    args = []
    for n in SIZES:
        x = rng.standard_normal((n, 2))
        x[rng.random((n, 2)) < 0.1] = 0.0
        args += [x, rng.integers(-9, 9, n).astype(np.int32), rng.random(n) < 0.5]
    args += [rng.standard_normal(13), rng.standard_normal((4, 13)) * 0.5]
    return args


_COMPILED: dict = {}


def _compiled(lanes):
    """The program compiled with every pack a vector (``LANES_PROFIT = False``: each
    operation's vector form is tested) or without lanes."""
    hit = _COMPILED.get(lanes)
    if hit is None:
        jaxpr, consts = _program(_program_fn, *_inputs(0))
        packs = []      # the sizes of the packs emitted as vectors
        lane_plan = irblock._lane_plan

        def spy(*a):
            unit, plist = lane_plan(*a)
            packs.extend(len(p) for p in plist if p)
            return unit, plist
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(irblock, "LANES", lanes)
            mp.setattr(irblock, "LANES_PROFIT", False)
            # (an empty cache: code generation runs, where the spy sees the packs)
            empty_cache(mp, "tangentia_lanes_")
            mp.setattr(irblock, "_lane_plan", spy)
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # (no fallback to NumPy)
                fn, _ = native._compile_program(jaxpr, native._settings())
                # (compiled at the first call: the spy sees the blocks' code generation)
                fn(*consts, *_inputs(0))
        hit = _COMPILED[lanes] = (lambda *a: fn(*consts, *a), jaxpr, consts, packs)
    return hit


def test_lanes_are_used():
    _, _, _, packs = _compiled(True)
    assert {3, 8, 16} <= set(packs), sorted(set(packs))
    assert not _compiled(False)[3]


def _hand_block(n, chain=False):
    bb = irblock._Block()
    f8 = np.dtype(np.float64)
    xs = [bb.input(object(), 0, f8) for _ in range(n)]
    c = bb.const(2.0, f8)
    start = len(bb.nodes)
    prev = xs[0]
    for x in xs:
        prev = bb.op("add", f8, (prev if chain else x, c))
    return bb, start


def test_packs_are_independent_lanes_of_at_most_lanes_max():
    bb, start = _hand_block(70)
    bb.group(start)
    assert [len(p) for p in bb.packs] == [irblock.LANES_MAX, 70 - irblock.LANES_MAX]
    assert sum(bb.packs, []) == list(range(start, len(bb.nodes)))
    bb, start = _hand_block(8, chain=True)     # (each reads the one before: no two in a pack)
    bb.group(start)
    assert bb.packs == []


def test_memory_packs_are_runs_of_consecutive_elements():
    bb = irblock._Block()
    f8 = np.dtype(np.float64)
    arr = bb.array(object(), f8)
    i = bb.input(object(), 0, np.dtype(np.int64))
    start = len(bb.nodes)
    for e in (0, 1, 2, 5, 6, 9):
        bb.op("rowld", f8, (arr, i), (0, e, (10,)))
    bb.group(start)
    assert [[bb.nodes[k][3][1] for k in p] for p in bb.packs] == [[0, 1, 2], [5, 6]]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 32 - 1))
def test_lanes_bitwise_equal_to_scalar_code(seed):
    args = _inputs(seed)
    if seed % 3 == 0:       # (NaN, infinities and signed zeros in the lanes)
        args[6][:, 0] = [np.nan, np.inf, -0.0, -np.inf, 0.0, 1.0, -1.0, np.nan][:len(args[6])]
    run, jaxpr, consts, _ = _compiled(True)
    old = _compiled(False)[0]
    with np.errstate(all="ignore"):
        got, ref, want = run(*args), old(*args), _numpy(jaxpr, consts, args)
    assert len(got) == len(ref) == len(want)
    for k, (g, r, w) in enumerate(zip(got, ref, want)):
        assert_bitwise(g, r, f"output {k}: lanes against scalar code")
        assert_close(g, w, f"output {k}: lanes against the NumPy backend", rtol=1e-12)


def _layers(depth, lanes=8):
    """``depth`` elementwise layers on ``lanes`` inputs, each layer one pack: the first
    inserts the inputs, the outputs extract the last (16 moves for 8 lanes)."""
    bb = irblock._Block()
    f8 = np.dtype(np.float64)
    ys = [bb.input(object(), 0, f8) for _ in range(lanes)]
    for d in range(depth):
        start = len(bb.nodes)
        c = bb.const(1.5 + d, f8)
        ys = [bb.op("mul" if d % 2 else "add", f8, (y, c)) for y in ys]
        bb.group(start)
    order = [i for i, n in enumerate(bb.nodes) if n[0] not in ("in", "const")]
    unit, plist = irblock._lane_plan(bb.nodes, order, {}, bb.packs, ys)
    return [len(p) for p in plist if p]


def test_packs_are_kept_where_they_save_operations():
    # 7 operations saved per layer against 16 moves: kept from 3 layers on
    assert _layers(2) == []
    assert _layers(3) == [8, 8, 8]
    assert _layers(4, lanes=2) == []       # (a lane saved per layer against 4 moves)
    assert _layers(5, lanes=2) == [2] * 5
