"""The numba backend's vectorizable exp, log, log1p, expm1 and tanh
(``numba_backend.vecmath``) and the one-loop lowering of elementwise programs
over large arrays (``numba_backend.elementwise_loop``).

Each function is checked in ulps against a reference wider than float64
(``np.longdouble`` where it has a 64-bit significand, else mpmath) on dense
grids over the whole range, on hypothesis' points and at the edges (overflow,
the subnormal range, underflow to zero or saturation to +-1, the reduction's
switch points); special values must be NumPy's exactly.  Programs are compiled by both jit
backends and compared; the generated code must be one loop, and vectorized.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.nn as nn  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.numba_backend.vecmath import _vexp, _vexpm1, _vlog, _vlog1p, _vtanh  # noqa: E402
from test_numba_backend import NUMBA, assert_same, numpy_backend  # noqa: E402
from _numba_util import compile_numba, program  # noqa: E402  (shared by the numba tests)

LN2 = math.log(2.0)
X_OVERFLOW = 709.782712893384            # the largest x with a finite exp(x)
X_SUBNORMAL = -708.3964185322641         # exp below here is subnormal
X_ZERO = -745.1332191019412              # exp below here rounds to 0 (NumPy's threshold)


def _looped(fn):
    @numba.njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
    return loop


LOOPS = {"exp": _looped(_vexp), "log": _looped(_vlog), "log1p": _looped(_vlog1p),
         "expm1": _looped(_vexpm1), "tanh": _looped(_vtanh)}


def run(name, x):
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    LOOPS[name](x, out)
    return out


def vexp(x):
    return run("exp", x)


def exact(name, x):
    """``name`` (exp, log, ...) of float64 ``x`` with at least 64 significant bits."""
    if np.finfo(np.longdouble).nmant >= 63:
        with np.errstate(divide="ignore", invalid="ignore"):
            return getattr(np, name)(x.astype(np.longdouble))
    import mpmath
    mpmath.mp.prec = 80
    return np.array([getattr(mpmath, name)(mpmath.mpf(float(v))) for v in x], dtype=object)


def ulp_errors(name, x, fn=None):
    """(|f(x) - exact f(x)| in units of the last place of the correctly rounded
    result, the points) where that is finite and nonzero (elsewhere f must equal
    it); ``f`` is ours, or ``fn`` (NumPy's, for comparison)."""
    with np.errstate(over="ignore"):
        got = run(name, x) if fn is None else fn(x)
    ref = exact(name, x)
    with np.errstate(over="ignore"):
        rounded = ref.astype(np.float64)
    finite = np.isfinite(rounded) & (rounded != 0)
    np.testing.assert_array_equal(got[~finite], rounded[~finite])
    # (the spacing below a power of two where the exact value is below it)
    mag = np.abs(rounded[finite])
    ulp = np.where(np.abs(ref[finite]) < mag, np.spacing(np.nextafter(mag, 0.0)), np.spacing(mag))
    if ref.dtype == object:
        import mpmath
        return np.array([float(abs((mpmath.mpf(float(g)) - r) / u))
                         for g, r, u in zip(got[finite], ref[finite], ulp)]), x[finite]
    return np.abs((got[finite].astype(np.longdouble) - ref[finite]) / ulp).astype(np.float64), x[finite]


def edges():
    """Points around the thresholds and the reduction's switch points (k ln2 +- ln2/2)."""
    centers = [X_OVERFLOW, X_SUBNORMAL, X_ZERO, 0.0, -1074 * LN2, -1022 * LN2]
    centers += [(k + 0.5) * LN2 for k in range(-1076, 1024, 37)]
    pts = []
    for c in centers:
        lo = hi = c
        for _ in range(4):
            lo, hi = np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)
            pts += [lo, hi]
        pts.append(c)
    return np.array(pts + [5e-324, -5e-324, 1e-300, -1e-300, 1e-17, -1e-17])


