"""jit's arguments in the other byte order (``>f4`` on a little-endian machine, as read from
files or network buffers): NumPy computes with them, and jit runs them as native arrays of
the same values.  The numba backend refused the program built for their dtypes
(NumbaNotImplementedError: ``>f4``), warned and ran it with the NumPy backend.  JAX 0.10.2
raises TypeError for such arrays (not a valid JAX type): ours, NumPy-compatible, converts."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402


def _f(x, d):
    return tnp.sin(x) * 2.0 + x.sum(), d["w"] @ x.T, d["n"] * 3


@pytest.mark.parametrize("order", [">", "<"])
def test_other_byte_order_runs_native_on_numba(order):
    x0 = np.random.default_rng(0).normal(size=(3, 4))
    n0 = np.arange(5)
    f = tg.jit(_f, backend="numba")
    for dt in ("f8", "f4"):
        want = _f(x0.astype(dt), {"w": x0.astype(dt), "n": n0.astype("i4")})   # eagerly, native
        x = x0.astype(order + dt)
        d = {"w": x, "n": n0.astype(order + "i4")}
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*cannot compile this program")
            for _ in range(2):   # traced, then from the caches
                got = f(x, d)
                for g, w in zip(got, want):
                    assert g.dtype.isnative
                    np.testing.assert_allclose(g, w, rtol=1e-5 if dt == "f4" else 1e-14)
        assert got[0].dtype == np.float32 if dt == "f4" else np.float64
        assert got[2].dtype == np.int32
    # gradients through jit, against the native arrays'
    g = tg.jit(tg.grad(lambda x: tnp.sum(tnp.sin(x) * x)), backend="numba")
    np.testing.assert_allclose(g(x0.astype(order + "f8")), np.sin(x0) + x0 * np.cos(x0),
                               rtol=1e-14)
