"""Control flow's corner cases against JAX 0.10.2 (x64), found by probing each option: loop
bounds' dtypes, empty inputs, batch sizes.  Each test here failed before its fix.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax as tlax
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)


def _both(mk: Any) -> tuple[Any, Any]:
    return run(mk, tg, tlax), run(mk, jax, jax.lax)


@pytest.mark.parametrize("bounds", [(0.0, 2.5), (-1.5, 1.0), (0.5, 0.5)])
def test_fori_loop_with_traced_float_bounds(bounds: tuple[float, float]) -> None:
    """Traced float bounds count in floats (``i < upper``), as JAX's: ours converted them to
    int64, so ``fori_loop(0., 2.5)`` ran twice where JAX runs three times (1. for 3.)."""
    def mk(api: Any, L: Any) -> Any:
        f = api.jit(lambda a, b: L.fori_loop(a, b, lambda i, c: c + i * 1.5, 0.0))
        return f(*bounds)
    ours, theirs = _both(mk)
    assert_same(f"jit fori {bounds}", ours, theirs)
    uppers = np.array([0.5, 2.5, 3.0])
    assert_same("vmap fori", run(lambda: tg.vmap(lambda b: tlax.fori_loop(
        0.0, b, lambda i, c: c + i, 0.0))(uppers)), jax.vmap(lambda b: jax.lax.fori_loop(
            0.0, b, lambda i, c: c + i, 0.0))(uppers))


@pytest.mark.parametrize("case", ["int32 traced", "uint8 traced", "Python lower, int32 traced",
                                  "int32 concrete", "Python lower, int32 concrete",
                                  "int16 lower, Python upper"])
def test_fori_loop_index_has_the_bounds_dtype(case: str) -> None:
    """The index of a loop with int32 (or uint8, ...) bounds is of that dtype, a Python-int
    bound taking the other's (JAX's weak typing): ours made every traced index int64, so
    ``c + i`` changed an int32 carry's type (a TypeError), and a Python-int lower bound with an
    int32 upper did the same eagerly."""
    lo, hi, jit = {"int32 traced": (np.int32(0), np.int32(3), True),
                   "uint8 traced": (np.uint8(250), np.uint8(255), True),
                   "Python lower, int32 traced": (0, np.int32(4), True),
                   "int32 concrete": (np.int32(0), np.int32(3), False),
                   "Python lower, int32 concrete": (0, np.int32(3), False),
                   "int16 lower, Python upper": (np.int16(1), 3, False)}[case]
    carry = np.zeros((), np.asarray(hi if isinstance(lo, int) else lo).dtype)

    def mk(api: Any, L: Any) -> Any:
        if jit and isinstance(lo, int):
            return api.jit(lambda b: L.fori_loop(lo, b, lambda i, c: c + i, carry))(hi)
        f = lambda a, b: L.fori_loop(a, b, lambda i, c: c + i, carry)  # noqa: E731
        return (api.jit(f) if jit else f)(lo, hi)
    ours, theirs = _both(mk)
    assert_same(case, ours, theirs)


def test_fori_loop_bounds_of_different_kinds() -> None:
    """``fori_loop(0, 2.7, ...)``: JAX's TypeError (two Python scalars of different kinds);
    ours truncated 2.7 and ran twice."""
    ours, theirs = _both(lambda api, L: L.fori_loop(0, 2.7, lambda i, c: c + i, 0.0))
    assert isinstance(theirs, TypeError) and isinstance(ours, TypeError)
    assert str(ours).startswith(str(theirs))


@pytest.mark.parametrize("batch_size", [1, 2, 5])
def test_map_with_batch_size_over_empty_or_ragged_inputs(batch_size: int) -> None:
    """``lax.map(f, xs, batch_size=k)`` of an empty ``xs`` is an empty result of ``f``'s
    shape (ours raised UnboundLocalError); leaves of different lengths are the loop's error,
    not a silently truncated batch."""
    def mk(api: Any, L: Any) -> Any:
        return L.map(lambda r: (r[0] * 2.0, r[1].sum()), (np.zeros(0), np.zeros((0, 2))),
                     batch_size=batch_size)
    ours, theirs = _both(mk)
    assert_same("empty", ours, theirs)
    ragged = (np.arange(5.0), np.ones((4, 2)))
    ours = run(tlax.map, lambda r: r[0] * r[1].sum(), ragged, batch_size=batch_size)
    assert isinstance(run(jax.lax.map, lambda r: r[0] * r[1].sum(), ragged,
                          batch_size=batch_size), ValueError)
    assert isinstance(ours, ValueError), ours
    x = tnp.arange(7.0)
    assert_same("map", run(tlax.map, lambda r: r * r, x, batch_size=batch_size),
                jax.lax.map(lambda r: r * r, np.arange(7.0), batch_size=batch_size))


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_extrema_derivatives_at_ties(name: str, reverse: bool) -> None:
    """cummax/cummin's derivative is JAX's, that of the prefix scan of max with max's tie
    rule (half of each tangent on a tie): ``grad(cummax(x) @ w)`` at ``x = [1, 1, 2, 2, 0]``
    is ``[0.5, 0.5, 5.5, 3.5, 0]`` for ``w = 0..4`` (ours gave the later entry all of it:
    ``[0, 1, 2, 7, 0]``).  Also a second derivative and under vmap."""
    x = np.array([1.0, 1.0, 2.0, 2.0, 0.0, 2.0, 1.0])
    t = np.cos(np.arange(7.0))
    x2 = np.array([[1.0, 1.0, 2.0, 0.0], [3.0, 3.0, 3.0, 1.0], [0.0, 2.0, 2.0, 2.0]])

    def mk(api: Any, L: Any) -> Any:
        op = lambda v, axis=0: getattr(L, name)(v, axis=axis, reverse=reverse)  # noqa: E731
        return (api.jvp(op, (x,), (t,)), api.grad(lambda v: op(v) @ t)(x),
                api.hessian(lambda v: (op(v * v, 1) * x2).sum())(x2),
                api.vmap(api.grad(lambda v: op(v) @ t[:4]))(x2))
    # (JAX's numbers from one compiled program: op by op, JAX takes 5 s of CPU here)
    ours, theirs = run(mk, tg, tlax), jax.jit(lambda: mk(jax, jax.lax))()
    assert_same(name, ours, theirs)


@pytest.mark.parametrize("kw", [{"static_argnums": 1, "donate_argnums": 1},
                                {"static_argnames": "n", "donate_argnames": "n"},
                                {"static_argnums": -1, "donate_argnames": "n"},
                                {"static_argnums": 0, "donate_argnums": 1}])
def test_jit_argument_both_static_and_donated(kw: dict) -> None:
    """JAX's ValueError for an argument both static and donated (by position or name); ours
    ignored the donation silently."""
    f = lambda a, n: a * n  # noqa: E731
    theirs = run(lambda: jax.jit(f, **kw)(2.0, 3.0))
    ours = run(lambda: tg.jit(f, **kw)(2.0, 3.0))
    if isinstance(theirs, Exception):
        assert isinstance(theirs, ValueError) and isinstance(ours, ValueError), ours
        assert str(ours).startswith(str(theirs))
    else:
        assert_same("jit", ours, theirs)


@pytest.mark.parametrize("case", ["scan unroll 0", "scan unroll -1", "scan unroll 1.5",
                                  "switch bool index", "jit switch bool index",
                                  "fori unroll, traced bounds", "fori unroll, static bounds"])
def test_loop_options_and_switch_index_types(case: str) -> None:
    """JAX takes scan(unroll=0) (ours raised), raises for a float unroll (TypeError), for a
    bool switch index (ours took it as 0/1) and for fori_loop(unroll=2) with traced bounds
    (ours ignored it)."""
    xs = np.linspace(-1.0, 2.0, 5)

    def mk(api: Any, L: Any) -> Any:
        if case.startswith("scan"):
            u = {"scan unroll 0": 0, "scan unroll -1": -1, "scan unroll 1.5": 1.5}[case]
            return L.scan(lambda c, x: (c * 0.5 + x, c), 0.0, xs, unroll=u)
        if case == "switch bool index":
            return L.switch(True, [lambda: 1.0, lambda: 2.0])
        if case == "jit switch bool index":
            return api.jit(lambda i: L.switch(i, [lambda: 1.0, lambda: 2.0]))(True)
        if case == "fori unroll, traced bounds":
            return api.jit(lambda k: L.fori_loop(0, k, lambda i, c: c + 1.0, 0.0, unroll=2))(3)
        return L.fori_loop(0, 5, lambda i, c: c + i, 0.0, unroll=2)
    ours, theirs = _both(mk)
    assert_same(case, ours, theirs)
    if isinstance(theirs, Exception):
        assert str(ours).startswith(str(theirs).split(" got ")[0].split(", got")[0][:40]), (
            str(ours), str(theirs))
