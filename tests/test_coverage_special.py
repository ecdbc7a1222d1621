"""The scipy.special functions added to close JAX's API gaps: values against SciPy (and
numbers computed with JAX 0.10.2, baked in), derivatives against central finite
differences in float64, jit against eager, vmap against a loop."""
import numpy as np
import pytest
import scipy.special as sc

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.special as tss


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


# name -> (tangentia function, SciPy function, points, index of the differentiated argument)
_CASES = {
    "exp1": (tss.exp1, sc.exp1, [(0.3,), (1.7,)], 0),
    "expi": (tss.expi, sc.expi, [(0.4,), (-1.2,)], 0),
    "spence": (tss.spence, sc.spence, [(0.5,), (2.5,)], 0),
    "dawsn": (tss.dawsn, sc.dawsn, [(0.5,), (-2.0,)], 0),
    "erfcx": (tss.erfcx, sc.erfcx, [(0.5,), (-1.1,)], 0),
    "expn": (tss.expn, sc.expn, [(2, 0.7), (3, 1.9)], 1),
    "poch_z": (tss.poch, sc.poch, [(1.3, 2.5), (0.4, 1.5)], 0),
    "poch_m": (tss.poch, sc.poch, [(1.3, 2.5), (0.4, 1.5)], 1),
    "kl_div_p": (tss.kl_div, sc.kl_div, [(0.7, 0.3), (2.0, 1.5)], 0),
    "kl_div_q": (tss.kl_div, sc.kl_div, [(0.7, 0.3), (2.0, 1.5)], 1),
    "rel_entr_p": (tss.rel_entr, sc.rel_entr, [(0.7, 0.3), (2.0, 1.5)], 0),
    "rel_entr_q": (tss.rel_entr, sc.rel_entr, [(0.7, 0.3), (2.0, 1.5)], 1),
    "owens_t_h": (tss.owens_t, sc.owens_t, [(0.7, 0.4), (-1.2, 2.0)], 0),
    "owens_t_a": (tss.owens_t, sc.owens_t, [(0.7, 0.4), (-1.2, 2.0)], 1),
    "hyp1f1": (tss.hyp1f1, sc.hyp1f1, [(0.5, 1.5, 1.3), (2.0, 0.7, -0.4)], 2),
    "hyp2f1": (tss.hyp2f1, sc.hyp2f1, [(0.5, 1.5, 2.2, 0.3), (1.0, 2.0, 3.5, -0.6)], 3),
    "boxcox_x": (tss.boxcox, sc.boxcox, [(2.0, 0.3), (0.5, -1.2)], 0),
    "boxcox_l": (tss.boxcox, sc.boxcox, [(2.0, 0.3), (0.5, -1.2)], 1),
    "boxcox1p_x": (tss.boxcox1p, sc.boxcox1p, [(1e-3, 0.3), (0.5, 2.0)], 0),
    "boxcox1p_l": (tss.boxcox1p, sc.boxcox1p, [(1e-3, 0.3), (0.5, 2.0)], 1),
    "fresnel_s": (lambda x: tss.fresnel(x)[0], lambda x: sc.fresnel(x)[0], [(0.5,), (1.5,)], 0),
    "fresnel_c": (lambda x: tss.fresnel(x)[1], lambda x: sc.fresnel(x)[1], [(0.5,), (1.5,)], 0),
    "sici_si": (lambda x: tss.sici(x)[0], lambda x: sc.sici(x)[0], [(0.5,), (-2.5,)], 0),
    "sici_ci": (lambda x: tss.sici(x)[1], lambda x: sc.sici(x)[1], [(0.5,), (2.5,)], 0),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_values_and_first_derivative(name):
    f, ref, points, k = _CASES[name]
    for args in points:
        np.testing.assert_allclose(f(*args), ref(*args), rtol=1e-12, atol=1e-14)

        def g(v, args=args):
            return f(*args[:k], v, *args[k + 1:])
        np.testing.assert_allclose(tg.grad(g)(float(args[k])),
                                   _fd(lambda v: ref(*args[:k], v, *args[k + 1:]), args[k]),
                                   rtol=1e-6, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("name", ["exp1", "expn", "owens_t_a", "hyp2f1", "boxcox_l", "sici_si"])
def test_jit_and_vmap_agree_with_eager(name):
    f, _, points, k = _CASES[name]
    args = points[0]
    xs = np.array([args[k], args[k] * 0.9, args[k] * 1.1])

    def g(v):
        return f(*args[:k], v, *args[k + 1:])
    loop = np.array([g(float(v)) for v in xs])
    np.testing.assert_allclose(tg.jit(tg.vmap(g))(xs), loop, rtol=1e-13)
    np.testing.assert_allclose(tg.vmap(tg.grad(g))(xs), [tg.grad(g)(float(v)) for v in xs],
                               rtol=1e-13)


def test_second_derivatives_through_the_rules():
    # The rules are written with primitives: grad(grad) agrees with finite differences.
    for f, x in [(tss.exp1, 0.8), (tss.dawsn, 0.6), (lambda v: tss.hyp1f1(0.5, 1.5, v), 0.4),
                 (lambda v: tss.fresnel(v)[0], 0.9)]:
        np.testing.assert_allclose(tg.grad(tg.grad(f))(x), _fd(tg.grad(f), x), rtol=1e-6)


def test_wofz_is_complex_with_a_holomorphic_derivative():
    z = 0.7 + 0.3j
    np.testing.assert_allclose(tss.wofz(z), sc.wofz(z), rtol=1e-14)
    assert tss.wofz(0.5).dtype == np.complex128 and tss.wofz(np.float32(0.5)).dtype == np.complex64
    _, t = tg.jvp(tss.wofz, (z,), (1.0 + 0j,))
    np.testing.assert_allclose(t, _fd(sc.wofz, z), rtol=1e-7)
    _, t = tg.jvp(tss.wofz, (z,), (1j,))
    np.testing.assert_allclose(t, 1j * _fd(sc.wofz, z), rtol=1e-7)


def test_sph_harm_y_matches_scipy_and_differentiates_in_both_angles():
    n, m = np.array([3, 2, 4]), np.array([1, -2, 0])
    theta, phi = np.array([0.9, 0.4, 2.0]), np.array([0.7, -1.0, 0.3])
    np.testing.assert_allclose(tss.sph_harm_y(n, m, theta, phi), sc.sph_harm_y(n, m, theta, phi),
                               rtol=1e-13)
    # JAX 0.10.2: jax.scipy.special.sph_harm_y([3], [1], [0.9], [0.7], n_max=3)
    np.testing.assert_allclose(tss.sph_harm_y(np.array([3]), np.array([1]), np.array([0.9]),
                                              np.array([0.7]), n_max=3),
                               [-0.18045673 - 0.1519966j], rtol=1e-7)
    for i, (th, ph) in enumerate(zip(theta, phi)):
        _, dt = tg.jvp(lambda t: tss.sph_harm_y(n[i], m[i], t, ph), (th,), (1.0,))
        np.testing.assert_allclose(dt, _fd(lambda t: sc.sph_harm_y(n[i], m[i], t, ph), th),
                                   rtol=1e-6, atol=1e-9)
        _, dp = tg.jvp(lambda p: tss.sph_harm_y(n[i], m[i], th, p), (ph,), (1.0,))
        np.testing.assert_allclose(dp, _fd(lambda p: sc.sph_harm_y(n[i], m[i], th, p), ph),
                                   rtol=1e-6, atol=1e-9)
    # a traced n needs a static n_max, as JAX's (its Legendre table is built up to n_max)
    out = tg.jit(tss.sph_harm_y, static_argnames="n_max")(n, m, theta, phi, n_max=4)
    np.testing.assert_allclose(out, sc.sph_harm_y(n, m, theta, phi), rtol=1e-13)


def test_compositions_match_jax_numbers():
    # Numbers from JAX 0.10.2 (float64).
    np.testing.assert_allclose(tss.factorial(np.array([-1.0, 3.0, 4.5])),
                               [0.0, 6.0, 52.34277778], rtol=1e-8)
    np.testing.assert_allclose(tss.comb(np.array([5.0, 4.0]), np.array([2.0, -1.0])), [10.0, 0.0],
                               atol=1e-12)
    np.testing.assert_allclose(tss.comb(5.0, 2.0, repetition=True), 15.0, rtol=1e-12)
    assert tss.comb(3.0, 5.0) == 0.0
    np.testing.assert_allclose(tss.bessel_jn(np.array([0.5, 1.5]), v=2),
                               [[0.93846981, 0.51182767], [0.24226846, 0.55793651],
                                [0.03060402, 0.23208767]], rtol=2e-7)
    np.testing.assert_allclose(tss.boxcox(2.0, 0.0), 0.6931471805599453, rtol=1e-15)
    np.testing.assert_allclose(tss.boxcox1p(1.0, 0.5), 0.8284271247461901, rtol=1e-15)
    np.testing.assert_allclose(tg.grad(tss.boxcox, argnums=1)(2.0, 0.3), 0.2762763371858967,
                               rtol=1e-12)
    # SciPy's exact Bernoulli numbers (JAX's are approximate: B_4 = -0.03333325).
    np.testing.assert_allclose(tss.bernoulli(5), sc.bernoulli(5), rtol=1e-15)
    np.testing.assert_allclose(tss.comb(np.array([7.0, 10.0]), np.array([3.0, 4.0])),
                               sc.comb([7, 10], [3, 4]), rtol=1e-12)
    np.testing.assert_allclose(tss.factorial(np.array([0.0, 5.0, 2.5])),
                               sc.factorial([0.0, 5.0, 2.5]), rtol=1e-13)


def test_bessel_jn_is_differentiable_and_jits():
    z = np.array([0.5, 1.5, 3.0])
    np.testing.assert_allclose(tss.bessel_jn(z, v=3), [sc.jv(k, z) for k in range(4)], rtol=1e-13)
    g = tg.grad(lambda v: tss.bessel_jn(v, v=2)[2].sum())(z)
    np.testing.assert_allclose(g, sc.jvp(2, z), rtol=1e-10)
    np.testing.assert_allclose(tg.jit(lambda v: tss.bessel_jn(v, v=2))(z),
                               tss.bessel_jn(z, v=2), rtol=1e-15)


def test_errors_name_the_function_and_argument():
    with pytest.raises(NotImplementedError, match="hyp1f1.*'a'"):
        tg.grad(tss.hyp1f1)(0.5, 1.5, 0.3)
    with pytest.raises(TypeError, match="bernoulli.*'n'"):
        tss.bernoulli(2.5)
    with pytest.raises(TypeError, match="bessel_jn.*'v'"):
        tss.bessel_jn(1.0, v=-1)
    with pytest.raises(ValueError, match="exact"):
        tss.factorial(3, exact=True)
    with pytest.raises(TypeError, match="sph_harm_y.*'n'"):
        tss.sph_harm_y(1.5, 0, 0.3, 0.2)
    with pytest.raises(TypeError, match="exp1.*'x'.*complex"):
        tss.exp1(1j)
    assert tnp.asarray(tss.exp1(np.float32(0.5))).dtype == np.float32


def test_entropy_derivatives_on_the_domain_boundary_are_jax_s():
    # JAX 0.10.2: grad(kl_div) is (-1, 1) and grad(rel_entr) is (0, 0) wherever p <= 0 or q <= 0.
    for p, q in [(0.0, 1.0), (1.0, 0.0), (-1.0, 1.0), (0.0, 0.0)]:
        np.testing.assert_array_equal(tg.grad(tss.kl_div, argnums=(0, 1))(p, q), (-1.0, 1.0))
        np.testing.assert_array_equal(tg.grad(tss.rel_entr, argnums=(0, 1))(p, q), (0.0, 0.0))
    assert tss.kl_div(0.0, 1.0) == 1.0 and tss.rel_entr(1.0, 0.0) == np.inf
