"""The numba backend's lean pipeline (``numba_backend/native.py``, issue 23).

Generated programs and units compile without numba's SSA passes; a check after typing
(``_SameTypes``) sends any function whose names the lean pipeline would type otherwise
than the default one back to the default pipeline.  Each test compiles a few tiny
functions (well under a second each).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.numba_backend import native  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def _lean_dispatcher(f: Any) -> Any:
    opts = native._lean_options(dict(native._NJIT_OPTIONS))
    assert "pipeline_class" in opts
    return numba.njit(**opts)(f)


def _retyped(x: float) -> Any:
    a = 7
    b = a // 2            # an int under the default pipeline (a float if ``a`` were widened)
    a = x * 0.5           # type: ignore[assignment]
    return b, a


def _carried(x: float) -> float:
    s = 0.0
    for i in range(5):
        s = s * x + i
    return s


def test_a_name_of_two_types_compiles_under_the_default_pipeline() -> None:
    before = dict(native.LEAN_STATS)
    disp = _lean_dispatcher(_retyped)
    native._compile_lean(disp, (numba.types.float64,))
    assert native.LEAN_STATS["default"] == before["default"] + 1
    b, a = disp(3.0)
    assert type(b) is int and b == 3 and a == 1.5      # as Python computes it


def test_loop_carries_stay_on_the_lean_pipeline() -> None:
    before = dict(native.LEAN_STATS)
    disp = _lean_dispatcher(_carried)
    native._compile_lean(disp, (numba.types.float64,))
    assert native.LEAN_STATS["lean"] == before["lean"] + 1
    assert native.LEAN_STATS["default"] == before["default"]
    assert disp(1.5) == _carried(1.5)


def test_lean_off_uses_numbas_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TANGENTIA_NUMBA_LEAN", "0")
    assert "pipeline_class" not in native._lean_options(dict(native._NJIT_OPTIONS))


def test_programs_with_loops_agree_with_the_numpy_backend(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Any) -> None:
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))

    def f(x: Any, n: Any) -> Any:
        def body(i: Any, c: Any) -> Any:
            y, k = c
            return tnp.sin(y) * 1.5 + x[i % 3] * k, k + 1
        y, k = lax.fori_loop(0, 7, body, (x, n))
        return tnp.sum(y * y) + k

    x = np.array([0.3, -1.2, 2.0])
    n = np.int32(2)
    before = dict(native.LEAN_STATS)
    got = tg.jit(tg.grad(f), backend="numba")(x, n)
    want = tg.jit(tg.grad(f), backend="numpy")(x, n)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    assert native.LEAN_STATS["lean"] > before["lean"]
    assert native.LEAN_STATS["default"] == before["default"]
