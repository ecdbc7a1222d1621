"""The tangentia.numpy functions added to close JAX's API gaps: values against NumPy (and
numbers computed with JAX 0.10.2 where JAX's semantics differ, baked in), gradients
against finite differences, jit against eager, and JAX's errors."""
import io

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

RNG = np.random.default_rng(11)


def _fd_grad(f, x, h=1e-6):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        out[idx] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def test_block_matches_numpy_and_differentiates():
    a, b, c, d = np.eye(2), np.zeros((2, 1)), np.ones((1, 2)), np.array([[5.0]])
    np.testing.assert_array_equal(tnp.block([[a, b], [c, d]]), np.block([[a, b], [c, d]]))
    np.testing.assert_array_equal(tnp.block([1.0, np.arange(3.0), 2.0]),
                                  np.block([1.0, np.arange(3.0), 2.0]))
    np.testing.assert_array_equal(tnp.block([[1.0, 2.0], [3.0, 4.0]]),
                                  np.block([[1.0, 2.0], [3.0, 4.0]]))
    x = RNG.standard_normal((2, 2))
    w = RNG.standard_normal((3, 3))

    def f(x):
        return (tnp.block([[x, x[:, :1]], [x[:1], x[:1, :1]]]) * w).sum()
    np.testing.assert_allclose(tg.grad(f)(x), _fd_grad(f, x), rtol=1e-7)
    np.testing.assert_allclose(tg.jit(f)(x), f(x), rtol=1e-15)
    with pytest.raises(ValueError, match="depths are mismatched"):
        tnp.block([[a], b])
    with pytest.raises(TypeError, match="tuple"):
        tnp.block((a, b))


def test_compress_and_extract_eager_and_with_size_under_jit():
    a = np.arange(12.0).reshape(3, 4)
    cond = np.array([True, False, True])
    np.testing.assert_array_equal(tnp.compress(cond, a, axis=0), np.compress(cond, a, axis=0))
    np.testing.assert_array_equal(tnp.compress([0, 1, 1, 0], a, axis=1),
                                  np.compress([0, 1, 1, 0], a, axis=1))
    np.testing.assert_array_equal(tnp.compress(cond, a), np.compress(cond, a))
    np.testing.assert_array_equal(tnp.extract(a > 5, a), np.extract(a > 5, a))
    # JAX 0.10.2: jnp.compress(..., axis=0, size=3, fill_value=-1)
    f = tg.jit(lambda c, x: tnp.compress(c, x, axis=0, size=3, fill_value=-1))
    np.testing.assert_array_equal(f(cond, a), [[0, 1, 2, 3], [8, 9, 10, 11], [-1, -1, -1, -1]])
    g = tg.jit(lambda c, x: tnp.extract(c, x, size=2))
    np.testing.assert_array_equal(g(np.array([1, 0, 1, 1]), np.arange(4.0)), [0.0, 2.0])
    grad = tg.grad(lambda x: tnp.compress(cond, x, axis=0, size=3).sum())(a)
    np.testing.assert_array_equal(grad, np.repeat(cond[:, None], 4, 1).astype(float))
    with pytest.raises(ValueError, match="out of bounds"):
        tnp.compress([1, 0, 0, 1], np.arange(3.0))
    with pytest.raises(tg.ConcretizationTypeError, match="compress"):
        tg.jit(lambda c: tnp.compress(c, np.arange(3.0)))(cond)


