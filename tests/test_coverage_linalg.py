"""The scipy.linalg functions added to close JAX's API gaps: values against SciPy (and JAX
0.10.2's numbers where they differ from SciPy's conventions), gradients of the
differentiable constructions against finite differences, jit against eager."""
import numpy as np
import pytest
import scipy.linalg as sl

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.linalg as tsl

RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 4))
C = np.array([1.0, 2.0, -3.0, 0.5])
R = np.array([9.0, 5.0, 6.0, -7.0, 2.0])

_BUILT = {   # name -> (tangentia call, SciPy call) of arrays
    "toeplitz": (lambda c: tsl.toeplitz(c, R), lambda c: sl.toeplitz(c, R)),
    "toeplitz_sym": (tsl.toeplitz, sl.toeplitz),
    "hankel": (lambda c: tsl.hankel(c, R), lambda c: sl.hankel(c, R)),
    "hankel_default": (tsl.hankel, sl.hankel),
    "circulant": (tsl.circulant, sl.circulant),
    "companion": (tsl.companion, sl.companion),
    "fiedler": (tsl.fiedler, sl.fiedler),
    "fiedler_companion": (tsl.fiedler_companion, sl.fiedler_companion),
    "leslie": (lambda c: tsl.leslie(c, c[1:] / 4), lambda c: sl.leslie(c, c[1:] / 4)),
    "block_diag": (lambda c: tsl.block_diag(c[:2], tnp.outer(c, c[:2]), 3.0),
                   lambda c: sl.block_diag(c[:2], np.outer(c, c[:2]), 3.0)),
    "convolution_full": (lambda c: tsl.convolution_matrix(c, 3),
                         lambda c: sl.convolution_matrix(c, 3)),
    "convolution_same": (lambda c: tsl.convolution_matrix(c, 6, "same"),
                         lambda c: sl.convolution_matrix(c, 6, "same")),
    "convolution_valid": (lambda c: tsl.convolution_matrix(c, 2, "valid"),
                          lambda c: sl.convolution_matrix(c, 2, "valid")),
}


