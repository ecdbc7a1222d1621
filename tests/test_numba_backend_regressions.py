"""Programs the numba backend got wrong (a wrong number, or a compile failure that handed
the program to the NumPy backend), each compiled by numba itself and compared with the
NumPy backend: found by running the suite on numba (``TANGENTIA_TEST_BACKEND=numba``) and
by random programs aimed at the newest code paths (rerolled runs, row I/O, repeated units,
addressed inputs)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import reroll  # noqa: E402

from _numba_util import compile_numba, empty_cache, program  # noqa: E402


def _against_numpy(f: Any, *args: Any, rtol: float = 1e-12, atol: float = 1e-14) -> list:
    """``f``'s program at ``args`` compiled by numba (no fallback) and by the NumPy
    backend: the results agree."""
    jaxpr, full = program(f, *args)
    got = compile_numba(jaxpr)(*full)
    want = get_backend("numpy").compile(jaxpr)(*full)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return [np.asarray(g) for g in got]


def test_rerolled_run_starting_between_a_loop_and_its_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    """vmap(grad) of a scan whose body is a Python loop of leaky-relu layers of one shared
    4x4 matrix: the IR block's repeated nodes hold a ``"loop"`` node (several values) and
    the ``"pick"`` nodes reading it.  A run whose copies started between the two carried
    the loop node into the next copy as one phi, and the compile failed (AttributeError:
    'list' object has no attribute 'type'), so the program ran on the NumPy backend;
    with 40 layers under the default threshold too."""
    monkeypatch.setenv("TANGENTIA_NUMBA_REROLL", "16")
    empty_cache(monkeypatch, "tangentia_regress_")
    rng = np.random.default_rng(0)
    W = rng.standard_normal((4, 4)) / 2.0
    xs = rng.standard_normal((3, 4))

    def loss(c0: Any) -> Any:
        def body(c: Any, x: Any) -> Any:
            h = c + x
            for _ in range(12):
                h = tnp.maximum(W @ h, 0.1 * (W @ h))
            return h, h[0]
        cT, ys = lax.scan(body, c0, xs)
        return tnp.sum(cT ** 2) + tnp.sum(ys)

    x = np.stack([np.linspace(-0.5, 0.5, 4), np.linspace(1.0, -0.3, 4), np.full(4, 0.2)])
    before = reroll.STATS["runs"]
    (g,) = _against_numpy(tg.vmap(tg.grad(loss)), x)
    assert reroll.STATS["runs"] > before          # (the runs were rolled, not given up)
    # and the gradient is the loss's: a row against a central difference
    h = 1e-6
    e = np.zeros(4)
    e[1] = h
    fd = (loss(x[0] + e) - loss(x[0] - e)) / (2 * h)
    np.testing.assert_allclose(g[0, 1], fd, rtol=1e-6, atol=1e-8)
