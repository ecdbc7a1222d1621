"""The numba backend of ``jit``, tested differentially against the NumPy backend.

Every program is compiled by both backends and run on the same inputs: the
values must agree (rtol 1e-12 for float64, 1e-5 for float32; integers and
booleans exactly) and the dtypes must be equal.  Shapes are drawn from a few
fixed ones -- scalars, small arrays (scalarized into locals) and larger ones
(fused loops) -- so each distinct program compiles once per process while
hypothesis varies the values (NaN, infinities, signed zeros, integer extremes).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
# (not imported by ``import tangentia``; OBJMODE lists its primitive, which joins the
# registry only when it is imported: the path test failed when run alone)
import tangentia.experimental.custom_dce  # noqa: E402,F401
from _numba_util import compile_numba, program  # noqa: E402  (shared by the numba tests)

NUMBA = nbb.NumbaBackend()
SETTINGS = settings(max_examples=10, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PRIMS = {p.name: p for p in nbb.all_primitives()}
F64, F32, I64, B = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64), np.dtype(bool)
DTYPES = [F64, F32, I64, B]
# scalarized, fused loops over rows (18 > SMALL; each row of 3 unrolled); 0-d: elsewhere.
# Rows of 3, not more: numba's compile grows with the unrolled code, the paths are the same
# (cold caches, CPU: test_unary_elementwise 21.5 -> 18.6 s, test_binary_elementwise 85 ->
# 60 s, than with rows of 5).
SHAPES = [(3,), (6, 3)]


def numpy_backend():
    return get_backend("numpy")


def assert_same(got, want, rtol=None, atol=None, what=""):
    assert len(got) == len(want), what
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        where = f"{what} output {k}"
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, NumPy backend gives {w.dtype}"
        assert g.shape == w.shape, f"{where}: shape {g.shape}, NumPy backend gives {w.shape}"
        if w.dtype.kind == "f":
            tol = rtol if rtol is not None else (1e-5 if w.dtype == F32 else 1e-12)
            a = atol if atol is not None else (1e-6 if w.dtype == F32 else 1e-14)
            np.testing.assert_allclose(g, w, rtol=tol, atol=a, equal_nan=True, err_msg=where)
            # infinities and NaNs in the same places, with the same signs
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=where)
            np.testing.assert_array_equal(np.isposinf(g), np.isposinf(w), err_msg=where)
            np.testing.assert_array_equal(np.isneginf(g), np.isneginf(w), err_msg=where)
        else:
            np.testing.assert_array_equal(g, w, err_msg=where)


def check(f, *args, rtol=None, atol=None):
    """Run ``f``'s program with both backends; return the numba results."""
    jaxpr, full = program(f, *args)
    got = compile_numba(jaxpr, NUMBA, refuse="numba backend: cannot")(*full)
    with np.errstate(all="ignore"):
        want = numpy_backend().compile(jaxpr)(*full)
    assert_same(got, want, rtol, atol, what=getattr(f, "__name__", "program"))
    return got


def values(dtype, shape):
    """Arrays with the interesting values of ``dtype``."""
    if dtype == B:
        elems = st.booleans()
    elif dtype.kind == "i":
        elems = st.one_of(st.integers(-5, 5), st.sampled_from(
            [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 2**40, -2**40]))
    else:
        width = 32 if dtype == F32 else 64
        elems = st.one_of(st.floats(-4, 4, width=width), st.floats(width=width),
                          st.sampled_from([0.0, -0.0, 0.5, 1.5, 2.5, -2.5]))
    return hnp.arrays(dtype, shape, elements=elems)


def _valid(ufunc, *dtypes):
    """NumPy accepts the dtypes, and the result is not float16 (which numba lacks:
    such programs run with the NumPy backend, see the float16 test below)."""
    try:
        with np.errstate(all="ignore"):
            out = ufunc(*[np.ones(1, d) for d in dtypes])
    except TypeError:
        return False
    return np.asarray(out).dtype != np.float16