def test_place_put_along_axis_fill_diagonal_need_inplace_false():
    with pytest.raises(ValueError, match="jax.numpy.place cannot modify arrays in-place"):
        tnp.place(np.zeros(3), np.ones(3, bool), 1.0)
    with pytest.raises(ValueError, match="jax.numpy.put_along_axis cannot modify arrays"):
        tnp.put_along_axis(np.zeros(3), np.array([0]), 1.0, axis=0)
    with pytest.raises(NotImplementedError, match="JAX arrays are immutable, must use inplace"):
        tnp.fill_diagonal(np.zeros((2, 2)), 1.0)
    # JAX 0.10.2's numbers.
    mask = np.array([1, 0, 1, 1, 0], bool)
    place = tg.jit(lambda m, v: tnp.place(tnp.zeros(5), m, v, inplace=False))
    np.testing.assert_array_equal(place(mask, np.array([7.0, 8.0])), [7.0, 0.0, 8.0, 7.0, 0.0])
    ref = np.zeros(5)
    np.place(ref, mask, [7.0, 8.0])
    np.testing.assert_array_equal(tnp.place(np.zeros(5), mask, [7.0, 8.0], inplace=False), ref)
    out = tnp.put_along_axis(np.arange(6.0).reshape(2, 3), np.array([[2, 0], [1, 1]]),
                             np.array([[10.0, 20.0], [30.0, 40.0]]), axis=1, inplace=False)
    np.testing.assert_array_equal(out, [[20.0, 1.0, 10.0], [3.0, 40.0, 5.0]])
    np.testing.assert_array_equal(
        tnp.put_along_axis(np.arange(6.0), np.array([5, 0]), -1.0, axis=None, inplace=False),
        [-1.0, 1.0, 2.0, 3.0, 4.0, -1.0])
    np.testing.assert_array_equal(tnp.fill_diagonal(np.zeros((4, 4)), np.array([3.0, 4.0]),
                                                     inplace=False),
                                  np.diag([3.0, 4.0, 3.0, 4.0]))
    np.testing.assert_array_equal(tnp.fill_diagonal(np.zeros((2, 2, 2)), 1.0, inplace=False),
                                  [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]])
    ref = np.zeros((3, 5))
    np.fill_diagonal(ref, 2.0)
    np.testing.assert_array_equal(tnp.fill_diagonal(np.zeros((3, 5)), 2.0, inplace=False), ref)
    v = np.array([1.0, 2.0])
    g = tg.grad(lambda v: (tnp.fill_diagonal(np.ones((3, 3)), v, inplace=False) ** 2).sum())(v)
    np.testing.assert_allclose(g, [4.0, 4.0])           # v[0] lands twice, v[1] once: 2*1*2, 2*2
    g = tg.grad(lambda v: (tnp.put_along_axis(np.zeros(4), np.array([3, 1]), v, 0,
                                              inplace=False) * np.arange(4.0)).sum())(v)
    np.testing.assert_allclose(g, [3.0, 1.0])


def test_choose_modes():
    a = np.array([[0, 4], [-1, 2]])
    choices = [np.zeros(2), np.ones(2), 2 * np.ones(2)]
    # JAX 0.10.2's numbers (the same as NumPy's).
    np.testing.assert_array_equal(tnp.choose(a, choices, mode="clip"), [[0.0, 2.0], [0.0, 2.0]])
    np.testing.assert_array_equal(tnp.choose(a, choices, mode="wrap"), [[0.0, 1.0], [2.0, 2.0]])
    ok = np.array([[0, 2], [1, 0]])
    np.testing.assert_array_equal(tnp.choose(ok, choices), np.choose(ok, choices))
    np.testing.assert_array_equal(tg.jit(lambda a: tnp.choose(a, choices, mode="clip"))(a),
                                  np.choose(a, choices, mode="clip"))
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        tnp.choose(a, choices)
    g = tg.grad(lambda c: tnp.choose(ok, [c, 2 * c, 3 * c]).sum())(np.ones(2))
    np.testing.assert_allclose(g, [1.0 + 2.0, 3.0 + 1.0])


