"""The cyclic collector during staging traces (``tangentia._gc.quiet_gc``).

A staging trace (``jit``, ``make_jaxpr``, loop bodies, ...) runs with the objects that
existed before it frozen (``gc.get_freeze_count() > 0``) and a raised young threshold; at its
end the collector's state is exactly what it was, nested and concurrent traces included, a
process's own freeze and thresholds are kept, and the garbage made meanwhile is collected.
Structure, not timing: the speed is measured in benchmarks/ (bench_cold's ode_hessian)."""
from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tangentia as tn
import tangentia.numpy as tnp
from tangentia import _gc, core, lax
from tangentia.interpreters import partial_eval as pe

PYTHON_DEFAULT = (700, 10, 10)


@pytest.fixture
def fresh_gc() -> Iterator[None]:
    """A process state as a user's: nothing frozen, Python's thresholds (the suite's conftest
    freezes what it holds and raises the thresholds); the suite's state back afterwards."""
    if not gc.isenabled():
        pytest.skip("the collector is off in this process (nothing of ours to check)")
    suite_frozen = gc.get_freeze_count() > 0
    suite_thresholds = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(*PYTHON_DEFAULT)
    _gc._STATE.user_froze = False           # (as a compile's period would find now)
    try:
        yield
    finally:
        assert _gc._STATE.depth == 0
        gc.set_threshold(*suite_thresholds)
        if suite_frozen:
            gc.freeze()


def _state() -> tuple[int, tuple[int, int, int], bool]:
    return gc.get_freeze_count(), gc.get_threshold(), gc.isenabled()


def _observing(seen: list[Any]) -> Any:
    def f(x):
        seen.append(_state())
        return tnp.sin(x) * x
    return f


def test_the_numba_backend_uses_the_same_helper() -> None:
    from tangentia.compiler import numba_backend
    assert numba_backend._quiet_gc is _gc.quiet_gc and numba_backend._refreeze is _gc.refreeze
    assert numba_backend.GC_THRESHOLD == _gc.GC_THRESHOLD


@pytest.mark.usefixtures("fresh_gc")
@pytest.mark.parametrize("how", ["make_jaxpr", "jit", "trace_to_program"])
def test_a_staging_trace_freezes_and_raises_then_restores(how: str) -> None:
    seen: list[Any] = []
    f = _observing(seen)
    x = np.linspace(0.1, 1.0, 5)
    if how == "make_jaxpr":
        tn.make_jaxpr(f)(x)
    elif how == "jit":
        np.testing.assert_allclose(tn.jit(f)(x), np.sin(x) * x, rtol=1e-15)
    else:
        pe.trace_to_program(lambda a: [f(a)], [core.get_aval(x)])
    assert seen, "the function was not traced"
    frozen, thresholds, enabled = seen[0]
    assert frozen > 0 and enabled
    assert thresholds == (_gc.GC_THRESHOLD,) + PYTHON_DEFAULT[1:]
    assert _state() == (0, PYTHON_DEFAULT, True)


@pytest.mark.usefixtures("fresh_gc")
def test_nested_traces_share_one_period() -> None:
    seen: list[Any] = []
    inner = _observing(seen)

    def outer(x):
        seen.append(_state())
        return lax.fori_loop(0, 3, lambda i, c: inner(c), x)    # a body: a trace inside

    out = tn.jit(outer)(np.float64(0.5))
    want = 0.5
    for _ in range(3):
        want = np.sin(want) * want
    np.testing.assert_allclose(out, want, rtol=1e-14)
    # one freeze, not two: the inner traces see the outer one's thresholds and no more frozen
    # objects than it did (frozen objects freed meanwhile leave the count: not equality)
    assert len(seen) >= 2 and all(0 < s[0] <= seen[0][0] and s[1:] == seen[0][1:] for s in seen)
    assert seen[0][0] > 0 and seen[0][1][0] == _gc.GC_THRESHOLD
    assert _state() == (0, PYTHON_DEFAULT, True)


@pytest.mark.usefixtures("fresh_gc")
def test_a_failing_trace_restores_the_collector() -> None:
    def bad(x):
        assert gc.get_freeze_count() > 0
        raise ValueError("user error inside a trace")

    with pytest.raises(ValueError, match="user error inside a trace"):
        tn.jit(bad)(np.ones(3))
    assert _state() == (0, PYTHON_DEFAULT, True)


