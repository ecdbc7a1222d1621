"""The rest of jax.lax's thin operations: elementwise aliases, bit operations,
pad/rev/select_n/index_take/top_k/..., reduce_precision, associative_scan and
cumlogsumexp, and the enums.  Expected numbers were computed with jax 0.10.2
(x64 enabled) and are baked in; derivatives are checked against finite
differences, vmap against loops, jit against eager."""
import numpy as np
import pytest
import scipy.special as sc
from hypothesis import given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.test_util import check_grads

I32 = np.array([5, -3, 0, 2**20 + 7, -2**31], np.int32)
M = np.arange(6.0).reshape(2, 3)


def test_every_public_name_of_jax_lax_we_promise_exists():
    names = """acos acosh asin asinh atan atanh cbrt exp2 reciprocal is_finite erfc erf_inv lgamma
    digamma polygamma igamma igammac igamma_grad_a betainc zeta bessel_i0e bessel_i1e nextafter max
    min bitwise_and bitwise_or bitwise_xor bitwise_not shift_left shift_right_arithmetic
    shift_right_logical population_count clz argmax argmin reduce_and reduce_or reduce_xor
    cumlogsumexp iota broadcasted_iota pad rev select_n index_in_dim index_take collapse tile split
    stack unstack top_k sort_key_val batch_matmul broadcast_shapes broadcast_to_rank dtype empty
    optimization_barrier reduce_precision bitcast_convert_type Precision DotAlgorithm
    DotAlgorithmPreset RoundingMethod GatherScatterMode FftType associative_scan""".split()
    assert [n for n in names if not hasattr(lax, n)] == []


@pytest.mark.parametrize("name, ref, x", [
    ("acos", np.arccos, [0.1, -0.7]), ("asin", np.arcsin, [0.1, -0.7]),
    ("atan", np.arctan, [0.1, -3.0]), ("acosh", np.arccosh, [1.5, 4.0]),
    ("asinh", np.arcsinh, [0.1, -3.0]), ("atanh", np.arctanh, [0.1, -0.7]),
    ("cbrt", np.cbrt, [8.5, -3.0]), ("exp2", np.exp2, [0.5, -3.0]),
    ("reciprocal", np.reciprocal, [0.5, -3.0]), ("erfc", sc.erfc, [0.5, -1.0]),
    ("erf_inv", sc.erfinv, [0.5, -0.9]), ("lgamma", sc.gammaln, [0.5, 7.0]),
    ("digamma", sc.digamma, [0.5, 7.0]), ("bessel_i0e", sc.i0e, [0.5, -7.0]),
    ("bessel_i1e", sc.i1e, [0.5, -7.0])])
def test_unary_aliases_values_grads_vmap_jit(name, ref, x):
    f, x = getattr(lax, name), np.array(x)
    np.testing.assert_allclose(f(x), ref(x), rtol=1e-13)
    np.testing.assert_allclose(tg.jit(f)(x), ref(x), rtol=1e-13)
    np.testing.assert_allclose(tg.vmap(f)(x), ref(x), rtol=1e-13)
    check_grads(f, (x,), 2, rtol=1e-5)


