"""Contractions and reductions emitted as loops inside the numba backend's IR blocks
(``irblock._loop``, decided by ``plan.dot_plan``'s ``loop``: a scalarized output and
more than ``plan.UNROLL_MAX_TERMS`` terms).

An 8x8 matrix-vector product was unrolled into 64 multiply-adds and 64 loads of the
matrix; as a loop it is one accumulator per output element in a loop over the
contraction, reading an array in memory in place (C-contiguous or strided) and
values computed in the block from a stack buffer.  Each program is compiled with
blocks, without them (``TANGENTIA_NUMBA_IRBLOCK=0``: the unrolled statements) and
by the NumPy backend: the loops fold the same terms in the same order, so the
results are bit for bit the statements' (signed zeros and NaNs included), and
within rounding of NumPy's (BLAS sums in another order).  hypothesis varies the
values; the shapes are fixed, so each program compiles once per process.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.numba_backend import irblock, plan  # noqa: E402

from test_numba_irblock import _compiled, _numpy, assert_close  # noqa: E402

SETTINGS = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
F64, F32, I32 = (np.dtype(t) for t in (np.float64, np.float32, np.int32))


@pytest.fixture
def seen(monkeypatch):
    """The loop nodes (``(name, outputs, steps)``) of the blocks made while the test
    runs (generated, whether or not numba's disk cache then has their code)."""
    out = {"loops": []}
    make = irblock._make_intrinsic

    def recording_make(digest, nodes, *a, **k):
        out["loops"] += [p[:3] for op, _, _, p in nodes if op == "loop"]
        return make(digest, nodes, *a, **k)
    monkeypatch.setattr(irblock, "_make_intrinsic", recording_make)
    monkeypatch.setattr(irblock, "_INTRINSICS", {})     # (made again: recorded)
    return out


def differential(key, f, names, *args, rtol=None, atol=None):
    """``f`` with blocks (loops) against the unrolled statements (the same numbers:
    the same terms in the same order) and the NumPy backend (within ``rtol``, or
    ``atol`` too: sums of small terms cancel; the same signed zeros: a sum of terms
    that are all -0.0 is +0.0, as in XLA and NumPy, where the unrolled products,
    starting from their first term, give -0.0)."""
    run, source, jaxpr, consts = _compiled(key, f, args, True)
    assert "= _blk" in source
    old, old_source, _, _ = _compiled(key, f, args, False)
    with np.errstate(all="ignore"):
        got, ref, want = run(*args), old(*args), _numpy(jaxpr, consts, args)
    assert len(got) == len(names)
    for name, g, r, w in zip(names, got, ref, want):
        g, r, w = np.asarray(g), np.asarray(r), np.asarray(w)
        what = f"{key}: {name} (loops against unrolled statements)"
        assert g.dtype == r.dtype and g.shape == r.shape, what
        if g.dtype.kind == "f":
            np.testing.assert_array_equal(np.isnan(g), np.isnan(r), err_msg=what)
            np.testing.assert_array_equal(g[~np.isnan(g)], r[~np.isnan(r)], err_msg=what)
            # (the signs of max/min's ties between signed zeros: the elementwise rule's)
            zero = (g == 0) & (w == 0) & ("max" not in name and "min" not in name)
            np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]),
                                          err_msg=f"{key}: {name} (signed zeros, NumPy backend)")
        else:
            np.testing.assert_array_equal(g, r, err_msg=what)
        what = f"{key}: {name} (loops against the NumPy backend)"
        if atol is None:
            assert_close(g, w, what, rtol)
        elif g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5 if g.dtype == F32 else 1e-12, atol=atol,
                                       equal_nan=True, err_msg=what)
            np.testing.assert_array_equal(np.isinf(g), np.isinf(w), err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)


def _contractions(W, M, c, R):
    """Products and reductions with more than ``UNROLL_MAX_TERMS`` terms and a
    scalarized output: a matrix in memory against a vector computed in the block
    (both orders), a reversed (strided) view, two contracted axes, reductions over
    each axis and all of them, and a product whose operands are both in the block."""
    h = c * 2 - 1
    return [W @ h, h @ W, W[::-1] @ h, tnp.tensordot(M, W[:4, :4], axes=2),
            tnp.sum(W, axis=0), tnp.sum(W, axis=1), tnp.max(W, axis=0), tnp.min(W, axis=1),
            tnp.sum(W), tnp.prod(R, axis=0), tnp.max(W[::-1], axis=1),
            tnp.outer(h[:4], h[4:]) @ tnp.outer(h[4:], h[:4])]


