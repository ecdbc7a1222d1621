"""Each transformation against its definition, the compositions of
transformations, and property-based identities between them.

Definitions used as references:

* ``jvp(f, x, v) = (f(x), J(x) v)``, with ``J`` known in closed form or from
  central finite differences;
* ``vjp(f, x)[1](u) = J(x)^T u``; ``grad(f)(x) = vjp(f, x)[1](1.0)``;
* ``vmap(f)(xs) = stack([f(x) for x in xs])``;
* ``jit(f)(x) = f(x)``.
"""
from __future__ import annotations

import collections
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.test_util import check_grads, numerical_jvp
from tangentia.tree_util import tree_leaves, tree_map, tree_structure

Point = collections.namedtuple("Point", ["x", "y"])


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def assert_close(got, want, rtol=1e-12, atol=1e-12):
    got_l, want_l = tree_leaves(got), tree_leaves(want)
    assert tree_structure(got) == tree_structure(want), (tree_structure(got), tree_structure(want))
    for g, w in zip(got_l, want_l):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def f_vec(x):
    """A smooth R^n -> R^n map with a known Jacobian: W @ sin(x) * x."""
    return tnp.sin(x) * x


def f_vec_jac(x):
    return np.diag(np.cos(x) * x + np.sin(x))


def f_scalar(x):
    """A smooth scalar function with known gradient and Hessian."""
    return tnp.sum(tnp.sin(x) * x) + 0.5 * tnp.sum(x) ** 2


def f_scalar_grad(x):
    return np.cos(x) * x + np.sin(x) + np.sum(x)


def f_scalar_hess(x):
    return np.diag(-np.sin(x) * x + 2 * np.cos(x)) + np.ones((x.size, x.size))


# ---------------------------------------------------------------------------
# Forward mode


def test_jvp_definition_closed_form():
    x, v = rand(1, 5), rand(2, 5)
    y, t = tg.jvp(f_vec, (x,), (v,))
    assert isinstance(y, np.ndarray) and isinstance(t, np.ndarray)
    np.testing.assert_allclose(y, np.sin(x) * x, rtol=1e-15)
    np.testing.assert_allclose(t, f_vec_jac(x) @ v, rtol=1e-13, atol=1e-15)


def test_jvp_is_linear_in_the_tangent():
    x, v, w = rand(3, 4), rand(4, 4), rand(5, 4)
    jv = lambda t: tg.jvp(f_vec, (x,), (t,))[1]  # noqa: E731
    np.testing.assert_allclose(jv(2.0 * v - 3.0 * w), 2.0 * jv(v) - 3.0 * jv(w), rtol=1e-12,
                               atol=1e-14)


def test_jvp_multiple_args_and_pytrees_vs_finite_differences():
    def f(p, scale):
        return {"s": tnp.sum(p.x * tnp.exp(p.y)) * scale, "v": p.x * scale}

    primals = (Point(rand(6, 3), rand(7, 3)), 1.7)
    tangents = (Point(rand(8, 3), rand(9, 3)), 0.3)
    out, tan = tg.jvp(f, primals, tangents)
    assert set(out) == {"s", "v"} and set(tan) == {"s", "v"}
    num = numerical_jvp(f, primals, tangents, eps=1e-5)
    assert_close(out, f(*primals), rtol=1e-15)
    assert_close(tan, num, rtol=1e-8, atol=1e-9)


def test_jvp_has_aux():
    x, v = rand(10, 3), rand(11, 3)
    y, t, aux = tg.jvp(lambda a: (tnp.sin(a), {"sq": a * a}), (x,), (v,), has_aux=True)
    np.testing.assert_allclose(t, np.cos(x) * v, rtol=1e-15)
    np.testing.assert_allclose(aux["sq"], x * x, rtol=1e-15)
    assert isinstance(aux["sq"], np.ndarray)


def test_jvp_with_integer_primal_has_float0_tangent():
    y, t = tg.jvp(lambda x, n: x * n, (2.5, 3), (1.0, np.zeros((), tg.dtypes.float0)))
    assert float(y) == 7.5 and float(t) == 3.0


def test_linearize_matches_jvp_and_is_linear():
    x = rand(12, 4)
    y, f_lin = tg.linearize(f_vec, x)
    np.testing.assert_allclose(y, f_vec(x), rtol=1e-15)
    for seed in (13, 14):  # the linear function can be called repeatedly
        v = rand(seed, 4)
        np.testing.assert_allclose(f_lin(v), tg.jvp(f_vec, (x,), (v,))[1], rtol=1e-13, atol=1e-15)
    v, w = rand(15, 4), rand(16, 4)
    np.testing.assert_allclose(f_lin(v + 2 * w), f_lin(v) + 2 * f_lin(w), rtol=1e-12, atol=1e-14)


def test_linearize_multiple_args_and_has_aux():
    x, y = rand(17, 3), rand(18, 3)
    out, f_lin, aux = tg.linearize(lambda a, b: (tnp.sin(a) * b, a.sum()), x, y, has_aux=True)
    np.testing.assert_allclose(out, np.sin(x) * y)
    np.testing.assert_allclose(aux, x.sum())
    vx, vy = rand(19, 3), rand(20, 3)
    np.testing.assert_allclose(f_lin(vx, vy), np.cos(x) * y * vx + np.sin(x) * vy, rtol=1e-13)


# ---------------------------------------------------------------------------
# Reverse mode


def test_vjp_definition_closed_form():
    x, u = rand(21, 5), rand(22, 5)
    y, pull = tg.vjp(f_vec, x)
    np.testing.assert_allclose(y, f_vec(x))
    (ct,) = pull(u)
    np.testing.assert_allclose(ct, f_vec_jac(x).T @ u, rtol=1e-13, atol=1e-15)


def test_vjp_pytrees_and_multiple_args():
    def f(d, s):
        return Point(d["a"] @ d["b"] * s, tnp.sum(d["a"]))

    d = {"a": rand(23, 2, 3), "b": rand(24, 3)}
    out, pull = tg.vjp(f, d, 2.0)
    assert isinstance(out, Point)
    u = Point(rand(25, 2), 1.5)
    ct_d, ct_s = pull(u)
    assert set(ct_d) == {"a", "b"}
    np.testing.assert_allclose(ct_d["a"], 2.0 * np.outer(u.x, d["b"]) + 1.5, rtol=1e-13)
    np.testing.assert_allclose(ct_d["b"], 2.0 * d["a"].T @ u.x, rtol=1e-13)
    np.testing.assert_allclose(ct_s, u.x @ (d["a"] @ d["b"]), rtol=1e-13)