def test_resize_trim_zeros_mask_indices():
    for shape in [(3, 3), (5,), (2, 0), 7]:
        np.testing.assert_array_equal(tnp.resize(np.array([[1, 2], [3, 4]]), shape),
                                      np.resize(np.array([[1, 2], [3, 4]]), shape))
    np.testing.assert_array_equal(tnp.resize(np.array([], float), (2, 2)), np.zeros((2, 2)))
    for trim in ("fb", "f", "b"):
        x = np.array([0, 0, 1, 2, 0, 3, 0])
        np.testing.assert_array_equal(tnp.trim_zeros(x, trim), np.trim_zeros(x, trim))
    np.testing.assert_array_equal(tnp.trim_zeros(np.zeros(3)), np.trim_zeros(np.zeros(3)))
    m = np.zeros((4, 5))
    m[1:3, 2] = 1.0
    np.testing.assert_array_equal(tnp.trim_zeros(m), np.trim_zeros(m))
    np.testing.assert_array_equal(tnp.trim_zeros(m, axis=1), np.trim_zeros(m, axis=1))
    for func, k in [(np.triu, 1), (np.tril, -1), (np.triu, 0)]:
        for got, want in zip(tnp.mask_indices(4, func, k), np.mask_indices(4, func, k)):
            np.testing.assert_array_equal(got, want)
    # JAX 0.10.2: jnp.mask_indices(3, jnp.triu, 1, size=4)
    rows, cols = tnp.mask_indices(3, tnp.triu, 1, size=4)
    np.testing.assert_array_equal(rows, [0, 0, 1, 0])
    np.testing.assert_array_equal(cols, [1, 2, 2, 0])


def test_apply_over_axes_fromfunction_unwrap():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tnp.apply_over_axes(tnp.sum, a, [0, 2]),
                                  np.apply_over_axes(np.sum, a, [0, 2]))
    np.testing.assert_array_equal(tnp.fromfunction(lambda i, j: i + 10 * j, (2, 3)),
                                  np.fromfunction(lambda i, j: i + 10 * j, (2, 3)))
    np.testing.assert_array_equal(tnp.fromfunction(lambda i: i * i, (4,), dtype=int),
                                  [0, 1, 4, 9])
    p = np.array([0.0, 3.0, 6.5, 0.2, -3.0, 4.0])
    np.testing.assert_allclose(tnp.unwrap(p), np.unwrap(p), rtol=1e-15)
    np.testing.assert_allclose(tnp.unwrap(p, period=4.0), np.unwrap(p, period=4.0), rtol=1e-15)
    np.testing.assert_allclose(tnp.unwrap(p, discont=4.0), np.unwrap(p, discont=4.0))
    q = RNG.uniform(-6, 6, (3, 5))
    np.testing.assert_allclose(tnp.unwrap(q, axis=0), np.unwrap(q, axis=0), rtol=1e-14)
    np.testing.assert_allclose(tg.jit(tnp.unwrap)(q), np.unwrap(q), rtol=1e-14)
    w = RNG.standard_normal(6)

    def f(p):
        return (tnp.unwrap(p) * w).sum()
    np.testing.assert_allclose(tg.grad(f)(p), _fd_grad(f, p), rtol=1e-6, atol=1e-8)


def test_histogram2d_and_histogramdd():
    x, y = RNG.uniform(size=50), RNG.uniform(size=50)
    for kw in [{}, {"bins": 4}, {"bins": [3, 5]}, {"bins": 4, "range": [[0, 1], [0.2, 0.9]]},
               {"bins": np.linspace(0, 1, 4)}, {"bins": 3, "density": True},
               {"bins": 3, "weights": RNG.uniform(size=50)}]:
        got, want = tnp.histogram2d(x, y, **kw), np.histogram2d(x, y, **kw)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13, err_msg=str(kw))
    sample = RNG.uniform(size=(40, 3))
    got, edges = tnp.histogramdd(sample, bins=[2, 3, 4])
    want, wedges = np.histogramdd(sample, bins=[2, 3, 4])
    np.testing.assert_allclose(got, want)
    assert got.dtype == want.dtype == np.float64
    for e, we in zip(edges, wedges):
        np.testing.assert_allclose(e, we)
    # JAX 0.10.2's densities (float64).
    pts = np.array([[0.1, 0.2], [0.5, 0.5], [0.9, 0.8], [0.3, 0.9]])
    np.testing.assert_allclose(tnp.histogramdd(pts, bins=[2, 3], density=True)[0],
                               [[2.6785714285714284, 0.0, 2.678571428571428],
                                [0.0, 2.678571428571429, 2.678571428571428]], rtol=1e-14)
    wts = RNG.uniform(size=50)
    g = tg.grad(lambda w: tnp.histogram2d(x, y, bins=2, weights=w)[0][0, 0])(wts)
    cell = (x <= np.median(np.r_[x.min(), x.max()])) & (y <= np.median(np.r_[y.min(), y.max()]))
    np.testing.assert_array_equal(g, cell.astype(float))
    jitted = tg.jit(lambda s: tnp.histogramdd(s, bins=3, range=[(0, 1)] * 3)[0])
    np.testing.assert_allclose(jitted(sample), np.histogramdd(sample, 3, range=[(0, 1)] * 3)[0])


