"""tangentia.numpy against JAX (x64) where JAX's lax_numpy_test.py, run through
tests/external/run_jax_tests.py, found wrong numbers or missing behaviour (second round):
isclose with infinities, logaddexp/logaddexp2 of complex values, reshape/ravel with
order="F", vecmat's conjugation, linspace's step without steps, complex geomspace under
jit, round with more decimals than the dtype holds, sinc's derivatives at 0, odd padding of
integers, gradient of bfloat16, and the attributes of arrays and tracers.  Every value is
compared with JAX (or NumPy where JAX has no counterpart), eagerly and under jit."""
from __future__ import annotations

import itertools
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="these tests compare with JAX")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _close(got: Any, want: Any, **kw: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.astype(np.complex128) if got.dtype.kind == "c" else
                               got.astype(np.float64), want.astype(got.dtype).astype(
                                   np.complex128 if got.dtype.kind == "c" else np.float64),
                               equal_nan=True, **kw)


def _both(f: Callable[..., Any], *args: Any) -> list[Any]:
    """``f`` applied eagerly and under jit."""
    return [f(*args), tg.jit(f)(*args)]


# --- isclose: an infinity is close to itself, a finite value never to an infinite b -------

VALS = np.array([-np.nan, -np.inf, -1.00001, -1.0, -0.00001, -0.0, 0.0, 0.00001, 1.0, 1.00001,
                 np.inf, np.nan])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # inf * 0 of an infinite rtol
@pytest.mark.parametrize("atol, rtol", list(itertools.product([0.0, 1e-4, np.inf], repeat=2)))
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_corner_values(atol: float, rtol: float, equal_nan: bool) -> None:
    x, y = np.meshgrid(VALS, VALS)
    want = np.asarray(jnp.isclose(x, y, atol=atol, rtol=rtol, equal_nan=equal_nan))
    for got in _both(lambda a, b: tnp.isclose(a, b, atol=atol, rtol=rtol, equal_nan=equal_nan),
                     x, y):
        np.testing.assert_array_equal(np.asarray(got), want)
    c = x + 1j * y
    np.testing.assert_array_equal(
        np.asarray(tnp.isclose(c, c.T, atol=atol, rtol=rtol, equal_nan=equal_nan)),
        np.asarray(jnp.isclose(c, c.T, atol=atol, rtol=rtol, equal_nan=equal_nan)))


def test_isclose_finite_and_infinite_rows() -> None:
    x = np.array([[1.76], [0.4]])
    inf = np.full((2, 1), np.inf)
    for a, b in [(x, inf), (x, -inf), (inf, inf), (inf, -inf), (-inf, -inf)]:
        np.testing.assert_array_equal(np.asarray(tnp.isclose(a, b)), np.isclose(a, b))
    assert bool(tnp.isclose(6, 10, rtol=0.5))


# --- logaddexp / logaddexp2 of complex values: the principal branch --------------------

CPLX = np.array([1 + 2j, -3 + 1j, np.nan + 0j, 0j, 100 + 100j, -100 - 3j, 3 - 200j, 2 + 3.5j])


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_complex(name: str) -> None:
    x, y = np.meshgrid(CPLX, CPLX)
    want = getattr(jnp, name)(x, y)
    for got in _both(getattr(tnp, name), x, y):
        _close(got, want, rtol=1e-13, atol=1e-13)
    # mixed with a real argument, and in complex64
    _close(getattr(tnp, name)(x, 1.5), getattr(jnp, name)(x, 1.5), rtol=1e-13, atol=1e-13)
    x64 = x.astype(np.complex64)
    _close(getattr(tnp, name)(x64, x64.T), getattr(jnp, name)(x64, x64.T), rtol=2e-5,
           atol=2e-5)


def test_logaddexp2_complex_grad() -> None:
    x = np.array([0.3 + 0.2j, -1.0 + 2.0j, 2.0 - 0.5j])
    y = np.array([1.0 - 1.0j, 0.5 + 0.5j, -0.5 + 3.0j])
    for name in ("logaddexp", "logaddexp2"):
        def f(a: Any, b: Any, m: Any = tnp, name: str = name) -> Any:
            return m.real(getattr(m, name)(a, b)).sum()

        def g(a: Any, b: Any, name: str = name) -> Any:
            return f(a, b, jnp, name)
        _close(tg.grad(f, argnums=(0, 1))(x, y)[0], jax.grad(g, argnums=(0, 1))(x, y)[0],
               rtol=1e-12)
        _close(tg.grad(f, argnums=(0, 1))(x, y)[1], jax.grad(g, argnums=(0, 1))(x, y)[1],
               rtol=1e-12)


