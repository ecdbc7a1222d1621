"""Gathers and scatters of whole rows, ``x[idx]`` and ``x.at[idx].add(y)`` with a 1-D
index array (``rules._row_indices``): lowered natively (a lazy gather read by its
consumers, a loop of updates in the index's order) where a kernel ran.  Checked against
the NumPy backend bit for bit (a gather copies; the updates of a repeated row come in
the same order), under ``grad`` (the transpose is the scatter-add) and ``vmap``, with
negative, repeated and traced (clamped) indices.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402

NUMBA = nbb.NumbaBackend()
FEW = settings(max_examples=4, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FLOATS = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False, width=64)
IDX = np.array([3, 0, -1, 3, 5, 2, 2, -6, 1, 4, 0, 5])      # negative and repeated rows


def _both(f, *args, exact=True):
    """(numba results, numba source) of ``f``'s program, checked against the NumPy
    backend's: bit for bit, or (``exact=False``: a sum, whose order NumPy's pairwise
    summation changes) to 1e-13."""
    closed = tg.make_jaxpr(f)(*args)
    jaxpr = convert_constvars_to_invars(closed.jaxpr)
    full = list(closed.consts) + list(args)
    got = NUMBA.compile(jaxpr)(*full)
    want = get_backend("numpy").compile(jaxpr)(*full)
    for g, w in zip(got, want):
        if exact:
            assert np.array_equal(g, w), (g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
    return got, NUMBA.source(jaxpr)


def _spring(x):
    f = (x[IDX[:6]] - x) * 2.0 - (x - x[IDX[6:]]) * 1.5
    return tnp.sum((x + 0.01 * f) ** 2)


@FEW
@given(hnp.arrays(np.float64, (6, 3), elements=FLOATS))
def test_row_gathers_and_their_scatter_adds_match_the_numpy_backend(x):
    (val,), src = _both(_spring, x, exact=False)
    assert "getitem" not in src.split("@_jit")[0], src   # (no kernel: lowered natively)
    (grad,), src = _both(tg.grad(_spring), x, exact=False)
    assert "scatter" not in src.split("@_jit")[0], src
    assert np.isclose(val, _spring(x))
    y = x[IDX] * 1.25                                   # 12 rows: repeats accumulate in turn
    (out,), _ = _both(lambda x, y: x.at[IDX].add(y), x, y)
    want = x.copy()
    np.add.at(want, IDX, y)
    assert np.array_equal(out, want)
    (out,), _ = _both(lambda x, y: x.at[IDX].set(y), x, y)
    want = x.copy()
    want[IDX] = y
    assert np.array_equal(out, want)


@FEW
@given(hnp.arrays(np.float64, (4, 6, 2), elements=FLOATS))
def test_row_gathers_under_vmap_match_a_loop(xs):
    f = tg.vmap(lambda x: tnp.sin(x[IDX]) * x[IDX[::-1]])
    (got,), _ = _both(f, xs, exact=False)      # (sin: numba's, not NumPy's, to the last bit)
    np.testing.assert_allclose(got, np.stack([np.sin(x[IDX]) * x[IDX[::-1]] for x in xs]),
                               rtol=1e-13, atol=1e-13)


def test_traced_row_indices_clamp_as_jax():
    x = np.arange(12.0).reshape(6, 2)
    i = np.array([0, 7, -1, -9, 5])
    (got,), _ = _both(lambda x, i: x[i] * 1.0, x, i)
    assert np.array_equal(got, x[np.clip(np.where(i < 0, i + 6, i), 0, 5)])
