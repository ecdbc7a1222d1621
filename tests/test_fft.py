"""tangentia.numpy.fft: values equal numpy.fft's; the fft primitive's rules
(JVP, transpose, batching) against finite differences, the transposition
identity, loops and eager evaluation; gradients against JAX's numbers
(jax 0.10.2, ``jax_enable_x64``), baked in."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.primitives import fft as F

tfft = tnp.fft

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_D = ["fft2", "ifft2", "rfft2", "irfft2"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "rfftn"}
NORMS = [None, "backward", "ortho", "forward"]


def _input(rng, name, shape, dtype=np.float64):
    x = rng.normal(size=shape).astype(dtype)
    if name in REAL_INPUT:
        return x
    return (x + 1j * rng.normal(size=shape)).astype(np.result_type(dtype, np.complex64))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", ONE_D)
def test_one_dimensional_transforms_equal_numpy(name, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3), "shape"))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), "axis")
    n = data.draw(st.none() | st.integers(1, 9), "n")
    norm = data.draw(st.sampled_from(NORMS), "norm")
    if name in ("irfft", "hfft") and n is None and shape[axis] == 1:
        n = 2  # the default length 2 * (m - 1) would be 0
    x = _input(np.random.default_rng(data.draw(st.integers(0, 999), "seed")), name, shape)
    want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    got = getattr(tfft, name)(x, n=n, axis=axis, norm=norm)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", TWO_D + N_D)
def test_multidimensional_transforms_equal_numpy(name, data):
    nd = data.draw(st.integers(2, 3), "rank")
    shape = tuple(data.draw(st.lists(st.integers(2, 5), min_size=nd, max_size=nd), "shape"))
    norm = data.draw(st.sampled_from(NORMS), "norm")
    kw = {"norm": norm}
    if name in N_D:
        k = data.draw(st.integers(1, nd), "k")
        axes = data.draw(st.permutations(range(nd)), "perm")[:k]
        if data.draw(st.booleans(), "with axes"):
            kw["axes"] = tuple(axes)
        if data.draw(st.booleans(), "with s"):
            kw["s"] = tuple(data.draw(st.integers(2, 6), f"s{i}") for i in range(k))
            kw.setdefault("axes", tuple(range(nd - k, nd)))
    else:
        if data.draw(st.booleans(), "axes (0, -1)"):
            kw["axes"] = (0, -1)
        if data.draw(st.booleans(), "with s"):
            kw["s"] = (data.draw(st.integers(2, 6), "s0"), data.draw(st.integers(2, 6), "s1"))
    x = _input(np.random.default_rng(data.draw(st.integers(0, 999), "seed")), name, shape)
    want = getattr(np.fft, name)(x, **kw)
    got = getattr(tfft, name)(x, **kw)
    assert got.shape == want.shape and got.dtype == want.dtype, kw
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ONE_D + TWO_D + N_D)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_dtypes_follow_numpy(name, dtype):
    x = np.arange(12).reshape(3, 4).astype(dtype)
    if name not in REAL_INPUT and dtype == np.float32:
        x = x + 1j * x[::-1]
        x = x.astype(np.complex64)
    want = getattr(np.fft, name)(x)
    got = getattr(tfft, name)(x)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_frequencies_and_shifts_equal_numpy():
    for n in (1, 4, 7):
        np.testing.assert_array_equal(tfft.fftfreq(n, 0.1), np.fft.fftfreq(n, 0.1))
        np.testing.assert_array_equal(tfft.rfftfreq(n, 0.1), np.fft.rfftfreq(n, 0.1))
    assert tfft.fftfreq(4, dtype=np.float32).dtype == np.float32
    x = np.arange(30.0).reshape(5, 6)
    for axes in (None, 0, 1, (1, 0)):
        np.testing.assert_array_equal(tfft.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(tfft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
        np.testing.assert_array_equal(tg.jit(lambda v: tfft.fftshift(v, axes))(x),
                                      np.fft.fftshift(x, axes))


def test_bad_arguments_name_the_function_and_the_argument():
    with pytest.raises(ValueError, match=r'^Invalid norm value bad; should be "backward", '
                       r'"ortho" or "forward"\. \(numpy\.fft\.rfft: argument norm\)'):
        tfft.rfft(np.ones(4), norm="bad")
    for f in (tfft.fft2, tfft.hfft, tfft.ihfft, tfft.irfftn):
        with pytest.raises(ValueError, match=f"numpy.fft.{f.__name__}: argument norm"):
            f(np.ones((2, 4)), norm="Ortho")
    with pytest.raises(TypeError, match=r"numpy\.fft\.rfft: argument a must be real"):
        tfft.rfft(np.ones(4) * 1j)
    with pytest.raises(ValueError, match="numpy.fft.fftn does not support repeated axes"):
        tfft.fftn(np.ones((2, 2)), axes=(0, 0))
    with pytest.raises(ValueError, match="numpy.fft.fft2 only supports 2 axes"):
        tfft.fft2(np.ones((2, 2, 2)), axes=(0, 1, 2))
    with pytest.raises(ValueError, match=r"numpy\.fft\.fft: argument s \(or n\) must be "
                       "positive"):
        tfft.fft(np.ones(4), n=0)
    with pytest.raises(ValueError, match="numpy.fft.fft: axis 2 is out of bounds"):
        tfft.fft(np.ones(4), axis=2)


# ---------------------------------------------------------------------------
# Differentiation

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 5))
Z = X + 1j * RNG.normal(size=(3, 5))
V = np.random.default_rng(1).normal(size=(3, 5)) + 1j * np.random.default_rng(2).normal(
    size=(3, 5))
W = np.arange(1.0, 200.0)

CASES = {
    "fft": ("fft", Z, dict(n=6, axis=0, norm="ortho")),
    "ifft": ("ifft", Z, dict(n=4, norm="forward")),
    "rfft": ("rfft", X, dict(n=7)),
    "irfft": ("irfft", Z, dict(n=8)),
    "irfft_odd": ("irfft", Z, dict(n=7, axis=0, norm="ortho")),
    "hfft": ("hfft", Z, dict(n=6)),
    "ihfft": ("ihfft", X, dict(norm="ortho")),
    "fft2": ("fft2", Z, dict(s=(4, 4))),
    "rfft2": ("rfft2", X, dict()),
    "irfft2": ("irfft2", Z, dict(s=(3, 6), norm="forward")),
    "fftn": ("fftn", X, dict(axes=(1, 0))),
    "irfftn": ("irfftn", Z, dict()),
}

# g = jax.grad(_loss(jnp, case))(a): (Re sum(g * V), Im sum(g * V), sum |g|).
JAX = {
    'fft': (90.95335413138163, -15.697794621438698, 587.6842405843421),
    'ifft': (145.28664424700665, 150.52541924009327, 656.6906247940524),
    'rfft': (204.17209280645534, 36.62425265173294, 780.5938080424828),
    'irfft': (25.723801758985573, 31.61903310931891, 112.43272404817819),
    'irfft_odd': (159.85145030452617, 37.15853774264954, 1022.9203629421029),
    'hfft': (694.5664128478201, 630.261870946888, 2434.5674524890896),
    'ihfft': (28.220596695362538, 10.595604536876426, 105.84473087160376),
    'fft2': (174.19096345611484, 878.2728096568765, 3733.1208923722065),
    'rfft2': (331.1856626429378, 157.6589346062949, 1169.5201295432075),
    'irfft2': (1863.4461049736071, 1670.5130935383838, 7797.672512708854),
    'fftn': (441.26939667895164, 306.1543846887331, 2843.3016998895355),
    'irfftn': (4.396499685098679, 16.513663435810805, 47.40638133826367),
}


def _loss(np_, name, kw):
    def f(a):
        y = getattr(np_.fft, name)(a, **kw)
        w = W[:y.size].reshape(y.shape)
        return np_.sum(w * np_.abs(y) ** 2) + np_.sum(np_.real(y) * w[::-1])
    return f


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_jax(case):
    name, a, kw = CASES[case]
    g = tg.grad(_loss(tnp, name, kw))(a)
    assert g.dtype == a.dtype
    p = np.sum(g * V)
    np.testing.assert_allclose((p.real, p.imag, np.abs(g).sum()), JAX[case], rtol=1e-10)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_finite_differences(case):
    name, a, kw = CASES[case]
    f = _loss(tnp, name, kw)
    g = tg.grad(f)(a)
    d = V.real if a.dtype.kind == "f" else V
    h = 1e-6
    fd = (float(f(a + h * d)) - float(f(a - h * d))) / (2 * h)
    np.testing.assert_allclose(np.sum(g * d).real, fd, rtol=1e-6)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_and_vjp_are_transposes(case, seed):
    name, a, kw = CASES[case]
    rng = np.random.default_rng(seed)

    def f(x):
        return getattr(tfft, name)(x, **kw)

    v = _input(rng, "rfft" if a.dtype.kind == "f" else "fft", a.shape)
    out, jv = tg.jvp(f, (a,), (v,))
    np.testing.assert_allclose(jv, f(v), rtol=1e-12, atol=1e-12)  # linear
    u = _input(rng, "rfft" if out.dtype.kind == "f" else "fft", out.shape)
    ju, = tg.vjp(f, a)[1](u)
    assert ju.dtype == a.dtype
    lhs, rhs = np.sum(u * jv), np.sum(ju * v)
    np.testing.assert_allclose(lhs.real, rhs.real, rtol=1e-10, atol=1e-10)
    if a.dtype.kind == "c" and name in ("fft", "ifft", "fft2"):  # complex-linear maps
        np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)
    (lt,) = tg.linear_transpose(f, a)(u)
    np.testing.assert_allclose(lt, ju, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fft_type,lengths,shape", [
    ("fft", (4,), (2, 4)), ("ifft", (3, 2), (3, 2)), ("rfft", (5,), (3, 5)),
    ("rfft", (2, 4), (2, 4)), ("irfft", (6,), (2, 4)), ("irfft", (3, 5), (3, 3)),
])
def test_primitive_transposes_by_the_pairing(fft_type, lengths, shape):
    rng = np.random.default_rng(0)
    v = _input(rng, "rfft" if fft_type == "rfft" else "fft", shape)
    out = F.fft(v, fft_type, lengths)
    u = _input(rng, "rfft" if out.dtype.kind == "f" else "fft", out.shape)
    (ju,) = tg.linear_transpose(lambda x: F.fft(x, fft_type, lengths), v)(u)
    np.testing.assert_allclose(np.sum(u * out).real, np.sum(ju * v).real, rtol=1e-12)


def test_vmap_matches_a_loop_and_jit_matches_eager():
    xs = np.random.default_rng(4).normal(size=(3, 4, 6))
    for f in (lambda x: tfft.rfft(x, n=5, norm="ortho"),
              lambda x: tfft.irfft(tfft.rfft(x) * 1j, n=6),
              lambda x: tfft.fft2(x + 0j, s=(3, 3)),
              lambda x: tfft.hfft(x[:, :4], axis=0),
              lambda x: tfft.ifftshift(tfft.fftn(x, axes=(0,)))):
        loop = np.stack([f(x) for x in xs])
        np.testing.assert_allclose(tg.vmap(f)(xs), loop, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tg.vmap(f, in_axes=1, out_axes=1)(xs.transpose(1, 0, 2)),
                                   loop.transpose(1, 0, *range(2, loop.ndim)), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(tg.jit(f)(xs[0]), f(xs[0]), rtol=1e-12, atol=1e-12)
    g = tg.grad(_loss(tnp, "rfft", {"n": 7}))
    np.testing.assert_allclose(tg.vmap(g)(xs), np.stack([g(x) for x in xs]), rtol=1e-12)
    np.testing.assert_allclose(tg.jit(g)(xs[0]), g(xs[0]), rtol=1e-12)
    with warnings.catch_warnings():  # numba has no complex dtypes: it runs NumPy's code
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_allclose(tg.jit(g, backend="numba")(xs[0]), g(xs[0]), rtol=1e-12)


def test_hessian_of_a_spectral_energy():
    # E(x) = sum |rfft(x)|^2 = (n * |x|^2 + ...)/...: its Hessian is constant; compare
    # with the jacobian of the gradient by finite differences.
    x = np.random.default_rng(5).normal(size=6)

    def energy(x):
        return tnp.sum(tnp.abs(tfft.rfft(x)) ** 2)

    H = tg.hessian(energy)(x)
    g = tg.grad(energy)
    fd = np.stack([(g(x + 1e-5 * e) - g(x - 1e-5 * e)) / 2e-5 for e in np.eye(6)], 1)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-6)
    # Parseval: sum |fft(x)|^2 = n |x|^2, so the full-FFT energy's Hessian is 2 n I.
    H2 = tg.hessian(lambda x: tnp.sum(tnp.abs(tfft.fft(x)) ** 2))(x)
    np.testing.assert_allclose(H2, 12 * np.eye(6), atol=1e-12)


def test_lax_fft_takes_jax_s_fft_types():
    x = np.random.default_rng(6).normal(size=(2, 3, 4))
    np.testing.assert_allclose(tg.lax.fft(x, "RFFT", (3, 4)), np.fft.rfftn(x, axes=(1, 2)))
    z = x + 1j
    np.testing.assert_allclose(tg.lax.fft(z, "ifft", (4,)), np.fft.ifft(z))

    class FftType:  # an enum member, as jax.lax.FftType.IRFFT
        name = "IRFFT"
    np.testing.assert_allclose(tg.lax.fft(z[..., :3], FftType(), (4,)),
                               np.fft.irfft(z[..., :3], 4))
    with pytest.raises(ValueError, match=r"fft: fft_type must be one of .*'dct'"):
        tg.lax.fft(z, "dct", (4,))
    with pytest.raises(ValueError, match=r"fft: an fft with fft_lengths=\(5,\) needs trailing"):
        tg.lax.fft(z, "fft", (5,))
