"""Compile time of programs users write as Python loops (issue 23): what the generator does
so that their code stays small, checked for the numbers it gives.

* A small array's elements are read into scalars by one call (``rowio.read_elements``),
  not one statement each: a kernel's result (a gather at dynamic indices), a program's
  small integer input.
* Repeated segments (``codegen.repeated_segments``) also take copies of scalarized
  equations that call kernels (gathers and scatters at index arrays: the IR blocks cannot
  take them), copies that differ only in integer literals (made parameters), copies whose
  index arithmetic common-subexpression elimination had shared between copies (computed
  again per copy, ``_split_scalars``), and a reverse loop's copies, each reading its own
  residual row (the row loads moved before the copy, ``_segments_of``).  The numbers are
  those of the inline code, bit for bit.
"""
from __future__ import annotations

import re
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import codegen  # noqa: E402

from _numba_util import compile_numba, empty_cache, fd_grad, program  # noqa: E402

Case = Tuple[Callable[..., Any], List[Any]]


def _fori(n: int) -> Case:
    """grad of a 4-step fori_loop whose body has n dynamic slices and updates of f64[12]
    (the offsets differ from copy to copy only by their literals)."""
    def f(x: Any) -> Any:
        def body(i: Any, s: Any) -> Any:
            for k in range(n):
                v = lax.dynamic_slice_in_dim(s, (i + k) % 9, 3)
                s = lax.dynamic_update_slice_in_dim(s, tnp.sin(v) * 0.9 + 0.1, (i + 2 * k) % 9, 0)
            return s
        return tnp.sum(lax.fori_loop(0, 4, body, x) ** 2)
    return tg.grad(f), [np.linspace(0.0, 1.0, 12)]


def _outputs(fn: Any, args: List[Any]) -> List[np.ndarray]:
    out = fn(*tg.tree_util.tree_leaves(args))
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]


