"""tangentia.scipy.sparse.linalg (cg, bicgstab, gmres).

References: SciPy's solvers iteration by iteration (the same iterates after
``maxiter`` steps, and SciPy's ``info``), dense solves for converged
solutions and their derivatives, central finite differences (``check_grads``),
loops for ``vmap``, eager evaluation for ``jit`` (both backends) and JAX 0.10.2
in float64 (the same iterates)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as ssl
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.flatten_util import ravel_pytree
from tangentia.scipy.sparse.linalg import bicgstab, cg, gmres
from tangentia.test_util import check_grads
from tangentia.tree_util import register_pytree_node_class

N = 10
RNG = np.random.default_rng(7)
_Q = RNG.standard_normal((N, N))
SPD = _Q @ _Q.T / N + np.eye(N)                        # Hermitian positive definite
GEN = RNG.standard_normal((N, N)) / np.sqrt(N) + 2.0 * np.eye(N)   # nonsymmetric
B = RNG.standard_normal(N)
SOLVERS = {"cg": (cg, ssl.cg, SPD), "bicgstab": (bicgstab, ssl.bicgstab, GEN),
           "gmres": (gmres, ssl.gmres, GEN)}
TIGHT = {"tol": 1e-13}


def _rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max()


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("maxiter", [1, 2, 4])
def test_iterates_and_info_are_scipys(name, maxiter):
    """After ``maxiter`` iterations (restart cycles of 3 for gmres) the iterate
    is SciPy's and so is ``info`` (the iteration count when not converged)."""
    ours, theirs, A = SOLVERS[name]
    kw = {"restart": 3} if name == "gmres" else {}
    x, info = ours(A, B, tol=1e-14, maxiter=maxiter, **kw)
    xs, info_s = theirs(A, B, rtol=1e-14, maxiter=maxiter, **kw)
    assert _rel(x, xs) < 1e-12
    assert int(info) == info_s == maxiter


@pytest.mark.parametrize("name", SOLVERS)
def test_converged_solution_with_preconditioner_and_x0(name):
    ours, theirs, A = SOLVERS[name]
    kw = {"restart": 2} if name == "gmres" else {}
    exact = np.linalg.solve(A, B)
    x, info = ours(A, B, **TIGHT)
    assert int(info) == 0 and _rel(x, exact) < 1e-11
    # a Jacobi preconditioner, as a matrix and as a function, and a start x0
    Minv = np.diag(1.0 / np.diag(A))
    x0 = np.linspace(-1.0, 1.0, N)
    xs, _ = theirs(A, B, x0=x0, rtol=1e-14, maxiter=3, M=Minv, **kw)
    for M in (Minv, lambda v: v / np.diag(A)):
        x, info = ours(A, B, x0=x0, tol=1e-14, maxiter=3, M=M, **kw)
        assert _rel(x, xs) < 1e-12 and int(info) == 3
        x, info = ours(A, B, x0=x0, M=M, **TIGHT)
        assert int(info) == 0 and _rel(x, exact) < 1e-11


def test_tolerances_are_scipys():
    """``tol`` is relative to norm(b), ``atol`` absolute: the same number of
    iterations as SciPy (counted by its callback)."""
    for kw in ({"tol": 1e-3}, {"tol": 0.0, "atol": 1e-4 * np.linalg.norm(B)}):
        iters = []
        scipy_kw = {"rtol": kw["tol"], "atol": kw.get("atol", 0.0)}
        xs, _ = ssl.cg(SPD, B, callback=lambda xk: iters.append(1), **scipy_kw)
        x, info = cg(SPD, B, **kw)
        assert int(info) == 0 and _rel(x, xs) < 1e-12
        assert int(cg(SPD, B, maxiter=len(iters) - 1, **kw)[1]) == len(iters) - 1   # one short


def test_gmres_methods_and_restart():
    exact = np.linalg.solve(GEN, B)
    for method in ("batched", "incremental"):
        for restart in (2, 5, 50):
            x, info = gmres(GEN, B, restart=restart, solve_method=method, **TIGHT)
            assert int(info) == 0 and _rel(x, exact) < 1e-11
    # incremental stops a cycle early: after one cycle of size N it has converged anyway
    x, info = gmres(GEN, B, restart=N, maxiter=1, solve_method="incremental", **TIGHT)
    assert int(info) == 0 and _rel(x, exact) < 1e-11