def test_binary_special_aliases():
    a, x = np.array([0.5, 2.0, 5.0]), np.array([1.0, 0.3, 7.0])
    np.testing.assert_allclose(lax.igamma(a, x), sc.gammainc(a, x), rtol=1e-14)
    np.testing.assert_allclose(lax.igammac(a, x), sc.gammaincc(a, x), rtol=1e-14)
    np.testing.assert_allclose(lax.igamma_grad_a(a, x),
                               [-0.389837264328511, -0.07982414399499677, -0.11107537527157675],
                               rtol=1e-10)
    np.testing.assert_allclose(lax.betainc(a, x + 1, np.array([0.2, 0.5, 0.9])),
                               sc.betainc(a, x + 1, [0.2, 0.5, 0.9]), rtol=1e-14)
    np.testing.assert_allclose(lax.zeta(x + 2, a), sc.zeta(x + 2, a), rtol=1e-14)
    np.testing.assert_allclose(lax.polygamma(np.array([1.0, 2.0, 3.0]), x),
                               sc.polygamma([1, 2, 3], x), rtol=1e-14)
    np.testing.assert_array_equal(lax.nextafter(np.array([1.0]), np.array([2.0])),
                                  np.nextafter(1.0, 2.0))
    np.testing.assert_array_equal(lax.is_finite(np.array([1.0, np.inf, np.nan])),
                                  [True, False, False])
    # lax.max/min: elementwise, half the gradient to each side on ties (as JAX).
    g = tg.grad(lambda x, y: tnp.sum(lax.max(x, y)), (0, 1))(np.array([1.0, 2.0, 3.0]),
                                                            np.array([2.0, 2.0, 1.0]))
    np.testing.assert_array_equal(g[0], [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(lax.min(np.array([1.0, 5.0]), np.array([3.0, 2.0])), [1, 2])


def test_round_breaks_ties_away_from_zero_by_default():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, 2.6])
    np.testing.assert_array_equal(lax.round(x), [1.0, 2.0, 3.0, -1.0, -2.0, 0.0, 3.0])
    np.testing.assert_array_equal(lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.rint(x))
    np.testing.assert_array_equal(tg.jit(lax.round)(x), lax.round(x))


def test_bit_operations_match_jax():
    assert lax.population_count(I32).tolist() == [2, 31, 0, 4, 1]
    assert lax.clz(I32).tolist() == [29, 0, 32, 11, 0]
    three, forty = np.int32(3), np.int32(40)
    assert lax.shift_left(I32, three).tolist() == [40, -24, 0, 8388664, 0]
    assert lax.shift_right_logical(I32, np.int32(2)).tolist() == [1, 1073741823, 0, 262145,
                                                                  536870912]
    assert lax.shift_right_arithmetic(I32, np.int32(2)).tolist() == [1, -1, 0, 262145,
                                                                     -536870912]
    assert lax.shift_left(I32, forty).tolist() == [0] * 5
    assert lax.shift_right_arithmetic(I32, forty).tolist() == [0, -1, 0, 0, -1]
    assert lax.bitcast_convert_type(np.array([1.0, -2.5], np.float32), np.int32).tolist() == [
        1065353216, -1071644672]
    assert lax.bitcast_convert_type(np.array([1.0]), np.uint16).tolist() == [[0, 0, 0, 16368]]
    assert lax.bitcast_convert_type(np.array([[0, 0, 0, 16368]], np.uint16),
                                    np.float64).tolist() == [1.0]
    ints = np.array([[5, 3, 1], [7, 7, 2]], np.int32)
    assert lax.reduce_xor(ints, [1]).tolist() == [7, 2]
    assert lax.reduce_and(ints, [0]).tolist() == [5, 3, 0]
    assert lax.reduce_or(ints > 4, [1]).tolist() == [True, True]
    assert lax.bitwise_xor(ints, np.int32(1)).tolist() == (ints ^ 1).tolist()
    assert lax.bitwise_not(ints).tolist() == (~ints).tolist()
    with pytest.raises(TypeError, match="shift_left does not accept dtype float64"):
        lax.shift_left(np.array([1.0]), np.array([1.0]))


def test_bit_operations_under_jit_and_vmap():
    f = lambda x, s: lax.shift_right_logical(lax.population_count(x), s)  # noqa: E731
    s = np.array([0, 1, 2, 0, 1], np.int32)
    want = np.array([f(x, k) for x, k in zip(I32, s)])
    np.testing.assert_array_equal(tg.vmap(f)(I32, s), want)
    np.testing.assert_array_equal(tg.jit(f)(I32, s), want)
    np.testing.assert_array_equal(tg.vmap(lambda x: lax.clz(x), in_axes=1)(I32[None]),
                                  lax.clz(I32)[:, None])


