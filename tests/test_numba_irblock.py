"""The numba backend's blocks (``numba_backend.irblock``): runs of scalarized
equations emitted as one intrinsic writing LLVM IR.

Each program is compiled three ways: with blocks, without them
(``TANGENTIA_NUMBA_IRBLOCK=0``: one Python statement per element), and by the
NumPy backend.  Blocks must give bit for bit the results of the statements
(same operations, same order: NaN where NaN, the same signed zeros) and agree
with NumPy within rounding.  Programs are built once per dtype with every
primitive's result an output of its own, so a failure names the primitive;
hypothesis varies the values (NaN, infinities, signed zeros, integer extremes).
"""
from __future__ import annotations

import re
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
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import irblock, native  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402

SETTINGS = settings(max_examples=8, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
F64, F32, I32, I64, B = (np.dtype(t) for t in (np.float64, np.float32, np.int32, np.int64, bool))
SHAPE = (2, 2)


def _program(f, *args):
    closed = tg.make_jaxpr(f)(*args)
    return convert_constvars_to_invars(closed.jaxpr), list(closed.consts)


_COMPILED: dict = {}


def _compiled(key, f, args, blocks, monkeypatch=None):
    """``(run, source)`` of ``f``'s program compiled by the numba backend with or
    without blocks (``key``: one compile per process)."""
    hit = _COMPILED.get((key, blocks))
    if hit is None:
        jaxpr, consts = _program(f, *args)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TANGENTIA_NUMBA_IRBLOCK", "1" if blocks else "0")
            mp.setattr(irblock, "MIN_OPS", 1)
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # (no fallback to NumPy)
                fn, _ = native._compile_program(jaxpr, native._settings())
        hit = _COMPILED[(key, blocks)] = (lambda *a: fn(*consts, *a), fn.source, jaxpr, consts)
    return hit


def _numpy(jaxpr, consts, args):
    return get_backend("numpy").compile(jaxpr)(*consts, *args)


def assert_bitwise(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
        ok = ~np.isnan(got)
        np.testing.assert_array_equal(got[ok], want[ok], err_msg=what)
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]), err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def assert_close(got, want, what, rtol=None):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if got.dtype.kind == "f":
        rtol = rtol or (2e-6 if got.dtype == F32 else 1e-14)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300, equal_nan=True, err_msg=what)
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want), err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def differential(key, f, names, *args, rtol=None):
    """Compile ``f`` with and without blocks; compare both and the NumPy backend
    (``rtol``: for whole programs, where rounding differences of sin, exp, ... grow)."""
    run, source, jaxpr, consts = _compiled(key, f, args, True)
    assert "= _blk" in source, "no block was emitted"
    old, old_source, _, _ = _compiled(key, f, args, False)
    assert "_blk" not in old_source
    with np.errstate(all="ignore"):
        got, ref, want = run(*args), old(*args), _numpy(jaxpr, consts, args)
    assert len(got) == len(names)
    for name, g, r, w in zip(names, got, ref, want):
        assert_bitwise(g, r, f"{key}: {name} (blocks against statements)")
        assert_close(g, w, f"{key}: {name} (blocks against the NumPy backend)", rtol)


def _floats(dtype):
    return hnp.arrays(dtype, SHAPE, elements=st.floats(
        width=8 * dtype.itemsize, allow_nan=True, allow_infinity=True,
        min_value=None, max_value=None) | st.sampled_from([0.0, -0.0, 0.5, -2.0, 1e-30]))