def test_logaddexp_real_unchanged() -> None:
    a, b = np.array([1.0, -np.inf, np.inf, 700.0]), np.array([2.0, -np.inf, 3.0, 701.0])
    for name in ("logaddexp", "logaddexp2"):
        for got in _both(getattr(tnp, name), a, b):
            _close(got, getattr(np, name)(a, b), rtol=1e-14)


# --- reshape / ravel with order="F" (was ignored: row-major results) -------------------

@pytest.mark.parametrize("shape", [-1, (4, 6), (2, 2, 6), (24,), (3, 8), (6, -1)])
def test_reshape_order_f(shape: Any) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want = jnp.reshape(x, shape, order="F")
    for got in _both(lambda a: tnp.reshape(a, shape, order="F"), x):
        _close(got, want)
    _close(tg.jit(lambda a: a.reshape(shape, order="F"))(x), want)
    xb = x.astype(ml_dtypes.bfloat16)
    _close(tnp.reshape(xb, shape, order="F"), jnp.reshape(xb, shape, order="F"))


def test_ravel_order_f_and_bad_orders() -> None:
    x = np.arange(12).reshape(3, 4)
    for got in _both(lambda a: tnp.ravel(a, order="F"), x):
        _close(got, jnp.ravel(x, order="F"))
    _close(tg.jit(lambda a: a.ravel(order="F"))(x), np.ravel(x, order="F"))
    _close(tg.jit(lambda a: a.flatten(order="F"))(x), np.ravel(x, order="F"))
    with pytest.raises(NotImplementedError, match="order=A is not implemented"):
        tnp.reshape(x, -1, order="A")
    with pytest.raises(ValueError, match="Unexpected value for 'order' argument: X"):
        tnp.reshape(x, -1, order="X")
    with pytest.raises(NotImplementedError, match="order='K'"):
        tnp.ravel(x, order="K")


# --- vecmat conjugates its vector -------------------------------------------------------

def test_vecmat_conjugates() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    b = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))
    for got in _both(tnp.vecmat, a, b):
        _close(got, jnp.vecmat(a, b), rtol=1e-13)
    _close(tnp.vecmat(a.real, b.real), jnp.vecmat(a.real, b.real), rtol=1e-13)


# --- linspace's step when there is none: JAX's 0-d NaN, eagerly and traced -------------

@pytest.mark.parametrize("num, endpoint", [(0, True), (0, False), (1, True), (1, False),
                                           (3, True)])
def test_linspace_retstep_shapes(num: int, endpoint: bool) -> None:
    s = np.ones((2, 2), complex)
    want = jnp.linspace(s, 2 * s, num, endpoint=endpoint, retstep=True, axis=1)
    for got in _both(lambda a, b: tnp.linspace(a, b, num, endpoint=endpoint, retstep=True,
                                               axis=1), s, 2 * s):
        _close(got[0], want[0], rtol=1e-14)
        _close(got[1], want[1], rtol=1e-14)


# --- geomspace of complex values under jit (the sign rotated the wrong way) ------------

@pytest.mark.parametrize("start, stop", [
    (np.array(1 + 2j), np.array([[3 + 1j, -2 + 1j], [1 - 1j, 4j]])),
    (np.array(-2.0), np.array([[3 + 1j, -2 + 1j], [1 - 1j, 4j]])),
    (np.array([-1.0, 2.0]), np.array([-3.0, 5.0]))])
@pytest.mark.parametrize("num, endpoint", [(5, False), (1, True), (4, True)])
def test_geomspace_complex_traced(start: Any, stop: Any, num: int, endpoint: bool) -> None:
    want = jnp.geomspace(start, stop, num, endpoint=endpoint, axis=-1)
    for got in _both(lambda a, b: tnp.geomspace(a, b, num, endpoint=endpoint, axis=-1),
                     start, stop):
        _close(got, want, rtol=1e-13)


# --- round with more decimals than the dtype holds: the value itself (JAX issue 31689) --

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16,
                                   np.complex64])
@pytest.mark.parametrize("decimals", [1, 3, 10, 100, 1000])
def test_round_many_decimals(dtype: Any, decimals: int) -> None:
    x = np.array([1.5, 2.25, -3.125, 7.3, 0.0], dtype)
    want = jnp.round(x, decimals)
    for got in _both(lambda a: tnp.round(a, decimals), x):
        _close(got, want, rtol=1e-6)
        assert np.all(np.isfinite(np.asarray(got).astype(np.complex128)))