def test_reduce_precision_matches_jax():
    x = np.array([1 / 3, 1e5, 6.1e-5, 1e-40, -2.5e-8, 1 + 3 * 2**-11])
    np.testing.assert_array_equal(lax.reduce_precision(x, 5, 10),
                                  [0.333251953125, np.inf, 0.0, 0.0, -0.0, 1.001953125])
    np.testing.assert_array_equal(
        lax.reduce_precision(x, 8, 7),
        [0.333984375, 99840.0, 6.103515625e-05, 0.0, -2.5029294192790985e-08, 1.0])
    y = np.array([np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(lax.reduce_precision(y, 5, 10), y)
    np.testing.assert_array_equal(tg.jit(lambda x: lax.reduce_precision(x, 8, 7))(x),
                                  lax.reduce_precision(x, 8, 7))
    np.testing.assert_array_equal(tg.grad(lambda x: lax.reduce_precision(x, 5, 10))(0.3), 1.0)


@settings(max_examples=30, deadline=None)
@given(st.floats(-6e4, 6e4, allow_subnormal=False))
def test_reduce_precision_to_float16_is_a_float16_cast(v):
    want = np.float64(np.float16(v))
    if abs(want) < np.finfo(np.float16).tiny:  # float16 keeps subnormals, XLA flushes them
        want = np.copysign(0.0, v)
    assert lax.reduce_precision(np.float64(v), 5, 10) == want


def test_pad_negative_and_interior_matches_jax():
    config = [(1, -1, 1), (-1, 2, 2)]
    np.testing.assert_array_equal(
        lax.pad(M, -1.0, config),
        [[-1.0] * 8, [-1.0, -1.0, 1.0, -1.0, -1.0, 2.0, -1.0, -1.0], [-1.0] * 8])
    weights = np.arange(1.0, 13.0).reshape(3, -1)[:, :1]
    g = tg.grad(lambda x, v: tnp.sum(lax.pad(x, v, config) ** 2 * weights), (0, 1))(M, 2.0)
    np.testing.assert_array_equal(g[0], [[0.0, 10.0, 20.0], [0.0, 0.0, 0.0]])
    assert g[1] == 440.0
    np.testing.assert_array_equal(tg.jit(lambda x: lax.pad(x, 0.0, config))(M),
                                  lax.pad(M, 0.0, config))
    rows = tg.vmap(lambda r: lax.pad(r, 0.0, [(2, -1, 1)]))(M)
    np.testing.assert_array_equal(rows, np.stack([lax.pad(r, 0.0, [(2, -1, 1)]) for r in M]))
    check_grads(lambda x: lax.pad(x, 0.5, config), (M,), 2)
    with pytest.raises(ValueError, match="^length of padding_config must equal"):
        lax.pad(M, 0.0, [(1, 1, 0)])


def test_shape_helpers():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(lax.rev(x, (0, 2)), x[::-1, :, ::-1])
    np.testing.assert_array_equal(lax.iota(np.int32, 4), [0, 1, 2, 3])
    np.testing.assert_array_equal(lax.broadcasted_iota(np.int64, (2, 3), 1), [[0, 1, 2]] * 2)
    np.testing.assert_array_equal(lax.collapse(x, 1), x.reshape(2, 12))
    np.testing.assert_array_equal(lax.collapse(x, 0, 2), x.reshape(6, 4))
    np.testing.assert_array_equal(lax.index_in_dim(x, -1, 1, keepdims=False), x[:, -1])
    np.testing.assert_array_equal(
        lax.index_take(x, (np.array([0, 1, -1]), np.array([2, 0, 5])), (0, 2)),
        [[2.0, 6.0, 10.0], [12.0, 16.0, 20.0], [13.0, 17.0, 21.0]])
    np.testing.assert_array_equal(lax.tile(M, (2, 1)), np.tile(M, (2, 1)))
    parts = lax.split(x, (1, 3), axis=2)
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 3)]
    np.testing.assert_array_equal(lax.stack(lax.unstack(x, 1), 1), x)
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert lax.broadcast_to_rank(M, 4).shape == (1, 1, 2, 3)
    assert lax.dtype(1.0) == np.float64 and lax.dtype(np.int32(1)) == np.int32
    assert lax.empty((2, 3), np.float32).shape == (2, 3)
    barrier = lax.optimization_barrier((M, 1))
    np.testing.assert_array_equal(barrier[0], M)
    assert barrier[1] == 1
    a, b = np.arange(12.0).reshape(2, 2, 3), np.arange(18.0).reshape(2, 3, 3)
    np.testing.assert_allclose(lax.batch_matmul(a, b), a @ b)
    np.testing.assert_array_equal(lax.select_n(np.array([0, 2, 1]), -M[0], M[0], 10 * M[0]),
                                  [-0.0, 10.0, 2.0])
    np.testing.assert_array_equal(lax.select_n(np.array([True, False]), M[0, :2], M[1, :2]),
                                  [3.0, 1.0])


