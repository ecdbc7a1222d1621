"""tangentia.lax has JAX 0.10.2's primitive names (``lax.add_p``, ...): binding ours
with the operands and parameters JAX's own primitive receives gives JAX's result.
The names we do not provide are listed, each with its reason."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as L
from tangentia.test_util import check_grads

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
JL = jax.lax

# JAX's primitive names that tangentia.lax does not provide, and why.
EXCLUDED = {
    "after_all_p": "tokens order effects in XLA; tangentia has no tokens",
    "create_token_p": "tokens order effects in XLA; tangentia has no tokens",
    "dce_sink_p": "JAX-internal marker for dead-code elimination",
    "device_put_p": "device placement; one CPU device (tangentia.device_put is the identity)",
    "sharding_constraint_p": "sharding across devices; lax.with_sharding_constraint is identity",
    "stage_p": "JAX-internal staging marker",
    "eq_to_p": "JAX-internal comparisons of symbolic dimensions (shape polymorphism)",
    "le_to_p": "JAX-internal comparisons of symbolic dimensions (shape polymorphism)",
    "lt_to_p": "JAX-internal comparisons of symbolic dimensions (shape polymorphism)",
    "approx_top_k_p": "a TPU approximation; lax.approx_max_k/approx_min_k compute exactly",
    "ragged_all_to_all_p": "ragged collectives over devices are not implemented",
    "reduce_p": "carries an XLA computation (a jaxpr); use lax.reduce with a Python function",
    "reduce_window_p": "carries an XLA computation (a jaxpr); use lax.reduce_window",
    "rng_bit_generator_p": "lax.rng_bit_generator is a composition of integer operations "
                           "(tangentia/lax/rng.py), not a primitive",
    "rng_uniform_p": "XLA's stateful RNG is not implemented",
    "select_and_gather_add_p": "JAX-internal rule of max-pooling gradients (ours: window_argmax)",
    "select_and_scatter_add_p": "JAX-internal rule of max-pooling gradients (ours: "
                                "window_argmax)",
    "select_and_scatter_p": "JAX-internal rule of max-pooling gradients (ours: window_argmax)",
}


def test_every_jax_primitive_name_is_provided_or_excluded():
    names = {n for n in dir(JL) if n.endswith("_p")}
    missing = sorted(n for n in names if not hasattr(L, n) and n not in EXCLUDED)
    assert missing == []
    assert sorted(n for n in EXCLUDED if hasattr(L, n)) == []
    assert set(EXCLUDED) <= names   # the list names real JAX primitives


RNG = np.random.default_rng(0)
X = RNG.uniform(0.1, 0.9, size=(3, 4))
Y = RNG.uniform(0.1, 0.9, size=(3, 4))
I = RNG.integers(1, 40, size=(3, 4))
B = X > 0.5
IMG = RNG.normal(size=(1, 2, 5, 5))
KER = RNG.normal(size=(3, 2, 2, 2))

# (JAX expression, operands): each binds the named primitive on its operands once.
CASES = [
    (lambda x, y: x + y, (X, Y)), (lambda x, y: x - y, (X, Y)), (lambda x, y: x * y, (X, Y)),
    (lambda x, y: x / y, (X, Y)), (JL.neg, (X,)), (JL.sign, (X - 0.5,)), (JL.floor, (X,)),
    (JL.ceil, (X,)), (JL.round, (X * 4,)), (JL.eq, (X, Y)), (JL.ne, (X, Y)), (JL.lt, (X, Y)),
    (JL.le, (X, Y)), (JL.gt, (X, Y)), (JL.ge, (X, Y)), (JL.atan2, (X, Y)), (JL.rem, (X, Y)),
    (JL.rem, (X - 0.5, Y - 0.5)),   # mixed signs: C's remainder, not NumPy's floor remainder
    (JL.pow, (X, Y)), (JL.nextafter, (X, Y)), (JL.complex, (X, Y)), (JL.real, (X + 1j * Y,)),
    (JL.imag, (X + 1j * Y,)), (JL.conj, (X + 1j * Y,)), (JL.abs, (X - 0.5,)), (JL.acos, (X,)),
    (JL.asin, (X,)), (JL.atan, (X,)), (JL.acosh, (X + 1,)), (JL.asinh, (X,)), (JL.atanh, (X,)),
    (JL.cosh, (X,)), (JL.sinh, (X,)), (JL.exp, (X,)), (JL.exp2, (X,)), (JL.log, (X,)),
    (JL.log1p, (X,)), (JL.expm1, (X,)), (JL.tanh, (X,)), (JL.logistic, (X,)), (JL.sin, (X,)),
    (JL.cos, (X,)), (JL.tan, (X,)), (JL.sqrt, (X,)), (JL.rsqrt, (X,)), (JL.cbrt, (X,)),
    (JL.square, (X,)), (lambda x: JL.integer_pow(x, 3), (X,)), (JL.max, (X, Y)),
    (JL.min, (X, Y)), (JL.is_finite, (X,)), (JL.digamma, (X,)), (JL.lgamma, (X,)),
    (JL.erf, (X,)), (JL.erfc, (X,)), (JL.erf_inv, (X,)), (JL.igamma, (X, Y)),
    (JL.igammac, (X, Y)), (JL.igamma_grad_a, (X, Y)), (JL.bessel_i0e, (X,)),
    (JL.bessel_i1e, (X,)), (lambda a, b, x: JL.betainc(a, b, x), (X, Y, X)),
    (JL.polygamma, (X * 0 + 1, X)), (JL.zeta, (X + 1, Y)), (JL.bitwise_and, (I, I * 3)),
    (JL.bitwise_or, (I, I * 3)), (JL.bitwise_xor, (I, I * 3)), (JL.bitwise_not, (I,)),
    (JL.bitwise_and, (B, ~B)), (JL.shift_left, (I, I % 5)),
    (JL.shift_right_arithmetic, (-I, I % 5)), (JL.shift_right_logical, (I, I % 5)),
    (JL.population_count, (I,)), (JL.clz, (I,)), (JL.mulhi, (I, I * 7)),
    (lambda x: JL.convert_element_type(x, np.float32), (X,)),
    (lambda x: JL.bitcast_convert_type(x, np.int64), (X,)),
    (lambda x: JL.clamp(0.3, x, 0.6), (X,)), (lambda b, x, y: JL.select_n(b, x, y), (B, X, Y)),
    (lambda x: JL.transpose(x, (1, 0)), (X,)), (lambda x: JL.reshape(x, (4, 3)), (X,)),
    (lambda x: JL.reshape(x, (4, 3), dimensions=(1, 0)), (X,)),
    (lambda x: JL.broadcast_in_dim(x, (2, 3, 4), (1, 2)), (X,)),
    (lambda x: JL.squeeze(x, (0,)), (X[None],)), (lambda x: JL.rev(x, (0, 1)), (X,)),
    (lambda x: JL.pad(x, 0.5, [(1, 2, 1), (0, -1, 0)]), (X,)),
    (lambda x: JL.slice(x, (0, 1), (3, 4), (2, 1)), (X,)),
    (lambda x, i: JL.dynamic_slice(x, (i, 1), (2, 2)), (X, np.int64(1))),
    (lambda x, y, i: JL.dynamic_update_slice(x, y, (i, 1)), (X, Y[:2, :2], np.int64(1))),
    (lambda: JL.broadcasted_iota(np.int64, (3, 4), 1), ()),
    (lambda x, y: JL.concatenate([x, y], 1), (X, Y)), (lambda x: JL.tile(x, (2, 1)), (X,)),
    (lambda x, y: JL.stack([x, y], 1), (X, Y)), (lambda x: JL.unstack(x, 1), (X,)),
    (lambda x: JL.split(x, (1, 3), 1), (X,)), (lambda x: JL.top_k(x, 2), (X,)),
    (lambda x: JL.sort(x, dimension=0), (X,)),
    (lambda x, y: JL.sort((x, y), dimension=1, num_keys=1), (X, Y)),
    (lambda x: JL.reduce_sum(x, (0,)), (X,)), (lambda x: JL.reduce_max(x, (1,)), (X,)),
    (lambda x: JL.reduce_min(x, (0, 1)), (X,)), (lambda x: JL.reduce_prod(x, (0,)), (X,)),
    (lambda b: JL.reduce_and(b, (0,)), (B,)), (lambda b: JL.reduce_or(b, (1,)), (B,)),
    (lambda i: JL.reduce_xor(i, (0,)), (I,)), (lambda x: JL.argmax(x, 1, np.int32), (X,)),
    (lambda x: JL.argmin(x, 0, np.int64), (X,)), (lambda x: JL.cumsum(x, 1), (X,)),
    (lambda x: JL.cumprod(x, 0, reverse=True), (X,)), (lambda x: JL.cummax(x, 1), (X,)),
    (lambda x: JL.cummin(x, 0), (X,)), (lambda x: JL.cumlogsumexp(x, 1), (X,)),
    (lambda x: JL.reduce_precision(x, 5, 10), (X,)),
    (lambda x, y: JL.dot_general(x, y, (((1,), (1,)), ((), ()))), (X, Y)),
    (lambda x: JL.fft(x, JL.FftType.FFT, (4,)), (X + 0j,)),
    (lambda x: JL.fft(x, JL.FftType.RFFT, (3, 4)), (X,)),
    (lambda a, k: JL.conv_general_dilated(a, k, (1, 2), "SAME", rhs_dilation=(1, 2)),
     (IMG, KER)),
    (lambda x: JL.reduce_window(x, 0.0, JL.add, (2, 2), (1, 2), "SAME"), (X,)),
    (lambda x: JL.reduce_window(x, -np.inf, JL.max, (2, 2), (1, 1), "VALID"), (X,)),
    (lambda x: JL.reduce_window(x, np.inf, JL.min, (1, 3), (1, 1), "VALID"), (X,)),
    (lambda x: JL.stop_gradient(x), (X,)), (lambda x, y: JL.optimization_barrier((x, y)), (X, Y)),
    (lambda x, i: JL.gather(x, i, JL.GatherDimensionNumbers((1,), (0,), (0,)), (1, 4)),
     (X, np.array([[2], [0]]))),
    *[(lambda x, i, u, scatter=scatter: scatter(x, i, u, JL.ScatterDimensionNumbers((1,), (0,), (0,))),
       (X, np.array([[2], [0]]), Y[:2]))
      for scatter in (JL.scatter_add, JL.scatter, JL.scatter_mul, JL.scatter_max, JL.scatter_min,
                      JL.scatter_sub)],
]


def _run_jax_program(jaxpr, consts, args):
    """Evaluate ``jaxpr`` equation by equation, binding each primitive through
    tangentia.lax's name for it; returns the outputs and the names bound."""
    env = {}
    for v, a in zip(jaxpr.constvars, consts):
        env[v] = a
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    bound = []
    read = lambda v: v.val if hasattr(v, "val") else env[v]
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in ("pjit", "jit"):
            outs = _run_jax_program(eqn.params["jaxpr"].jaxpr, eqn.params["jaxpr"].consts,
                                    [read(v) for v in eqn.invars])
            bound += outs[1]
            outs = outs[0]
        else:
            attr = name.replace("-", "_") + "_p"
            ours = getattr(L, attr) if hasattr(L, attr) else getattr(L.linalg, attr)
            outs = ours.bind(*[read(v) for v in eqn.invars], **eqn.params)
            bound.append(name)
            if not eqn.primitive.multiple_results:
                outs = [outs]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars], bound


