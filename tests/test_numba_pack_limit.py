"""A network past the packing limit still compiles its layers as loops.

A program's small float64 inputs are packed in one buffer up to ``native.PACK_MAX_ELEMENTS``
elements; past it, the later layers' matrices are taken by address (``native._addressed``)
and their biases and gains buffered (``native._buffered_inputs``).  The copies of a layer
(``codegen.repeated_segments``) then read their inputs one way before the limit and
another after it; ``codegen._Gen.run_plans`` gave up on such a run, and every copy became
a call of its own at the program's top level: ``jit(grad)`` of a residual MLP of 330 16x16
layers (84,480 weights) handed numba a 2,500-line function whose compile did not end
(> 400 s CPU, where 200 layers compile in 2 s).  Now each piece of copies whose inputs
arrive alike is one loop, and past the limit nothing more is packed (``_packed_inputs``),
so those pieces are two per direction.  The limit is lowered here so that small layers
cross it; the program's code must not grow with the number of layers, and its numbers are
the NumPy backend's.
"""
from __future__ import annotations

import re
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import native  # noqa: E402

from _numba_util import compile_numba, empty_cache, program  # noqa: E402

# (a failure, never a hang: before the fix a program like these past the real limit
# compiled for many minutes)
pytestmark = pytest.mark.timeout(120)

WIDTH, BATCH = 5, 4        # (5x5 matrices and 4x5 activations: arrays, not scalarized)
PER_LAYER = WIDTH * WIDTH + WIDTH + 1
PACKED_LAYERS = 15      # the layers packed before the lowered limit
LIMIT = BATCH * WIDTH + 1 + PACKED_LAYERS * PER_LAYER + WIDTH + 1  # (a bias and a gain would fit)


def _case(n: int) -> Tuple[Callable[..., Any], List[Any]]:
    """grad of the loss of a residual MLP of ``n`` layers (a matrix, a bias and a gain a
    layer), and its parameters."""
    rng = np.random.default_rng(n)
    X = rng.standard_normal((BATCH, WIDTH))
    params = [(rng.standard_normal((WIDTH, WIDTH)) / WIDTH, rng.standard_normal(WIDTH) * 0.1,
               np.float64(0.5 + 0.01 * i)) for i in range(n)]

    def loss(p: Any) -> Any:
        h = X
        for W, b, a in p:
            h = h + a * tnp.tanh(h @ W + b)
        return tnp.mean(h ** 2)
    return tg.grad(loss), [params]


def _program_lines(source: str) -> List[str]:
    """The lines of the generated ``program`` function (the top level numba compiles)."""
    lines = source.splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith("def program("))
    end = next((k for k in range(start + 1, len(lines))
                if lines[k] and not lines[k].startswith(" ")), len(lines))
    return lines[start:end]


@pytest.fixture
def low_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TANGENTIA_NUMBA_SEGMENTS", "1")
    monkeypatch.setenv("TANGENTIA_NUMBA_SEG_LOOPS", "1")
    monkeypatch.setattr(native, "PACK_MAX_ELEMENTS", LIMIT)


def test_inputs_past_the_limit_arrive_alike(low_limit: None) -> None:
    """Packed: a prefix of the inputs (X, a constant and 15 layers), not a later bias or
    gain that would still fit; the other layers' 25 matrices addressed, their biases and
    gains buffered."""
    f, args = _case(40)
    jaxpr, _ = program(f, *args)
    inputs = native._inputs(jaxpr, native.SMALL)
    shapes = [v.aval.shape for v in jaxpr.invars]
    matrices = [i for i, s in enumerate(shapes) if s == (WIDTH, WIDTH)]
    assert len(matrices) == 40
    n = len(inputs.packed)
    assert inputs.packed == tuple(range(n)) and n == matrices[PACKED_LAYERS]
    assert inputs.addressed == tuple(matrices[PACKED_LAYERS:])
    assert sorted(inputs.buffered) == sorted(set(range(n, len(shapes))) - set(inputs.addressed))


def test_layers_past_the_limit_are_loops(low_limit: None) -> None:
    """The program's code does not grow with the layers past the limit: 40 or 80 layers,
    the same lines; at most a few copies called outside the loops (where the pieces
    meet), and the loops run every other copy."""
    sources = {}
    for n in (40, 80):
        f, args = _case(n)
        jaxpr, _ = program(f, *args)
        sources[n] = _program_lines(native.NumbaCompiler().source(jaxpr))
    prog = sources[40]
    head = prog[0]
    # (the inputs do arrive three ways: packed, buffered, addressed)
    assert "_xp" in head and "_xb0" in head and "_xa" in head, head
    assert len(sources[80]) == len(prog)
    loops = [ln for ln in prog if re.match(r"\s+for c\d+ in range\(\d+\):", ln)]
    trips = sorted(int(re.search(r"range\((\d+)\)", ln).group(1)) for ln in loops)  # type: ignore[union-attr]
    calls = [ln for ln in prog if re.search(r"= _u\d+\(_up\[\d+\]", ln)]
    outside = [ln for ln in calls if re.match(r"    \S", ln)]
    # forward: the 40 copies, the packed and the addressed layers' loops; backward: 39
    # (the first layer's computes no cotangent of X), one or two called alone between
    assert len(loops) == 4 and sum(trips) + len(outside) == 40 + 39, (trips, outside)
    assert len(outside) <= 2 and min(trips) >= PACKED_LAYERS - 1, (trips, outside)


def test_numbers_past_the_limit(low_limit: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled past the limit, the gradients are the NumPy backend's."""
    empty_cache(monkeypatch, "tangentia_pack_limit_")
    f, args = _case(40)
    jaxpr, nested = program(f, *args)
    full = tg.tree_util.tree_leaves(nested)
    assert native._inputs(jaxpr, native.SMALL).addressed
    got = compile_numba(jaxpr)(*full)
    want = get_backend("numpy").compile(jaxpr)(*full)
    assert len(got) == len(want) == 3 * 40
    for g, w in zip(got, want):
        assert type(g) is np.ndarray and g.shape == np.shape(w)
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-14)