UNARY = ["neg", "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan",
         "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sqrt", "cbrt", "abs", "sign",
         "floor", "ceil", "round", "isnan", "isinf", "isfinite", "signbit", "not",
         "bitwise_not", "erf", "erfc", "lgamma"]
BINARY = ["add", "sub", "mul", "div", "pow", "max", "min", "atan2", "rem", "floor_divide",
          "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "bitwise_and", "bitwise_or",
          "bitwise_xor", "copysign"]


def _unary_names(dtype):
    return [n for n in UNARY if _valid(PRIMS[n].impl, dtype)]


# ---------------------------------------------------------------------------
# Elementwise operations


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_unary_elementwise(dtype, data):
    shape = data.draw(st.sampled_from(SHAPES))
    x = data.draw(values(dtype, shape))
    names = _unary_names(dtype)

    def unary_ops(x):
        return [PRIMS[n].bind(x) for n in names]
    check(unary_ops, x)


def test_integer_pow_sign_and_rint_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.7, -1e300, np.nan, -np.inf, np.inf, -0.0])
    p = PRIMS["integer_pow"]
    check(lambda x: [PRIMS["round"].bind(x), p.bind(x, y=2), p.bind(x, y=3), p.bind(x, y=-2),
                     p.bind(x, y=0), PRIMS["sign"].bind(x), tnp.signbit(PRIMS["sign"].bind(x))], x)
    check(lambda x: [p.bind(x, y=3), p.bind(x, y=2)], np.arange(-4, 40, dtype=np.int64) * 10**6)


BINARY_DTYPES = [(F64, F64), (F32, F32), (I64, I64), (B, B), (F32, I64), (I64, F64), (B, F32)]
# scalarized; rows (of 3) with a rank-lower operand; rows with both operands broadcast
BINARY_SHAPES = [((3,), ()), ((6, 3), (3,)), ((6, 1), (1, 3))]


@pytest.mark.parametrize("dtypes", BINARY_DTYPES, ids=lambda d: f"{d[0]}-{d[1]}")
@SETTINGS
@given(data=st.data())
def test_binary_elementwise(dtypes, data):
    # Every example covers all BINARY_SHAPES in one program: one numba compile per dtype
    # pair (the programs of later examples are the same), where a shape drawn per example
    # compiled up to three (8-10 s per pair with numba's disk cache cold).
    dx, dy = dtypes
    args = []
    for sx, sy in BINARY_SHAPES:
        x = data.draw(values(dx, sx))
        y = data.draw(values(dy, sy))
        # NumPy refuses negative integer powers
        y_pow = np.abs(y) % 5 if dx.kind == "i" and dy.kind == "i" else y
        args += [x, y, y_pow]
    names = [n for n in BINARY if _valid(PRIMS[n].impl, dx, dy)]

    def binary_ops(*a):
        out = []
        for k in range(0, len(a), 3):
            x, y, y_pow = a[k:k + 3]
            out += [PRIMS[n].bind(x, y_pow if n == "pow" else y) for n in names]
        return out
    check(binary_ops, *args)


@pytest.mark.parametrize("dtype", [F64, F32, I64, B], ids=str)
def test_weak_python_scalars_keep_the_array_dtype(dtype):
    x = np.arange(-1, 2).astype(dtype)
    names = [n for n in BINARY if _valid(PRIMS[n].impl, dtype, dtype)]

    def with_scalars(x):
        out = []
        for n in names:
            for s in ((2, 1.5) if dtype.kind != "b" else (True,)):
                if n in ("pow",) and dtype.kind == "i" and isinstance(s, int):
                    continue
                try:
                    out.append(PRIMS[n].bind(x, s))
                    out.append(PRIMS[n].bind(s, x))
                except TypeError:
                    pass
        return out
    check(with_scalars, x)