def test_round_large_value_with_decimals() -> None:
    x = np.array([1e30, -2.5e37, 1.25], np.float32)   # 1e30 * 1e10 overflows float32
    _close(tnp.round(x, 10), x)
    _close(tg.jit(lambda a: tnp.round(a, 10))(x), x)
    _close(tnp.round(np.array([125.0, 135.0]), -1), np.array([120.0, 140.0]))


# --- sinc's derivatives of every order at 0 (were all 0) -------------------------------

def _deriv(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x: tg.jvp(f, (x,), (1.0,))[1]


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_sinc_derivatives_at_zero(order: int) -> None:
    want = {1: 0.0, 2: -np.pi ** 2 / 3, 3: 0.0, 4: np.pi ** 4 / 5}[order]
    transforms: list[Any] = [_deriv, tg.grad]
    for ops in itertools.combinations_with_replacement(transforms, order):
        f: Any = tnp.sinc
        for op in ops:
            f = op(f)
        np.testing.assert_allclose(f(0.0), want, atol=1e-12, rtol=1e-12)
        np.testing.assert_allclose(tg.jit(f)(0.0), want, atol=1e-12, rtol=1e-12)


def test_sinc_values_and_grads_away_from_zero() -> None:
    x = np.linspace(-2.0, 2.0, 9)
    _close(tnp.sinc(x), np.sinc(x), rtol=1e-14, atol=1e-15)
    _close(tg.vmap(tg.grad(tnp.sinc))(x), np.asarray(jax.vmap(jax.grad(jnp.sinc))(x)),
           rtol=1e-12, atol=1e-14)
    assert tnp.sinc(np.float32(0)).dtype == np.float32
    _close(tnp.sinc(np.array([0, 1, 2])), np.sinc(np.array([0, 1, 2])), atol=1e-15)


# --- odd reflection of integers: the integers' wrapping arithmetic, as NumPy's --------

@pytest.mark.parametrize("dtype", [np.uint32, np.int8, np.uint8, np.int64, np.uint64])
@pytest.mark.parametrize("mode", ["symmetric", "reflect"])
def test_pad_odd_integers(dtype: Any, mode: Any) -> None:
    info = np.iinfo(dtype)
    x = np.random.default_rng(0).integers(info.min, info.max, (3, 4), dtype=dtype)
    for pw in [((0, 1), (1, 2)), ((5, 7), (9, 3))]:
        want = np.pad(x, pw, mode=mode, reflect_type="odd")
        got = tg.jit(lambda a: tnp.pad(a, pw, mode=mode, reflect_type="odd"))(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


# --- gradient keeps a bfloat16 input's dtype --------------------------------------------

def test_gradient_bfloat16_dtype() -> None:
    y = np.array([1.0, 4.0, 9.0, 16.0, 25.0], ml_dtypes.bfloat16)
    x = np.array([0.0, 1.0, 2.5, 3.0, 4.5], ml_dtypes.bfloat16)
    for got in _both(tnp.gradient, y) + _both(tnp.gradient, y, x):
        assert got.dtype == ml_dtypes.bfloat16
    _close(tnp.gradient(y), jnp.gradient(y), rtol=1e-2)


# --- attributes of tracers (itemsize, nbytes, view, tobytes) and of eager results -------

@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.complex128, np.bool_, np.uint16])
def test_tracer_itemsize_nbytes(dtype: Any) -> None:
    x = np.ones((3, 5), dtype)
    assert tg.jit(lambda a: a.itemsize)(x) == jnp.asarray(x).itemsize == x.itemsize
    assert tg.jit(lambda a: a.nbytes)(x) == jnp.asarray(x).nbytes == x.nbytes
    assert tg.vmap(lambda a: a.nbytes + 0 * a.sum())(x)[0] == x.nbytes // 3


@pytest.mark.parametrize("dtype", ["float64", "uint16", "int8", "float32", "int32", "bool",
                                   "complex64"])
