"""Behaviour found by running more of JAX's tutorials (convolutions, external
callbacks, MAML, score matching, primitives, debugging, FAQ) unchanged on
tangentia: each test pins one difference that was fixed."""
import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia._array import ArrayImpl
from tangentia.experimental import io_callback


def test_augmented_assignment_makes_a_new_promoted_array():
    # as on a JAX array: ``x += y`` rebinds x, promotes, and leaves aliases alone
    a = tnp.zeros(3, dtype=np.float32)
    b = a
    b += np.arange(3.0)
    assert a.dtype == np.float32 and np.array_equal(a, np.zeros(3))
    assert b.dtype == np.float64 and np.array_equal(b, [0.0, 1.0, 2.0])
    m = tnp.eye(2)
    alias = m
    m @= np.array([[1.0, 2.0], [3.0, 4.0]])
    m *= 2
    assert np.array_equal(m, [[2.0, 4.0], [6.0, 8.0]])
    assert np.array_equal(alias, np.eye(2))
    c = tnp.arange(4)
    c[1] += 5  # item assignment on an eager result still writes in place
    assert np.array_equal(c, [0, 6, 2, 3])


def test_eager_callbacks_return_tangentia_arrays():
    sd = tg.ShapeDtypeStruct((3,), np.float64)
    out = tg.pure_callback(np.cos, sd, np.array([0.0, np.pi, 2 * np.pi]))
    assert type(out) is ArrayImpl and np.allclose(out, [1.0, -1.0, 1.0])
    out = io_callback(np.cos, sd, np.zeros(3))
    assert type(out) is ArrayImpl and np.array_equal(out, np.ones(3))


def test_vmap_of_ordered_io_callback_raises():
    calls = []

    def record(x):
        calls.append(float(x))
        return np.asarray(2 * x)

    sd = tg.ShapeDtypeStruct((), np.float64)
    unordered = tg.vmap(lambda x: io_callback(record, sd, x))(np.array([1.0, 3.0]))
    assert np.array_equal(unordered, [2.0, 6.0]) and calls == [1.0, 3.0]
    with pytest.raises(ValueError, match="^Cannot `vmap` ordered IO callback"):
        tg.vmap(lambda x: io_callback(record, sd, x, ordered=True))(np.array([1.0, 3.0]))
    # ordered calls still run inside loops, once per step and in order
    _, ys = lax.scan(lambda c, x: (c, io_callback(record, sd, x, ordered=True)), None,
                     np.array([5.0, 7.0]))
    assert np.array_equal(ys, [10.0, 14.0]) and calls == [1.0, 3.0, 5.0, 7.0]


def _record_prints(capsys):
    return capsys.readouterr().out.splitlines()


def test_effects_in_branches_without_used_outputs_are_kept(capsys):
    def f(p, x):
        lax.cond(p, lambda v: tg.debug.print("yes {}", v),
                 lambda v: tg.debug.print("no {}", v), x)
        # the branch's result is unused; the print inside must still happen
        lax.cond(p, lambda v: tg.debug.print("inner {}", v * 2) or v, lambda v: v, x)
        return x + 1

    assert f(True, 1.5) == 2.5
    assert _record_prints(capsys) == ["yes 1.5", "inner 3.0"]
    assert tg.jit(f)(False, 2.0) == 3.0
    assert _record_prints(capsys) == ["no 2.0"]
    assert "debug_print" in str(tg.make_jaxpr(f)(True, 1.0))


def test_debug_callbacks_receive_tangentia_arrays(capsys):
    seen = []
    tg.jit(lambda x, y: tg.debug.callback(lambda a, b: seen.append((a, b)), x, {"k": y}))(
        np.arange(2.0), np.ones(3, np.int32))
    a, b = seen[0]
    assert type(a) is ArrayImpl and type(b["k"]) is ArrayImpl and b["k"].dtype == np.int32
    tg.debug.print("{x:.2f} {t}", x=np.float64(0.125), t={"w": np.zeros(1)})
    assert _record_prints(capsys) == ["0.12 {'w': Array([0.])}"]
    assert tg.effects_barrier() is None


def test_numba_compiles_a_cond_branch_that_emits_nothing(capsys):
    def g(p, x):
        lax.cond(p, lambda v: tg.debug.print("t {}", v), lambda v: None, x)
        return x * 2

    f = tg.jit(g, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the NumPy backend
        assert f(True, 1.0) == 2.0 and f(False, 3.0) == 6.0
    assert _record_prints(capsys)[-1:] == ["t 1.0"]