@pytest.mark.parametrize("case", range(len(CASES)))
def test_binding_our_names_with_jaxs_parameters_gives_jaxs_results(case):
    fn, args = CASES[case]
    closed = jax.make_jaxpr(fn)(*args)
    outs, bound = _run_jax_program(closed.jaxpr, closed.consts, args)
    expected = jax.tree_util.tree_leaves(fn(*args))
    assert len(outs) == len(expected) and bound
    for o, e in zip(outs, expected):
        assert np.asarray(o).shape == np.shape(e)
        np.testing.assert_allclose(np.asarray(o), np.asarray(e), rtol=1e-6, atol=1e-12)


def test_same_names_are_our_primitives_and_transform():
    """Where the meaning and parameters agree the name is our primitive (so it is what
    our programs record); adapted names bind under grad, vmap and jit too."""
    from tangentia.primitives import control_flow, elementwise
    assert L.add_p is elementwise.add_p and L.cond_p is control_flow.cond_p
    assert L.while_p is control_flow.while_p and L.scan_p is control_flow.scan_p
    program = tg.make_jaxpr(lambda x: L.cond(x > 0, lambda v: v + 1, lambda v: v - 1, x))(1.0)
    assert any(e.prim is L.cond_p for e in program.jaxpr.eqns)
    f = lambda x: L.reduce_sum_p.bind(L.exp_p.bind(x, accuracy=None), axes=(0,),
                                      out_sharding=None)
    x = np.array([0.1, 0.7])
    np.testing.assert_allclose(tg.grad(f)(x), np.exp(x))
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(lambda v: f(v[None]))))(x), np.exp(x))
    assert L.sort_p.multiple_results and repr(L.scatter_add_p) == "scatter-add"


