"""Complex differentiation with JAX's conventions.

JAX transposes linear maps without conjugation, so the cotangent of a complex
value ``a + ib`` stands for the pair (d/da, d/db) as ``d/da - i d/db``:
``grad`` of a real ``f(z)`` is the conjugate of the direction of steepest
ascent (``grad(abs(z)**2) == 2 * conj(z)``), and ``vjp``/``jvp`` satisfy
``Re sum(u * J v) == Re sum(J^T u * v)``, exactly (not only in real part)
when ``f`` is holomorphic.  Expected numbers were computed with jax 0.10.2
(``jax_enable_x64``) and are baked in here.
"""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.linalg as tsl
from tangentia.primitives import elementwise as E

Z = 0.7 + 0.4j


def _scalar_cases(np_):
    return {
        "abs2": lambda z: np_.abs(z) ** 2,
        "abs": lambda z: np_.abs(z),
        "real": lambda z: np_.real(z),
        "imag": lambda z: np_.imag(z),
        "re_conj_mul": lambda z: np_.real(np_.conj(z) * z),
        "angle": lambda z: np_.angle(z),
        "re_exp": lambda z: np_.real(np_.exp(z)),
        "im_log": lambda z: np_.imag(np_.log(z)),
        "re_sqrt": lambda z: np_.real(np_.sqrt(z)),
        "im_sin": lambda z: np_.imag(np_.sin(z)),
        "re_cos": lambda z: np_.real(np_.cos(z)),
        "re_tan": lambda z: np_.real(np_.tan(z)),
        "im_tanh": lambda z: np_.imag(np_.tanh(z)),
        "re_sinh": lambda z: np_.real(np_.sinh(z)),
        "re_cosh": lambda z: np_.real(np_.cosh(z)),
        "re_pow": lambda z: np_.real(z ** 3.5),
        "re_zpowz": lambda z: np_.real(z ** z),
        "re_div": lambda z: np_.real(1.0 / z),
        "abs_div": lambda z: np_.abs((z + 1) / (z - 2j)),
        "re_square": lambda z: np_.real(np_.square(z)),
        "re_expm1": lambda z: np_.real(np_.expm1(z)),
        "im_log1p": lambda z: np_.imag(np_.log1p(z)),
        "im_arcsin": lambda z: np_.imag(np_.arcsin(z)),
        "re_arctan": lambda z: np_.real(np_.arctan(z)),
        "im_arcsinh": lambda z: np_.imag(np_.arcsinh(z)),
        "abs_sign": lambda z: np_.real(np_.sign(z) * z),
        "re_reciprocal": lambda z: np_.real(np_.reciprocal(z)),
    }


# jax.grad(f)(0.7 + 0.4j) for each case above.
JAX_SCALAR = {
    'abs2': (1.4-0.8j),
    'abs': (0.8682431421244592-0.49613893835683387j),
    'real': (1+0j),
    'imag': -1j,
    're_conj_mul': (1.4-0.8j),
    'angle': (-0.6153846153846154-1.0769230769230769j),
    're_exp': (1.8547890704187584+0.7841922411627098j),
    'im_log': (-0.6153846153846154-1.0769230769230769j),
    're_sqrt': (0.5381995938793481-0.1429266721823676j),
    'im_sin': (-0.26461391335619233-0.8268497574897538j),
    're_cos': (-0.6964459431223345-0.3141607072992162j),
    're_tan': (1.080263196014142+0.7703197632672698j),
    'im_tanh': (-0.3369309827404323-0.6162510787831091j),
    're_sinh': (1.1560872119680494+0.29540640767271076j),
    're_cosh': (0.698701858450709+0.48878583348999904j),
    're_pow': (0.5506268136650118+1.9671127034125122j),
    're_zpowz': (0.4280337707394739+0.4989745979285128j),
    're_div': (-0.7810650887573964+1.3254437869822489j),
    'abs_div': (0.32786885245901654-0.6557377049180328j),
    're_square': (1.4+0.8j),
    're_expm1': (1.8547890704187582+0.7841922411627098j),
    'im_log1p': (-0.13114754098360656-0.5573770491803278j),
    'im_arcsin': (0.3650398225108957-1.0059535757722373j),
    're_arctan': (0.638655462184874-0.26890756302521013j),
    'im_arcsinh': (-0.1647778299565253-0.8159700946910099j),
    'abs_sign': (0.8682431421244592+0.49613893835683387j),
    're_reciprocal': (-0.7810650887573964+1.3254437869822489j),
}

