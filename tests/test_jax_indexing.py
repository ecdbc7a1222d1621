"""Indexing as JAX users write it: regressions found by running JAX's
lax_numpy_indexing_test against tangentia (our cases, checked against NumPy,
against eager evaluation, and against finite differences)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.test_util import check_grads

X = np.arange(60.0).reshape(3, 4, 5)


def test_list_of_traced_integers_is_an_index_array():
    f = tg.jit(lambda x, i, j: (x[[i, j]], x[([i, j],)], x[[[i], [j]], 1]))
    got = f(X, 2, 0)
    want = (X[[2, 0]], X[([2, 0],)], X[[[2], [0]], 1])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


SCALAR_BOOL_INDICES = [
    (True,), (False,), (Ellipsis, True), (0, slice(0, 2), True), (slice(0, 2), 0, False),
    (slice(0, 2), np.array([0, 2]), True), (np.array([1, 0]), slice(None), True),
    (True, slice(None), np.array(True), slice(None)), (None, True, 1),
]


@pytest.mark.parametrize("idx", SCALAR_BOOL_INDICES, ids=str)
def test_scalar_booleans_index_as_numpy(idx):
    np.testing.assert_array_equal(tg.jit(lambda x: x[idx])(X), X[idx])
    np.testing.assert_array_equal(tnp.asarray(X).at[idx].get(), X[idx])


@pytest.mark.parametrize("idx", SCALAR_BOOL_INDICES, ids=str)
def test_scalar_booleans_update_as_numpy(idx):
    y = -np.arange(X[idx].size, dtype=float).reshape(X[idx].shape)
    want = X.copy()
    want[idx] = y
    got = tg.jit(lambda x, y: x.at[idx].set(y))(X, y)
    assert got.shape == X.shape
    np.testing.assert_array_equal(got, want)
    want = X.copy()
    want[idx] += 1.0
    np.testing.assert_array_equal(tnp.asarray(X).at[idx].add(1.0), want)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([True, False, 0, -1, None, Ellipsis, slice(None, None, -1),
                                 slice(1, 3), np.array([0, 1, 0])]), max_size=4))
def test_scalar_booleans_mixed_with_other_entries_match_numpy(entries):
    idx = tuple(entries)
    try:
        want = X[idx]
    except IndexError:
        with pytest.raises(IndexError):
            tg.jit(lambda x: x[idx])(X)
        return
    np.testing.assert_array_equal(tg.jit(lambda x: x[idx])(X), want)


def test_traced_scalar_boolean_index_names_the_problem():
    with pytest.raises(tg.errors.NonConcreteBooleanIndexError, match="must be concrete"):
        tg.jit(lambda x, b: x[b])(X, True)


def test_traced_slice_bounds_raise_jax_index_error():
    with pytest.raises(IndexError, match="^Array slice indices must have static start/stop/step"
                                         ".*dynamic_slice"):
        tg.jit(lambda x, i: x[i:i + 2])(X, 1)
    with pytest.raises(TypeError, match="slice indices must be integers"):
        tnp.asarray(X)[1.5:3]


@pytest.mark.parametrize("traced", [False, True])
def test_bad_index_types_raise_jax_errors(traced):
    x = tnp.zeros((2, 2))
    get = (lambda i: tg.jit(lambda a: a[i])(x)) if traced else (lambda i: x[i])
    for idx in [0.0, (0, 0.0), (np.arange(2), 1.0), (np.arange(2), 1 + 1j)]:
        with pytest.raises(TypeError, match="^Indexer must have integer or boolean type, got "
                                            "indexer with type"):
            get(idx)
        with pytest.raises(IndexError):  # NumPy's error class too
            get(idx)
    with pytest.raises(TypeError, match="^JAX does not support string indexing"):
        get((slice(None), "abc"))
    with pytest.raises(TypeError, match="^Indexer must have integer"):
        tnp.zeros(2).at[0.0].add(1.0)


def test_too_many_indices_and_mask_mismatch_use_jax_wording():
    with pytest.raises(IndexError, match="^Too many indices: 0-dimensional array indexed with "
                                         r"1 regular index\."):
        tnp.array(1.0)[0]
    with pytest.raises(IndexError, match="^Too many indices: 1-dimensional array indexed with "
                                         r"2 regular indices\..*\(3,\)"):
        tg.jit(lambda x: x[:, 1])(np.zeros(3))
    with pytest.raises(IndexError, match=r"^boolean index did not match shape of indexed array "
                                         r"in index 1: got \(2,\), expected \(4,\)"):
        tnp.asarray(X)[0, np.array([True, False])]
    np.testing.assert_array_equal(tnp.asarray(X)[..., np.array([1, 0, 0, 1, 1], bool)],
                                  X[..., np.array([1, 0, 0, 1, 1], bool)])


def test_integer_index_into_an_empty_axis():
    x = tnp.ones((2, 0))
    assert (x[0, :].shape, x[0, 1:3:2].shape, x[0, None].shape) == ((0,), (0,), (1, 0))
    with pytest.raises(IndexError, match="^index is out of bounds for axis 1 with size 0"):
        x[0, 0]
    with pytest.raises(IndexError, match="^index is out of bounds for axis 1 with size 0"):
        tg.jit(lambda i: x[0, i])(0)
    empty = np.array([], np.int32)  # taking no entry of an empty axis is fine
    assert tg.jit(lambda x, i: x[i])(np.zeros(0), empty).shape == (0,)
    assert tnp.zeros((0, 2))[empty, 1].shape == (0,)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 2"):
        x[3]  # a non-empty axis keeps NumPy's error (docs/coming_from_jax.md)


def test_divide_casts_updates_to_the_array_dtype_first():
    x = np.random.default_rng(0).normal(size=6)
    y = np.float32(3.3)
    want = x.copy()
    want[1:4] /= y.astype(np.float64)
    np.testing.assert_array_equal(tnp.asarray(x).at[1:4].divide(y), want)
    np.testing.assert_array_equal(tg.jit(lambda x: x.at[1:4].divide(y))(x), want)
    ints = np.arange(4)
    assert tnp.asarray(ints).at[1].divide(2).dtype == np.float64  # a true division, as JAX
    np.testing.assert_allclose(tnp.asarray(x).at[np.array([1, 1])].divide(2.0)[1], x[1] / 4)


@pytest.mark.parametrize("fn", ["sin", "square", "negative"])
def test_apply_with_traced_repeated_indices_applies_once_per_occurrence(fn):
    x = np.linspace(0.1, 1.0, 6)
    idx = np.array([0, 3, 3, -1, 3, 2])
    want = x.copy()
    getattr(np, fn).at(want, idx)
    f = tg.jit(lambda x, i: x.at[i].apply(getattr(tnp, fn)))
    np.testing.assert_allclose(f(x, idx), want, rtol=1e-15)
    np.testing.assert_allclose(tnp.asarray(x).at[idx].apply(getattr(tnp, fn)), want, rtol=1e-15)
    want = x.copy()
    getattr(np, fn).at(want, [1, 1, 1, 1])
    np.testing.assert_allclose(f(x, np.array([7, 1, 1, 1, 9, 1])), want,  # 7, 9: dropped
                               rtol=1e-15)


def test_multiply_derivative_needs_unique_indices():
    x, z = np.ones(10), np.linspace(1.0, 2.0, 3)
    f = lambda x, z, i: tnp.at(x)[i].multiply(z)  # noqa: E731
    with pytest.raises(NotImplementedError, match="^scatter_mul gradients are only implemented "
                                                  "if `unique_indices=True`"):
        tg.jvp(lambda x, z: f(x, z, np.array([1, 4, 1])), (x, z), (x, z))
    check_grads(lambda x, z: f(x, z, np.array([1, 4, 7])), (x, z), order=2)
    check_grads(lambda x: f(x, z, np.array([1, 1, 7])), (x,), order=2)  # x only: fine


def _segment_reference(ufunc, identity, data, ids, n):
    out = np.full((n,) + data.shape[1:], identity, data.dtype)
    for i, row in zip(ids, data):
        if 0 <= i < n:
            out[i] = ufunc(out[i], row)
    return out


SEGMENT_OPS = [("segment_sum", np.add, 0), ("segment_prod", np.multiply, 1),
               ("segment_min", np.minimum, np.inf), ("segment_max", np.maximum, -np.inf)]


@pytest.mark.parametrize("name,ufunc,identity,dtype", [
    op + (dt,) for op in SEGMENT_OPS for dt in (np.float64, np.int32, np.bool_)
    if dt != np.bool_ or op[0] in ("segment_min", "segment_max")])  # JAX's boolean ones
def test_segment_reductions_match_a_loop(name, ufunc, identity, dtype):
    rng = np.random.default_rng(1)
    data = (rng.normal(size=(7, 3)) * 3).astype(dtype)
    ids = np.array([2, 0, 2, -1, 5, 0, 1])   # -1 and 5 (with 4 segments) are dropped
    if dtype != np.float64:
        identity = {np.inf: np.iinfo(np.int32).max, -np.inf: np.iinfo(np.int32).min}.get(
            identity, identity) if dtype == np.int32 else identity == np.inf
    op = getattr(tg.ops, name)
    want = _segment_reference(ufunc, identity, data, ids, 4)
    np.testing.assert_array_equal(op(data, ids, num_segments=4), want)
    np.testing.assert_array_equal(tg.jit(lambda d, i: op(d, i, num_segments=4))(data, ids), want)
    np.testing.assert_array_equal(op(data, ids), _segment_reference(ufunc, identity, data, ids, 6))


def test_segment_sum_derivatives_and_errors():
    data, ids = np.linspace(1.0, 2.0, 5), np.array([1, 0, 1, 3, 9])
    check_grads(lambda d: tg.ops.segment_sum(d, ids, 4) ** 2, (data,), order=2)
    check_grads(lambda d: tg.ops.segment_prod(d, np.array([1, 0, 2, 3, 9]), 4), (data,),
                order=1)
    np.testing.assert_array_equal(tg.grad(lambda d: tg.ops.segment_sum(d, ids, 4).sum())(data),
                                  [1.0, 1.0, 1.0, 1.0, 0.0])   # the dropped row: 0
    with pytest.raises(tg.ConcretizationTypeError, match="segment_sum"):
        tg.jit(lambda d, i: tg.ops.segment_sum(d, i))(data, ids)   # num_segments unknown
    with pytest.raises(ValueError, match="segment_ids"):
        tg.ops.segment_sum(data, ids[:3], 4)