def _float_ops(x, y, c):
    """Every floating primitive with a block rule (``c``: finite, for casts to integers)."""
    s = x * 0.5 + y
    return [
        ("add", x + y), ("sub", x - y), ("mul", x * y), ("div", x / y), ("neg", -x),
        ("max", tnp.maximum(x, y)), ("min", tnp.minimum(x, y)),
        ("eq", x == y), ("ne", x != y), ("lt", x < y), ("le", x <= y), ("gt", x > y),
        ("ge", x >= y), ("select", tnp.where(x < y, x, s)),
        ("sin", tnp.sin(x)), ("cos", tnp.cos(x)), ("exp", tnp.exp(x)), ("log", tnp.log(x)),
        ("tanh", tnp.tanh(x)), ("expm1", tnp.expm1(x)), ("log1p", tnp.log1p(x)),
        ("sqrt", tnp.sqrt(x)), ("abs", tnp.abs(x)),
        ("pow0", lax.integer_pow(x, 0)), ("pow2", x ** 2), ("pow3", lax.integer_pow(x, 3)),
        ("pow-2", lax.integer_pow(x, -2)),
        ("to_bool", x.astype(bool)), ("to_i32", c.astype(np.int32)), ("to_i64", c.astype(np.int64)),
        ("to_other_float", x.astype(np.float32 if x.dtype == F64 else np.float64)),
        ("sum", tnp.sum(x, axis=1)), ("prod", tnp.prod(s, axis=0)),
        ("reduce_max", tnp.max(x, axis=1)), ("reduce_min", tnp.min(x)),
        ("transpose", tnp.sin(x).T), ("reshape", tnp.reshape(x + 1.0, (4,))),
        ("broadcast", tnp.broadcast_to(tnp.sum(x, axis=0), (3, 2)) * 2.0),
        ("concatenate", tnp.concatenate([x * 3.0, y], axis=0)), ("getitem", (x - y)[1, ::-1]),
        ("dot", tnp.dot(x * 1.5, y.T)), ("literal", x * 3 + 1.25),
        # (numba's lowering of the statement's function)
        ("tan", tnp.tan(x)), ("arcsin", tnp.arcsin(x)), ("arccos", tnp.arccos(y)),
        ("arctan", tnp.arctan(x)), ("sinh", tnp.sinh(x)), ("cosh", tnp.cosh(y)),
        ("arcsinh", tnp.arcsinh(x)), ("arccosh", tnp.arccosh(y)), ("arctanh", tnp.arctanh(x)),
        ("arctan2", tnp.arctan2(x, y)), ("power", x ** y), ("copysign", tnp.copysign(x, y)),
        ("floor", tnp.floor(x)), ("ceil", tnp.ceil(y)), ("rint", tnp.rint(x)),
        ("nextafter", tnp.nextafter(x, y)), ("isnan", tnp.isnan(x)), ("isinf", tnp.isinf(x)),
        ("isfinite", tnp.isfinite(y)),
    ]


with np.errstate(all="ignore"):
    FLOAT_NAMES = [n for n, _ in _float_ops(np.ones(SHAPE), np.ones(SHAPE), np.ones(SHAPE))]


@pytest.mark.parametrize("dtype", [F64, F32], ids=str)
@SETTINGS
@given(data=st.data())
def test_float_primitives(dtype, data):
    x, y = data.draw(_floats(dtype)), data.draw(_floats(dtype))
    c = np.clip(np.nan_to_num(x), -1e6, 1e6).astype(dtype)
    differential(f"float {dtype}", lambda x, y, c: [v for _, v in _float_ops(x, y, c)],
                 FLOAT_NAMES, x, y, c)


def _int_ops(x, y):
    return [
        ("add", x + y), ("sub", x - y), ("mul", x * y), ("neg", -x), ("abs", tnp.abs(x)),
        ("max", tnp.maximum(x, y)), ("min", tnp.minimum(x, y)),
        ("eq", x == y), ("ne", x != y), ("lt", x < y), ("le", x <= y), ("gt", x > y),
        ("ge", x >= y), ("select", tnp.where(x > y, x, y - 1)), ("pow2", x ** 2),
        ("div", x / 2), ("to_float", x.astype(np.float64) * 0.5), ("to_f32", x.astype(np.float32)),
        ("to_bool", x.astype(bool)), ("to_other_int", x.astype(np.int64 if x.dtype == I32 else np.int32)),
        ("sum", tnp.sum(x, axis=1)), ("prod", tnp.prod(x, axis=0)), ("reduce_max", tnp.max(x)),
        ("reduce_min", tnp.min(x, axis=1)), ("dot", tnp.dot(x, y.T)),
        ("bitwise_and", x & y), ("bitwise_or", x | (y - 1)), ("bitwise_xor", x ^ y),
        ("invert", ~x),
    ]


INT_NAMES = [n for n, _ in _int_ops(np.ones(SHAPE, int), np.ones(SHAPE, int))]


@pytest.mark.parametrize("dtype", [I32, I64], ids=str)
@SETTINGS
@given(data=st.data())
def test_integer_primitives(dtype, data):
    info = np.iinfo(dtype)
    ints = hnp.arrays(dtype, SHAPE, elements=st.integers(int(info.min), int(info.max))
                      | st.sampled_from([0, 1, -1, int(info.min), int(info.max)]))
    x, y = data.draw(ints), data.draw(ints)
    differential(f"int {dtype}", lambda x, y: [v for _, v in _int_ops(x, y)], INT_NAMES, x, y)


