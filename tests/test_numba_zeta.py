"""Hurwitz's ``zeta`` and ``polygamma`` on the numba backend: lowered natively
(``numba_backend/special.py``: Cephes' Euler-Maclaurin summation, SciPy's polygamma
expression), no longer SciPy's ufunc in object mode.  Bit for bit the NumPy backend's
values (SciPy's) on a grid through every branch (q <= 0, q > 1e8, x = 1, x < 1, NaN,
infinities), in float64 and float32, with hypothesis, and the second derivative of
``gammaln`` (``polygamma(1, x)``) against the NumPy backend and finite differences."""
from __future__ import annotations

from typing import Any, List

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.scipy import special as tsp  # noqa: E402
from _numba_util import compile_numba, objmode_spy, program  # noqa: E402

NUMBA = nbb.NumbaBackend()


@pytest.fixture
def objmode_calls(monkeypatch: Any) -> List[str]:
    """The primitives the numba generator runs in object mode (a fresh cache: generated)."""
    return objmode_spy(monkeypatch, "tangentia-zeta-")


def _grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    x = np.concatenate([[1.0, 0.5, 2.0, 3.0, 1.5, 30.0, 100.0, 2.0, 2.0, 2.0, 5.0, np.nan, np.inf,
                         2.0, np.nan, 3.0], rng.uniform(1, 10, 100), 10 ** rng.uniform(0, 2, 60)])
    q = np.concatenate([[1.0, 1.0, 0.0, -1.5, 2.0, 0.5, 1.0, 1e9, 1e-5, -2.0, -3.5, 1.0, 1.0,
                         np.inf, 0.0, np.nan], rng.uniform(-5, 20, 100), 10 ** rng.uniform(-3, 9, 60)])
    n = np.concatenate([[0, 1, 2, 3, 4, 0.5, -1, 10, 1, 2, 0, 1, 3, 5, 2, 1],
                        rng.integers(0, 8, 160)]).astype(float)
    return x, q, n


def _both(x: np.ndarray, q: np.ndarray, n: np.ndarray) -> tuple[List[Any], List[Any]]:
    f = lambda x, q, n: [tsp.zeta(x, q), tsp.polygamma(n, q)]  # noqa: E731
    jaxpr, full = program(f, x, q, n)
    got = compile_numba(jaxpr, NUMBA)(*full)
    with np.errstate(all="ignore"):
        want = get_backend("numpy").compile(jaxpr)(*full)
    return got, want


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bit_for_bit_the_numpy_backend(objmode_calls: List[str], dtype: Any) -> None:
    with np.errstate(all="ignore"):
        x, q, n = (a.astype(dtype) for a in _grid())
    got, want = _both(x, q, n)
    assert objmode_calls == []
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == dtype
        assert np.array_equal(g, w, equal_nan=True), np.nonzero(~((g == w) | np.isnan(g) & np.isnan(w)))
    # zeta(100, 1) = 1 + 2^-100 + ...; polygamma(1, 1) = zeta(2) = pi^2 / 6; zeta(2, 0) a pole
    assert got[0][6] == 1.0 and abs(got[1][1] - np.pi ** 2 / 6) < 1e-6 and got[0][2] == np.inf


_COMPILED: List[Any] = []


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(1.0, 60.0), st.floats(-20.0, 1e10), st.integers(0, 9)),
                min_size=6, max_size=6))
def test_hypothesis_bit_for_bit(triples: List[tuple[float, float, int]]) -> None:
    x, q, n = (np.array([t[k] for t in triples], float) for k in range(3))
    if not _COMPILED:      # (one program of f64[6] operands, compiled once)
        f = lambda x, q, n: [tsp.zeta(x, q), tsp.polygamma(n, q)]  # noqa: E731
        jaxpr, _ = program(f, x, q, n)
        _COMPILED.extend([compile_numba(jaxpr, NUMBA), get_backend("numpy").compile(jaxpr)])
    with np.errstate(all="ignore"):
        got, want = _COMPILED[0](x, q, n), _COMPILED[1](x, q, n)
    for g, w in zip(got, want):
        assert np.array_equal(g, w, equal_nan=True), (x, q, n, g, w)


def test_second_derivative_of_gammaln(objmode_calls: List[str]) -> None:
    # d^2/dx^2 gammaln = polygamma(1, x); its derivative polygamma(2, x) in the third
    f = lambda x: tg.numpy.sum(tg.grad(lambda y: tg.numpy.sum(tsp.gammaln(y)))(x) * x)  # noqa: E731
    x = np.array([0.3, 1.0, 2.5, 7.0, 40.0])
    g = lambda x: [tg.grad(f)(x)]  # noqa: E731
    jaxpr, full = program(g, x)
    (got,) = compile_numba(jaxpr, NUMBA)(*full)
    (want,) = get_backend("numpy").compile(jaxpr)(*full)
    assert objmode_calls == []
    np.testing.assert_allclose(got, want, rtol=1e-15)
    h = 1e-6
    fd = np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(5)])
    np.testing.assert_allclose(got, fd, rtol=1e-6)
