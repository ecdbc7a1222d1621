"""Consecutive copies of a repeated segment emitted as one loop (``codegen._Gen.emit_run``).

A network written as a Python loop over its layers repeats one segment per layer (and its
transposed copy per layer in ``grad``).  The copies in a row are one loop calling the
segment's function: inputs read from the packed parameters at a constant stride, the
carried value threaded through, the values read later written into stacks, and program
outputs returned as rows of a stack.  The numbers must be those of the copies emitted one
call each, bit for bit, and of the NumPy backend; outputs must not share memory.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import NumbaBackend, codegen, objcache  # noqa: E402

from _numba_util import compile_numba, empty_cache, program  # noqa: E402

Case = Tuple[Callable[..., Any], List[Any]]


def _params(n: int, width: int = 5) -> List[Any]:
    rng = np.random.default_rng(n)
    return [(rng.standard_normal((width, width)) / width, rng.standard_normal(width) * 0.1,
             np.float64(0.5 + 0.1 * i)) for i in range(n)]


def _mlp(n: int, odd: Tuple[int, ...] = (), width: int = 5, batch: int = 4) -> Case:
    """grad of a residual MLP of n layers (a matrix, a bias and a gain each); the
    layers ``odd`` compute something else (they interrupt the runs of copies)."""
    X = np.random.default_rng(99).standard_normal((batch, width))

    def loss(p: Any) -> Any:
        h = X
        for i, (W, b, a) in enumerate(p):
            if i in odd:
                h = h * tnp.sin(h @ W) - b
            else:
                h = h + a * tnp.tanh(h @ W + b)
        return tnp.mean(h ** 2)
    return tg.grad(loss), [_params(n, width)]


def _activations(n: int) -> Case:
    """Every layer's activation a program output (no grad): the carried value's rows."""
    X = np.random.default_rng(7).standard_normal((4, 5))

    def f(p: Any) -> Any:
        h, hs = X, []
        for W, b, a in p:
            h = h + a * tnp.tanh(h @ W + b)
            hs.append(h)
        return hs, tnp.sum(h)
    return f, [_params(n)]


def _run(case: Case, loops: str, monkeypatch: pytest.MonkeyPatch) -> Tuple[List[np.ndarray], int, int]:
    """Results with TANGENTIA_NUMBA_SEG_LOOPS=loops (a fresh cache), copies, loops."""
    monkeypatch.setenv("TANGENTIA_NUMBA_SEGMENTS", "1")
    monkeypatch.setenv("TANGENTIA_NUMBA_SEG_LOOPS", loops)
    empty_cache(monkeypatch, "tangentia_seg_loops_")
    jaxpr, args = program(case[0], *case[1])
    c0, l0 = codegen.SEG_STATS["copies"], codegen.SEG_STATS["loops"]
    out = compile_numba(jaxpr)(*tg.tree_util.tree_leaves(args))
    return list(out), codegen.SEG_STATS["copies"] - c0, codegen.SEG_STATS["loops"] - l0


def _numpy(case: Case) -> List[np.ndarray]:
    jaxpr, args = program(case[0], *case[1])
    return [np.asarray(o) for o in get_backend("numpy").compile(jaxpr)(*tg.tree_util.tree_leaves(args))]


def _check(case: Case, monkeypatch: pytest.MonkeyPatch, min_loops: int) -> List[np.ndarray]:
    calls, copies0, loops0 = _run(case, "0", monkeypatch)
    looped, copies, loops = _run(case, "1", monkeypatch)
    assert loops0 == 0 and copies == copies0
    assert loops >= min_loops
    assert len(looped) == len(calls)
    for x, y in zip(looped, calls):
        assert type(x) is np.ndarray
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
    for g, w in zip(looped, _numpy(case)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    return looped


def test_layers_as_loops_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    # (17 layers: the forward run of 17 copies, the backward run of 16: the first
    # layer's transposed copy computes no cotangent of the input; runs of 3 and less:
    # test_runs_interrupted_by_other_layers)
    _check(_mlp(17), monkeypatch, min_loops=2)


def test_unpacked_matrices_in_a_tuple(monkeypatch: pytest.MonkeyPatch) -> None:
    """Matrices too large to be packed (33x33) are separate arguments: the loop reads
    copy c's from a tuple of them."""
    _check(_mlp(5, width=33), monkeypatch, min_loops=2)


def test_runs_interrupted_by_other_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of 1, 2 and 3 consecutive copies between layers of another kind (the
    backward run's last copy reads the other layer's value, not a stack's row)."""
    _check(_mlp(8, (1, 4)), monkeypatch, min_loops=2)


def test_outputs_do_not_share_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gradients are rows of the loops' stacks: writing into one changes no other."""
    out = _check(_mlp(6), monkeypatch, min_loops=2)
    for i, a in enumerate(out):
        for b in out[i + 1:]:
            assert not np.shares_memory(a, b)
    before = [o.copy() for o in out]
    for o in out:
        o[...] = -7.0
        o[...] = -7.0
    out[4][...] = 3.0
    for k, (o, b) in enumerate(zip(out, before)):
        assert (o == (3.0 if k == 4 else -7.0)).all()


def test_carried_values_as_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop's carried value of every copy is a program output (rows of its stack)."""
    out = _check(_activations(9), monkeypatch, min_loops=1)
    eager = tg.tree_util.tree_leaves(_activations(9)[0](*_activations(9)[1]))
    for g, w in zip(out, eager):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-14)


def test_grad_against_finite_differences(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TANGENTIA_NUMBA_SEG_LOOPS", "1")
    X = np.random.default_rng(3).standard_normal((4, 5))
    params = _params(5)

    def loss(p: Any) -> Any:
        h = X
        for W, b, a in p:
            h = h + a * tnp.tanh(h @ W + b)
        return tnp.mean(h ** 2)
    grads = tg.jit(tg.grad(loss), backend="numba")(params)
    eps = 1e-6
    for li in (0, 2, 4):
        for which, idx in ((0, (1, 3)), (1, (2,)), (2, ())):
            def at(d: float) -> float:
                q = [[np.array(x, dtype=float) for x in layer] for layer in params]
                q[li][which][idx] += d
                return float(loss(q))
            fd = (at(eps) - at(-eps)) / (2 * eps)
            got = np.asarray(grads[li][which])[idx]
            np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-9)


def test_jit_against_eager() -> None:
    f, args = _mlp(7, odd=(3,))
    got = tg.tree_util.tree_leaves(tg.jit(f, backend="numba")(*args))
    want = tg.tree_util.tree_leaves(f(*args))
    assert len(got) == len(want) == 21
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-14)


def test_loaded_machine_code_splits_the_same(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The machine-code cache keeps where the outputs are in the returned stacks."""
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TANGENTIA_NUMBA_FAST_LOAD", "1")
    monkeypatch.setenv("TANGENTIA_NUMBA_SEG_LOOPS", "1")
    f, params = _mlp(5)
    jaxpr, args = program(f, *params)
    args = tg.tree_util.tree_leaves(args)
    native = compile_numba(jaxpr, NumbaBackend())
    assert native.split is not None
    loaded = objcache.load(jaxpr)
    assert loaded is not None and loaded.split == native.split
    a, b = loaded(*args), native(*args)
    assert len(a) == len(b) == 15
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