def test_top_k_and_sort_key_val():
    v = np.array([[3.0, 1, 4, 1, 5], [2, 7, 1, 8, 2]])
    vals, idx = lax.top_k(v, 3)
    np.testing.assert_array_equal(vals, [[5.0, 4.0, 3.0], [8.0, 7.0, 2.0]])
    np.testing.assert_array_equal(idx, [[4, 2, 0], [3, 1, 0]])
    assert idx.dtype == np.int32
    g = tg.grad(lambda v: tnp.sum(lax.top_k(v, 2)[0] * np.array([1.0, 10.0])))(v[0])
    np.testing.assert_array_equal(g, [0, 0, 10, 0, 1])
    k, vv = lax.sort_key_val(np.array([3, 1, 2]), np.array([30.0, 10.0, 20.0]))
    np.testing.assert_array_equal(k, [1, 2, 3])
    np.testing.assert_array_equal(vv, [10, 20, 30])
    np.testing.assert_array_equal(tg.vmap(lambda r: lax.top_k(r, 2)[1])(v), idx[:, :2])


def test_argmax_argmin_index_dtype():
    v = np.array([[3.0, 1, 4], [2, 7, 1]])
    out = lax.argmax(v, 1, np.int32)
    assert out.dtype == np.int32 and out.tolist() == [2, 1]
    assert lax.argmin(v, 0, np.int64).tolist() == [1, 0, 1]
    assert tg.jit(lambda v: lax.argmax(v, 0, np.int32))(v).tolist() == [0, 1, 0]


def test_cumlogsumexp_matches_jax():
    x = np.array([[1.0, -3, 2], [0.5, 4, -1]])
    want = [[2.318175429247454, 2.0067153484891183, 2.0],
            [4.03626956512478, 4.006715348489118, -1.0]]
    np.testing.assert_allclose(lax.cumlogsumexp(x, axis=1, reverse=True), want, rtol=1e-14)
    g = tg.grad(lambda x: tnp.sum(lax.cumlogsumexp(x, axis=1, reverse=True)
                                  * np.array([1.0, 2, 3])))(x)
    np.testing.assert_allclose(g, [[0.2676231541498623, 0.01828739089824263, 5.714089454951894],
                                   [0.029121761537478384, 2.950994593298289, 3.0198836451642315]],
                               rtol=1e-13)
    big = np.array([1000.0, 1000.0, -1000.0])
    np.testing.assert_allclose(lax.cumlogsumexp(big), [1000.0, 1000 + np.log(2), 1000 + np.log(2)])


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 17), st.booleans(), st.integers(0, 1))
def test_associative_scan_is_a_sequential_scan(n, reverse, axis):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, 3) if axis == 0 else (3, n))
    b = rng.normal(size=a.shape)

    def affine(x, y):  # composition of maps t -> a t + b (associative, not commutative)
        return (x[0] * y[0], y[0] * x[1] + y[1])
    got = lax.associative_scan(affine, (a, b), reverse=reverse, axis=axis)
    want_a, want_b = np.empty_like(a), np.empty_like(b)
    order = range(n - 1, -1, -1) if reverse else range(n)
    acc = None
    for i in order:
        sl = (i, slice(None)) if axis == 0 else (slice(None), i)
        cur = (a[sl], b[sl])
        acc = cur if acc is None else affine(acc, cur)
        want_a[sl], want_b[sl] = acc
    np.testing.assert_allclose(got[0], want_a, rtol=1e-12)
    np.testing.assert_allclose(got[1], want_b, rtol=1e-12, atol=1e-12)


