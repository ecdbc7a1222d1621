"""A scatter whose operand no one reads afterwards writes into the operand's array
(``plan.inplace_scatters``, ``rules._scatter``): no copy.  Where the operand is read
later, is an output, is an input, or is an array the scatter does not own (a
``stop_gradient``'s, a ``reshape``'s view), it must be copied first.  Each case: the
numba backend against the NumPy backend and eager evaluation, bit for bit, and the
generated code copies (``_cp``) exactly where it must."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax

X = np.random.default_rng(0).standard_normal((16, 3))   # (16 rows: loops, not IR blocks)


def _copies(f, *args):
    text = tg.jit(f, backend="numba").lower(*args).as_text()
    return len(re.findall(r"\b_cp\d+\(", text))


def _same(f, *args):
    """numba, NumPy backend and eager results (the inputs unchanged), bit for bit."""
    keep = [np.array(a, copy=True) for a in args]
    nb = tg.jit(f, backend="numba")(*args)
    for a, k in zip(args, keep):
        assert np.asarray(a).tobytes() == k.tobytes()    # (an input is never written)
    npb = tg.jit(f, backend="numpy")(*args)
    ev = f(*[tnp.asarray(a) for a in args])
    for a, b, c in zip(*(tg.tree_util.tree_leaves(t) for t in (nb, npb, ev))):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes() == np.asarray(c).tobytes()
    return nb


def test_dead_operand_is_updated_in_place():
    def f(x):
        return (x * 2.0 + 1.0).at[0].set(-1.0).at[:, 1].set(tnp.maximum(x[:, 1], 0.0))
    _same(f, X)
    assert _copies(f, X) == 0


def test_operand_read_later_is_copied():
    def f(x):
        y = x * 2.0
        z = y.at[0].set(-1.0)
        return z * 3.0 + y          # (y after the scatter: its old row 0)
    out = _same(f, X)
    np.testing.assert_array_equal(np.asarray(out)[0], -3.0 + X[0] * 2.0)
    assert _copies(f, X) == 1


def test_operand_that_is_an_output_is_copied():
    def f(x):
        y = x * 2.0
        return y.at[2].add(5.0), y
    z, y = _same(f, X)
    np.testing.assert_array_equal(np.asarray(y), X * 2.0)
    assert _copies(f, X) == 1


def test_input_operand_is_copied():
    def f(x):
        return x.at[1].set(0.0)
    _same(f, X)
    assert _copies(f, X) == 1


def test_stop_gradient_and_reshape_operands_are_copied():
    def f(x):
        y = x * 2.0
        a = lax.stop_gradient(y).at[0].set(7.0)
        b = (x + 1.0).reshape(3, 16).at[1].set(3.0)
        return a + y, b, y
    _same(f, X)
    # (the stop_gradient's operand, y, is read after: its array is not the scatter's)
    assert _copies(f, X) >= 1


def test_in_place_scatter_in_a_loop_body():
    def f(x):
        def body(i, c):
            c = (c * 0.5 + 1.0).at[i].set(tnp.sum(c[i]))
            return c
        return lax.fori_loop(0, 16, body, x)
    _same(f, X)


@pytest.mark.parametrize("n", [1, 3])
def test_grad_through_in_place_scatters(n):
    nb = (np.arange(16) + 1) % 16

    def sim(x):
        for _ in range(n):
            v = (x[nb] - x) * 2.0
            v = (v * 0.5).at[0].set(0.0)
            x = (x + 0.1 * v).at[:, 1].set(tnp.maximum(x[:, 1], 0.0))
        return tnp.sum(x ** 2)
    g = tg.grad(sim)
    got = _same(g, X)
    eps = 1e-6
    for idx in [(0, 0), (3, 1), (15, 2)]:
        p, m = X.copy(), X.copy()
        p[idx] += eps
        m[idx] -= eps
        fd = (float(sim(tnp.asarray(p))) - float(sim(tnp.asarray(m)))) / (2 * eps)
        assert abs(np.asarray(got)[idx] - fd) <= 1e-7 * max(1.0, abs(fd))
