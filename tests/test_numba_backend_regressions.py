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


def test_vector_lanes_after_a_rerolled_run_with_hoisted_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """jit(value_and_grad) of a 13-step scan whose body is 13 dense 8x8 layers alternating
    leaky relu and ELU, under the default settings: its IR block rolls a run of layers,
    and the nodes after it are emitted with vector lanes in the order ``reroll`` gives
    them, stores hoisted to just after what they read.  ``irblock._lane_plan`` scheduled
    packs by node number, so a hoisted row store read a lane of a pack emitted after it
    (KeyError: 2 in _emit_lanes): the program ran on the NumPy backend."""
    empty_cache(monkeypatch, "tangentia_regress_")
    rng = np.random.default_rng(84)
    m, T = 8, 13
    Ws = [rng.standard_normal((m, m)) / 3.0 for _ in range(13)]
    xs = rng.standard_normal((T, m))

    def loss(W0: Any, c0: Any) -> Any:
        def body(c: Any, x: Any) -> Any:
            h = tnp.tanh(W0 @ c + x)
            for k, W in enumerate(Ws):
                v = W @ h - 0.25 * c
                h = tnp.maximum(v, 0.1 * v) if k % 2 == 0 else tnp.where(v > 0, v, tnp.expm1(v))
            return h, (h[0], h[m - 1] * 2)
        cT, (y0, y1) = lax.scan(body, c0, xs)
        return tnp.sum(cT ** 2) + 0.1 * (tnp.sum(y0) + tnp.sum(y1))

    W0 = rng.standard_normal((m, m)) / 3.0
    before = reroll.STATS["runs"]
    value, dW0, dc0 = _against_numpy(tg.value_and_grad(loss, argnums=(0, 1)), W0, np.ones(m),
                                     rtol=1e-11, atol=1e-12)
    assert reroll.STATS["runs"] > before
    h = 1e-6
    e = np.zeros(m)
    e[3] = h
    fd = (loss(W0, np.ones(m) + e) - loss(W0, np.ones(m) - e)) / (2 * h)
    np.testing.assert_allclose(dc0[3], fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", [(6, 6), (4, 6, 6), (3, 5, 5), (5, 3), (2, 3, 7, 7)])
def test_singular_values_alone(shape: Any) -> None:
    """``svd(compute_uv=False)``: svd_p has multiple results, here one, the singular values.
    Its kernel returned that one array bare, and the program read its result as
    ``r[0]``: the first row (or element) of the singular values.  jit of
    ``tnp.linalg.svd(m, compute_uv=False) * 2`` of a 6x6 matrix returned six wrong numbers
    on numba, of a (4, 6, 6) stack a (6,) array where (4, 6) is right, and others failed to
    compile (a fallback)."""
    m = np.random.default_rng(7).standard_normal(shape)
    s = np.linalg.svd(m, compute_uv=False)
    got = _against_numpy(lambda a: [tnp.linalg.svd(a, compute_uv=False),
                                    tnp.linalg.svd(a, compute_uv=False) * 2,
                                    tnp.sum(tnp.linalg.svd(a, compute_uv=False), axis=-1)],
                         m, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[0], s, rtol=1e-12)
    np.testing.assert_allclose(got[1], 2 * s, rtol=1e-12)
    np.testing.assert_allclose(got[2], s.sum(axis=-1), rtol=1e-12)


def test_object_mode_call_with_an_unused_output() -> None:
    """An equation run in object mode (a pure_callback; jit(vmap(linalg.eigvals)) calls one
    with the eigenvectors unused) whose output no later line reads: numba refused the
    program ('Invalid type annotation on non-outgoing variables') and it fell back to the
    NumPy backend. Its outputs are read after the block now."""
    def host(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.sin(x[:3]), np.cos(x)

    def f(x: Any) -> Any:
        a, _ = tg.pure_callback(host, (tg.ShapeDtypeStruct((3,), x.dtype),
                                       tg.ShapeDtypeStruct(x.shape, x.dtype)), x)
        return a * 2.0

    x = np.linspace(-2.0, 2.0, 48)
    got = _against_numpy(f, x)
    np.testing.assert_allclose(got[0], 2.0 * np.sin(x[:3]), rtol=1e-15)
    stack = np.random.default_rng(0).normal(size=(3, 4, 4))
    got = _against_numpy(tg.vmap(tnp.linalg.eigvals), stack, rtol=1e-10)
    np.testing.assert_allclose(np.sort_complex(got[0]), np.sort_complex(np.linalg.eigvals(stack)),
                               rtol=1e-10)


def test_a_slice_of_a_strided_slice() -> None:
    """A basic index of a strided one, ``x[::-1][1:]`` (``lax.rev`` then a slice), ``x[::2][1:]``:
    the two compose into one read, the outer index's expression (``1 + i``) put into the
    inner's ``start + i * step`` without parentheses, so ``x[::-1][1:]`` of 33 elements read
    ``x[33 - i]`` where ``x[31 - i]`` is right: every element shifted by two and the first
    read past the array's end (a float64 1.35e-321, an int32 0 from whatever memory
    followed). Arrays whose results are loops (not scalarized) only; 1-D and 2-D, forward
    and reversed strides, every dtype kind."""
    x = np.arange(33.0) - 7.5
    m = np.arange(6.0 * 40).reshape(6, 40) * 0.25

    def f(x: Any, m: Any, k: Any) -> list:
        return [x[::-1][1:], x[::2][1:], x[::-3][2::2], x[1::2][::-1][1:], x[::-1][::-1][3:],
                m[:, ::-1][1:, 2:], m[::-2, ::3][1:, 1::2], tnp.transpose(m[:, ::-1])[3:, 1:],
                lax.rev(x, (0,))[1:] * 2.0, k[::-1][1:], k[::2][1:].astype(np.int64)]
    k = (np.arange(33) * 3 - 40).astype(np.int32)
    want: list[np.ndarray] = [x[::-1][1:], x[::2][1:], x[::-3][2::2], x[1::2][::-1][1:], x[::-1][::-1][3:],
            m[:, ::-1][1:, 2:], m[::-2, ::3][1:, 1::2], m[:, ::-1].T[3:, 1:],
            x[::-1][1:] * 2.0, k[::-1][1:], k[::2][1:].astype(np.int64)]
    for c in (x.astype(np.complex128) * (1 - 1j), x.astype(np.float32)):
        got = _against_numpy(lambda c: [c[::-1][1:], c[::2][1:]], c, rtol=0, atol=0)
        np.testing.assert_array_equal(got[0], c[::-1][1:])
        np.testing.assert_array_equal(got[1], c[::2][1:])
    got = _against_numpy(f, x, m, k, rtol=0, atol=0)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
