"""IR blocks outside loop bodies are split into out-of-line pieces past
``irblock.TOP_SPLIT_NODES`` operations (LLVM's register allocation of one function grows
faster than linearly: a top-level chain of 10,080 equations compiled in 22 s whole, 7 s in
pieces, the call as fast); loop bodies and blocks with vector lanes keep ``SPLIT_NODES``.
Split or not, the results are bit for bit the same."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import irblock, native  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402


def _f(x, xs):
    y = x
    for k in range(6):      # a top-level chain of scalarized operations on f64[3]
        y = tnp.sin(y) * (1.0 + 0.1 * k) + tnp.exp(-y * y) if k % 2 else tnp.tanh(y * 0.9 + x)

    def body(c, r):         # and one inside a loop body
        for k in range(4):
            c = tnp.cos(c) * 0.8 + r * (0.1 * k) - 0.05 * c * c
        return c, tnp.sum(c)
    c, ys = lax.scan(body, y, xs)
    return y, c, ys


def _compile(monkeypatch, tmp_path, top):
    closed = tg.make_jaxpr(_f)(np.zeros(3), np.zeros((4, 3)))
    jaxpr = convert_constvars_to_invars(closed.jaxpr)
    splits = []
    emit = irblock._emit_ir

    def spy(context, builder, nodes, in_vals, out_ids, digest, packs=(),
            split=irblock.SPLIT_NODES):
        splits.append(split)
        return emit(context, builder, nodes, in_vals, out_ids, digest, packs, split)
    with monkeypatch.context() as mp:
        mp.setenv("TANGENTIA_CACHE_DIR", str(tmp_path / str(top)))   # (emitted, not loaded)
        mp.setenv("TANGENTIA_NUMBA_OVERLOAD_CACHE", "0")
        mp.setattr(irblock, "TOP_SPLIT_NODES", top)
        mp.setattr(irblock, "FUNCTION_NODES", 7)
        mp.setattr(irblock, "LANES", False)
        mp.setattr(irblock, "_emit_ir", spy)
        mp.setattr(irblock, "_INTRINSICS", {})
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)   # (no fallback to NumPy)
            fn, _ = native._compile_program(jaxpr, native._settings())
    return (lambda *a: fn(*closed.consts, *a)), splits, jaxpr, closed.consts


def test_top_level_blocks_split_and_loop_bodies_not(monkeypatch, tmp_path):
    x = np.array([0.3, -1.2, 2.5])
    xs = np.cos(np.arange(12.0)).reshape(4, 3)
    split_run, splits, jaxpr, consts = _compile(monkeypatch, tmp_path, 7)
    whole_run, whole, _, _ = _compile(monkeypatch, tmp_path, 1 << 30)
    # the top-level block split at 7 operations, the scan body's at SPLIT_NODES
    assert 7 in splits and irblock.SPLIT_NODES in splits, splits
    assert set(whole) == {irblock.SPLIT_NODES}, whole
    got, ref = split_run(x, xs), whole_run(x, xs)
    want = get_backend("numpy").compile(jaxpr)(*consts, x, xs)
    for g, r, w in zip(got, ref, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))     # bit for bit
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-15)