def test_associative_scan_grad_jit_vmap():
    x = np.array([0.3, -1.2, 2.0, 0.7, 1.1])
    f = lambda x: lax.associative_scan(lax.mul, x)  # noqa: E731
    np.testing.assert_allclose(f(x), np.cumprod(x), rtol=1e-14)
    np.testing.assert_allclose(tg.jit(f)(x), np.cumprod(x), rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(f)(np.stack([x, 2 * x])),
                               np.stack([np.cumprod(x), np.cumprod(2 * x)]), rtol=1e-14)
    check_grads(f, (x,), 2)
    with pytest.raises(ValueError, match="same first dimension"):
        lax.associative_scan(lambda a, b: a, (np.ones(3), np.ones(4)))


def test_enums_are_accepted():
    assert lax.Precision("highest") is lax.Precision.HIGHEST
    assert lax.Precision.DEFAULT.name == "DEFAULT"
    assert lax.GatherScatterMode.from_any("clip") is lax.GatherScatterMode.CLIP
    assert lax.GatherScatterMode.from_any(None) is lax.GatherScatterMode.FILL_OR_DROP
    assert lax.DotAlgorithmPreset.F64_F64_F64.name == "F64_F64_F64"
    assert lax.DotAlgorithm(np.float32, np.float32, np.float32).lhs_component_count == 1
    x = np.arange(4.0).astype(complex)
    np.testing.assert_allclose(lax.fft(x, lax.FftType.FFT, (4,)), np.fft.fft(x))
    np.testing.assert_allclose(lax.dot(M, M.T, precision=lax.Precision.HIGHEST), M @ M.T)


# ---------------------------------------------------------------------------
# gather / scatter (numbers from jax 0.10.2, x64)

G = np.arange(24.0).reshape(2, 3, 4)
GDN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0, 2),
                                 start_index_map=(0, 2))
SDN = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0, 2),
                                  scatter_dims_to_operand_dims=(0, 2))
SI = np.array([[0, 1], [1, 3], [0, 1], [1, 9]])  # a duplicate and an out-of-bounds window
SU = np.array([[1.0, 2, 3], [10, 20, 30], [100, 200, 300], [5, 5, 5]])


def test_gather_modes_match_jax():
    idx = np.array([[0, 1], [1, 3], [5, -2]])
    np.testing.assert_array_equal(lax.gather(G, idx, GDN, (1, 3, 1)),
                                  [[1.0, 5.0, 9.0], [15.0, 19.0, 23.0], [12.0, 16.0, 20.0]])
    np.testing.assert_array_equal(lax.gather(G, idx, GDN, (1, 3, 1), mode="fill"),
                                  [[1.0, 5.0, 9.0], [15.0, 19.0, 23.0], [np.nan] * 3])
    dn = lax.GatherDimensionNumbers(offset_dims=(0, 2), collapsed_slice_dims=(1,),
                                    start_index_map=(1,))
    np.testing.assert_array_equal(lax.gather(G, np.array([[2], [0]]), dn, (2, 1, 2)),
                                  [[[8.0, 9.0], [0.0, 1.0]], [[20.0, 21.0], [12.0, 13.0]]])
    batched = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(1,),
                                         start_index_map=(1,), operand_batching_dims=(0,),
                                         start_indices_batching_dims=(0,))
    np.testing.assert_array_equal(lax.gather(G, np.array([[2], [0]]), batched, (1, 1, 4)),
                                  [G[0, 2], G[1, 0]])