def test_tracer_view(dtype: str) -> None:
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = jax.jit(lambda a: a.view(dtype))(x)
    got = tg.jit(lambda a: a.view(dtype))(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # batched: the last axis is the one that changes
    np.testing.assert_array_equal(np.asarray(tg.vmap(lambda a: a.view(dtype))(x)),
                                  np.asarray(jax.vmap(lambda a: a.view(dtype))(x)))


def test_tracer_view_scalar_and_errors() -> None:
    s = np.array(1.5, np.float32)
    assert int(tg.jit(lambda a: a.view(np.int32))(s)) == int(s.view(np.int32))
    bits = np.array([0x7F800000, 0xFF800001, 0, 0x80000000], np.uint32)   # inf, a NaN, 0, -0
    np.testing.assert_array_equal(
        np.asarray(tg.jit(lambda a: a.view(np.float32).view(np.uint32))(bits)), bits)
    with pytest.raises(ValueError, match="0d array"):
        tg.jit(lambda a: a.view(np.int8))(s)
    with pytest.raises(ValueError, match="divisor"):
        tg.jit(lambda a: a.view(np.float64))(np.ones(3, np.float32))
    with pytest.raises(NotImplementedError, match="`type` argument"):
        tg.jit(lambda a: a.view(np.float32, np.ndarray))(s)


def test_tracer_tobytes_raises_jax_error() -> None:
    v = np.arange(12, dtype=np.int32).reshape(3, 4)
    with pytest.raises(tg.errors.ConcretizationTypeError,
                       match=r"The tobytes\(\) method was called on traced array"):
        tg.jit(lambda x: x.tobytes())(v)
    with pytest.raises(tg.errors.ConcretizationTypeError, match="tobytes"):
        tg.grad(lambda x: (x.tobytes(), x)[1].sum())(v.astype(float))
    assert tnp.asarray(v).tobytes() == v.tobytes()


def test_eager_result_aval_weak_type_pointer() -> None:
    x: Any = tnp.arange(6.0).reshape(2, 3)   # (tangentia.typing's Array lists fewer attributes)
    assert (x.aval.shape, x.aval.dtype, x.aval.weak_type) == ((2, 3), np.float64, False)
    assert x.aval == tg.typeof(x)
    assert x.weak_type is False and x[1:].weak_type is False
    w: Any = tnp.asarray(x)
    assert x.unsafe_buffer_pointer() == w.unsafe_buffer_pointer()
    y: Any = tnp.array(x, copy=True)
    assert x.unsafe_buffer_pointer() != y.unsafe_buffer_pointer()
    z: Any = tnp.ravel_multi_index((tnp.array([0, 1], np.int8),) * 2, (2, 3))
    assert z.weak_type is False


# --- traced k of eye/tri, traced obj of insert, traced ix_, JAX's errors for traced bounds --

@pytest.mark.parametrize("n, m", [(0, None), (4, None), (4, 0), (4, 1), (3, 5), (5, 3)])
@pytest.mark.parametrize("name", ["eye", "tri"])
def test_eye_tri_traced_k(n: int, m: int | None, name: str) -> None:
    for k in [-4, -1, 0, 2, 3, -2 ** 33, 2 ** 33]:
        want = getattr(jnp, name)(n, M=m, k=k, dtype=np.int32)
        got = tg.jit(lambda k: getattr(tnp, name)(n, M=m, k=k, dtype=np.int32))(k)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    ks = np.array([-1, 0, 2])
    np.testing.assert_array_equal(np.asarray(tg.vmap(lambda k: getattr(tnp, name)(n, m, k))(ks)),
                                  np.asarray(jax.vmap(lambda k: getattr(jnp, name)(n, m, k))(ks)))


def test_eye_tri_traced_dimension_error() -> None:
    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values of "
                                        "integer type.*tri: argument 'N'"):
        tg.jit(tnp.tri)(3, M=3, k=0)
    with pytest.raises(TypeError, match="Shapes must be 1D sequences.*eye: argument 'M'"):
        tg.jit(lambda m: tnp.eye(3, m))(3)


@pytest.mark.parametrize("shape, axis", [((5,), None), ((3, 4), 0), ((3, 4), -1),
                                         ((2, 3, 4), None), ((2, 3, 4), 1)])
def test_insert_traced_obj(shape: tuple[int, ...], axis: int | None) -> None:
    x = np.random.default_rng(0).standard_normal(shape)
    n = x.size if axis is None else x.shape[axis]
    f = tg.jit(lambda x, o, v: tnp.insert(x, o, v, axis=axis))
    for obj in [0, 2, n, -1, -n, [1], [0, 2, 2], [n, 0, -1, 1], 10 * n, -10 * n]:
        o = np.asarray(obj)
        clipped = np.clip(np.where(o < 0, o + n, o), 0, n)   # JAX's reading of a traced obj
        vals: Any
        for vals in [7.5, np.arange(3.0)]:
            try:
                want = np.insert(x, clipped, vals, axis=axis)
            except ValueError:
                continue   # (values that do not broadcast to the block)
            _close(f(x, o, vals), want)
    # out-of-range indices are clipped, as JAX's (checked against JAX once)
    _close(f(x, np.array([10 * n, -10 * n]), 1.0),
           jax.jit(lambda x, o: jnp.insert(x, o, 1.0, axis=axis))(x, np.array([10 * n, -10 * n])))