@pytest.mark.usefixtures("fresh_gc")
def test_concurrent_traces_in_eight_threads() -> None:
    n = 8
    barrier = threading.Barrier(n, timeout=60)    # all inside their traces at once
    seen: list[Any] = []
    errors: list[BaseException] = []
    results: dict[int, Any] = {}

    def work(k: int) -> None:
        def f(x):
            seen.append(_state())
            barrier.wait()
            y = x
            for _ in range(20):
                y = tnp.cos(y) + k
            seen.append(_state())
            return y
        try:
            for _ in range(3):                      # periods begun and ended in every order
                results[k] = tn.make_jaxpr(f)(np.float64(k))
        except BaseException as e:                  # (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert len(results) == n and len(seen) == 2 * 3 * n
    assert all(s[0] > 0 and s[1] == (_gc.GC_THRESHOLD,) + PYTHON_DEFAULT[1:] for s in seen)
    assert _state() == (0, PYTHON_DEFAULT, True)


@pytest.mark.usefixtures("fresh_gc")
def test_a_process_own_freeze_and_thresholds_are_kept() -> None:
    seen: list[Any] = []
    f = _observing(seen)
    x = np.ones(3)
    ours: list[bool] = []

    def g(x):
        ours.append(_gc._STATE.frozen)
        return f(x)

    gc.freeze()                                     # the process froze its objects itself
    try:
        tn.make_jaxpr(g)(x)
        # not frozen by us (so not unfrozen either): still frozen after the trace (the
        # count itself drops when a frozen object is freed by its reference count)
        assert ours == [False] and seen[-1][0] > 0 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    gc.set_threshold(1234, 5, 6)                    # its own thresholds, below ours: raised
    tn.make_jaxpr(f)(x)
    assert seen[-1][1] == (_gc.GC_THRESHOLD, 5, 6) and gc.get_threshold() == (1234, 5, 6)
    gc.set_threshold(20000, 7, 8)                   # above ours: left alone
    tn.make_jaxpr(f)(x)
    assert seen[-1][1] == (20000, 7, 8) and gc.get_threshold() == (20000, 7, 8)

    def changes(x):                                 # set during a trace: kept
        gc.set_threshold(999, 9, 9)
        return tnp.sin(x)
    tn.make_jaxpr(changes)(x)
    assert gc.get_threshold() == (999, 9, 9)
    gc.disable()                                    # the collector off: nothing frozen
    try:
        tn.make_jaxpr(f)(x)
        assert seen[-1][0] == 0 and not gc.isenabled()
    finally:
        gc.enable()
    assert gc.get_freeze_count() == 0


class _Node:
    def __init__(self) -> None:
        self.me = self                              # a reference cycle


@pytest.mark.usefixtures("fresh_gc")
def test_garbage_made_during_a_trace_is_collected_after_it() -> None:
    before = _Node()                # made before the trace (frozen during it), garbage inside
    old = weakref.ref(before)
    refs: list[Any] = []

    def f(x):
        nonlocal before
        assert gc.get_freeze_count() > 0
        del before
        refs.append(weakref.ref(_Node()))           # made and dropped inside
        return tnp.sin(x)

    tn.make_jaxpr(f)(np.ones(2))
    gc.collect()
    assert old() is None and refs[0]() is None


@pytest.mark.usefixtures("fresh_gc")
def test_traces_do_not_count_a_process_frozen_objects_each_time(monkeypatch: Any) -> None:
    # (gc.get_freeze_count walks every frozen object: milliseconds per trace)
    calls: list[int] = []
    count = gc.get_freeze_count

    def counting() -> int:
        calls.append(1)
        return count()

    monkeypatch.setattr(gc, "get_freeze_count", counting)
    gc.freeze()
    try:
        for _ in range(5):
            tn.make_jaxpr(tnp.sin)(np.ones(2))
        assert len(calls) == 1 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    with _gc.quiet_gc():            # a compile's period asks again, and freezes
        assert gc.get_freeze_count() > 0 and _gc._STATE.frozen
    seen: list[Any] = []
    tn.make_jaxpr(_observing(seen))(np.ones(2))      # so traces freeze again
    assert seen[-1][0] > 0 and gc.get_freeze_count() == 0
