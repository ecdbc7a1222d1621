"""scipy.linalg.solve_banded and polar: values against SciPy, gradients
against finite differences, jit against eager, errors naming the argument."""
import numpy as np
import pytest
import scipy.linalg as sl

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.linalg as tl

RNG = np.random.default_rng(0)


def _fd(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        out[idx] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@pytest.mark.parametrize("lo,up", [(0, 0), (1, 1), (2, 1), (0, 3)])
def test_solve_banded(lo, up):
    n = 6
    ab = RNG.normal(size=(lo + up + 1, n))
    ab[up] += 5.0
    b = RNG.normal(size=(n, 2))
    np.testing.assert_allclose(tl.solve_banded((lo, up), ab, b), sl.solve_banded((lo, up), ab, b),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tg.jit(lambda ab, v: tl.solve_banded((lo, up), ab, v))(ab, b[:, 0]),
                               sl.solve_banded((lo, up), ab, b[:, 0]), rtol=1e-12, atol=1e-14)
    g = tg.grad(lambda ab: tnp.sum(tl.solve_banded((lo, up), ab, b) ** 2))(ab)
    np.testing.assert_allclose(g, _fd(lambda m: np.sum(sl.solve_banded((lo, up), m, b) ** 2), ab),
                               rtol=1e-5, atol=1e-7)


def test_solve_banded_errors():
    with pytest.raises(ValueError, match="solve_banded: argument 'ab' must have shape"):
        tl.solve_banded((1, 1), np.ones((2, 4)), np.ones(4))
    with pytest.raises(ValueError, match="solve_banded: argument 'b' must have 4 rows"):
        tl.solve_banded((1, 1), np.ones((3, 4)), np.ones(5))
    with pytest.raises(ValueError, match="solve_banded: argument 'l_and_u'"):
        tl.solve_banded(1, np.ones((3, 4)), np.ones(4))


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 3)])
def test_polar(side, shape):
    a = RNG.normal(size=shape)
    u, p = tl.polar(a, side)
    uw, pw = sl.polar(a, side)
    np.testing.assert_allclose(u, uw, atol=1e-12)
    np.testing.assert_allclose(p, pw, atol=1e-12)
    w = np.arange(p.size, dtype=float).reshape(p.shape)
    g = tg.grad(lambda a: tnp.sum(tl.polar(a, side)[1] * w) + tnp.sum(tl.polar(a, side)[0]))(a)
    np.testing.assert_allclose(
        g, _fd(lambda m: np.sum(sl.polar(m, side)[1] * w) + np.sum(sl.polar(m, side)[0]), a),
        rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="polar: argument 'side'"):
        tl.polar(a, "up")


def test_solve_sylvester_values_and_implicit_derivatives():
    a, b, c = RNG.normal(size=(3, 3)), RNG.normal(size=(2, 2)), RNG.normal(size=(3, 2))
    np.testing.assert_allclose(tl.solve_sylvester(a, b, c), sl.solve_sylvester(a, b, c), rtol=1e-12)
    np.testing.assert_allclose(tg.jit(tl.solve_sylvester)(a, b, c), sl.solve_sylvester(a, b, c),
                               rtol=1e-12)
    w = RNG.normal(size=(3, 2))
    grads = tg.grad(lambda a, b, c: tnp.sum(tl.solve_sylvester(a, b, c) * w), argnums=(0, 1, 2))(a, b, c)
    args = [a, b, c]
    for i, g in enumerate(grads):
        def loss(m, i=i):
            full = list(args)
            full[i] = m
            return np.sum(sl.solve_sylvester(*full) * w)
        np.testing.assert_allclose(g, _fd(loss, args[i]), rtol=1e-5, atol=1e-7)
    # forward mode (jvp in a) against a central difference
    t = tg.jvp(lambda m: tl.solve_sylvester(m, b, c), (a,), (np.ones_like(a),))[1]
    fd = (sl.solve_sylvester(a + 1e-6, b, c) - sl.solve_sylvester(a - 1e-6, b, c)) / 2e-6
    np.testing.assert_allclose(t, fd, rtol=1e-5, atol=1e-7)
    cs = RNG.normal(size=(4, 3, 2))
    np.testing.assert_allclose(tg.vmap(tl.solve_sylvester, in_axes=(None, None, 0))(a, b, cs),
                               np.stack([sl.solve_sylvester(a, b, q) for q in cs]), rtol=1e-12)
    with pytest.raises(ValueError, match="solve_sylvester: argument 'C' must have shape \\(3, 2\\)"):
        tl.solve_sylvester(a, b, np.ones((2, 3)))


def test_schur():
    a = RNG.normal(size=(4, 4))
    t, z = tl.schur(a)
    tw, zw = sl.schur(a)
    np.testing.assert_allclose(t, tw, atol=1e-13)
    np.testing.assert_allclose(z, zw, atol=1e-13)
    t, z = tg.jit(lambda m: tl.schur(m, "complex"))(a)
    assert t.dtype == np.complex128
    np.testing.assert_allclose(z @ t @ z.conj().T, a, atol=1e-12)
    np.testing.assert_allclose(np.tril(t, -1), 0, atol=1e-14)


@pytest.mark.parametrize("name", ["sqrtm", "logm"])
def test_sqrtm_logm_values_and_derivatives(name):
    ours, ref = getattr(tl, name), getattr(sl, name)
    p = RNG.normal(size=(3, 3))
    p = p @ p.T + np.eye(3)
    w = RNG.normal(size=(3, 3))
    out = ours(p)
    assert out.dtype == np.complex128                      # complex, as JAX's sqrtm
    np.testing.assert_allclose(out, ref(p), atol=1e-13)
    a = RNG.normal(size=(3, 3))                            # complex results for a general matrix
    np.testing.assert_allclose(ours(a), ref(a), atol=1e-12)
    g = tg.grad(lambda m: tnp.real(tnp.sum(ours(m) * w)))(p)
    np.testing.assert_allclose(g, _fd(lambda m: np.real(np.sum(ref(m) * w)), p), rtol=1e-5, atol=1e-7)
    t = tg.jvp(ours, (p,), (w,))[1]
    np.testing.assert_allclose(t, (ref(p + 1e-6 * w) - ref(p - 1e-6 * w)) / 2e-6, rtol=1e-5, atol=1e-7)
    stack = np.stack([p, p + np.eye(3)])
    np.testing.assert_allclose(tg.jit(tg.vmap(ours))(stack)[1], ref(p + np.eye(3)), atol=1e-12)
