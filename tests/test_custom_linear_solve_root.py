"""``lax.custom_linear_solve`` and ``lax.custom_root`` behave as JAX's do.

The cases mirror what JAX's own tests of these functions exercise (run
against tangentia through a shim while this file was written), in our own
words: errors begin with JAX's wording; ``vmap`` leaves unbatched what no
batched value reaches (so ``out_axes=None`` works there); ``has_aux``,
``symmetric``, pytrees, complex operators, solvers that are while loops, and
derivatives to second order in both modes.

References: ``numpy.linalg.solve`` and closed forms for values; central
finite differences in float64 (``check_grads``) and the same computation
written with ``tnp.linalg.solve`` for derivatives; loops of single calls for
``vmap``; eager evaluation for ``jit``; the NumPy backend for the numba one.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.test_util import check_grads

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 3)) + 3.0 * np.eye(3)
SPD = A @ A.T
B = RNG.standard_normal(3)
BS = RNG.standard_normal((4, 3))
AS = RNG.standard_normal((4, 3, 3)) + 3.0 * np.eye(3)


def by_jacobian(op, b):
    """Solve op(x) = b with op's matrix (the solver's internals are not differentiated)."""
    return lax.stop_gradient(tnp.linalg.solve(tg.jacfwd(op)(b), b))


def conjugate_gradient(op, b):
    """CG in a while_loop: reverse mode could not go through it."""
    def cond(c):
        _, r, _, k = c
        return (tnp.vdot(r, r) > 1e-30) & (k < 20)

    def body(c):
        x, r, p, k = c
        ap = op(p)
        step = tnp.vdot(r, r) / tnp.vdot(p, ap)
        r_next = r - step * ap
        return x + step * p, r_next, r_next + tnp.vdot(r_next, r_next) / tnp.vdot(r, r) * p, k + 1
    return lax.while_loop(cond, body, (tnp.zeros_like(b), b, b, 0))[0]


def solve_general(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, by_jacobian, by_jacobian)


def solve_spd(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, conjugate_gradient, symmetric=True)


def newton(f, x0):
    def body(c):
        x, k = c
        return x - tnp.linalg.solve(tg.jacfwd(f)(x), f(x)), k + 1
    return lax.while_loop(lambda c: c[1] < 25, body, (x0, 0))[0]


def jacobian_tangent_solve(g, y):
    return tnp.linalg.solve(tg.jacfwd(g)(y), y)


def cubic_root(a, b):
    """The x with tanh(a x) + x**3 = b."""
    return lax.custom_root(lambda x: tnp.tanh(a @ x) + x ** 3 - b, tnp.zeros_like(b), newton,
                           jacobian_tangent_solve)


def assert_close(got, want, rtol=1e-10, atol=1e-12):
    for g, w in zip(tg.tree_util.tree_leaves(got), tg.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# errors: JAX's wording first, then which function and what it returned

def _solve_identity(op, b):
    return b


ERRORS = {
    "matvec tree": (lambda: lax.custom_linear_solve(lambda x: (x,), 2.0, _solve_identity),
                    TypeError, r"matvec\(\) output pytree structure must match b, got "
                               r"PyTreeDef\(\(\*,\)\) and PyTreeDef\(\*\)\. \(custom_linear_solve"),
    "solve tree": (lambda: lax.custom_linear_solve(lambda x: x, 2.0, lambda op, b: {"x": b}),
                   TypeError, r"solve\(\) output pytree structure must match b"),
    "transpose_solve tree": (
        lambda: lax.custom_linear_solve(lambda x: x, 2.0, _solve_identity, lambda op, b: [b, b]),
        TypeError, r"transpose_solve\(\) output pytree structure must match b"),
    "solve shapes": (lambda: lax.custom_linear_solve(lambda x: x, np.ones(2),
                                                     lambda op, b: tnp.ones(3)),
                     ValueError, r"solve\(\) output shapes must match b, got \[\(3,\)\] and "
                                 r"\[\(2,\)\] \(custom_linear_solve: solve \(<lambda>\) returned"),
    "matvec shapes under jvp": (
        lambda: tg.jvp(lambda s: lax.custom_linear_solve(lambda x: s * tnp.ones(2), 1.0,
                                                         _solve_identity), (1.0,), (1.0,)),
        ValueError, r"matvec\(\) output shapes must match b, got \[\(2,\)\] and \[\(\)\]"),
    "has_aux without a pair": (
        lambda: lax.custom_linear_solve(lambda x: x, np.ones(2), _solve_identity, has_aux=True),
        ValueError, r"solve\(\) produced a pytree with structure PyTreeDef\(\*\), but a pytree "
                    r"tuple with auxiliary output was expected because has_aux was set to True"),
    "grad without transpose_solve": (
        lambda: tg.grad(lambda b: lax.custom_linear_solve(lambda x: A @ x, b, by_jacobian)
                        .sum())(B),
        TypeError, r"transpose_solve required for backwards mode automatic differentiation of "
                   r"custom_linear_solve"),
    "matvec not callable": (lambda: lax.custom_linear_solve(A, B, _solve_identity),
                            TypeError, r"'ndarray' object is not callable \(custom_linear_solve: "
                                       r"matvec must be callable\)"),
    "b not an array": (lambda: lax.custom_linear_solve(lambda x: x, "b", _solve_identity),
                       TypeError, r"Argument .* is not a valid JAX type"),
    "root f tree": (lambda: lax.custom_root(lambda x: [x], 1.0, _solve_identity, _solve_identity),
                    TypeError, r"f\(\) output pytree structure must match initial_guess, got "
                               r"PyTreeDef\(\[\*\]\) and PyTreeDef\(\*\)"),
    "root solve tree": (lambda: lax.custom_root(lambda x: x, 1.0, lambda f, x: (x, x),
                                                _solve_identity),
                        TypeError, r"solve\(\) output pytree structure must match initial_guess"),
    "root tangent_solve tree": (
        lambda: tg.jvp(lambda s: lax.custom_root(lambda x: x - s, 0.0, lambda f, x: s,
                                                 lambda g, y: (y,)), (1.0,), (1.0,)),
        TypeError, r"tangent_solve\(\) output pytree structure must match x, got "
                   r"PyTreeDef\(\(\*,\)\) and PyTreeDef\(\*\)\. \(custom_root: tangent_solve"),
    "root has_aux without a pair": (
        lambda: lax.custom_root(lambda x: x, 1.0, _solve_identity, _solve_identity, has_aux=True),
        ValueError, r"solve\(\) produced a pytree with structure PyTreeDef\(\*\), but a pytree "
                    r"tuple with auxiliary output"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_begin_with_jax_wording(case):
    call, kind, pattern = ERRORS[case]
    with pytest.raises(kind, match="^" + pattern):
        call()


def test_root_f_may_return_other_shapes_than_x():
    # JAX checks only the pytree structure of f's output: a scalar unknown whose f
    # returns a one-element vector evaluates (here: bisection for x**2 = 2).
    def bisect(f, x0):
        def body(c):
            lo, hi = c
            mid = 0.5 * (lo + hi)
            up = f(mid)[0] > 0
            return tnp.where(up, lo, mid), tnp.where(up, mid, hi)
        return lax.fori_loop(0, 60, lambda i, c: body(c), (0.0, 4.0))[0]

    x = lax.custom_root(lambda x: tnp.reshape(x ** 2 - 2.0, (1,)), 1.0, bisect,
                        lambda g, y: y / g(1.0))
    np.testing.assert_allclose(x, np.sqrt(2.0), rtol=1e-14)


# ---------------------------------------------------------------------------
# custom_linear_solve


@pytest.mark.parametrize("solve", [solve_general, solve_spd], ids=["general", "symmetric_cg"])
def test_values_jit_and_second_order_grads(solve):
    a = SPD if solve is solve_spd else A
    assert_close(solve(a, B), np.linalg.solve(a, B))
    assert_close(tg.jit(solve)(a, B), solve(a, B), rtol=1e-13)
    # symmetric=True: perturbations of `a` must stay symmetric for the rule to hold
    f = (lambda m, b: solve(m + m.T, b)) if solve is solve_spd else solve
    check_grads(f, (0.5 * a, B), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_hessian_through_a_while_loop_solver_matches_dense():
    def loss(b, solve):
        return tnp.sin(solve(SPD, b)) @ b

    want = tg.hessian(lambda b: loss(b, tnp.linalg.solve))(B)
    assert_close(tg.hessian(lambda b: loss(b, solve_spd))(B), want, rtol=1e-9)
    assert_close(tg.jit(tg.hessian(lambda b: loss(b, solve_spd)))(B), want, rtol=1e-9)


@pytest.mark.parametrize("in_axes,out_axes", [((None, 0), 0), ((0, None), 0), ((0, 1), 1)])
def test_vmap_matches_a_loop(in_axes, out_axes):
    a_in = AS if in_axes[0] == 0 else A
    b_in = BS.T if in_axes[1] == 1 else (BS if in_axes[1] == 0 else B)
    got = tg.vmap(solve_general, in_axes, out_axes)(a_in, b_in)
    want = np.stack([np.linalg.solve(AS[i] if in_axes[0] == 0 else A,
                                     BS[i] if in_axes[1] is not None else B)
                     for i in range(4)], axis=out_axes)
    assert_close(got, want)


def test_grad_of_vmap_and_vmap_of_grad_match_loops():
    def loss(a, b):
        return tnp.sum(solve_general(a, b) ** 2)

    per_example = tg.vmap(tg.grad(loss, argnums=(0, 1)))(AS, BS)
    for i in range(4):
        assert_close([p[i] for p in per_example], tg.grad(loss, argnums=(0, 1))(AS[i], BS[i]))
    total = tg.grad(lambda a: tnp.sum(tg.vmap(loss)(a, BS)))(AS)
    assert_close(total, np.stack([tg.grad(loss)(AS[i], BS[i]) for i in range(4)]))


def _block_solve(a, b1, b2):
    """Two independent blocks: a x1 = b1 and 2 x2 = b2."""
    def op(x):
        return {"x1": a @ x["x1"], "x2": 2.0 * x["x2"]}

    def solve(op, b):
        return {"x1": tnp.linalg.solve(a, b["x1"]), "x2": b["x2"] / 2.0}

    def transpose_solve(op, b):
        return {"x1": tnp.linalg.solve(a.T, b["x1"]), "x2": b["x2"] / 2.0}

    return lax.custom_linear_solve(op, {"x1": b1, "x2": b2}, solve, transpose_solve)


def test_vmap_leaves_unreached_leaves_unbatched():
    # Only b1 (or only `a`) is batched: x2 depends on neither, so vmap may
    # return it with out_axes=None, as in JAX.
    b2 = np.array([1.0, -4.0])
    out_axes = {"x1": 0, "x2": None}
    got = tg.vmap(_block_solve, (None, 0, None), out_axes)(A, BS, b2)
    assert_close(got["x1"], np.linalg.solve(A, BS.T).T)
    assert_close(got["x2"], b2 / 2.0)
    got = tg.vmap(_block_solve, (0, None, None), out_axes)(AS, B, b2)
    assert_close(got["x1"], np.stack([np.linalg.solve(a, B) for a in AS]))

    def loss(b1s, b2):
        out = tg.vmap(_block_solve, (None, 0, None), out_axes)(A, b1s, b2)
        return tnp.sum(tnp.sin(out["x1"])) + tnp.sum(out["x2"] ** 2)

    check_grads(loss, (BS, b2), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_vmap_batches_what_the_transpose_reaches():
    # x2 = b2 / 2 does not depend on the batched b1, but the transposed operator
    # couples them (A^T y1 + c y1[0] + ...), so x2 comes out batched (JAX's rule
    # too) and solve's unbatched x2 is broadcast; values against a loop.
    c = np.array([0.5, -1.0])

    def f(b1, b2):
        def op(x):
            return (A @ x[0] + x[1][0] * np.ones(3) + c[1] * x[1][1], 2.0 * x[1])

        def solve(op, b):
            x2 = b[1] / 2.0
            return tnp.linalg.solve(A, b[0] - x2[0] * np.ones(3) - c[1] * x2[1]), x2

        def transpose_solve(op, y):
            y1 = tnp.linalg.solve(A.T, y[0])
            return y1, (y[1] - tnp.stack([tnp.sum(y1), c[1] * tnp.sum(y1)])) / 2.0

        return lax.custom_linear_solve(op, (b1, b2), solve, transpose_solve)

    b2 = np.array([1.0, 3.0])
    got = tg.vmap(f, (0, None))(BS, b2)
    assert np.shape(got[1]) == (4, 2)
    for i in range(4):
        assert_close([g[i] for g in got], f(BS[i], b2))
    check_grads(lambda b1s, b2: tg.vmap(f, (0, None))(b1s, b2), (BS, b2), order=2,
                modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_vmap_broadcasts_a_solver_output_no_batched_value_reaches():
    # This solve returns a fixed x2 (as an iterative solver stopped before its
    # first step would), while the transposed operator makes x2's leaf batched:
    # the batched solve must broadcast it, and loop and vmap agree.
    def f(b1, b2):
        return lax.custom_linear_solve(
            lambda x: (A @ x[0] + x[1][0], 2.0 * x[1]), (b1, b2),
            lambda op, b: (tnp.linalg.solve(A, b[0]), tnp.zeros(2)),
            lambda op, y: (tnp.linalg.solve(A.T, y[0]), y[1] / 2.0))

    b2 = np.array([1.0, 3.0])
    got = tg.vmap(f, (0, None))(BS, b2)
    for i in range(4):
        assert_close([g[i] for g in got], f(BS[i], b2))
    assert_close(got[1], np.zeros((4, 2)))


def test_pytree_rhs_second_order():
    def op(a, x):
        return {"u": a @ x["u"] + x["v"][0], "v": 2.0 * x["v"] - x["u"][:2]}

    def dense(op, b):
        flat = tnp.concatenate([b["u"], b["v"]])
        mat = tg.jacfwd(lambda z: tnp.concatenate(list(op({"u": z[:3], "v": z[3:]}).values())))
        z = tnp.linalg.solve(mat(flat), flat)
        return {"u": z[:3], "v": z[3:]}

    def f(a, bu, bv):
        x = lax.custom_linear_solve(lambda x: op(a, x), {"u": bu, "v": bv}, dense, dense)
        return x["u"] * x["v"][1]

    check_grads(f, (A, B, B[:2]), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_has_aux_values_derivatives_and_transpose_aux_of_another_structure():
    def solve(op, b):
        x = tnp.linalg.solve(A, b)
        return x, {"iterations": tnp.asarray(3), "residual": tnp.linalg.norm(op(x) - b)}

    def transpose_solve(op, b):   # its aux (dropped by the transpose) differs from solve's
        return tnp.linalg.solve(A.T, b), (tnp.asarray(True),)

    def f(b):
        return lax.custom_linear_solve(lambda x: A @ x, b, solve, transpose_solve, has_aux=True)

    x, aux = f(B)
    assert_close(x, np.linalg.solve(A, B))
    assert int(aux["iterations"]) == 3 and float(aux["residual"]) < 1e-12
    x_jit, aux_jit = tg.jit(f)(B)
    assert_close(x_jit, x, rtol=1e-13)
    assert int(aux_jit["iterations"]) == 3
    assert_close(tg.grad(lambda b: f(b)[0] @ b)(B), (np.linalg.solve(A, B)
                                                   + np.linalg.solve(A.T, B)))
    xs, auxs = tg.vmap(f)(BS)
    assert_close(xs, np.linalg.solve(A, BS.T).T)
    np.testing.assert_array_equal(auxs["iterations"], [3, 3, 3, 3])


def test_forward_mode_only_without_transpose_solve():
    def f(a, b):
        return tnp.sum(tnp.cos(lax.custom_linear_solve(lambda x: a @ x, b, by_jacobian)))

    check_grads(f, (A, B), order=2, modes=("fwd",), atol=1e-6, rtol=1e-6)
    want = tg.jacfwd(tg.jacfwd(lambda b: tnp.sum(tnp.cos(tnp.linalg.solve(A, b)))))(B)
    assert_close(tg.jacfwd(tg.jacfwd(lambda b: f(A, b)))(B), want, rtol=1e-9)


def test_complex_operator_derivatives():
    a = A + 1j * RNG.standard_normal((3, 3))
    b = B + 1j * RNG.standard_normal(3)

    def f(are, aim, bre, bim):     # real parts in and out, so finite differences apply
        aa, bb = are + 1j * aim, bre + 1j * bim
        x = lax.custom_linear_solve(lambda x: aa @ x, bb, lambda op, y: tnp.linalg.solve(aa, y),
                                    lambda op, y: tnp.linalg.solve(aa.T, y))
        return tnp.real(x), tnp.imag(x)

    re, im = f(a.real, a.imag, b.real, b.imag)
    assert_close(re + 1j * im, np.linalg.solve(a, b))
    check_grads(f, (a.real, a.imag, b.real, b.imag), order=2, modes=("fwd", "rev"),
                atol=1e-6, rtol=1e-6)


def test_linear_transpose_is_the_inverse_transpose():
    got = tg.linear_transpose(lambda b: solve_general(A, b), B)(B)[0]
    assert_close(got, np.linalg.solve(A.T, B))


@settings(max_examples=12, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2 ** 31), batched=st.sampled_from(["a", "b", "both"]),
       symmetric=st.booleans())
def test_vmap_vjp_is_the_transpose_of_jvp(seed, batched, symmetric):
    # For random systems and batchings: <u, J v> == <J^T u, v> for the batched
    # solution map (b, a) -> x, whose J and J^T take different routes (a forward
    # solve and a transposed one) through the batch rule.
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((3, 3, 3)) + 3.0 * np.eye(3)
    if symmetric:
        a = a + np.swapaxes(a, 1, 2)
    b = rng.standard_normal((3, 3))
    in_axes = (0 if batched != "b" else None, 0 if batched != "a" else None)
    a_in, b_in = (a if in_axes[0] == 0 else a[0]), (b if in_axes[1] == 0 else b[0])
    solve = solve_spd if symmetric else solve_general
    if symmetric:  # CG needs a positive definite operator
        a_in = np.einsum("...ij,...kj->...ik", a_in, a_in)
    f = tg.vmap(solve, in_axes)
    v = tuple(rng.standard_normal(np.shape(x)) for x in (a_in, b_in))
    if symmetric:  # perturbations of a symmetric operator stay symmetric
        v = (v[0] + np.swapaxes(v[0], -1, -2), v[1])
    out, jv = tg.jvp(f, (a_in, b_in), v)
    u = rng.standard_normal(out.shape)
    jtu = tg.vjp(f, a_in, b_in)[1](u)
    lhs = np.sum(u * jv)
    rhs = sum(np.sum(c * t) for c, t in zip(jtu, v))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)
    loop = [np.linalg.solve(a_in[i] if in_axes[0] == 0 else a_in,
                            b_in[i] if in_axes[1] == 0 else b_in) for i in range(3)]
    np.testing.assert_allclose(out, np.stack(loop), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------
# custom_root


def test_root_values_jit_vmap_and_grads():
    x = cubic_root(A, B)
    np.testing.assert_allclose(np.tanh(A @ x) + x ** 3, B, atol=1e-12)
    assert_close(tg.jit(cubic_root)(A, B), x, rtol=1e-13)
    assert_close(tg.vmap(cubic_root)(AS, BS), np.stack([cubic_root(a, b) for a, b in zip(AS, BS)]))
    check_grads(cubic_root, (A, B), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_root_derivatives_come_from_f_only():
    # The solution is handed over by a closure ("oracle"); its derivative comes
    # from f = a y - b alone, i.e. it is that of numpy.linalg.solve.
    def f(a, b):
        solution = tnp.linalg.solve(a, b)
        return lax.custom_root(lambda y: a @ y - b, tnp.zeros_like(b),
                               lambda g, x0: solution, jacobian_tangent_solve)

    want = tg.jacrev(lambda a, b: tnp.linalg.solve(a, b), argnums=(0, 1))(A, B)
    assert_close(tg.jacfwd(f, argnums=(0, 1))(A, B), want, rtol=1e-10)
    assert_close(tg.jacrev(f, argnums=(0, 1))(A, B), want, rtol=1e-10)


def test_root_with_custom_linear_solve_tangent_solve_and_aux():
    def f(a, b):
        def solve(g, x0):
            return tnp.linalg.solve(a, b), {"calls": tnp.asarray(1), "ok": tnp.asarray(True)}

        def tangent_solve(g, y):
            return lax.custom_linear_solve(g, y, conjugate_gradient, symmetric=True)

        return lax.custom_root(lambda x: a @ x - b, b, solve, tangent_solve, has_aux=True)

    x, aux = f(SPD, B)
    assert_close(x, np.linalg.solve(SPD, B))
    assert bool(aux["ok"]) and int(aux["calls"]) == 1
    sym = lambda m, b: f(m + m.T, b)[0]  # noqa: E731 - perturbations stay symmetric
    check_grads(sym, (0.5 * SPD, B), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    jac, jac_aux = tg.jacfwd(lambda b: f(SPD, b))(B)
    assert_close(jac, np.linalg.inv(SPD))
    np.testing.assert_array_equal(np.asarray(jac_aux["calls"]).shape, (3,))


def test_root_scalar_newton_and_vmap_of_grad():
    def scalar_newton(f, x0):
        return lax.fori_loop(0, 30, lambda i, x: x - f(x) / tg.grad(f)(x), x0)

    def cube_root(c):   # x**3 + x = c
        return lax.custom_root(lambda x: x ** 3 + x - c, 1.0, scalar_newton,
                               lambda g, y: y / g(1.0))

    cs = np.array([0.5, 2.0, 10.0])
    xs = tg.vmap(cube_root)(cs)
    np.testing.assert_allclose(xs ** 3 + xs, cs, rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(cube_root))(cs), 1.0 / (3.0 * xs ** 2 + 1.0),
                               rtol=1e-13)
    d2 = tg.grad(tg.grad(cube_root))(2.0)
    x = float(cube_root(2.0))
    np.testing.assert_allclose(d2, -6.0 * x / (3.0 * x ** 2 + 1.0) ** 3, rtol=1e-12)


# ---------------------------------------------------------------------------
# the numba backend


def test_numba_backend_matches_numpy_backend():
    def program(a, b, bs):
        loss = lambda a, b: tnp.sum(tnp.tanh(solve_spd(a, b)))  # noqa: E731
        return (tg.grad(loss, argnums=(0, 1))(a, b), tg.vmap(solve_spd, (None, 0))(a, bs),
                tg.jacfwd(cubic_root, argnums=1)(a, b))

    got = tg.jit(program, backend="numba")(SPD, B, BS)
    want = tg.jit(program, backend="numpy")(SPD, B, BS)
    assert_close(got, want, rtol=1e-11, atol=1e-13)
    assert_close(want[1], np.linalg.solve(SPD, BS.T).T)


def test_check_grads_checks_complex_directions():
    # JAX's complex custom_linear_solve test relies on check_grads drawing complex
    # directions and comparing imaginary parts: a rule right only on the real axis
    # (d(z**2) = 2 Re(z) dz) must fail, the true one (2 z dz) pass.
    @tg.custom_jvp
    def square(z):
        return z * z

    square.defjvp(lambda p, t: (p[0] * p[0], 2.0 * tnp.real(p[0]) * t[0]))
    z = np.array([0.5 + 1.5j, -1.0 + 0.25j])
    with pytest.raises(AssertionError, match="JVP tangent"):
        check_grads(square, (z,), order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="VJP cotangent projection"):
        check_grads(square, (z,), order=1, modes=("rev",))
    check_grads(lambda z: z * z, (z,), order=2, modes=("fwd", "rev"))


def test_primitive_is_named_as_in_jax():
    assert lax.linear_solve_p.name == "custom_linear_solve"
    text = str(tg.make_jaxpr(lambda b: solve_general(A, b))(B))
    assert " = custom_linear_solve[" in text