def test_vjp_has_aux():
    x = rand(26, 4)
    y, pull, aux = tg.vjp(lambda a: (tnp.exp(a), (a.max(), "tag")), x, has_aux=True)
    np.testing.assert_allclose(pull(np.ones(4))[0], np.exp(x), rtol=1e-15)
    assert aux[1] == "tag"
    np.testing.assert_allclose(aux[0], x.max())
    assert isinstance(aux[0], np.ndarray)


def test_grad_definition_closed_form():
    x = rand(27, 5)
    g = tg.grad(f_scalar)(x)
    assert isinstance(g, np.ndarray) and g.shape == x.shape
    np.testing.assert_allclose(g, f_scalar_grad(x), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(g, tg.vjp(f_scalar, x)[1](1.0)[0], rtol=1e-15)
    check_grads(f_scalar, (x,), order=3)


def test_grad_python_scalar_and_unused_argument():
    assert float(tg.grad(lambda x: x ** 3)(2.0)) == 12.0
    g = tg.grad(lambda x, y: y * 2.0)(1.0, 3.0)
    assert float(g) == 0.0
    g = tg.grad(lambda x: 2.0)(np.ones(3))
    np.testing.assert_array_equal(g, np.zeros(3))


def test_value_and_grad_argnums_int_tuple_negative():
    def f(x, y, z):
        return tnp.sum(x * tnp.sin(y)) + z ** 2

    x, y, z = rand(28, 3), rand(29, 3), 1.5
    v, g = tg.value_and_grad(f)(x, y, z)
    np.testing.assert_allclose(v, np.sum(x * np.sin(y)) + z ** 2, rtol=1e-15)
    np.testing.assert_allclose(g, np.sin(y), rtol=1e-15)
    v, g = tg.value_and_grad(f, argnums=1)(x, y, z)
    np.testing.assert_allclose(g, x * np.cos(y), rtol=1e-15)
    v, (gx, gz) = tg.value_and_grad(f, argnums=(0, 2))(x, y, z)
    np.testing.assert_allclose(gx, np.sin(y), rtol=1e-15)
    assert float(gz) == 3.0
    g = tg.grad(f, argnums=-1)(x, y, z)
    assert float(g) == 3.0
    (g1,) = tg.grad(f, argnums=(1,))(x, y, z)
    np.testing.assert_allclose(g1, x * np.cos(y), rtol=1e-15)


def test_value_and_grad_has_aux():
    def loss(w, x):
        pred = tnp.tanh(x @ w)
        return tnp.mean(pred ** 2), {"pred": pred}

    w, x = rand(30, 3), rand(31, 5, 3)
    (v, aux), g = tg.value_and_grad(loss, has_aux=True)(w, x)
    pred = np.tanh(x @ w)
    np.testing.assert_allclose(v, np.mean(pred ** 2), rtol=1e-14)
    np.testing.assert_allclose(aux["pred"], pred, rtol=1e-14)
    assert isinstance(aux["pred"], np.ndarray)
    want = x.T @ (2 * pred * (1 - pred ** 2) / 5)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    (v2, aux2), (gw, gx) = tg.value_and_grad(loss, argnums=(0, 1), has_aux=True)(w, x)
    np.testing.assert_allclose(gw, want, rtol=1e-12)
    np.testing.assert_allclose(gx, np.outer(2 * pred * (1 - pred ** 2) / 5, w), rtol=1e-12)
    g3, aux3 = tg.grad(loss, has_aux=True)(w, x)
    np.testing.assert_allclose(g3, want, rtol=1e-12)
    np.testing.assert_allclose(aux3["pred"], pred, rtol=1e-14)


def test_grad_pytrees_dict_tuple_namedtuple():
    def f(params):
        d, (a, b), p = params
        return tnp.sum(d["w"] * a) + b * tnp.sum(p.x * p.y)

    params = ({"w": rand(32, 3)}, (rand(33, 3), 2.0), Point(rand(34, 2), rand(35, 2)))
    g = tg.grad(f)(params)
    d, (a, b), p = params
    want = ({"w": a}, (d["w"], np.sum(p.x * p.y)), Point(b * p.y, b * p.x))
    assert_close(g, want, rtol=1e-14)
    assert isinstance(g[2], Point)


# ---------------------------------------------------------------------------
# Jacobians and Hessians


def test_jacfwd_jacrev_closed_form():
    x = rand(36, 4)
    np.testing.assert_allclose(tg.jacfwd(f_vec)(x), f_vec_jac(x), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(tg.jacrev(f_vec)(x), f_vec_jac(x), rtol=1e-13, atol=1e-15)


def test_jacobian_shapes_non_square_and_matrix_inputs():
    a = rand(37, 2, 3)

    def f(m):  # (2, 3) -> (3,)
        return tnp.sum(tnp.exp(m), axis=0)

    jf, jr = tg.jacfwd(f)(a), tg.jacrev(f)(a)
    assert jf.shape == jr.shape == (3, 2, 3)
    want = np.zeros((3, 2, 3))
    for j in range(3):
        want[j, :, j] = np.exp(a[:, j])
    np.testing.assert_allclose(jf, want, rtol=1e-14)
    np.testing.assert_allclose(jr, want, rtol=1e-14)


def test_jacfwd_equals_jacrev_with_argnums_and_pytrees():
    def f(x, d):
        return {"o": tnp.tanh(x[:, None] * d["m"]), "s": tnp.sum(x) * d["c"]}

    x, d = rand(38, 3), {"m": rand(39, 3, 2), "c": 0.7}
    for argnums in (0, 1, (0, 1)):
        jf = tg.jacfwd(f, argnums=argnums)(x, d)
        jr = tg.jacrev(f, argnums=argnums)(x, d)
        assert_close(jf, jr, rtol=1e-12, atol=1e-14)
    j = tg.jacrev(f, argnums=0)(x, d)
    assert j["o"].shape == (3, 2, 3) and j["s"].shape == (3,)
    np.testing.assert_allclose(j["s"], np.full(3, 0.7))


def test_jacobian_has_aux():
    x = rand(40, 3)
    for jac in (tg.jacfwd, tg.jacrev):
        j, aux = jac(lambda a: (a ** 2, a.sum()), has_aux=True)(x)
        np.testing.assert_allclose(j, np.diag(2 * x), rtol=1e-15)
        np.testing.assert_allclose(aux, x.sum())


def test_hessian_closed_form_and_symmetric():
    x = rand(41, 4)
    h = tg.hessian(f_scalar)(x)
    np.testing.assert_allclose(h, f_scalar_hess(x), rtol=1e-12, atol=1e-14)
    m = rand(42, 4, 4)
    h = tg.hessian(lambda v: v @ m @ v)(x)
    np.testing.assert_allclose(h, m + m.T, rtol=1e-13)
    np.testing.assert_allclose(tg.hessian(lambda a: a ** 3)(2.0), 12.0)


def test_hessian_argnums_tuple_blocks():
    x, y = rand(43, 3), rand(44, 3)
    (hxx, hxy), (hyx, hyy) = tg.hessian(lambda a, b: tnp.sum(a * a * b), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(hxx, np.diag(2 * y), rtol=1e-14)
    np.testing.assert_allclose(hxy, np.diag(2 * x), rtol=1e-14)
    np.testing.assert_allclose(hyx, np.diag(2 * x), rtol=1e-14)
    np.testing.assert_allclose(hyy, np.zeros((3, 3)))


def test_fourth_derivative_of_sin_is_sin():
    d4 = tg.grad(tg.grad(tg.grad(tg.grad(tnp.sin))))
    for x in (0.3, 1.1, -2.0):
        np.testing.assert_allclose(d4(x), math.sin(x), rtol=1e-14)
    xs = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(tg.vmap(d4)(xs), np.sin(xs), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(tg.jit(d4)(0.3), math.sin(0.3), rtol=1e-14)
    # also by forward mode: jvp of jvp of jvp of jvp
    def fwd(f):
        return lambda x: tg.jvp(f, (x,), (1.0,))[1]
    np.testing.assert_allclose(fwd(fwd(fwd(fwd(tnp.sin))))(0.7), math.sin(0.7), rtol=1e-14)


# ---------------------------------------------------------------------------
# vmap


def test_vmap_definition():
    xs = rand(45, 5, 3)
    f = lambda x: tnp.outer(x, tnp.sin(x)).sum(0) / (1 + x @ x)  # noqa: E731
    assert_close(tg.vmap(f)(xs), np.stack([f(x) for x in xs]), rtol=1e-13)


def test_vmap_in_axes_int_negative_none():
    x, y = rand(46, 3, 4), rand(47, 3)

    def f(a, b):
        return tnp.sum(a * b) + a

    # batch along axis 1 (size 4) of x, y broadcast
    got = tg.vmap(f, in_axes=(1, None))(x, y)
    want = np.stack([f(x[:, i], y) for i in range(4)])
    assert_close(got, want, rtol=1e-13)
    z = rand(48, 4, 3)
    got = tg.vmap(f, in_axes=(-1, 0))(x, z)
    want = np.stack([f(x[:, i], z[i]) for i in range(4)])
    assert_close(got, want, rtol=1e-13)
    got = tg.vmap(f, in_axes=[None, -2])(y, x.T)  # a list works like a tuple
    want = np.stack([f(y, x[:, i]) for i in range(4)])
    assert_close(got, want, rtol=1e-13)


def test_vmap_out_axes_int_negative_none_pytree():
    x = rand(48, 3, 4)
    got = tg.vmap(lambda a: a * 2, out_axes=1)(x)
    np.testing.assert_allclose(got, (x * 2).T)
    got = tg.vmap(lambda a: a[:, None] * a, out_axes=-1)(x)  # per-example (4, 4)
    want = np.stack([a[:, None] * a for a in x], axis=-1)
    np.testing.assert_allclose(got, want)
    got = tg.vmap(lambda a, c: (a.sum(), c * 2), in_axes=(0, None), out_axes=(0, None))(x, 5.0)
    np.testing.assert_allclose(got[0], x.sum(1))
    assert float(got[1]) == 10.0
    got = tg.vmap(lambda a: {"m": a[:, None] * a, "s": a.sum()}, out_axes={"m": 2, "s": 0})(x)
    assert got["m"].shape == (4, 4, 3)
    np.testing.assert_allclose(got["m"], np.stack([a[:, None] * a for a in x], axis=2))
    np.testing.assert_allclose(got["s"], x.sum(1))


def test_vmap_in_axes_pytrees():
    d = {"a": rand(49, 4, 3), "b": rand(50, 3)}
    p = Point(rand(51, 3, 4), 2.0)

    def f(d, p):
        return tnp.sum(d["a"] * d["b"]) * p.x + p.y

    got = tg.vmap(f, in_axes=({"a": 0, "b": None}, Point(1, None)))(d, p)
    want = np.stack([f({"a": d["a"][i], "b": d["b"]}, Point(p.x[:, i], 2.0)) for i in range(4)])
    assert_close(got, want, rtol=1e-13)
    # a prefix: the whole dict mapped along axis 0 of every leaf
    d2 = {"a": rand(52, 2, 3), "b": rand(53, 2)}
    got = tg.vmap(lambda d: d["a"].sum() * d["b"], in_axes=({"a": 0, "b": 0},))(d2)
    np.testing.assert_allclose(got, d2["a"].sum(1) * d2["b"])
    got = tg.vmap(lambda t: t[0] * t[1])((rand(54, 3, 2), rand(55, 3, 2)))
    np.testing.assert_allclose(got, rand(54, 3, 2) * rand(55, 3, 2))


def test_vmap_pytree_outputs_namedtuple():
    xs = rand(56, 4, 2)
    out = tg.vmap(lambda x: Point(x.sum(), {"n": x * x}))(xs)
    assert isinstance(out, Point)
    np.testing.assert_allclose(out.x, xs.sum(1))
    np.testing.assert_allclose(out.y["n"], xs * xs)


def test_vmap_axis_size_without_mapped_inputs():
    out = tg.vmap(lambda x: x + 1.0, in_axes=None, axis_size=4)(np.arange(3.0))
    np.testing.assert_array_equal(out, np.tile(np.arange(3.0) + 1, (4, 1)))
    out = tg.vmap(lambda x, y: x * y, in_axes=(0, None), axis_size=2)(np.ones((2, 3)), 3.0)
    np.testing.assert_array_equal(out, np.full((2, 3), 3.0))


def test_vmap_unbatched_output_is_broadcast():
    out = tg.vmap(lambda x: 2.0)(np.ones(3))
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])
    c = rand(57, 2)
    out = tg.vmap(lambda x: c * 3.0)(np.ones((4, 5)))
    np.testing.assert_allclose(out, np.tile(c * 3.0, (4, 1)))


def test_vmap_kwargs_are_mapped_along_axis_0():
    x, y = rand(58, 3, 2), rand(59, 3, 2)
    out = tg.vmap(lambda a, b=None: a * b)(x, b=y)
    np.testing.assert_allclose(out, x * y)


def test_nested_vmaps_over_different_axes():
    x = rand(60, 2, 3, 4)
    y = rand(61, 4, 2)

    def f(a, b):  # a: (3,), b: ()
        return tnp.sin(a) * b

    # outer maps axis 2 of x (size 4) with axis 0 of y; inner maps axis 0 of x-slice
    # (size 2) with axis 0 of the y-slice.
    inner = tg.vmap(f, in_axes=(0, 0), out_axes=1)  # (3,) per example -> (3, 2)
    outer = tg.vmap(inner, in_axes=(2, 0), out_axes=0)  # -> (4, 3, 2)
    got = outer(x, y)
    want = np.empty((4, 3, 2))
    for i in range(4):
        for j in range(2):
            want[i, :, j] = np.sin(x[j, :, i]) * y[i, j]
    np.testing.assert_allclose(got, want, rtol=1e-15)
    # pairwise distances: in_axes None on alternating levels
    p, q = rand(62, 5, 3), rand(63, 4, 3)
    d = tg.vmap(tg.vmap(lambda a, b: tnp.sqrt(tnp.sum((a - b) ** 2)), in_axes=(None, 0)),
                in_axes=(0, None))(p, q)
    np.testing.assert_allclose(d, np.linalg.norm(p[:, None] - q[None], axis=-1), rtol=1e-14)
    # negative axes at both levels
    got = tg.vmap(tg.vmap(lambda a: a.sum(), in_axes=-1), in_axes=-1, out_axes=-1)(x)
    assert got.shape == (3, 4)
    np.testing.assert_allclose(got, x.sum(0), rtol=1e-14)


def test_vmap_of_matrix_functions_matches_loop():
    a = rand(64, 3, 4, 4)
    b = rand(65, 4)
    got = tg.vmap(lambda m: m @ b @ m.T)(a)
    want = np.stack([m @ b @ m.T for m in a])
    np.testing.assert_allclose(got, want, rtol=1e-13)
    got = tg.vmap(tnp.matmul, in_axes=(0, None))(a, a[0])
    np.testing.assert_allclose(got, a @ a[0], rtol=1e-13)


# ---------------------------------------------------------------------------
# jit


def test_jit_definition_and_types():
    x = rand(66, 3, 4)
    f = lambda a: tnp.tanh(a @ a.T).sum(0) * 2.0  # noqa: E731
    got = tg.jit(f)(x)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, f(x), rtol=1e-15)
    assert tg.jit(lambda a: a * 2)(np.arange(3)).dtype == np.int64
    assert tg.jit(lambda a: a * 2.0)(np.ones(2, np.float32)).dtype == np.float32
    assert tg.jit(lambda a: a + 1.5)(np.arange(2)).dtype == np.float64
    assert float(tg.jit(lambda: 1.0)()) == 1.0


def test_jit_pytrees_in_and_out():
    def f(d, p):
        return Point(d["a"] * p.x, (d["b"] + p.y, {"z": p.x.sum()}))

    d = {"a": rand(67, 3), "b": 2.0}
    p = Point(rand(68, 3), rand(69, 3))
    got = tg.jit(f)(d, p)
    assert isinstance(got, Point)
    assert_close(got, f(d, p), rtol=1e-15)


def test_jit_kwargs():
    f = tg.jit(lambda x, y: x * y + 1)
    np.testing.assert_allclose(f(rand(70, 3), y=rand(71, 3)), rand(70, 3) * rand(71, 3) + 1)


def test_jit_retraces_only_when_shapes_dtypes_or_statics_change():
    traces = []

    def f(x, n, *, mode="add"):
        traces.append((np.shape(x), n, mode))
        return x + n if mode == "add" else x * n

    jf = tg.jit(f, static_argnums=1, static_argnames="mode")
    x = rand(72, 3)
    np.testing.assert_allclose(jf(x, 2), x + 2)
    np.testing.assert_allclose(jf(x * 3, 2), x * 3 + 2)   # new values: cached
    np.testing.assert_allclose(jf(-x, 2), -x + 2)
    assert len(traces) == 1
    np.testing.assert_allclose(jf(x, 5), x + 5)           # static value changed
    assert len(traces) == 2
    np.testing.assert_allclose(jf(x, 5), x + 5)
    assert len(traces) == 2
    np.testing.assert_allclose(jf(x, 5, mode="mul"), x * 5)  # static kwarg changed
    assert len(traces) == 3
    np.testing.assert_allclose(jf(x + 1, 5, mode="mul"), (x + 1) * 5)
    assert len(traces) == 3
    np.testing.assert_allclose(jf(rand(73, 4), 2), rand(73, 4) + 2)   # shape changed
    assert len(traces) == 4
    out = jf(x.astype(np.float32), 2)                     # dtype changed
    assert out.dtype == np.float32 and len(traces) == 5
    jf(x.astype(np.float32) + 1, 2)
    jf(rand(74, 4), 2)
    jf(x, 2)
    assert len(traces) == 5
    assert traces[1] == ((3,), 5, "add") and traces[2] == ((3,), 5, "mul")


def test_jit_static_argnames_resolves_positional_arguments():
    traces = []

    def f(x, n):
        traces.append(n)
        return x * n

    jf = tg.jit(f, static_argnames="n")
    np.testing.assert_allclose(jf(np.ones(2), 3), [3.0, 3.0])
    np.testing.assert_allclose(jf(np.ones(2), 3), [3.0, 3.0])
    np.testing.assert_allclose(jf(np.ones(2), 4), [4.0, 4.0])
    assert traces == [3, 4]
    assert all(isinstance(n, int) for n in traces)  # static values are not traced


def test_jit_static_arguments_can_drive_python_control_flow():
    @tg.jit
    def plain(x):
        return x * 2

    def f(x, k):
        for _ in range(k):  # needs a concrete k
            x = tnp.sin(x)
        return x

    jf = tg.jit(f, static_argnums=(1,))
    np.testing.assert_allclose(jf(0.5, 3), np.sin(np.sin(np.sin(0.5))))
    np.testing.assert_allclose(plain(np.ones(2)), [2.0, 2.0])
    deco = tg.jit(static_argnames=("k",))(f)
    np.testing.assert_allclose(deco(0.5, k=2), np.sin(np.sin(0.5)))


def test_jit_with_closure_over_outer_tracer():
    # inner jit closes over the grad tracer x: its constants are traced values
    g = tg.grad(lambda x: tg.jit(lambda y: x * y ** 2)(3.0))(2.0)
    assert float(g) == 9.0
    out = tg.vmap(lambda x: tg.jit(lambda y: x * y)(2.0))(np.arange(3.0))
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    assert float(tg.jit(lambda x: tg.jit(lambda y: x * y)(2.0))(3.0)) == 6.0


def test_make_jaxpr_contains_expected_primitives():
    x = rand(75, 3, 4)
    jaxpr = tg.make_jaxpr(lambda a: tnp.sum(tnp.sin(a) * 2.0, axis=1))(x)
    s = str(jaxpr)
    for name in ("sin", "mul", "reduce_sum", "f64[3,4]", "f64[3]"):
        assert name in s, s
    assert isinstance(jaxpr, tg.ClosedJaxpr)
    np.testing.assert_allclose(jaxpr(x)[0], np.sum(np.sin(x) * 2.0, axis=1), rtol=1e-15)

    s = str(tg.make_jaxpr(tg.grad(lambda a: tnp.sum(tnp.sin(a))))(x))
    assert "cos" in s, s
    s = str(tg.make_jaxpr(tg.vmap(lambda a: tnp.dot(a, a)))(x))
    assert "dot_general" in s, s
    s = str(tg.make_jaxpr(tg.jit(lambda a: tnp.exp(a)))(x))
    assert "jit" in s and "exp" in s, s
    s = str(tg.make_jaxpr(lambda a: a[1:, np.array([0, 2])].cumsum(0))(x))
    assert "getitem" in s and "cumsum" in s, s
    s = str(tg.make_jaxpr(lambda a, b: tnp.where(a > b, a, b))(x, 1.0))
    assert "gt" in s and "select" in s and "f64[]" in s, s
    s = str(tg.make_jaxpr(lambda a: tnp.at(a)[0].add(1.0))(x))
    assert "scatter" in s, s
    s = str(tg.make_jaxpr(lambda a, n: a * n, static_argnums=1)(x, 3))
    assert "mul" in s and "3" in s, s


def test_eval_shape_with_shape_dtype_struct():
    S = tg.ShapeDtypeStruct
    out = tg.eval_shape(lambda a, b: tnp.tanh(a @ b), S((3, 4), np.float32), S((4, 5), np.float32))
    assert isinstance(out, tg.ShapeDtypeStruct)
    assert out.shape == (3, 5) and out.dtype == np.float32
    out = tg.eval_shape(lambda a, b: a + b, S((3, 1), np.float32), S((4,), np.float64))
    assert out.shape == (3, 4) and out.dtype == np.float64
    out = tg.eval_shape(lambda d: {"s": d["x"].sum(0), "i": tnp.argmax(d["x"])},
                        {"x": S((7, 2), np.float64)})
    assert out["s"].shape == (2,) and out["i"].shape == () and out["i"].dtype == np.int64
    # actual arrays work too, and huge shapes are never materialized
    out = tg.eval_shape(lambda a: a @ a.T, S((200_000, 100_000), np.float32))
    assert out.shape == (200_000, 200_000)
    out = tg.eval_shape(tnp.sin, np.ones((2, 3), np.float32))
    assert out.shape == (2, 3) and out.dtype == np.float32


def test_stop_gradient():
    sg = tg.lax.stop_gradient
    x = rand(76, 3)
    np.testing.assert_allclose(sg(x), x)
    g = tg.grad(lambda a: tnp.sum(sg(a) * a))(x)
    np.testing.assert_allclose(g, x, rtol=1e-15)
    _, t = tg.jvp(lambda a: sg(a) * a, (x,), (np.ones(3),))
    np.testing.assert_allclose(t, x, rtol=1e-15)
    g = tg.jit(tg.grad(lambda a: tnp.sum(sg(a ** 2) + a)))(x)
    np.testing.assert_array_equal(g, np.ones(3))
    g = tg.vmap(tg.grad(lambda a: sg(a) * a))(x)
    np.testing.assert_allclose(g, x, rtol=1e-15)
    h = tg.hessian(lambda a: tnp.sum(sg(a) * a ** 2))(x)
    np.testing.assert_allclose(h, np.diag(2 * x), rtol=1e-15)


# ---------------------------------------------------------------------------
# Compositions


def _per_example_loss(w, x):
    return tnp.sum(tnp.tanh(w * x) ** 2) + tnp.sum(w * w * x)


def _per_example_grad(w, x):
    t = np.tanh(w * x)
    return 2 * t * (1 - t ** 2) * x + 2 * w * x


def test_vmap_of_grad():
    w, xs = rand(77, 4), rand(78, 5, 4)
    got = tg.vmap(tg.grad(_per_example_loss), in_axes=(None, 0))(w, xs)
    np.testing.assert_allclose(got, np.stack([_per_example_grad(w, x) for x in xs]), rtol=1e-13)


def test_grad_of_vmap():
    w, xs = rand(79, 4), rand(80, 5, 4)
    total = lambda w: tnp.sum(tg.vmap(_per_example_loss, in_axes=(None, 0))(w, xs))  # noqa: E731
    np.testing.assert_allclose(tg.grad(total)(w), sum(_per_example_grad(w, x) for x in xs),
                               rtol=1e-12)
    # grad of vmap with non-zero in_axes/out_axes
    x = rand(81, 3, 4)
    g = tg.grad(lambda a: tnp.sum(tg.vmap(lambda r: r ** 3, in_axes=1, out_axes=1)(a)))(x)
    np.testing.assert_allclose(g, 3 * x ** 2, rtol=1e-14)


def test_jit_of_grad_of_vmap():
    w, xs = rand(82, 4), rand(83, 5, 4)
    def total(w, xs):
        return tnp.sum(tg.vmap(_per_example_loss, in_axes=(None, 0))(w, xs))

    got = tg.jit(tg.grad(total))(w, xs)
    np.testing.assert_allclose(got, sum(_per_example_grad(w, x) for x in xs), rtol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.grad(total))(w + 1, xs),
                               sum(_per_example_grad(w + 1, x) for x in xs), rtol=1e-12)