def test_insert_traced_obj_errors() -> None:
    with pytest.raises(ValueError, match="one-dimensional"):
        tg.jit(lambda o: tnp.insert(np.arange(4), o, 9))(np.zeros((2, 2), int))
    with pytest.raises(TypeError, match="integer indices"):
        tg.jit(lambda o: tnp.insert(np.arange(4), o, 9))(1.5)


@pytest.mark.parametrize("shapes", [((7,),), ((3,), (4,)), ((3,), (1,), (4,))])
def test_ix_traced(shapes: tuple[tuple[int, ...], ...]) -> None:
    args = [np.arange(s[0], dtype=np.int32) * 2 for s in shapes]
    want = jnp.ix_(*args)
    got = tg.jit(tnp.ix_)(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _close(g, w)
    with pytest.raises(ValueError, match="must be 1-dimensional"):
        tg.jit(tnp.ix_)(np.zeros((2, 2), int))


@pytest.mark.parametrize("name", ["mgrid", "ogrid", "r_", "c_"])
def test_traced_slice_bounds_raise_jax_error(name: str) -> None:
    with pytest.raises(tg.errors.ConcretizationTypeError, match=f"slice start of jnp.{name}"):
        tg.jit(lambda a, b: getattr(tnp, name)[a:b])(0, 2)


def test_mgrid_ogrid_values() -> None:
    for key in [slice(None, 4), (slice(None, 3), slice(None, 2)), slice(1, 4, 2),
                slice(-1, 1, 5j), (slice(0, 5), slice(1, 3))]:
        _close(tnp.mgrid[key], jnp.mgrid[key])
        got, want = tnp.ogrid[key], jnp.ogrid[key]
        for g, w in zip(got if isinstance(got, (list, tuple)) else [got],
                        want if isinstance(want, (list, tuple)) else [want]):
            _close(g, w)
    _close(tg.jit(lambda: tnp.mgrid[:4])(), np.mgrid[:4])


# --- ldexp over the whole exponent range (JAX issue 28040), bfloat16 kept --------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16])
def test_ldexp_extreme_exponents(dtype: Any) -> None:
    info = ml_dtypes.finfo(dtype)
    span = int(np.log2(float(info.max)) - np.log2(float(info.tiny))) - 1
    x = np.array([info.tiny, info.max, 0, np.inf, -3.5, np.nan, 1.0, 1.0, 0.5], dtype)
    e = np.array([span, -span, 100000, -5, 3, 2, -100000, 100000, 1 << (info.nexp - 1)])
    want = jnp.ldexp(x, e)
    for got in _both(tnp.ldexp, x, e):
        _close(got, want, rtol=0)
    np.testing.assert_allclose(tg.grad(lambda v: tnp.ldexp(v, 3))(1.5), 8.0)
    with pytest.raises(TypeError, match="ldexp: argument 'x2' must be integers"):
        tnp.ldexp(x, 1.5)


# --- unwrap: integer periods keep integers, empty axes, bfloat16 ------------------------

@pytest.mark.parametrize("discont, period", [(2, 2), (None, 2), (np.pi, 2), (2, 4), (None, 3),
                                             (1, 5), (None, 2 * np.pi)])
def test_unwrap_dtypes(discont: Any, period: Any) -> None:
    x = np.array([[1, 5, -9, 7], [3, 50, -40, 2]], np.int8)   # (differences fit in int8)
    xs: list[Any] = [x, x.astype(np.int16), x.astype(np.float32), x.astype(np.float64)]
    for xx in xs:
        # NumPy's values (JAX's agree but for odd integer periods, where NumPy's integer
        # boundary rule applies), JAX's dtype
        want = np.unwrap(xx, discont=discont, period=period)
        for got in _both(lambda a: tnp.unwrap(a, discont=discont, period=period), xx):
            _close(got, want, rtol=1e-6, atol=1e-5)
            assert got.dtype == jnp.unwrap(xx, discont=discont, period=period).dtype
    xb = x.astype(ml_dtypes.bfloat16)
    for got in _both(lambda a: tnp.unwrap(a, discont=discont, period=period), xb):
        assert got.dtype == ml_dtypes.bfloat16


def test_unwrap_empty_axis() -> None:
    assert tnp.unwrap(np.zeros((3, 0)), axis=1).shape == (3, 0)
    assert tnp.unwrap(np.zeros((0,), np.float32)).dtype == np.float32
    assert tg.jit(lambda a: tnp.unwrap(a, axis=0))(np.zeros((0, 4), np.int16)).shape == (0, 4)


def test_load_bfloat16(tmp_path: Any) -> None:
    x = np.arange(4).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "x.npy", x)   # NumPy writes bfloat16 as 2-byte void items
    got = tnp.load(tmp_path / "x.npy")
    assert got.dtype == ml_dtypes.bfloat16 == jnp.load(tmp_path / "x.npy").dtype
    np.testing.assert_array_equal(got.astype(np.float32), x.astype(np.float32))


