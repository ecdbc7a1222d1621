"""Implicit differentiation: ``lax.custom_linear_solve``, ``lax.custom_root``
(from ``tangentia.lax.implicit``) and ``tangentia.experimental.fixed_point``.

References used:

* values: ``numpy.linalg.solve`` and closed forms (``sqrt``, the fixed point
  of an affine map after n iterations);
* derivatives: closed forms, and central finite differences through
  ``check_grads`` (forward and reverse mode for the solvers with a custom JVP;
  reverse mode for ``fixed_point``, a custom_vjp), and the same computation
  written with ``tnp.linalg.solve``;
* solvers whose internals cannot be differentiated in reverse mode
  (``while_loop``) show that only the implicit rules are used;
* transformations: ``jit(f) == f``, ``vmap(f)(xs) == stack([f(x) for x in xs])``,
  in several orders with ``grad``.
"""
from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.experimental import fixed_point
from tangentia.lax.implicit import custom_linear_solve, custom_root
from tangentia.test_util import check_grads
from tangentia.tree_util import tree_leaves, tree_map, tree_structure

N = 3
RNG = np.random.default_rng(0)
A0 = RNG.standard_normal((N, N)) + 4.0 * np.eye(N)      # diagonally dominant
B0 = RNG.standard_normal(N)
S0 = A0 @ A0.T                                           # symmetric positive definite


def assert_tree_close(got, want, rtol=1e-10, atol=1e-12):
    assert tree_structure(got) == tree_structure(want)
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def _loop(f, *xs):
    outs = [f(*[x[i] for x in xs]) for i in range(len(xs[0]))]
    return tree_map(lambda *a: np.stack(a), *outs)


# ---------------------------------------------------------------------------
# Solvers used by the tests


def dense(op, b):
    """Materialize the operator and solve densely (works for any ``op``)."""
    M = tg.vmap(op)(tnp.eye(N)).T
    return tnp.linalg.solve(M, b)


def jacobi(op, b):
    """Jacobi iteration in a while_loop (not reverse-differentiable itself)."""
    d = tnp.diagonal(tg.vmap(op)(tnp.eye(N)))

    def cond(c):
        i, x = c
        return (i < 500) & (tnp.max(tnp.abs(op(x) - b)) > 1e-14)

    def body(c):
        i, x = c
        return i + 1, x + (b - op(x)) / d

    return lax.while_loop(cond, body, (0, tnp.zeros_like(b)))[1]


def cg(op, b):
    """Conjugate gradients in a while_loop (symmetric positive definite ``op``)."""
    def cond(c):
        i, x, r, p, rr = c
        return (i < 50) & (rr > 1e-28)

    def body(c):
        i, x, r, p, rr = c
        ap = op(p)
        alpha = rr / tnp.vdot(p, ap)
        x = x + alpha * p
        r = r - alpha * ap
        rr_new = tnp.vdot(r, r)
        return i + 1, x, r, r + (rr_new / rr) * p, rr_new

    x0 = tnp.zeros_like(b)
    return lax.while_loop(cond, body, (0, x0, b, b, tnp.vdot(b, b)))[1]


def solve_ls(A, b, solver=jacobi):
    return custom_linear_solve(lambda x: A @ x, b, solver, transpose_solve=solver)


# ---------------------------------------------------------------------------
# custom_linear_solve


@pytest.mark.parametrize("solver", [dense, jacobi])
def test_linear_solve_values_and_grads(solver):
    f = lambda A, b: solve_ls(A, b, solver)  # noqa: E731
    np.testing.assert_allclose(f(A0, B0), np.linalg.solve(A0, B0), rtol=1e-12, atol=1e-13)
    check_grads(f, (A0, B0), 2, modes=("fwd", "rev"))


def test_linear_solve_grad_matches_dense_reference():
    loss = lambda A, b: tnp.sum(tnp.sin(solve_ls(A, b)))  # noqa: E731
    ref = lambda A, b: tnp.sum(tnp.sin(tnp.linalg.solve(A, b)))  # noqa: E731
    assert_tree_close(tg.grad(loss, (0, 1))(A0, B0), tg.grad(ref, (0, 1))(A0, B0))


def test_linear_solve_symmetric_cg():
    f = lambda S, b: custom_linear_solve(lambda x: S @ x, b, cg, symmetric=True)  # noqa: E731
    np.testing.assert_allclose(f(S0, B0), np.linalg.solve(S0, B0), rtol=1e-10)
    check_grads(lambda s, b: f(s + s.T, b), (S0 / 2, B0), 1)