def test_gather_derivatives_vmap_jit():
    idx = np.array([[0, 1], [1, 3], [1, 0]])
    f = lambda x: lax.gather(x, idx, GDN, (1, 3, 1)) ** 2  # noqa: E731
    check_grads(f, (G / 10,), 2)
    xs = np.stack([G, -G])
    np.testing.assert_array_equal(tg.vmap(f)(xs), np.stack([f(G), f(-G)]))
    np.testing.assert_array_equal(tg.jit(f)(G), f(G))
    h = lambda i: lax.gather(G, i, GDN, (1, 3, 1))  # noqa: E731
    np.testing.assert_array_equal(tg.vmap(h)(np.stack([idx, idx[::-1]])),
                                  np.stack([h(idx), h(idx[::-1])]))


@pytest.mark.parametrize("fn, mode, want_last", [
    ("scatter_add", None, [25.0, 39.0, 53.0]), ("scatter_add", "clip", [30.0, 44.0, 58.0]),
    ("scatter_max", None, [15.0, 20.0, 30.0]), ("scatter_mul", None, [150.0, 380.0, 690.0]),
    ("scatter_mul", "clip", [750.0, 1900.0, 3450.0])])
def test_scatters_match_jax(fn, mode, want_last):
    out = getattr(lax, fn)(G, SI, SU, SDN, mode=mode)
    np.testing.assert_array_equal(out[1, :, 3], want_last)
    first = {"scatter_add": [102.0, 207.0, 312.0], "scatter_max": [100.0, 200.0, 300.0],
             "scatter_mul": [100.0, 2000.0, 8100.0]}[fn]
    np.testing.assert_array_equal(out[0, :, 1], first)
    untouched = np.ones(G.shape, bool)
    untouched[0, :, 1] = untouched[1, :, 3] = False
    np.testing.assert_array_equal(out[untouched], G[untouched])
    np.testing.assert_array_equal(tg.jit(lambda x, u: getattr(lax, fn)(x, SI, u, SDN, mode=mode))
                                  (G, SU), out)


def test_scatter_set_sub_apply_and_derivatives():
    out = lax.scatter(G, SI[1:], SU[1:], SDN)
    np.testing.assert_array_equal(out[1, :, 3], [10.0, 20.0, 30.0])
    np.testing.assert_array_equal(out[0, :, 1], [100.0, 200.0, 300.0])
    np.testing.assert_array_equal(lax.scatter_sub(G, SI, SU, SDN),
                                  lax.scatter_add(G, SI, -SU, SDN))
    applied = lax.scatter_apply(G, SI[:3], lambda v: v * 10 + 1, SDN, update_shape=(3, 3))
    want = G.copy()
    want[0, :, 1] = (want[0, :, 1] * 10 + 1) * 10 + 1  # listed twice: applied twice (as XLA)
    want[1, :, 3] = want[1, :, 3] * 10 + 1
    np.testing.assert_array_equal(applied, want)
    f = lambda x, u: lax.scatter_add(x, SI, u, SDN) ** 2  # noqa: E731
    check_grads(f, (G / 10, SU / 10), 2)
    us = np.stack([SU, 2 * SU])
    np.testing.assert_array_equal(tg.vmap(lambda u: lax.scatter(G, SI[1:], u, SDN))(us[:, 1:]),
                                  np.stack([lax.scatter(G, SI[1:], u, SDN) for u in us[:, 1:]]))
    with pytest.raises(TypeError, match="^Bounds of the scatter dimensions of updates"):
        lax.scatter_add(G, SI, SU[:2], SDN)