SCALAR = _scalar_cases(tnp)


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_grad_of_real_function_of_complex_scalar_matches_jax(name):
    np.testing.assert_allclose(complex(tg.grad(SCALAR[name])(Z)), JAX_SCALAR[name],
                               rtol=1e-12, atol=1e-14)


def _fd_grad(f, z, h=1e-6):
    """JAX's gradient convention by central differences: df/da - i df/db."""
    da = (f(z + h) - f(z - h)) / (2 * h)
    db = (f(z + 1j * h) - f(z - 1j * h)) / (2 * h)
    return da - 1j * db


# sign's derivative is zero by convention (JAX's), not the derivative of z / |z|.
@pytest.mark.parametrize("name", sorted(set(SCALAR) - {"abs_sign"}))
def test_grad_of_complex_scalar_matches_finite_differences_in_both_directions(name):
    f = SCALAR[name]
    fd = _fd_grad(lambda z: float(np.asarray(f(z))), Z)
    np.testing.assert_allclose(complex(tg.grad(f)(Z)), fd, rtol=1e-6, atol=1e-7)


def test_cookbook_example_abs_squared_is_twice_the_conjugate():
    # JAX's autodiff cookbook: grad(f)(z) for f(z) = abs(z)**2 is 2 * conj(z).
    z = np.array([1 + 2j, -0.5 + 0.25j])
    np.testing.assert_allclose(tg.grad(lambda z: tnp.sum(tnp.abs(z) ** 2))(z), 2 * np.conj(z))
    assert tg.grad(lambda z: tnp.abs(z) ** 2)(1 + 2j) == 2 - 4j


# ---------------------------------------------------------------------------
# Holomorphic differentiation

HOLO = {
    "sin*z": (lambda z: tnp.sin(z) * z, lambda z: np.cos(z) * z + np.sin(z)),
    "exp/z": (lambda z: tnp.exp(z) / z, lambda z: np.exp(z) / z - np.exp(z) / z ** 2),
    "log": (tnp.log, lambda z: 1 / z),
    "sqrt": (tnp.sqrt, lambda z: 0.5 / np.sqrt(z)),
    "z**3": (lambda z: z ** 3, lambda z: 3 * z ** 2),
    "z**2.5": (lambda z: z ** 2.5, lambda z: 2.5 * z ** 1.5),
    "tanh": (tnp.tanh, lambda z: 1 - np.tanh(z) ** 2),
    "arctan": (tnp.arctan, lambda z: 1 / (1 + z * z)),
    "arccosh": (tnp.arccosh, lambda z: 1 / (np.sqrt(z - 1) * np.sqrt(z + 1))),
}


@pytest.mark.parametrize("name", sorted(HOLO))
def test_holomorphic_grad_is_the_complex_derivative(name):
    f, df = HOLO[name]
    np.testing.assert_allclose(complex(tg.grad(f, holomorphic=True)(Z)), df(Z), rtol=1e-12)
    zs = np.array([Z, 1.3 - 0.2j, -0.4 + 0.9j])
    want = np.diag(df(zs))
    np.testing.assert_allclose(tg.jacfwd(f, holomorphic=True)(zs), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tg.jacrev(f, holomorphic=True)(zs), want, rtol=1e-12, atol=1e-15)


def test_holomorphic_jacobians_and_hessian_of_a_matrix_function():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    z = rng.normal(size=3) + 1j * rng.normal(size=3)
    np.testing.assert_allclose(tg.jacrev(lambda z: A @ z, holomorphic=True)(z), A, rtol=1e-14)
    np.testing.assert_allclose(tg.jacfwd(lambda z: A @ z, holomorphic=True)(z), A, rtol=1e-14)
    # f(z) = z^T A z: the Hessian is A + A^T (no conjugation).
    h = tg.hessian(lambda z: z @ A @ z, holomorphic=True)(z)
    np.testing.assert_allclose(h, A + A.T, rtol=1e-13)
    # jax.grad(lambda z: jnp.sum(jnp.sin(z) * z), holomorphic=True) at z:
    g = tg.grad(lambda z: tnp.sum(tnp.sin(z) * z), holomorphic=True)(z)
    np.testing.assert_allclose(g, np.cos(z) * z + np.sin(z), rtol=1e-13)