NAMES = ["matvec", "vecmat", "reversed matvec", "two axes", "colsum", "rowsum", "colmax",
         "rowmin", "sum", "prod", "reversed rowmax", "block operands"]


def _values(dtype):
    """Finite values of at most 10 (sums in another order stay within rounding) and
    the special values (NaN, infinities and signed zeros give the same results in any
    order)."""
    if dtype.kind == "f":
        return st.floats(-10.0, 10.0, width=8 * dtype.itemsize) | \
            st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf])
    return st.integers(-30, 30)


@pytest.mark.parametrize("dtype", [F64, F32, I32], ids=str)
@SETTINGS
@given(data=st.data())
def test_contractions_and_reductions_outside_loops(dtype, data, seen):
    elems = _values(dtype)
    W = data.draw(hnp.arrays(dtype, (8, 8), elements=elems))
    M = data.draw(hnp.arrays(dtype, (3, 4, 4), elements=elems))
    c = data.draw(hnp.arrays(dtype, (8,), elements=elems))
    R = data.draw(hnp.arrays(dtype, (9, 4), elements=st.sampled_from([1, -1, 2]).map(
        lambda v: v * 1.0 if dtype.kind == "f" else v)))
    differential(f"contractions {dtype}", _contractions, NAMES, W, M, c, R,
                 atol=1e-2 if dtype == F32 else 1e-10)


def test_the_loop_form_is_used(seen):
    """The products above are loops: 8x8 by 8 (64 terms), two contracted axes of 16
    (3 outputs: 48 terms), 4x4 by 4x4 in the block, reductions of 64 and 36 elements."""
    x = [np.ones((8, 8)), np.ones((3, 4, 4)), np.ones(8), np.ones((9, 4))]
    _compiled("contractions used", _contractions, x, True)
    loops = seen["loops"]
    assert ("dot", 8, 8) in loops and ("dot", 3, 16) in loops and ("dot", 16, 4) in loops
    assert ("add", 8, 8) in loops and ("add", 1, 64) in loops and ("mul", 4, 9) in loops
    assert ("max", 8, 8) in loops and ("min", 8, 8) in loops
    # small products stay unrolled
    assert plan.UNROLL_MAX_TERMS == 32
    _compiled("small products", lambda W, c: [W[:4, :4] @ c[:4] + tnp.sum(W[:2, :4])],
              x[::2], True)
    assert len(loops) == len(seen["loops"])


def _layers(Ws, xs):
    def loss(W0, c0):
        def body(c, x):
            h = tnp.tanh(W0 @ c + x)
            for W in Ws:
                h = tnp.tanh(W @ h + 0.1 * c)
            return h, h[0]
        cT, ys = lax.scan(body, c0, xs)
        return tnp.sum(cT ** 2) + 0.1 * tnp.sum(ys)
    return loss


def test_dense_layers_in_a_scan_and_their_gradient(seen):
    """``jit(grad)`` of a scan whose body has dense 8x8 layers (bench_cold.py's
    ``scan`` family): forward products, transposed products in the reverse loop, and
    the accumulated matrix gradient; against the statements, the NumPy backend and
    finite differences of the loss."""
    rng = np.random.default_rng(0)
    Ws = [rng.standard_normal((8, 8)) / 3.0 for _ in range(2)]
    xs = rng.standard_normal((6, 8))
    loss = _layers(Ws, xs)
    g = tg.grad(loss, argnums=(0, 1))
    W0, c0 = rng.standard_normal((8, 8)) / 3.0, np.linspace(-1.0, 1.0, 8)
    differential("scan layers", lambda W0, c0: list(g(W0, c0)), ["dW0", "dc0"], W0, c0,
                 rtol=1e-10)
    assert sum(1 for name, n, k in seen["loops"] if name == "dot" and (n, k) == (8, 8)) >= 4
    run = _compiled("scan layers", None, None, True)[0]
    dW, dc = run(W0, c0)
    eps, e = 1e-6, np.zeros(8)
    e[3] = eps
    fd = (float(loss(W0, c0 + e)) - float(loss(W0, c0 - e))) / (2 * eps)
    assert abs(dc[3] - fd) < 1e-7 * max(1.0, abs(fd))