def test_exp_float64_is_within_one_ulp_over_the_whole_range():
    grid = np.linspace(X_ZERO - 1.0, X_OVERFLOW + 1.0, 200_001)
    rng = np.random.default_rng(0)
    near_zero = rng.uniform(-1.0, 1.0, 50_000) * 10.0 ** rng.uniform(-20, 0, 50_000)
    subnormal = rng.uniform(X_ZERO, X_SUBNORMAL, 20_000)
    x = np.concatenate([grid, near_zero, subnormal, edges()])
    err, x = ulp_errors("exp", x)
    assert err.max() < 1.0, err.max()
    # in the normal range: the last rounding (0.5) and the evaluation's (< 0.2;
    # NumPy's exp reaches 0.67 too); the subnormal range adds a rounding to its
    # coarser grid
    normal = x > X_SUBNORMAL
    assert err[normal].max() < 0.75, err[normal].max()
    # and NumPy's own exp is not closer: both round, so they agree almost everywhere
    with np.errstate(over="ignore"):
        assert np.mean(vexp(x) == np.exp(x)) > 0.9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-750.0, 712.0), min_size=1, max_size=64))
def test_exp_float64_ulp_error_on_hypothesis_points(xs):
    err, _ = ulp_errors("exp", np.array(xs))
    assert err.size == 0 or err.max() < 1.0, (err.max(), xs)


def test_exp_special_values_are_numpys():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e308, -1e308, X_OVERFLOW,
                  np.nextafter(X_OVERFLOW, np.inf), 710.0, X_ZERO, np.nextafter(X_ZERO, 0.0),
                  -746.0, 5e-324, -5e-324])
    with np.errstate(over="ignore"):
        want = np.exp(x)
    got = vexp(x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert vexp(np.zeros(3))[0] == 1.0


def test_exp_float32_is_float64_exp_rounded_once():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-104.0, 89.0, 200_000),
                        np.linspace(-104.0, 89.0, 100_001)]).astype(np.float32)
    edge = np.array([88.72283, 88.72284, -87.33655, -103.27893, -103.97208, -103.9721, 0.0, -0.0,
                     np.inf, -np.inf, np.nan, 1e-45, -1e-45], np.float32)
    x = np.concatenate([x, edge])
    got = vexp(x)
    assert got.dtype == np.float32
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(np.float32)   # (double rounding: rare, 1 ulp)
        numpy32 = np.exp(x)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulps[~np.isnan(ref)].max() <= 1
    np.testing.assert_array_equal(got[-len(edge):][np.isnan(ref[-len(edge):]) | np.isinf(ref[-len(edge):])],
                                  numpy32[-len(edge):][np.isnan(ref[-len(edge):]) | np.isinf(ref[-len(edge):])])
    np.testing.assert_array_equal(np.isinf(got), np.isinf(numpy32))
    np.testing.assert_array_equal(got == 0, numpy32 == 0)


def _vector_width(llvm_ir):
    """The widest ``<N x double>``/``<N x float>`` vector in LLVM IR (1: scalar code)."""
    widths = [int(n) for n in re.findall(r"<(\d+) x (?:double|float)>", llvm_ir)]
    return max(widths, default=1)