# --- cov / corrcoef of complex data (X X^T was used: wrong numbers), corrcoef's dtype ---

def test_cov_corrcoef_complex() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    y = rng.standard_normal((2, 5))
    w, aw = rng.integers(1, 4, 5), rng.random(5)
    _close(tnp.cov(x), np.cov(x), rtol=1e-13)
    _close(tnp.cov(x, y, fweights=w, aweights=aw), np.cov(x, y, fweights=w, aweights=aw),
           rtol=1e-13)
    for rowvar in (True, False):
        for got in _both(lambda a: tnp.corrcoef(a, rowvar=rowvar), x):
            _close(got, jnp.corrcoef(x, rowvar=rowvar), rtol=1e-13, atol=1e-15)
    assert tnp.corrcoef(np.arange(5), np.arange(5), dtype="bfloat16").dtype == ml_dtypes.bfloat16
    with pytest.raises(ValueError, match="corrcoef: dtype must be a subclass of float or complex"):
        tnp.corrcoef(np.arange(5), np.arange(5), dtype=int)


# --- nanargmax/nanargmin: -1 for an all-NaN slice (traced gave 0), JAX's empty error -----

@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanarg_all_nan_and_empty(name: str) -> None:
    x = np.array([[np.nan, np.nan], [1.0, np.nan], [2.0, 3.0]])
    for axis in (None, 0, 1):
        for keepdims in (False, True):
            want = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
            for got in _both(lambda a: getattr(tnp, name)(a, axis=axis, keepdims=keepdims), x):
                _close(got, want)
    assert int(getattr(tnp, name)(np.full(3, np.nan))) == -1
    with pytest.raises(ValueError, match=f"attempt to get {name[3:]} of an empty sequence"):
        getattr(tnp, name)(np.zeros((2, 0)), axis=1)


# --- tensordot's axes checked as JAX's (zip and % read bad axes as other axes) ---------

def test_tensordot_axes_errors() -> None:
    a, b = np.ones((3, 2, 2)), np.ones((2,))
    with pytest.raises(TypeError, match="Number of tensordot axes.*exceeds input ranks"):
        tnp.tensordot(a, b, axes=2)
    with pytest.raises(TypeError, match="tensordot requires axes lists to have equal length"):
        tnp.tensordot(a, b, axes=([0], [0, 1]))
    with pytest.raises(TypeError, match="either ints, tuples or lists"):
        tnp.tensordot(a, b, axes=("bad", "axes"))
    with pytest.raises(TypeError, match="must be an int, a pair of ints, or a pair of lists"):
        tnp.tensordot(a, b, axes="badaxes")
    with pytest.raises(ValueError, match="axis 5 is out of bounds"):
        tnp.tensordot(a, b, axes=([5], [0]))
    _close(tnp.tensordot(a, b, axes=(-1, 0)), jnp.tensordot(a, b, axes=(-1, 0)))
    _close(tnp.tensordot(a, b, np.int64(1)), jnp.tensordot(a, b, 1))


# --- smaller gaps: NumPy integers as method arguments, 0-d repeat/lexsort, empty take ----

def test_small_shape_gaps() -> None:
    assert tg.jit(lambda x: x.transpose(np.int64(0)))(np.zeros(3)).shape == (3,)
    assert tg.jit(lambda x: x.reshape(np.int64(6)))(np.zeros((2, 3))).shape == (6,)
    _close(tnp.repeat(np.int64(3), 2, axis=0), jnp.repeat(np.int64(3), 2, axis=0))
    _close(tg.jit(lambda x: tnp.repeat(x, 2, axis=0, total_repeat_length=2))(np.array(4)),
           np.array([4, 4]))
    keys = tuple(np.array([True, False, True]))
    _close(tnp.lexsort(keys), jnp.lexsort(keys))
    _close(tnp.take(np.ones((2, 0, 4)), np.array([], np.int32), axis=1), np.ones((2, 0, 4)))
    with pytest.raises(IndexError, match="non-empty jnp.take"):
        tg.jit(lambda i: tnp.take(np.ones((2, 0, 4)), i, axis=1))(np.array([0]))


