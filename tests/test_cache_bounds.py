"""The caches of traced programs are bounded, and clear_caches empties all of them.

A long-running process that calls one jitted function (or one eager loop body) with ever
new shapes must not keep every program it ever traced: jit's per-function caches and the
traced bodies of lax loops keep the newest ``staging._CACHE_MAX`` entries.
"""
import numpy as np
import pytest

import tangentia as tg
from tangentia import lax
from tangentia.api import staging


@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(staging, "_CACHE_MAX", 3)


def test_jit_cache_keeps_the_newest_programs(small_bound):
    traces = []

    def f(x):
        traces.append(x.shape)
        return x * 2.0 + 1.0

    jf = tg.jit(f)
    for n in range(1, 6):
        x = np.arange(float(n))
        np.testing.assert_array_equal(jf(x), x * 2.0 + 1.0)
    assert traces == [(1,), (2,), (3,), (4,), (5,)]
    assert jf._cache_size() == 3
    # The newest three are kept: no new trace.
    for n in (3, 4, 5):
        np.testing.assert_array_equal(jf(np.ones(n)), np.full(n, 3.0))
    assert len(traces) == 5
    # The oldest was dropped: traced again, with the right result.
    np.testing.assert_array_equal(jf(np.array([4.0])), [9.0])
    assert traces[5:] == [(1,)]
    assert jf._cache_size() == 3


def test_jit_cache_bound_holds_through_keyword_and_pytree_calls(small_bound):
    traces = []

    def f(d, *, scale):
        traces.append(d["a"].shape)
        return d["a"].sum() * scale

    jf = tg.jit(f)
    for n in range(1, 7):
        assert float(jf({"a": np.ones(n)}, scale=2.0)) == 2.0 * n
    assert len(traces) == 6
    assert jf._cache_size() == 3


def _body(i, c):
    return c * 1.5 + i


def test_loop_body_traces_are_bounded_and_cleared(small_bound):
    from tangentia.lax import control_flow
    control_flow._TRACE_CACHE.pop(_body, None)
    for n in range(1, 6):
        out = lax.fori_loop(0, 3, _body, np.ones(n))
        want = np.ones(n)
        for i in range(3):
            want = want * 1.5 + i
        np.testing.assert_allclose(out, want, rtol=1e-15)
    assert len(control_flow._TRACE_CACHE[_body]) <= 3
    tg.clear_caches()
    assert _body not in control_flow._TRACE_CACHE
    np.testing.assert_allclose(lax.fori_loop(0, 1, _body, np.zeros(2)), [0.0, 0.0])


def test_clear_caches_retraces_jitted_functions():
    traces = []

    def f(x):
        traces.append(1)
        return tg.numpy.sin(x)

    jf = tg.jit(f)
    x = np.linspace(0.0, 1.0, 4)
    jf(x)
    jf(x)
    assert len(traces) == 1
    tg.clear_caches()
    np.testing.assert_allclose(jf(x), np.sin(x), rtol=1e-15)
    assert len(traces) == 2
