"""Eager results are tangentia arrays (a numpy.ndarray subclass with JAX's
methods): what they are, where they appear, what NumPy does with them, the
``x.at[...]`` methods with JAX's out-of-bounds semantics, and indexing an
eager result with traced indices."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia._array import ArrayImpl, CpuDevice

jax = pytest.importorskip("jax", reason="JAX is the reference for .at[] semantics")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def _is_user(r):
    return type(r) is ArrayImpl and isinstance(r, np.ndarray)


# ---------------------------------------------------------------------------
# Which results are tangentia arrays


X = np.linspace(-1.0, 1.0, 5)


@pytest.mark.parametrize("make", [
    lambda: tnp.sin(X),
    lambda: tnp.add(X, 1.0),
    lambda: tnp.sum(X),
    lambda: tnp.arange(4),
    lambda: tnp.where(X > 0, X, 0.0),
    lambda: tnp.linalg.norm(X),
    lambda: lax.fori_loop(0, 3, lambda i, c: c + 1.0, X),
    lambda: lax.scan(lambda c, x: (c + x, c), 0.0, X)[1],
    lambda: tg.grad(lambda x: tnp.sum(x ** 2))(X),
    lambda: tg.jit(tnp.cos)(X),
    lambda: tg.vmap(tnp.sin)(X),
    lambda: tg.jvp(tnp.sin, (X,), (X,))[1],
    lambda: tg.vjp(tnp.sin, X)[1](X)[0],
    lambda: tg.hessian(lambda x: tnp.sum(x ** 3))(X),
    lambda: tg.scipy.special.logsumexp(X),
    lambda: tg.nn.relu(X),
    lambda: tg.random.normal(tg.random.PRNGKey(0), (3,)),
    lambda: tg.scipy.stats.norm.logpdf(X),
    lambda: tnp.asarray(X).at[1].set(5.0),
    lambda: tg.device_put(X),
])
def test_eager_results_are_tangentia_arrays(make):
    r = make()
    assert _is_user(r), type(r)


def test_custom_rule_functions_called_eagerly():
    f = tg.custom_jvp(lambda x: tnp.sin(x))
    f.defjvp(lambda p, t: (tnp.sin(p[0]), tnp.cos(p[0]) * t[0]))
    g = tg.custom_vjp(lambda x: x * 2.0)
    g.defvjp(lambda x: (x * 2.0, None), lambda r, ct: (ct * 2.0,))
    assert _is_user(f(X)) and _is_user(g(X)) and _is_user(tg.scipy.special.expit(X))
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(f(x) + g(x)))(X), np.cos(X) + 2.0)


def test_pytree_results_are_wrapped_leaf_by_leaf():
    v, g = tg.value_and_grad(lambda x: tnp.sum(x ** 2))(X)
    assert _is_user(v) and _is_user(g)
    out = tg.jit(lambda x: {"a": x * 2, "b": (x, 3)})(X)
    assert _is_user(out["a"]) and _is_user(out["b"][0]) and out["b"][1].shape == ()
    q, r = tnp.linalg.qr(np.eye(3) + 0.1)
    assert _is_user(q) and _is_user(r)


def test_non_array_results_are_unchanged():
    assert tnp.ndim(X) == 1 and type(tnp.ndim(X)) is int
    assert tnp.shape(X) == (5,)


def test_numbers_are_unchanged():
    x = np.arange(6.0).reshape(2, 3)
    r = tnp.exp(x)
    np.testing.assert_array_equal(r, np.exp(x))
    assert r.dtype == np.float64 and r.shape == (2, 3)
    assert tnp.sin(np.float32(1.0)).dtype == np.float32


# ---------------------------------------------------------------------------
# Inside transformations: plain ndarrays only


def test_internal_values_stay_plain():
    seen = []

    @tg.custom_vjp
    def f(x):
        return tnp.sin(x)

    def fwd(x):
        return tnp.sin(x), tnp.cos(x)

    def bwd(res, g):
        seen.append((type(res), type(g)))
        return (res * g,)

    f.defvjp(fwd, bwd)
    g = tg.grad(lambda x: tnp.sum(f(x)))(tnp.asarray(X))
    np.testing.assert_allclose(g, np.cos(X))
    assert seen == [(np.ndarray, np.ndarray)]


def test_closed_over_results_enter_programs_as_plain_ndarrays():
    c = tnp.arange(3.0)
    lowered = tg.jit(lambda y: y * c).lower(1.0)
    assert [type(v) for v in lowered.consts] == [np.ndarray]
    np.testing.assert_array_equal(tg.jit(lambda y: y * c)(2.0), [0.0, 2.0, 4.0])


def test_results_passed_back_in_take_the_same_paths():
    f = tg.jit(lambda x: x * 2.0)
    y = f(X)
    np.testing.assert_array_equal(f(y), X * 4.0)
    assert _is_user(f(y))
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(tnp.sin(x)))(y), np.cos(2 * X))
    assert tg.make_jaxpr(lambda x: x + 1.0)(y).jaxpr.invars[0].aval.dtype == np.float64


# ---------------------------------------------------------------------------
# NumPy on tangentia arrays: behaves as on ndarrays


def test_numpy_operations():
    r = tnp.asarray(np.arange(4.0))
    assert isinstance(r + 1, np.ndarray) and float(np.sum(r)) == 6.0
    s = r[0]
    assert type(s) is np.float64  # a scalar stays a NumPy scalar
    assert type(np.asarray(r)) is np.ndarray and np.shares_memory(np.asarray(r), r)
    np.testing.assert_array_equal(np.sin(r), np.sin(np.arange(4.0)))
    assert r.sum() == 6.0 and r.reshape(2, 2).shape == (2, 2)
    assert repr(r) == "Array([0., 1., 2., 3.])" and str(r) == str(np.arange(4.0))


@pytest.mark.parametrize("dumps, loads", [(pickle.dumps, pickle.loads),
                                          (lambda x: pytest.importorskip(
                                              "cloudpickle", reason="Dask's serializer").dumps(x),
                                           pickle.loads)])
def test_pickle_round_trips(dumps, loads):
    r = tnp.linspace(0.0, 1.0, 4)
    back = loads(dumps(r))
    assert type(back) is ArrayImpl
    np.testing.assert_array_equal(back, r)
    assert loads(dumps(tnp.sin)) is tnp.sin


def test_copy():
    r = tnp.arange(3.0)
    for c in (copy.copy(r), copy.deepcopy(r), r.copy()):
        assert type(c) is ArrayImpl and not np.shares_memory(c, r)
        np.testing.assert_array_equal(c, r)


# ---------------------------------------------------------------------------
# JAX's methods


def test_device_methods_match_jax_shapes():
    r = tnp.ones((2, 3))
    j = jnp.ones((2, 3))
    assert r.block_until_ready() is r and r.copy_to_host_async() is None
    assert isinstance(r.device, CpuDevice) and str(r.device) == str(j.device) == "cpu:0"
    assert r.devices() == {r.device} and len(j.devices()) == 1
    (shard,) = r.addressable_shards
    (jshard,) = j.addressable_shards
    assert shard.index == jshard.index and shard.replica_id == jshard.replica_id == 0
    np.testing.assert_array_equal(shard.data, r)
    assert r.is_fully_addressable and r.is_ready()
    assert tg.block_until_ready(r) is r


AT_CASES = [  # (method, args, kwargs, index)
    ("set", (9.0,), {}, 2), ("set", (9.0,), {}, -1), ("set", (9.0,), {}, 7),
    ("set", (9.0,), {}, -7), ("set", (9.0,), {"mode": "clip"}, 7),
    ("set", (9.0,), {"mode": "clip"}, -7), ("set", (9.0,), {"mode": "drop"}, 7),
    ("set", (9.0,), {"wrap_negative_indices": False}, -1),
    ("set", ([7.0, 8.0, 9.0],), {}, np.array([1, 7, -7])),
    ("set", ([7.0, 8.0, 9.0],), {"mode": "clip"}, np.array([1, 7, -7])),
    ("add", ([1.0, 2.0, 4.0],), {}, np.array([1, 1, 9])),
    ("add", (1.0,), {"indices_are_sorted": True, "unique_indices": True}, slice(1, 3)),
    ("multiply", (3.0,), {}, np.array([0, 2, 2])), ("mul", (3.0,), {}, 4),
    ("subtract", (1.0,), {}, np.array([3, 3])), ("divide", (4.0,), {}, 2),
    ("power", (2.0,), {}, 3), ("power", (2.0,), {}, np.array([1, 3])),
    ("min", (-1.0,), {}, np.array([0, 4, 9])), ("max", (10.0,), {}, 9),
    ("get", (), {}, 2), ("get", (), {}, 7), ("get", (), {}, -7), ("get", (), {}, np.array([1, 7, -7])),
    ("get", (), {"mode": "fill"}, 7), ("get", (), {"mode": "fill", "fill_value": -1.0}, np.array([1, 7])),
    ("get", (), {"mode": "drop"}, -9), ("get", (), {"mode": "promise_in_bounds"}, 1),
    ("apply", (lambda v: v * 2,), {}, np.array([1, 1, 2])),
    ("apply", (lambda v: v * 2,), {}, np.array([1, 1, 7])), ("apply", (tnp.sin,), {}, 3),
]


@pytest.mark.parametrize("method, args, kwargs, index", AT_CASES)
def test_at_methods_match_jax_eager_and_traced(method, args, kwargs, index):
    x = np.arange(5.0)
    jargs = tuple(jnp.sin if a is tnp.sin else a for a in args)
    want = np.asarray(getattr(jnp.asarray(x).at[index], method)(*jargs, **kwargs))
    r = tnp.asarray(x)
    got = getattr(r.at[index], method)(*args, **kwargs)
    np.testing.assert_allclose(got, want, err_msg="eager")
    assert _is_user(got)
    np.testing.assert_array_equal(r, x)  # functional: the original is unchanged
    if not isinstance(index, slice) and not (method == "apply" and np.ndim(index)):
        traced = tg.jit(lambda i: getattr(r.at[i], method)(*args, **kwargs))(index)
        np.testing.assert_allclose(traced, want, err_msg="jit, traced index")


def test_at_on_2d_with_mixed_indices_matches_jax():
    x = np.arange(12.0).reshape(3, 4)
    idx = (np.array([0, 5]), slice(1, 3))
    want = jnp.asarray(x).at[idx].get(mode="fill", fill_value=-1.0)
    np.testing.assert_array_equal(tnp.asarray(x).at[idx].get(mode="fill", fill_value=-1.0), want)
    idx = (np.array([0, 5]), np.array([1, 2]))
    want = jnp.asarray(x).at[idx].set(-1.0)
    np.testing.assert_array_equal(tnp.asarray(x).at[idx].set(-1.0), want)
    f = tg.jit(lambda i, j: tnp.asarray(x).at[i, j].add(1.0))
    np.testing.assert_array_equal(f(np.array([0, 5]), np.array([1, 2])),
                                  jnp.asarray(x).at[idx].add(1.0))


def test_at_errors():
    r = tnp.arange(3.0)
    with pytest.raises(ValueError, match='Unknown gather mode "foo".*argument \'mode\''):
        r.at[0].set(1.0, mode="foo")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        r.at[0].set(1.0, bogus=True)
    np.testing.assert_allclose(tg.jit(lambda i: r.at[i].apply(tnp.sin))(np.array([0, 1, 1])),
                               [0.0, np.sin(np.sin(1.0)), 2.0])  # once per occurrence
    with pytest.raises(tg.ConcretizationTypeError, match="unique_indices=True"):
        tg.jit(lambda i: r.at[i].apply(tnp.sin))(np.zeros(65, int))  # too many rounds
    np.testing.assert_allclose(
        tg.jit(lambda i: r.at[i].apply(tnp.sin, unique_indices=True))(np.array([0, 2])),
        [0.0, 1.0, np.sin(2.0)])


def test_constants_inside_transformations_have_at():
    # JAX code builds arrays inside jit and updates them: tnp.zeros(n).at[i].set(v)
    f = tg.jit(lambda i, v: tnp.zeros(3).at[i].set(v))
    np.testing.assert_array_equal(f(1, 2.0), [0.0, 2.0, 0.0])
    assert float(tg.grad(lambda v: tnp.sum(tnp.zeros(3).at[1].set(v) * tnp.arange(3.0)))(
        2.0)) == 1.0
    np.testing.assert_array_equal(tg.vmap(lambda v: tnp.zeros(2).at[0].set(v))(np.ones(2)),
                                  [[1.0, 0.0], [1.0, 0.0]])


def test_at_differentiates():
    def f(x, v):
        return tnp.sum(x.at[1].set(v) ** 2)
    gx, gv = tg.grad(f, argnums=(0, 1))(np.arange(3.0), 5.0)
    np.testing.assert_allclose(gx, [0.0, 0.0, 4.0])
    assert float(gv) == 10.0
    g = tg.grad(lambda x: tnp.sum(x.at[7].add(1.0) ** 2))(np.arange(3.0))  # dropped update
    np.testing.assert_allclose(g, [0.0, 2.0, 4.0])


# ---------------------------------------------------------------------------
# Indexing an eager result with traced indices


def test_traced_index_jit_and_fori_loop():
    x = tnp.arange(10)
    assert int(tg.jit(lambda i: x[i])(3)) == 3
    assert int(lax.fori_loop(0, 10, lambda i, c: c + x[i], 0)) == 45
    assert int(tg.jit(lambda: lax.fori_loop(0, 10, lambda i, c: c + x[i], 0))()) == 45


@pytest.mark.parametrize("index", [
    lambda i: i, lambda i: -i - 1, lambda i: (i, slice(None)), lambda i: (slice(1, 3), i),
    lambda i: (i, None, 2), lambda i: (Ellipsis, i), lambda i: tnp.stack([i, i + 1]),
    lambda i: (tnp.stack([i, 0]), tnp.stack([1, i])),
])
def test_traced_index_matches_traced_value(index):
    base = np.arange(24.0).reshape(4, 6)
    r = tnp.asarray(base)
    on_result = tg.jit(lambda i: r[index(i)])(1)
    on_traced = tg.jit(lambda a, i: a[index(i)])(base, 1)
    np.testing.assert_array_equal(on_result, on_traced)
    np.testing.assert_array_equal(on_result, base[index(1)])


def test_traced_index_under_vmap_and_grad():
    x = tnp.linspace(0.0, 1.0, 5)
    np.testing.assert_array_equal(tg.vmap(lambda i: x[i])(np.array([4, 0, 2])), x[[4, 0, 2]])
    g = tg.grad(lambda s, i: s * x[i])(2.0, 3)
    assert float(g) == float(x[3])
    # a static index under a transformation is plain NumPy indexing of a constant
    np.testing.assert_array_equal(tg.jit(lambda y: y + x[1:3])(1.0), x[1:3] + 1.0)


def test_plain_ndarray_cannot_be_indexed_by_a_tracer():
    x = np.arange(10)  # a plain NumPy array: NumPy's own __getitem__ sees the tracer
    with pytest.raises(tg.TracerArrayConversionError, match="tnp"):
        tg.jit(lambda i: x[i])(3)


def test_eager_index_errors_are_numpys():
    x = tnp.arange(3)
    with pytest.raises(IndexError):
        x[5]
    with pytest.raises(IndexError):
        x["a"]
