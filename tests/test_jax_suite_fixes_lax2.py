"""tangentia.lax against JAX (x64) where JAX's lax_test.py and lax_autodiff_test.py (run
through tests/external/run_jax_tests.py) found silently different numbers or missing
functions: values compared with JAX's, eagerly, under jit and vmap; derivatives against
JAX's and finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64]


def _int_pairs(dtype):
    info = np.iinfo(dtype)
    xs = [0, 1, 7, 100, int(info.max), int(info.min)]
    ys = [1, 2, 3, 7, 0, int(info.max)]
    if info.min < 0:
        xs += [-1, -7, -100]
        ys += [-1, -2, -3]
    x, y = np.meshgrid(np.array(xs, dtype), np.array(ys, dtype))
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", ["div", "rem"])
def test_integer_div_rem_match_jax(name, dtype):
    # lax.div of integers rounds toward zero (it was NumPy's true division: float64);
    # x / 0 has every bit set, INT_MIN / -1 wraps, x % 0 is x, as XLA's.
    x, y = _int_pairs(dtype)
    want = np.asarray(getattr(jax.lax, name)(x, y))
    for f in (getattr(lax, name), tg.jit(getattr(lax, name)),
              tg.vmap(getattr(lax, name))):
        got = np.asarray(f(x, y))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_div_rem_of_floats_unchanged(dtype):
    x = np.array([7.5, -7.5, 1.0, 0.0, -3.0], dtype)
    y = np.array([2.0, 2.0, 0.0, 0.0, -0.5], dtype)
    with np.errstate(all="ignore"):
        for name in ("div", "rem"):
            np.testing.assert_array_equal(getattr(lax, name)(x, y),
                                          getattr(jax.lax, name)(x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_conj_is_complex_as_jax(dtype):
    x = np.array([1.5, -2.0, 0.0], dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * np.array([0.5, -1.0, 2.0], dtype)
    want = np.asarray(jax.lax.conj(x))
    for f in (lax.conj, tg.jit(lax.conj), tg.vmap(lax.conj)):
        got = np.asarray(f(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


def test_conj_of_real_grad_and_errors():
    f = lambda L: (lambda x: L.real(L.conj(x) * L.conj(x) * 3.0))  # noqa: E731
    assert float(tg.grad(f(lax))(1.25)) == pytest.approx(float(jax.grad(f(jax.lax))(1.25)))
    for bad in (np.array([1, 2], np.int32), np.array([1.0], np.float16)):
        with pytest.raises(TypeError, match=r"^conj does not accept dtype"):
            lax.conj(bad)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16,
                                   np.uint32])
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod"])
def test_integer_sum_prod_keep_dtype(name, dtype):
    # NumPy's add/multiply.reduce widen small integers (int64/uint64); lax's keep the
    # operand's dtype, wrapping as JAX's.
    x = np.array([[100, 3, 7], [90, 5, 11]], dtype)
    want = np.asarray(getattr(jax.lax, name)(x, (1,)))
    for f in (lambda v: getattr(lax, name)(v, (1,)),
              tg.jit(lambda v: getattr(lax, name)(v, (1,)))):
        got = np.asarray(f(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan",
                                  "sqrt", "rsqrt", "logistic", "cbrt"])
def test_accuracy_keyword_accepted(name):
    x = np.array([0.3, 1.7], np.float32)
    want = getattr(jax.lax, name)(x, accuracy=None)
    got = getattr(lax, name)(x, accuracy=None)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6)
    g = tg.grad(lambda v: getattr(lax, name)(v, accuracy=None))(np.float32(0.7))
    np.testing.assert_allclose(
        g, jax.grad(lambda v: getattr(jax.lax, name)(v, accuracy=None))(np.float32(0.7)),
        rtol=1e-5)


SCATTER_APPLY_CASES = [
    # overlapping windows: index vectors [0] and [1] with windows of 2 share element 1
    ((10,), [[0], [1], [7]], (3, 2), jax.lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))),
    ((10,), [[0], [0], [0]], (3, 2), jax.lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))),
    ((5,), [[0], [2]], (2,), jax.lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))),
    # operand batching dimensions with a repeated index in one batch
    ((2, 5), [[[0], [2]], [[1], [1]]], (2, 2), jax.lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
        operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))),
]


@pytest.mark.parametrize("case", range(len(SCATTER_APPLY_CASES)))
def test_scatter_apply_repeats_func_per_covering_window(case):
    # func is applied once per window covering an element (XLA's update computation);
    # overlapping windows of distinct index vectors got it once.
    shape, idx, update_shape, dn = SCATTER_APPLY_CASES[case]
    x = np.linspace(-2.0, 3.0, int(np.prod(shape))).reshape(shape)
    idx = np.array(idx)
    want = jax.lax.scatter_apply(x, idx, jax.numpy.sin, dn, update_shape=update_shape)
    tdn = lax.ScatterDimensionNumbers(*dn)
    f = lambda v, i: lax.scatter_apply(v, i, tg.numpy.sin, tdn,  # noqa: E731
                                       update_shape=update_shape)
    np.testing.assert_allclose(f(x, idx), want, rtol=1e-14)
    np.testing.assert_allclose(tg.jit(f)(x, idx), want, rtol=1e-14)
    xs = np.stack([x, 2 * x])
    loop = np.stack([f(v, idx) for v in xs])
    np.testing.assert_allclose(tg.vmap(f, in_axes=(0, None))(xs, idx), loop, rtol=1e-14)


def _bytes(a):
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


TOPK_VALUES = {
    np.float64: [1.0, np.nan, 3.0, -0.0, 0.0, -np.inf, -np.nan, np.inf, 3.0],
    np.float32: [1.0, -np.nan, 3.0, -0.0, 0.0, -np.inf, np.inf, 2.0, 3.0],
    np.int32: [3, 0, -2**31, 7, 7, 1, 2**31 - 1, -1, 0],
    np.uint32: [3, 0, 2**32 - 1, 7, 7, 1, 2**31, 0, 9],
    np.int8: [-128, 127, 0, -1, 5, 5, -128, 3, 2],
}


@pytest.mark.parametrize("dtype", list(TOPK_VALUES))
def test_top_k_orders_every_value_as_jax(dtype):
    # top_k sorted -x: unsigned 0 came first (-0 == 0 is the smallest key), INT_MIN
    # (whose negation overflows) too; floats follow XLA's total order (+NaN first, -NaN
    # last, 0.0 before -0.0).
    x = np.array(TOPK_VALUES[dtype], dtype)
    xs = np.stack([x, x[::-1]])
    for k in (1, 4, 9):
        want_v, want_i = jax.lax.top_k(xs, k)
        for f in (lambda v: lax.top_k(v, k), tg.jit(lambda v: lax.top_k(v, k))):
            got_v, got_i = f(xs)
            np.testing.assert_array_equal(got_i, want_i)
            np.testing.assert_array_equal(_bytes(got_v), _bytes(want_v))
        np.testing.assert_array_equal(tg.vmap(lambda v: lax.top_k(v, k)[1])(xs), want_i)


BITCAST = [(np.float32, np.int32, (3,)), (np.float64, np.uint32, ()), (np.uint32, np.float64, (2,)),
           (np.int8, np.int8, ()), (np.uint64, np.uint32, (2,)), (np.int16, np.float16, (2, 3)),
           (np.float32, np.uint8, (2,)), (np.uint8, np.float32, (4,))]


@pytest.mark.parametrize("old,new,shape", BITCAST)
def test_bitcast_convert_type_shapes_and_bits(old, new, shape):
    # it was a pure_callback whose 0-d results came back 1-d under jit ("Incorrect output
    # shape ... (pure_callback of kernel)"): now a primitive with a shape rule
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, size=shape + (np.dtype(old).itemsize,), dtype=np.uint8)
    x = x.view(old).reshape(shape)
    want = np.asarray(jax.lax.bitcast_convert_type(x, new))
    for f in (lambda v: lax.bitcast_convert_type(v, new),
              tg.jit(lambda v: lax.bitcast_convert_type(v, new))):
        got = np.asarray(f(x))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(_bytes(got), _bytes(want))
    xs = np.stack([x, x])
    got = tg.vmap(lambda v: lax.bitcast_convert_type(v, new))(xs)
    np.testing.assert_array_equal(_bytes(got), _bytes(np.stack([want, want])))


@pytest.mark.parametrize("old,new", [("int4", np.int8), ("uint4", np.uint16),
                                     (np.uint8, "int4"), (np.int16, "uint4"),
                                     ("int4", "uint4")])
def test_bitcast_convert_type_four_bit(old, new):
    import ml_dtypes
    odt, ndt = np.dtype(getattr(ml_dtypes, old) if isinstance(old, str) else old), \
        np.dtype(getattr(ml_dtypes, new) if isinstance(new, str) else new)
    ratio = max(1, (8 * ndt.itemsize if ndt.name not in ("int4", "uint4") else 4)
                // (8 * odt.itemsize if odt.name not in ("int4", "uint4") else 4))
    vals = np.arange(-8, 8) if odt.name == "int4" else np.arange(16)
    x = vals[:3 * ratio].reshape((3, ratio) if ratio > 1 else (3,)).astype(odt)
    want = np.asarray(jax.lax.bitcast_convert_type(x, ndt))
    got = np.asarray(lax.bitcast_convert_type(x, ndt))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64))


def _pair_op(L):
    return lambda a, b: (a[0] + b[0], a[1] * b[1])


@pytest.mark.parametrize("shape,dims", [((3, 4, 5), (1, 2)), ((3, 0, 5), (1,)), ((7,), (0,)),
                                        ((3, 4), ())])
def test_variadic_reduce_matches_jax(shape, dims):
    # several operands (a pytree) and a computation on tuples: was NotImplementedError
    rng = np.random.default_rng(1)
    xs = (rng.normal(size=shape), rng.uniform(0.5, 1.5, size=shape))
    inits = (np.float64(0.0), np.float64(1.0))
    f = lambda L: (lambda a, b: L.reduce((a, b), inits, _pair_op(L), dims))  # noqa: E731
    want = f(jax.lax)(*xs)
    for g in (f(lax), tg.jit(f(lax))):
        for got, w in zip(g(*xs), want):
            np.testing.assert_allclose(got, w, rtol=1e-12)
    # derivatives: against JAX's and finite differences
    loss = lambda L: (lambda a, b: sum(o.sum() for o in f(L)(a, b)))  # noqa: E731
    for got, w in zip(tg.grad(loss(lax), argnums=(0, 1))(*xs),
                      jax.grad(loss(jax.lax), argnums=(0, 1))(*xs)):
        np.testing.assert_allclose(got, w, rtol=1e-10)
    if xs[0].size:
        t = rng.normal(size=shape)
        eps = 1e-6
        fd = (loss(lax)(xs[0] + eps * t, xs[1]) - loss(lax)(xs[0] - eps * t, xs[1])) / (2 * eps)
        _, jv = tg.jvp(lambda a: loss(lax)(a, xs[1]), (xs[0],), (t,))
        np.testing.assert_allclose(jv, fd, rtol=1e-6)
    # vmap against a loop
    stacked = tuple(np.stack([x, 2 * x]) for x in xs)
    got = tg.vmap(f(lax))(*stacked)
    for k in range(2):
        for g, w in zip(got, f(lax)(stacked[0][k], stacked[1][k])):
            np.testing.assert_allclose(g[k], w, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16])
@pytest.mark.parametrize("name,init", [("bitwise_xor", 0), ("bitwise_and", -1),
                                       ("bitwise_or", 0)])
def test_reduce_with_other_associative_computations(name, init, dtype):
    # any associative computation of scalars, not only add/mul/max/min
    x = np.arange(60).reshape(3, 4, 5).astype(dtype) * 37 % 101
    init = np.array(init).astype(dtype)
    for dims in ((0,), (1, 2), (0, 1, 2)):
        want = jax.lax.reduce(x, init, getattr(jax.lax, name), dims)
        got = lax.reduce(x, init, getattr(lax, name), dims)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(tg.jit(lambda v: lax.reduce(
            v, init, getattr(lax, name), dims))(x), want)


def test_reduce_structure_errors():
    with pytest.raises(ValueError, match="^Operands must have the same tree structure as "
                                         "init_values"):
        lax.reduce({"x": np.ones(5)}, {"y": 0.0}, lambda a, b: dict(x=a["x"] + b["x"]), [0])
    with pytest.raises(ValueError, match="^Operands must have the same tree structure as "
                                         "init_values"):
        lax.reduce_window({"x": np.ones(5)}, {"y": 0.0}, lambda a, b: dict(x=a["x"] + b["x"]),
                          (1,), (1,), "VALID")
    for fun, extra in ((lax.reduce, ([],)), (lax.reduce_window, ((), (), "VALID"))):
        with pytest.raises(ValueError, match=rf"^{fun.__name__}: no operands \(tangentia: lax\.{fun.__name__}: "):
            fun([], [], lambda a, b: a, *extra)
    with pytest.raises(ValueError, match="^reduce found non-scalar initial value"):
        lax.reduce({"x": np.ones(5)}, {"x": np.ones(5)},
                   lambda a, b: dict(x=a["x"] + b["x"]), [0])
    with pytest.raises(ValueError, match="^reduce_window output must have the same tree"):
        lax.reduce_window(np.ones((1,)), 0.0, lambda a, b: [a + b], (1,), (1,), "VALID")
    with pytest.raises(TypeError, match="^reduce_window window_strides must have every "
                                        "element be strictly positive"):
        lax.reduce_window(np.ones((1,)), 0.0, lax.add, (1,), (0,), "VALID")


def _custom_sub(a, b):  # associative, not one of the monoids: reduce_window's general path
    return a + b + a * b


@pytest.mark.parametrize("padding,base,wdil,strides", [
    ("VALID", (1, 1), (1, 1), (1, 1)), ("SAME", (1, 1), (1, 1), (2, 1)),
    (((1, 2), (0, 1)), (2, 1), (1, 2), (1, 2))])
def test_reduce_window_general_and_variadic(padding, base, wdil, strides):
    rng = np.random.default_rng(2)
    x, y = rng.uniform(-0.5, 0.5, size=(4, 5)), rng.normal(size=(4, 5))
    kw = dict(window_dimensions=(2, 2), window_strides=strides, padding=padding,
              base_dilation=base, window_dilation=wdil)
    want = jax.lax.reduce_window(x, 0.0, _custom_sub, **kw)
    np.testing.assert_allclose(lax.reduce_window(x, 0.0, _custom_sub, **kw), want, rtol=1e-12)
    np.testing.assert_allclose(tg.jit(lambda v: lax.reduce_window(v, 0.0, _custom_sub, **kw))(x),
                               want, rtol=1e-12)
    # variadic: (max, argmax-like pair)
    def pair(L):
        return lambda a, b: (L.max(a[0], b[0]), a[1] + b[1])
    want = jax.lax.reduce_window((x, y), (-np.inf, 0.0), pair(jax.lax), **kw)
    got = lax.reduce_window((x, y), (-np.inf, 0.0), pair(lax), **kw)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    # jvp of the general path against JAX's
    t = rng.normal(size=x.shape)
    _, want_t = jax.jvp(lambda v: jax.lax.reduce_window(v, 0.0, _custom_sub, **kw), (x,), (t,))
    _, got_t = tg.jvp(lambda v: lax.reduce_window(v, 0.0, _custom_sub, **kw), (x,), (t,))
    np.testing.assert_allclose(got_t, want_t, rtol=1e-12)


@pytest.mark.parametrize("m,k,n,sizes", [(7, 4, 3, [7]), (9, 4, 3, [2, 0, 5]),
                                         (10, 3, 2, [3, 4])])  # the last: rows past the groups
def test_ragged_dot_matches_jax(m, k, n, sizes):
    rng = np.random.default_rng(3)
    lhs, rhs = rng.normal(size=(m, k)), rng.normal(size=(len(sizes), k, n))
    gs = np.array(sizes, np.int32)
    want = jax.lax.ragged_dot(lhs, rhs, gs)
    np.testing.assert_allclose(lax.ragged_dot(lhs, rhs, gs), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tg.jit(lax.ragged_dot)(lhs, rhs, gs), want, rtol=1e-12,
                               atol=1e-14)
    loss = lambda L: (lambda a, b: (L.ragged_dot(a, b, gs) ** 2).sum())  # noqa: E731
    for got, w in zip(tg.grad(loss(lax), argnums=(0, 1))(lhs, rhs),
                      jax.grad(loss(jax.lax), argnums=(0, 1))(lhs, rhs)):
        np.testing.assert_allclose(got, w, rtol=1e-10, atol=1e-12)
    t = rng.normal(size=lhs.shape)
    eps = 1e-6
    fd = (loss(lax)(lhs + eps * t, rhs) - loss(lax)(lhs - eps * t, rhs)) / (2 * eps)
    np.testing.assert_allclose(tg.jvp(lambda a: loss(lax)(a, rhs), (lhs,), (t,))[1], fd,
                               rtol=1e-6)
    lhss = np.stack([lhs, -2 * lhs])
    np.testing.assert_allclose(tg.vmap(lambda a: lax.ragged_dot(a, rhs, gs))(lhss),
                               np.stack([lax.ragged_dot(a, rhs, gs) for a in lhss]),
                               rtol=1e-12)


@pytest.mark.parametrize("dtype,preferred", [(np.int8, np.float32), (np.int8, np.int32),
                                             (np.complex64, np.complex128),
                                             (np.float32, np.float64)])
def test_preferred_element_type_accumulates_wide(dtype, preferred):
    # int8 products summed in int8 overflowed before the conversion to the preferred type
    rng = np.random.default_rng(4)
    x = rng.integers(-100, 100, size=(3, 16)).astype(dtype)
    y = rng.integers(-100, 100, size=(16, 2)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=x.shape).astype(np.float32)
    want = jax.lax.dot(x, y, preferred_element_type=preferred)
    got = lax.dot(x, y, preferred_element_type=preferred)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-13)
    lhs = rng.integers(-100, 100, size=(1, 3, 6, 6)).astype(dtype)
    rhs = rng.integers(-100, 100, size=(2, 3, 3, 3)).astype(dtype)
    want = jax.lax.conv(lhs, rhs, (1, 1), "VALID", preferred_element_type=preferred)
    got = lax.conv(lhs, rhs, (1, 1), "VALID", preferred_element_type=preferred)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
