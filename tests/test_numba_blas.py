"""The numba backend's BLAS lowering of ``dot_general`` against the NumPy
backend: operand layouts (in place, transposed views, copies), batch
dimensions, several contracting dimensions, casts, float32, complex, and the
integer loops.  Programs stay below ``numba_backend.LARGE`` elements per value
so that the numba backend compiles them (not NumPy calls)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tangentia.numpy as tnp
from tangentia import lax
from tangentia.compiler.numba_backend.codegen import BLAS_MIN_FLOPS
from tangentia.compiler.numba_backend.rules import BATCHED_BLAS_MIN

from test_numba_backend import NUMBA, check, numpy_backend, program

F64, F32, C128, I64 = (np.dtype(t) for t in (np.float64, np.float32, np.complex128, np.int64))


def data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape) * 2
    if dtype.kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def check_close(f, *args, rtol):
    """``check`` for complex results too: equal up to ``rtol`` (complex
    ``tanh`` and summation orders round differently)."""
    jaxpr, full = program(f, *args)
    got, want = NUMBA.compile(jaxpr)(*full), numpy_backend().compile(jaxpr)(*full)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


def dots(x, y):
    """Products of ``x`` (24, 32) and ``y`` (32, 16) in every operand layout."""
    xt, yt = x.T * 1, y.T * 1     # arrays stored transposed (materialized)
    return [x @ y,                                             # both in place
            lax.dot_general(xt, y, (((0,), (0,)), ((), ()))),   # x.T @ y: a transposed view
            lax.dot_general(x, yt, (((1,), (1,)), ((), ()))),   # x @ y.T
            lax.dot_general(xt, yt, (((0,), (1,)), ((), ()))),  # both transposed
            tnp.tanh(x) @ y]                                   # a lazy operand is written once


@pytest.mark.parametrize("dtype", [F64, F32, C128], ids=str)
def test_operand_layouts(dtype):
    x, y = data((24, 32), dtype, 0), data((32, 16), dtype, 1)
    rtol = 1e-4 if dtype == F32 else 1e-12
    check_close(dots, x, y, rtol=rtol)
    src = NUMBA.source(program(dots, x, y)[0])
    calls = re.findall(r"_blasdot\d+\(_up\[\d+\], \((.*)\)\)", src)
    assert len(calls) == 5, src
    # the transposed operands are views of the arrays that hold them (no copy loops)
    assert sum(c.count(".T") for c in calls) == 4, calls


def test_batched_contractions():
    # products of at least BATCHED_BLAS_MIN multiply-adds (24 * 32 * 24) per batch element
    a, b = data((3, 24, 32), F64, 2), data((3, 32, 24), F64, 3)  # (batch, m, k), (batch, k, n)
    at = data((3, 32, 24), F64, 4)                               # (batch, k, m)
    c = data((24, 3, 32), F64, 5)                                # batch dimension not first
    d, e = data((2, 2, 24, 32), F64, 6), data((2, 2, 32, 24), F64, 7)  # two batch dimensions

    def f(a, b, at, c, d, e):
        return [a @ b,
                lax.dot_general(at, b, (((1,), (1,)), ((0,), (0,)))),
                lax.dot_general(c, b, (((2,), (1,)), ((1,), (0,)))),
                d @ e,
                lax.dot_general(b, a, (((1,), (2,)), ((0,), (0,))))]   # output (batch, n, m)
    check(f, a, b, at, c, d, e, rtol=1e-12)
    src = NUMBA.source(program(f, a, b, at, c, d, e)[0])
    assert len(re.findall(r"_blasdot\d+\(", src)) == 5, src
    # batched products write into their result (no per-element temporary)
    assert re.search(r"_blasdot\d+\(_up\[\d+\], \([^()]*\[i\d+\][^()]*, [^()]*\[i\d+\][^()]*, a\d+\[i\d+\]\)\)", src), src


def test_small_batched_products_are_loops():
    """Many small products (per-example ``x @ w`` with batched weights): loops,
    not one BLAS call per batch element."""
    x, w = data((256, 32), F64, 22), data((256, 32, 8), F64, 23)
    assert 32 * 8 < BATCHED_BLAS_MIN <= 24 * 32 * 24 and 256 * 32 * 8 >= BLAS_MIN_FLOPS

    def f(x, w):
        return [lax.dot_general(x, w, (((1,), (1,)), ((0,), (0,))))]
    check(f, x, w, rtol=1e-12)
    assert "_blasdot" not in NUMBA.source(program(f, x, w)[0])


def test_several_contracting_dimensions_and_casts():
    x = data((6, 4, 20), F64, 8)            # contract (1, 2) with y's (0, 1)
    xt = data((4, 20, 6), F64, 9)           # contracted dimensions first: a transposed view
    y = data((4, 20, 7), F64, 10)
    y32 = data((4, 20, 7), F32, 11)         # float32 with float64: cast, then BLAS

    def f(x, xt, y, y32):
        dn = (((1, 2), (0, 1)), ((), ()))
        return [lax.dot_general(x, y, dn),
                lax.dot_general(xt, y, (((0, 1), (0, 1)), ((), ()))),
                lax.dot_general(x, y32, dn)]
    check(f, x, xt, y, y32, rtol=1e-12)


def test_small_and_integer_contractions_are_loops():
    """Below ``BLAS_MIN_FLOPS`` and for integers: unrolled or looped, same numbers."""
    x, y = data((3, 4), F64, 12), data((4, 5), F64, 13)
    i, j = (data((20, 30), F64, 14) * 10).astype(I64), (data((30, 10), F64, 15) * 10).astype(I64)
    assert 20 * 30 * 10 >= BLAS_MIN_FLOPS
    check(lambda x, y, i, j: [x @ y, i @ j, lax.dot_general(i, j.T * 1, (((1,), (1,)), ((), ())))],
          x, y, i, j)
    src = NUMBA.source(program(lambda i, j: [i @ j], i, j)[0])
    assert "_blasdot" not in src, src


def test_contraction_inside_a_loop():
    w = data((16, 16), F64, 16) / 4

    def f(w, h):
        def body(h, _):
            h = tnp.tanh(h @ w)
            return h, lax.dot_general(h, h, (((0,), (0,)), ((), ())))  # h.T @ h
        return lax.scan(body, h, None, length=3)
    check(f, w, data((32, 16), F64, 17), rtol=1e-12)


DTYPES = [F64, F32, C128]


@st.composite
def contractions(draw):
    """Random ``dot_general``: dimension roles, sizes, operand axis orders, dtype."""
    nb, nm, nk, nn = (draw(st.integers(lo, hi)) for lo, hi in ((0, 2), (0, 2), (1, 2), (0, 2)))
    size = st.integers(1, 5)  # at most 5**6 elements: below LARGE, compiled by numba
    bs, ms, ks, ns = ([draw(size) for _ in range(c)] for c in (nb, nm, nk, nn))
    xdims = [("b", t) for t in range(nb)] + [("m", t) for t in range(nm)] + [("k", t) for t in range(nk)]
    ydims = [("b", t) for t in range(nb)] + [("k", t) for t in range(nk)] + [("n", t) for t in range(nn)]
    xdims, ydims = draw(st.permutations(xdims)), draw(st.permutations(ydims))
    sizes = {"b": bs, "m": ms, "k": ks, "n": ns}
    xshape = tuple(sizes[r][t] for r, t in xdims)
    yshape = tuple(sizes[r][t] for r, t in ydims)
    lc = tuple(xdims.index(("k", t)) for t in range(nk))
    rc = tuple(ydims.index(("k", t)) for t in range(nk))
    lb = tuple(xdims.index(("b", t)) for t in range(nb))
    rb = tuple(ydims.index(("b", t)) for t in range(nb))
    return xshape, yshape, ((lc, rc), (lb, rb)), draw(st.sampled_from(DTYPES))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(contractions(), min_size=3, max_size=3), st.integers(0, 2**16))
def test_random_dimension_numbers_match_numpy(cases, seed):
    """Three random contractions per program (one compile)."""
    args = [data(shape, dtype, seed + i) for i, (xs, ys, _, dtype) in enumerate(cases)
            for shape in (xs, ys)]
    dns = [dn for _, _, dn, _ in cases]

    def f(*args):
        return [lax.dot_general(args[2 * i], args[2 * i + 1], dn) for i, dn in enumerate(dns)]
    check_close(f, *args, rtol=1e-4 if F32 in [c[3] for c in cases] else 1e-12)


def test_numpy_calls_programs_update_the_products_buffer(monkeypatch):
    """A loop-free program over large arrays runs as NumPy calls; a product is
    a new array, so the SGD update ``W - lr * (x.T @ g)`` and ``x @ W + b``
    write into its buffer (``out=``) instead of allocating."""
    # (with its own GEMM, the numba backend compiles this product-bound program whole)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")
    W, x, g, b = data((300, 200), F64, 18), data((200, 300), F64, 19), data((200, 200), F64, 20), data((200,), F64, 21)

    def step(W, x, g, b):
        return [W - 0.1 * (x.T @ g), tnp.tanh(x @ W + b)]
    jaxpr, full = program(step, W, x, g, b)
    src = NUMBA.source(jaxpr)
    assert "NumPy calls" in src, src
    products = re.findall(r"(v\d+) = dot_general_\d+\(", src)
    assert len(products) == 2, src
    for v in products:  # the scaling and the bias addition write into the product
        assert re.search(rf"= (mul|add)_\d+\([^)]*\bout={v}\)", src), src
    got = NUMBA.compile(jaxpr)(*full)
    np.testing.assert_allclose(got[0], W - 0.1 * (x.T @ g), rtol=1e-13)
    np.testing.assert_allclose(got[1], np.tanh(x @ W + b), rtol=1e-13)