def test_log_is_within_one_ulp_with_numpys_special_values():
    rng = np.random.default_rng(4)
    x = np.concatenate([2.0 ** rng.uniform(-1074, 1024, 200_000), rng.uniform(0.5, 2.0, 100_000),
                        1.0 + rng.uniform(-1e-6, 1e-6, 20_000), 2.0 ** -1022 * rng.uniform(0, 1, 5000),
                        np.sqrt([0.5, 2.0]), np.nextafter(np.sqrt([0.5, 2.0]), [[0.0], [np.inf]]).ravel(),
                        [5e-324, 1e-310, 2.0 ** -1022, 1.0, np.nextafter(1.0, 0), 1.7976931348623157e308]])
    err, _ = ulp_errors("log", x)
    assert err.max() < 0.9, err.max()            # (fdlibm's bound: < 1; NumPy's reaches 0.6)
    special = np.array([0.0, -0.0, -1.0, -np.inf, np.inf, np.nan, -5e-324, 1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(run("log", special), np.log(special))
        x32 = np.concatenate([rng.uniform(0.0, 4.0, 10_000), [0.0, -1.0, np.inf, 1e-45]]).astype(np.float32)
        ref = np.log(x32.astype(np.float64)).astype(np.float32)
    got = run("log", x32)
    assert got.dtype == np.float32
    ulps = np.abs(got.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulps[np.isfinite(ref)].max() <= 1
    np.testing.assert_array_equal(got[~np.isfinite(ref)], ref[~np.isfinite(ref)])


def test_log1p_is_within_one_ulp_with_numpys_special_values():
    rng = np.random.default_rng(6)
    tiny = np.exp(rng.uniform(-745.0, 0.0, 100_000))
    x = np.concatenate([np.exp(rng.uniform(-745.0, 709.0, 100_000)), tiny, -tiny,
                        rng.uniform(-1.0, 3.0, 100_000), 1.0 + rng.uniform(-1e-6, 1e-6, 10_000),
                        [2.0 ** -54, -(2.0 ** -54), 2.0 ** -53, -(2.0 ** -53), -1.6742637313159597e-16,
                         np.nextafter(-1.0, 0.0), 1.7976931348623157e308, 5e-324]])
    err, _ = ulp_errors("log1p", x)
    assert err.max() < 0.9, err.max()
    special = np.array([0.0, -0.0, -1.0, -2.0, -np.inf, np.inf, np.nan, -5e-324])
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log1p(special)
    got = run("log1p", special)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[:3]), np.signbit(want[:3]))   # log1p(-0.0) = -0.0
    x32 = rng.uniform(-1.0, 4.0, 10_000).astype(np.float32)
    ref = np.log1p(x32.astype(np.float64)).astype(np.float32)
    ulps = np.abs(run("log1p", x32).view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1


X_M1 = -37.42994775023705               # expm1 below here rounds to -1
X_ONE = 19.061547465398498              # tanh above here rounds to 1


def _around(centers, n=4):
    """The points ``centers`` and their ``n`` neighbours on each side."""
    pts = []
    for c in centers:
        lo = hi = c
        for _ in range(n):
            lo, hi = np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)
            pts += [lo, hi]
        pts.append(c)
    return np.array(pts)


def _f32_ulps(name, x32):
    """Ours in float32 against the float64 function rounded to float32: ulps
    where that is finite (and the same value elsewhere)."""
    got = run(name, x32)
    assert got.dtype == np.float32
    with np.errstate(over="ignore"):
        ref = getattr(np, name)(x32.astype(np.float64)).astype(np.float32)
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(got[~fin], ref[~fin])
    return np.abs(got[fin].view(np.int32).astype(np.int64) - ref[fin].view(np.int32).astype(np.int64))


def test_expm1_is_within_one_ulp_with_numpys_special_values():
    rng = np.random.default_rng(7)
    tiny = rng.uniform(-1.0, 1.0, 100_000) * 10.0 ** rng.uniform(-320, 0, 100_000)
    x = np.concatenate([np.linspace(-45.0, X_OVERFLOW, 200_001), tiny, rng.uniform(-2.0, 2.0, 100_000),
                        _around([(k + 0.5) * LN2 for k in range(-60, 1025, 7)] + [X_M1, X_OVERFLOW, 0.0,
                                2.0 ** -30, -(2.0 ** -30), LN2 / 2, -LN2 / 2, 1.5 * LN2])])
    err, at = ulp_errors("expm1", x)
    # the last rounding (0.5) and the small terms' (measured 0.58; NumPy's expm1: 0.52)
    assert err.max() < 0.7, (err.max(), at[err.argmax()])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 710.0, X_OVERFLOW,
                        np.nextafter(X_OVERFLOW, np.inf), -40.0, -38.0, X_M1, np.nextafter(X_M1, 0.0),
                        5e-324, -5e-324, 1e-300, -(2.0 ** -1022)])
    with np.errstate(over="ignore"):
        want = np.expm1(special)
    got = run("expm1", special)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))      # expm1(-0.0) = -0.0
    x32 = np.concatenate([rng.uniform(-20.0, 89.0, 100_000), tiny[:1000],
                          [88.72284, 88.7229, -17.0, -1e-45, 0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    assert _f32_ulps("expm1", x32).max() <= 1


def test_tanh_is_within_one_ulp_odd_and_saturating():
    rng = np.random.default_rng(8)
    tiny = rng.uniform(-1.0, 1.0, 100_000) * 10.0 ** rng.uniform(-320, 0, 100_000)
    x = np.concatenate([np.linspace(-25.0, 25.0, 200_001), tiny, rng.uniform(-3.0, 3.0, 100_000),
                        _around([X_ONE, -X_ONE, 20.0, 2.0 ** -28, 2.0 ** -27, LN2 / 4, 0.55]
                                + [(k + 0.5) * LN2 / 2 for k in range(0, 60)])])
    err, at = ulp_errors("tanh", x)
    numpy_err, _ = ulp_errors("tanh", x, np.tanh)
    # the last rounding and the double-double quotient's (measured 0.55); NumPy's
    # own tanh is not correctly rounded either (1.16 ulps here)
    assert err.max() < 0.7, (err.max(), at[err.argmax()])
    assert numpy_err.max() > err.max()
    got = run("tanh", x)
    np.testing.assert_array_equal(run("tanh", -x), -got)          # exactly odd
    assert np.all(np.abs(got) <= 1.0)
    # saturation where the true value rounds to +-1 (but for the points within 0.05
    # of the threshold X_ONE, where it is within 0.1 ulp of a tie)
    far = np.abs(np.abs(x) - X_ONE) > 0.05
    np.testing.assert_array_equal(np.abs(got[far]) == 1.0, np.abs(x[far]) > X_ONE)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 710.0, -800.0, 5e-324,
                        -5e-324, 1e-310, -(2.0 ** -1022), 2.0 ** -28, 19.2, -19.2])
    want = np.tanh(special)
    got = run("tanh", special)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[:4]), np.signbit(want[:4]))   # tanh(-0.0) = -0.0
    x32 = np.concatenate([rng.uniform(-10.0, 10.0, 100_000), tiny[:1000],
                          [9.010913, -9.010913, 1e-45, -1e-45, 0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    assert _f32_ulps("tanh", x32).max() <= 1


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["expm1", "tanh"]), st.lists(st.floats(-750.0, 750.0) | st.floats(-1e-6, 1e-6),
                                                 min_size=1, max_size=64))
def test_expm1_and_tanh_ulp_error_on_hypothesis_points(name, xs):
    err, _ = ulp_errors(name, np.array(xs))
    assert err.size == 0 or err.max() < 1.0, (err.max(), xs)


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loops_vectorize(name):
    run(name, np.ones(3)), run(name, np.ones(3, np.float32))
    for sig in LOOPS[name].signatures:
        llvm_ir = LOOPS[name].inspect_llvm(sig)
        assert _vector_width(llvm_ir) >= 2, sig
        assert f"@{name}" not in llvm_ir and f"@llvm.{name}" not in llvm_ir   # no libm call


# ---------------------------------------------------------------------------
# Programs: one loop, vectorized, the NumPy backend's values

N = nbb.LARGE * 2


def _every_vector_op(x, y, s, k):
    """A program using every operation of ``rules.VECTOR_OPS`` (x, y: f64[N]; s: f64[];
    k: i64[N]; the f32 operations through a cast)."""
    e = tnp.exp(-tnp.abs(x))
    z = tnp.where(x > s, e, tnp.sqrt(tnp.abs(y)))
    z = tnp.maximum(z, y) - tnp.minimum(x, e * 2.0) + x ** 2
    z = z / (1.0 + e) + tnp.copysign(e, y) * (x <= y) - (x >= 0.5) * (y < x) * (x != y)
    z = z + tnp.where(tnp.isnan(y), 1.0, 0.0) + (x == s) + k.astype(np.float64) + tnp.log(e) + tnp.log1p(e)
    z = z + tnp.tanh(x) - tnp.expm1(y)
    f32 = tnp.exp(x.astype(np.float32)) * tnp.tanh(y.astype(np.float32))
    return z, f32, tg.grad(lambda x: tnp.sum(nn.sigmoid(x) * e))(x)


def _compile(f, *args):
    jaxpr, full = program(f, *args)
    return jaxpr, full, compile_numba(jaxpr, NUMBA)


def test_elementwise_program_over_large_arrays_is_one_vectorized_loop(tmp_path, monkeypatch):
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))   # compiled here: inspectable
    rng = np.random.default_rng(2)
    x = rng.standard_normal(N) * 30.0
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 800.0, -800.0, 1e-310]
    y = rng.standard_normal(N)
    y[8:12] = [np.nan, -np.inf, 0.0, x[12]]
    k = rng.integers(-5, 5, N)
    s = np.float64(0.25)
    jaxpr, full, fn = _compile(_every_vector_op, x, y, s, k)
    assert nbb.one_loop(jaxpr) is not None
    src = NUMBA.source(jaxpr)
    assert src.count(" for ") == 1 and not re.search(r"(math|np)\.(exp|log|log1p|expm1|tanh)\(", src), src
    assert _vector_width(fn.dispatcher.inspect_llvm(fn.dispatcher.signatures[0])) >= 2
    got = fn(*full)
    with np.errstate(all="ignore"):
        want = numpy_backend().compile(jaxpr)(*full)
    # (exp is not NumPy's bit for bit: both are within an ulp of the true value,
    # and the sums cancel)
    assert_same(got, want)


