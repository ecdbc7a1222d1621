"""numpy.linalg: pinv, matrix_rank, lstsq, cond, tensorinv, tensorsolve, eig
and eigvals.  Values against NumPy (JAX's conventions where they differ:
pinv's default rtol, lstsq's residuals, complex eig), gradients against
finite differences, vmap against a loop, jit against eager."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.numpy.linalg as la

RNG = np.random.default_rng(3)


def _fd(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        out[idx] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_pinv(shape):
    a = RNG.normal(size=shape)
    np.testing.assert_allclose(la.pinv(a), np.linalg.pinv(a), atol=1e-13)
    w = RNG.normal(size=shape[::-1])
    g = tg.grad(lambda m: tnp.sum(la.pinv(m) * w))(a)
    np.testing.assert_allclose(g, _fd(lambda m: np.sum(np.linalg.pinv(m) * w), a), rtol=1e-5, atol=1e-7)
    stack = RNG.normal(size=(3,) + shape)
    np.testing.assert_allclose(tg.jit(tg.vmap(la.pinv))(stack),
                               np.stack([np.linalg.pinv(m) for m in stack]), atol=1e-12)
    # rank-deficient: the small singular value is dropped (JAX's default rtol)
    r1 = np.outer(np.arange(1.0, 5.0), np.arange(1.0, 4.0))
    np.testing.assert_allclose(la.pinv(r1), np.linalg.pinv(r1, rtol=None), atol=1e-13)
    with pytest.raises(ValueError, match="only one of rtol and rcond"):
        la.pinv(a, rtol=1e-3, rcond=1e-3)


def test_matrix_rank():
    assert la.matrix_rank(RNG.normal(size=(5, 3))) == 3
    assert la.matrix_rank(np.ones((3, 3))) == 1
    assert la.matrix_rank(np.zeros(3)) == 0 and la.matrix_rank(np.ones(3)) == 1
    stack = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])
    np.testing.assert_array_equal(la.matrix_rank(stack), np.linalg.matrix_rank(stack))
    assert la.matrix_rank(np.diag([1.0, 1e-3]), tol=1e-2) == 1


@pytest.mark.parametrize("vector", [False, True])
def test_lstsq(vector):
    a, b = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))
    if vector:
        b = b[:, 0]
    x, resid, rank, s = la.lstsq(a, b)
    xw, rw, kw, sw = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, xw, atol=1e-13)
    assert resid.shape == rw.shape   # (1,) for a vector b, as NumPy's and JAX's (not ())
    np.testing.assert_allclose(resid, rw, rtol=1e-12)
    assert rank == kw
    np.testing.assert_allclose(s, sw, rtol=1e-13)
    g = tg.grad(lambda m: tnp.sum(la.lstsq(m, b)[0]))(a)
    np.testing.assert_allclose(g, _fd(lambda m: np.sum(np.linalg.lstsq(m, b)[0]), a), rtol=1e-5, atol=1e-7)
    # NumPy's empty residuals for a wide system, on request
    assert la.lstsq(a.T, a.T[:, 0], numpy_resid=True)[1].shape == (0,)
    with pytest.raises(ValueError, match="^Leading dimensions of input arrays must match"):
        la.lstsq(a, np.ones(5))


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"])
def test_cond(p):
    m = RNG.normal(size=(4, 4))
    np.testing.assert_allclose(la.cond(m, p), np.linalg.cond(m, p), rtol=1e-12)
    g = tg.grad(lambda x: la.cond(x, p))(m)
    np.testing.assert_allclose(g, _fd(lambda x: np.linalg.cond(x, p), m), rtol=1e-4, atol=1e-6)


def test_cond_singular_and_errors():
    with np.errstate(divide="ignore"):
        assert la.cond(np.array([[1.0, 2.0], [0.0, 0.0]])) == np.inf
    with pytest.raises(ValueError, match="input array must be at least 2D"):
        la.cond(np.ones(3))
    with pytest.raises(ValueError, match="array must be square"):
        la.cond(np.ones((2, 3)), 1)


def test_tensorinv_tensorsolve():
    a = RNG.normal(size=(2, 3, 6))
    np.testing.assert_allclose(la.tensorinv(a, 2), np.linalg.tensorinv(a, 2), atol=1e-12)
    a, b = RNG.normal(size=(6, 2, 3)), RNG.normal(size=6)
    np.testing.assert_allclose(la.tensorsolve(a, b), np.linalg.tensorsolve(a, b), atol=1e-12)
    a2 = RNG.normal(size=(2, 6, 3))
    np.testing.assert_allclose(la.tensorsolve(a2, b, axes=(0,)),
                               np.linalg.tensorsolve(a2, b, axes=(0,)), atol=1e-12)
    g = tg.grad(lambda b: tnp.sum(la.tensorsolve(a, b)))(b)
    np.testing.assert_allclose(g, _fd(lambda v: np.sum(np.linalg.tensorsolve(a, v)), b), rtol=1e-6)
    with pytest.raises(np.linalg.LinAlgError, match="tensorinv"):
        la.tensorinv(np.ones((2, 3)), 1)


def test_eig_and_eigvals():
    m = RNG.normal(size=(4, 4))
    w, v = la.eig(m)
    assert w.dtype == v.dtype == np.complex128
    np.testing.assert_allclose(m @ v, v * w, atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(la.eigvals(m)), np.sort_complex(np.linalg.eigvals(m)),
                               atol=1e-12)
    # d/dm of sum(w^2) = trace(m^2): 2 m^T
    g = tg.grad(lambda x: tnp.real(tnp.sum(la.eigvals(x) ** 2)))(m)
    np.testing.assert_allclose(g, 2 * m.T, atol=1e-12)
    stack = RNG.normal(size=(3, 4, 4))
    np.testing.assert_allclose(tg.jit(tg.vmap(la.eigvals))(stack),
                               np.stack([la.eigvals(s) for s in stack]), atol=1e-12)
    with pytest.raises(NotImplementedError, match="^Derivatives of non-symmetric eigenvectors"):
        tg.grad(lambda x: tnp.real(tnp.sum(la.eig(x)[1])))(m)