def _against_numpy(case: Case) -> Tuple[str, List[np.ndarray]]:
    """The numba program's source and results, checked against the NumPy backend's."""
    jaxpr, args = program(case[0], *case[1])
    got = _outputs(compile_numba(jaxpr), args)
    want = _outputs(get_backend("numpy").compile(jaxpr), args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    return get_backend("numba").source(jaxpr), got


def test_fori_of_dynamic_slices_against_numpy_eager_and_finite_differences() -> None:
    grad_f, args = _fori(3)
    source, got = _against_numpy((grad_f, args))
    # (a kernel's small result read by one call, not one ``s5 = a3[7]`` per element)
    assert not re.search(r"^\s+s\d+ = a\d+\[\d+\]$", source, re.M)
    np.testing.assert_allclose(tg.jit(grad_f)(*args), grad_f(*args), rtol=1e-13, atol=1e-15)

    def loss(x: np.ndarray) -> float:
        s = x.copy()
        for i in range(4):
            for k in range(3):
                a = min(max((i + k) % 9, 0), 9)
                v = s[a:a + 3].copy()
                b = min(max((i + 2 * k) % 9, 0), 9)
                s[b:b + 3] = np.sin(v) * 0.9 + 0.1
        return float(np.sum(s ** 2))
    np.testing.assert_allclose(got[0], fd_grad(loss, args[0]), rtol=1e-6, atol=1e-8)


def _with_segments(case: Case, setting: str, monkeypatch: pytest.MonkeyPatch) -> Tuple[List[np.ndarray], int, str]:
    """Results, copies emitted as calls, and source under TANGENTIA_NUMBA_SEGMENTS=setting
    (an empty cache: the code is generated here)."""
    monkeypatch.setenv("TANGENTIA_NUMBA_SEGMENTS", setting)
    empty_cache(monkeypatch, "tangentia_loops_")
    jaxpr, args = program(case[0], *case[1])
    before = codegen.SEG_STATS["copies"]
    out = _outputs(compile_numba(jaxpr), args)
    return out, codegen.SEG_STATS["copies"] - before, get_backend("numba").source(jaxpr)


def test_fori_copies_are_calls_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _fori(8)
    plain, none, _ = _with_segments(case, "0", monkeypatch)
    calls, copies, source = _with_segments(case, "1", monkeypatch)
    assert none == 0
    # the forward copies (literal offsets, index arithmetic split) and the reverse ones
    # (a residual row each): at least 3 + 6 of the 16
    assert copies >= 9, copies
    assert source.count("@_jit") <= 1 + 4, source      # one function per structure (and ends)
    assert len(calls) == len(plain)
    for x, y in zip(calls, plain):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    _, want = _against_numpy(case)
    for x, y in zip(calls, want):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_literals_that_differ_are_parameters() -> None:
    """The copies of ``x.at[k].add(...)`` at k = 0, 1, 2, ... share one function whose
    parameter is k; a literal the same in every copy stays a literal."""
    def f(x: Any, i: Any) -> Any:
        for k in range(6):
            j = (i + k) % 7
            x = x.at[tnp.array([j, j + 1])].add(tnp.sin(x[tnp.array([j, 8 - j])]) * 0.5)
        return x
    x, i = np.linspace(0.0, 1.0, 9), np.int64(2)
    jaxpr, args = program(f, x, i)
    segs = codegen.repeated_segments(jaxpr.eqns, jaxpr.outvars, _users(jaxpr), codegen.SMALL,
                                     __import__("tangentia.compiler.numba_backend.rules",
                                                fromlist=["RULES"]).RULES)
    assert len(segs) >= 3, segs
    keys = {key for _, _, key, _ in segs.values()}
    assert len(keys) == 1
    lifted = [a for _, sub, _, cargs in segs.values() for v, a in zip(sub.invars, cargs)
              if type(a).__name__ == "Literal"]
    assert len({int(a.val) for a in lifted}) >= 3         # k differs from copy to copy
    got = _against_numpy((f, [x, i]))[1]
    want = f(tnp.asarray(x), i)
    np.testing.assert_allclose(got[0], want, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(f)(x, i), want, rtol=1e-13)


def _users(jaxpr: Any) -> dict:
    users: dict = {}
    for e in jaxpr.eqns:
        for a in e.inputs:
            if type(a).__name__ == "Var":
                users.setdefault(a, []).append(e)
    for v in jaxpr.outvars:
        users.setdefault(v, []).append(None)
    return users


def test_split_scalars_copies_shared_index_arithmetic() -> None:
    """Each reader after the first of a shared integer scalar gets its own copy of the
    scalar's computation (and only of it); the program computes the same values."""
    def f(x: Any, i: Any) -> Any:
        a = (i + 3) % 5            # shared by two gathers below
        return x[tnp.array([a, a + 1])] + x[tnp.array([a, 2])] * 2.0
    x, i = np.linspace(0.0, 1.0, 9), np.int64(4)
    jaxpr, args = program(f, x, i)
    split = codegen._split_scalars(jaxpr.eqns, jaxpr.outvars, __import__(
        "tangentia.compiler.numba_backend.rules", fromlist=["ELEMENTWISE"]).ELEMENTWISE)
    assert split is not None and len(split) > len(jaxpr.eqns)
    made = {id(o) for e in jaxpr.eqns for o in e.outputs}
    added = [e for e in split if not any(id(o) in made for o in e.outputs)]   # (the copies)
    assert len(split) == len(jaxpr.eqns) + len(added)
    assert added and all(not e.outputs[0].aval.shape and e.outputs[0].aval.dtype.kind in "biu"
                         for e in added)
    from tangentia.core import Jaxpr
    again = Jaxpr(jaxpr.constvars, jaxpr.invars, split, jaxpr.outvars)
    want = _outputs(get_backend("numpy").compile(jaxpr), args)
    got = _outputs(get_backend("numpy").compile(again), args)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()


def test_compile_counters_are_thread_safe() -> None:
    """``reroll.STATS`` and ``codegen.SEG_STATS`` count under a lock (compiles run on
    tiered jit's background thread and on users' threads)."""
    import threading

    from tangentia.compiler.numba_backend import reroll
    from tangentia.compiler.numba_backend.memo import Counts
    assert isinstance(reroll.STATS, Counts) and isinstance(codegen.SEG_STATS, Counts)
    c = Counts("n")

    def work() -> None:
        for _ in range(20000):
            c.add("n")
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c["n"] == 8 * 20000
