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


@pytest.mark.parametrize("src", [np.complex128, np.complex64])
def test_complex_to_integer_conversion_saturates(src: Any) -> None:
    """convert_element_type of complex numbers to integers is that of their real part as
    the impl's and XLA's: truncated, saturating at the type's limits, NaN to 0.  numba's
    cast of the real part (LLVM's fptosi, undefined out of range) gave INT_MIN for inf,
    NaN and 1e300 in int32 (JAX: INT_MAX, 0, INT_MAX): test_fuzz_transforms_values on numba.
    Scalarized (8 elements) and in a loop (40)."""
    with np.errstate(all="ignore"):
        re = np.array([np.inf, 7e4, -np.inf, np.nan, 1e300, -3.7, 2.9, 300.0, -1e10, 255.5])
        im = np.array([1.0, np.nan, 0.0, 2.0, np.inf, 0.0, -1.0, 3.0, 0.0, -0.5])
        v = np.empty(re.shape, src)
        v.real, v.imag = re, im     # (re + 1j * im would make every NaN imaginary part's real NaN)
    tos = (np.int8, np.uint8, np.int32, np.int64, np.uint64, np.bool_)
    for n in (8, 40):
        x = np.resize(v, n)
        got = _against_numpy(lambda a: [lax.convert_element_type(a, t) for t in tos], x, rtol=0, atol=0)
        for g, t in zip(got, tos):
            with np.errstate(all="ignore"):
                want = tg.numpy.asarray(x).astype(t) if t is np.bool_ else lax.convert_element_type(x, t)
            np.testing.assert_array_equal(g, np.asarray(want), err_msg=f"{np.dtype(src)} -> {np.dtype(t)}")
    # the saturated values themselves (JAX's): inf, NaN, 1e300 to int32
    out = _against_numpy(lambda a: lax.convert_element_type(a, np.int32), v[:5], rtol=0, atol=0)
    np.testing.assert_array_equal(out[0], [2**31 - 1, 70000, -2**31, 0, 2**31 - 1])