def test_collective_names_under_named_vmap():
    x = np.arange(6.0).reshape(3, 2)
    out = tg.vmap(lambda v: L.psum_p.bind(v, axes=("i",), axis_index_groups=None)[0],
                  axis_name="i")(x)
    np.testing.assert_allclose(out, np.broadcast_to(x.sum(0), (3, 2)))
    idx = tg.vmap(lambda v: L.axis_index_p.bind(axis_name="i"), axis_name="i")(x)
    np.testing.assert_array_equal(idx, [0, 1, 2])
    gathered = tg.vmap(lambda v: L.all_gather_p.bind(
        v, all_gather_dimension=0, axis_name="i", axis_index_groups=None, axis_size=3,
        tiled=False), axis_name="i")(x)
    np.testing.assert_allclose(gathered[1], x)


# ------------------------------------------------------------------ lax.linalg

JLL = jax.lax.linalg
LINALG_EXCLUDED = {
    "qdwh": "the QDWH polar iteration is not implemented (its iteration count is part of "
            "its result); tangentia.scipy.linalg.polar computes the polar decomposition",
}
A = RNG.normal(size=(4, 4))
S = A + A.T
H, TAUS = np.linalg.qr(A[:, :3], mode="raw")
H = H.T
DL, D, DU = np.r_[0, RNG.normal(size=3)], RNG.normal(size=4) + 3, np.r_[RNG.normal(size=3), 0]
R = np.linalg.cholesky(S @ S.T + np.eye(4)).T

