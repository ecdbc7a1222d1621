"""tangentia.lax against JAX (x64), continuing tests/test_jax_suite_fixes_lax3.py: the long
tail of JAX's lax_test.py (issue 26).  Values compared with JAX's bit for bit, eagerly and
under jit (and vmap against a loop); errors begin with JAX's wording."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax

jax = pytest.importorskip("jax", reason="the tests compare with JAX (x64)")
jax.config.update("jax_enable_x64", True)

INT4, UINT4 = np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)


def _same(got, want, msg=""):
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, (msg, got.dtype, want.dtype)
    assert got.shape == want.shape, (msg, got.shape, want.shape)
    np.testing.assert_array_equal(got.astype(np.float64) if got.dtype.kind == "V" else got,
                                  want.astype(np.float64) if want.dtype.kind == "V" else want,
                                  err_msg=msg)


# ---------------------------------------------------------------------------
# int4/uint4: computed in a byte and wrapped back to 4 bits, as XLA's

# every pair of 4-bit values (overflow, division by 0 and -1, shifts of -8..7 / 0..15)
_GRID = np.arange(16)
_I4 = np.array(np.meshgrid(_GRID - 8, _GRID - 8)).reshape(2, -1)
_U4 = np.array(np.meshgrid(_GRID, _GRID)).reshape(2, -1)
BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "shift_left",
          "shift_right_arithmetic", "shift_right_logical", "bitwise_and", "bitwise_or",
          "bitwise_xor", "eq", "ne", "gt", "ge", "lt", "le", "mulhi"]
UNARY = ["neg", "sign", "bitwise_not", "population_count", "clz"]


@pytest.mark.parametrize("dtype", [INT4, UINT4], ids=["int4", "uint4"])
def test_four_bit_binary_ops_are_jax(dtype):
    x, y = (_I4 if dtype == INT4 else _U4).astype(dtype)
    for name in BINARY:
        want = getattr(jax.lax, name)(jax.numpy.asarray(x), jax.numpy.asarray(y))
        _same(getattr(lax, name)(x, y), want, name)
        _same(tg.jit(getattr(lax, name))(x, y), want, f"jit {name}")


@pytest.mark.parametrize("dtype", [INT4, UINT4], ids=["int4", "uint4"])
def test_four_bit_unary_ops_are_jax(dtype):
    x = (_GRID - 8 if dtype == INT4 else _GRID).astype(dtype)
    for name in UNARY:
        want = getattr(jax.lax, name)(jax.numpy.asarray(x))
        _same(getattr(lax, name)(x), want, name)
        _same(tg.jit(getattr(lax, name))(x), want, f"jit {name}")
    # vmap of a 4-bit op against a loop
    xs = x.reshape(4, 4)
    _same(tg.vmap(lax.neg)(xs), np.stack([lax.neg(r) for r in xs]))


@pytest.mark.parametrize("dtype", [INT4, UINT4], ids=["int4", "uint4"])
def test_four_bit_abs_raises_jax_error(dtype):
    x = lax.iota(dtype, 3)
    with pytest.raises(TypeError) as want:
        jax.lax.abs(jax.lax.iota(dtype, 3))
    with pytest.raises(TypeError, match=f"abs does not accept dtype {dtype.name}.") as got:
        lax.abs(x)
    assert str(got.value).startswith(str(want.value))


# ---------------------------------------------------------------------------
# float to integer conversion saturates, NaN to 0 (XLA's), for every integer width

FLOATS = np.array([1e30, -1e30, 3e9, -3e9, np.nan, np.inf, -np.inf, 300.0, -300.0, 127.9,
                   -128.9, 255.5, -1.5, -0.5, 0.5, 7.9, -8.9, 15.9, 2.0**31, 2.0**63, 2.0**64,
                   -2.0**63, 65535.7])


@pytest.mark.parametrize("src", [np.float64, np.float32, np.float16, ml_dtypes.bfloat16])
def test_float_to_int_saturates_as_jax(src):
    with np.errstate(over="ignore"):   # (float16 has no 1e30: inf)
        x = FLOATS.astype(src)
    for dst in [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                np.uint64, INT4, UINT4]:
        want = jax.lax.convert_element_type(jax.numpy.asarray(x), dst)
        _same(lax.convert_element_type(x, dst), want, f"{np.dtype(src)} -> {np.dtype(dst)}")
        _same(tg.jit(lambda v, dst=dst: lax.convert_element_type(v, dst))(x), want,
              f"jit {np.dtype(src)} -> {np.dtype(dst)}")
    # a scalar, and in-range values (the fast path)
    assert int(lax.convert_element_type(np.float64(-3.7), np.int32)) == -3
    _same(tg.numpy.asarray(np.array([1.5, -2.5]), np.int8), np.array([1, -2], np.int8))


# ---------------------------------------------------------------------------
# reduce_precision: a primitive, bit for bit as XLA's for every float dtype

RP_FORMATS = [(8, 7), (5, 10), (8, 23), (4, 3), (1, 0), (8, 0), (6, 30), (15, 5)]


def _float_values(dtype, rng):
    """Random bit patterns of ``dtype`` (every class: normal, subnormal, inf, NaN) and edge
    values (limits, halfway cases, the largest finite of narrower formats)."""
    u = np.dtype(f"u{dtype.itemsize}")
    x = rng.integers(0, np.iinfo(u).max, 400, dtype=u, endpoint=True).view(dtype)
    fi = ml_dtypes.finfo(dtype)
    edge = np.array([0, np.inf, np.nan, float(fi.max), float(fi.tiny),
                     float(fi.smallest_subnormal), 1.0, 1.5, 2.5, 1.0 + 2.0**-8,
                     1.0 + 3 * 2.0**-9, 65504, 65520, 3.4e38, 3.40282357e38, 1e-40, 6e-8,
                     3e-8, 2.0**-14, 2.0**-15, 2.0**-126 * 0.75])
    with np.errstate(over="ignore", under="ignore"):
        e = edge.astype(dtype)
    return np.concatenate([x, e, -e])


def _bits_equal(got, want, msg):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, msg
    u = np.dtype(f"u{got.dtype.itemsize}")
    with np.errstate(invalid="ignore", over="ignore"):
        nan = np.isnan(want.astype(np.float32)) & np.isnan(got.astype(np.float32))
    bad = (got.view(u) != want.view(u)) & ~nan   # (NaN payloads aside)
    assert not bad.any(), (msg, got[bad][:4], want[bad][:4])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16],
                         ids=["float16", "float32", "float64", "bfloat16"])
def test_reduce_precision_bits_are_xla(dtype):
    dtype = np.dtype(dtype)
    x = _float_values(dtype, np.random.default_rng(1))
    f = tg.jit(lax.reduce_precision, static_argnums=(1, 2))
    for e, m in RP_FORMATS:
        want = jax.lax.reduce_precision(jax.numpy.asarray(x), e, m)
        _bits_equal(lax.reduce_precision(x, e, m), want, (dtype, e, m))
    _bits_equal(f(x, 8, 7), jax.lax.reduce_precision(jax.numpy.asarray(x), 8, 7), "jit")


def test_reduce_precision_float8_is_xla():
    # (computed in float16, as XLA's CPU backend: e5m2's own format keeps its subnormals,
    # e4m3fn's flushes them)
    for dtype in [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz]:
        x = np.arange(256, dtype=np.uint8).view(dtype)   # every value
        for e, m in [(4, 3), (5, 2), (5, 1), (8, 7)]:
            want = jax.lax.reduce_precision(jax.numpy.asarray(x), e, m)
            _bits_equal(lax.reduce_precision(x, e, m), want, (dtype, e, m))


def test_reduce_precision_is_a_linear_primitive():
    info = ml_dtypes.finfo(ml_dtypes.bfloat16)
    f = lambda x: lax.reduce_precision(x, int(info.nexp), int(info.nmant))   # noqa: E731
    jf = lambda x: jax.lax.reduce_precision(x, int(info.nexp), int(info.nmant))  # noqa: E731
    y, pullback = tg.vjp(f, np.pi)
    jy, jpullback = jax.vjp(jf, np.pi)
    assert float(y) == float(jy) == float(pullback(np.pi)[0]) == float(jpullback(np.pi)[0])
    assert float(tg.jvp(f, (1.0,), (np.pi,))[1]) == float(jax.jvp(jf, (1.0,), (np.pi,))[1])
    assert "reduce_precision" in str(tg.make_jaxpr(f)(1.0))
    xs = np.linspace(-3, 3, 12).reshape(3, 4)
    _same(tg.vmap(f)(xs), np.stack([f(r) for r in xs]))
    with pytest.raises(TypeError, match="reduce_precision: argument 'operand' must be floating"):
        lax.reduce_precision(np.arange(3), 8, 7)


# ---------------------------------------------------------------------------
# bitcast_convert_type: a primitive (stages as itself), zero derivative, JAX's errors

BITCASTS = [((2, 3), np.float32, np.int32), ((2, 3), np.float64, np.uint16),
            ((3, 4), np.int16, np.float64), ((), np.float64, np.float32),
            ((5,), np.uint8, INT4), ((4, 2), INT4, np.uint8), ((3,), np.float32, UINT4),
            ((2, 8), UINT4, np.float32), ((3,), INT4, UINT4), ((2,), ml_dtypes.bfloat16, np.int8)]


def test_bitcast_convert_type_is_jax():
    rng = np.random.default_rng(2)
    for shape, src, dst in BITCASTS:
        src = np.dtype(src)
        nbytes = int(np.prod(shape, dtype=int)) * src.itemsize
        x = (rng.integers(0, 16, shape).astype(np.int8).astype(src)
             if src.kind == "V" and src.name in ("int4", "uint4")
             else rng.integers(0, 256, nbytes, dtype=np.uint8).view(src).reshape(shape))
        if src.kind == "f":
            x = np.where(np.isnan(x), 1.5, x).astype(src)
        want = jax.lax.bitcast_convert_type(jax.numpy.asarray(x), dst)
        f = tg.jit(lambda v, dst=dst: lax.bitcast_convert_type(v, dst))
        for g in (lambda v, dst=dst: lax.bitcast_convert_type(v, dst), f):
            got = g(x)
            _same(got.view(np.uint8) if np.dtype(dst).kind == "f" else got,
                  np.asarray(want).view(np.uint8) if np.dtype(dst).kind == "f" else want,
                  f"{src} -> {np.dtype(dst)}")
        if shape:   # vmap against a loop
            v = tg.vmap(lambda r, dst=dst: lax.bitcast_convert_type(r, dst))(x[None])
            _same(v[0], lax.bitcast_convert_type(x, dst))
    jaxpr = tg.make_jaxpr(lambda v: lax.bitcast_convert_type(v, np.int32))(np.float32(1))
    assert [e.prim.name for e in jaxpr.jaxpr.eqns] == ["bitcast_convert_type"]


def test_bitcast_convert_type_derivative_is_zero():
    x = np.ones(3, np.float32)
    g = tg.grad(lambda v: lax.bitcast_convert_type(v, np.float32).sum())(x)
    _same(g, jax.grad(lambda v: jax.lax.bitcast_convert_type(v, np.float32).sum())(x))
    y, t = tg.jvp(lambda v: lax.bitcast_convert_type(v, np.float16), (x,), (x,))
    jy, jt = jax.jvp(lambda v: jax.lax.bitcast_convert_type(v, np.float16), (x,), (x,))
    _same(y, jy)
    _same(t, jt)


@pytest.mark.parametrize("shape, src, dst", [((2, 3), np.float16, np.float32),
                                             ((), np.float16, np.float32),
                                             ((3,), bool, np.int8), ((3,), np.int8, bool),
                                             ((3,), np.complex64, np.float64),
                                             ((3,), np.float32, np.complex64)])
def test_bitcast_convert_type_errors_are_jax(shape, src, dst):
    x = np.zeros(shape, src)
    with pytest.raises((TypeError, ValueError)) as want:
        jax.lax.bitcast_convert_type(x, dst)
    with pytest.raises(type(want.value)) as got:
        lax.bitcast_convert_type(x, dst)
    assert str(got.value).startswith(str(want.value)), (str(got.value), str(want.value))
    with pytest.raises(type(want.value)):
        tg.jit(lambda v: lax.bitcast_convert_type(v, dst))(x)


# ---------------------------------------------------------------------------
# lax.reduce with bitwise monoids stages JAX's reduce_and/reduce_or/reduce_xor

@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64, np.bool_])
def test_reduce_with_bitwise_monoids_is_jax(dtype):
    x = np.random.default_rng(3).integers(-100, 100, (3, 4, 5)).astype(dtype)
    for name, prim in [("bitwise_and", "reduce_and"), ("bitwise_or", "reduce_or"),
                       ("bitwise_xor", "reduce_xor")]:
        identity = np.asarray(-1 if name == "bitwise_and" else 0).astype(dtype)
        for init in (identity, np.asarray(5).astype(dtype)):
            for dims in [(0,), (1, 2), (0, 1, 2), ()]:
                want = jax.lax.reduce(x, init, getattr(jax.lax, name), dims)
                _same(lax.reduce(x, init, getattr(lax, name), dims), want, (name, init, dims))
                _same(tg.jit(lambda v, i, name=name, dims=dims: lax.reduce(
                    v, i, getattr(lax, name), dims))(x, init), want, (name, init, dims))
        jaxpr = tg.make_jaxpr(lambda v, name=name, identity=identity: lax.reduce(
            v, identity, getattr(lax, name), (0, 2)))(x)
        assert [e.prim.name for e in jaxpr.jaxpr.eqns] == [prim]
        # the lax functions of the same name, and vmap against a loop
        want = getattr(jax.lax, prim)(x, (0, 2))
        _same(getattr(lax, prim)(x, (0, 2)), want)
        _same(tg.vmap(lambda r, prim=prim: getattr(lax, prim)(r, (1,)), in_axes=1)(x),
              np.stack([getattr(lax, prim)(x[:, i], (1,)) for i in range(4)]))
    # a lambda computing XOR is recognized too
    jaxpr = tg.make_jaxpr(lambda v: lax.reduce(v, np.asarray(0).astype(dtype),
                                               lambda a, b: a ^ b, (1,)))(x)
    assert [e.prim.name for e in jaxpr.jaxpr.eqns] == ["reduce_xor"]


def test_logical_reductions_refuse_floats_as_jax():
    with pytest.raises(TypeError) as want:
        jax.lax.reduce_xor(np.ones(3), (0,))
    for name in ("reduce_and", "reduce_or", "reduce_xor"):
        with pytest.raises(TypeError, match=str(want.value).split(".")[0]):
            getattr(lax, name)(np.ones(3), (0,))


def test_reduce_over_no_dimensions_is_the_operand():
    # JAX (XLA) returns the operands unchanged: the initial values are not combined
    x = np.array([62.0, 12.0, 7.0])
    for comp, jcomp in ((lax.add, jax.lax.add), (lax.max, jax.lax.max),
                        (lambda a, b: a * 2 + b, lambda a, b: a * 2 + b)):
        _same(lax.reduce(x, 5.0, comp, ()), jax.lax.reduce(x, 5.0, jcomp, ()))
    got = lax.reduce((x, x), (5.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), ())
    want = jax.lax.reduce((x, x), (5.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), ())
    for g, w in zip(got, want):
        _same(g, w)
    _same(tg.jit(lambda v: lax.reduce(v, 5.0, lax.add, ()))(x), x)


# ---------------------------------------------------------------------------
# The singles of lax_test: JAX's errors, and numbers JAX's

def _raises_like_jax(fn, jfn):
    """``fn`` raises JAX's exception type with a message beginning with JAX's."""
    with pytest.raises(Exception) as want:
        jfn()
    with pytest.raises(type(want.value)) as got:
        fn()
    assert str(got.value).startswith(str(want.value)), (str(got.value), str(want.value))


def test_argmin_argmax_of_empty_axis_raise_jax_error():
    for name in ("argmin", "argmax"):
        _raises_like_jax(lambda name=name: getattr(lax, name)(np.ones((0, 2)), 0, np.int32),
                         lambda name=name: getattr(jax.lax, name)(np.ones((0, 2)), 0, np.int32))
    _same(lax.argmax(np.ones((2, 0)), 0, np.int32), np.zeros((0,), np.int32))


def test_top_k_of_more_than_int32_entries_raises_jax_error():
    big = (2**31 + 1,)
    _raises_like_jax(
        lambda: tg.eval_shape(lambda x: lax.top_k(x, 100),
                              tg.ShapeDtypeStruct(big, ml_dtypes.bfloat16)),
        lambda: jax.eval_shape(lambda x: jax.lax.top_k(x, 100),
                               jax.ShapeDtypeStruct(big, ml_dtypes.bfloat16)))


def test_dot_takes_precision_by_keyword_only():
    x = np.arange(5.0)
    _raises_like_jax(lambda: lax.dot(x, x, lax.Precision.DEFAULT),
                     lambda: jax.lax.dot(x, x, jax.lax.Precision.DEFAULT))
    assert float(lax.dot(x, x, precision=lax.Precision.HIGHEST)) == 30.0


@pytest.mark.parametrize("inshape, outshape, dims", [
    ((2,), (2, 2), (0, 1)), ((2, 2), (2,), (0, 1)), ((2,), (2, 3), (2,)), ((2,), (3,), (0,))])
def test_broadcast_in_dim_errors_are_jax(inshape, outshape, dims):
    x = np.ones(inshape)
    _raises_like_jax(lambda: lax.broadcast_in_dim(x, outshape, dims),
                     lambda: jax.lax.broadcast_in_dim(x, outshape, dims))


def test_broadcast_in_dim_takes_dimensions_in_any_order():
    x = np.arange(6.0).reshape(2, 3)
    for shape, dims in [((3, 2), (1, 0)), ((3, 4, 2), (2, 0)), ((2, 4, 3), (0, 2))]:
        want = jax.lax.broadcast_in_dim(x, shape, dims)
        _same(lax.broadcast_in_dim(x, shape, dims), want)
        _same(tg.jit(lambda v, shape=shape, dims=dims: lax.broadcast_in_dim(v, shape, dims))(x),
              want)
    g = tg.grad(lambda v: (lax.broadcast_in_dim(v, (3, 4, 2), (2, 0)) ** 2).sum())(x)
    _same(g, 8 * x)   # (each entry 4 times; JAX 0.10.2's grad fails here on its transpose)


def test_conv_window_strides_rank_error_is_jax():
    lhs, rhs = np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 1, 1))
    _raises_like_jax(lambda: lax.conv(lhs, rhs, [1], "SAME"),
                     lambda: jax.lax.conv(lhs, rhs, [1], "SAME"))


def test_dynamic_slice_of_unsigned_starts_is_jax():
    x = np.arange(200)
    f = tg.jit(lambda v, i: lax.dynamic_slice(v, [i], [3]))
    for i in [np.uint64(2**63 + 5), np.uint64(2**64 - 1), np.uint8(250), np.uint32(128),
              np.uint16(0), -3, 1000]:
        want = jax.lax.dynamic_slice(x, [i], [3])
        _same(lax.dynamic_slice(x, [i], [3]), want, i)
        if not isinstance(i, int):
            _same(f(x, i), want, i)
    # no wrap-around of negative starts for unsigned ones
    eqns = tg.make_jaxpr(lambda v, i: lax.dynamic_slice(v, [i], [1]))(x, np.uint32(7)).jaxpr.eqns
    assert "select" not in {e.prim.name for e in eqns} and "lt" not in {e.prim.name for e in eqns}


def test_dot_general_of_python_scalars_under_remat_and_hessian():
    def f(lib):
        return lib.remat(lambda x: lib.lax.dot_general(x, x, (([], []), ([], []))))
    assert float(tg.hessian(f(tg))(1.0)) == float(jax.hessian(f(jax))(1.0)) == 2.0
    assert float(tg.grad(f(tg))(3.0)) == 6.0


def test_complex_log1p_is_accurate_near_zero():
    mpmath = pytest.importorskip("mpmath", reason="the reference values come from mpmath")
    mpmath.mp.prec = 120
    rng = np.random.default_rng(4)
    z = (rng.standard_normal(60) + 1j * rng.standard_normal(60)) * 10.0 ** rng.uniform(-12, 3, 60)
    z = np.concatenate([z, [1e-5, -0.5 + 0.1j, -1 + 1e-8j, -2, 1e300 + 1e300j, -1e-20 + 1e-3j]])
    for dtype in (np.complex64, np.complex128):
        with np.errstate(over="ignore"):
            zz = z.astype(dtype)
        zz = zz[np.isfinite(zz)]   # (1e300 overflows complex64)
        ref = np.array([complex(mpmath.log1p(mpmath.mpc(complex(v)))) for v in zz])
        eps = np.finfo(dtype).eps
        for got in (lax.log1p(zz), tg.jit(lax.log1p)(zz)):
            err = np.abs(np.asarray(got) - ref) / np.abs(ref) / eps
            assert err.max() < 2, (dtype, err.max())   # NumPy's: 8e6 (complex64)
    # lax_test's testLog1pNearOne: 1 ULP
    np.testing.assert_array_almost_equal_nulp(np.log1p(np.float32(1e-5)).astype(np.complex64),
                                              lax.log1p(np.complex64(1e-5)))
    g = tg.grad(lambda v: lax.log1p(v).real)(0.5 + 0.5j)
    np.testing.assert_allclose(g, jax.grad(lambda v: jax.lax.log1p(v).real)(0.5 + 0.5j),
                               rtol=1e-15)


def test_shape_as_value_is_jax():
    for shape in [(), (2,), (2, 3), (np.int64(4), 1)]:
        _same(lax.shape_as_value(shape), jax.lax.shape_as_value(shape))
    assert tg.make_jaxpr(lambda: lax.shape_as_value((2, 3)))().jaxpr.eqns == []
    with pytest.raises(TypeError, match="lax.shape_as_value"):
        lax.shape_as_value((2.5,))


@pytest.mark.parametrize("dtype", [INT4, UINT4], ids=["int4", "uint4"])
def test_four_bit_reductions_products_and_powers_are_jax(dtype):
    x = (np.arange(16) - (8 if dtype == INT4 else 0)).astype(dtype).reshape(4, 4)
    lo, hi = np.asarray(1).astype(dtype), np.asarray(5).astype(dtype)
    cases = [lambda L, v: L.reduce_max(v, (1,)), lambda L, v: L.reduce_min(v, (0,)),
             lambda L, v: L.cummax(v, 1), lambda L, v: L.cummin(v, 0),
             lambda L, v: L.clamp(lo, v, hi), lambda L, v: L.integer_pow(v, 3),
             lambda L, v: L.dot_general(v, v, (((1,), (0,)), ((), ())))]
    for i, case in enumerate(cases):
        want = case(jax.lax, jax.numpy.asarray(x))
        _same(case(lax, x), want, i)
        _same(tg.jit(lambda v, case=case: case(lax, v))(x), want, f"jit {i}")


def test_pow_refuses_integer_bases_and_keeps_the_base_dtype_as_jax():
    for a, b in [(np.arange(3), 2.0), (np.arange(3, dtype=np.uint8), 2.0), (True, 2.0),
                 (np.arange(3.0), True), (np.arange(3).astype(INT4), 2.0)]:
        _raises_like_jax(lambda a=a, b=b: lax.pow(a, b), lambda a=a, b=b: jax.lax.pow(a, b))
    for a, b in [(np.float32(2), np.int32(3)), (np.float32([1.5, 2]), np.int64(3)),
                 (np.float16(3), np.arange(3)), (2.0, np.arange(3))]:
        want = jax.lax.pow(a, b)
        _same(lax.pow(a, b), want)
        _same(tg.jit(lax.pow)(a, b), want)


def test_unsigned_shift_right_arithmetic_shifts_the_sign_bit_as_jax():
    # XLA shifts an unsigned value's bits as signed: uint8 255 >> 1 is 255 (it was 127)
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        top = np.iinfo(dtype).max
        a = np.array([top, top // 2 + 1, 5, 0, top // 2, top], dtype)
        b = np.array([1, 3, 1, 0, 70, 0], dtype)
        want = jax.lax.shift_right_arithmetic(a, b)
        _same(lax.shift_right_arithmetic(a, b), want, dtype)
        _same(tg.jit(lax.shift_right_arithmetic)(a, b), want, dtype)


def test_digamma_is_nan_at_zero_as_jax():
    x = np.array([0.0, -0.0, -1.0, -2.5, 1e-300, 1.5, np.inf])
    for dtype, rtol in ((np.float32, 1e-5), (np.float64, 1e-12)):   # (JAX's float32: 3e-6)
        want = jax.lax.digamma(x.astype(dtype))
        np.testing.assert_allclose(lax.digamma(x.astype(dtype)), want, rtol=rtol)
        np.testing.assert_allclose(tg.jit(lax.digamma)(x.astype(dtype)), want, rtol=rtol)
    assert float(tg.grad(lax.digamma)(1.5)) == pytest.approx(float(jax.grad(jax.lax.digamma)(1.5)))


def test_lax_refuses_the_dtypes_jax_refuses():
    # lax does not promote: JAX's TypeError, word for word, where NumPy would compute (each
    # dtype tangentia refuses, JAX refuses with the same words; what both accept was
    # compared once over these 5 dtypes: JAX computes it too, but for complex atan2)
    from tangentia.lax._accepted import ACCEPTED
    extra = {"reduce_sum": ((0,),), "reduce_prod": ((0,),), "argmax": (0, np.int32),
             "argmin": (0, np.int32), "integer_pow": (3,)}
    tried = 0
    for name, (_, _, n) in ACCEPTED.items():
        for dtype in (np.int8, np.uint8, np.bool_, np.complex64, np.float32):
            args = (np.ones(2, dtype),) * n + extra.get(name, ())
            try:
                lax._accepted.check(name, args)
            except TypeError as e:
                got = str(e)
            else:
                continue
            with pytest.raises(TypeError) as want:
                getattr(jax.lax, name)(*args)
            assert got.startswith(str(want.value)), (name, dtype, got)
            with pytest.raises(TypeError):
                getattr(lax, name)(*args)
            tried += 1
    assert tried > 160
    with pytest.raises(TypeError, match="sin does not accept dtype int64"):
        tg.jit(lax.sin)(np.arange(3))
    # lax.integer_pow of booleans is JAX's TypeError (it returned [1, 0], and bool under the
    # numba backend); a boolean array's ** and tnp.power still compute, as JAX's do
    b = np.array([True, False])
    for f in (lambda v: lax.integer_pow(v, 3), tg.jit(lambda v: lax.integer_pow(v, 2))):
        with pytest.raises(TypeError, match=r"^integer_pow does not accept dtype bool\. "):
            f(b)
    np.testing.assert_array_equal(tg.jit(lambda v: v ** 3)(b), np.asarray(jax.jit(lambda v: v ** 3)(b)))


def test_float16_cumsum_accumulates_in_float32():
    x = np.random.default_rng(5).standard_normal(2000).astype(np.float16)
    want = np.asarray(jax.lax.cumsum(x, 0)).astype(np.float64)
    exact = np.cumsum(x.astype(np.float64))
    got = np.asarray(lax.cumsum(x, 0)).astype(np.float64)
    assert lax.cumsum(x, 0).dtype == np.float16
    # as close to the exact sums as JAX's (NumPy's float16 running sum was 14 ULPs off)
    assert np.max(np.abs(got - exact)) <= np.max(np.abs(want - exact)) + 0.07
    _same(tg.jit(lambda v: lax.cumsum(v, 0))(x), lax.cumsum(x, 0))