def test_bicgstab_breakdown_info():
    # r0 . A r0 = 0 for a rotation: alpha cannot be computed (SciPy's -11), x stays x0
    x, info = bicgstab(np.array([[0.0, 1.0], [-1.0, 0.0]]), np.array([1.0, 0.0]))
    assert int(info) == -11 == ssl.bicgstab(np.array([[0.0, 1.0], [-1.0, 0.0]]),
                                            np.array([1.0, 0.0]))[1]
    np.testing.assert_array_equal(x, [0.0, 0.0])


def test_zero_rhs_and_gmres_nan_info():
    for solve in (cg, bicgstab, gmres):
        x, info = solve(SPD, np.zeros(N))
        np.testing.assert_array_equal(x, 0.0)
        assert int(info) == 0
    # a singular operator: a zero pivot of the least-squares problem
    for A in (np.zeros((2, 2)), lambda x: 0.0 * x):
        x, info = gmres(A, np.array([1.0, 0.0]))
        assert np.isnan(x).all() and int(info) == -1


def test_complex_hermitian_and_general():
    H = SPD + 1j * (np.triu(SPD, 1) - np.tril(SPD, -1)) * 0.3
    G = GEN + 0.5j * RNG.standard_normal((N, N)) / np.sqrt(N)
    b = B + 1j * B[::-1]
    for ours, theirs, A in ((cg, ssl.cg, H), (bicgstab, ssl.bicgstab, G), (gmres, ssl.gmres, G)):
        x, _ = ours(A, b, tol=1e-14, maxiter=2)
        assert _rel(x, theirs(A, b, rtol=1e-14, maxiter=2)[0]) < 1e-12
        x, info = ours(A, b, **TIGHT)
        assert int(info) == 0 and _rel(x, np.linalg.solve(A, b)) < 1e-11
        # a complex matrix with a real b: the problem is complex
        assert _rel(ours(A, B, **TIGHT)[0], np.linalg.solve(A, B)) < 1e-11


@register_pytree_node_class
class DiagPlusRank1:
    """A linear operator pytree: ``diag(d) + u u^T``, applied by ``@``."""

    def __init__(self, d, u):
        self.d, self.u = d, u

    shape = property(lambda self: (self.d.shape[0],) * 2)

    def __matmul__(self, x):
        return self.d * x + self.u * tnp.dot(self.u, x)

    def tree_flatten(self):
        return (self.d, self.u), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_operator_forms_function_matrix_and_matmul_pytree():
    d, u = np.linspace(1.0, 2.0, N), RNG.standard_normal(N) / 3
    dense = np.diag(d) + np.outer(u, u)
    exact = np.linalg.solve(dense, B)
    op = DiagPlusRank1(d, u)
    for A in (dense, lambda x: dense @ x, op):
        for solve in (cg, bicgstab, gmres):
            assert _rel(solve(A, B, **TIGHT)[0], exact) < 1e-11
    # the pytree operator is an argument of jit and vmap; derivatives reach its leaves
    x = tg.jit(lambda op, b: cg(op, b, **TIGHT)[0])(op, B)
    assert _rel(x, exact) < 1e-11
    ds = np.stack([d, d + 1.0, 2 * d])
    xs = tg.vmap(lambda d: cg(DiagPlusRank1(d, u), B, **TIGHT)[0])(ds)
    for xi, di in zip(xs, ds):
        assert _rel(xi, np.linalg.solve(np.diag(di) + np.outer(u, u), B)) < 1e-11
    g = tg.grad(lambda op: tnp.sum(gmres(op, B, **TIGHT)[0] ** 2))(op)
    ref = tg.grad(lambda d, u: tnp.sum(tnp.linalg.solve(tnp.diag(d) + tnp.outer(u, u), B) ** 2),
                  (0, 1))(d, u)
    assert _rel(g.d, ref[0]) < 1e-9 and _rel(g.u, ref[1]) < 1e-9


def test_pytree_right_hand_side():
    b = {"a": B[:4], "b": B[4:].reshape(3, 2)}

    def A(x):                       # GEN on the raveled tree
        flat, unravel = ravel_pytree(x)
        return unravel(GEN @ flat)

    want = np.linalg.solve(GEN, ravel_pytree(b)[0])
    for solve in (bicgstab, gmres):
        x, info = solve(A, b, **TIGHT)
        assert set(x) == {"a", "b"} and x["b"].shape == (3, 2) and int(info) == 0
        assert _rel(ravel_pytree(x)[0], want) < 1e-11
    x0 = {"a": np.ones(4), "b": np.ones((3, 2))}
    x = cg(lambda t: {"a": 2.0 * t["a"], "b": 4.0 * t["b"]}, b, x0=x0, **TIGHT)[0]
    np.testing.assert_allclose(x["a"], b["a"] / 2, rtol=1e-12)
    np.testing.assert_allclose(x["b"], b["b"] / 4, rtol=1e-12)