def test_linear_solve_transpose_solve_gets_the_transposed_operator():
    # "Solvers" that just apply the operator they are given: x = A b, and the
    # cotangent of b is then vecmat(u), which must be A^T u.
    def apply(op, b):
        return op(b)

    def f(b):
        return custom_linear_solve(lambda x: A0 @ x, b, apply, transpose_solve=apply)

    u = RNG.standard_normal(N)
    np.testing.assert_allclose(f(B0), A0 @ B0, rtol=1e-14)
    np.testing.assert_allclose(tg.vjp(f, B0)[1](u)[0], A0.T @ u, rtol=1e-14)


def test_linear_solve_pytree_b():
    def matvec(x):
        u, v = x
        return (2.0 * u + v[:1].sum(), A0 @ v)

    def solve(mv, b):
        bu, bv = b
        v = tnp.linalg.solve(A0, bv)
        return ((bu - v[:1].sum()) / 2.0, v)

    def f(bu, bv):
        return custom_linear_solve(matvec, (bu, bv), solve, transpose_solve=dense_tree)

    def dense_tree(vecmat, b):
        # solve the transposed block system densely
        flat = lambda z: tnp.concatenate([tnp.reshape(z[0], (1,)), z[1]])  # noqa: E731
        unflat = lambda z: (z[0], z[1:])  # noqa: E731
        M = tg.vmap(lambda e: flat(vecmat(unflat(e))))(tnp.eye(N + 1)).T
        return unflat(tnp.linalg.solve(M, flat(b)))

    x = f(1.5, B0)
    r = matvec(x)
    np.testing.assert_allclose(r[0], 1.5, rtol=1e-12)
    np.testing.assert_allclose(r[1], B0, rtol=1e-12, atol=1e-13)
    check_grads(f, (1.5, B0), 1)


def test_linear_solve_has_aux():
    def solver(op, b):
        return dense(op, b), tnp.sum(b)

    def f(A, b):
        x, aux = custom_linear_solve(lambda x: A @ x, b, solver, transpose_solve=solver,
                                     has_aux=True)
        return x, aux

    x, aux = f(A0, B0)
    np.testing.assert_allclose(aux, B0.sum())
    g = tg.grad(lambda A, b: tnp.sum(f(A, b)[0]), (0, 1))(A0, B0)
    ref = tg.grad(lambda A, b: tnp.sum(tnp.linalg.solve(A, b)), (0, 1))(A0, B0)
    assert_tree_close(g, ref)
    check_grads(lambda A, b: f(A, b)[0], (A0, B0), 1)


def test_linear_solve_without_transpose_solve():
    f = lambda b: custom_linear_solve(lambda x: A0 @ x, b, jacobi)  # noqa: E731
    _, t = tg.jvp(f, (B0,), (np.ones(N),))       # forward mode needs only solve
    np.testing.assert_allclose(t, np.linalg.solve(A0, np.ones(N)), rtol=1e-12)
    with pytest.raises(TypeError, match="transpose_solve required for backwards mode"):
        tg.grad(lambda b: tnp.sum(f(b)))(B0)


def test_linear_solve_inside_scan():
    def loss(A, b):
        def body(c, _):
            return solve_ls(A, c) + b, None
        return tnp.sum(lax.scan(body, b, None, length=3)[0] ** 2)

    def ref(A, b):
        c = b
        for _ in range(3):
            c = tnp.linalg.solve(A, c) + b
        return tnp.sum(c ** 2)

    want = tg.grad(ref, (0, 1))(A0, B0)
    assert_tree_close(tg.grad(loss, (0, 1))(A0, B0), want)
    assert_tree_close(tg.jit(tg.grad(loss, (0, 1)))(A0, B0), want)


AS = np.stack([A0, A0 + np.eye(N), A0.T])
BS = np.stack([B0, 2.0 * B0, -B0])


