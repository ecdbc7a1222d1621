"""The ``tangentia.numpy`` API: eager results are plain ``numpy.ndarray`` with
NumPy's values and NumPy 2 dtypes; the same code works under jit, vmap and grad."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.test_util import check_grads

RNG = np.random.default_rng(1234)
A = RNG.standard_normal((3, 4))
M = RNG.standard_normal((4, 4))
V = RNG.standard_normal(4)
POS = RNG.uniform(0.5, 2.0, (3, 4))


# ---------------------------------------------------------------------------
# Eager mode returns numpy.ndarray


EAGER_CALLS = [
    ("sin_pyfloat", lambda: tnp.sin(1.0), np.sin(1.0)),
    ("sin_pyint", lambda: tnp.sin(1), np.sin(1)),
    ("exp_np_float32", lambda: tnp.exp(np.float32(1.0)), np.exp(np.float32(1.0))),
    ("add_pyints", lambda: tnp.add(1, 2), np.add(1, 2)),
    ("multiply_mixed", lambda: tnp.multiply(2, 1.5), np.multiply(2, 1.5)),
    ("maximum_scalars", lambda: tnp.maximum(1, 2.5), np.maximum(1, 2.5)),
    ("sum_list", lambda: tnp.sum([1, 2, 3]), np.sum([1, 2, 3])),
    ("sum_pyfloat", lambda: tnp.sum(3.0), np.sum(3.0)),
    ("mean_list", lambda: tnp.mean([1.0, 2.0]), np.mean([1.0, 2.0])),
    ("max_array", lambda: tnp.max(A), np.max(A)),
    ("argmax_array", lambda: tnp.argmax(A), np.argmax(A)),
    ("dot_vectors", lambda: tnp.dot(V, V), np.dot(V, V)),
    ("dot_scalars", lambda: tnp.dot(2.0, 3.0), np.dot(2.0, 3.0)),
    ("matmul", lambda: tnp.matmul(A, M), np.matmul(A, M)),
    ("where_scalars", lambda: tnp.where(True, 1.0, 2.0), np.where(True, 1.0, 2.0)),
    ("reshape_array", lambda: tnp.reshape(A, (4, 3)), np.reshape(A, (4, 3))),
    ("reshape_scalar", lambda: tnp.reshape(2.0, (1, 1)), np.reshape(2.0, (1, 1))),
    ("ravel_scalar", lambda: tnp.ravel(2.0), np.ravel(2.0)),
    ("squeeze_scalar", lambda: tnp.squeeze(2.0), np.squeeze(2.0)),
    ("transpose_scalar", lambda: tnp.transpose(2.0), np.transpose(2.0)),
    ("positive_scalar", lambda: tnp.positive(2.0), np.positive(2.0)),
    ("real_scalar", lambda: tnp.real(1.5), np.real(1.5)),
    ("conj_np_scalar", lambda: tnp.conj(np.float64(1.5)), np.conj(np.float64(1.5))),
    ("astype_np_scalar", lambda: tnp.astype(np.float64(1.5), np.float64), np.float64(1.5)),
    ("broadcast_to_scalar", lambda: tnp.broadcast_to(2.0, ()), np.broadcast_to(2.0, ())),
    ("round_int", lambda: tnp.round(np.int64(3)), np.round(np.int64(3))),
    ("cumsum_list", lambda: tnp.cumsum([1.0, 2.0]), np.cumsum([1.0, 2.0])),
    ("stack_list", lambda: tnp.stack([1.0, 2.0]), np.stack([1.0, 2.0])),
    ("concatenate", lambda: tnp.concatenate([V, V]), np.concatenate([V, V])),
    ("einsum", lambda: tnp.einsum("ij,j->i", A, V), np.einsum("ij,j->i", A, V)),
    ("clip_scalar", lambda: tnp.clip(5.0, 0.0, 1.0), np.clip(5.0, 0.0, 1.0)),
    ("square_scalar", lambda: tnp.square(3), np.square(3)),
    ("arctan2_scalars", lambda: tnp.arctan2(1.0, 2.0), np.arctan2(1.0, 2.0)),
    ("isnan_scalar", lambda: tnp.isnan(1.0), np.isnan(1.0)),
    ("linalg_norm", lambda: tnp.linalg.norm(V), np.linalg.norm(V)),
    ("asarray_list", lambda: tnp.asarray([1, 2]), np.asarray([1, 2])),
    ("array_scalar", lambda: tnp.array(1.5), np.array(1.5)),
    ("zeros", lambda: tnp.zeros((2, 2)), np.zeros((2, 2))),
    ("arange", lambda: tnp.arange(5), np.arange(5)),
    ("linspace", lambda: tnp.linspace(0, 1, 5), np.linspace(0, 1, 5)),
    ("eye", lambda: tnp.eye(3), np.eye(3)),
    ("at_set_numpy", lambda: tnp.at(V)[1].set(0.0), np.r_[V[0], 0.0, V[2:]]),
]


@pytest.mark.parametrize("call,want", [(c, w) for _, c, w in EAGER_CALLS],
                         ids=[n for n, _, _ in EAGER_CALLS])
def test_eager_results_are_ndarrays_with_numpy_values(call, want):
    got = call()
    assert isinstance(got, np.ndarray), type(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def test_eager_results_of_transformations_are_ndarrays():
    x = np.array([0.5, 1.5])
    assert isinstance(tg.grad(lambda a: tnp.sum(a ** 2))(x), np.ndarray)
    assert isinstance(tg.grad(lambda a: a ** 2)(1.5), np.ndarray)
    assert isinstance(tg.jit(lambda a: a * 2)(1.5), np.ndarray)
    y, t = tg.jvp(tnp.sin, (0.5,), (1.0,))
    assert isinstance(y, np.ndarray) and isinstance(t, np.ndarray)
    assert isinstance(tg.vmap(tnp.sin)(x), np.ndarray)
    assert isinstance(tg.hessian(lambda a: tnp.sum(a ** 3))(x), np.ndarray)
    np.testing.assert_allclose(tg.hessian(lambda a: tnp.sum(a ** 3))(x), np.diag(6 * x))


def test_constructors_default_to_float64():
    for arr in (tnp.zeros(3), tnp.ones((2, 2)), tnp.empty(2), tnp.full((2,), 1.5), tnp.eye(2),
                tnp.identity(3), tnp.linspace(0, 1, 4), tnp.zeros_like(np.ones(2)),
                tnp.ones_like(np.ones(2)), tnp.full_like(np.ones(2), 3.0)):
        assert isinstance(arr, np.ndarray) and arr.dtype == np.float64
    assert tnp.arange(3).dtype == np.int64 and tnp.arange(0.0, 1.0, 0.25).dtype == np.float64
    np.testing.assert_array_equal(tnp.arange(0.0, 1.0, 0.25), [0.0, 0.25, 0.5, 0.75])
    assert tnp.zeros(2, np.int32).dtype == np.int32
    assert tnp.zeros_like(np.ones(2, np.float32)).dtype == np.float32
    np.testing.assert_array_equal(tnp.eye(3, k=1), np.eye(3, k=1))
    np.testing.assert_array_equal(tnp.empty((2, 3)), np.zeros((2, 3)))


# ---------------------------------------------------------------------------
# Dtypes: NumPy 2 promotion, Python scalars are weak


_f32 = np.ones(3, np.float32)
_f16 = np.ones(3, np.float16)
_i32 = np.arange(3, dtype=np.int32)
_i8 = np.arange(3, dtype=np.int8)
_u8 = np.arange(3, dtype=np.uint8)
_b = np.array([True, False, True])
_f64 = np.ones(3)
_i64 = np.arange(3)

PROMOTION = [
    ("f32+pyfloat", tnp.add, np.add, (_f32, 2.5)),
    ("f32*pyint", tnp.multiply, np.multiply, (_f32, 3)),
    ("f32+f64", tnp.add, np.add, (_f32, _f64)),
    ("f32+np_f64_scalar", tnp.add, np.add, (_f32, np.float64(2.0))),
    ("f16*f32", tnp.multiply, np.multiply, (_f16, _f32)),
    ("i32+pyint", tnp.add, np.add, (_i32, 1)),
    ("i32+pyfloat", tnp.add, np.add, (_i32, 1.5)),
    ("i32+f32", tnp.add, np.add, (_i32, _f32)),
    ("i8+i32", tnp.add, np.add, (_i8, _i32)),
    ("u8+pyint", tnp.add, np.add, (_u8, 1)),
    ("u8+i8", tnp.add, np.add, (_u8, _i8)),
    ("i64/i64", tnp.divide, np.divide, (_i64, _i64 + 1)),
    ("i32/pyint", tnp.divide, np.divide, (_i32, 2)),
    ("i64//pyint", tnp.floor_divide, np.floor_divide, (_i64, 2)),
    ("bool+pyint", tnp.add, np.add, (_b, 1)),
    ("bool*bool", tnp.multiply, np.multiply, (_b, _b)),
    ("f32**pyint", tnp.power, np.power, (_f32, 2)),
    ("i64**pyint", tnp.power, np.power, (_i64, 2)),
    ("max_f32_pyfloat", tnp.maximum, np.maximum, (_f32, 0.5)),
    ("lt_i32_pyfloat", tnp.less, np.less, (_i32, 1.5)),
    ("sin_i32", tnp.sin, np.sin, (_i32,)),
    ("sin_f32", tnp.sin, np.sin, (_f32,)),
    ("sqrt_i64", tnp.sqrt, np.sqrt, (_i64,)),
    ("exp_f16", tnp.exp, np.exp, (_f16,)),
    ("log2_f32", tnp.log2, np.log2, (_f32,)),
    ("log10_f32", tnp.log10, np.log10, (_f32,)),
    ("abs_i8", tnp.abs, np.abs, (_i8,)),
    ("sum_bool", tnp.sum, np.sum, (_b,)),
    ("sum_i32", tnp.sum, np.sum, (_i32,)),
    ("sum_u8", tnp.sum, np.sum, (_u8,)),
    ("sum_f32", tnp.sum, np.sum, (_f32,)),
    ("prod_i8", tnp.prod, np.prod, (_i8,)),
    ("max_i32", tnp.max, np.max, (_i32,)),
    ("mean_i32", tnp.mean, np.mean, (_i32,)),
    ("mean_f32", tnp.mean, np.mean, (_f32,)),
    ("var_f32", tnp.var, np.var, (_f32,)),
    ("cumsum_i32", tnp.cumsum, np.cumsum, (_i32,)),
    ("cumsum_bool", tnp.cumsum, np.cumsum, (_b,)),
    ("argmax_f32", tnp.argmax, np.argmax, (_f32,)),
    ("where_i32_pyfloat", lambda c, x: tnp.where(c, x, 1.5), lambda c, x: np.where(c, x, 1.5),
     (_b, _i32)),
    ("where_f32_f32", lambda c, x: tnp.where(c, x, x * 2), lambda c, x: np.where(c, x, x * 2),
     (_b, _f32)),
    ("concat_f32_i64", lambda x, y: tnp.concatenate([x, y]), lambda x, y: np.concatenate([x, y]),
     (_f32, _i64)),
    ("stack_i8_i32", lambda x, y: tnp.stack([x, y]), lambda x, y: np.stack([x, y]), (_i8, _i32)),
    ("matmul_f32_f64", tnp.matmul, np.matmul, (_f32, _f64)),
    ("dot_i32_i32", tnp.dot, np.dot, (_i32, _i32)),
    ("einsum_f32_f32", lambda x, y: tnp.einsum("i,i->", x, y),
     lambda x, y: np.einsum("i,i->", x, y), (_f32, _f32)),
    ("astype_i32", lambda x: tnp.astype(x, np.int32), lambda x: x.astype(np.int32), (_f64 * 2.7,)),
    ("astype_bool", lambda x: tnp.astype(x, bool), lambda x: x.astype(bool), (_i64,)),
    ("round_i32", tnp.round, np.round, (_i32,)),
    ("round_f32_decimals", lambda x: tnp.round(x, 1), lambda x: np.round(x, 1), (_f32 * 1.26,)),
    ("clip_i32", lambda x: tnp.clip(x, 0, 1), lambda x: np.clip(x, 0, 1), (_i32,)),
    ("square_f16", tnp.square, np.square, (_f16,)),
    ("remainder_i64", tnp.remainder, np.remainder, (_i64 + 5, 3)),
    ("negative_u8", tnp.negative, np.negative, (_u8,)),
]


@pytest.mark.parametrize("f,ref,args", [(f, r, a) for _, f, r, a in PROMOTION],
                         ids=[n for n, _, _, _ in PROMOTION])
def test_dtype_promotion_matches_numpy_eager_jit_and_eval_shape(f, ref, args):
    with np.errstate(all="ignore"):
        want = np.asarray(ref(*args))
        got = f(*args)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # Under jit, non-array Python scalars are passed as weakly typed arguments
    with np.errstate(all="ignore"):
        jitted = tg.jit(f)(*args)
    assert jitted.dtype == want.dtype, (jitted.dtype, want.dtype)
    np.testing.assert_allclose(jitted, want, rtol=1e-6)
    shape = tg.eval_shape(f, *args)
    assert shape.dtype == want.dtype and shape.shape == want.shape


def test_python_scalars_are_weak_under_jit():
    x = np.ones(2, np.float32)
    assert tg.jit(lambda a, s: a * s)(x, 2.5).dtype == np.float32
    assert tg.jit(lambda a, s: a * s)(x, np.float64(2.5)).dtype == np.float64
    assert tg.jit(lambda a: a * 2.5)(x).dtype == np.float32
    assert tg.jit(lambda s: s * 2)(3).dtype == np.int64
    assert tg.jit(lambda s: s * 2)(3.0).dtype == np.float64
    assert tg.grad(lambda a: tnp.sum(a * 2.5))(x).dtype == np.float32
    assert tg.vmap(lambda a: a * 2.5)(x).dtype == np.float32


def test_jit_output_dtype_agrees_with_eval_shape_for_scalar_intermediates():
    x = np.ones(2, np.float32)
    f = lambda a: a + tnp.sqrt(2.0)  # noqa: E731
    assert tg.jit(f)(x).dtype == tg.eval_shape(f, x).dtype


# ---------------------------------------------------------------------------
# More of the API: values against NumPy, under jit and vmap, and derivatives


API: list[tuple] = [
    ("logaddexp", tnp.logaddexp, np.logaddexp, (A, A[::-1] * 2)),
    ("hypot", tnp.hypot, np.hypot, (A, A + 1)),
    ("sinc", tnp.sinc, np.sinc, (A,)),
    ("heaviside", lambda x: tnp.heaviside(x, 0.5), lambda x: np.heaviside(x, 0.5), (A,)),
    ("log2", tnp.log2, np.log2, (POS,)),
    ("log10", tnp.log10, np.log10, (POS,)),
    ("exp2", tnp.exp2, np.exp2, (A,)),
    ("deg2rad", tnp.deg2rad, np.deg2rad, (A,)),
    ("rad2deg", tnp.rad2deg, np.rad2deg, (A,)),
    ("trunc", lambda x: tnp.trunc(x * 3) * x, lambda x: np.trunc(x * 3) * x, (A + 0.01,)),
    ("fix", lambda x: tnp.fix(x * 3) * x, lambda x: np.fix(x * 3) * x, (A + 0.01,)),
    ("round_decimals", lambda x: tnp.round(x, 2) * x, lambda x: np.round(x, 2) * x, (A,)),
    ("reciprocal", tnp.reciprocal, np.reciprocal, (POS,)),
    ("floor_divide", tnp.floor_divide, np.floor_divide, (A * 3, POS)),
    ("isclose", lambda x: tnp.isclose(x, x + 1e-9), lambda x: np.isclose(x, x + 1e-9), (A,)),
    ("allclose", lambda x: tnp.allclose(x, x + 1e-9), lambda x: np.allclose(x, x + 1e-9), (A,)),
    ("count_nonzero", lambda x: tnp.count_nonzero(x > 0, axis=1),
     lambda x: np.count_nonzero(x > 0, axis=1), (A,)),
    ("tril", tnp.tril, np.tril, (M,)),
    ("triu_k", lambda x: tnp.triu(x, 1), lambda x: np.triu(x, 1), (M,)),
    ("tril_rect", lambda x: tnp.tril(x, -1), lambda x: np.tril(x, -1), (A,)),
    ("diag_vector", tnp.diag, np.diag, (V,)),
    ("diag_vector_k", lambda x: tnp.diag(x, 1), lambda x: np.diag(x, 1), (V,)),
    ("diag_vector_neg_k", lambda x: tnp.diag(x, -2), lambda x: np.diag(x, -2), (V,)),
    ("diag_matrix", tnp.diag, np.diag, (A,)),
    ("diag_matrix_k", lambda x: tnp.diag(x, 1), lambda x: np.diag(x, 1), (A,)),
    ("diagonal_axes", lambda x: tnp.diagonal(x, 0, 1, 2), lambda x: np.diagonal(x, 0, 1, 2),
     (RNG.standard_normal((2, 3, 3)),)),
    ("trace", tnp.trace, np.trace, (A,)),
    ("trace_offset", lambda x: tnp.trace(x, 1), lambda x: np.trace(x, 1), (A,)),
    ("tile", lambda x: tnp.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3)), (A,)),
    ("repeat_axis", lambda x: tnp.repeat(x, 2, axis=1), lambda x: np.repeat(x, 2, axis=1), (A,)),
    ("repeat_flat", lambda x: tnp.repeat(x, 3), lambda x: np.repeat(x, 3), (A,)),
    ("split", lambda x: tnp.split(x, 2, axis=1), lambda x: np.split(x, 2, axis=1), (A,)),
    ("split_indices", lambda x: tnp.split(x, [1, 3], axis=1),
     lambda x: np.split(x, [1, 3], axis=1), (A,)),
    ("flip", tnp.flip, np.flip, (A,)),
    ("flip_axis", lambda x: tnp.flip(x, 1), lambda x: np.flip(x, 1), (A,)),
    ("hstack", lambda x: tnp.hstack([x, x * 2]), lambda x: np.hstack([x, x * 2]), (A,)),
    ("vstack", lambda x: tnp.vstack([x, x * 2]), lambda x: np.vstack([x, x * 2]), (V,)),
    ("atleast_2d", tnp.atleast_2d, np.atleast_2d, (V,)),
    ("norm", tnp.linalg.norm, np.linalg.norm, (A,)),
    ("norm_axis", lambda x: tnp.linalg.norm(x, axis=1), lambda x: np.linalg.norm(x, axis=1), (A,)),
    ("norm_1", lambda x: tnp.linalg.norm(x, 1), lambda x: np.linalg.norm(x, 1), (V,)),
    ("norm_inf", lambda x: tnp.linalg.norm(x, np.inf), lambda x: np.linalg.norm(x, np.inf), (V,)),
    ("norm_fro", lambda x: tnp.linalg.norm(x, "fro"), lambda x: np.linalg.norm(x, "fro"), (A,)),
    ("linspace_traced", lambda x: tnp.linspace(x, x + 1, 5), lambda x: np.linspace(x, x + 1, 5),
     (np.float64(0.3),)),
    ("linspace_axis", lambda x: tnp.linspace(x, 2 * x, 4, axis=1),
     lambda x: np.linspace(x, 2 * x, 4, axis=1), (V,)),
    ("full_traced", lambda x: tnp.full((2, 3), x), lambda x: np.full((2, 3), x),
     (np.float64(0.3),)),
    ("take_flat", lambda x: tnp.take(x, np.array([0, 5, 11])),
     lambda x: np.take(x, np.array([0, 5, 11])), (A,)),
    ("take_neg_axis", lambda x: tnp.take(x, np.array([0, 3]), axis=-1),
     lambda x: np.take(x, np.array([0, 3]), axis=-1), (A,)),
    ("broadcast_arrays", tnp.broadcast_arrays, np.broadcast_arrays, (A, V)),
    ("array_of_tracers", lambda x: tnp.array([x[0], x[1]]), lambda x: np.array([x[0], x[1]]),
     (A,)),
    ("asarray_nested", lambda x: tnp.asarray([[x[0, 0], 1.0], [2.0, x[1, 1]]]),
     lambda x: np.asarray([[x[0, 0], 1.0], [2.0, x[1, 1]]]), (A,)),
    ("sum_initial", lambda x: tnp.sum(x, initial=2.0), lambda x: np.sum(x, initial=2.0), (A,)),
    ("max_initial", lambda x: tnp.max(x, axis=0, initial=0.5),
     lambda x: np.max(x, axis=0, initial=0.5), (A,)),
    ("argmax_keepdims", lambda x: tnp.argmax(x, keepdims=True),
     lambda x: np.argmax(x, keepdims=True), (A,)),
    ("operators_reflected", lambda x: 1.0 / (x + 3) - 2.0 ** x + 7.0 // (x + 3) + 7.0 % (x + 3),
     lambda x: 1.0 / (x + 3) - 2.0 ** x + 7.0 // (x + 3) + 7.0 % (x + 3), (A + 0.01,)),
    ("operators_pow", lambda x: x ** 2.5 + x ** x + (-x) ** 3,
     lambda x: x ** 2.5 + x ** x + (-x) ** 3, (POS,)),
    ("operators_logic", lambda x: ((x > 0) & (x < 1)) | ~(x > -1) ^ (x == x[0]),
     lambda x: ((x > 0) & (x < 1)) | ~(x > -1) ^ (x == x[0]), (A,)),
    ("abs_operator", lambda x: abs(x) * x, lambda x: abs(x) * x, (A,)),
    ("rmatmul", lambda x: V @ x.T, lambda x: V @ x.T, (A,)),
    ("methods_shape", lambda x: x.T.reshape((2, 6)).reshape(-1).flatten().ravel() * 1.0,
     lambda x: x.T.reshape((2, 6)).reshape(-1).flatten().ravel() * 1.0, (A,)),
    ("methods_transpose", lambda x: x[None].transpose(2, 0, 1) + x[None].transpose((2, 0, 1)),
     lambda x: x[None].transpose(2, 0, 1) + x[None].transpose((2, 0, 1)), (A,)),
    ("methods_reduce", lambda x: x.sum(0) + x.mean(1).sum() + x.std(axis=0, ddof=1)
     + x.max(0) * x.min() + x.prod(0) + x.cumsum(1)[:, -1].sum(),
     lambda x: x.sum(0) + x.mean(1).sum() + x.std(axis=0, ddof=1) + x.max(0) * x.min()
     + x.prod(0) + x.cumsum(1)[:, -1].sum(), (A,)),
    ("methods_misc", lambda x: x.clip(-0.5, 0.5) + x.round(1) + x.mT + x.swapaxes(0, 1)
     + x.dot(M)[:, 0] + x.trace() + x.squeeze(),
     lambda x: x.clip(-0.5, 0.5) + x.round(1) + x.mT + x.swapaxes(0, 1) + x.dot(M)[:, 0]
     + x.trace() + x.squeeze(), (M,)),
    ("methods_bool", lambda x: (x > 1).any(axis=0) | (x > -3).all(axis=0),
     lambda x: (x > 1).any(axis=0) | (x > -3).all(axis=0), (A,)),
    ("methods_arg", lambda x: x.argmax(axis=1) + x.argmin(0).sum(),
     lambda x: x.argmax(axis=1) + x.argmin(0).sum(), (A,)),
    ("iteration_and_len", lambda x: tnp.stack([r * i for i, r in enumerate(x)]) * len(x),
     lambda x: np.stack([r * i for i, r in enumerate(x)]) * len(x), (A,)),
    ("astype_method", lambda x: (x * 3).astype(np.int32).astype(float) * x,
     lambda x: (x * 3).astype(np.int32).astype(float) * x, (A + 0.01,)),
]


def _assert_tree_equal(got, want, rtol=1e-12):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_tree_equal(g, w, rtol)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("f,ref,args", [(f, r, a) for _, f, r, a in API],
                         ids=[n for n, _, _, _ in API])
def test_api_function_eager_jit_vmap(f, ref, args):
    want = ref(*args)
    _assert_tree_equal(f(*args), want)
    _assert_tree_equal(tg.jit(f)(*args), want)
    batched = [np.stack([a, a * 1.1 + 0.01]) for a in args]
    got = tg.vmap(f)(*batched)
    w0, w1 = ref(*[b[0] for b in batched]), ref(*[b[1] for b in batched])
    if isinstance(w0, (tuple, list)):
        _assert_tree_equal(list(got), [np.stack([x, y]) for x, y in zip(w0, w1)])
    else:
        _assert_tree_equal(got, np.stack([w0, w1]))


_DIFFERENTIABLE = {n for n, f, r, a in API
                   if not isinstance(r(*a), (tuple, list))
                   and np.asarray(r(*a)).dtype == np.float64}


@pytest.mark.parametrize("f,args", [(f, a) for n, f, _, a in API if n in _DIFFERENTIABLE],
                         ids=[n for n, _, _, _ in API if n in _DIFFERENTIABLE])
def test_api_function_derivatives(f, args):
    check_grads(f, args, order=1, modes=("fwd", "rev"))


def test_split_and_broadcast_arrays_derivatives():
    check_grads(lambda x: tnp.split(x, [1, 3], axis=1)[1] * 2.0, (A,), order=2)
    check_grads(lambda x, y: tnp.broadcast_arrays(x, y)[1] * x, (A, V), order=2)


# ---------------------------------------------------------------------------
# Tracers behave like arrays


def test_tracer_shape_attributes_inside_transformations():
    seen = []

    def f(x):
        seen.append((x.shape, x.ndim, x.size, x.dtype, len(x), tnp.shape(x), tnp.ndim(x),
                     tnp.size(x), tnp.size(x, 1)))
        return x * 2

    tg.jit(f)(A)
    tg.grad(lambda x: tnp.sum(f(x)))(A)
    tg.vmap(f)(np.stack([A, A]))
    want = ((3, 4), 2, 12, np.dtype(np.float64), 3, (3, 4), 2, 12, 4)
    assert seen == [want, want, want]


def test_tracer_rejects_hashing_and_len_of_scalars():
    with pytest.raises(TypeError, match="unhashable"):
        tg.jit(lambda x: {x: 1})(1.0)
    with pytest.raises(TypeError, match="len"):
        tg.jit(lambda x: len(x))(1.0)


def test_concrete_values_under_grad_and_jvp_eagerly_as_jax():
    # int(), .item() and Python control flow see concrete values under eager
    # differentiation (JAX allows them under grad); float() and tolist() would cut the
    # derivative silently, so they raise JAX's ConcretizationTypeError
    def f(x):
        n = int(x.sum().item())
        return x * n + (x[0] if n > 2 else -x[0])

    x = np.array([1.25, 2.0])
    np.testing.assert_allclose(f(x), x * 3 + 1.25)
    np.testing.assert_allclose(tg.grad(lambda a: tnp.sum(f(a)))(x), [5.0, 3.0])
    _, t = tg.jvp(f, (x,), (np.ones(2),))
    np.testing.assert_allclose(t, [4.0, 4.0])
    for convert in (lambda a: float(a[0]), lambda a: a.tolist()[1]):
        with pytest.raises(tg.ConcretizationTypeError,
                           match="Abstract tracer value encountered where concrete"):
            tg.grad(lambda a: tnp.sum(a) + convert(a))(x)


def test_numpy_reductions_dispatch_to_tracer_methods():
    # np.sum(tracer) calls tracer.sum(axis=..., dtype=..., out=None)
    def f(x):
        return (np.sum(x, axis=0) + np.mean(x) + np.max(x, axis=0) + np.min(x) + np.prod(x, 0)
                + np.std(x, axis=0) + np.cumsum(x, 0)[-1] + np.round(x, 1)[0]
                + np.clip(x, -0.1, 0.1)[1] + np.argmax(x, axis=0))

    want = f(A)
    np.testing.assert_allclose(tg.jit(f)(A), want, rtol=1e-13)
    np.testing.assert_allclose(tg.vmap(f)(np.stack([A, 2 * A]))[1], f(2 * A), rtol=1e-13)
    g = tg.grad(lambda x: np.sum(x * x))(A)
    np.testing.assert_allclose(g, 2 * A)
    with pytest.raises(NotImplementedError, match="The 'out' argument to jnp.sum"):  # JAX's
        tg.jit(lambda x: x.sum(out=np.zeros(4)))(A)


def test_var_method_under_grad_and_vmap():
    np.testing.assert_allclose(tg.vmap(lambda x: x.var())(A), A.var(axis=1), rtol=1e-13)
    np.testing.assert_allclose(tg.grad(lambda x: x.var())(A), 2 * (A - A.mean()) / A.size,
                               rtol=1e-12)


def test_var_method_under_jit():
    np.testing.assert_allclose(tg.jit(lambda x: x.var(axis=0))(A), A.var(axis=0), rtol=1e-13)


def test_at_on_numpy_array_is_functional():
    x = np.arange(5.0)
    y = tnp.at(x)[np.array([1, 1, 3])].add(1.0)
    np.testing.assert_array_equal(y, [0.0, 3.0, 2.0, 4.0, 4.0])
    np.testing.assert_array_equal(x, np.arange(5.0))
    np.testing.assert_array_equal(tnp.at(x)[::2].set(-1.0), [-1.0, 1.0, -1.0, 3.0, -1.0])
    np.testing.assert_array_equal(tnp.at(x)[1:].mul(2.0), [0.0, 2.0, 4.0, 6.0, 8.0])
    np.testing.assert_array_equal(tnp.at(x)[:].min(2.0), [0.0, 1.0, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(tnp.at(x)[:].max(2.0), [2.0, 2.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(tnp.at(x)[x > 2].set(0.0), [0.0, 1.0, 2.0, 0.0, 0.0])
    assert isinstance(y, np.ndarray)


def test_boolean_mask_indexing_outside_jit():
    mask = A > 0
    np.testing.assert_array_equal(tg.grad(lambda x: tnp.sum(x[mask] * 3.0))(A),
                                  np.where(mask, 3.0, 0.0))
    _, t = tg.jvp(lambda x: x[mask], (A,), (np.ones_like(A),))
    np.testing.assert_array_equal(t, np.ones(mask.sum()))
    # a concrete mask inside jit is fine: it is a constant, not a traced value
    np.testing.assert_array_equal(tg.jit(lambda x: x[mask])(A), A[mask])
    # masks built from values under grad are concrete too
    g = tg.grad(lambda x: tnp.sum(x[x > 0] ** 2))(A)
    np.testing.assert_allclose(g, np.where(A > 0, 2 * A, 0.0))


def test_where_with_one_argument_and_nonzero_eager():
    r = tnp.where(A > 0)
    assert len(r) == 2
    for got, want in zip(r, np.where(A > 0)):
        np.testing.assert_array_equal(got, want)


def test_constants_math():
    assert tnp.pi == math.pi and tnp.e == math.e and tnp.inf == math.inf
    assert tnp.newaxis is None
    # NumPy's scalar type, callable on traced values: equal to NumPy's, the same dtype
    assert tnp.float32 == np.float32 and np.dtype(tnp.float32) == np.float32
    assert issubclass(tnp.float32, np.float32) and isinstance(np.float32(1), tnp.float32)


def test_ndarray_isinstance_holds_for_traced_values():
    assert isinstance(np.ones(2), tnp.ndarray) and not isinstance(1.0, tnp.ndarray)
    f = lambda x: x * (2.0 if isinstance(x, tg.Array) else 0.0)  # noqa: E731
    np.testing.assert_array_equal(tg.jit(f)(np.ones(2)), [2.0, 2.0])
    assert tg.grad(f)(1.0) == 2.0
    assert tg.vmap(f)(np.ones(3)).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="isinstance checks"):
        tnp.ndarray((2,))


def test_complex_parts_are_right_eagerly_and_under_jit():
    z = np.array([1 + 2j, 3 - 1j])
    np.testing.assert_array_equal(tnp.real(z), [1.0, 3.0])
    np.testing.assert_array_equal(tnp.imag(z), [2.0, -1.0])
    np.testing.assert_array_equal(tnp.conj(z), np.conj(z))
    np.testing.assert_array_equal(tnp.imag(np.ones(2)), [0.0, 0.0])
    np.testing.assert_array_equal(tg.jit(tnp.real)(z), [1.0, 3.0])  # more in test_complex.py
