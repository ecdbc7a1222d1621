"""Where a run of repeated copies starts (``codegen._phase``): decided by the period, not by
the equations before the run, so an edit outside the repeated region keeps the copies' units.

``grad`` of a loss edited in its last line (``mean(h ** 2)`` -> ``mean(h ** 2) + 0.1 *
mean(h)``) starts its backward pass with an ``add_any`` of two cotangents where the
original had one: the greedy search then began the backward copies one equation earlier,
a unit of another structure, compiled again instead of loaded from the cache.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import codegen, native  # noqa: E402
from tangentia.compiler.numba_backend.plan import program_plan  # noqa: E402
from tangentia.compiler.numba_backend.rules import FUSIBLE, ROWS  # noqa: E402

from _numba_util import compile_numba, program  # noqa: E402
from test_numba_segments import _sim  # noqa: E402  (the spring chain, with its edited variant)

Case = Tuple[Callable[..., Any], List[Any]]


def _mlp(n: int, edited: bool) -> Case:
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((6, 6)) / 6, rng.standard_normal(6) * 0.1,
               np.float64(0.5 + 0.1 * i)) for i in range(n)]
    X = rng.standard_normal((4, 6))

    def loss(p: Any) -> Any:
        h = X
        for W, b, a in p:
            h = h + a * tnp.tanh(h @ W + b)
        out = tnp.mean(h ** 2)
        return out + 0.1 * tnp.mean(h) if edited else out
    return tg.grad(loss), [params]


def _keys(case: Case) -> List[Any]:
    """The copies' unit keys in program order."""
    jaxpr, _ = program(case[0], *case[1])
    settings = native._settings()
    plan = program_plan(jaxpr, settings, ROWS, FUSIBLE)
    segs = codegen.repeated_segments(plan.eqns, plan.outvars, plan.consumers, settings.limit)
    return [segs[s][2] for s in sorted(segs)]


@pytest.mark.parametrize("make", [_mlp, _sim], ids=["mlp", "sim"])
def test_an_edited_loss_keeps_the_copies(make: Callable[[int, bool], Case]) -> None:
    orig, edited = _keys(make(8, False)), _keys(make(8, True))
    assert len(orig) >= 2 * 6 and len(set(orig)) == 2       # forward and backward copies
    assert set(edited) == set(orig)
    assert len(edited) == len(orig)


def test_results_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _mlp(8, True)
    jaxpr, args = program(case[0], *case[1])
    args = tg.tree_util.tree_leaves(args)
    got = compile_numba(jaxpr)(*args)
    monkeypatch.setenv("TANGENTIA_NUMBA_SEGMENTS", "0")
    plain = compile_numba(jaxpr)(*args)
    want = get_backend("numpy").compile(jaxpr)(*args)
    for g, p, w in zip(got, plain, want):
        assert np.asarray(g).tobytes() == np.asarray(p).tobytes()
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