@pytest.mark.parametrize("axes", [(0, 0), (0, None), (None, 0)])
def test_linear_solve_vmap(axes):
    args = [AS if axes[0] == 0 else A0, BS if axes[1] == 0 else B0]
    got = tg.vmap(solve_ls, axes)(*args)
    want = np.stack([np.linalg.solve(AS[i] if axes[0] == 0 else A0,
                                     BS[i] if axes[1] == 0 else B0) for i in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("order", ["jit", "vmap_grad", "grad_vmap", "jit_vmap_grad",
                                   "vmap_jit_grad", "vmap_jvp"])
def test_linear_solve_transformation_orders(order):
    loss = lambda A, b: tnp.sum(tnp.cos(solve_ls(A, b)))  # noqa: E731
    g = tg.grad(loss, (0, 1))
    if order == "jit":
        assert_tree_close(tg.jit(solve_ls)(A0, B0), solve_ls(A0, B0))
        return
    if order == "vmap_jvp":
        jv = lambda A, b: tg.jvp(solve_ls, (A, b), (np.eye(N), b))[1]  # noqa: E731
        assert_tree_close(tg.vmap(jv)(AS, BS), _loop(jv, AS, BS))
        return
    want = _loop(g, AS, BS)
    got = {"vmap_grad": lambda: tg.vmap(g)(AS, BS),
           "grad_vmap": lambda: tg.grad(lambda A, b: tnp.sum(tg.vmap(loss)(A, b)), (0, 1))(AS, BS),
           "jit_vmap_grad": lambda: tg.jit(tg.vmap(g))(AS, BS),
           "vmap_jit_grad": lambda: tg.vmap(tg.jit(g))(AS, BS)}[order]()
    assert_tree_close(got, want)


def test_linear_solve_errors():
    with pytest.raises(ValueError, match=r"matvec\(\) output shapes must match b, got \[\(2,\)\] "
                                         r"and \[\(3,\)\] .*matvec \(bad\) returned f64\[2\]"):
        def bad(x):
            return x[:2]
        custom_linear_solve(bad, B0, dense)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match b.*"
                                        r"solve \(wrong\) returned \(f64\[3\], f64\[3\]\)"):
        def wrong(op, b):
            return (b, b)
        custom_linear_solve(lambda x: x, B0, wrong)


# ---------------------------------------------------------------------------
# custom_root


def newton_scalar(f, x0):
    def body(x):
        fx, dfx = tg.jvp(f, (x,), (tnp.ones_like(x),))
        return x - fx / dfx
    return lax.while_loop(lambda x: tnp.abs(f(x)) > 1e-13, body, x0)


def scalar_tangent_solve(g, y):
    return y / g(1.0)


def root_sqrt(a):
    return custom_root(lambda x: x ** 2 - a, 1.0, newton_scalar, scalar_tangent_solve)


def test_root_sqrt_values_and_derivatives():
    np.testing.assert_allclose(root_sqrt(2.0), np.sqrt(2.0), rtol=1e-14)
    np.testing.assert_allclose(tg.grad(root_sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-12)
    np.testing.assert_allclose(tg.grad(tg.grad(root_sqrt))(2.0), -0.25 * 2.0 ** -1.5,
                               rtol=1e-10)
    np.testing.assert_allclose(tg.jvp(root_sqrt, (4.0,), (1.0,))[1], 0.25, rtol=1e-12)
    check_grads(root_sqrt, (3.0,), 2, modes=("fwd", "rev"))


@pytest.mark.parametrize("order", ["vmap", "jit", "vmap_grad", "grad_vmap", "jit_vmap_grad",
                                   "vmap_jit_grad"])
def test_root_transformation_orders(order):
    a = np.array([1.0, 4.0, 9.0])
    if order in ("vmap", "jit"):
        f = tg.vmap(root_sqrt) if order == "vmap" else tg.jit(tg.vmap(root_sqrt))
        np.testing.assert_allclose(f(a), np.sqrt(a), rtol=1e-13)
        return
    g = tg.grad(root_sqrt)
    got = {"vmap_grad": lambda: tg.vmap(g)(a),
           "grad_vmap": lambda: tg.grad(lambda a: tnp.sum(tg.vmap(root_sqrt)(a)))(a),
           "jit_vmap_grad": lambda: tg.jit(tg.vmap(g))(a),
           "vmap_jit_grad": lambda: tg.vmap(tg.jit(g))(a)}[order]()
    np.testing.assert_allclose(got, 0.5 / np.sqrt(a), rtol=1e-12)


W0 = 0.3 * RNG.standard_normal((N, N))


def newton_vec(f, x0):
    def cond(c):
        i, x = c
        return (i < 50) & (tnp.max(tnp.abs(f(x))) > 1e-13)

    def body(c):
        i, x = c
        return i + 1, x - tnp.linalg.solve(tg.jacfwd(f)(x), f(x))

    return lax.while_loop(cond, body, (0, x0))[1]


def test_root_vector_with_jacobian_tangent_solve():
    def root(W, b):
        f = lambda x: x + tnp.tanh(W @ x) - b  # noqa: E731
        return custom_root(f, tnp.zeros(N), newton_vec,
                           lambda g, y: tnp.linalg.solve(tg.jacfwd(g)(y), y))

    x = root(W0, B0)
    np.testing.assert_allclose(x + np.tanh(W0 @ x), B0, atol=1e-12)
    check_grads(root, (W0, B0), 2, modes=("fwd", "rev"))


def test_root_tangent_solve_with_custom_linear_solve_and_pytree():
    def root(W, b):
        def f(x):
            return {"u": x["u"] + tnp.tanh(W @ x["u"]) - b, "s": x["s"] ** 3 - b[0] - 2.0}

        def solve(f, x0):
            flat = lambda x: tnp.concatenate([x["u"], tnp.reshape(x["s"], (1,))])  # noqa: E731
            unflat = lambda z: {"u": z[:N], "s": z[N]}  # noqa: E731
            z = newton_full(lambda z: flat(f(unflat(z))), flat(x0))
            return unflat(z)

        def tangent_solve(g, y):
            return custom_linear_solve(g, y, dense_dict, transpose_solve=dense_dict)

        return custom_root(f, {"u": tnp.zeros(N), "s": 1.0}, solve, tangent_solve)

    x = root(W0, B0)
    np.testing.assert_allclose(x["u"] + np.tanh(W0 @ x["u"]), B0, atol=1e-12)
    np.testing.assert_allclose(x["s"], np.cbrt(B0[0] + 2.0), rtol=1e-12)
    check_grads(root, (W0, B0), 1, modes=("fwd", "rev"))


def newton_full(f, z0):
    def cond(c):
        i, z = c
        return (i < 50) & (tnp.max(tnp.abs(f(z))) > 1e-13)

    def body(c):
        i, z = c
        return i + 1, z - tnp.linalg.solve(tg.jacfwd(f)(z), f(z))

    return lax.while_loop(cond, body, (0, z0))[1]


def dense_dict(op, b):
    flat = lambda x: tnp.concatenate([x["u"], tnp.reshape(x["s"], (1,))])  # noqa: E731
    unflat = lambda z: {"u": z[:N], "s": z[N]}  # noqa: E731
    M = tg.vmap(lambda e: flat(op(unflat(e))))(tnp.eye(N + 1)).T
    return unflat(tnp.linalg.solve(M, flat(b)))


def test_root_has_aux_and_initial_guess_not_differentiated():
    def solve(f, x0):
        def body(c):
            i, x = c
            fx, dfx = tg.jvp(f, (x,), (tnp.ones_like(x),))
            return i + 1, x - fx / dfx
        return lax.while_loop(lambda c: tnp.abs(f(c[1])) > 1e-13, body, (0, x0))[::-1]

    def f(a, x0):
        return custom_root(lambda x: x ** 3 - a, x0, solve, scalar_tangent_solve, has_aux=True)

    x, iters = f(8.0, 1.0)
    np.testing.assert_allclose(x, 2.0, rtol=1e-14)
    assert int(iters) > 1
    ga, gx0 = tg.grad(lambda a, x0: f(a, x0)[0], (0, 1))(8.0, 1.0)
    np.testing.assert_allclose(ga, 1.0 / 12.0, rtol=1e-12)
    assert gx0 == 0.0


def test_root_errors():
    with pytest.raises(TypeError, match=r"f\(\) output pytree structure must match initial_guess"
                                        r".* f \(grow\) returned \(f64\[3\], f64\[3\]\)"):
        def grow(x):
            return (x, x)
        custom_root(grow, tnp.zeros(3), newton_vec, lambda g, y: y)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match "
                                        r"initial_guess"):
        def pair(f, x0):
            return x0, x0
        custom_root(lambda x: x, 1.0, pair, lambda g, y: y)


# ---------------------------------------------------------------------------
# fixed_point


def fp_sqrt(a):
    return fixed_point(lambda a, x: 0.5 * (x + a / x), a, 1.0)


def test_fixed_point_values_and_derivatives():
    np.testing.assert_allclose(fp_sqrt(2.0), np.sqrt(2.0), rtol=1e-14)
    np.testing.assert_allclose(tg.grad(fp_sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-12)
    np.testing.assert_allclose(tg.grad(tg.grad(fp_sqrt))(2.0), -0.25 * 2.0 ** -1.5, rtol=1e-9)
    check_grads(fp_sqrt, (3.0,), 2, modes=("rev",))


@pytest.mark.parametrize("order", ["vmap", "jit", "vmap_grad", "grad_vmap", "jit_grad",
                                   "grad_jit", "jit_vmap_grad", "vmap_jit_grad"])
def test_fixed_point_transformation_orders(order):
    a = np.array([1.0, 4.0, 9.0])
    if order in ("vmap", "jit"):
        f = tg.vmap(fp_sqrt) if order == "vmap" else tg.jit(tg.vmap(fp_sqrt))
        np.testing.assert_allclose(f(a), np.sqrt(a), rtol=1e-13)
        return
    g = tg.grad(fp_sqrt)
    got = {"vmap_grad": lambda: tg.vmap(g)(a),
           "grad_vmap": lambda: tg.grad(lambda a: tnp.sum(tg.vmap(fp_sqrt)(a)))(a),
           "jit_grad": lambda: np.stack([tg.jit(g)(x) for x in a]),
           "grad_jit": lambda: np.stack([tg.grad(tg.jit(fp_sqrt))(x) for x in a]),
           "jit_vmap_grad": lambda: tg.jit(tg.vmap(g))(a),
           "vmap_jit_grad": lambda: tg.vmap(tg.jit(g))(a)}[order]()
    np.testing.assert_allclose(got, 0.5 / np.sqrt(a), rtol=1e-12)


def test_fixed_point_pytrees_vs_finite_differences():
    def layer(p, x):
        return {"h": tnp.tanh(p["W"] @ x["h"] + p["b"]), "s": 0.5 * x["s"] + p["b"][0]}

    def f(W, b):
        return fixed_point(layer, {"W": W, "b": b}, {"h": tnp.zeros(N), "s": 0.0}, tol=1e-13)

    x = f(W0, B0)
    np.testing.assert_allclose(x["h"], np.tanh(W0 @ x["h"] + B0), atol=1e-12)
    np.testing.assert_allclose(x["s"], 2.0 * B0[0], rtol=1e-12)
    check_grads(f, (W0, B0), 1, modes=("rev",))


def test_fixed_point_closure_and_guess_not_differentiated():
    def f(c, x0):
        return tnp.sum(fixed_point(lambda a, x: tnp.cos(x) * c + a, 0.1, x0))

    check_grads(lambda c: f(c, tnp.zeros(2)), (0.5,), 1, modes=("rev",))
    g = tg.grad(f, 1)(0.5, np.zeros(2))
    np.testing.assert_array_equal(g, np.zeros(2))


def test_fixed_point_tol_and_max_iter():
    # x <- 0.5 x + a from 0: after n applications x_n = 2a (1 - 2^-n)
    f = lambda a, x: 0.5 * x + a  # noqa: E731
    for n in (1, 3, 10):
        np.testing.assert_allclose(fixed_point(f, 1.0, 0.0, tol=0.0, max_iter=n),
                                   2.0 * (1.0 - 2.0 ** -n), rtol=1e-15)
    np.testing.assert_allclose(fixed_point(f, 1.0, 0.0, tol=1e-3), 2.0, atol=1e-3)
    np.testing.assert_allclose(fixed_point(f, 1.0, 0.0), 2.0, rtol=1e-9)


def _peak_bwd_memory(max_iter, n=2000):
    a = np.linspace(0.1, 1.0, n)

    def loss(a):
        # contraction with rate 0.999: max_iter applications with tol=0
        x = fixed_point(lambda a, x: 0.999 * x + a * 1e-3 * tnp.cos(x), a, tnp.zeros(n),
                        tol=0.0, max_iter=max_iter)
        return tnp.sum(x)

    tg.grad(loss)(a)  # warm up caches
    gc.collect()
    tracemalloc.start()
    tg.grad(loss)(a)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_fixed_point_reverse_memory_does_not_grow_with_iterations():
    small, large = _peak_bwd_memory(10), _peak_bwd_memory(300)
    # 300 saved iterates of 2000 floats would be ~4.8 MB
    assert large < small + 1_000_000, (small, large)


def test_fixed_point_errors():
    def widen(a, x):
        return tnp.stack([x, x])

    with pytest.raises(TypeError, match=r"fixed_point: f \(widen\) must return a value with the "
                                        r"same structure and shapes as x_guess, but x_guess is "
                                        r"f64\[3\] and widen\(a, x\) returned f64\[2,3\]"):
        fixed_point(widen, 1.0, tnp.zeros(3))

    def as_tuple(a, x):
        return (x,)

    with pytest.raises(TypeError, match=r"x_guess is \{'x': f64\[\]\} and as_tuple\(a, x\) "
                                        r"returned \(\{'x': f64\[\]\},\)"):
        fixed_point(as_tuple, 1.0, {"x": 0.0})