def _bool_ops(p, q, x):
    return [("and", p & q), ("or", p | q), ("not", ~p), ("ne", p != q), ("eq", p == q),
            ("logical_xor", tnp.logical_xor(p, q)), ("logical_and", tnp.logical_and(p, ~q)),
            ("bitwise_xor", p ^ q),
            ("select", tnp.where(p, q, ~q)), ("all", tnp.all(p, axis=1)), ("any", tnp.any(q)),
            ("max", tnp.maximum(p, q)), ("to_float", p.astype(np.float64) + x),
            ("to_int", p.astype(np.int32) * 3), ("sum", tnp.sum(p)), ("where_float", tnp.where(p, x, -x))]


BOOL_NAMES = [n for n, _ in _bool_ops(np.ones(SHAPE, bool), np.ones(SHAPE, bool), np.ones(SHAPE))]


@SETTINGS
@given(p=hnp.arrays(B, SHAPE), q=hnp.arrays(B, SHAPE), x=_floats(F64))
def test_boolean_primitives(p, q, x):
    differential("bool", lambda p, q, x: [v for _, v in _bool_ops(p, q, x)], BOOL_NAMES, p, q, x)


def _chain(x, n=30):
    # (the compile-time benchmark's program: benchmarks/bench_cold.py --sizes)
    for i in range(n):
        x = tnp.sin(x) * 1.01 + 0.1 if i % 3 == 0 else (x * x * 0.5 if i % 3 == 1 else tnp.cos(x) - x)
    return tnp.sum(x)


def test_gradient_chain_is_one_block():
    x = np.linspace(-1.0, 1.0, 8)
    differential("chain", lambda x: [tg.grad(_chain)(x)], ["grad"], x, rtol=1e-10)
    source = _compiled("chain", None, None, True)[1]
    assert source.count("= _blk") == 1
    assert "_ssin" not in source.split("def program")[1]


def test_blocks_split_into_functions(monkeypatch):
    """A block larger than ``SPLIT_NODES`` operations is split into out-of-line
    functions passing values through stack buffers (float32, int32 and booleans
    crossing pieces too)."""
    monkeypatch.setattr(irblock, "SPLIT_NODES", 7)
    monkeypatch.setattr(irblock, "FUNCTION_NODES", 7)

    def f(x, k, p):
        y = tnp.sin(x) * 2.0 + x.astype(np.float64)
        m = k * 3 - 1
        q = p != (y > 0.5)
        for _ in range(3):
            y = tnp.where(q, y * 0.5, tnp.cos(y)) + m.astype(np.float32)
            m = tnp.maximum(m, m * -2)
        return y, m, q, tnp.sum(y.astype(np.float64))
    x = np.linspace(-2.0, 2.0, 6).astype(np.float32)
    k = np.arange(6, dtype=np.int32) - 3
    p = np.array([True, False] * 3)
    differential("pieces", f, ["y", "m", "q", "sum"], x, k, p, rtol=1e-5)
    source = _compiled("pieces", None, None, True)[1]
    assert source.count("= _blk") == 1


def test_blocks_inside_loops():
    def f(c0, xs):
        def body(c, x):
            c = tnp.tanh(c * 0.9 + x) - 0.1 * tnp.exp(-c * c)
            return c, tnp.sum(c)
        c, ys = lax.scan(body, c0, xs)
        i, c = lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, tnp.sin(s[1]) + s[1] * 0.5),
                              (0, c))
        return c, ys, i
    c0 = np.linspace(0.0, 1.0, 4)
    xs = np.cos(np.arange(20.0)).reshape(5, 4)
    differential("loops", f, ["c", "ys", "i"], c0, xs, rtol=1e-10)
    def scanned(c0, xs):
        body = lambda c, x: (tnp.tanh(c * 0.9 + x) - 0.1 * tnp.exp(-c * c), None)  # noqa: E731
        return tnp.sum(lax.scan(body, c0, xs)[0] ** 2)
    differential("loops grad", lambda c0, xs: [tg.grad(scanned)(c0, xs)], ["grad"], c0, xs,
                 rtol=1e-10)


def test_static_scatters_join_blocks():
    # x.at[...].add/set/mul/min/max(y) at static indices (the reverse of a batched y[1]),
    # float and integer, a broadcast update: in the block, where each one ended it
    def f(x, y, k):
        a = tnp.sin(x).at[:, 1].add(y * 2.0).at[0, 1:3].set(y[:2] + 1.0)
        a = a.at[2].mul(y[0]).at[1, :].max(tnp.cos(y[1]) - 0.5).at[:, 0].min(y - 0.25)
        return tnp.exp(a) * 0.5, (k * 3).at[1].add(k[0]).at[:, 2].set(7) - 1
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    y = np.array([0.3, -0.7, 1.1])
    k = np.arange(12, dtype=np.int32).reshape(3, 4)
    differential("scatter", f, ["a", "k"], x, y, k)
    run, source, _, _ = _compiled("scatter", f, (x, y, k), True)
    assert source.count("= _blk") <= 2, source


