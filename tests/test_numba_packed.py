"""The numba backend passes a program's scalarized float64 inputs packed in one array
(``native._packed_inputs``): numba compiles one array argument instead of dozens
(the pendulum gradient has 41 scalar constants).  The calls must not notice."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import NumbaBackend, native  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402


def f(a: Any, b: Any, v: Any, c: Any, n: Any, w: Any, d: Any) -> Any:
    # five scalarized float64 inputs (a, b, v: 2 elements, c, d), a small array (w: 20
    # elements, a view of the buffer) and an integer one, read in an order unlike their
    # positions
    return (tnp.sin(d) * v[1] + c * n - a * b + v[0], tnp.sum(w * d) + c, w[3:5] * v + a)


ARGS = [np.float64(0.5), np.array(-1.25), np.array([0.3, 2.0]), np.array(4.0), np.array(3),
        np.linspace(-1.0, 1.0, 20), np.array(0.75)]


def test_packed_inputs_give_the_numpy_backends_numbers_and_check_shapes() -> None:
    closed = tg.make_jaxpr(f)(*ARGS)
    assert not closed.consts
    jaxpr = convert_constvars_to_invars(closed.jaxpr)
    assert native._packed_inputs(jaxpr, native.SMALL) == (0, 1, 2, 3, 5, 6)
    fn = NumbaBackend().compile(jaxpr)
    assert "_xp" in fn.source
    want = get_backend("numpy").compile(jaxpr)(*ARGS)
    got = fn(*ARGS)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-15, atol=0)
    # Python numbers, an integer array and a float32 array where float64 was traced:
    # converted as the unpacked arguments are (np.array(a, float64))
    other = [0.5, -1.25, np.array([0.3, 2.0], np.float32), 4, np.array(3), ARGS[5], True]
    want = get_backend("numpy").compile(jaxpr)(*[np.array(a, np.float64) if i != 4 else a
                                                 for i, a in enumerate(other)])
    for g, w in zip(fn(*other), want):
        np.testing.assert_allclose(g, w, rtol=1e-15, atol=0)
    # a packed argument of the wrong shape is refused, never read shifted
    bad = list(ARGS)
    bad[2] = np.array([0.3, 2.0, 1.0])
    with pytest.raises(TypeError, match=r"shape \(3,\) where \(2,\) was compiled for"):
        fn(*bad)
    bad = list(ARGS)
    bad[0] = np.array([0.5])
    with pytest.raises(TypeError, match=r"shape \(1,\) where \(\) was compiled for"):
        fn(*bad)
    with pytest.raises(TypeError, match="takes 7 arguments, got 6"):
        fn(*ARGS[:6])


def test_few_scalar_inputs_stay_arguments() -> None:
    # (below PACK_MIN_INPUTS: a concatenation per call would cost more than it saves)
    closed = tg.make_jaxpr(lambda x, y: x * y + 1.0)(1.0, np.ones(3))
    jaxpr = convert_constvars_to_invars(closed.jaxpr)
    assert native._packed_inputs(jaxpr, native.SMALL) == ()
    assert "_xp" not in NumbaBackend().source(jaxpr)


# Small arrays (closed-over matrices) are packed too, and reach compile units and IR
# blocks as views of the buffer: a unit takes runs of consecutive ones as one segment.
RNG = np.random.default_rng(3)
WS = [RNG.standard_normal((5, 5)) / 3.0 for _ in range(4)]


def layers(c0: Any, xs: Any) -> Any:
    def body(h: Any, x: Any) -> Any:
        # out of order, one twice, one read by ordinary code (cumsum), not by a block
        for W in (WS[2], WS[0], WS[1], WS[0]):
            h = tnp.tanh(W @ h + x)
        return h + 0.1 * tnp.cumsum(WS[3], axis=0)[-1], h[0]
    return lax.scan(body, c0, xs)


def test_small_arrays_reach_units_and_blocks_as_views_of_the_buffer(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    import weakref
    monkeypatch.setattr(native, "UNIT_MIN_COST", 20)
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TANGENTIA_NUMBA_UNITS", raising=False)
    args = [np.linspace(-0.5, 0.5, 5), RNG.standard_normal((6, 5))]
    closed = tg.make_jaxpr(layers)(*args)
    jaxpr = convert_constvars_to_invars(closed.jaxpr)
    full = list(closed.consts) + args
    fn = NumbaBackend().compile(jaxpr)
    head, _, unit = fn.source.partition("# ---- unit")
    assert "def program(_xp, _up):" in head     # every input in the buffer
    assert unit and "_xp" not in unit           # the unit takes segments of it
    body = unit[unit.index("def body("):].split("\n")[0]
    assert body.count(",") < 16, body           # not one parameter per matrix
    monkeypatch.setattr(native, "PACK_MIN_INPUTS", 10 ** 9)     # every array an argument
    plain = NumbaBackend().compile(convert_constvars_to_invars(tg.make_jaxpr(layers)(*args).jaxpr))
    assert "_xp" not in plain.source
    got, want = fn(*full), plain(*full)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()       # the same bits
    for g, w in zip(got, get_backend("numpy").compile(jaxpr)(*full)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
    bad = list(full)
    bad[0] = np.ones((5, 4))
    with pytest.raises(TypeError, match=r"shape \(5, 4\) where \(5, 5\) was compiled for"):
        fn(*bad)


def test_segments_join_consecutive_views_of_a_buffer() -> None:
    from tangentia.compiler.numba_backend.codegen import AV
    f8 = np.dtype(np.float64)

    class G:
        views = {"a": ("_xp", 0), "b": ("_xp", 25), "c": ("_xp", 50), "d": ("_xq", 0)}
    vals = [AV((5, 5), f8, n) for n in "bacbd"] + [AV((5, 5), f8, "e")]
    refs, segs = native._segments(G(), vals)
    assert segs == [("_xp", 25, 50), ("_xp", 0, 25), ("_xq", 0, 25)]
    assert refs == [(0, 0), (1, 0), (0, 25), (0, 0), (2, 0), None]
