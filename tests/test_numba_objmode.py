"""Primitives the numba backend used to run in object mode and now lowers natively
(``numba_backend/special.py``): each is checked against the NumPy backend, bit for
bit (the same C code or NumPy's exact semantics), with the same dtypes, on edge
values (zeros of both signs, infinities, NaN, poles, integer extremes), float32
where the primitive accepts it, inside a loop, and a program using one of them is
loaded from the disk cache by a new process.  Many primitives share one program,
so the file compiles few."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import special  # noqa: E402
from _numba_util import compile_numba, program as _program  # noqa: E402  (shared by the numba tests)

NUMBA = nbb.NumbaBackend()
PRIMS = {p.name: p for p in nbb.all_primitives()}
SPECIAL = sorted(set(special.SCIPY_FUNCTIONS) - {"wofz"})   # real-valued ones
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, 0.5, -2.5, 1e-300, 171.5, 1e308,
         -1e-8, 3.0, 40.0, -40.0, 0.999]


def _pool(dtype, size=64, seed=0):
    """Operand arrays, each the edge values (in its own order) then random values:
    wide, narrow, wider, (0, 1) and positive ones."""
    rng = np.random.default_rng(seed)
    n = size - len(EDGES)
    rest = [rng.standard_normal(n) * 3.0, rng.standard_normal(n) * 0.3, rng.standard_normal(n) * 10,
            rng.uniform(0, 1, n), np.abs(rng.standard_normal(n)) * 5, rng.uniform(0, 12, n)]
    with np.errstate(over="ignore"):   # 1e308 is inf in float32
        return [np.concatenate([np.roll(np.array(EDGES), 5 * k), r]).astype(dtype)
                for k, r in enumerate(rest)]


# Which operands of the pool each function takes (default: the first ones), so that
# most values lie in its domain.
_X, _Y, _Z, _U, _P, _Q = range(6)
_OPERANDS = {"erfcinv": (_U,), "ndtri": (_U,), "betainc": (_P, _Q, _U), "gammainc": (_P, _Q),
             "gammaincc": (_P, _Q), "kl_div": (_P, _Q), "rel_entr": (_P, _Q), "expn": (_Q, _P),
             "spence": (_P,), "exp1": (_P,), "y0": (_P,), "y1": (_P,), "yv": (_X, _P),
             "iv": (_X, _P), "ive": (_X, _P), "jv": (_X, _P), "hyp2f1": (_X, _Y, _Z, _Y)}
_ARITY = {name: special.UFUNCS[PRIMS[name]].nin for name in SPECIAL}


def _same(f, *args, compiled=None):
    """Both backends run ``f``'s program: identical bits and dtypes; the numba program
    has no object-mode block.  ``compiled``: a dict keeping the numba program for
    further calls at the same shapes and dtypes."""
    jaxpr, full = _program(f, *args)
    if compiled is None or "fn" not in compiled:
        assert "objmode" not in NUMBA.source(jaxpr)
        fn = compile_numba(jaxpr, NUMBA)
        if compiled is not None:
            compiled["fn"] = fn
    got = (compiled["fn"] if compiled is not None else fn)(*full)
    with np.errstate(all="ignore"):
        want = get_backend("numpy").compile(jaxpr)(*full)
    assert len(got) == len(want)
    for g, w, eqn in zip(got, want, jaxpr.eqns):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (eqn.prim.name, g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w, err_msg=eqn.prim.name)
        if w.dtype.kind == "f":   # signed zeros (a NaN's sign bit is not meaningful)
            num = ~np.isnan(w)
            assert np.array_equal(np.signbit(g[num]), np.signbit(w[num])), eqn.prim.name
    return got


def _all_special(dtype):
    def f(*pool):
        return [PRIMS[name].bind(*[pool[k] for k in _OPERANDS.get(name, range(_ARITY[name]))])
                for name in SPECIAL]
    return f, _pool(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scipy_special_functions_are_scipys_bits(dtype):
    assert {"gamma", "digamma", "erfinv", "betainc", "hyp2f1", "fresnel_s", "sici_ci",
            "jv", "kl_div", "gammasgn"} <= set(SPECIAL)
    paths = nbb.lowering_paths([PRIMS[n] for n in SPECIAL])
    assert set(paths.values()) == {"native"}, paths
    f, ops = _all_special(np.dtype(dtype))
    got = _same(f, *ops)
    assert all(g.dtype == dtype for g in got)
    # not vacuous: the edges give infinities and NaNs, the random values finite numbers
    assert any(np.isnan(g).any() for g in got) and any(np.isinf(g).any() for g in got)
    assert all(np.isfinite(g).sum() > 20 for g in got), [np.isfinite(g).sum() for g in got]


def test_integer_orders_and_mixed_operands():
    # expn with an integer order runs SciPy's integer loop ('ld->d'); integer and
    # boolean operands of the others are promoted as the ufunc promotes them
    n = np.array([0, 1, 2, 5, -1, 30, np.iinfo(np.int64).max, np.iinfo(np.int64).min])
    x = np.array([0.5, 0.0, 1.0, 3.0, 2.0, 0.01, 1.0, 1.0])
    k = np.arange(-3, 5)
    got = _same(lambda n, x, k: [PRIMS["expn"].bind(n, x), PRIMS["gamma"].bind(k),
                                 PRIMS["jv"].bind(k, x), PRIMS["beta"].bind(k, x > 0.4)], n, x, k)
    assert [g.dtype for g in got] == [np.float64] * 4


def test_inside_a_loop_and_on_scalars():
    names = ["gamma", "erfinv", "i0e", "fresnel_c", "sici_si", "log_ndtr"]

    def f(x, y):
        def body(i, c):
            return [PRIMS[n].bind(lax.sin(c[k]) * 0.5 + y * 0.1) + c[k] for k, n in enumerate(names)]
        return lax.fori_loop(0, 4, body, [x] * len(names)) + [PRIMS["hyp1f1"].bind(y, 2.0, y)]
    got = _same(f, np.linspace(-0.9, 0.9, 3), np.float64(0.25))
    assert all(np.isfinite(g).all() for g in got)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_operands_call_scipys_complex_functions(dtype):
    names = sorted(p.name for p in special.COMPLEX_OPS)
    assert {"wofz", "gamma", "digamma", "ndtr", "exp1", "spence"} <= set(names)
    rng = np.random.default_rng(4)
    z = (rng.standard_normal(40) * 3 + 1j * rng.standard_normal(40) * 3).astype(dtype)
    z[:8] = [0, complex(-0.0, 0.0), np.inf, complex(0, np.inf), complex(np.nan, 1), -2.0, 1.0,
             complex(-3.5, 1e-300)]
    got = _same(lambda z: [PRIMS[n].bind(z) for n in names], z)
    assert all(g.dtype == dtype for g in got)
    assert all(np.isfinite(g).sum() > 20 for g in got)


def test_complex_bessel_arguments_still_run_in_object_mode():
    # (a real order and a complex argument: not called natively), still right there
    v, z = np.array([0.5, 2.0]), np.array([0.5 + 1j, -1.5 + 0.25j])
    jaxpr, full = _program(lambda v, z: [PRIMS["jv"].bind(v, z)], v, z)
    assert "objmode" in NUMBA.source(jaxpr)
    import scipy.special as sc
    np.testing.assert_array_equal(NUMBA.compile(jaxpr)(*full)[0], sc.jv(v, z))


def test_program_with_a_special_function_is_loaded_from_the_disk_cache(tmp_path):
    code = (
        "import numpy as np, scipy.special as sc, tangentia as tg, tangentia.scipy.special as ts\n"
        "from tangentia.compiler.numba_backend import NumbaBackend\n"
        "from tangentia.interpreters.partial_eval import convert_constvars_to_invars\n"
        "x = np.linspace(0.1, 3.0, 5)\n"
        "f = lambda x: ts.gamma(x) + ts.fresnel(x)[1] + ts.expn(2, x)\n"
        "c = tg.make_jaxpr(f)(x)\n"
        "fn = NumbaBackend().compile(convert_constvars_to_invars(c.jaxpr))\n"
        "assert np.array_equal(fn(*c.consts, x)[0], sc.gamma(x) + sc.fresnel(x)[1] + sc.expn(2, x))\n"
        "print(sum(fn.dispatcher.stats.cache_hits.values()))\n")
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.strip() == "0"
    assert int(runs[1].stdout.strip()) >= 1, "the second process did not load the cached code"


# ---------------------------------------------------------------------------
# NumPy's integer and floating-point utilities

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64]
FLOATS = [np.float64, np.float32]
SHIFTS = [0, 1, 3, 7, 8, 15, 16, 31, 32, 63, 64, 65, 100, -1, -64]
_UTILS: dict = {}   # the numba program of ``_utilities``, compiled once


def _int_edges(dt):
    ii = np.iinfo(dt)
    signed = [-1, -2, -7, ii.min + 1] if ii.min < 0 else [128, 255]
    return [ii.min, ii.max, 0, 1, 2, 3, 6, ii.max - 1] + signed


def _utilities(*xs):
    n = len(INTS)
    outs = []
    for a, b, s in zip(xs[:n], xs[n:2 * n], xs[2 * n:3 * n]):
        outs += [PRIMS["gcd"].bind(a, b), PRIMS["lcm"].bind(a, b), PRIMS["left_shift"].bind(a, s),
                 PRIMS["right_shift"].bind(a, s), PRIMS["bitwise_count"].bind(a)]
    for x, y in zip(xs[3 * n::2], xs[3 * n + 1::2]):
        outs += [PRIMS["nextafter"].bind(x, y), PRIMS["spacing"].bind(x),
                 PRIMS["frexp_mantissa"].bind(x), PRIMS["frexp_exponent"].bind(x)]
    return outs


def _utility_operands(rng, size=256):
    """Every pair of edge values (integers: extremes, 0, small; shift counts in and out
    of range; floats: zeros, infinities, NaN, extremes, subnormals), then random ones."""
    ints, other, shifts = [], [], []
    for dt in INTS:
        ii, e = np.iinfo(dt), np.array(_int_edges(dt), dtype=dt)
        k = len(e)
        rand = [rng.integers(ii.min, ii.max, size, dtype=dt, endpoint=True) for _ in range(2)]
        ints.append(np.resize(np.concatenate([np.repeat(e, k), rand[0]]), size))
        other.append(np.resize(np.concatenate([np.tile(e, k), rand[1]]), size))
        counts = [c for c in SHIFTS if c >= 0 or ii.min < 0]
        shifts.append(np.resize(np.array(counts, dtype=dt), size))
    floats = []
    for dt in FLOATS:
        fi = np.finfo(dt)
        e = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, fi.max, -fi.max, fi.tiny,
                      fi.smallest_subnormal, -fi.smallest_subnormal, 3.5, -7.25], dtype=dt)
        k = len(e)
        floats += [np.resize(np.concatenate([np.repeat(e, k), rng.standard_normal(size).astype(dt)]), size),
                   np.resize(np.concatenate([np.tile(e, k), rng.standard_normal(size).astype(dt)]), size)]
    return ints + other + shifts + floats


def test_integer_and_float_utilities_are_numpys():
    paths = nbb.lowering_paths([PRIMS[n] for n in ("gcd", "lcm", "left_shift", "right_shift",
                                                    "bitwise_count", "nextafter", "spacing",
                                                    "frexp_mantissa", "frexp_exponent")])
    assert set(paths.values()) == {"native"}, paths
    got = _same(_utilities, *_utility_operands(np.random.default_rng(1)), compiled=_UTILS)
    dtypes = [g.dtype for g in got]
    assert dtypes[:5] == [np.int8] * 4 + [np.uint8] and dtypes[-4:] == [np.float32] * 3 + [np.int32]
    # not vacuous: wrapped results, out-of-range shifts, infinities and NaN occur
    i8 = got[:5]
    assert (i8[0] < 0).any() and (i8[1] < 0).any() and (i8[3] == -1).any()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_integer_and_float_utilities_on_random_values(seed):
    # the same program (compiled once), on other values: random integers of every size
    rng = np.random.default_rng(seed)
    ops = _utility_operands(rng)
    ops = [rng.permutation(o) for o in ops]
    _same(_utilities, *ops, compiled=_UTILS)


def test_utilities_on_scalars_and_promoted_operands():
    # scalarized (small) operands; booleans and mixed integer widths promoted as NumPy does
    a = np.array([-128, 127, 6], dtype=np.int8)
    b = np.array([6, -4, 1 << 40])
    got = _same(lambda a, b: [PRIMS["gcd"].bind(a, b), PRIMS["left_shift"].bind(a, b),
                              PRIMS["bitwise_count"].bind(a > 0), PRIMS["spacing"].bind(b),
                              PRIMS["frexp_exponent"].bind(b)], a, b)
    assert [g.dtype for g in got] == [np.int64, np.int64, np.uint8, np.float64, np.int32]


# ---------------------------------------------------------------------------
# Window reductions (pooling) as loops

POOL = dict(window_dimensions=(2, 2, 1), window_strides=(2, 2, 1), window_dilation=(1, 1, 1))
DILATED = dict(window_dimensions=(3, 1, 2), window_strides=(1, 2, 1), window_dilation=(1, 2, 2))
ONE_TAP = dict(window_dimensions=(1, 1, 1), window_strides=(1, 1, 1), window_dilation=(1, 1, 1))


def test_window_reductions_are_numpys():
    paths = nbb.lowering_paths([PRIMS["window_reduce"], PRIMS["window_argmax"]])
    assert set(paths.values()) == {"native"}, paths
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 7, 6))
    x[1, 2, 3], x[0, 0, 0], x[4, 6, 5] = np.nan, -0.0, np.inf
    xi = rng.integers(-100, 100, x.shape).astype(np.int8)     # sums and products wrap
    xb = rng.integers(0, 2, x.shape).astype(bool)
    xi[0, :2, :2] = 7                                          # ties: the first index wins
    red, arg = PRIMS["window_reduce"].bind, PRIMS["window_argmax"].bind

    def f(x, xi, xb):   # (each equation costs numba ~0.1-1 s to compile: a few cases)
        return ([red(x, op=op, **POOL) for op in ("add", "mul", "max", "min")]
                + [red(xi, op="add", **POOL), red(xb, op="max", **POOL), arg(x, op="max", **POOL),
                   arg(xi, op="min", **POOL), red(x, op="max", **DILATED),
                   red(xi, op="mul", **DILATED), arg(x, op="max", **DILATED),
                   red(x, op="add", **ONE_TAP)])
    got = _same(f, x, xi, xb)
    assert got[0].shape == (2, 3, 6) and np.isnan(got[0]).any()
    assert got[-1][0, 0, 0] == 0 and not np.signbit(got[-1][0, 0, 0])   # 0.0 + -0.0


def test_pooling_on_small_operands_and_its_gradient():
    from tangentia import numpy as tnp
    x = np.random.default_rng(3).standard_normal((4, 4))

    def pool(x):   # scalarized operand (16 elements); max pooling and its gradient
        kw = dict(window_dimensions=(2, 2), window_strides=(2, 2), window_dilation=(1, 1))
        return tnp.sum(tnp.sin(PRIMS["window_reduce"].bind(x, op="max", **kw)))
    got = _same(lambda x: [pool(x), tg.grad(pool)(x)], x)
    assert np.count_nonzero(got[1]) == 4


def test_object_mode_fallback_warns_once_naming_the_primitive():
    from tangentia.compiler.numba_backend import native
    native._WARNED.discard("reduce_precision")   # (a primitive still without a kernel)

    def rp(x):
        return lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7)
    f = lambda x: rp(x) * 3.0   # noqa: E731
    x = np.array([2.5, 3.1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jaxpr, full = _program(f, x)
        y = NUMBA.compile(jaxpr)(*full)[0]
        jaxpr, full = _program(lambda x: rp(x) + 1.0, x)
        NUMBA.compile(jaxpr)(*full)
    msgs = [str(w.message) for w in caught if issubclass(w.category, native.ObjectModeWarning)]
    assert len(msgs) == 1 and "reduce_precision" in msgs[0], msgs   # once per primitive and process
    np.testing.assert_allclose(y, np.asarray(rp(x)) * 3.0, rtol=1e-15)
    # host callbacks call Python by design: no warning names them
    native._WARNED.discard("debug_print")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NUMBA.compile(_program(lambda x: tg.debug.print("{}", x) or x, x)[0])
    assert not [w for w in caught if issubclass(w.category, native.ObjectModeWarning)]