@pytest.mark.parametrize("rule", [False, True])
def test_sigmoid_gradient_runs_as_one_loop_and_matches_the_numpy_backend(rule):
    x = np.random.default_rng(3).standard_normal(N) * 5.0
    x[:4] = [np.inf, -np.inf, 800.0, -800.0]
    loss = (lambda x: tnp.sum(nn.sigmoid(x))) if rule else \
        (lambda x: tnp.sum(1.0 / (1.0 + tnp.exp(-x))))
    jaxpr, full, fn = _compile(tg.grad(loss), x)
    assert nbb.one_loop(jaxpr) is not None
    with np.errstate(all="ignore"):
        want = numpy_backend().compile(jaxpr)(*full)
    assert_same(fn(*full), want, rtol=1e-15, atol=0.0)
    got = tg.jit(tg.grad(loss), backend="numba")(x)
    np.testing.assert_allclose(got, want[0], rtol=1e-15, atol=0.0)


def test_one_loop_over_several_dimensions_with_repeated_and_passed_through_outputs():
    x = np.random.default_rng(5).standard_normal((256, 256))
    b, s = np.array([[0.5]]), np.int64(3)

    def f(x, b, s):
        y = x * b + tnp.abs(s - 5)      # (a scalar computed in the loop: LLVM hoists it)
        return y, y, x, y > 2.25, (y * 4.0).astype(np.int64)
    jaxpr, full, fn = _compile(f, x, b, s)
    assert nbb.one_loop(jaxpr) is not None
    assert NUMBA.source(jaxpr).count(" for ") == 1
    got = fn(*full)
    assert_same(got, numpy_backend().compile(jaxpr)(*full), rtol=0.0, atol=0.0)
    assert not np.shares_memory(got[2], x)   # (an output is never an argument's buffer)