def test_errors_have_jax_wording():
    with pytest.raises(TypeError, match=r"^grad requires real-valued outputs \(output dtype "
                       r"that is a sub-dtype of np.floating\), but got complex128\. For "
                       r"holomorphic differentiation, pass holomorphic=True\. For differentiation"
                       r" of non-holomorphic functions involving complex outputs, use jax\.vjp "
                       r"directly\. \(grad of <lambda>\)"):
        tg.grad(lambda z: z * z)(Z)
    with pytest.raises(TypeError, match=r"^grad with holomorphic=True requires inputs with "
                       r"complex dtype, but got float64\."):
        tg.grad(lambda x: x * 1j, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match=r"^grad with holomorphic=True requires outputs with "
                       r"complex dtype, but got float64\."):
        tg.grad(lambda z: tnp.abs(z), holomorphic=True)(Z)
    with pytest.raises(TypeError, match=r"^jacfwd requires real-valued inputs .*but got "
                       r"complex128\. For holomorphic differentiation, pass holomorphic=True"):
        tg.jacfwd(tnp.sin)(np.array([Z]))
    with pytest.raises(TypeError, match=r"^jacfwd with holomorphic=True requires outputs "
                       r"with complex dtype, but got float64"):
        tg.jacfwd(tnp.abs, holomorphic=True)(np.array([Z]))
    with pytest.raises(TypeError, match=r"^jacrev requires real-valued outputs .*complex128"):
        tg.jacrev(tnp.sin)(np.array([Z]))
    with pytest.raises(TypeError, match=r"^jacrev with holomorphic=True requires inputs with "
                       r"complex dtype, but got float64"):
        tg.jacrev(tnp.sin, holomorphic=True)(np.array([1.0]))


def test_jacobians_of_real_functions_of_complex_inputs_go_through_jvp_and_vjp():
    # jacrev of a real-valued function of a complex input is allowed (as JAX's):
    # row i is grad of output i.
    z = np.array([Z, 1.3 - 0.2j])
    J = tg.jacrev(lambda z: tnp.abs(z) ** 2)(z)
    np.testing.assert_allclose(J, np.diag(2 * np.conj(z)))


# ---------------------------------------------------------------------------
# Transposition identity: Re sum(u * J v) == Re sum(J^T u * v)

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))
XR = RNG.normal(size=3)

FUNCS = {  # name: (f, input is complex, f is holomorphic)
    "exp*conj": (lambda z: tnp.exp(z) * tnp.conj(z), True, False),
    "abs*sin": (lambda z: tnp.abs(z) * tnp.sin(z), True, False),
    "matmul": (lambda z: A @ tnp.sqrt(z), True, True),
    "einsum": (lambda z: tnp.einsum("ij,j,i->i", A, z, z), True, True),
    "real/imag": (lambda z: tnp.real(z) * tnp.imag(z) + tnp.angle(z), True, False),
    "to complex": (lambda x: A @ (x + 0j) + tnp.exp(1j * x), False, False),
    "complex()": (lambda x: E.complex_(x, tnp.sin(x)) * A[0], False, False),
    "cumsum/prod": (lambda z: tnp.cumsum(z) * tnp.prod(z), True, True),
    "solve": (lambda z: tnp.linalg.solve(A + tnp.diag(z), z), True, True),
    "where/index": (lambda z: tnp.at(tnp.where(tnp.real(z) > 0, z[::-1], 2 * z))[0].set(
        z[1] ** 2), True, False),
}


def _vec(rng, cplx, n=3):
    return rng.normal(size=n) + (1j * rng.normal(size=n) if cplx else 0)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_jvp_and_vjp_are_transposes_under_the_bilinear_pairing(name, seed):
    f, cplx, holo = FUNCS[name]
    rng = np.random.default_rng(seed)
    x, v = _vec(rng, cplx) + 0.5, _vec(rng, cplx)
    out, jv = tg.jvp(f, (x,), (v,))
    u = _vec(rng, np.iscomplexobj(out), np.size(out)).reshape(np.shape(out))
    _, pullback = tg.vjp(f, x)
    ju, = pullback(u)
    assert ju.dtype == x.dtype and jv.dtype == np.asarray(out).dtype
    lhs, rhs = np.sum(u * jv), np.sum(ju * v)
    np.testing.assert_allclose(lhs.real, rhs.real, rtol=1e-10, atol=1e-10)
    if holo:
        np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)
    # And the JVP is the derivative: central differences along v.
    h = 1e-6
    fd = (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)
    np.testing.assert_allclose(jv, fd, rtol=1e-5, atol=1e-6)