def test_numpy_io_printing_and_dtype_names():
    x = np.arange(6.0).reshape(2, 3)
    buf = io.BytesIO()
    tnp.save(buf, x)
    buf.seek(0)
    loaded = tnp.load(buf)
    np.testing.assert_array_equal(loaded, x)
    np.testing.assert_array_equal(tnp.frombuffer(x.tobytes()), x.ravel())
    np.testing.assert_array_equal(tnp.fromiter(range(4), float), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(tnp.fromstring("1 2 3", sep=" "), [1.0, 2.0, 3.0])
    assert tnp.array_str(x) == np.array_str(x) and tnp.array_repr(x) == np.array_repr(x)
    with tnp.printoptions(precision=2):
        assert tnp.get_printoptions()["precision"] == 2
    path, _ = tnp.einsum_path("ij,jk,kl->il", x, x.T, x, optimize="greedy")
    assert path == np.einsum_path("ij,jk,kl->il", x, x.T, x, optimize="greedy")[0]
    seen = []
    tg.jit(lambda a: seen.append(tnp.einsum_path("ij,jk->ik", a, a.T)[0]) or a)(x)
    assert seen == [["einsum_path", (0, 1)]]
    # (tnp's scalar types are NumPy's types' subclasses, equal to them: callable on traced values)
    assert tnp.cdouble == np.complex128 and tnp.csingle == np.complex64
    assert tnp.complex_ == np.complex128 and tnp.object_ is np.object_
    assert issubclass(tnp.int32, tnp.signedinteger) and issubclass(tnp.uint8, tnp.unsignedinteger)
    assert issubclass(tnp.float64, tnp.generic) and issubclass(np.str_, tnp.character)
    assert issubclass(tnp.ComplexWarning, RuntimeWarning)


def test_packbits_and_unpackbits_match_numpy():
    a = np.array([[1, 0, 1], [0, 1, 1]])
    for axis in (None, 0, 1):
        for order in ("big", "little"):
            packed = np.packbits(a, axis=axis, bitorder=order)
            got = tnp.packbits(a, axis=axis, bitorder=order)
            np.testing.assert_array_equal(got, packed)
            assert got.dtype == np.uint8
            for count in (None, 3, -2, 10):
                np.testing.assert_array_equal(
                    tnp.unpackbits(packed, axis=axis, count=count, bitorder=order),
                    np.unpackbits(packed, axis=axis, count=count, bitorder=order))
    bits = np.arange(20) % 3 == 0
    np.testing.assert_array_equal(tg.jit(tnp.packbits)(bits), np.packbits(bits))
    np.testing.assert_array_equal(tg.jit(tnp.unpackbits)(np.packbits(bits)),
                                  np.unpackbits(np.packbits(bits)))
    with pytest.raises(TypeError, match="unpackbits.*'a'"):
        tnp.unpackbits(np.ones(2, np.int64))
    with pytest.raises(TypeError, match="packbits.*'a'"):
        tnp.packbits(np.ones(2))