# --- JAX's wording for shape and concreteness errors -----------------------------------

def test_creation_shape_errors() -> None:
    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values of "
                                        "integer type.*\nIf using `jit`, try using"):
        tg.jit(tnp.zeros)(2)
    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
        tnp.zeros(1.0)
    with pytest.raises(TypeError, match="nonnegative"):
        tnp.ones((-1, 1))
    for name in ("zeros", "ones", "empty"):
        with pytest.raises(TypeError, match=rf"Did you accidentally write `jax\.numpy\.{name}"
                                            r"\(2, 3\)` when you meant"):
            getattr(tnp, name)(2, 3)
    assert tnp.zeros(np.array([2, 3])).shape == (2, 3) and tnp.zeros(np.int64(3)).shape == (3,)
    with pytest.raises(ValueError, match="Cannot broadcast to shape with fewer dimensions"):
        tnp.broadcast_to(np.zeros((3, 4, 5)), (4, 5))
    with pytest.raises(NotImplementedError, match="Unimplemented padding mode '1' for np.pad"):
        tnp.pad(np.arange(3), 1, mode=1)   # type: ignore[arg-type]  # (a bad mode on purpose)


def test_concreteness_errors_name_the_argument() -> None:
    CE = tg.errors.ConcretizationTypeError
    with pytest.raises(CE, match="It arose in the jnp.arange argument 'stop'"):
        tg.jit(tnp.arange)(3)
    with pytest.raises(CE, match="It arose in the jnp.arange argument 'start'"):
        tg.jit(lambda start: tnp.arange(start, 3))(0)
    with pytest.raises(CE, match="^Abstract tracer value encountered where concrete value"):
        tg.jit(lambda idx: tnp.split(np.zeros((12, 2)), idx))(2.0)
    with pytest.raises(CE, match="Abstract tracer value encountered where concrete value"):
        tg.jit(lambda idx: tnp.split(np.zeros((12, 2)), [2, idx]))(2.0)
    # known values (eager jvp) split
    assert len(tg.jvp(lambda i: tnp.split(np.zeros((12, 2)), i), (2.0,), (1.0,))[0]) == 2
    assert len(tg.jvp(lambda i: tnp.split(np.zeros((12, 2)), (1, i.astype(np.int32))), (2.0,),
                      (1.0,))[0]) == 3
    with pytest.raises(CE, match="jnp.choose was jit-compiled with mode='raise'. Use "
                                 "mode='wrap' or mode='clip' instead."):
        tg.jit(lambda a, c: tnp.choose(a, c, mode="raise"))(np.array([0, 1]),
                                                             [np.zeros(2), np.ones(2)])


# --- array(): JAX's errors for values it has no array of (NumPy made object arrays) -----

def test_array_rejects_what_jax_rejects() -> None:
    with pytest.raises(ValueError, match="None is not a valid value for jnp.array"):
        tnp.array([0.0, None])
    with pytest.raises(OverflowError, match="Python int 9223372036854775808 too large to "
                                            "convert to int64"):
        tnp.array(2 ** 63)
    with pytest.raises(OverflowError, match="too large to convert to int64"):
        tnp.array([-2 ** 63 - 1])
    with pytest.raises(TypeError, match="JAX only supports number, bool, and string dtypes"):
        tnp.array(3, [("a", "<i4"), ("b", "<i4")])   # type: ignore[arg-type]  # (on purpose)
    with pytest.raises(TypeError):
        tnp.array(list[tuple[float, float]])
    assert tnp.array(2 ** 63, dtype=np.uint64).dtype == np.uint64
    assert tnp.array([np.uint64(2 ** 63)]).dtype == np.uint64
    assert tnp.array(np.arange(3).astype(ml_dtypes.bfloat16)).dtype == ml_dtypes.bfloat16
    assert tnp.array(np.zeros(2, ml_dtypes.float8_e4m3fn)).dtype == ml_dtypes.float8_e4m3fn
    with pytest.raises(ValueError, match="rot90 requires its first argument to have ndim at "
                                         "least two"):
        tnp.rot90(np.ones(2))


# --- digitize of decreasing bins (a value on a bin edge landed one bin off) -------------
# (searchsorted/digitize keep NumPy's int64 indices, where JAX's are int32: deliberate, as
# tests/test_numpy_extra.py asserts)

