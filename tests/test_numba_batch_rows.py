"""A sum over more than ``irblock.FEW_ROWS`` rows of an array is a loop, not an IR block.

The gradient of a bias sums the batch's rows.  On a batch of 17 to 64 rows of a 16-wide
layer (at most ``irblock.ARRAY_MAX`` elements) that sum was an IR block reading every
element, whose nodes and digest depend on the number of rows: the backward layer's
compile unit had another source at each batch size, so the size-generic units
(``native._generic_source``) did not apply, and a batch of 32 reusing the compile cache of
a batch of 128 compiled the backward layer again.  Now such a reduction is the generator's
loop (``irblock._many_rows``), whose trip count the generic unit reads from its argument.
"""
from __future__ import annotations

import os
import re
import weakref
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.numba_backend import irblock, native  # noqa: E402

pytestmark = pytest.mark.timeout(120)
WIDTH, LAYERS = 16, 4


def params() -> list[tuple[np.ndarray, np.ndarray, np.float64]]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((WIDTH, WIDTH)) / 4.0, rng.standard_normal(WIDTH) * 0.1,
             np.float64(0.5 + 0.01 * i)) for i in range(LAYERS)]


def loss(p: Any, X: Any) -> Any:
    h = X
    for W, b, a in p:
        h = h + a * tnp.tanh(h @ W + b)
    return tnp.mean(h ** 2)


def flat(g: Any) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(g)])


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    for k in ("TANGENTIA_NUMBA_UNITS", "TANGENTIA_NUMBA_GENERIC"):
        monkeypatch.delenv(k, raising=False)
    return tmp_path


def test_batches_of_32_and_48_share_the_layers_units(fresh: Any) -> None:
    assert 32 * WIDTH <= irblock.ARRAY_MAX and 32 > irblock.FEW_ROWS   # (the case)
    before = dict(native.GENERIC_STATS)
    p = params()
    for batch in (32, 48):
        X = np.random.default_rng(batch).standard_normal((batch, WIDTH))
        got = flat(tg.jit(tg.grad(loss), backend="numba")(p, X))
        want = flat(tg.jit(tg.grad(loss), backend="numpy")(p, X))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    # the layers' unit and their transposes' unit: generic, one module each for both
    # batches (an IR block over the batch's rows would make the second batch's its own)
    assert native.GENERIC_STATS["generic"] - before["generic"] == 4
    mods = sorted(n for n in os.listdir(fresh / "numba") if n.startswith("tangentia_numba_unit_"))
    assert len(mods) == 2, mods
    for n in mods:
        text = (fresh / "numba" / n).read_text()
        assert "range(_n0)" in text
        # (the blocks left are per row: fewer nodes than a batch of 32 rows has elements)
        assert all(int(k) < 32 * WIDTH for k in re.findall(r"irblock \w+ \((\d+) nodes\)", text)), text[:3000]
        assert not {"32", "48", "512", "768"} & set(native._INT.findall(text))
    # a directional derivative of the bias of the first layer at batch 48
    X = np.random.default_rng(48).standard_normal((48, WIDTH))
    db = np.random.default_rng(1).standard_normal(WIDTH)
    g = tg.jit(tg.grad(loss), backend="numba")(p, X)
    h = 1e-6

    def at(t: float) -> float:
        q = [(W, b + t * db if k == 0 else b, a) for k, (W, b, a) in enumerate(p)]
        return float(loss(q, X))
    fd = (at(h) - at(-h)) / (2 * h)
    assert abs(fd - float(np.dot(np.asarray(g[0][1]), db))) <= 1e-8 * max(1.0, abs(fd))
