"""tangentia.numpy against JAX where JAX's own lax_numpy_test.py found gaps (run through
tests/external/run_jax_tests.py): static-size nonzero/argwhere/flatnonzero/where under jit,
dtype= of the stack family, trace's dtype, take_along_axis's out-of-bounds modes, repeat
with per-entry counts and total_repeat_length, and the smaller keyword gaps.  Every value
is compared with JAX (x64), eagerly and under jit."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

X = np.array([[0, 1, 2], [3, 0, 0]])
F = np.arange(12.0).reshape(3, 4)


def _same(a, b):
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    assert len(a) == len(b)
    for u, v in zip(a, b):
        u, v = np.asarray(u), np.asarray(v)
        assert u.shape == v.shape, (u.shape, v.shape)
        np.testing.assert_allclose(u, v, equal_nan=True)


@pytest.mark.parametrize("size, fill", [(5, None), (5, -1), (5, (-1, -2)), (2, None), (0, 7)])
def test_nonzero_static_size(size, fill):
    want = jnp.nonzero(X, size=size, fill_value=fill)
    _same(tnp.nonzero(X, size=size, fill_value=fill), want)
    _same(tg.jit(lambda x: tnp.nonzero(x, size=size, fill_value=fill))(X), want)
    _same(tg.jit(lambda x: tnp.where(x, size=size, fill_value=fill))(X), want)


@pytest.mark.parametrize("size", [1, 3, 6])
def test_argwhere_flatnonzero_static_size(size):
    _same(tg.jit(lambda x: tnp.argwhere(x, size=size, fill_value=-1))(X),
          jnp.argwhere(X, size=size, fill_value=-1))
    _same(tnp.argwhere(X, size=size), jnp.argwhere(X, size=size))
    _same(tg.jit(lambda x: tnp.flatnonzero(x, size=size, fill_value=9))(X),
          jnp.flatnonzero(X, size=size, fill_value=9))
    # vmap: one static-size result per row
    _same(tg.vmap(lambda r: tnp.flatnonzero(r, size=2))(X),
          jax.vmap(lambda r: jnp.flatnonzero(r, size=2))(X))


def test_where_size_needs_one_argument():
    with pytest.raises(ValueError, match="three-term where"):
        tnp.where(X > 0, X, 0, size=2)


@pytest.mark.parametrize("name", ["stack", "hstack", "vstack", "dstack"])
def test_stack_family_dtype(name):
    args = [F.astype(np.float32), F.astype(np.int32)]
    for dtype in (np.int32, np.float32):
        got, want = getattr(tnp, name)(args, dtype=dtype), getattr(jnp, name)(args, dtype=dtype)
        assert got.dtype == want.dtype
        _same(got, want)
        got = tg.jit(lambda a, b: getattr(tnp, name)([a, b], dtype=dtype))(*args)
        assert got.dtype == want.dtype


def test_trace_dtype_and_same_axes():
    got = tnp.trace(F, 1, 0, 1, np.int32)
    assert got.dtype == jnp.trace(F, 1, 0, 1, np.int32).dtype
    _same(tg.jit(lambda a: tnp.trace(a, 0, 1, 0, np.float32))(F), jnp.trace(F, 0, 1, 0, np.float32))
    with pytest.raises(ValueError, match="axis1 and axis2 can not be same"):
        tnp.trace(np.ones((2, 3, 2)), axis1=1, axis2=-2)


def test_clip_without_bounds_and_complex():
    _same(tnp.clip(F), jnp.clip(F))
    with pytest.raises(ValueError, match="Complex values have no ordering"):
        tnp.clip(np.array([1 + 1j]))
    with pytest.raises(ValueError, match="Complex values have no ordering"):
        tnp.clip(np.arange(3), min=-1 + 5j)


def test_digitize_method_polymul_trim_argsort_dtype():
    x, bins = np.array([0.2, 1.5, 3.0]), np.array([0.0, 1.0, 2.0])
    for method in ("scan", "scan_unrolled", "sort", "compare_all"):
        np.testing.assert_array_equal(tnp.digitize(x, bins, method=method),
                                      jnp.digitize(x, bins, method=method))
    with pytest.raises(ValueError, match="method"):
        tnp.digitize(x, bins, method="bogus")
    a1, a2 = np.array([0.0, 0.0, 1.0, 2.0]), np.array([0.0, 3.0])
    _same(tnp.polymul(a1, a2, trim_leading_zeros=True),
          jnp.polymul(a1, a2, trim_leading_zeros=True))
    _same(tnp.polymul(a1, a2), jnp.polymul(a1, a2))
    got = tnp.argsort(F[0][::-1], dtype=np.int16)
    assert got.dtype == np.int16
    _same(got, jnp.argsort(F[0][::-1], dtype=np.int16))


def test_bincount_clips_negative_values_as_jax():
    x = np.array([-3, -1, 0, 2, 2])
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    _same(tnp.bincount(x), jnp.bincount(x))
    _same(tnp.bincount(x, w), jnp.bincount(x, w))
    _same(tg.jit(lambda x: tnp.bincount(x, length=4))(x), jnp.bincount(x, length=4))


def test_size_over_several_axes():
    a = np.zeros((2, 3, 4))
    assert tnp.size(a, (0, 2)) == jnp.size(a, (0, 2)) == 8
    assert tnp.size(a, ()) == 1
    with pytest.raises(ValueError, match="repeated axis"):
        tnp.size(a, (1, -2))


@pytest.mark.parametrize("mode", [None, "fill", "clip", "promise_in_bounds"])
def test_take_along_axis_out_of_bounds_modes(mode):
    x = np.arange(10, dtype=np.float32)
    idx = np.array([-11, -10, -9, -5, -1, 0, 1, 5, 9, 10, 11])
    if mode == "promise_in_bounds":
        idx = np.clip(idx, 0, 9)   # a promise: in bounds and non-negative
    want = jnp.take_along_axis(x, idx, 0, mode=mode)
    _same(tnp.take_along_axis(x, idx, 0, mode=mode), want)
    _same(tg.jit(lambda x, i: tnp.take_along_axis(x, i, 0, mode=mode))(x, idx), want)


def test_take_along_axis_none_fill_value_grad_and_errors():
    _same(tnp.take_along_axis(np.arange(5.0), np.array([0, 2, 4, 6]), axis=None, mode="fill",
                              fill_value=10.0),
          jnp.take_along_axis(jnp.arange(5.0), jnp.array([0, 2, 4, 6]), axis=None, mode="fill",
                              fill_value=10.0))
    i = np.array([[0, 3], [1, 2], [2, 0]])
    _same(tg.grad(lambda a: tnp.take_along_axis(a, i, 1).sum())(F),
          jax.grad(lambda a: jnp.take_along_axis(a, i, 1).sum())(F))
    with pytest.raises(TypeError, match="take_along_axis indices must be of integer type"):
        tnp.take_along_axis(np.arange(5), np.array([3.0], np.float32), axis=0)


@pytest.mark.parametrize("a, repeats, axis, total", [
    (np.arange(1, 7), np.array([1, 3, 0, 1, 1, 2]), None, None),
    (np.arange(1, 7), np.array([2]), 0, None),
    (np.arange(1, 7).reshape(2, 3), np.array([1, 3, 2]), 1, None),
    (np.arange(1, 7), np.array([1, 3, 0, 1, 1, 2]), None, 10),
    (np.arange(1, 7), 2, None, 9),
    (np.arange(1, 7).reshape(2, 3), np.array([1, 3, 2]), 1, 4),
    (np.arange(1, 7), 0, None, 0),
])
def test_repeat_counts_and_total_repeat_length(a, repeats, axis, total):
    want = jnp.repeat(a, repeats, axis, total_repeat_length=total)
    _same(tnp.repeat(a, repeats, axis, total_repeat_length=total), want)
    if total is not None:   # traced repeats need the static total
        _same(tg.jit(lambda a, r: tnp.repeat(a, r, axis, total_repeat_length=total))(a, repeats),
              want)


def test_repeat_traced_counts_gradient_and_error():
    counts = np.array([1, 3, 2])
    _same(tg.grad(lambda x: tnp.repeat(x * x, counts, total_repeat_length=6).sum())(np.ones(3)),
          jax.grad(lambda x: jnp.repeat(x * x, counts, total_repeat_length=6).sum())(np.ones(3)))
    with pytest.raises(tg.errors.ConcretizationTypeError, match="total_repeat_length"):
        tg.jit(lambda r: tnp.repeat(np.arange(3), r))(counts)


CREATORS = [
    ("zeros", lambda m, dv: m.zeros((2, 3), device=dv)),
    ("ones", lambda m, dv: m.ones(3, np.int32, device=dv)),
    ("empty", lambda m, dv: m.empty(3, device=dv)),
    ("full", lambda m, dv: m.full((2,), 1.5, device=dv)),
    ("zeros_like", lambda m, dv: m.zeros_like(F, device=dv)),
    ("ones_like", lambda m, dv: m.ones_like(F, device=dv)),
    ("full_like", lambda m, dv: m.full_like(F, 2, device=dv)),
    ("eye", lambda m, dv: m.eye(5, 6, device=dv)),
    ("arange", lambda m, dv: m.arange(5, device=dv)),
    ("linspace", lambda m, dv: m.linspace(5, 6, 7, device=dv)),
    ("array", lambda m, dv: m.array([1, 2, 3], device=dv)),
    ("asarray", lambda m, dv: m.asarray([1.0, 2.0], device=dv)),
]


@pytest.mark.parametrize("name, make", CREATORS, ids=[c[0] for c in CREATORS])
def test_creation_takes_device_or_sharding(name, make):
    dev = tg.devices()[-1]
    sharding = tg.sharding.SingleDeviceSharding(dev)
    want = make(jnp, None)
    for dv in (None, dev, sharding):
        got = make(tnp, dv)
        _same(got, want)
        assert got.dtype == want.dtype
        assert got.devices() == {dev}
    assert make(tnp, sharding).sharding == sharding
    with pytest.raises(ValueError, match=f"{name}: argument 'device'"):
        make(tnp, "tpu")


@pytest.mark.parametrize("shift, axis", [(np.array((1, 2)), (0, -1)), (np.array(3), None),
                                         (np.array([4, 2, 5, 5, 2, 4]), None)])
def test_roll_array_shifts(shift, axis):
    a = np.arange(24).reshape(2, 3, 4)
    want = jnp.roll(a, shift, axis)
    _same(tnp.roll(a, shift, axis), want)
    _same(tg.jit(lambda a, s: tnp.roll(a, s, axis))(a, shift), want)


@pytest.mark.parametrize("indices, shape", [
    (np.array([-7, 9, 3], np.int8), (2, 3)),
    (np.array([7, 9, 3], np.uint64), (2, 3)),
    (np.array([-7, 9, 3], np.int8), np.array([2, 3])),
    (np.int32(4), (3, 4)),
])
def test_unravel_index_clips_and_keeps_dtype(indices, shape):
    want = jnp.unravel_index(indices, shape)
    for got in (tnp.unravel_index(indices, shape),
                tg.jit(lambda i: tnp.unravel_index(i, shape))(indices)):
        _same(tuple(got), tuple(want))
        assert [g.dtype for g in got] == [w.dtype for w in want]


@pytest.mark.parametrize("mode", ["ignore", "clip", "wrap"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_ravel_multi_index_modes(mode, order):
    mi = (np.array([0, 5], np.int16), np.array([1, -9], np.int16))
    want = jnp.ravel_multi_index(mi, (2, 3), mode=mode, order=order)
    got = tg.jit(lambda a, b: tnp.ravel_multi_index((a, b), (2, 3), mode=mode, order=order))(*mi)
    _same(got, want)
    assert got.dtype == want.dtype == np.int16
    assert tnp.ravel_multi_index(mi, (2, 3), mode=mode, dtype=np.int32).dtype == np.int32


def test_ravel_multi_index_raise_mode():
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        tnp.ravel_multi_index((np.array([0, 5]), np.array([1, 1])), (2, 3))
    with pytest.raises(tg.errors.ConcretizationTypeError, match="mode='raise'"):
        tg.jit(lambda a: tnp.ravel_multi_index((a, a), (2, 3)))(np.array([0, 1]))


def test_pad_zero_dim_is_unchanged():
    _same(tnp.pad(np.int32(3), ((1, 2),)), jnp.pad(np.int32(3), ((1, 2),)))
    _same(tnp.pad(np.float64(2.5), 3, mode="edge"), jnp.pad(np.float64(2.5), 3, mode="edge"))


@pytest.mark.parametrize("axis,idx", [(1, [4, 0, -1]), (0, []), (None, [[3, 7], [11, 0]]),
                                      (0, 2), (-1, [5, 1])])
def test_delete_assume_unique_indices(axis, idx):
    idx = np.asarray(idx, dtype=int)
    x = np.arange(24.0).reshape(4, 6)
    want = jnp.delete(x, idx, axis=axis, assume_unique_indices=True)
    _same(tnp.delete(x, idx, axis=axis, assume_unique_indices=True), want)
    f = tg.jit(lambda a, i: tnp.delete(a, i, axis=axis, assume_unique_indices=True))
    _same(f(x, idx), want)


@pytest.mark.parametrize("fn", ["sum", "prod", "cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.float32])
def test_reduction_dtype_is_kept(fn, dtype):
    # NumPy's add.reduce widens integers below int64; an explicit dtype= is the result's
    x = np.arange(1.0, 7.0).reshape(2, 3)
    want = getattr(jnp, fn)(x, axis=-1, dtype=dtype)
    for f in (lambda a: getattr(tnp, fn)(a, axis=-1, dtype=dtype),
              tg.jit(lambda a: getattr(tnp, fn)(a, axis=-1, dtype=dtype))):
        got = f(x)
        assert got.dtype == want.dtype
        _same(got, want)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 1, 5)])
def test_unravel_index_traced_shape(dtype, shape):
    # JAX's jit of unravel_index(indices, shape) traces the Python ints of shape too
    size = int(np.prod(shape))
    lo = 0 if np.dtype(dtype).kind == "u" else -(2 * size)
    idx = np.arange(lo, 2 * size, 3).astype(dtype)
    want = jax.jit(jnp.unravel_index)(idx, shape)
    got = tg.jit(tnp.unravel_index)(idx, shape)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    _same(tuple(got), tuple(want))


@pytest.mark.parametrize("axis", [-4, -3, -1, 0, 2, 3])
@pytest.mark.parametrize("start", [-4, -3, -2, -1, 0, 1, 3, 4])
def test_rollaxis_negative_start(axis, start):
    # a negative start counts from the end as NumPy's and JAX's (start + ndim, not % (ndim + 1))
    a = np.arange(24.0).reshape(1, 2, 3, 4)
    want = jnp.rollaxis(a, axis, start)
    _same(tnp.rollaxis(a, axis, start), want)
    _same(tg.jit(lambda x: tnp.rollaxis(x, axis, start))(a), want)


def test_rollaxis_start_out_of_range():
    with pytest.raises(ValueError):
        tnp.rollaxis(np.zeros((2, 3)), 0, -3)
    with pytest.raises(ValueError):
        jnp.rollaxis(np.zeros((2, 3)), 0, -3)


@pytest.mark.parametrize("p,m", [([3.0], 1), ([1.0, 2.0], 2), ([1.0, 2.0], 3), ([4.0, 3.0, 2.0], 1),
                                 ([4, 3, 2, 1], 2), ([2.0], 0)])
def test_polyder_of_a_constant_is_empty(p, m):
    p = np.asarray(p)
    want = jnp.polyder(p, m)
    got = tnp.polyder(p, m)
    assert got.shape == want.shape == np.polyder(p, m).shape
    _same(got, want)


@pytest.mark.parametrize("left,right", [(None, None), ("extrapolate", None),
                                        (None, "extrapolate"), ("extrapolate", "extrapolate"),
                                        (-5.0, "extrapolate")])
@pytest.mark.parametrize("complex_fp", [False, True])
def test_interp_extrapolate_and_complex(left, right, complex_fp):
    xp = np.array([0.0, 1.0, 2.5, 4.0])
    fp = np.array([1.0, 3.0, -2.0, 0.5]) + (1j * np.arange(4) if complex_fp else 0)
    x = np.array([-2.0, 0.3, 1.0, 3.0, 4.0, 6.5])
    want = jnp.interp(x, xp, fp, left=left, right=right)
    for f in (tnp.interp, tg.jit(tnp.interp, static_argnames=("left", "right"))):
        got = f(x, xp, fp, left=left, right=right)
        assert got.dtype == want.dtype
        _same(got, want)


def test_interp_bad_string():
    with pytest.raises(ValueError, match="extrapolate"):
        tnp.interp(np.zeros(2), np.arange(3.0), np.arange(3.0), left="clip")


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int16, np.float32, np.complex64,
                                   np.bool_])
def test_vecdot_keeps_dtype(dtype):
    a = (np.arange(12) % 5).reshape(3, 4).astype(dtype)
    b = (np.arange(12)[::-1] % 3).reshape(3, 4).astype(dtype)
    for axis in (-1, 0):
        want = jnp.vecdot(a, b, axis=axis)
        for f in (tnp.vecdot, tg.jit(tnp.vecdot, static_argnames="axis")):
            got = f(a, b, axis=axis)
            assert got.dtype == want.dtype == np.vecdot(a, b, axis=axis).dtype
            _same(got, want)


@pytest.mark.parametrize("dx_shape,axis", [((3, 1), -1), ((1, 3), -1), ((3,), -1), ((2, 1), 0),
                                           ((3,), 0), ((), 0)])
def test_trapezoid_with_an_array_of_spacings_matches_numpy(dx_shape, axis):
    # An array dx multiplies each pair before the sum (NumPy's and JAX's); it was applied
    # to the sums, which gave a wrongly shaped, wrong result for dx of shape (3, 1).
    y = np.arange(12.0).reshape(3, 4) ** 2
    if axis == 0:
        y = y.T[:3]     # (3, 3): pairs (2, 3) along axis 0
    dx = np.linspace(0.5, 2.0, int(np.prod(dx_shape))).reshape(dx_shape)
    want = np.trapezoid(y, dx=dx, axis=axis)
    np.testing.assert_allclose(tnp.trapezoid(y, dx=dx, axis=axis), want, rtol=1e-15)
    got = tg.jit(lambda y, d: tnp.trapezoid(y, dx=d, axis=axis))(y, dx)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    # d/d(dx) by central differences
    g = tg.grad(lambda d: tnp.sum(tnp.trapezoid(y, dx=d, axis=axis)))(dx)
    eps = 1e-6
    fd = np.zeros_like(dx).ravel()
    for k in range(fd.size):
        e = np.zeros(dx.size)
        e[k] = eps
        e = e.reshape(dx.shape)
        fd[k] = (np.sum(np.trapezoid(y, dx=dx + e, axis=axis))
                 - np.sum(np.trapezoid(y, dx=dx - e, axis=axis))) / (2 * eps)
    np.testing.assert_allclose(np.ravel(g), fd, rtol=1e-7)