def test_source_is_deterministic_and_names_the_block_contents():
    def make(k):
        return lambda x: [tnp.sin(x) * k + x * x]
    x = np.ones(4)
    j1, _ = _program(make(2.0), x)
    j2, _ = _program(make(2.0), x)
    j3, _ = _program(make(3.0), x)
    s1, s2, s3 = (native._generate(j)[0] for j in (j1, j2, j3))
    assert s1 == s2
    assert "irblock" in s1
    # the same code but for a constant inside the block: a different source (cache key)
    strip = [s for s in s1.splitlines() if "irblock" not in s]
    assert strip == [s for s in s3.splitlines() if "irblock" not in s]
    assert s1 != s3


def test_switch_and_fallback_for_ops_without_rules(monkeypatch):
    x = np.linspace(0.1, 2.0, 5)
    f = lambda x: [tnp.cbrt(tnp.sin(x) * 2.0 + 1.0) * tnp.cos(x) - x]  # noqa: E731
    j, _ = _program(f, x)
    src = native._generate(j)[0]
    assert src.count("= _blk") == 2 and "np.cbrt(" in src   # cbrt: no rule, its statements
    monkeypatch.setenv("TANGENTIA_NUMBA_IRBLOCK", "0")
    assert "_blk" not in native._generate(j)[0]
    monkeypatch.delenv("TANGENTIA_NUMBA_IRBLOCK")
    differential("cbrt", f, ["y"], x, rtol=1e-12)


def test_blocks_read_arrays_in_memory():
    """Arrays of more than ``SMALL`` elements (matrices in memory) read by a block's
    contractions, reductions and static indexing: passed whole and read element by
    element in the block (a dense layer inside a loop body was 64 statements per
    product), bit for bit the statements' results; float32, integers and booleans too,
    and a matrix indexed out of a stacked array in a loop."""
    def f(W, V, K, P, c, xs):
        out = [W @ c, c @ W, tnp.sum(W, axis=1), W[2] * c, W[1, 3] + c, tnp.max(W, axis=0),
               (V @ c[:4].astype(np.float32)) * 2.0, tnp.sum(V, axis=0) + V[0, :4],
               K @ (K[0] - 2), tnp.min(K, axis=1), tnp.any(P, axis=0), tnp.all(P, axis=1) ^ P[3]]
        def body(h, x):
            h = tnp.tanh(x @ h + W[0]) - 0.5 * (W @ h)
            return h, tnp.sum(x, axis=0) * h
        h, ys = lax.scan(body, c, xs)
        return out + [h, ys]
    rng = np.random.default_rng(0)
    W = rng.standard_normal((5, 5))
    V = rng.standard_normal((6, 4)).astype(np.float32)
    K = rng.integers(-50, 50, (5, 5)).astype(np.int32)
    P = rng.random((5, 5)) < 0.3
    c = np.linspace(-1.0, 1.0, 5)
    xs = rng.standard_normal((4, 5, 5)) / 3.0
    names = ["matvec", "vecmat", "rowsum", "row", "element", "colmax", "f32 matvec", "f32 sums",
             "int matvec", "int rowmin", "any", "all", "scan carry", "scan ys"]
    differential("arrays", f, names, W, V, K, P, c, xs, rtol=1e-10)
    source = _compiled("arrays", None, None, True)[1]
    program = source.split("def program")[1]
    assert re.search(r"_blk\d+\(.*\), x\d", program)    # arrays passed to blocks
    assert not [ln for ln in program.splitlines() if "* x" in ln or "x0[" in ln]  # not read by statements


def test_block_with_hundreds_of_outputs():
    """A block's outputs come back in tuples of at most ``_CHUNK``, nested (a flat
    tuple of n outputs cost LLVM's SROA n loads of n elements): 340 here, two levels."""
    def f(x):
        return [tnp.sin(x) * (k + 1.0) + x * k for k in range(20)] + [tnp.sum(x) * 2.0]
    x = np.linspace(0.1, 3.0, 16) ** 3
    differential("outputs", f, [f"out{k}" for k in range(21)], x, rtol=1e-12)
    source = _compiled("outputs", None, None, True)[1]
    line, = [ln for ln in source.splitlines() if "= _blk" in ln]
    assert line.strip().startswith("(((s")          # nested targets