def test_loops_in_blocks_split_into_functions(monkeypatch, seen):
    """A block split into out-of-line pieces: arrays read in place and a loop's
    values cross pieces (the loop and its values stay in one piece)."""
    monkeypatch.setattr(irblock, "SPLIT_NODES", 5)
    monkeypatch.setattr(irblock, "FUNCTION_NODES", 5)

    def f(W, V, c):
        h = tnp.sin(c) * 2.0
        a = W @ h + 1.0
        b = tnp.tanh(V @ a) - h
        return [a, b, tnp.sum(W, axis=0) * b, tnp.max(V, axis=1) + a]
    rng = np.random.default_rng(1)
    W, V = rng.standard_normal((8, 8)), rng.standard_normal((8, 8)).astype(np.float32)
    differential("split loops", f, ["a", "b", "colsum", "rowmax"], W, V, np.linspace(-1, 1, 8),
                 rtol=1e-6)
    assert len(seen["loops"]) >= 4


def _strided_block(n_out, steps, specs, in_dts, shape):
    """A block of one loop node reading an array argument in place and ``in_dts``
    scalar arguments; an njit function ``run(scalars, array)`` returning its values."""
    import numba
    f8 = np.dtype(np.float64)
    n_in = len(in_dts)
    nodes = [("arr", f8, (), 0)] + [("in", f8, (), 1 + p) for p in range(n_in)]
    args = (0,) + tuple(range(1, 1 + n_in))
    nodes.append(("loop", f8, args, (specs[0], n_out, steps, specs[1])))
    loop = len(nodes) - 1
    nodes += [("pick", f8, (loop,), o) for o in range(n_out)]
    in_map = [(0, None)] + list(range(n_in))
    fn = irblock._make_intrinsic(f"test{n_out}_{steps}_{len(in_dts)}", nodes, in_dts, in_map,
                                 list(range(loop + 1, loop + 1 + n_out)), [(f8, shape)])

    @numba.njit
    def run(scalars, array):
        return fn(scalars, array)
    return run


@functools.cache
def _strided_blocks():
    """The two blocks of the test below, made once: their code does not depend on the
    values hypothesis draws (made in each example, each of its 6 examples compiled them
    again for each layout: 36 compiles, 2.4 s of CPU cold, where 6 do)."""
    starts = tuple((0, o) for o in range(8))        # (h @ M: M's column o, rows in the loop)
    dot = _strided_block(8, 6, ("dot", (("mem", 0, "<f8", (6, 8), starts, (0,)),
                                        ("vals", 1, 6, (0,) * 8, 1))), [F64] * 6, (6, 8))
    total = _strided_block(1, 48, ("add", (("mem", 0, "<f8", (6, 8), ((0, 0),), (0, 1)),)),
                           [], (6, 8))
    return dot, total


@SETTINGS
@given(W=hnp.arrays(F64, (6, 8), elements=st.floats(-10, 10)),
       h=hnp.arrays(F64, (6,), elements=st.floats(-10, 10)))
def test_strided_arrays_are_read_through_their_strides(W, h):
    """Arrays that are not C-contiguous (a transposed matrix: layout F; a reversed
    view: layout A, negative strides) read in place by a product and by a
    reduction over two axes (one loop over both: indices by division)."""
    dot, total = _strided_blocks()
    for M in (W, np.asfortranarray(W), W[::-1, ::-1], W.T.copy().T):
        got = np.array(dot(tuple(h), M))
        want = np.array([sum(h[c] * M[c, o] for c in range(6)) for o in range(8)])
        np.testing.assert_array_equal(got, want)      # (the same order: the same bits)
        s = 0.0
        for v in M.ravel():
            s += v
        assert total((), M)[0] == s


def _scan_grad(W, c0, xs):
    """``grad`` of a 5-step scan of two dense layers on f64[6] (``rules._scan``'s
    stacks: the forward loop writes its residual rows into a stack, the reverse loop
    reads them back)."""
    def loss(W, c0):
        def body(c, x):
            h = tnp.tanh(W @ c + x)
            h = tnp.tanh(W.T @ h + 0.5 * c)
            return h, h[0]
        cT, ys = lax.scan(body, c0, xs)
        return tnp.sum(cT ** 2) + 0.1 * tnp.sum(ys)
    return tg.grad(loss, argnums=(0, 1))(W, c0)


_SCAN_ARGS = (np.random.default_rng(1).standard_normal((6, 6)) / 2, np.linspace(-1, 1, 6),
              np.random.default_rng(2).standard_normal((5, 6)))


