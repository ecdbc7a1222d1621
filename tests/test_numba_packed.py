"""The numba backend passes a program's scalarized float64 inputs packed in one array
(``native._packed_inputs``): numba compiles one array argument instead of dozens
(the pendulum gradient has 41 scalar constants).  The calls must not notice."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import NumbaBackend, native  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402


def f(a: Any, b: Any, v: Any, c: Any, n: Any, w: Any, d: Any) -> Any:
    # four scalarized float64 inputs (a, b, v: 2 elements, c, d: five, w not: 20 elements)
    # and an integer one, read in an order unlike their positions
    return (tnp.sin(d) * v[1] + c * n - a * b + v[0], tnp.sum(w * d) + c, w[3:5] * v + a)


ARGS = [np.float64(0.5), np.array(-1.25), np.array([0.3, 2.0]), np.array(4.0), np.array(3),
        np.linspace(-1.0, 1.0, 20), np.array(0.75)]


def test_packed_inputs_give_the_numpy_backends_numbers_and_check_shapes() -> None:
    closed = tg.make_jaxpr(f)(*ARGS)
    assert not closed.consts
    jaxpr = convert_constvars_to_invars(closed.jaxpr)
    assert native._packed_inputs(jaxpr, native.SMALL) == (0, 1, 2, 3, 6)
    fn = NumbaBackend().compile(jaxpr)
    assert "_xp" in fn.source
    want = get_backend("numpy").compile(jaxpr)(*ARGS)
    got = fn(*ARGS)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-15, atol=0)
    # Python numbers, an integer array and a float32 array where float64 was traced:
    # converted as the unpacked arguments are (np.array(a, float64))
    other = [0.5, -1.25, np.array([0.3, 2.0], np.float32), 4, np.array(3), ARGS[5], True]
    want = get_backend("numpy").compile(jaxpr)(*[np.array(a, np.float64) if i != 4 else a
                                                 for i, a in enumerate(other)])
    for g, w in zip(fn(*other), want):
        np.testing.assert_allclose(g, w, rtol=1e-15, atol=0)
    # a packed argument of the wrong shape is refused, never read shifted
    bad = list(ARGS)
    bad[2] = np.array([0.3, 2.0, 1.0])
    with pytest.raises(TypeError, match=r"shape \(3,\) where \(2,\) was compiled for"):
        fn(*bad)
    bad = list(ARGS)
    bad[0] = np.array([0.5])
    with pytest.raises(TypeError, match=r"shape \(1,\) where \(\) was compiled for"):
        fn(*bad)
    with pytest.raises(TypeError, match="takes 7 arguments, got 6"):
        fn(*ARGS[:6])


def test_few_scalar_inputs_stay_arguments() -> None:
    # (below PACK_MIN_INPUTS: a concatenation per call would cost more than it saves)
    closed = tg.make_jaxpr(lambda x, y: x * y + 1.0)(1.0, np.ones(3))
    jaxpr = convert_constvars_to_invars(closed.jaxpr)
    assert native._packed_inputs(jaxpr, native.SMALL) == ()
    assert "_xp" not in NumbaBackend().source(jaxpr)
