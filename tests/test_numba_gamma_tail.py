"""The gamma function's tail on the numba backend: ``igamma_grad_a``, ``log_gammaincc``,
``log_gammaincc_grad_a`` and ``gamma_hazard`` are lowered natively
(``numba_backend/special.py``: the NumPy implementations' recurrences per element), no
longer run in object mode.  Checked against the NumPy backend to a few ULP on grids through
the tails (Q underflowing at x = 800 and 1e5, x = 1e200 and 1e300, infinities, zeros, NaN,
a outside its domain), with hypothesis, in float32, inside a loop, and the gradients of
``gamma.logsf`` and ``gammainc`` against the NumPy backend and finite differences."""
from __future__ import annotations

from typing import Any, List

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.primitives import special as SP  # noqa: E402
from tangentia.scipy import special as tsp  # noqa: E402
from tangentia.scipy.stats import gamma  # noqa: E402
from _numba_util import compile_numba, objmode_spy, program  # noqa: E402

PRIMS = (SP.igamma_grad_a_p, SP.log_gammaincc_p, SP.log_gammaincc_grad_a_p, SP.gamma_hazard_p)
NUMBA = nbb.NumbaBackend()


def _grid() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    edges_a = [0.5, 3.0, 1.0, 0.0, -1.0, np.inf, np.nan, 2.0, 1e-3, 50.0, 0.5, 3.0, 1000.0, 3.0,
               0.5, 7.0, 1e-300, 2.5, 2.5]
    edges_x = [1e5, 800.0, 0.0, 1.0, 1.0, 2.0, 1.0, np.inf, 1e-300, 49.0, 1e200, 1e300, 1000.0,
               -1.0, np.nan, 8.0, 1.0, 3.4, 3.6]
    a = np.concatenate([edges_a, rng.uniform(0.0, 20.0, 150), 10.0 ** rng.uniform(-3, 3, 150)])
    x = np.concatenate([edges_x, rng.uniform(0.0, 30.0, 150), 10.0 ** rng.uniform(-3, 3.5, 150)])
    return a, x


def _tails(a: Any, x: Any) -> List[Any]:
    return [p.bind(a, x) for p in PRIMS]


@pytest.fixture
def objmode_calls(monkeypatch: Any) -> List[str]:
    """The primitives the numba generator runs in object mode (a fresh cache: generated)."""
    return objmode_spy(monkeypatch, "tangentia-gamma-tail-")


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the last place of ``want`` (0 where both are the same
    value, infinities and NaN included)."""
    assert got.dtype == want.dtype
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(all="ignore"):
        out = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want)).astype(np.float64)
    out[same] = 0.0
    return np.where(np.isnan(out), np.inf, out)


def _compare(f: Any, *args: Any, ulps: float = 4.0) -> List[np.ndarray]:
    jaxpr, full = program(f, *args)
    got = compile_numba(jaxpr, NUMBA)(*full)
    with np.errstate(all="ignore"):
        want = get_backend("numpy").compile(jaxpr)(*full)
    for p, g, w in zip(PRIMS, got, want):
        u = _ulps(np.asarray(g), np.asarray(w))
        k = int(np.argmax(u))
        assert u[k] <= ulps, (p.name, args[0].ravel()[k], args[1].ravel()[k], g[k], w[k])
    return got


def test_values_match_the_numpy_backend_through_the_tails(objmode_calls: List[str]) -> None:
    a, x = _grid()
    got = _compare(_tails, a, x)
    assert objmode_calls == []
    # the log-space tail: log Q(3, 800) = -787.32..., where gammaincc underflows to 0
    k = 1
    assert np.isfinite(got[1][k]) and got[1][k] < -700
    assert abs(got[3][k] - 1.0) < 0.01         # the hazard tends to 1 (log Q's slope -1)


def test_float32_and_inside_a_loop(objmode_calls: List[str]) -> None:
    a, x = _grid()
    with np.errstate(over="ignore"):      # (1e200 and 1e300 are inf in float32)
        a32, x32 = a[:60].astype(np.float32), x[:60].astype(np.float32)
    got = _compare(_tails, a32, x32, ulps=1.0)
    assert all(g.dtype == np.float32 for g in got)

    def loop(a: Any, x: Any) -> List[Any]:
        def body(i: Any, c: Any) -> Any:
            return [o + p.bind(a + i, x) for o, p in zip(c, PRIMS)]
        return lax.fori_loop(0, 3, body, [x * 0.0 for _ in PRIMS])
    _compare(loop, np.array([0.5, 2.0, 7.5, 3.0]), np.array([1.5, 0.25, 900.0, 40.0]), ulps=8.0)
    assert objmode_calls == []


_COMPILED: List[Any] = []


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-3, 1e3), st.floats(1e-4, 1e4)), min_size=8, max_size=8))
def test_hypothesis_values_match(pairs: List[tuple[float, float]]) -> None:
    a = np.array([p[0] for p in pairs])
    x = np.array([p[1] for p in pairs])
    if not _COMPILED:      # (one program of f64[8] operands, compiled once)
        jaxpr, _ = program(_tails, a, x)
        _COMPILED.extend([compile_numba(jaxpr, NUMBA), get_backend("numpy").compile(jaxpr)])
    got, want = _COMPILED[0](a, x), _COMPILED[1](a, x)
    for p, g, w in zip(PRIMS, got, want):
        u = _ulps(np.asarray(g), np.asarray(w))
        assert u.max() <= 4.0, (p.name, a, x, g, w)


def test_gradients_of_gamma_logsf_and_gammainc(objmode_calls: List[str]) -> None:
    def f(a: Any, x: Any) -> Any:
        return tg.numpy.sum(gamma.logsf(x, a)) + tg.numpy.sum(tsp.gammainc(a, x * 0.1))
    a, x = np.array([0.7, 3.0, 12.0, 2.5]), np.array([2.0, 800.0, 9.0, 40.0])
    g = lambda a, x: list(tg.grad(f, argnums=(0, 1))(a, x))  # noqa: E731
    jaxpr, full = program(g, a, x)
    got = compile_numba(jaxpr, NUMBA)(*full)
    want = get_backend("numpy").compile(jaxpr)(*full)
    for u, w in zip(got, want):
        np.testing.assert_allclose(u, w, rtol=1e-13)
    assert objmode_calls == []
    h = 1e-6
    for k, (da, dx) in enumerate(zip(np.eye(4), np.eye(4))):
        fd_a = (f(a + h * da, x) - f(a - h * da, x)) / (2 * h)
        fd_x = (f(a, x + h * dx) - f(a, x - h * dx)) / (2 * h)
        np.testing.assert_allclose(got[0][k], fd_a, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(got[1][k], fd_x, rtol=1e-5, atol=1e-9)
