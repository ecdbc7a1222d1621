"""The NumPy backend's code specialized on an equation's types
(``compiler/numpy_backend.SPECIALIZED``: select, reshape, getitem, broadcast_to).

Each case runs a program under ``jit`` on the NumPy backend and compares it with the
same operations run eagerly (the primitives' implementations), values and dtypes bit
for bit, then checks that the specialized code was the one that ran.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.compiler import numpy_backend


def _same(f: Callable[..., Any], *args: Any) -> None:
    got = tg.jit(f, backend="numpy")(*args)
    want = f(*args)
    for g, w in zip(tg.tree_util.tree_leaves(got), tg.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def _ran(monkeypatch: pytest.MonkeyPatch, prim: Any) -> list[Any]:
    """The equations the specialization of ``prim`` was asked for, and its results."""
    seen: list[Any] = []
    rule = numpy_backend.SPECIALIZED[prim]

    def spy(eqn: Any) -> Any:
        fn = rule(eqn)
        seen.append(fn)
        return fn
    monkeypatch.setitem(numpy_backend.SPECIALIZED, prim, spy)
    return seen


def test_select(monkeypatch: pytest.MonkeyPatch) -> None:
    from tangentia.primitives.elementwise import select_p
    seen = _ran(monkeypatch, select_p)
    x = np.array([1.5, -2.0, 3.0], np.float32)
    y = np.array([0.5, 4.0, -1.0], np.float32)
    _same(lambda x, y: tnp.where(x > y, x, y), x, y)
    _same(lambda x, y: lax.select(x > y, x.astype(np.int16), y.astype(np.int16)), x, y)
    _same(lambda x: tnp.where(x > 0, x, 0.0), x)          # a Python float: the implementation
    _same(lambda x: tnp.where(x > 0, x, 2), x)
    assert np.where in seen and None in seen


def test_reshape(monkeypatch: pytest.MonkeyPatch) -> None:
    from tangentia.interpreters.base_ops import reshape_p
    seen = _ran(monkeypatch, reshape_p)
    x = np.arange(12.0).reshape(3, 4)
    _same(lambda x: tnp.reshape(x * 2.0, (4, 3)), x)
    _same(lambda x: tnp.reshape(tnp.sum(x), (1, 1)), x)    # a NumPy scalar in between
    _same(lambda x: tnp.reshape(x[0, 0] + 1, (1,)), x)
    assert len(seen) >= 3 and all(s is not None for s in seen)


def test_getitem(monkeypatch: pytest.MonkeyPatch) -> None:
    from tangentia.primitives.indexing import getitem_p
    seen = _ran(monkeypatch, getitem_p)
    x = np.arange(24.0).reshape(2, 3, 4)
    _same(lambda x: x[1, ::-1, 1:3], x)
    _same(lambda x: x[..., None, 2], x)
    _same(lambda x: tnp.sum(x)[()], x)
    _same(lambda x, i: x[i, 0], x, np.array([1, 0, 1]))    # index arrays: the implementation
    assert None in seen and any(s is not None for s in seen)


def test_broadcast_to(monkeypatch: pytest.MonkeyPatch) -> None:
    from tangentia.interpreters.base_ops import broadcast_to_p
    seen = _ran(monkeypatch, broadcast_to_p)
    x = np.array([1.0, 2.0, 3.0])
    _same(lambda x: tnp.broadcast_to(x * 2, (4, 3)) + 0.0, x)
    _same(lambda x: tnp.broadcast_to(tnp.sum(x), (2, 2)), x)       # a NumPy scalar
    _same(lambda x: tnp.broadcast_to(x.astype(np.int8), (5, 3)), x)
    _same(lambda x: tnp.broadcast_to(x, (3000, 3)) * 1.0, x)       # large: NumPy's view
    assert None in seen and any(s is not None for s in seen)
    # the copy is a buffer of its own: the program's later in-place ufuncs cannot reach x
    y = x.copy()
    out = tg.jit(lambda y: tnp.broadcast_to(y, (2, 3)) * 3.0 + 1.0, backend="numpy")(y)
    np.testing.assert_array_equal(out, np.broadcast_to(x * 3.0 + 1.0, (2, 3)))
    np.testing.assert_array_equal(y, x)
