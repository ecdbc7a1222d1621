"""tangentia.lax against JAX (x64), continuing tests/test_jax_suite_fixes_lax2.py: what
JAX's lax_test.py and lax_autodiff_test.py (run through tests/external/run_jax_tests.py)
still found.  Values compared with JAX's, eagerly, under jit and vmap (against a loop);
derivatives against JAX's and finite differences; errors begin with JAX's wording."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

# ---------------------------------------------------------------------------
# lax.rng_bit_generator: XLA's Philox and Threefry with XLA's key/counter layout

# (key, shape, dtype): the counter carrying into the next word, both key forms, the shapes
# that exercise XLA's Threefry split (an even dimension, none, rank 0, zero size) and every
# output width.  (All 840 combinations of 5 keys, 14 shapes, 4 dtypes and the 3 algorithms
# were checked equal once; JAX compiles each, so the test keeps these.)
RBG_CASES = [(np.array([3, 1, 0xFFFFFFFF, 0xFFFFFFFF], np.uint32), (3, 3), np.uint32),
             (np.array([2**64 - 1, 2**64 - 2], np.uint64), (3, 1, 5), np.uint64),
             (np.array([3, 1, 4, 2], np.uint32), (), np.uint8),
             (np.array([1, 2], np.uint64), (3, 2), np.uint16),
             (np.array([3, 1, 4, 2], np.uint32), (0,), np.uint32)]


@pytest.mark.parametrize("algorithm", list(lax.RandomAlgorithm))
def test_rng_bit_generator_bits_are_jax(algorithm):
    for key, shape, dtype in RBG_CASES:
        want_key, want = jax.lax.rng_bit_generator(
            key, shape, dtype, jax.lax.RandomAlgorithm(int(algorithm)))
        got_key, got = lax.rng_bit_generator(key, shape, dtype, algorithm)
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        assert got_key.dtype == want_key.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{key} {shape}")
        np.testing.assert_array_equal(got_key, want_key, err_msg=f"{key} {shape}")


@pytest.mark.parametrize("algorithm", list(lax.RandomAlgorithm))
def test_rng_bit_generator_jit_and_vmap(algorithm):
    keys = np.arange(12, dtype=np.uint32).reshape(3, 4) * np.uint32(0x9E3779B9)

    def f(k):
        return lax.rng_bit_generator(k, (3, 2), np.uint64, algorithm)

    for ks in (keys, keys.view(np.uint64)):
        loop = [f(k) for k in ks]
        for g in (tg.vmap(f), tg.jit(tg.vmap(f))):
            new_keys, bits = g(ks)
            for i in range(3):
                np.testing.assert_array_equal(new_keys[i], loop[i][0])
                np.testing.assert_array_equal(bits[i], loop[i][1])
        jk, jb = tg.jit(f)(ks[1])
        np.testing.assert_array_equal(jk, loop[1][0])
        np.testing.assert_array_equal(jb, loop[1][1])
    # a vmap of vmaps: each key as alone
    nk, b = tg.vmap(tg.vmap(f))(keys.reshape(3, 1, 4))
    loop = [f(k) for k in keys]
    np.testing.assert_array_equal(b[:, 0], np.stack([lb for _, lb in loop]))
    np.testing.assert_array_equal(nk[:, 0], np.stack([lk for lk, _ in loop]))


def test_rng_bit_generator_errors():
    key = np.array([1, 2, 3, 4], np.uint32)
    with pytest.raises(TypeError, match="^rng_bit_generator: unsupported dtype int32"):
        lax.rng_bit_generator(key, (3,), np.int32)
    with pytest.raises(TypeError, match="^rng_bit_generator: unsupported dtype float32"):
        lax.rng_bit_generator(key, (3,), np.float32)
    for bad in (np.array([1, 2, 3], np.uint32), np.array([1, 2, 3, 4], np.int32),
                np.array([1, 2, 3, 4], np.uint64), 3.0):
        with pytest.raises(TypeError, match="rng_bit_generator: argument 'key' must be"):
            lax.rng_bit_generator(bad, (3,))
    with pytest.raises(TypeError, match="argument 'algorithm'"):
        lax.rng_bit_generator(key, (3,), algorithm=7)
    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
        lax.rng_bit_generator(key, (2.5,))


# ---------------------------------------------------------------------------
# lax.conv_general_dilated_local: one kernel per output position


def _local_case(rng, n, specs, padding, lhs_dilation=None):
    lhs_spec, rhs_spec, out_spec = specs
    lhs = np.transpose(rng.normal(size=(2, 3, 7, 6)[:n + 2]),
                       ["NCHW".index(c) for c in lhs_spec])
    fs = (2, 3)[:n]
    kw = dict(window_strides=(1, 2)[:n], padding=padding, filter_shape=fs,
              rhs_dilation=(2, 1)[:n], lhs_dilation=lhs_dilation, dimension_numbers=specs)
    patches = jax.lax.conv_general_dilated_patches(
        lhs, fs, kw["window_strides"], padding, lhs_dilation, kw["rhs_dilation"], specs)
    sizes = {c: patches.shape[out_spec.index(c)] for c in out_spec if c not in "NC"}
    sizes.update(O=4, I=3 * int(np.prod(fs)))
    rhs = rng.normal(size=[sizes[c] for c in rhs_spec])
    return lhs, rhs, kw


@pytest.mark.parametrize("n,specs,padding,lhs_dilation", [
    (1, ("NCH", "OIH", "NCH"), "SAME", None),
    (1, ("HCN", "HIO", "CHN"), "VALID", None),
    (2, ("NCHW", "OIHW", "NCHW"), "SAME", None),
    (2, ("NHWC", "HWIO", "NHWC"), "VALID", None),
    (2, ("CWNH", "WOHI", "HNWC"), [(1, 2), (0, 1)], (1, 2)),   # W before H: the order
])
def test_conv_general_dilated_local_matches_jax(n, specs, padding, lhs_dilation):
    rng = np.random.default_rng(n)
    lhs, rhs, kw = _local_case(rng, n, specs, padding, lhs_dilation)
    want = jax.lax.conv_general_dilated_local(lhs, rhs, **kw)

    def f(a, b):
        return lax.conv_general_dilated_local(a, b, **kw)

    for g in (f, tg.jit(f)):
        got = g(lhs, rhs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # vmap over lhs against a loop
    lhss = np.stack([lhs, 2 * lhs - 1])
    np.testing.assert_allclose(tg.vmap(f, (0, None))(lhss, rhs),
                               np.stack([f(a, rhs) for a in lhss]), rtol=1e-12)
    # gradients in both operands: the map is linear in each, so <grad, t> is exactly
    # loss(x + t) - loss(x)
    ct = rng.normal(size=want.shape)

    def loss(a, b):
        return (lax.conv_general_dilated_local(a, b, **kw) * ct).sum()

    ga, gb = tg.grad(loss, argnums=(0, 1))(lhs, rhs)
    ta, tb = rng.normal(size=lhs.shape), rng.normal(size=rhs.shape)
    np.testing.assert_allclose((ga * ta).sum(), loss(lhs + ta, rhs) - loss(lhs, rhs),
                               rtol=1e-9)
    np.testing.assert_allclose((gb * tb).sum(), loss(lhs, rhs + tb) - loss(lhs, rhs),
                               rtol=1e-9)


def test_conv_general_dilated_local_is_a_tiled_convolution():
    # every position's kernel the same: the shared convolution (as JAX's own test checks)
    rng = np.random.default_rng(1)
    lhs = rng.normal(size=(2, 3, 7, 6))
    kernel = rng.normal(size=(4, 3, 2, 3))
    conv = lax.conv_general_dilated(lhs, kernel, (1, 2), "SAME", rhs_dilation=(2, 1))
    local = np.broadcast_to(kernel.reshape(4, -1, 1, 1), (4, 18) + conv.shape[2:])
    got = lax.conv_general_dilated_local(lhs, local, (1, 2), "SAME", (2, 3),
                                         rhs_dilation=(2, 1))
    np.testing.assert_allclose(got, conv, rtol=1e-12)


def test_conv_general_dilated_local_errors():
    lhs = np.ones((1, 2, 5))
    with pytest.raises(TypeError, match="filter_shape must have one size per spatial"):
        lax.conv_general_dilated_local(lhs, np.ones((3, 4, 4)), (1,), "VALID", (2, 2))
    with pytest.raises(TypeError, match=r"C \* prod\(filter_shape\) = 4"):
        lax.conv_general_dilated_local(lhs, np.ones((3, 5, 4)), (1,), "VALID", (2,))


# ---------------------------------------------------------------------------
# dot_general's precision is kept through differentiation and batching, as JAX's


@pytest.mark.parametrize("precision,shown", [
    (lax.Precision.HIGHEST, "precision=(Precision.HIGHEST, Precision.HIGHEST)"),
    ("high", "precision=(Precision.HIGH, Precision.HIGH)"),
    ((lax.Precision.HIGH, "default"), "precision=(Precision.HIGH, Precision.DEFAULT)"),
])
def test_dot_general_precision_is_carried(precision, shown):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(3, 5, 2)), rng.normal(size=(2, 4, 5))
    dn = (([2], [0]), ([1], [2]))

    def f(a, b):
        return lax.dot_general(a, b, dn, precision=precision)

    out, pullback = tg.vjp(f, x, y)
    text = str(tg.make_jaxpr(pullback)(out))
    assert text.count("dot_general") == 2 and text.count(shown) == 2, text
    assert shown in str(tg.make_jaxpr(tg.vmap(f, (0, None)))(np.stack([x, x]), y))
    assert shown in str(tg.make_jaxpr(lambda a: tg.jvp(lambda u: f(u, y), (a,), (a,)))(x))
    # the numbers are JAX's, and so are the derivatives
    np.testing.assert_allclose(out, jax.lax.dot_general(x, y, dn), rtol=1e-13)
    ct = rng.normal(size=out.shape)
    for got, want in zip(pullback(ct), jax.vjp(lambda a, b: jax.lax.dot_general(a, b, dn),
                                               x, y)[1](ct)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(tg.jit(f)(x, y), out, rtol=1e-13)


def test_dot_without_precision_stages_as_before():
    text = str(tg.make_jaxpr(lax.dot)(np.ones((2, 3)), np.ones((3, 4))))
    assert "precision" not in text


def test_dot_general_precision_errors_as_jax():
    x = np.ones((2, 3))
    for bad in ("fastest-ish", 3, (lax.Precision.HIGH,)):
        with pytest.raises(ValueError, match="^Precision argument must be one of:"):
            lax.dot(x, x.T, precision=bad)
        with pytest.raises(ValueError, match="^Precision argument must be one of:"):
            jax.lax.dot(x, x.T, precision=bad)


# ---------------------------------------------------------------------------
# expm1's derivative is exp(x): expm1(x) + 1 rounded again, and was 0 below x = -17 (float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_expm1_derivative_is_exp(dtype):
    x = np.arange(-80.0, 80.0, 1.0, dtype=dtype)
    exact = np.exp(x.astype(np.float64))            # the true derivative
    for f in (tg.vmap(tg.grad(lax.expm1)), tg.jit(tg.vmap(tg.grad(lax.expm1)))):
        got = np.asarray(f(x))
        assert got.dtype == dtype
        # NumPy's float32 exp is within about an ulp (1.34e-7 relative at -10)
        np.testing.assert_allclose(got, exact, rtol=2 * np.finfo(dtype).eps, atol=0)
    # JAX's default rule is still expm1(x) + 1 (0 below -17 in float32); with
    # accuracy=HIGHEST it is exp(x), which is the derivative
    want = np.asarray(jax.vmap(jax.grad(
        lambda v: jax.lax.expm1(v, accuracy=jax.lax.AccuracyMode.HIGHEST)))(x))
    np.testing.assert_allclose(np.asarray(tg.vmap(tg.grad(lax.expm1))(x)), want,
                               rtol=2 * np.finfo(dtype).eps, atol=0)   # XLA's exp vs NumPy's
    # second order too
    np.testing.assert_allclose(tg.grad(tg.grad(lax.expm1))(dtype(-30.0)), np.exp(-30.0),
                               rtol=np.finfo(dtype).eps)


# ---------------------------------------------------------------------------
# gather/scatter: XLA's checks of the dimension numbers, in its order, with JAX's words

GDN, SDN = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers


def _gather_case(operand_shape=(10, 9, 8, 7, 6), indices_shape=(5, 4, 3, 2, 3),
                 offset_dims=(4,), collapsed=(1, 3), start_index_map=(1, 3, 4),
                 operand_batching=(0, 2), indices_batching=(0, 2),
                 slice_sizes=(1, 1, 1, 1, 6)):
    return (operand_shape, indices_shape,
            dict(offset_dims=offset_dims, collapsed_slice_dims=collapsed,
                 start_index_map=start_index_map, operand_batching_dims=operand_batching,
                 start_indices_batching_dims=indices_batching), slice_sizes)


GATHER_BAD = [
    dict(offset_dims=(5,)), dict(offset_dims=(1, 0), slice_sizes=(1, 1, 1, 7, 6),
                                 collapsed=(1,)),
    dict(start_index_map=(1, 3)), dict(start_index_map=(1, 3, 9)),
    dict(start_index_map=(1, 3, 3)), dict(collapsed=(3, 1)), dict(collapsed=(1, 9)),
    dict(operand_batching=(2, 0)), dict(operand_batching=(0, 0)),
    dict(operand_batching=(0, 9)), dict(collapsed=(1, 2)),
    dict(start_index_map=(0, 3, 4)), dict(indices_batching=(0, 0)),
    dict(indices_batching=(0, 7)), dict(indices_batching=(0, 4)),
    dict(indices_batching=(0,)), dict(indices_batching=(1, 2)),
    dict(slice_sizes=(1, 1, 1, 1)), dict(offset_dims=(), slice_sizes=(1, 1, 1, 1, 6)),
    dict(slice_sizes=(1, 1, 1, 1, 7)), dict(slice_sizes=(1, 2, 1, 1, 6)),
    dict(slice_sizes=(2, 1, 1, 1, 6)),
]


@pytest.mark.parametrize("i", range(len(GATHER_BAD)))
def test_gather_dimension_number_errors_begin_with_jax(i):
    oshape, ishape, dn, sizes = _gather_case(**GATHER_BAD[i])
    x, idx = np.zeros(oshape), np.zeros(ishape, np.int32)
    with pytest.raises(TypeError) as want:
        jax.eval_shape(lambda: jax.lax.gather(x, idx, jax.lax.GatherDimensionNumbers(**dn),
                                              sizes))
    with pytest.raises(TypeError) as got:
        lax.gather(x, idx, GDN(**dn), sizes)
    assert str(got.value).startswith(str(want.value)), (str(got.value), str(want.value))


def test_gather_of_no_indices_skips_the_window_bound():
    # no index vectors, no windows: a window larger than the operand is not an error
    x, idx = np.zeros((0, 3)), np.zeros((0, 1), np.int32)
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    got = lax.gather(x, idx, dn, (1, 3))
    want = jax.lax.gather(x, idx, jax.lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 3))
    assert got.shape == want.shape == (0, 3)


def _scatter_case(operand_shape=(10, 9, 8, 7, 6), indices_shape=(10, 4, 8, 2),
                  updates_shape=(10, 4, 8, 6), window=(3,), inserted=(1, 3),
                  to_operand=(1, 3), operand_batching=(0, 2), indices_batching=(0, 2)):
    return (operand_shape, indices_shape, updates_shape,
            dict(update_window_dims=window, inserted_window_dims=inserted,
                 scatter_dims_to_operand_dims=to_operand, operand_batching_dims=operand_batching,
                 scatter_indices_batching_dims=indices_batching))


SCATTER_BAD = [
    dict(updates_shape=(10, 4, 8, 6, 1)), dict(window=(4,)),
    dict(inserted=(3, 1)), dict(inserted=(1, 1)), dict(inserted=(1, 9)),
    dict(operand_batching=(2, 0)), dict(operand_batching=(0, 0)),
    dict(operand_batching=(0, 9)), dict(inserted=(1, 2)), dict(to_operand=(0, 3)),
    dict(indices_batching=(0, 0)), dict(indices_batching=(0, 7)),
    dict(indices_batching=(0, 3)), dict(indices_batching=(0,)), dict(indices_batching=(1, 2)),
    dict(updates_shape=(9, 4, 8, 6)), dict(window=(3,), inserted=(1,), to_operand=(1,),
                                           indices_shape=(10, 4, 8, 1)),
    dict(to_operand=(1,)), dict(to_operand=(1, 9)), dict(to_operand=(1, 1)),
    dict(updates_shape=(10, 4, 8, 7)), dict(updates_shape=(10, 5, 8, 6)),
]


@pytest.mark.parametrize("i", range(len(SCATTER_BAD)))
def test_scatter_dimension_number_errors_begin_with_jax(i):
    oshape, ishape, ushape, dn = _scatter_case(**SCATTER_BAD[i])
    x, idx, upd = np.zeros(oshape), np.zeros(ishape, np.int32), np.zeros(ushape)
    with pytest.raises(TypeError) as want:
        jax.eval_shape(lambda: jax.lax.scatter_add(x, idx, upd,
                                                   jax.lax.ScatterDimensionNumbers(**dn)))
    with pytest.raises(TypeError) as got:
        lax.scatter_add(x, idx, upd, SDN(**dn))
    assert str(got.value).startswith(str(want.value)), (str(got.value), str(want.value))


def test_gather_scatter_with_batching_dims_still_match_jax():
    rng = np.random.default_rng(0)
    oshape, ishape, dn, sizes = _gather_case()
    x = rng.normal(size=oshape)
    idx = np.stack([rng.integers(0, n, size=(5, 4, 3, 2)) for n in (9, 7, 6)], -1)
    x, idx = x[:5, :, :3], idx.astype(np.int32)         # batching sizes agree: 5 and 3
    want = jax.lax.gather(x, idx, jax.lax.GatherDimensionNumbers(**dn), sizes)
    np.testing.assert_array_equal(lax.gather(x, idx, GDN(**dn), sizes), want)
    oshape, ishape, ushape, sdn = _scatter_case()
    x, upd = rng.normal(size=oshape), rng.normal(size=ushape)
    idx = np.stack([rng.integers(0, n, size=ishape[:-1]) for n in (9, 7)], -1).astype(np.int32)
    want = jax.lax.scatter_add(x, idx, upd, jax.lax.ScatterDimensionNumbers(**sdn))
    np.testing.assert_allclose(lax.scatter_add(x, idx, upd, SDN(**sdn)), want, rtol=1e-13)


# ---------------------------------------------------------------------------
# Ops that JAX refuses for complex (and bool) operands raise JAX's TypeError: NumPy would
# have returned a number (an ordering of complex values, a remainder of booleans)


@pytest.mark.parametrize("name", ["rem", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("args", [(2 + 3j, 4 + 5j), (np.complex64(1j), np.complex64(2)),
                                  (True, False)])
def test_ops_refuse_the_dtypes_jax_refuses(name, args):
    try:
        want = getattr(jax.lax, name)(*args)
    except TypeError as e:
        with pytest.raises(TypeError) as got:
            getattr(lax, name)(*args)
        assert str(got.value) == str(e)
        with pytest.raises(TypeError):
            tg.jit(getattr(lax, name))(*args)
    else:
        for f in (getattr(lax, name), tg.jit(getattr(lax, name))):
            got = f(*args)
            assert np.asarray(got).dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_population_count_refuses_bool():
    for x in (True, np.array([True, False])):
        with pytest.raises(TypeError, match="^population_count does not accept dtype bool"):
            lax.population_count(x)
        with pytest.raises(TypeError, match="^population_count does not accept dtype bool"):
            jax.lax.population_count(x)
    x = np.array([0, 7, -1, 255], np.int16)
    np.testing.assert_array_equal(lax.population_count(x), jax.lax.population_count(x))


# ---------------------------------------------------------------------------
# pad, split and squeeze: JAX's errors, in JAX's order


@pytest.mark.parametrize("call", [
    lambda L: L.pad(np.zeros(2), np.zeros(2), [(0, 0, 0)]),
    lambda L: L.pad(np.zeros(2), 0.0, [(0, 1, 0), (0, 1, 0)]),
    lambda L: L.pad(np.zeros(2), 0.0, [(0, 1, -1)]),
    lambda L: L.pad(np.zeros(2), 0.0, [(-3, 0, 0)]),
    lambda L: L.pad(np.zeros(2), 0.0, [(-4, 0, 1)]),
    lambda L: L.split(np.arange(5), [-1, 6]),
    lambda L: L.split(np.arange(5), [2, 2]),
    lambda L: L.split(np.arange(5), (), axis=1),
    lambda L: L.squeeze(np.ones((1, 2, 3)), (1,)),
])
def test_shape_errors_begin_with_jax(call):
    with pytest.raises(ValueError) as want:
        call(jax.lax)
    with pytest.raises(ValueError) as got:
        call(lax)
    assert str(got.value).startswith(str(want.value)), (str(got.value), str(want.value))


def test_pad_split_values_unchanged():
    x = np.arange(6.0).reshape(2, 3)
    for cfg in ([(1, -1, 1), (0, 2, 0)], [(-1, 0, 0), (2, -3, 2)]):
        np.testing.assert_array_equal(lax.pad(x, -1.0, cfg), jax.lax.pad(x, -1.0, cfg))
    for got, want in zip(lax.split(x, (1, 2), axis=-1), jax.lax.split(x, (1, 2), axis=-1)):
        np.testing.assert_array_equal(got, want)
