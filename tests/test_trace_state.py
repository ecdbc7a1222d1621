"""The current interpreter: a ``core.TraceState`` per context, switched in place
around rules (``JVPTrace.process_primitive``, ``BatchTrace.process_primitive``,
``core.run_in``), never in the state shared by contexts outside every
transformation (``core.ROOT_STATE``).  These tests fail if a switch leaks into
another thread, into the root state, or past an exception."""
from __future__ import annotations

import contextvars
import threading

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core
from tangentia.core import Primitive
from tangentia.interpreters import ad, batching

_X = np.array([0.3, 0.7])


def _toy(name, jvp_body, batch=True):
    """A sin-like primitive whose JVP rule runs ``jvp_body(x)`` first."""
    p = Primitive(name)
    p.impl = np.sin
    p.abstract_eval = lambda a: a

    def rule(primals, tangents):
        jvp_body(primals[0])
        return p.bind(primals[0]), tnp.cos(primals[0]) * tangents[0]
    ad.primitive_jvps[p] = rule
    if batch:
        batching.primitive_batchers[p] = lambda args, dims: (p.bind(args[0]), dims[0])
    return p


def _drop(p: Primitive) -> None:
    ad.primitive_jvps.pop(p, None)
    batching.primitive_batchers.pop(p, None)


def test_a_rule_runs_with_the_parent_current_and_the_trace_comes_back():
    seen = []
    p = _toy("toy_state_seen", lambda x: seen.append(core.current_trace()))
    try:
        def f(x):
            before = core.current_trace()
            y = p.bind(x)
            assert core.current_trace() is before   # restored after the rule
            seen.append(before)
            return tnp.sum(y)
        g = tg.grad(f)(_X)
        np.testing.assert_allclose(g, np.cos(_X), rtol=1e-14)
        # The rule ran under the JVP trace's parent (linearize's partial evaluator).
        rule_trace, jvp_trace = seen
        assert isinstance(jvp_trace, ad.JVPTrace) and rule_trace is jvp_trace.parent
        _, t = tg.jvp(lambda x: p.bind(x), (_X,), (np.ones(2),))
        assert seen[-1] is core.EVAL_TRACE     # jvp's parent: evaluation
        np.testing.assert_allclose(t, np.cos(_X), rtol=1e-14)
    finally:
        _drop(p)
    assert core.current_trace() is core.EVAL_TRACE
    assert core.ROOT_STATE.trace is core.EVAL_TRACE


def test_an_error_in_a_rule_restores_the_trace():
    def boom(x):
        raise ValueError("toy rule failed")
    p = _toy("toy_state_boom", boom)
    try:
        def f(x):
            before = core.current_trace()
            with pytest.raises(ValueError, match="toy rule failed"):
                p.bind(x)
            assert core.current_trace() is before
            return tnp.sum(tnp.sin(x))
        np.testing.assert_allclose(tg.grad(f)(_X), np.cos(_X), rtol=1e-14)
        np.testing.assert_allclose(tg.vmap(tg.grad(f))(np.stack([_X, _X])),
                                   np.cos(np.stack([_X, _X])), rtol=1e-14)
    finally:
        _drop(p)
    assert core.trace_state() is core.ROOT_STATE
    assert core.ROOT_STATE.trace is core.EVAL_TRACE


def test_a_switch_called_outside_every_transformation_leaves_the_root_state():
    """An interpreter called directly, with no transformation entered in this
    context, switches in a private state (the root one is shared by threads)."""
    states = []
    p = _toy("toy_state_root", lambda x: states.append((core.trace_state(), core.current_trace())))
    try:
        trace = ad.JVPTrace(core.EVAL_TRACE)
        assert core.trace_state() is core.ROOT_STATE
        x = ad.maybe_jvp_tracer(trace, _X, np.ones(2))
        out = trace.process_primitive(p, (x,), {})
        np.testing.assert_allclose(out.tangent, np.cos(_X), rtol=1e-14)
        assert states[0][0] is not core.ROOT_STATE and states[0][1] is core.EVAL_TRACE
        btrace = batching.BatchTrace(core.EVAL_TRACE, 2)
        bx = batching.BatchTracer(btrace, np.stack([_X, _X]), 0)
        out = btrace.process_primitive(p, (bx,), {})
        np.testing.assert_allclose(out.val, np.sin(np.stack([_X, _X])), rtol=1e-14)
        # run_in from the root state
        assert core.run_in(trace, core.current_trace) is trace
        assert core.trace_state() is core.ROOT_STATE
    finally:
        _drop(p)
    assert core.ROOT_STATE.trace is core.EVAL_TRACE


def test_a_rule_blocked_in_one_thread_does_not_switch_another():
    """Thread A sits inside a JVP rule (its parent current) while thread B
    differentiates and evaluates: B sees only its own interpreters."""
    inside, release = threading.Event(), threading.Event()
    p = _toy("toy_state_thread",
             lambda x: (inside.set(), release.wait(timeout=20)), batch=False)
    results: dict[str, object] = {}
    errors: list[BaseException] = []

    def a():
        try:
            results["a"] = tg.grad(lambda x: tnp.sum(p.bind(x)))(_X)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def b():
        try:
            assert inside.wait(timeout=20)
            results["b_trace"] = core.current_trace()
            results["b"] = tg.grad(lambda x: tnp.sum(tnp.sin(x) * x))(_X)
            results["b_after"] = core.current_trace()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            release.set()

    try:
        ta, tb = threading.Thread(target=a), threading.Thread(target=b)
        ta.start()
        tb.start()
        ta.join(timeout=30)
        tb.join(timeout=30)
    finally:
        release.set()
        _drop(p)
    assert not errors, errors
    assert results["b_trace"] is core.EVAL_TRACE and results["b_after"] is core.EVAL_TRACE
    np.testing.assert_allclose(results["a"], np.cos(_X), rtol=1e-14)
    np.testing.assert_allclose(results["b"], np.cos(_X) * _X + np.sin(_X), rtol=1e-14)


def test_a_copied_context_keeps_its_own_interpreter():
    """``set_trace`` enters a new state: a context copied before it does not see it."""
    outer = contextvars.copy_context()
    seen = []

    def f(x):
        seen.append(outer.run(core.current_trace))
        return tnp.sum(tnp.sin(x))
    np.testing.assert_allclose(tg.grad(f)(_X), np.cos(_X), rtol=1e-14)
    assert seen == [core.EVAL_TRACE]