def test_integer_wraparound_and_division_signs():
    big = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 3, -7, 7, -7, 0])
    d = np.array([1, -1, 0, 2, -2, -2, 5])
    check(lambda a, b: [a + 1, a * a, -a, tnp.abs(a), a - 1, a // b, a % b, tnp.sign(a)], big, d)
    f = np.array([-7.5, 7.5, 5.0, -5.0, 0.0, -0.0, np.inf, -np.inf, np.nan])
    g = np.array([2.0, -2.0, -3.0, 0.0, 0.0, -1.0, 2.0, np.inf, 1.0])
    check(lambda a, b: [a % b, a // b, a / b, tnp.maximum(a, b), tnp.minimum(a, b)], f, g)


def test_nan_comparisons_and_extrema_propagate_like_numpy():
    a = np.array([np.nan, 1.0, np.nan, -np.inf, 0.0, -0.0])
    b = np.array([1.0, np.nan, np.nan, np.inf, -0.0, 0.0])
    check(lambda a, b: [tnp.maximum(a, b), tnp.minimum(a, b), a < b, a == b, a != b, a >= b,
                        tnp.max(a), tnp.min(b), tnp.argmax(a), tnp.argmin(b),
                        tnp.signbit(tnp.maximum(a, b)), tnp.signbit(tnp.minimum(b, a)),
                        tnp.signbit(tnp.max(a[4:])), tnp.signbit(tnp.min(b[4:]))], a, b)


@pytest.mark.parametrize("src", DTYPES, ids=str)
def test_select_and_convert_element_type(src):
    x = (np.array([[-2.5, -1.0, 0.0, 0.5, 3.7]] * 4) * 1e3).astype(src)
    small = x[0, :3]

    def converts(x):
        out = [tnp.where(x > 0, x, -x) if src != B else tnp.where(x, 1.5, 2)]
        for dst in DTYPES:
            out.append(x.astype(dst))
        out.append(tnp.where(x > 1, 1, x))
        return out
    check(converts, x)
    check(converts, small)


def test_float32_stays_float32():
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    out = check(lambda x: [x * 2.5 + 1, tnp.sin(x) / 3, tnp.exp(x) - x ** 2, tnp.sum(x * 0.1),
                           x @ x, tg.lax.fori_loop(0, 3, lambda i, c: c * 1.1 + 0.5, x)], x)
    assert all(o.dtype == F32 for o in out)


# ---------------------------------------------------------------------------
# Reductions, data movement, indexing


# scalarized; rows (of 3, as SHAPES); 3-d over two axes and over the middle one (18 > SMALL)
RED_CASES = [((3,), (0,)), ((6, 3), (1,)), ((2, 3, 3), (0, 2)), ((2, 3, 3), (1,))]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_reductions(dtype, data):
    # Every example covers all RED_CASES in one program: one numba compile per dtype (the
    # programs of later examples are the same), where a case drawn per example compiled up
    # to four.  (One case's tolerance for all: the largest.)
    xs = [data.draw(values(dtype, shape) if dtype.kind != "f" else hnp.arrays(
        dtype, shape, elements=st.floats(-4, 4, width=8 * dtype.itemsize)))
        for shape, _ in RED_CASES]
    names = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]
    if dtype == B:
        names = ["reduce_sum", "reduce_max", "reduce_min"]
    if dtype.kind in "bi":   # bitwise (as JAX's lax: floats are refused)
        names += ["reduce_and", "reduce_or"]

    def reductions(*xs):
        out = []
        for x, (_, axes) in zip(xs, RED_CASES):
            out += [PRIMS[n].bind(x, axes=axes) for n in names]
            out += [PRIMS["argmax"].bind(x, axis=axes[0]),
                    PRIMS["argmin"].bind(x, axis=axes[-1])]
        return out
    atol = None
    if dtype == F64:
        atol = max(1e-12 * max(1.0, float(np.max(np.abs(x)))) * x.size for x in xs)
    check(reductions, *xs, atol=atol, rtol=1e-4 if dtype == F32 else None)


def test_reductions_of_fused_expressions_and_nan():
    x = np.random.default_rng(0).normal(size=(30, 7))
    x[3, 2] = np.nan
    check(lambda x: [tnp.sum(tnp.exp(x) * 2 + x, axis=0), tnp.max(tnp.abs(x), axis=1),
                     tnp.argmax(x, axis=0), tnp.mean(x * x), tnp.prod(x[:, :2] + 1.0, axis=0)], x)


@pytest.mark.parametrize("shape", [(2, 3), (6, 5)], ids=str)
def test_data_movement(shape):
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) - 3.5
    i = np.int64(1)

    def moves(x, i):
        return [x.reshape(-1), x.T, tnp.broadcast_to(x[:, :1], shape),
                tnp.concatenate([x, x.astype(np.int64)], axis=1),
                tnp.concatenate([x[:1], x], axis=0), tnp.stack([x, 2 * x]),
                x[1], x[:, ::-1], x[None, 1:3], x[..., 0], x[-1, -1], x[i], x[-i, i],
                tnp.expand_dims(x, 0) + x[:, None, :]]
    check(moves, x, i)


@pytest.mark.parametrize("shape", [(3,), (7, 4)], ids=str)
def test_functional_updates(shape):
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    y = np.float64(2.5)

    def updates(x, y, i):
        return [x.at[1].set(y), x.at[-1].add(y), x.at[1:].mul(y), x.at[i].min(-1.0),
                x.at[0].max(100.0), x.at[i].add(x[0]), x.astype(np.int64).at[0].add(1.7)]
    check(updates, x, y, np.int64(-2))


def test_traced_index_wraps_negatives_and_clamps_as_jax():
    # a traced index out of bounds is clamped into the axis, as JAX's gather
    # (tests/test_traced_index_clamp.py)
    jaxpr, _ = program(lambda x, i: x[i], np.arange(3.0), np.int64(0))
    fn = NUMBA.compile(jaxpr)
    assert fn(np.arange(3.0), np.int64(-3))[0] == 0.0
    assert fn(np.arange(3.0), np.int64(2))[0] == 2.0
    assert fn(np.arange(3.0), np.int64(3))[0] == 2.0
    assert fn(np.arange(3.0), np.int64(-7))[0] == 0.0


# ---------------------------------------------------------------------------
# Contractions


@pytest.mark.parametrize("case", [
    ((2, 3), (3, 2), F64), ((3,), (3,), F64), ((2, 3), (3,), F32), ((5, 6), (6, 4), I64),
    ((40, 30), (30, 20), F64), ((40, 30), (30, 20), F32), ((3, 4, 5), (3, 5, 6), F64),
    ((8, 50), (50,), F64), ((6, 7), (7, 9), B)], ids=str)
def test_dot_general(case):
    sx, sy, dtype = case
    rng = np.random.default_rng(1)
    x = (rng.normal(size=sx) * 3).astype(dtype)
    y = (rng.normal(size=sy) * 3).astype(dtype)
    check(lambda x, y: [x @ y, tnp.tensordot(x, x, axes=(0, 0)) if len(sx) == 2 else x * 1,
                        x.astype(np.float64) @ y if dtype == F32 else x @ y], x, y,
          rtol=1e-4 if dtype == F32 else 1e-10)


# ---------------------------------------------------------------------------
# Control flow


def test_loops_small_and_large_carries():
    xs = np.linspace(0.0, 1.0, 40)

    from _programs import loops
    check(loops, np.array([1.0, 2.0]), xs)


def test_cond_and_switch_clamp_the_index():
    from _programs import branches
    for i in (-3, 0, 1, 2, 7):
        check(branches, np.int64(i), np.array([0.3, -1.2]))
        check(branches, np.int64(i), -np.linspace(0.0, 1.0, 30))


def test_nested_loops_and_cond_inside_scan():
    from _programs import nested
    check(nested, np.linspace(0.0, 1.0, 11))


def test_custom_rules_inside_loops_and_transformations_of_jitted_programs():
    from _programs import custom_rules_in_scan
    f, softplus = custom_rules_in_scan()
    w, xs = np.float64(0.7), np.linspace(-1.0, 1.0, 9)
    check(tg.grad(f), w, xs)
    check(lambda w, xs: tg.jvp(lambda w: lax.fori_loop(0, 3, lambda i, c: softplus(c * w), w),
                               (w,), (1.0,)), w, xs)
    check(tg.vmap(f, in_axes=(0, None)), np.array([0.1, 0.5, 2.0]), xs)
    check(tg.grad(lambda w, xs: tg.checkpoint(f)(w, xs)), w, xs)
    g = tg.jit(tg.grad(f))
    np.testing.assert_allclose(g(w, xs), check(tg.grad(f), w, xs)[0], rtol=1e-12)


def test_pendulum_odeint_gradient_matches_numpy_backend():
    from tangentia.experimental.ode import odeint
    ts = np.linspace(0.0, 10.0, 101)

    def loss(y0, b, c):
        def pend(y, t, b, c):
            return tnp.stack([y[1], -b * y[1] - c * tnp.sin(y[0])])
        return tnp.sum(odeint(pend, y0, ts, b, c)[-1] ** 2)
    grad = tg.grad(loss, argnums=(0, 1, 2))
    args = (np.array([np.pi - 0.1, 0.0]), np.float64(0.25), np.float64(5.0))
    jaxpr, full = program(grad, *args)
    t0 = time.perf_counter()
    fn = NUMBA.compile(jaxpr)
    compile_s = time.perf_counter() - t0
    got = fn(*full)
    ref = numpy_backend().compile(jaxpr)
    want = ref(*full)
    assert_same(got, want, rtol=1e-9, atol=1e-10, what="pendulum gradient")

    def per_call(f, n):
        t0 = time.perf_counter()
        for _ in range(n):
            f(*full)
        return (time.perf_counter() - t0) / n
    print(f"\npendulum grad: numba compile (or cache load) {compile_s:.2f} s, "
          f"run {per_call(fn, 20) * 1e3:.3f} ms; NumPy backend run {per_call(ref, 1) * 1e3:.1f} ms")


# ---------------------------------------------------------------------------
# Fallbacks, paths, cache, threads


# The primitives that run their NumPy implementation in object mode (slow: the
# GIL, boxing), each for a reason.  Every other primitive has generated code or a
# kernel: one that lost its rule, or a new one without, fails below (any
# primitive with an ``impl`` *can* run in object mode, so that alone says nothing).
OBJMODE = {
    "debug_callback": "calls the user's Python function",
    "debug_print": "prints from Python",
    "pure_callback": "calls the user's Python function",
    "fft": "numba has no FFT",
    "conv_general_dilated": "no kernel yet",
    "expm": "no kernel yet (SciPy's)", "expm_frechet": "no kernel yet (SciPy's)",
    "sph_harm_y": "no kernel yet (SciPy's)",
    "bitcast_convert_type": "no kernel yet", "reduce_precision": "no kernel yet",
    "custom_dce_call": "no inlining yet (the program DCE leaves carries concrete constants)",
    # typed PRNG keys (a structured dtype, kind V): a program holding a key value runs on the
    # NumPy backend as a whole, as one holding bfloat16 does, so this path never runs
    "random_wrap": "makes a typed key (dtype kind V: the program runs on the NumPy backend)",
    "random_unwrap": "reads a typed key (dtype kind V: the program runs on the NumPy backend)",
    # collectives: vmap's batching rules remove them before a backend sees a program
    # (an axis name no vmap binds raises while tracing), so this path never runs
    **{n: "a collective, batched away by vmap" for n in (
        "all_gather", "all_to_all", "axis_index", "pmax", "pmin", "ppermute", "psum",
        "psum_scatter")},
}


def test_every_primitive_has_a_path():
    paths = nbb.lowering_paths()
    assert len(paths) >= 100
    allowed = {"native", "native+kernel", "native+objmode", "kernel", "objmode"}
    missing = {n: p for n, p in paths.items() if p not in allowed}
    assert not missing, f"primitives without a lowering path: {missing}"
    objmode = {n for n, p in paths.items() if p == "objmode"}
    assert objmode == set(OBJMODE), (
        f"in object mode but not listed: {sorted(objmode - set(OBJMODE))}; listed but no "
        f"longer in object mode (remove them): {sorted(set(OBJMODE) - objmode)}")
    for name in ["add", "sin", "select", "reduce_sum", "dot_general", "while", "scan", "cond",
                 "jit", "custom_vjp_call", "custom_jvp_call", "checkpoint",
                 "custom_linear_solve"]:
        assert paths[name] == "native", name
    assert paths["digamma"] == "native"   # SciPy's C function (numba_backend/special.py)
    assert paths["fft"] == "objmode"  # numba has no FFT: NumPy's, in object mode


def test_objmode_equation_inside_a_loop_is_still_right():
    assert nbb.lowering_paths([PRIMS["reduce_precision"]])["reduce_precision"] == "objmode"

    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: c + lax.reduce_precision(
            c + x, exponent_bits=8, mantissa_bits=7), x)
    out = check(f, np.array([1.5, 2.0, 3.5]))
    assert "objmode" in NUMBA.source(program(f, np.array([1.5, 2.0, 3.5]))[0])
    assert np.all(np.isfinite(out[0]))


def test_uncompilable_program_warns_once_and_runs_with_numpy():
    x = np.array([1.0, 2.0], dtype=np.float16)
    jaxpr, full = program(lambda x: [tnp.sin(x) * 2], x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = NUMBA.compile(jaxpr)
        out = fn(*full)
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and "numba" in msgs[0] and "float16" in msgs[0], msgs
    np.testing.assert_array_equal(out[0], np.sin(x) * 2)


def _allocations(src):
    """Where the program's body allocates an array (``_empty``, or ``alloc.array_of``'s
    ``_mk``: a fresh array of scalarized elements)."""
    body = src.split("def program(")[1]
    return [m.start() for m in re.finditer(r"empty\(|= _mk\d+\(", body)], body


def test_source_fuses_and_scalarizes():
    big = np.linspace(0, 1, 100)
    src = NUMBA.source(program(lambda x: tnp.sum(tnp.tanh(x * 2 + 1) ** 2 - x), big)[0])
    assert len(_allocations(src)[0]) == 1, src      # the chain and its sum are one loop
    src = NUMBA.source(program(lambda x: lax.fori_loop(0, 9, lambda i, c: c * 0.5 + c[::-1], x),
                               np.ones(2))[0])
    made, body = _allocations(src)
    assert len(made) == 1, src                     # the 2-element carry stays scalar: only
    assert made[0] > body.index("for "), src       # the output is allocated
    src = NUMBA.source(program(lambda x: tnp.exp(x) * 2 + x, big)[0])
    assert len(_allocations(src)[0]) == 1, src      # one output, no temporaries


from _programs import loop_body  # noqa: E402  (shared with test_numba_vmap_rows)


def test_many_scalarized_carries_are_tuples():
    # Past CARRY_SCALARS scalarized carry elements, each carry is one tuple variable
    # (numba's SSA passes cost per variable assigned more than once).
    def f(x):
        def body(c):
            i, a, b, c_, d, e = c
            return i + 1, b * 0.5, c_ + a, d - b, e * a, tnp.sin(a)
        return lax.while_loop(lambda c: c[0] < 5, body, (0, x, x + 1, x * 2, x - 1, x * x))[1:]
    x = np.linspace(-1, 1, 16).reshape(4, 4)
    check(f, x)
    loop = loop_body(NUMBA.source(program(f, x)[0]), "while True:")
    assert len(set(re.findall(r"\b(ct\d+) = \(", loop))) == 5, loop


def test_scan_gradient_fuses_outer_products():
    # In the backward loop the outer product of two scalarized values is written by
    # unrolled code straight into the sum with the weight-gradient carry: one array
    # per step, no operand temporaries.
    W = np.linspace(-1, 1, 64).reshape(8, 8) / 4
    xs = np.linspace(0, 1, 80).reshape(10, 8)
    c0 = np.linspace(-0.5, 0.5, 8)

    from _programs import scan_tanh_loss
    loss = scan_tanh_loss(xs)
    f = tg.grad(loss, argnums=(0, 1))
    got = check(f, W, c0)
    eps = 1e-6
    fd = (loss(W, c0 + eps * np.eye(8)[3]) - loss(W, c0 - eps * np.eye(8)[3])) / (2 * eps)
    np.testing.assert_allclose(got[1][3], fd, rtol=1e-7)
    src = NUMBA.source(program(f, W, c0)[0])
    backward = loop_body(src, "in range(9, -1, -1):")
    assert backward.count("empty(") == 1, backward          # the new weight-gradient carry
    assert "for " not in backward, backward                   # unrolled (64 elements)


def test_long_elementwise_chains_are_split():
    # A lazy chain longer than codegen.MAX_FUSED (32) is materialized (its expression is
    # built recursively): 100 fused operations compile and agree with NumPy.  Unsplit, a
    # chain of 80 already fails (numba's parse of the source: "too many nested
    # parentheses"; 300 gave a RecursionError), so 100 still catches a broken split.
    def chain(x):
        for k in range(100):
            x = tnp.sin(x) * 1.001 + 0.01 * k if k % 2 else x * 0.999 - 0.002
        return x
    check(chain, np.linspace(-1, 1, 40))


from _programs import rk_loop as _rk_loop  # noqa: E402  (shared with the other numba tests)


def test_batched_loop_bodies_become_functions_by_code_size(monkeypatch):
    # A batched body scalarizes 8x the elements of the same unbatched body: past
    # OUTLINE_MIN_COST it becomes a separate njit function (numba's compile time grows
    # much faster than linearly with function size); the unbatched body stays inline.
    monkeypatch.setattr(nbb.codegen, "OUTLINE_MIN_COST", 400)
    th = np.array([1.0, 0.1])
    ths = np.stack([np.linspace(0.5, 1.5, 8), np.full(8, 0.1)], 1)
    one = NUMBA.source(program(_rk_loop, th)[0])
    assert "def _f" not in one, one
    many = NUMBA.source(program(tg.vmap(_rk_loop), ths)[0])
    assert many.count("def _f") == 1, many          # the loop body, called from the loop
    got = check(tg.vmap(_rk_loop), ths)[0]
    want = [check(_rk_loop, t)[0] for t in ths[[0, 7]]]
    np.testing.assert_allclose(got[[0, 7]], want, rtol=1e-12)
    assert abs(want[0] - want[1]) > 1e-3            # the lanes differ


def test_batched_loop_is_computed_row_by_row():
    # vmap over 32 lanes: the (32, 2) values of the loop body are not scalarized (64
    # elements) but computed in ONE loop over the lanes, each row of 2 elements in
    # scalars (not one loop and one temporary array per operation: numba compiled the
    # batched odeint gradient for minutes).  Only the carries are arrays.
    ths = np.stack([np.linspace(0.5, 1.5, 32), np.full(32, 0.1)], 1)
    src = NUMBA.source(program(tg.vmap(_rk_loop), ths)[0])
    loop = loop_body(src, "while True:")
    # one loop over the rows; the counter stays a scalar (only the state is batched, as in
    # JAX), so the predicate needs no reduction over the lanes
    assert loop.count("for ") == 1, loop
    assert loop.count("empty(") == 1, loop        # the new batched carry
    assert "objmode" not in src and "_fb" not in src, src
    got = check(tg.vmap(_rk_loop), ths)[0]
    assert abs(got[0] - got[31]) > 1e-3             # the lanes differ


def test_row_wise_indexing_updates_concatenation_and_reductions():
    # Row by row: scatter, static getitem (slices, negative, ellipsis), concatenate,
    # stack, transpose and reductions of rows; an equation that is not row-wise (a
    # kernel) is computed before the loop.
    def f(v, w):
        u = v.at[1].add(w[0]) * w[1]
        c = tnp.concatenate([u[:2], v[::-1]])
        m = tnp.stack([c[:2], c[2:4]])
        return (tnp.sum(m.T * c[:2], axis=1) + tnp.max(c) - u[-1],
                tnp.cumsum(v)[..., 1:] + c.reshape(5, 1)[1:3, 0])
    vs = np.linspace(-1, 1, 24 * 3).reshape(24, 3)
    ws = np.linspace(2, 3, 48).reshape(24, 2)
    src = NUMBA.source(program(tg.vmap(f), vs, ws)[0])
    assert src.count("for ") == 1 and src.count("empty(") == 2, src   # one loop, two outputs
    check(tg.vmap(f), vs, ws)


def test_small_loop_carries_share_one_tuple():
    # The scalarized carries of a loop (at most CARRY_SCALARS elements) are one tuple
    # variable per 16 elements: numba's SSA reconstruction costs (variables assigned
    # more than once) x (function size).
    def f(x, n):
        def body(c):
            i, a, b, d = c
            return i + 1, a * 0.5 + b[0], b * 1.5 - a, d | (a > 3.0)
        return lax.while_loop(lambda c: c[0] < n, body, (0, x, tnp.stack([x, x + 1.0]), False))
    check(f, 2.5, 7)
    loop = loop_body(NUMBA.source(program(f, 2.5, 7)[0]), "while True:")
    assert len(set(re.findall(r"\b(ct\d+) = \(", loop))) == 1, loop
    def g(x):   # 1 + 12 + 12 elements: two tuples of at most 16 (TUPLE_MAX)
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0, c[2] - c[1]),
                              (0, x, x + 1.0))
    check(g, np.ones((3, 4)))
    loop = loop_body(NUMBA.source(program(g, np.ones((3, 4)))[0]), "while True:")
    assert len(set(re.findall(r"\b(ct\d+) = \(", loop))) == 2, loop


