"""The numba backend's own matrix multiply (``numba_backend.gemm``).

``_gemm`` is checked directly against float64 NumPy products within the
rounding bound of a sum of ``k`` products (``|error| <= k eps |a| @ |b|``
elementwise, plus half an ulp of the rounded result), for sizes on and off the
edges of its register tiles and cache blocks (odd sizes, ``k = 1``, empty
dimensions, more than one block in every direction), each operand stored in
either orientation, float32 and float64; NaN and infinities must land where
NumPy's put them.  Programs using it are compared with the NumPy backend (the
differential tests) with the kernel forced (``TANGENTIA_NUMBA_GEMM=own``: by
default it is used where it was measured faster, test_gemm_calibration.py), and
the switch at ``blas`` must bring back BLAS calls.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.numba_backend import gemm  # noqa: E402

from test_numba_backend import NUMBA, check, program  # noqa: E402

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)
NR = {F64: gemm.NV * 8, F32: gemm.NV * 16}
# the arguments of a generated call of the kernel, which programs call through its address
# (``native._Kernel``): ``_gemm<n>(<address>, (<arguments>))``
_CALL_ARGS = re.compile(r"_gemm\d+\(\w+(?:\[\d+\])?, \((.*)\)\)$", re.M)
needs_avx512 = pytest.mark.skipif(not gemm._has_avx512(),
                                  reason="numba's target CPU has no AVX-512F: products call BLAS")


def run(a, ta, b, tb, dtype):
    """``_gemm`` on ``a``, ``b`` (stored transposed if ``ta``/``tb``), and the
    float64 reference ``op(a) @ op(b)`` with its rounding bound."""
    A, B = (a.T if ta else a), (b.T if tb else b)
    c = np.full((A.shape[0], B.shape[1]), np.nan, dtype)   # every element must be written
    gemm._gemm(np.ascontiguousarray(a), ta, np.ascontiguousarray(b), tb, c)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = A64 @ B64
    eps = np.finfo(dtype).eps
    k = A.shape[1]
    bound = (k + 1) * eps * (np.abs(A64) @ np.abs(B64)) + eps * np.abs(ref) + np.finfo(dtype).tiny
    return c, ref, bound


def operands(m, n, k, ta, tb, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(k, m) if ta else (m, k)).astype(dtype)
    b = rng.normal(size=(n, k) if tb else (k, n)).astype(dtype)
    return a, b


def assert_within(c, ref, bound, what):
    err = np.abs(c.astype(np.float64) - ref)
    assert c.shape == ref.shape, what
    assert np.all(err <= bound), f"{what}: error {err.max():.3g} above the bound at {np.argmax(err > bound)}"


# sizes around the register tile (MR rows, NR columns), the k-loop unrolling and
# the cache blocks (MC, KC, NC), and arbitrary ones
DIMS = st.one_of(st.sampled_from([0, 1, 2, 7, 8, 9, 23, 24, 25, 47, 48, 49, 127, 128, 129, 130]),
                 st.integers(0, 140))
DEPTHS = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 5, 255, 256, 257, 259, 300]), st.integers(0, 300))


@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=DIMS, n=DIMS, k=DEPTHS, ta=st.booleans(), tb=st.booleans(), seed=st.integers(0, 2**16))
def test_gemm_matches_numpy_within_rounding(dtype, m, n, k, ta, tb, seed):
    a, b = operands(m, n, k, ta, tb, dtype, seed)
    c, ref, bound = run(a, ta, b, tb, dtype)
    assert c.dtype == dtype
    assert_within(c, ref, bound, f"{dtype} m={m} n={n} k={k} ta={ta} tb={tb}")


@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
def test_more_than_one_block_in_every_direction(dtype):
    # m > MC, n > NC, k > 2 KC, none a multiple of the tile or of a block
    m, n, k = gemm.MC + gemm.MR + 3, gemm.NC + NR[dtype] + 5, 2 * gemm.KC + 7
    for ta, tb in [(False, False), (True, True)]:
        a, b = operands(m, n, k, ta, tb, dtype, 1)
        c, ref, bound = run(a, ta, b, tb, dtype)
        assert_within(c, ref, bound, f"{dtype} ta={ta} tb={tb}")


def test_exact_on_small_integers():
    # integer-valued products and sums are exact in any order
    rng = np.random.default_rng(3)
    a, b = rng.integers(-8, 9, size=(37, 261)).astype(float), rng.integers(-8, 9, size=(261, 53)).astype(float)
    c, ref, _ = run(a, False, b, False, F64)
    np.testing.assert_array_equal(c, ref)


def test_empty_dimensions():
    for m, n, k in [(0, 5, 3), (5, 0, 3), (5, 4, 0), (0, 0, 0)]:
        a, b = np.ones((m, k)), np.ones((k, n))
        c = np.full((m, n), np.nan)
        gemm._gemm(a, False, b, False, c)
        np.testing.assert_array_equal(c, np.zeros((m, n)))


@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
def test_nan_and_infinities_propagate_like_numpy(dtype):
    rng = np.random.default_rng(4)
    m, n, k = 19, 53, 270
    a, b = rng.normal(size=(m, k)).astype(dtype), rng.normal(size=(k, n)).astype(dtype)
    a[3, 5], a[7, 260], a[11, 0] = np.nan, np.inf, -np.inf
    b[100, 2], b[269, 50], b[0, 9] = np.inf, np.nan, 0.0   # a[11, 0] * b[0, 9] = -inf * 0 = NaN
    b[7, :] = 0.0
    a[12, 7] = np.inf                                      # inf * 0 in every column: NaN row
    for ta, tb in [(False, False), (True, False), (False, True)]:
        c = np.empty((m, n), dtype)
        gemm._gemm(a.T.copy() if ta else a, ta, b.T.copy() if tb else b, tb, c)
        with np.errstate(invalid="ignore"):
            want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
        np.testing.assert_array_equal(np.isposinf(c), np.isposinf(want))
        np.testing.assert_array_equal(np.isneginf(c), np.isneginf(want))
        assert np.isnan(c).sum() > n and np.isinf(c).sum() > 0


def test_use_gemm_thresholds(monkeypatch):
    monkeypatch.setattr(gemm, "_AVX512", True)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")    # (auto: measured, test_gemm_calibration.py)
    assert gemm.use_gemm(F64, 128, 512, 784) and gemm.use_gemm(F32, 96, 96, 96)
    assert gemm.use_gemm(F64, 64, 64, 64) and gemm.use_gemm(F64, 16, 48, 256)
    assert not gemm.use_gemm(F64, 32, 32, 32)             # below MIN_FLOPS
    assert not gemm.use_gemm(F64, 512, 512, 8)            # a dimension below MIN_DIM
    assert not gemm.use_gemm(F64, 10, 512, 512)
    assert not gemm.use_gemm(F64, 512, 47, 512)           # fewer than two tiles' width
    assert not gemm.use_gemm(F32, 512, 64, 512)
    assert not gemm.use_gemm(np.complex128, 128, 128, 128)
    assert not gemm.use_gemm(np.int64, 128, 128, 128)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")
    assert not gemm.use_gemm(F64, 128, 512, 784)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "Own")
    assert gemm.use_gemm(F64, 128, 512, 784)
    monkeypatch.setattr(gemm, "_AVX512", False)
    assert not gemm.use_gemm(F64, 128, 512, 784)


def test_bad_switch_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "mkl")
    with pytest.raises(ValueError, match=r"TANGENTIA_NUMBA_GEMM must be 'auto', 'blas' or 'own', got 'mkl'"):
        gemm.gemm_mode()


# --- programs: the numba backend against the NumPy backend --------------------
# (values below numba_backend.LARGE elements, so the numba backend compiles them)

def data(shape, dtype, seed):
    return (np.random.default_rng(seed).normal(size=shape) * 2).astype(dtype)


def dots(x, y):
    """Products of ``x`` (64, 96) and ``y`` (96, 112) in every operand layout."""
    xt, yt = x.T * 1, y.T * 1
    return [x @ y,
            lax.dot_general(xt, y, (((0,), (0,)), ((), ()))),    # x.T @ y, x stored transposed
            lax.dot_general(x, yt, (((1,), (1,)), ((), ()))),    # x @ y.T
            lax.dot_general(xt, yt, (((0,), (1,)), ((), ()))),
            tnp.tanh(x) @ y,                                    # a lazy operand, written once
            x[:, ::2] @ y[::2, :]]                              # strided slices


@needs_avx512
@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
def test_programs_call_gemm_and_match_the_numpy_backend(dtype, monkeypatch):
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")     # (auto: measured)
    x, y = data((64, 96), dtype, 0), data((96, 112), dtype, 1)
    x[5, 7], y[3, 11] = np.nan, np.inf
    rtol = 1e-4 if dtype == F32 else 1e-10
    check(dots, x, y, rtol=rtol, atol=rtol)
    src = NUMBA.source(program(dots, x, y)[0])
    assert len(re.findall(r"_gemm\d+\(", src)) == 6 and "_blasdot" not in src, src
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")
    src = NUMBA.source(program(dots, x, y)[0])
    assert "_gemm" not in src and len(re.findall(r"_blasdot\d+\(", src)) == 6, src


@needs_avx512
def test_batched_products_and_gradients(monkeypatch):
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")     # (auto: measured)
    a, b = data((3, 64, 48), F64, 2), data((3, 48, 64), F64, 3)
    c = data((64, 3, 48), F64, 4)                 # batch dimension not first

    def f(a, b, c):
        return [a @ b, lax.dot_general(c, b, (((2,), (1,)), ((1,), (0,))))]
    check(f, a, b, c, rtol=1e-10, atol=1e-12)
    assert "_gemm" in NUMBA.source(program(f, a, b, c)[0])

    # an MLP's loss gradient: the forward products and the backward x.T @ g, g @ w.T
    w1, w2, xb = data((48, 64), F64, 5) / 7, data((64, 32), F64, 6) / 8, data((64, 48), F64, 7)

    def loss(w1, w2, xb):
        return tnp.sum(tnp.tanh(tnp.tanh(xb @ w1) @ w2) ** 2)
    grad = tg.grad(loss, argnums=(0, 1))
    check(lambda *args: list(grad(*args)), w1, w2, xb, rtol=1e-10, atol=1e-12)
    src = NUMBA.source(program(lambda *args: list(grad(*args)), w1, w2, xb)[0])
    assert len(re.findall(r"_gemm\d+\(", src)) >= 3, src


@needs_avx512
def test_gemm_bound_programs_leave_the_numpy_calls_path(monkeypatch):
    """A loop-free program over large arrays whose products dominate (a layer and
    its gradient) is compiled whole, calling ``_gemm``; with the switch at
    ``blas`` it runs as NumPy calls (numpy.matmul), as before."""
    x, w = data((128, 256), F64, 8), data((256, 256), F64, 9) / 16

    def make():
        return lambda x, w: [tnp.tanh(x @ w), tg.grad(lambda w: tnp.sum(tnp.tanh(x @ w)))(w)]
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")     # (auto: measured)
    jaxpr = program(make(), x, w)[0]
    src = NUMBA.source(jaxpr)
    assert "NumPy calls" not in src and len(re.findall(r"_gemm\d+\(", src)) == 2, src
    check(make(), x, w, rtol=1e-10, atol=1e-12)   # (sums in another order)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")
    assert NUMBA.source(program(make(), x, w)[0]).startswith(
        "# numba backend: a loop-free program over large arrays runs as NumPy calls")


# --- epilogues: the update d +- s * product, written by the kernel (plan.fuse_epilogues) ---

@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
@pytest.mark.parametrize("m, n, k", [(70, 101, 37), (300, 600, 300), (9, 50, 1), (8, 24, 0)])
def test_gemm_into_epilogue_is_the_unfused_operations(dtype, m, n, k):
    """``_gemm_into`` with an epilogue gives the bits of the product (``_gemm``'s),
    scaled and rounded, then added to or subtracted from ``d`` and rounded: blocks
    in every direction (MC, KC, NC), partial tiles, k = 1 and k = 0."""
    for ta, tb in ((False, False), (True, False), (False, True)):
        a, b = operands(m, n, k, ta, tb, dtype, m + n + k)
        d = data((m, n), dtype, 5)
        c = np.full((m, n), np.nan, dtype)
        gemm._gemm(a, ta, b, tb, c)
        s = dtype.type(0.1)
        for mode, want in ((gemm.EPILOGUE_SUB, d - s * c), (gemm.EPILOGUE_ADD, d + s * c)):
            got = np.full((m, n), np.nan, dtype)
            gemm._gemm_into(a, ta, b, tb, got, d, s, mode)
            np.testing.assert_array_equal(got, want, err_msg=f"mode {mode}, ta={ta}, tb={tb}")


def updates(w, v, u, x, g, y, lr):
    """Products read only by an update (fused), and ones that are not (not fused)."""
    p = x @ y                                   # read twice: not fused
    return [w - 0.1 * (x.T @ g),                # sub, a literal, x stored transposed
            v - x.T @ (g * 2),                  # no scale
            (x.T @ tnp.tanh(g)) * lr + v,       # the scale a variable, either operand order
            lr * (x.T @ (g + 1)) - v,           # s * p - d: not an update of d, not fused
            u + 0.5 * p, p]


@needs_avx512
@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
def test_programs_fuse_updates_and_match_the_numpy_backend(dtype, monkeypatch):
    """The numba backend's fused updates against the NumPy backend's separate
    operations (within the rounding of the products: the epilogue rounds as they
    do), with odd shapes; the products read elsewhere, or not by an update of
    their shape, are computed as before."""
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")     # (auto: measured)
    w, v, g = data((70, 101), dtype, 1), data((70, 101), dtype, 2), data((37, 101), dtype, 3)
    x, y, u = data((37, 70), dtype, 4), data((70, 101), dtype, 6), data((37, 101), dtype, 7)
    lr = dtype.type(-0.25)
    rtol = 1e-4 if dtype == F32 else 1e-11
    check(updates, w, v, u, x, g, y, lr, rtol=rtol, atol=rtol)
    src = NUMBA.source(program(updates, w, v, u, x, g, y, lr)[0])
    assert len(re.findall(r"_gemm\d+\(", src)) == 5, src
    fused = _CALL_ARGS.findall(src)
    assert sum(call.endswith(f", np.int64({gemm.EPILOGUE_SUB})") for call in fused) == 2, fused
    assert sum(call.endswith(f", np.int64({gemm.EPILOGUE_ADD})") for call in fused) == 1, fused


@needs_avx512
def test_sgd_step_fuses_weight_updates(monkeypatch):
    """An MLP's SGD step: the weight updates ``W - lr * (x.T @ g)`` are written by
    the kernel, the step matches the NumPy backend, and under ``blas`` nothing is fused."""
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")     # (auto: measured)
    w1, w2, xb = data((48, 64), F64, 5) / 7, data((64, 56), F64, 6) / 8, data((64, 48), F64, 7)

    def step(w1, w2, xb):
        gw1, gw2 = tg.grad(lambda w1, w2: tnp.sum(tnp.tanh(tnp.tanh(xb @ w1) @ w2) ** 2),
                           argnums=(0, 1))(w1, w2)
        return [w1 - 0.1 * gw1, w2 - 0.1 * gw2]
    check(step, w1, w2, xb, rtol=1e-11, atol=1e-13)
    fused = _CALL_ARGS.findall(NUMBA.source(program(step, w1, w2, xb)[0]))
    assert sum(call.endswith(f", np.int64({gemm.EPILOGUE_SUB})") for call in fused) == 2, fused
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")
    assert "_gemm" not in NUMBA.source(program(step, w1, w2, xb)[0])


# --- transposed operands read in place (plan.fold_transposes) ---------------------

def transposed(x, g, a3, b3, a4, b2):
    return [x.T @ g,                                             # x read with a flag
            g.T.T.T @ x,                                         # transposes of transposes
            lax.dot_general(lax.transpose(a3, (1, 0, 2)), b3,   # batch and contraction renumbered
                            (((2,), (1,)), ((0,), (0,)))),
            lax.transpose(a4, (0, 2, 1, 3)) @ b2,               # free dimensions reordered: not folded
            x.T @ (g * 2.0) + 1.0]                               # a transpose read twice


@needs_avx512
@pytest.mark.parametrize("mode", ["own", "blas"])
def test_transposed_operands_are_read_in_place(mode, monkeypatch):
    """A ``dot_general`` operand that is a ``transpose`` of an array is that array read
    with a transpose flag (own kernel) or as a transposed view (BLAS), not copied
    first; results match the NumPy backend, including the cases not folded."""
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", mode)
    x, g = data((64, 96), F64, 1), data((64, 112), F64, 2)
    a3, b3 = data((8, 12, 16), F64, 3), data((12, 16, 5), F64, 4)
    a4, b2 = data((2, 3, 4, 5), F64, 5), data((5, 6), F64, 6)
    check(transposed, x, g, a3, b3, a4, b2, rtol=1e-11, atol=1e-12)
    src = NUMBA.source(program(transposed, x, g, a3, b3, a4, b2)[0])
    body = src.split("def program(")[1]
    assert "= x0[" not in body and "= x1[" not in body, src     # x and g never copied
    if mode == "own":
        assert len(re.findall(r"_gemm\d+\(\w+(?:\[\d+\])?, \(a\d+\[\w+\], np\.bool_\(True\)", src)) == 3, src
    else:
        assert len(re.findall(r"_blasdot\d+\(_up\[\d+\], \(a\d+\[0\]\.T", src)) == 3, src