def test_jvp_of_grad_is_hessian_vector_product():
    x, v = rand(84, 5), rand(85, 5)
    g, hvp = tg.jvp(tg.grad(f_scalar), (x,), (v,))
    np.testing.assert_allclose(g, f_scalar_grad(x), rtol=1e-13)
    np.testing.assert_allclose(hvp, tg.hessian(f_scalar)(x) @ v, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(hvp, f_scalar_hess(x) @ v, rtol=1e-12, atol=1e-14)
    # reverse-over-reverse and reverse-over-forward give the same HVP
    hvp_rr = tg.grad(lambda a: tnp.vdot(tg.grad(f_scalar)(a), v))(x)
    hvp_rf = tg.grad(lambda a: tg.jvp(f_scalar, (a,), (v,))[1])(x)
    np.testing.assert_allclose(hvp_rr, hvp, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(hvp_rf, hvp, rtol=1e-12, atol=1e-14)


def test_vmap_of_jit():
    xs = rand(86, 4, 3)
    f = tg.jit(lambda a, b: tnp.exp(a) @ b)
    b = rand(87, 3, 2)
    np.testing.assert_allclose(tg.vmap(f, in_axes=(0, None))(xs, b), np.exp(xs) @ b, rtol=1e-14)
    b4 = rand(89, 4, 2)
    np.testing.assert_allclose(tg.vmap(f, in_axes=(1, None))(xs, b4), np.exp(xs.T) @ b4,
                               rtol=1e-14)
    bs = rand(88, 4, 3, 2)
    np.testing.assert_allclose(tg.vmap(f)(xs, bs), np.einsum("bi,bij->bj", np.exp(xs), bs),
                               rtol=1e-14)


def test_grad_of_jit():
    x = rand(89, 5)
    np.testing.assert_allclose(tg.grad(tg.jit(f_scalar))(x), f_scalar_grad(x), rtol=1e-13)
    np.testing.assert_allclose(tg.hessian(tg.jit(f_scalar))(x), f_scalar_hess(x), rtol=1e-12,
                               atol=1e-14)
    f = tg.jit(lambda a, n: tnp.sum(a ** n), static_argnums=1)
    np.testing.assert_allclose(tg.grad(f)(x, 3), 3 * x ** 2, rtol=1e-14)


def test_jit_of_vmap_of_grad_and_deep_compositions():
    x = rand(90, 3, 4)
    got = tg.jit(tg.vmap(tg.grad(lambda a: tnp.sum(tnp.sin(a)))))(x)
    np.testing.assert_allclose(got, np.cos(x), rtol=1e-15)
    got = tg.grad(lambda a: tnp.sum(tg.vmap(tg.jit(tg.grad(lambda b: tnp.sin(b) * b)))(a)))(x[0])
    np.testing.assert_allclose(got, 2 * np.cos(x[0]) - x[0] * np.sin(x[0]), rtol=1e-14)
    d2 = tg.grad(tg.grad(lambda s: tnp.sum(tg.jit(tg.vmap(tnp.sin))(s * tnp.ones(3)))))(0.5)
    np.testing.assert_allclose(d2, -3 * np.sin(0.5), rtol=1e-14)
    hs = tg.vmap(tg.hessian(lambda a: tnp.sum(a ** 3)))(x)
    np.testing.assert_allclose(hs, np.stack([np.diag(6 * r) for r in x]), rtol=1e-14)


def test_vmap_of_jvp_vjp_linearize():
    xs, vs = rand(91, 4, 3), rand(92, 4, 3)
    out, tans = tg.vmap(lambda x, v: tg.jvp(f_vec, (x,), (v,)))(xs, vs)
    np.testing.assert_allclose(tans, np.stack([f_vec_jac(x) @ v for x, v in zip(xs, vs)]),
                               rtol=1e-13, atol=1e-15)
    (cts,) = tg.vmap(lambda x, u: tg.vjp(f_vec, x)[1](u))(xs, vs)
    np.testing.assert_allclose(cts, np.stack([f_vec_jac(x).T @ u for x, u in zip(xs, vs)]),
                               rtol=1e-13, atol=1e-15)
    _, f_lin = tg.linearize(f_vec, xs[0])
    np.testing.assert_allclose(tg.vmap(f_lin)(vs), vs @ f_vec_jac(xs[0]).T, rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(tg.jit(f_lin)(vs[0]), f_vec_jac(xs[0]) @ vs[0], rtol=1e-13,
                               atol=1e-15)


def test_jacfwd_equals_jacrev_under_jit_and_vmap():
    x = rand(93, 3, 4)
    f = lambda a: tnp.tanh(a) * tnp.sum(a ** 2)  # noqa: E731
    jf = tg.vmap(tg.jacfwd(f))(x)
    jr = tg.jit(tg.vmap(tg.jacrev(f)))(x)
    np.testing.assert_allclose(jf, jr, rtol=1e-12, atol=1e-14)
    want = np.stack([np.diag(1 - np.tanh(a) ** 2) * np.sum(a ** 2)
                     + np.outer(np.tanh(a), 2 * a) for a in x])
    np.testing.assert_allclose(jf, want, rtol=1e-12, atol=1e-14)


def test_pytrees_through_grad_vmap_jit_together():
    params = {"w": rand(94, 3, 2), "b": (rand(95, 2), Point(0.5, rand(96, 2)))}
    xs = rand(97, 6, 3)

    def loss(p, x):
        b, pt = p["b"]
        h = tnp.tanh(x @ p["w"] + b)
        return tnp.sum(h * pt.y) * pt.x

    batch_loss = tg.jit(lambda p, xs: tnp.mean(tg.vmap(loss, in_axes=(None, 0))(p, xs)))
    g = tg.grad(batch_loss)(params, xs)
    assert tree_structure(g) == tree_structure(params)
    assert isinstance(g["b"][1], Point)
    per_ex = tg.vmap(tg.grad(loss), in_axes=(None, 0))(params, xs)
    assert_close(g, tree_map(lambda a: np.mean(a, axis=0), per_ex), rtol=1e-12, atol=1e-14)
    # against finite differences
    check_grads(lambda p: batch_loss(p, xs), (params,), order=1, modes=("rev",))


# ---------------------------------------------------------------------------
# Python control flow


def _branchy(x):
    if x > 0:
        return x ** 2
    return -3.0 * x


def test_python_control_flow_under_grad_and_jvp():
    assert float(tg.grad(_branchy)(2.0)) == 4.0
    assert float(tg.grad(_branchy)(-2.0)) == -3.0
    y, t = tg.jvp(_branchy, (1.5,), (2.0,))
    assert float(y) == 2.25 and float(t) == 6.0
    y, t = tg.jvp(_branchy, (-1.0,), (1.0,))
    assert float(y) == 3.0 and float(t) == -3.0
    assert float(tg.grad(tg.grad(_branchy))(2.0)) == 2.0
    with pytest.raises(tg.ConcretizationTypeError):   # as JAX: float() would drop d/dx
        tg.grad(lambda x: x * float(x))(3.0)
    assert float(tg.grad(lambda x: x * int(x))(3.0)) == 3.0


def test_python_control_flow_under_jit_raises():
    with pytest.raises(tg.ConcretizationTypeError, match="_branchy"):
        tg.jit(_branchy)(2.0)
    with pytest.raises(tg.ConcretizationTypeError):
        tg.jit(tg.grad(_branchy))(2.0)
    with pytest.raises(tg.ConcretizationTypeError):
        tg.grad(tg.jit(_branchy))(2.0)
    with pytest.raises(tg.ConcretizationTypeError):
        tg.vmap(_branchy)(np.ones(3))


# ---------------------------------------------------------------------------
# Property-based identities (hypothesis)

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

FLOATS = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False, width=64)


def _softmax(x):
    e = tnp.exp(x - tnp.max(x, axis=-1, keepdims=True))
    return e / tnp.sum(e, axis=-1, keepdims=True)


FUNS = {
    "sin_mul": lambda x: tnp.sin(x) * x + tnp.cos(x) ** 2,
    "softmax": _softmax,
    "logsumexp0": lambda x: tnp.log(tnp.sum(tnp.exp(x), axis=0)),
    "normalize": lambda x: (x - tnp.mean(x)) / tnp.sqrt(tnp.var(x) + 1.0),
    "cumsum_rev": lambda x: tnp.cumsum(x[::-1] ** 2, axis=0),
    "prod0": lambda x: tnp.prod(tnp.tanh(x), axis=0),
    "concat": lambda x: tnp.concatenate([x, tnp.arctan(x) * x], axis=-1),
    "moveaxis": lambda x: tnp.moveaxis(tnp.exp(x), 0, -1) * 2.0,
    "gram": lambda x: tnp.tanh(tnp.reshape(x, (x.shape[0], -1))
                               @ tnp.reshape(x, (x.shape[0], -1)).T),
    "index": lambda x: x[np.array([0, 0])].sum(0) * x[-1] + x[..., ::-1],
    "scatter": lambda x: tnp.at(x)[0].add(tnp.sum(x ** 2)) * tnp.sinh(x),
    "where": lambda x: tnp.where(x > 0.1, x ** 2, tnp.sin(x)),
    "max_last": lambda x: tnp.max(x * x, axis=-1) + tnp.min(x),
    "einsum": lambda x: tnp.einsum("i...,i...->...", x, tnp.cos(x)),
    "expand_broadcast": lambda x: tnp.broadcast_to(tnp.expand_dims(tnp.sum(x, 0), 0), x.shape) * x,
}

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@st.composite
def fun_and_array(draw, min_dims=1):
    name = draw(st.sampled_from(sorted(FUNS)))
    shape = draw(shapes.filter(lambda s: len(s) >= min_dims))
    x = draw(hnp.arrays(np.float64, shape, elements=FLOATS))
    return name, x


@SETTINGS
@given(fun_and_array(), st.integers(1, 4), st.data())
def test_prop_vmap_equals_loop(name_x, batch, data):
    name, x = name_x
    f = FUNS[name]
    xs = data.draw(hnp.arrays(np.float64, (batch,) + x.shape, elements=FLOATS))
    in_axis = data.draw(st.integers(0, x.ndim))
    moved = np.moveaxis(xs, 0, in_axis)
    out_nd = np.ndim(f(x))
    out_axis = data.draw(st.integers(-(out_nd + 1), out_nd))
    got = tg.vmap(f, in_axes=in_axis, out_axes=out_axis)(moved)
    want = np.stack([np.asarray(f(xi)) for xi in xs], axis=out_axis)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(fun_and_array())
def test_prop_jit_equals_eager(name_x):
    name, x = name_x
    f = FUNS[name]
    want = f(x)
    got = tg.jit(f)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


@SETTINGS
@given(fun_and_array(), st.integers(0, 2 ** 32 - 1))
def test_prop_jvp_vjp_transposition(name_x, seed):
    """<u, J v> (from jvp) == <J^T u, v> (from vjp), exactly up to rounding."""
    name, x = name_x
    f = FUNS[name]
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(x.shape)
    y, jv = tg.jvp(f, (x,), (v,))
    u = rng.standard_normal(np.shape(y))
    (jtu,) = tg.vjp(f, x)[1](u)
    lhs, rhs = np.sum(u * jv), np.sum(jtu * v)
    scale = np.sum(np.abs(u * jv)) + np.sum(np.abs(jtu * v)) + 1.0
    assert abs(lhs - rhs) <= 1e-12 * scale, (lhs, rhs)


@SETTINGS
@given(fun_and_array())
def test_prop_jacfwd_equals_jacrev(name_x):
    name, x = name_x
    f = FUNS[name]
    np.testing.assert_allclose(tg.jacfwd(f)(x), tg.jacrev(f)(x), rtol=1e-11, atol=1e-12)


@SETTINGS
@given(fun_and_array(), st.integers(0, 2 ** 32 - 1))
def test_prop_hessian_symmetric(name_x, seed):
    name, x = name_x
    f = FUNS[name]
    w = np.random.default_rng(seed).standard_normal(np.shape(f(x)))
    h = tg.hessian(lambda a: tnp.sum(f(a) * w))(x)
    n = x.size
    hm = np.reshape(h, (n, n))
    np.testing.assert_allclose(hm, hm.T, rtol=1e-10, atol=1e-10)


@SETTINGS
@given(fun_and_array(), st.integers(0, 2 ** 32 - 1))
def test_prop_grad_of_sum_of_vmap_equals_vmap_of_grad(name_x, seed):
    name, x = name_x
    f = FUNS[name]
    xs = np.stack([x, x * 0.5 + 0.1, -x])
    w = np.random.default_rng(seed).standard_normal(np.shape(f(x)))
    g = lambda a: tnp.sum(f(a) * w)  # noqa: E731
    total = tg.grad(lambda b: tnp.sum(tg.vmap(g)(b)))(xs)
    per = tg.vmap(tg.grad(g))(xs)
    np.testing.assert_allclose(total, per, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(g)))(xs), per, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(st.lists(st.integers(1, 3), min_size=2, max_size=3).map(tuple), st.data())
def test_prop_matmul_grad_matches_closed_form(shape, data):
    a = data.draw(hnp.arrays(np.float64, shape, elements=FLOATS))
    k = data.draw(st.integers(1, 3))
    b = data.draw(hnp.arrays(np.float64, (shape[-1], k), elements=FLOATS))
    ct = data.draw(hnp.arrays(np.float64, shape[:-1] + (k,), elements=FLOATS))
    _, pull = tg.vjp(tnp.matmul, a, b)
    ga, gb = pull(ct)
    np.testing.assert_allclose(ga, ct @ b.T, rtol=1e-12, atol=1e-12)
    gb_want = a.reshape(-1, shape[-1]).T @ ct.reshape(-1, k)
    np.testing.assert_allclose(gb, gb_want, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# Edge cases of staging and differentiation


def test_jit_identity_duplicate_and_constant_outputs():
    x = rand(98, 3)
    np.testing.assert_array_equal(tg.jit(lambda a: a)(x), x)
    a, b, c = tg.jit(lambda a: (a, a, a * 2))(x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x)
    np.testing.assert_array_equal(c, 2 * x)
    np.testing.assert_array_equal(tg.jit(lambda a: np.ones(2))(x), np.ones(2))
    assert tg.jit(lambda a: ())(x) == ()
    # and their derivatives
    g = tg.grad(lambda s: sum(tg.jit(lambda y: (y, y, y * 2))(s)))(1.0)
    assert float(g) == 4.0
    np.testing.assert_array_equal(tg.grad(lambda a: tnp.sum(tg.jit(lambda y: y)(a)))(x), np.ones(3))
    g = tg.grad(lambda s: tnp.sum(tg.jit(lambda y: (np.ones(2), y))(s)[1]))(1.0)
    assert float(g) == 1.0
    out = tg.vmap(tg.jit(lambda a: (a, 3.0)))(x)
    np.testing.assert_array_equal(out[0], x)
    np.testing.assert_array_equal(out[1], [3.0, 3.0, 3.0])


def test_integer_outputs_have_float0_or_zero_derivatives():
    x, v = rand(99, 4), rand(100, 4)
    (y, i), (ty, ti) = tg.jvp(lambda a: (a * 2, tnp.argmax(a)), (x,), (v,))
    np.testing.assert_allclose(ty, 2 * v)
    assert int(i) == int(np.argmax(x)) and ti.dtype == tg.dtypes.float0
    _, pull = tg.vjp(lambda a: (a * 2, tnp.argmax(a)), x)
    (ct,) = pull((np.ones(4), np.zeros((), tg.dtypes.float0)))
    np.testing.assert_array_equal(ct, 2 * np.ones(4))
    np.testing.assert_array_equal(tg.jacfwd(lambda a: tnp.argmax(a) * 1.0)(x), np.zeros(4))
    g = tg.grad(lambda a: tnp.sum(a.astype(int) * a))(np.array([0.5, 1.5, 2.5]))
    np.testing.assert_array_equal(g, [0.0, 1.0, 2.0])


def test_jit_of_grad_of_vmap_of_jit_closing_over_tracers():
    x = rand(101, 3, 4)

    def inner(y):
        # jit closes over y (a JVP tracer, under an outer jit)
        return tnp.sum(tg.vmap(tg.jit(lambda z: tnp.sin(z) * y.sum()))(y))

    got = tg.jit(lambda a: tg.grad(inner)(a))(x)
    want = np.cos(x) * x.sum() + np.sum(np.sin(x))
    np.testing.assert_allclose(got, want, rtol=1e-13)
    check_grads(inner, (x,), order=2)


def test_grad_of_jit_with_scatter_against_finite_differences():
    x = rand(102, 3, 4)
    f = lambda a: tg.jit(lambda z: z.at[np.array([0, 0, 1])].add(z[2] ** 2))(a)  # noqa: E731
    check_grads(f, (x,), order=2)
    def g(a, b):
        return tg.jit(lambda z, w: z.at[np.array([0, 2]), 1:3].set(w * z[1, :2]))(a, b)

    check_grads(g, (x, rand(103, 2, 2)), order=2)


def test_linearize_of_jit_and_jit_of_value_and_grad():
    x, v = rand(104, 4), rand(105, 4)
    _, f_lin = tg.linearize(tg.jit(f_vec), x)
    np.testing.assert_allclose(f_lin(v), f_vec_jac(x) @ v, rtol=1e-13, atol=1e-15)
    val, g = tg.jit(tg.value_and_grad(f_scalar))(x)
    np.testing.assert_allclose(val, f_scalar(x), rtol=1e-14)
    np.testing.assert_allclose(g, f_scalar_grad(x), rtol=1e-13)
    np.testing.assert_allclose(tg.jit(tg.jit(tg.grad(lambda a: a ** 3)))(2.0), 12.0)


def test_eval_shape_of_transformed_functions():
    S = tg.ShapeDtypeStruct
    out = tg.eval_shape(tg.grad(lambda a: tnp.sum(a ** 2)), S((3,), np.float32))
    assert out.shape == (3,) and out.dtype == np.float32
    out = tg.eval_shape(tg.vmap(lambda a: a.sum()), S((5, 3), np.float64))
    assert out.shape == (5,)
    out = tg.eval_shape(tg.jacrev(lambda a: tnp.sin(a)), S((2, 3), np.float64))
    assert out.shape == (2, 3, 2, 3)


def test_linear_transpose_matches_vjp_and_rejects_nonlinear_functions():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(3, 4))

    def f(x, y):
        return (A @ x + 2.0 * y[:3], tnp.sum(tnp.cumsum(x)))

    ft = tg.linear_transpose(f, np.ones(4), np.ones(5))
    ct = (rng.normal(size=3), 1.5)
    got = ft(ct)
    want = tg.vjp(f, rng.normal(size=4), rng.normal(size=5))[1](ct)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    assert tg.jit(lambda c: ft((c, 1.5))[0])(ct[0]).shape == (4,)
    with pytest.raises(TypeError, match="linear_transpose of <lambda>: the function is not linear"):
        tg.linear_transpose(lambda x: x * x, 1.0)(1.0)