def test_vmap_and_jit_of_complex_gradients_match_loops_and_eager():
    z = _vec(np.random.default_rng(1), True, 4)

    def f(z):
        return tnp.sum(tnp.abs(tnp.exp(z) * A[0, 0] - z) ** 2)

    g = tg.grad(f)
    loop = np.stack([g(zi) for zi in z])
    np.testing.assert_allclose(tg.vmap(g)(z), loop, rtol=1e-13)
    eager = g(z)
    np.testing.assert_allclose(tg.jit(g)(z), eager, rtol=1e-13)
    with warnings.catch_warnings():  # numba has no complex dtypes: it runs NumPy's code
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_allclose(tg.jit(g, backend="numba")(z), eager, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(lambda w: tnp.abs(w) ** 2)))(z),
                               2 * np.conj(z))


def test_cotangent_of_a_real_input_through_complex_values_is_real():
    g = tg.grad(lambda x: tnp.sum(tnp.abs(A @ x)))(XR)
    assert g.dtype == np.float64
    fd = [(np.sum(np.abs(A @ (XR + 1e-6 * e))) - np.sum(np.abs(A @ (XR - 1e-6 * e)))) / 2e-6
          for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    # The transposes of complex(x, y), real, imag and conj, alone.
    ct = np.array([1 + 2j, 3 - 1j])
    _, pb = tg.vjp(E.complex_, np.ones(2), np.ones(2))
    gx, gy = pb(ct)
    np.testing.assert_array_equal(gx, ct.real)
    np.testing.assert_array_equal(gy, -ct.imag)
    z = np.array([1 + 1j, 2 - 1j])
    np.testing.assert_array_equal(tg.vjp(tnp.real, z)[1](np.array([1.0, 2.0]))[0], [1, 2])
    np.testing.assert_array_equal(tg.vjp(tnp.imag, z)[1](np.array([1.0, 2.0]))[0], [-1j, -2j])
    np.testing.assert_array_equal(tg.vjp(tnp.conj, z)[1](ct)[0], np.conj(ct))


def test_complex_parts_under_transformations():
    z = np.array([1 + 2j, -3 + 0j, 0.5j])
    for f, ref in [(tnp.real, np.real), (tnp.imag, np.imag), (tnp.conj, np.conj),
                   (tnp.angle, np.angle), (tnp.isreal, np.isreal), (tnp.iscomplex, np.iscomplex),
                   (tnp.abs, np.abs)]:
        np.testing.assert_array_equal(tg.jit(f)(z), ref(z))
        np.testing.assert_array_equal(tg.vmap(f)(z), ref(z))
    np.testing.assert_allclose(tg.jit(lambda z: tnp.angle(z, deg=True))(z), np.angle(z, deg=True))


def test_abs_derivative_at_zero_is_jax_s():
    # JAX: d|x|/dx at 0 (and -0) is 1; for complex z, 0.
    assert tg.grad(tnp.abs)(0.0) == 1.0
    assert tg.grad(tnp.abs)(-0.0) == 1.0
    assert tg.grad(tnp.abs)(-2.0) == -1.0
    assert tg.grad(tnp.abs)(0j) == 0


# ---------------------------------------------------------------------------
# Complex linear algebra, against JAX

_R = np.random.default_rng(0)
MA = _R.normal(size=(3, 3)) + 1j * _R.normal(size=(3, 3))
MX = _R.normal(size=3) + 1j * _R.normal(size=3)
MW = _R.normal(size=(3, 2)) + 1j * _R.normal(size=(3, 2))
V = np.random.default_rng(1).normal(size=(3, 3)) + 1j * np.random.default_rng(2).normal(
    size=(3, 3))


def _herm(M):
    return (M + tnp.conj(M.T)) / 2


def _linalg_cases():
    L = tnp.linalg
    ar = tnp.arange(1.0, 4.0)
    return {
        "solve_b": (lambda z: tnp.abs(L.solve(MA, z)).sum(), MX),
        "solve_a": (lambda M: tnp.abs(L.solve(M, MX)).sum(), MA),
        "inv": (lambda M: tnp.real(L.inv(M)).sum() + tnp.imag(L.inv(M)[0, 1]), MA),
        "det": (lambda M: tnp.abs(L.det(M)), MA),
        "det_re": (lambda M: tnp.real(L.det(M)), MA),
        "slogdet_log": (lambda M: L.slogdet(M)[1], MA),
        "slogdet_sign": (lambda M: tnp.imag(L.slogdet(M)[0]), MA),
        "eigh_w": (lambda M: (L.eigh(_herm(M))[0] * ar).sum(), MA),
        "eigh_v": (lambda M: tnp.abs(L.eigh(_herm(M))[1][0, :]).sum(), MA),
        "eigvalsh": (lambda M: (L.eigvalsh(_herm(M)) ** 2).sum(), MA),
        "svd_s": (lambda M: (L.svd(M)[1] * ar).sum(), MA),
        "svd_s_wide": (lambda M: (L.svd(M.T, full_matrices=False)[1] ** 2).sum(), MW),
        "svd_u": (lambda M: tnp.abs(L.svd(M)[0] @ L.svd(M)[2]).sum(), MA),
        "svd_tall_u": (lambda M: tnp.abs(L.svd(M, full_matrices=False)[0]
                                         @ L.svd(M, full_matrices=False)[2]).sum(), MW),
        "qr_r": (lambda M: tnp.abs(L.qr(M)[1]).sum(), MA),
        "qr_q": (lambda M: tnp.real(L.qr(M)[0]).sum(), MA),
        "qr_tall": (lambda M: tnp.real(L.qr(M)[0] * 2j).sum() + tnp.abs(L.qr(M)[1]).sum(), MW),
        "qr_wide": (lambda M: tnp.real(L.qr(M.T)[1] * 2j).sum() + tnp.abs(L.qr(M.T)[0]).sum(),
                    MW),
        "cholesky": (lambda M: tnp.abs(L.cholesky(_herm(M) @ tnp.conj(_herm(M).T) + 3 * tnp.eye(3))
                                       * tnp.arange(9.0).reshape(3, 3)).sum(), MA),
        "matmul": (lambda M: tnp.abs(M @ MA @ M).sum(), MA),
        "einsum": (lambda M: tnp.real(tnp.einsum("ij,jk->k", M, MA) * 1j).sum(), MA),
        "vdot": (lambda z: tnp.real(tnp.vdot(z, MA @ z)), MX),
        "expm": (lambda M: tnp.abs(tsl.expm(M)).sum(), MA / 2),
    }


# For each case, with g = jax.grad(f)(a): (Re sum(g * V), Im sum(g * V), sum |g|).
JAX_LINALG = {
    'solve_b': (-11.861994458468224, 10.832376691737545, 7.348328330672393),
    'solve_a': (-10.262249118292875, 19.353421901830796, 37.99497104267227),
    'inv': (-1.410099559975308, 4.7641515253954525, 14.666090649240527),
    'det': (3.8669719995960823, -7.318938011933394, 14.79760086645577),
    'det_re': (-7.49797146043514, -3.507242513240822, 14.797600866455774),
    'slogdet_log': (2.0364703650545306, -3.8543853864290547, 7.7928869517519415),
    'slogdet_sign': (0.18704565681820426, 0.09882585648118972, 0.3781733044994993),
    'eigh_w': (4.466265166366258, 4.407262685468255, 9.281515412463511),
    'eigh_v': (0.04486000403341922, 0.027524456508699637, 0.21343628525307431),
    'eigvalsh': (2.497564001279133, -5.503037230535316, 13.289351076547204),
    'svd_s': (2.365611008308492, -4.2929271442219195, 10.481920776360088),
    'svd_s_wide': (4.766653201561324, 0.6595227348226742, 8.673672701038551),
    'svd_u': (-0.5263403861089251, -0.14621486725590935, 1.0421048263141681),
    'svd_tall_u': (1.642845152174289, 1.6663110568677302, 2.640888952267808),
    'qr_r': (0.31881308553425947, -0.6054512547465477, 7.169827471547376),
    'qr_q': (0.89301091764439, 1.3707060218500415, 3.2920591464891293),
    'qr_tall': (-4.666120625343305, 3.8934413423308007, 9.896234970976323),
    'qr_wide': (-0.7562961521755391, -2.965469521034642, 10.018807494031044),
    'cholesky': (5.896951593297904, 8.990483889430466, 25.99562250926488),
    'matmul': (-3.3370562562600723, 25.00422488841876, 101.22382309321137),
    'einsum': (8.014071694554929, 5.280929171409651, 23.892552148391243),
    'vdot': (2.1282315555624627, 5.673671642068537, 8.412790438073566),
    'expm': (4.875259528573339, 1.119540542663874, 13.52403629687993),
}

LINALG = _linalg_cases()


@pytest.mark.parametrize("name", sorted(LINALG))
def test_complex_linalg_gradients_match_jax(name):
    f, a = LINALG[name]
    g = tg.grad(f)(a)
    assert g.dtype == np.complex128 and g.shape == a.shape
    p = np.sum(g * V[tuple(slice(0, n) for n in g.shape)])
    np.testing.assert_allclose((p.real, p.imag, np.abs(g).sum()), JAX_LINALG[name],
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(LINALG))
def test_complex_linalg_gradients_match_finite_differences(name):
    f, a = LINALG[name]
    g = tg.grad(f)(a)
    rng = np.random.default_rng(3)
    d = rng.normal(size=a.shape) + 1j * rng.normal(size=a.shape)
    h = 1e-6
    fd = (float(f(a + h * d)) - float(f(a - h * d))) / (2 * h)
    # The directional derivative along d is Re sum(g * d) in JAX's convention.
    np.testing.assert_allclose(np.sum(g * d).real, fd, rtol=1e-5, atol=1e-7)


def test_complex_linalg_values_and_dtypes_match_numpy():
    H = MA @ np.conj(MA.T) + 3 * np.eye(3)
    sign, logdet = tg.jit(tnp.linalg.slogdet)(MA)
    want = np.linalg.slogdet(MA)
    np.testing.assert_allclose(sign, want[0])
    np.testing.assert_allclose(logdet, want[1])
    assert np.asarray(logdet).dtype == np.float64
    np.testing.assert_allclose(tg.jit(tnp.linalg.eigh)(H)[0], np.linalg.eigh(H)[0])
    np.testing.assert_allclose(tg.jit(tnp.linalg.cholesky)(H), np.linalg.cholesky(H))
    np.testing.assert_allclose(tnp.linalg.norm(MX), np.linalg.norm(MX))
    np.testing.assert_allclose(tnp.var(MX), np.var(MX))


def test_complex_gradients_through_control_flow_and_checkpoint():
    x = np.array([0.3 + 0.2j, -0.5 + 1j, 1.2 - 0.4j])
    fs = [
        lambda z: tnp.abs(tg.lax.scan(lambda c, a: (c * a + tnp.sin(a), c), 1.0 + 0j, z)[0]),
        lambda z: tnp.sum(tnp.abs(tg.lax.cond(tnp.real(z[0]) > 0, lambda q: q * q,
                                              lambda q: tnp.conj(q), z)) ** 2),
        lambda z: tnp.abs(tg.lax.fori_loop(
            0, 3, lambda i, c: c * tg.lax.dynamic_index_in_dim(z, i, keepdims=False) + 1, 0j)),
        tg.checkpoint(lambda z: tnp.sum(tnp.abs(tnp.exp(z) * z))),
    ]
    h = 1e-6
    with warnings.catch_warnings():  # eager loops run on the default (numba) backend
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in fs:
            g = tg.grad(f)(x)
            fd = [_fd_grad(lambda t, e=e: float(f(x + t * e)), 0.0, h) for e in np.eye(3)]
            np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(tg.jit(tg.grad(f))(x), g, rtol=1e-12)


def test_lax_complex_parts():
    x, y = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    np.testing.assert_array_equal(tg.lax.complex(x, y), x + 1j * y)
    np.testing.assert_array_equal(tg.lax.real(x + 1j * y), x)
    np.testing.assert_array_equal(tg.lax.imag(x + 1j * y), y)
    np.testing.assert_array_equal(tg.lax.conj(x + 1j * y), x - 1j * y)
    assert tg.lax.complex(np.float32(1), np.float32(2)).dtype == np.complex64
    # d/dx, d/dy of |x + iy|^2 = (2x, 2y), through complex's JVP and transpose.
    f = lambda x, y: tnp.sum(tnp.abs(tg.lax.complex(x, y)) ** 2)  # noqa: E731
    for g in (tg.grad(f, (0, 1))(x, y), tg.jacfwd(f, (0, 1))(x, y)):
        np.testing.assert_allclose(g[0], 2 * x)
        np.testing.assert_allclose(g[1], 2 * y)
