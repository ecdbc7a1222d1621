"""Integer indices whose dtype cannot hold the axis length (uint8 or int8 indices into 300
rows).  Counting from the end (``i + n``) and clamping (``n - 1``) in the index's own dtype
overflowed: NumPy raised OverflowError under ``jit`` (and a wrapping backend would read the
wrong rows).  The reference is NumPy's indexing with the indices as int64."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

pytestmark = pytest.mark.timeout(120)

X = np.arange(300.0) * 1.5


def _idx(dt):
    return np.array([0, 5, 127, 7] + ([-1, -128] if dt == "int8" else [255]), dtype=dt)


@pytest.mark.parametrize("dt", ["uint8", "int8"])
@pytest.mark.parametrize("how", ["getitem", "at_get", "take", "at_get_fill"])
@pytest.mark.parametrize("staged", [False, True])
def test_reads_through_narrow_indices(dt, how, staged):
    i = _idx(dt)
    want = X[i.astype(np.int64)]
    f = {"getitem": lambda x, i: x[i],
         "at_get": lambda x, i: x.at[i].get(),
         "take": lambda x, i: tnp.take(x, i),
         "at_get_fill": lambda x, i: x.at[i].get(mode="fill", fill_value=-5.0)}[how]
    got = (tg.jit(f) if staged else f)(tnp.asarray(X), i)
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("dt", ["uint8", "int8"])
def test_writes_and_gradients_through_narrow_indices(dt):
    i = _idx(dt)
    rows = i.astype(np.int64) % 300
    want = X.copy()
    want[rows] = -1.0
    np.testing.assert_array_equal(np.asarray(tg.jit(lambda x, i: x.at[i].set(-1.0))(X, i)), want)
    added = X.copy()
    np.add.at(added, rows, 2.0)
    np.testing.assert_array_equal(np.asarray(tg.jit(lambda x, i: x.at[i].add(2.0))(X, i)), added)
    g = np.zeros(300)
    np.add.at(g, rows, 2 * X[rows])
    got = tg.jit(tg.grad(lambda x, i: (x[i] ** 2).sum()))(X, i)
    np.testing.assert_allclose(np.asarray(got), g, rtol=1e-15)