def test_remaining_cpu_trivial_names():
    ints = np.array([np.iinfo(np.int64).min, -7, 3, np.iinfo(np.int64).max], np.int64)
    other = np.array([np.iinfo(np.int64).min, 2**40 + 3, -(2**62), np.iinfo(np.int64).max])
    want = [(int(a) * int(b)) >> 64 for a, b in zip(ints, other)]  # exact, Python integers
    assert lax.mulhi(ints, other).tolist() == want
    u = np.array([2**32 - 1, 12345], np.uint32)
    assert lax.mulhi(u, u).tolist() == [(int(a) * int(a)) >> 32 for a in u]
    vals, idx = lax.approx_max_k(np.array([3.0, 1, 4, 1, 5]), 2)
    assert vals.tolist() == [5.0, 4.0] and idx.tolist() == [4, 2]
    vals, idx = lax.approx_min_k(np.array([3.0, 1, 4, 1, 5]), 2)
    assert vals.tolist() == [1.0, 1.0] and idx.tolist() == [1, 3]
    assert lax.platform_dependent(2.0, cpu=lambda x: x + 1, default=lambda x: x) == 3.0
    assert lax.composite(tnp.sin, "my.sin")(0.0) == 0.0
    assert lax.broadcast_like(np.arange(3), np.zeros((2, 3))).shape == (2, 3)


def test_lax_linalg_signatures():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    spd = a @ a.T + 4 * np.eye(4)
    np.testing.assert_allclose(lax.linalg.cholesky(spd), np.linalg.cholesky(spd), rtol=1e-13)
    v, w = lax.linalg.eigh(spd)  # eigenvectors first, as jax.lax.linalg
    np.testing.assert_allclose(spd @ v, v * w, atol=1e-12)
    lu, piv, perm = lax.linalg.lu(a)
    assert piv.dtype == np.int32 and perm.dtype == np.int32
    lower = np.tril(lu, -1) + np.eye(4)
    np.testing.assert_allclose(a[perm], lower @ np.triu(lu), atol=1e-12)
    q, r = lax.linalg.qr(a)
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    b = rng.normal(size=(3, 4))
    t = np.tril(a) + 4 * np.eye(4)
    x = lax.linalg.triangular_solve(t, b, lower=True)  # default: x @ a = b
    np.testing.assert_allclose(x @ t, b, atol=1e-12)
    x = lax.linalg.triangular_solve(t, b.T, left_side=True, lower=True, transpose_a=True)
    np.testing.assert_allclose(t.T @ x, b.T, atol=1e-12)
    check_grads(lambda t: lax.linalg.triangular_solve(t, b, lower=True), (t,), 1)


def test_sort_several_operands_and_dot_general_keywords():
    k1 = np.array([[2, 1, 2, 1, 0], [1, 1, 0, 0, 1]])
    k2 = np.array([[5.0, 3, 1, 4, 2], [1, 2, 3, 4, 5]])
    v = np.arange(10.0).reshape(2, 5)
    a, b, c = lax.sort((k1, k2, v), num_keys=2)  # jax 0.10.2's numbers
    assert a.tolist() == [[0, 1, 1, 2, 2], [0, 0, 1, 1, 1]]
    assert b.tolist() == [[2.0, 3.0, 4.0, 1.0, 5.0], [3.0, 4.0, 1.0, 2.0, 5.0]]
    assert c.tolist() == [[4.0, 1.0, 3.0, 2.0, 0.0], [7.0, 8.0, 5.0, 6.0, 9.0]]
    g = tg.grad(lambda v: tnp.sum(lax.sort((k1[0], v))[1] * np.arange(5.0)))(v[0])
    np.testing.assert_array_equal(g, [3.0, 1.0, 4.0, 2.0, 0.0])
    out = lax.dot_general(np.ones((2, 3)), np.ones(3), (((1,), (0,)), ((), ())),
                          precision=lax.Precision.HIGHEST, preferred_element_type=np.float32)
    assert out.dtype == np.float32 and out.tolist() == [3.0, 3.0]
