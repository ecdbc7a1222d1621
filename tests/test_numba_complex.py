"""Complex dtypes in the numba backend, tested differentially against the NumPy backend.

complex64 and complex128 programs compile with numba (no warning, no
whole-program fallback): elementwise arithmetic, ``cmath`` functions, complex
parts, casts, select, reductions, ``dot_general``, indexing and loops are
generated code; what has no native lowering for complex (orderings, max/min)
runs the NumPy implementation of that one equation in object mode.  Values
must agree within rounding (rtol 1e-12 for complex128, 1e-5 for complex64) and
dtypes exactly.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from test_numba_backend import NUMBA, numpy_backend, program  # noqa: E402

C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
CTYPES = [C64, C128]
SHAPES = [(3,), (4, 5)]              # scalarized, fused loops


def sample(dtype, shape, seed=0, scale=1.5):
    rng = np.random.default_rng(seed)
    z = rng.uniform(-scale, scale, shape) + 1j * rng.uniform(-scale, scale, shape)
    return z.astype(dtype)


def assert_close(got, want, what):
    assert len(got) == len(want), what
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        where = f"{what} output {k}"
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, NumPy backend gives {w.dtype}"
        assert g.shape == w.shape, where
        if w.dtype.kind in "fc":
            single = w.dtype in (np.float32, C64)
            np.testing.assert_allclose(g, w, rtol=1e-5 if single else 1e-12,
                                       atol=1e-5 if single else 1e-13, equal_nan=True,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(g, w, err_msg=where)


def check(f, *args):
    """``f``'s program run by both backends (numba without any fallback warning)."""
    jaxpr, full = program(f, *args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fn = NUMBA.compile(jaxpr)
    got = fn(*full)
    with np.errstate(all="ignore"):
        want = numpy_backend().compile(jaxpr)(*full)
    assert_close(got, want, getattr(f, "__name__", "program"))
    return got, NUMBA.source(jaxpr)


def _unary(x):
    return [-x, tnp.abs(x), tnp.exp(x), tnp.log(x), tnp.sqrt(x), tnp.sin(x), tnp.cos(x),
            tnp.tan(x), tnp.tanh(x), tnp.sinh(x), tnp.cosh(x), tnp.arcsin(x), tnp.arctan(x),
            tnp.arcsinh(x), tnp.real(x), tnp.imag(x), tnp.conj(x), x ** 3, x * x,
            tnp.isfinite(x), lax.integer_pow(x, -2)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", CTYPES, ids=str)
def test_unary_elementwise(dtype, shape):
    _, src = check(_unary, sample(dtype, shape))
    assert "objmode" not in src and "cmath." in src


def _binary(x, y, r):
    return [x + y, x - y, x * y, x / y, x ** y, x == y, x != y, x + r, r * y, x / r,
            lax.complex(r, r * 2), x * 2.5, 1j * x, tnp.where(tnp.real(x) > 0, x, y),
            tnp.logical_and(x, y)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", CTYPES, ids=str)
def test_binary_elementwise_and_mixed_real_operands(dtype, shape):
    real = np.float32 if dtype == C64 else np.float64
    x, y = sample(dtype, shape, 1), sample(dtype, shape, 2)
    x.flat[0] = y.flat[0]   # (an equal pair)
    _, src = check(_binary, x, y, sample(dtype, shape, 3).real.astype(real))
    assert "objmode" not in src


def test_nonfinite_values_follow_numpy():
    z = np.array([0j, -0.0 + 0j, np.inf + 0j, np.nan + 1j, 1 + np.inf * 1j, -np.inf + 2j])
    f = lambda x: [tnp.exp(x), tnp.abs(x), tnp.isnan(x), tnp.isinf(x), tnp.isfinite(x),  # noqa: E731
                   x * 2, tnp.sqrt(x), tnp.real(x), tnp.imag(x)]
    check(f, z)


@pytest.mark.parametrize("dtype", CTYPES, ids=str)
def test_casts_take_the_real_part(dtype):
    z = sample(dtype, (4, 5), 4, scale=3.0)
    f = lambda x: [x.astype(np.float64), x.astype(np.float32), x.astype(np.int64),  # noqa: E731
                   x.astype(bool), tnp.real(x).astype(dtype), x.astype(C128 if dtype == C64 else C64)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        check(f, z)
        check(f, z[0, :3])


@pytest.mark.parametrize("shape", [(3, 4), (6, 7)], ids=str)
@pytest.mark.parametrize("dtype", CTYPES, ids=str)
def test_reductions(dtype, shape):
    z = sample(dtype, shape, 5)
    f = lambda x: [tnp.sum(x), tnp.sum(x, axis=0), tnp.sum(x, axis=1), tnp.prod(x, axis=1),  # noqa: E731
                   tnp.prod(x * 0.5), tnp.mean(x), tnp.sum(tnp.exp(x) * x, axis=0)]
    _, src = check(f, z)
    assert "objmode" not in src


@pytest.mark.parametrize("dims", [(2, 3, 4), (20, 30, 40)], ids=str)   # fused / BLAS
@pytest.mark.parametrize("dtype", CTYPES, ids=str)
def test_dot(dtype, dims):
    m, k, n = dims
    a, b = sample(dtype, (m, k), 6), sample(dtype, (k, n), 7)
    r = sample(dtype, (k, n), 8).real
    f = lambda a, b, r: [a @ b, a @ r, tnp.einsum("ij,ij->i", b, b), tnp.vdot(b, b)]  # noqa: E731
    _, src = check(f, a, b, r)
    # (the einsum kernel of numba_backend/kernels.py takes real operands: NumPy's einsum, per equation)
    assert [ln.split()[2] for ln in src.splitlines() if ln.startswith("# _fb")] == ["einsum"]


def test_indexing_and_functional_updates():
    z = sample(C128, (6,), 9)

    def f(x, i):
        return [x[1], x[2:5], x[i], x.at[i].set(x[0] * 1j), x.at[1].add(2j), x.at[i].mul(x[3])]
    _, src = check(f, z, np.int64(-2))
    assert "objmode" not in src


def test_orderings_run_the_numpy_implementation_per_equation():
    # NumPy orders complex numbers lexicographically; numba has no such comparison.
    z = sample(C128, (5,), 10)
    z[1] = z[3].real + 5j
    f = lambda x: [tnp.maximum(x, x[::-1]), tnp.max(x), x < x[::-1], tnp.argmax(x), x + 1]  # noqa: E731
    _, src = check(f, z)
    assert "objmode" in src


@pytest.mark.parametrize("dtype", CTYPES, ids=str)
def test_scan_and_while_with_complex_carries(dtype):
    z0, xs = sample(dtype, (3,), 11), sample(dtype, (7, 3), 12, scale=0.5)

    def f(z0, xs):
        def step(c, x):
            c = c * (0.9 + 0.1j) + x
            return c, tnp.abs(c) + tnp.real(c * tnp.conj(x))
        c, ys = lax.scan(step, z0, xs)
        w = lax.while_loop(lambda s: tnp.abs(s[1]) < 50.0, lambda s: (s[0] + 1, s[1] * (1 + 1j)),
                           (0, c[0] + 0.1))
        return [c, ys, w[0], w[1]]
    got, src = check(f, z0, xs)
    assert "objmode" not in src
    c = z0
    for x in xs:
        c = c * dtype.type(0.9 + 0.1j) + x
    np.testing.assert_allclose(got[0], c, rtol=1e-5)


def _jit_without_warnings(f):
    g = tg.jit(f, backend="numba")

    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            return g(*args)
    return run


def test_grad_of_real_loss_through_complex_intermediates():
    def loss(x):
        z = tnp.exp(1j * x) * (x + 2j) + tnp.sum(x * tnp.sin(x + 0.5j))
        return tnp.sum(tnp.abs(z) ** 2) + tnp.real(tnp.prod(z[:2]))
    x = np.linspace(-1.0, 1.0, 5)
    got = _jit_without_warnings(tg.grad(loss))(x)
    want = tg.grad(loss)(x)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    e = np.eye(5) * 1e-6
    fd = np.array([(loss(x + d) - loss(x - d)) / 2e-6 for d in e])
    np.testing.assert_allclose(got, fd, rtol=1e-6)


def test_jvp_of_holomorphic_function():
    f = lambda z: tnp.sin(z) * tnp.exp(z) + z ** 3 / (z + 3.0)  # noqa: E731
    z, t = sample(C128, (4,), 13), sample(C128, (4,), 14)
    out, tan = _jit_without_warnings(lambda z, t: tg.jvp(f, (z,), (t,)))(z, t)
    np.testing.assert_allclose(out, np.sin(z) * np.exp(z) + z ** 3 / (z + 3), rtol=1e-12)
    df = np.cos(z) * np.exp(z) + np.sin(z) * np.exp(z) + (3 * z ** 2 * (z + 3) - z ** 3) / (z + 3) ** 2
    np.testing.assert_allclose(tan, df * t, rtol=1e-12)
    assert tan.dtype == C128


def test_eager_control_flow_with_complex_values_does_not_warn():
    # eager loops compile with the default backend: numba here
    tg.config.update("jit_backend", "numba")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            out = lax.fori_loop(0, 4, lambda i, c: c * 1j + 0.5, np.complex64(1 + 1j))
    finally:
        tg.config.update("jit_backend", None)
    assert out.dtype == C64
    c = np.complex64(1 + 1j)
    for i in range(4):
        c = c * 1j + 0.5
    np.testing.assert_allclose(out, c)