@pytest.mark.parametrize("name", sorted(_BUILT))
def test_constructions_match_scipy_and_differentiate(name):
    f, ref = _BUILT[name]
    np.testing.assert_allclose(f(C), ref(C), rtol=1e-15)
    w = RNG.standard_normal(np.shape(ref(C)))

    def loss(c):
        return (f(c) * w).sum()
    h = 1e-6
    fd = [(np.sum(ref(C + h * e) * w) - np.sum(ref(C - h * e) * w)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(tg.grad(loss)(C), fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tg.jit(f)(C), ref(C), rtol=1e-15)


def test_toeplitz_batches_leading_dimensions_and_conjugates():
    cs = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(tsl.toeplitz(cs), np.stack([sl.toeplitz(c) for c in cs]))
    np.testing.assert_allclose(tg.vmap(tsl.circulant)(cs), np.stack([sl.circulant(c) for c in cs]))
    z = np.array([1 + 1j, 2 - 3j])
    np.testing.assert_allclose(tsl.toeplitz(z), sl.toeplitz(z))


@pytest.mark.parametrize("n", [1, 3, 4])
def test_constant_matrices_match_scipy(n):
    np.testing.assert_allclose(tsl.hilbert(n), sl.hilbert(n))
    np.testing.assert_allclose(tsl.invhilbert(n), sl.invhilbert(n), rtol=1e-12)
    for kind in (None, "lower", "upper"):
        np.testing.assert_array_equal(tsl.pascal(n, kind), sl.pascal(n, kind or "symmetric"))
        np.testing.assert_array_equal(tsl.invpascal(n, kind),
                                      sl.invpascal(n, kind or "symmetric"))
    np.testing.assert_allclose(tsl.helmert(n), sl.helmert(n))
    np.testing.assert_allclose(tsl.helmert(n, full=True), sl.helmert(n, full=True))
    for scale in (None, "sqrtn", "n"):
        np.testing.assert_allclose(tsl.dft(n, scale), sl.dft(n, scale), atol=1e-15)
    assert tsl.pascal(n).dtype == np.float64 and tsl.dft(n).dtype == np.complex128
    np.testing.assert_array_equal(tsl.hadamard(4), sl.hadamard(4))
    assert tsl.hadamard(4).dtype == np.int64


def test_hessenberg_rsf2csf_funm_through_scipy():
    h, q = tsl.hessenberg(A, calc_q=True)
    np.testing.assert_allclose(h, sl.hessenberg(A), atol=1e-13)
    np.testing.assert_allclose(q @ h @ q.T, A, atol=1e-13)
    np.testing.assert_allclose(tg.jit(tsl.hessenberg)(A), h, atol=1e-15)
    t, z = tsl.schur(A)
    T, Z = tsl.rsf2csf(t, z)
    np.testing.assert_allclose(Z @ T @ Z.conj().T, A, atol=1e-12)
    np.testing.assert_allclose(np.tril(T, -1), 0, atol=1e-13)
    f = tsl.funm(A, np.exp)
    assert f.dtype == np.complex128            # as JAX's
    np.testing.assert_allclose(f, sl.expm(A), rtol=1e-10)
    f2, err = tsl.funm(A, np.sin, disp=False)
    np.testing.assert_allclose(f2, sl.funm(A, np.sin), rtol=1e-10)
    assert float(err) < 1e-8


def test_qr_multiply_matches_scipy_and_differentiates():
    a = A[:, :3]
    for c, mode in [(RNG.standard_normal(4), "right"), (RNG.standard_normal((2, 4)), "right"),
                    (RNG.standard_normal((3, 2)), "left"), (RNG.standard_normal(3), "left")]:
        got, r = tsl.qr_multiply(a, c, mode=mode)
        want, r_ref = sl.qr_multiply(a, c, mode=mode)
        np.testing.assert_allclose(got, want, atol=1e-13)
        np.testing.assert_allclose(r, r_ref, atol=1e-13)
    c = RNG.standard_normal((2, 4))
    g = tg.grad(lambda m: tsl.qr_multiply(m, c)[0].sum())(a)
    h = 1e-6
    fd = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = h
        fd[idx] = (sl.qr_multiply(a + e, c)[0].sum() - sl.qr_multiply(a - e, c)[0].sum()) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def test_eigh_tridiagonal_matches_jax_numbers_and_differentiates():
    d, e = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5])
    # JAX 0.10.2: jax.scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)
    np.testing.assert_allclose(tsl.eigh_tridiagonal(d, e, eigvals_only=True),
                               [0.7752551286084111, 2.0, 3.2247448713915885], rtol=1e-14)
    w, v = tsl.eigh_tridiagonal(d, e)
    m = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(m @ v, v * w, atol=1e-13)
    np.testing.assert_allclose(tsl.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                                    select_range=(1, 2)), w[1:], rtol=1e-14)
    lowest = tg.grad(lambda x: tsl.eigh_tridiagonal(x, e, eigvals_only=True)[0])(d)
    np.testing.assert_allclose(lowest, v[:, 0] ** 2, rtol=1e-10)   # d lambda / d d_i = v_i^2


def test_errors_name_the_function_and_argument():
    with pytest.raises(ValueError, match="companion.*'a'"):
        tsl.companion(np.array([1.0]))
    with pytest.raises(ValueError, match="leslie.*'s'"):
        tsl.leslie(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="hilbert.*'n'"):
        tsl.hilbert(2.5)
    with pytest.raises(ValueError, match="convolution_matrix.*'mode'"):
        tsl.convolution_matrix(C, 3, "bad")
    with pytest.raises(ValueError, match="hessenberg.*'a'"):
        tsl.hessenberg(np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="eigh_tridiagonal.*'e'"):
        tsl.eigh_tridiagonal(np.ones(3), np.ones(3))