@pytest.mark.parametrize("case", ["libm", "reduction", "two_shapes", "small", "cube"])
def test_other_programs_keep_their_paths(case):
    x = np.linspace(-3.0, 3.0, N)
    f = {"libm": lambda x: tnp.exp(tnp.arctan(x)),         # atan is not vectorized: NumPy calls
         "reduction": lambda x: tnp.exp(x) * tnp.sum(x),   # a reduction: NumPy calls
         "two_shapes": lambda x: (tnp.exp(x), tnp.exp(x[: N // 2])),
         "cube": lambda x: tnp.exp(x) ** 3,                 # pow: a libm call
         "small": lambda x: tnp.exp(x)}[case]
    if case == "small":
        x = x[:64]
    jaxpr, _ = program(f, x)
    assert nbb.one_loop(jaxpr) is None
    assert nbb.vector_bound(jaxpr) == (case != "small")


def test_per_example_gradients_use_the_vectorized_tanh(tmp_path, monkeypatch):
    """jit(vmap(grad)) of a tanh MLP (issue 9's per-example workload, smaller):
    the general generator's loops call ``_vtanh``, not libm, and vectorize."""
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))   # compiled here: inspectable
    rng = np.random.default_rng(9)
    params = [(rng.standard_normal((8, 16)) / 3.0, 0.1 * rng.standard_normal(16)),
              (rng.standard_normal((16, 1)) / 4.0, 0.1 * rng.standard_normal(1))]
    X, y = rng.standard_normal((32, 8)) * 4.0, rng.standard_normal(32)

    def loss(params, x, y):
        (W1, b1), (W2, b2) = params
        h = tnp.tanh(x @ W1 + b1)
        return ((h @ W2 + b2)[0] - y) ** 2
    per_example = tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))
    jaxpr, full, fn = _compile(lambda W1, b1, W2, b2, X, y: per_example([(W1, b1), (W2, b2)], X, y),
                               *params[0], *params[1], X, y)
    src = NUMBA.source(jaxpr)
    assert "_vtanh(" in src and "math.tanh" not in src and "/" not in src, src
    # the loop over tanh is vectorized (its one division is the program's only one)
    assert re.search(r"fdiv <\d+ x double>", fn.dispatcher.inspect_llvm(fn.dispatcher.signatures[0]))
    # (tanh within an ulp of NumPy's: 1 - tanh^2 near saturation differs by ~1e-15)
    assert_same(fn(*full), numpy_backend().compile(jaxpr)(*full))