def test_scan_rows_are_stored_and_loaded_by_blocks():
    """A scan's residual rows go into a stack (``ys<N> = _empty((k, 5, 6))``) that the
    forward loop's block writes in place (no ``_st`` row call, no residual among the
    block's outputs) and the reverse loop's block reads in place; without blocks the
    same stack is written and read by the row calls (``rules._row_store``/``_row_load``).
    Both give the same bits, and the NumPy backend's numbers within rounding."""
    import re
    differential("scan_stacks", _scan_grad, ["dW", "dc0"], *_SCAN_ARGS, rtol=1e-12)
    _, source, _, _ = _compiled("scan_stacks", _scan_grad, _SCAN_ARGS, True)
    _, old_source, _, _ = _compiled("scan_stacks", _scan_grad, _SCAN_ARGS, False)
    stack = re.search(r"(ys\d+) = (?:np\.empty|_empty)\(\(\d+, 5, 6,\), np\.float64\)", source).group(1)
    forward, reverse = source.split("in range(5):", 1)[1].split("in range(4, -1, -1):")
    for loop in (forward, reverse):     # (the stack among a block's arrays, in both loops)
        assert any(re.search(rf"_blk\d+\(.*, {stack}[,)]", ln) for ln in loop.splitlines()), source
    assert not re.search(rf"_(st|ld)\d+\({stack}", source), source
    assert re.search(rf"_st\d+\({stack}\[\d\], i\d+, ", old_source), old_source
    assert re.search(rf"_ld\d+\({stack}\[\d\], i\d+\)", old_source), old_source


def test_scan_stacks_are_passed_to_units(monkeypatch):
    """Loop bodies made compile units take the stack and the step, not the rows: the
    unit calls pass no residual element; the numbers are the inlined blocks'."""
    import re
    import weakref
    import warnings
    from tangentia.compiler.numba_backend import native
    from test_numba_irblock import _program
    monkeypatch.setattr(native, "UNIT_MIN_COST", 20)
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    monkeypatch.delenv("TANGENTIA_NUMBA_UNITS", raising=False)
    monkeypatch.setenv("TANGENTIA_NUMBA_IRBLOCK", "1")
    jaxpr, consts = _program(_scan_grad, *_SCAN_ARGS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fn, _ = native._compile_program(jaxpr, native._settings())
    program = fn.source.split("# ---- unit")[0]
    stack = re.search(r"(ys\d+) = (?:np\.empty|_empty)\(\(\d+, 5, 6,\), np\.float64\)", program).group(1)
    calls = [ln for ln in program.splitlines() if "= _u" in ln]
    assert len(calls) == 2 and all(f"{stack}, i" in ln for ln in calls), program
    assert not re.search(rf"_(st|ld)\d+\({stack}", program), program
    run, _, _, _ = _compiled("scan_stacks", _scan_grad, _SCAN_ARGS, True)
    for g, w in zip(fn(*consts, *_SCAN_ARGS), run(*_SCAN_ARGS)):
        np.testing.assert_array_equal(g, w)


def _wide(W, g, h):
    """Values too large to be scalarized (6x6) computed from scalarized ones: a
    matrix gradient's accumulation ``W + outer(g, h)`` and one used again in the block."""
    o = tnp.outer(tnp.sin(g), h)
    return [W + o, o * 2.0 - W, tnp.sum(o, axis=0)]


def test_wide_values_are_written_by_blocks():
    """A wide value (more than ``SMALL``, at most ``UNROLL`` elements) computed from
    scalarized operands is computed in the block and written into a fresh array the
    block takes (``irblock._wide``, ``"arrst"`` nodes), where the generator wrote one
    statement per element: the same bits, and the NumPy backend's within rounding."""
    import re
    args = (np.arange(36.0).reshape(6, 6) / 7, np.linspace(-1, 1, 6), np.linspace(2, 3, 6))
    differential("wide", _wide, ["W + outer", "outer * 2 - W", "colsum"], *args)
    _, source, _, _ = _compiled("wide", _wide, args, True)
    fresh = re.findall(r"(a\d+) = (?:np\.empty|_empty)\(\(6, 6,\), np\.float64\)", source)
    call = [ln for ln in source.splitlines() if "_blk" in ln and "= _blk" in ln]
    assert len(fresh) == 2 and len(call) == 1 and all(f", {a}" in call[0] for a in fresh), source
    assert not re.search(r"a\d+\[\d, \d\] = ", source), source
