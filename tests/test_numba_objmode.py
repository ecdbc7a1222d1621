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

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import special  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402

NUMBA = nbb.NumbaBackend()
PRIMS = {p.name: p for p in nbb.all_primitives()}
SPECIAL = sorted(special.OPS)
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
_ARITY = {name: (special.UFUNCS[name].nin if name in special.UFUNCS else 1) for name in SPECIAL}


def _program(f, *args):
    closed = tg.make_jaxpr(f)(*args)
    return convert_constvars_to_invars(closed.jaxpr), list(closed.consts) + list(args)


def _same(f, *args):
    """Both backends run ``f``'s program: identical bits and dtypes; the numba program
    has no object-mode block."""
    jaxpr, full = _program(f, *args)
    assert "objmode" not in NUMBA.source(jaxpr)
    got = NUMBA.compile(jaxpr)(*full)
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


def test_complex_operands_still_run_in_object_mode():
    # SciPy's complex loops are not called natively: they stay correct in object mode
    z = np.array([0.5 + 1j, -1.5 + 0.25j])
    jaxpr, full = _program(lambda z: [PRIMS["gamma"].bind(z), PRIMS["ndtr"].bind(z)], z)
    assert "objmode" in NUMBA.source(jaxpr)
    got = NUMBA.compile(jaxpr)(*full)
    import scipy.special as sc
    np.testing.assert_array_equal(got[0], sc.gamma(z))
    np.testing.assert_array_equal(got[1], sc.ndtr(z))


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