def test_concurrent_first_calls_compile_once():
    jaxpr, full = program(lambda x: [tnp.sin(x) * 3.25 + 0.125], np.ones(5))
    fns, errors = [], []

    def worker():
        try:
            fn = NUMBA.compile(jaxpr)
            fns.append((fn, fn(*full)[0]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len({id(f) for f, _ in fns}) == 1
    for _, out in fns:
        np.testing.assert_array_equal(out, np.sin(np.ones(5)) * 3.25 + 0.125)


def test_disk_cache_is_used_by_a_new_process(tmp_path):
    code = (
        "import sys, numpy as np, tangentia as tg, tangentia.numpy as tnp\n"
        "from tangentia.compiler.numba_backend import NumbaBackend\n"
        "from tangentia.interpreters.partial_eval import convert_constvars_to_invars\n"
        "j = convert_constvars_to_invars(tg.make_jaxpr(lambda x: tnp.cos(x) * 1.75 - x)(np.ones(3)).jaxpr)\n"
        "fn = NumbaBackend().compile(j)\n"
        "assert np.allclose(fn(np.ones(3))[0], np.cos(1.0) * 1.75 - 1.0)\n"
        "print(sum(fn.dispatcher.stats.cache_hits.values()))\n")
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "0"
    assert any(n.endswith(".py") for n in os.listdir(tmp_path / "numba"))
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert int(second.stdout.strip()) >= 1, "the second process did not load the cached code"


def test_loop_free_programs_over_large_arrays_run_as_numpy_calls():
    # NumPy's SIMD ufuncs beat numba's scalar libm loops on large arrays, and a
    # loop-free program over them has no per-call overhead worth compiling away
    # (arctan has no vectorizable lowering; tests/test_numba_vecmath*.py: those that do).
    from tangentia.compiler.numba_backend import LARGE, vector_bound

    big = np.linspace(-3.0, 3.0, LARGE)
    small = big[:64]
    f = lambda x: tnp.sum(1.0 / (1.0 + tnp.arctan(-x)))  # noqa: E731
    big_jaxpr = tg.make_jaxpr(tg.grad(f))(big).jaxpr
    assert vector_bound(big_jaxpr)
    assert not vector_bound(tg.make_jaxpr(tg.grad(f))(small).jaxpr)
    looped = tg.make_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x))(big).jaxpr
    assert not vector_bound(looped)
    text = tg.jit(tg.grad(f), backend="numba").lower(big).as_text()
    assert text.startswith("# numba backend: a loop-free program over large arrays")
    got = tg.jit(tg.grad(f), backend="numba")(big)
    want = tg.jit(tg.grad(f), backend="numpy")(big)
    np.testing.assert_array_equal(got, want)