def test_searchsorted_method_keyword_traced() -> None:
    a, v = np.arange(5.0), np.array([1.0, 2.5])
    def f(s: Any) -> Any:
        x: Any = tnp.asarray(s)   # (a tracer here: JAX's method takes method=)
        return x.searchsorted(v, method="compare_all")
    got = tg.jit(f)(a)
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(a, v))


def test_digitize_decreasing_bins_match_numpy() -> None:
    rng = np.random.default_rng(0)
    for trial in range(100):
        bins = np.sort(rng.integers(0, 6, rng.integers(1, 6))).astype(float)
        if trial % 2:
            bins = bins[::-1].copy()
        x = rng.integers(-1, 7, 10).astype(float)   # on the edges too
        for right in (False, True):
            want = np.digitize(x, bins, right=right)
            np.testing.assert_array_equal(np.asarray(tnp.digitize(x, bins, right=right)), want)
    f = tg.jit(lambda x, b: tnp.digitize(x, b))
    np.testing.assert_array_equal(np.asarray(f(np.array([1.0, 2.0]), np.arange(5.0)[::-1])),
                                  np.digitize([1.0, 2.0], np.arange(5.0)[::-1]))


def test_iscomplexobj_of_traced_sequences_and_int_overflow_wording() -> None:
    assert tg.jit(lambda v: tnp.iscomplexobj([v]))(1j)
    assert not tg.jit(lambda v: tnp.iscomplexobj([v, 1.0]))(1.0)
    assert tnp.iscomplexobj([1, 2j]) and not tnp.iscomplexobj([1.0])
    with pytest.raises(OverflowError, match="Python int too large"):
        tnp.array([0, np.iinfo(np.int64).min - 1])


def test_pad_with_a_function() -> None:
    def np_fill(vector: Any, width: Any, iaxis: int, kwargs: Any) -> None:
        vector[:width[0]] = kwargs.get("padder", 10)
        vector[vector.shape[0] - width[1]:] = kwargs.get("padder", 10)

    def fill(vector: Any, width: Any, iaxis: int, kwargs: Any) -> Any:
        vector = vector.at[:width[0]].set(kwargs.get("padder", 10))
        return vector.at[vector.shape[0] - width[1]:].set(kwargs.get("padder", 10))

    arr = np.arange(24).reshape(2, 3, 4)
    widths: list[Any] = [2, ((1, 0), (0, 2), (1, 1))]
    for pw in widths:
        want = np.pad(arr, pw, np_fill, padder=7)
        np.testing.assert_array_equal(np.asarray(tnp.pad(arr, pw, fill, padder=7)), want)
        np.testing.assert_array_equal(np.asarray(jnp.pad(arr, pw, fill, padder=7)), want)
        np.testing.assert_array_equal(
            np.asarray(tg.jit(lambda a: tnp.pad(a, pw, fill, padder=7))(arr)), want)
    with pytest.raises(TypeError, match="immutable"):
        tnp.pad(arr, 1, np_fill)   # NumPy's in-place style


def test_logaddexp_small_terms_and_dtypes() -> None:
    # log(1 + tiny) rounded the smaller term away; NumPy's dtype for integers and booleans
    a, b = np.array([0, 0, -128], np.int32), np.array(-0.0)
    _close(tnp.logaddexp(a, b), np.logaddexp(a, b), rtol=1e-14)
    v = np.array([-np.inf, -1000.0, -128.0, -1.0, 0.0, 1e-300, 2.0, 700.0, 710.0, np.inf, np.nan])
    x, y = np.meshgrid(v, v)
    for got in _both(tnp.logaddexp, x, y):
        np.testing.assert_array_equal(np.asarray(got), np.logaddexp(x, y))
    pairs: list[Any] = [(np.array([], bool), np.array([True])), (np.int8(3), np.int8(4))]
    for p, q in pairs:
        assert tnp.logaddexp(p, q).dtype == np.logaddexp(p, q).dtype
    c = np.array(-0.0 + 0.0j)
    _close(tnp.logaddexp(a, c), jnp.logaddexp(a, c), rtol=1e-14)
    xs, ys = np.array([0.3, -2.0, 5.0, 1.0]), np.array([1.0, -2.0, -3.0, 1.0])   # ties too
    for g, w in zip(tg.grad(lambda a, b: tnp.logaddexp(a, b).sum(), argnums=(0, 1))(xs, ys),
                    jax.grad(lambda a, b: jnp.logaddexp(a, b).sum(), argnums=(0, 1))(xs, ys)):
        _close(g, w, rtol=1e-14)