def test_matrix_times_2d_b_scalar_leaves_and_jacobian_of_a_tuple_rhs():
    """A matrix (or a plain object with ``@``) applied to a 2-D ``b`` treats its
    columns as one vector; Python-number leaves; ``jacrev`` through a tuple
    right-hand side (it batches the solve)."""
    class Op:                 # not a pytree: only ``@`` and ``shape``
        shape = (3, 3)

        def __matmul__(self, x):
            return 2.0 * x

    b = np.arange(9.0).reshape(3, 3)
    for solve in (cg, bicgstab, gmres):
        for A in (2.0 * np.eye(3), Op()):
            np.testing.assert_allclose(solve(A, b, **TIGHT)[0], b / 2, rtol=1e-12)
        x = solve(lambda t: {"a": t["a"] + 0.5 * t["b"], "b": 0.5 * t["a"] + t["b"]},
                  {"a": 1.0, "b": -4.0}, **TIGHT)[0]
        np.testing.assert_allclose([x["a"], x["b"]], [4.0, -6.0], rtol=1e-12)
    jac = tg.jacrev(lambda b: cg(lambda x: (SPD @ x[0], SPD @ x[1]), (b, 2 * b), **TIGHT)[0])(B)
    inv = np.linalg.inv(SPD)
    np.testing.assert_allclose(jac[0], inv, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(jac[1], 2 * inv, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", SOLVERS)
def test_derivatives_are_implicit_and_match_finite_differences(name):
    """Gradients through the solve (whose while_loop could not be reversed) are
    those of the dense solve, in b and in the matrix the operator closes over."""
    solve, _, A = SOLVERS[name]

    def f(A, b):
        return solve(lambda x: A @ x, b, **TIGHT)[0]

    ref = tg.jacrev(lambda A, b: tnp.linalg.solve(A, b), (0, 1))(A, B)
    for jac in (tg.jacrev, tg.jacfwd):
        got = jac(f, (0, 1))(A, B)
        assert _rel(got[0], ref[0]) < 1e-9 and _rel(got[1], ref[1]) < 1e-9
    check_grads(f, (A, B), 1, modes=("fwd", "rev"))


@settings(max_examples=10, deadline=None, derandomize=True)
@given(n=st.integers(1, 6), seed=st.integers(0, 2 ** 16), name=st.sampled_from(list(SOLVERS)))
def test_identities_on_random_systems(n, seed, name):
    """A x = b at convergence, and the derivative's transpose is the transpose
    of the derivative: <u, J v> == <J^T u, v>, with J = d x / d(A, b)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, n))
    A = q @ q.T / n + np.eye(n) if name == "cg" else q / np.sqrt(n) + 2.0 * np.eye(n)
    b, u = rng.standard_normal(n), rng.standard_normal(n)
    dA, db = rng.standard_normal((n, n)), rng.standard_normal(n)
    solve = SOLVERS[name][0]
    f = lambda A, b: solve(lambda x: A @ x, b, **TIGHT)[0]  # noqa: E731
    x, jv = tg.jvp(f, (A, b), (dA, db))
    np.testing.assert_allclose(A @ x, b, rtol=1e-10, atol=1e-11)
    _, pullback = tg.vjp(f, A, b)
    ua, ub = pullback(u)
    np.testing.assert_allclose(u @ jv, np.sum(ua * dA) + ub @ db, rtol=1e-9, atol=1e-10)


def test_second_derivatives_through_cg():
    f = lambda s, b: tnp.sum(cg(SPD * s, b, **TIGHT)[0] ** 2)  # noqa: E731
    check_grads(f, (1.3, B), 2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", SOLVERS)
def test_vmap_is_a_loop_and_jit_is_eager(name):
    solve, _, A = SOLVERS[name]
    bs = RNG.standard_normal((3, N))
    As = np.stack([A, A + 0.5 * np.eye(N), 2 * A])
    kw = {"restart": 2} if name == "gmres" else {}
    f = lambda A, b: solve(A, b, tol=1e-12, maxiter=4, **kw)  # noqa: E731  (not converged: info 4)
    for in_axes, args in (((None, 0), (A, bs)), ((0, 0), (As, bs)), ((0, None), (As, B))):
        x, info = tg.vmap(f, in_axes)(*args)
        for i in range(3):
            xi, ii = f(*[a[i] if ax == 0 else a for a, ax in zip(args, in_axes)])
            np.testing.assert_allclose(x[i], xi, rtol=1e-12, atol=1e-14)
            assert int(info[i]) == int(ii)
    x, info = tg.jit(f)(A, B)
    xe, ie = f(A, B)
    np.testing.assert_allclose(x, xe, rtol=1e-13, atol=1e-15)
    assert int(info) == int(ie) == 4


def test_numba_backend_matches_numpy_backend():
    """One program: the three solves, cg's gradient with respect to the matrix
    and gmres on a singular operator (NaN, info -1, on both backends)."""
    def f(S, G, b, Z):
        grad = tg.grad(lambda S: tnp.sum(cg(S, b, **TIGHT)[0] ** 2))(S)
        solves = [s(A, b, **TIGHT) for s, A in ((cg, S), (bicgstab, G), (gmres, G))]
        return solves, grad, gmres(Z, b[:2].at[1].set(0.0))

    args = (SPD, GEN, B, np.zeros((2, 2)))
    got = tg.jit(f, backend="numba")(*args)
    want = tg.jit(f, backend="numpy")(*args)
    for a, b in zip(tg.tree_util.tree_leaves(got), tg.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    assert np.isnan(got[2][0]).all() and int(got[2][1]) == -1


def test_same_iterates_as_jax():
    jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference compared with here")
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.sparse.linalg as jsl
    for name, (ours, _, A) in SOLVERS.items():
        kw = {"restart": 4} if name == "gmres" else {}
        for maxiter in (2, 50):
            x, _ = ours(A, B, tol=1e-12, maxiter=maxiter, **kw)
            xj, _ = getattr(jsl, name)(jax.numpy.asarray(A), jax.numpy.asarray(B), tol=1e-12,
                                       maxiter=maxiter, **kw)
            assert _rel(x, xj) < 1e-11, (name, maxiter)
        g = tg.grad(lambda b: tnp.sum(ours(A, b, **TIGHT, **kw)[0] ** 3))(B)
        gj = jax.grad(lambda b: jax.numpy.sum(getattr(jsl, name)(
            jax.numpy.asarray(A), b, **TIGHT, **kw)[0] ** 3))(jax.numpy.asarray(B))
        assert _rel(g, gj) < 1e-10, name


def test_bad_arguments_name_the_function_and_argument():
    with pytest.raises(ValueError, match=r"^linear operator must be a square matrix, but has "
                                         r"shape: \(3, 4\) \(cg: argument A\)"):
        cg(np.ones((3, 4)), np.ones(3))
    with pytest.raises(TypeError, match=r"^linear operator must be either a function or "
                                        r"ndarray: .*bicgstab: argument M"):
        bicgstab(GEN, B, M="jacobi")
    with pytest.raises(ValueError, match=r"gmres: A is a matrix of shape \(10, 10\), so b must "
                                         r"be one array of shape \(10,\)"):
        gmres(GEN, np.ones(3))
    with pytest.raises(ValueError, match=r"^x0 and b must have matching tree structure: .*"
                                         r"\(cg: argument x0\)"):
        cg(lambda x: x, {"a": np.ones(2)}, x0=np.ones(2))
    with pytest.raises(ValueError, match=r"^arrays in x0 and b must have matching shapes: "
                                         r"\[\(3,\)\] vs \[\(10,\)\] \(cg: argument x0\)"):
        cg(SPD, B, x0=np.ones(3))
    with pytest.raises(ValueError, match=r"^invalid solve_method qr, must be either "
                                         r"'incremental' or 'batched' \(gmres: argument"):
        gmres(GEN, B, solve_method="qr")
    with pytest.raises(ValueError, match=r"bicgstab: maxiter must be an integer >= 0 or None, "
                                         r"got -1"):
        bicgstab(GEN, B, maxiter=-1)
    with pytest.raises(ValueError, match=r"gmres: restart must be an integer >= 1"):
        gmres(GEN, B, restart=0)
    with pytest.raises(TypeError, match=r"cg: b must be a pytree of arrays, but leaf 1 is a str"):
        cg(lambda x: x, (np.ones(2), "b"))
    with pytest.raises(TypeError, match=r"cg: A must return values of b's structure, shapes and "
                                        r"kind .* returned 2 complex128 numbers \(pass a complex b"):
        cg(lambda x: (1 + 1j) * x, np.ones(2))
    with pytest.raises(TypeError, match=r"gmres: M must return values of b's structure, .* but "
                                        r"returned 1 float64 numbers$"):
        gmres(GEN, B, M=lambda x: x[:1])