LINALG_CASES = [   # (function of the module M = jax.lax.linalg or tangentia.lax.linalg, operands)
    (lambda M, a: M.eig(a), (A,)),
    (lambda M, a: M.eig(a, compute_left_eigenvectors=False), (A,)),
    (lambda M, a: M.eig(a[None] * np.array([1.0, 2.0])[:, None, None]), (A,)),
    (lambda M, a: M.schur(a), (A,)), (lambda M, a: M.hessenberg(a), (A,)),
    (lambda M, s: M.tridiagonal(s), (S,)), (lambda M, s: M.tridiagonal(s, lower=False), (S,)),
    (lambda M, h, t: M.householder_product(h, t), (H, TAUS)),
    (lambda M, h, t: M.householder_product(h + 0.5j * h, t - 0.1j), (H, TAUS)),
    (lambda M, h, t, c: M.ormqr(h, t, c), (H, TAUS, A[:, :3])),
    (lambda M, h, t, c: M.ormqr(h, t, c, left=False, transpose=True), (H, TAUS, A[:2])),
    (lambda M, dl, d, du, b: M.tridiagonal_solve(dl, d, du, b), (DL, D, DU, A[:, :2])),
    (lambda M, r, w: M.cholesky_update(r, w), (R, A[0])),
    (lambda M, a, c: M.symmetric_product(a, c, alpha=2.0, beta=0.5, symmetrize_output=True),
     (A[:, :3], S)),
    (lambda M, s: M.cholesky(s @ s.T + np.eye(4)), (S,)), (lambda M, s: M.eigh(s), (S,)),
    (lambda M, a: M.lu(a), (A,)), (lambda M, a: M.qr(a, full_matrices=False), (A[:, :3],)),
    (lambda M, a: M.svd(a), (A,)), (lambda M, a: M.svd(a, compute_uv=False), (A,)),
    (lambda M, a, b: M.triangular_solve(a, b, left_side=True, lower=True), (R.T, A[:, :2])),
]


def test_every_jax_lax_linalg_name_is_provided_or_excluded():
    names = {n for n in dir(JLL) if not n.startswith("_")}
    assert sorted(n for n in names if not hasattr(L.linalg, n)
                  and n not in LINALG_EXCLUDED) == []
    assert set(LINALG_EXCLUDED) <= names


@pytest.mark.parametrize("case", range(len(LINALG_CASES)))
def test_lax_linalg_functions_and_primitive_names_match_jax(case):
    """Our function called as JAX's, and JAX's program bound through our names."""
    fn, args = LINALG_CASES[case]
    expected = jax.tree_util.tree_leaves(fn(JLL, *args))
    closed = jax.make_jaxpr(lambda *a: fn(JLL, *a))(*args)
    outs, bound = _run_jax_program(closed.jaxpr, closed.consts, args)
    ours = jax.tree_util.tree_leaves(fn(L.linalg, *args))
    assert bound and len(outs) == len(ours) == len(expected)
    for o, p, e in zip(outs, ours, expected):
        np.testing.assert_allclose(np.asarray(o), np.asarray(e), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(np.asarray(p), np.asarray(e), rtol=1e-8, atol=1e-10)


def test_lax_linalg_compositions_differentiate():
    cases = [lambda d: L.linalg.tridiagonal_solve(DL, d, DU, A[:, :2]),
             lambda h: L.linalg.householder_product(h, TAUS),
             lambda w: L.linalg.cholesky_update(R, w),
             lambda a: tg.numpy.real(L.linalg.eig(a, compute_left_eigenvectors=False,
                                                  compute_right_eigenvectors=False)[0])]
    for f, x in zip(cases, (D, H, A[0], A)):
        check_grads(f, (x,), order=1)
    # the LAPACK-backed ones stage under jit and vmap
    batch = RNG.normal(size=(2, 4, 4))
    np.testing.assert_allclose(tg.jit(tg.vmap(lambda a: L.linalg.hessenberg(a)[0]))(batch)[1],
                               L.linalg.hessenberg(batch[1])[0], rtol=1e-12)
