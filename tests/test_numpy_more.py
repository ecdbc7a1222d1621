"""numpy functions of the issue's "rest of numpy" list: gradient, window
functions, frexp/spacing/nextafter, insert, put, histogram, row_stack.
Values and dtypes against NumPy, derivatives against finite differences,
jit against eager, vmap against a loop."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp

RNG = np.random.default_rng(0)
F = RNG.normal(size=(5, 4))
XC = np.cumsum(RNG.uniform(0.5, 1.5, 5))          # non-uniform coordinates
YC = np.array([0.0, 1.0, 2.0, 3.0])               # uniform coordinates


@pytest.mark.parametrize("args,kw", [
    ((), {}), ((0.5,), {}), ((XC, YC), {}), ((XC,), {"axis": 0}), ((XC, 2.0), {"edge_order": 2}),
    ((), {"edge_order": 2, "axis": (1,)}), ((0.3,), {"axis": -1}), ((XC, YC), {"edge_order": 2}),
])
def test_gradient_matches_numpy(args, kw):
    got, want = tnp.gradient(F, *args, **kw), np.gradient(F, *args, **kw)
    assert isinstance(got, tuple) == isinstance(want, tuple)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
    jitted = tg.jit(lambda f: tnp.gradient(f, *args, **kw))(F)
    for g, w in zip(jitted if isinstance(jitted, tuple) else [jitted],
                    want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_gradient_dtypes_errors_and_derivative_in_coordinates():
    assert tnp.gradient(np.arange(5)).dtype == np.float64
    assert tnp.gradient(np.arange(5, dtype=np.float32)).dtype == np.float32
    with pytest.raises(ValueError, match="at least \\(edge_order \\+ 1\\) elements"):
        tnp.gradient(np.ones(2), edge_order=2)
    with pytest.raises(TypeError, match="gradient: invalid number of arguments"):
        tnp.gradient(F, 1.0, 2.0, 3.0)
    f0 = F[:, 0]

    def loss(c):
        return tnp.sum(tnp.gradient(f0, c, edge_order=2) ** 2)

    def np_loss(c):
        return np.sum(np.gradient(f0, c, edge_order=2) ** 2)

    eps = 1e-6
    fd = np.array([(np_loss(XC + eps * e) - np_loss(XC - eps * e)) / (2 * eps) for e in np.eye(5)])
    np.testing.assert_allclose(tg.grad(loss)(XC), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("m", [0, 1, 2, 7, 16])
def test_windows(name, m):
    got = getattr(tnp, name)(m)
    want = getattr(np, name)(m)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)


def test_kaiser_concrete_and_bad_length():
    np.testing.assert_allclose(tnp.kaiser(10, 8.6), np.kaiser(10, 8.6), rtol=1e-14)
    with pytest.raises(TypeError, match="hanning: argument 'M'"):
        tnp.hanning(None)


def test_frexp_spacing_nextafter():
    x = np.array([0.0, -3.5, 5e-324, 1e300, np.inf, np.nan, 1.0, -0.0])
    m, e = tnp.frexp(x)
    mw, ew = np.frexp(x)
    np.testing.assert_array_equal(m, mw)
    np.testing.assert_array_equal(e, ew)
    assert e.dtype == ew.dtype
    mj, ej = tg.jit(tnp.frexp)(x)
    np.testing.assert_array_equal(mj, mw)
    np.testing.assert_array_equal(ej, ew)
    # d mantissa / dx = 2**-exponent
    xs = np.array([3.0, -0.1, 1024.0])
    np.testing.assert_allclose(tg.vmap(tg.grad(lambda x: tnp.frexp(x)[0]))(xs),
                               2.0 ** -np.frexp(xs)[1], rtol=0)
    x32 = np.array([1.0, 2.5, -7.0], np.float32)
    for got, want in [(tnp.spacing(x32), np.spacing(x32)),
                      (tnp.nextafter(x32, 2.0), np.nextafter(x32, np.float32(2.0))),
                      (tg.jit(tnp.spacing)(x), np.spacing(x))]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # JAX defines no derivative for nextafter (nor for spacing, computed with it): it raises
    for f in (lambda x: tnp.nextafter(x, 2.0), lambda x: tnp.nextafter(2.0, x), tnp.spacing):
        with pytest.raises(NotImplementedError, match="^Differentiation rule for 'nextafter'"):
            tg.grad(f)(1.0)
    assert tg.grad(lambda x: x * tnp.nextafter(tg.lax.stop_gradient(x), 2.0))(1.0) == \
        np.nextafter(1.0, 2.0)


A = np.arange(12.0).reshape(3, 4)
INSERTS = [(1, 5.0), ([1], [[7.0], [8.0], [9.0]]), (1, [7.0, 8.0, 9.0]), ([0, 2, 2], [1.0, 2.0, 3.0]),
           (slice(1, 3), [[1.0], [2.0], [3.0]]), (-1, 0.0), (4, [1.0, 2.0, 3.0]), ([3, 0, 4], 9.0)]


@pytest.mark.parametrize("obj,values", INSERTS)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_insert_matches_numpy(obj, values, axis):
    try:
        want = np.insert(A, obj, values, axis=axis)
    except (ValueError, IndexError) as err:
        with pytest.raises(type(err)):
            tnp.insert(A, obj, values, axis=axis)
        return
    got = tnp.insert(A, obj, values, axis=axis)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_insert_casts_differentiates_and_checks():
    np.testing.assert_array_equal(tnp.insert(np.arange(5), 2, 7.9), np.insert(np.arange(5), 2, 7.9))
    g = tg.grad(lambda v: tnp.sum(tnp.insert(A, [1, 3], v, axis=1) ** 2))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [6.0, 12.0])      # each value is broadcast down 3 rows
    with pytest.raises(IndexError, match="insert: index 9 is out of bounds"):
        tnp.insert(A, 9, 0.0, axis=1)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-6, 6), min_size=1, max_size=5), st.integers(0, 1))
def test_insert_sequences(idx, axis):
    a = np.arange(24.0).reshape(6, 4) if axis == 0 else np.arange(24.0).reshape(4, 6)
    vals = np.arange(len(idx), dtype=float) + 100
    vals = vals[:, None] if axis == 0 else vals[None, :]
    np.testing.assert_array_equal(tnp.insert(a, idx, vals, axis=axis),
                                  np.insert(a, idx, vals, axis=axis))


def _np_put(x, ind, v, mode):
    e = x.copy()
    ind = np.asarray(ind)
    if mode is None:    # JAX's default drops out-of-bounds writes
        vv = np.resize(np.asarray(v), ind.size)
        ok = (ind >= -x.size) & (ind < x.size)
        np.put(e, ind[ok], vv[ok])
    else:
        np.put(e, ind, v, mode=mode)
    return e


@pytest.mark.parametrize("ind,v,mode", [([0, 2], [9.0, 8.0], None), ([-1, 7], [5.0], None),
                                        ([1, 9, -9], [1.0, 2.0, 3.0], "clip"),
                                        ([1, 8], [4.0, 5.0], "wrap"), ([0, 1, 2], [7.0, 6.0], None)])
def test_put(ind, v, mode):
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(tnp.put(x, ind, v, mode=mode, inplace=False), _np_put(x, ind, v, mode))
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(2, 3))          # unchanged
    jitted = tg.jit(lambda x, v: tnp.put(x, ind, v, mode=mode, inplace=False))(x, np.asarray(v))
    np.testing.assert_array_equal(jitted, _np_put(x, ind, v, mode))


def test_put_errors_and_gradient():
    x = np.zeros(4)
    with pytest.raises(ValueError, match="^jax.numpy.put cannot modify arrays in-place"):
        tnp.put(x, [0], [1.0])
    with pytest.raises(ValueError, match="^mode should be one of 'wrap' or 'clip'"):
        tnp.put(x, [0], [1.0], mode="nope", inplace=False)
    g = tg.grad(lambda v: tnp.sum(tnp.put(x, [0, 3, 9], v, inplace=False) * np.arange(4.0)))(
        np.array([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(g, [0.0, 3.0, 0.0])


DATA = RNG.normal(size=50)
W = RNG.uniform(size=50)


@pytest.mark.parametrize("kw", [{}, {"bins": 7}, {"bins": np.array([-1, 0, 0.5, 2.0])},
                                {"range": (-1, 1)}, {"weights": W}, {"density": True},
                                {"weights": W.astype(np.float32)}, {"bins": 4, "range": (0.0, 0.0)}])
def test_histogram_matches_numpy(kw):
    got, want = tnp.histogram(DATA, **kw), np.histogram(DATA, **kw)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6 if g.dtype == np.float32 else 1e-13)
    np.testing.assert_array_equal(tg.jit(lambda a: tnp.histogram(a, 5)[0])(DATA),
                                  np.histogram(DATA, 5)[0])


def test_histogram_edges_errors_and_weights_gradient():
    np.testing.assert_array_equal(tnp.histogram(np.array([]), bins=3)[1], np.histogram([], bins=3)[1])
    np.testing.assert_array_equal(tnp.histogram(np.arange(5.0))[0], np.histogram(np.arange(5.0))[0])
    with pytest.raises(ValueError, match="must increase monotonically"):
        tnp.histogram(DATA, bins=np.array([0.0, -1.0]))
    with pytest.raises(NotImplementedError, match="string values for `bins` not implemented"):
        tnp.histogram(DATA, bins="auto")
    # d(count of bin 2)/d(weights) is the indicator of bin 2
    g = tg.grad(lambda w: tnp.histogram(DATA, 5, weights=w)[0][2])(W)
    counts, edges = np.histogram(DATA, 5)
    np.testing.assert_array_equal(g, ((DATA >= edges[2]) & (DATA < edges[3])).astype(float))


def test_row_stack_is_vstack():
    np.testing.assert_array_equal(tnp.row_stack([np.ones(3), np.zeros(3)]),
                                  np.vstack([np.ones(3), np.zeros(3)]))


def test_real_if_close():
    a = np.array([1 + 1e-15j, 2 + 0j])
    for x in (a, np.array([1 + 1e-3j]), np.array([1.0, 2.0]), np.array([1 + 1e-10j]).astype(np.complex64)):
        got, want = tnp.real_if_close(x), np.real_if_close(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert tnp.real_if_close(np.array([1 + 1e-3j]), tol=1e-2).dtype == np.float64
    assert tg.grad(lambda x: tnp.real_if_close(x * (1 + 0j)))(2.0) == 1.0   # concrete under grad
    with pytest.raises(tg.ConcretizationTypeError, match="real_if_close: the dtype of the result"):
        tg.jit(tnp.real_if_close)(a)


@pytest.mark.parametrize("fname,kw", [("sum", {}), ("prod", {}), ("mean", {}), ("var", {}),
                                      ("std", {}), ("var", {"ddof": 1}), ("max", {"initial": -10.0}),
                                      ("min", {"initial": 10.0}), ("all", {}), ("any", {})])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_take_where(fname, kw, axis):
    x = RNG.normal(size=(4, 5))
    w = x > -0.3
    a = x > 0 if fname in ("all", "any") else x
    want = getattr(np, fname)(a, axis=axis, where=w, **kw)
    got = getattr(tnp, fname)(a, axis=axis, where=w, **kw)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(tg.jit(lambda a: getattr(tnp, fname)(a, axis=axis, where=w, **kw))(a),
                               want, rtol=1e-14)


def test_variance_without_degrees_of_freedom_is_nan_as_jaxs():
    """ddof >= the count (per slice under ``where``): NaN, as JAX gives (NumPy's
    var gives inf or -0.0 there, its nanvar NaN); slices with dof left unchanged."""
    a, x = np.array([1.0, 3.0]), np.array([1.0, np.nan, 3.0])
    for got in (tnp.var(a, ddof=2), tnp.var(a, ddof=3), tnp.std(a, ddof=3), tnp.nanvar(x, ddof=2),
                tnp.nanstd(x, ddof=3), tnp.var(a, ddof=3, where=np.array([True, True])),
                tg.jit(lambda a: tnp.var(a, ddof=2))(a)):
        assert np.isnan(got)
    m = np.array([[1.0, 2.0, 4.0], [5.0, 7.0, 8.0]])
    w = np.array([[True, True, False], [False, True, False]])
    got = tnp.var(m, axis=1, ddof=1, where=w)
    np.testing.assert_array_equal(got, [0.5, np.nan])
    np.testing.assert_array_equal(tg.jit(lambda m: tnp.var(m, axis=0, ddof=1, where=w))(m),
                                  [np.nan, 12.5, np.nan])
    assert tnp.nanvar(np.ones(3, np.float32), ddof=5).dtype == np.float32
    np.testing.assert_allclose(tg.grad(lambda a: tnp.var(a, ddof=1, where=np.array([True, True])))(a),
                               [-2.0, 2.0])


def test_where_masked_gradients_and_errors():
    x = RNG.normal(size=(3, 4))
    w = x > 0
    np.testing.assert_allclose(tg.grad(lambda x: tnp.mean(x, where=w))(x), w / w.sum())
    np.testing.assert_allclose(tg.grad(lambda x: tnp.max(x, where=w, initial=-1e9))(x),
                               (x == np.max(x, where=w, initial=-1e9)).astype(float))
    with pytest.raises(ValueError, match="^reduction operation max does not have an identity, so "
                                         "to use a where mask one has to specify 'initial'"):
        tnp.max(x, where=w)


def test_integer_bit_functions():
    a, b = np.array([12, 18, -7, 0]), np.array([8, 27, 21, 5])
    for name in ("gcd", "lcm", "left_shift", "right_shift", "bitwise_left_shift",
                 "bitwise_right_shift"):
        got = getattr(tnp, name)(a, np.abs(b) % 5 if "shift" in name else b)
        want = getattr(np, name)(a, np.abs(b) % 5 if "shift" in name else b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tnp.bitwise_count(a), np.bitwise_count(a))
    np.testing.assert_array_equal(tnp.bitwise_invert(a), np.invert(a))
    np.testing.assert_array_equal(tg.jit(tnp.gcd)(a, b), np.gcd(a, b))
    np.testing.assert_allclose(tnp.i0(np.array([0.0, 1.5, -3.0])), np.i0(np.array([0.0, 1.5, -3.0])),
                               rtol=1e-14)


def test_unique_family_setxor_sort_complex():
    x = np.array([3.0, 1, 2, 3, 1, np.nan, np.nan])
    for got, want in zip(tnp.unique_all(x), np.unique_all(x)):
        np.testing.assert_array_equal(got, want)
    for f in ("unique_counts", "unique_inverse"):
        for got, want in zip(getattr(tnp, f)(x), getattr(np, f)(x)):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tnp.unique_values(x), np.unique_values(x))
    np.testing.assert_array_equal(tnp.setxor1d([1, 2, 3], [2, 5]), np.setxor1d([1, 2, 3], [2, 5]))
    z = np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 0j])
    np.testing.assert_array_equal(tnp.sort_complex(z), np.sort_complex(z))
    np.testing.assert_array_equal(tg.jit(tnp.sort_complex)(z), np.sort_complex(z))
    assert tnp.sort_complex(np.array([3, 1, 2])).dtype == np.complex128


def test_poly_polydiv_polyfit_roots():
    np.testing.assert_allclose(tnp.poly([1.0, 2.0, 3.0]), np.poly([1, 2, 3]))
    # a square matrix: its characteristic polynomial (complex, as JAX's)
    np.testing.assert_allclose(tnp.poly(np.array([[1.0, 2], [3, 4]])), [1, -5, -2], atol=1e-13)
    q, r = tnp.polydiv(np.array([1.0, -3, 2, 5]), np.array([1.0, -1]))
    np.testing.assert_allclose(q, [1, -2, 0])
    np.testing.assert_allclose(r, [0, 0, 0, 5])                    # JAX keeps the length
    x = np.linspace(0, 1, 10)
    y = 3 * x ** 2 - x + 0.5 + 0.01 * np.sin(7 * x)
    np.testing.assert_allclose(tnp.polyfit(x, y, 2), np.polyfit(x, y, 2), rtol=1e-12)
    for got, want in zip(tnp.polyfit(x, y, 2, full=True), np.polyfit(x, y, 2, full=True)):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    for got, want in zip(tnp.polyfit(x, np.stack([y, 2 * y], 1), 2, cov=True),
                         np.polyfit(x, np.stack([y, 2 * y], 1), 2, cov=True)):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    w = np.linspace(1, 2, 10)
    np.testing.assert_allclose(tnp.polyfit(x, y, 2, w=w), np.polyfit(x, y, 2, w=w), rtol=1e-12)
    # the fit is linear in y: its gradient is the sum of the pseudo-inverse's rows
    g = tg.grad(lambda y: tnp.sum(tnp.polyfit(x, y, 2)))(y)
    np.testing.assert_allclose(g, np.linalg.pinv(np.vander(x, 3)).sum(0), atol=1e-12)
    r = tnp.roots(np.array([0, 1.0, -6, 11, -6]))
    assert r.dtype == np.complex128
    np.testing.assert_allclose(np.sort_complex(r), [1, 2, 3], atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(tg.jit(lambda p: tnp.roots(p, strip_zeros=False))(
        np.array([1.0, -6, 11, -6]))), [1, 2, 3], atol=1e-12)
    with pytest.raises(TypeError, match="pass strip_zeros=False"):
        tg.jit(tnp.roots)(np.array([1.0, -6, 11, -6]))
