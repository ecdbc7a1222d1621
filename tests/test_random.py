"""Tests for tangentia.random (functional PRNG mirroring jax.random)."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.random as tr

KEY = tr.PRNGKey(0)


# ---------------------------------------------------------------------------
# Keys


def test_prngkey_layout():
    assert np.array_equal(tr.PRNGKey(0), np.array([0, 0], np.uint32))
    assert np.array_equal(tr.PRNGKey(42), np.array([0, 42], np.uint32))
    assert np.array_equal(tr.PRNGKey(2 ** 32 + 5), np.array([1, 5], np.uint32))
    assert tr.PRNGKey(3).dtype == np.uint32 and tr.PRNGKey(3).shape == (2,)
    assert np.array_equal(tr.key_data(tr.key(7)), tr.PRNGKey(7))
    assert np.array_equal(tr.key_data(tr.key(7)), tr.PRNGKey(7))
    assert np.array_equal(tg.jit(tr.PRNGKey)(2 ** 32 + 5), tr.PRNGKey(2 ** 32 + 5))


def test_split_and_fold_in():
    ks = tr.split(KEY)
    assert ks.shape == (2, 2) and ks.dtype == np.uint32
    assert tr.split(KEY, 5).shape == (5, 2)
    assert np.array_equal(tr.split(KEY, 3), tr.split(KEY, 3))
    assert len({tuple(k) for k in tr.split(KEY, 50)}) == 50
    assert not np.array_equal(tr.fold_in(KEY, 1), tr.fold_in(KEY, 2))
    assert np.array_equal(tr.fold_in(KEY, 1), tr.fold_in(KEY, 1))
    assert not np.array_equal(tr.fold_in(KEY, 0), KEY)
    f = tg.jit(tr.fold_in)
    for d in (0, 1, 12345):
        assert np.array_equal(f(KEY, d), tr.fold_in(KEY, d))
    batched = tg.vmap(tr.fold_in, in_axes=(None, 0))(KEY, np.arange(4))
    assert np.array_equal(batched, np.stack([tr.fold_in(KEY, i) for i in range(4)]))


def test_determinism_and_independence():
    a = tr.normal(KEY, (100,))
    assert np.array_equal(a, tr.normal(KEY, (100,)))
    k1, k2 = tr.split(KEY)
    assert not np.allclose(tr.normal(k1, (100,)), tr.normal(k2, (100,)))
    assert not np.allclose(tr.normal(tr.PRNGKey(1), (100,)), a)
    assert abs(np.corrcoef(tr.normal(k1, (5000,)), tr.normal(k2, (5000,)))[0, 1]) < 0.05


# ---------------------------------------------------------------------------
# Shapes and dtypes


@pytest.mark.parametrize("fn", [tr.uniform, tr.normal, tr.gumbel, tr.exponential, tr.laplace,
                                tr.logistic, tr.cauchy])
def test_float_shapes_dtypes(fn):
    x = fn(KEY, (3, 4))
    assert isinstance(x, np.ndarray) and x.shape == (3, 4) and x.dtype == np.float64
    assert fn(KEY).shape == ()
    y = fn(KEY, (5,), np.float32)
    assert y.dtype == np.float32 and y.shape == (5,)


def test_discrete_shapes_dtypes():
    assert tr.randint(KEY, (3,), 0, 5).dtype == np.int64
    assert tr.randint(KEY, (3,), 0, 5, dtype=np.int32).dtype == np.int32
    assert tr.bernoulli(KEY, 0.5, (2, 3)).dtype == np.bool_
    assert tr.bernoulli(KEY, np.full((4,), 0.3)).shape == (4,)
    assert tr.bits(KEY, (3,)).dtype == np.uint64      # JAX's default with x64
    assert tr.bits(KEY, (3,), np.uint32).dtype == np.uint32
    assert tr.categorical(KEY, np.zeros((2, 5))).shape == (2,)
    assert tr.categorical(KEY, np.zeros((2, 5)), axis=0).shape == (5,)
    assert tr.categorical(KEY, np.zeros((2, 5)), shape=(7, 2)).shape == (7, 2)
    assert tr.choice(KEY, 10, (2, 3)).shape == (2, 3)
    assert tr.choice(KEY, np.ones((6, 2)), (4,)).shape == (4, 2)
    assert tr.truncated_normal(KEY, -1.0, 1.0, (3,)).shape == (3,)
    assert tr.truncated_normal(KEY, np.zeros(4), 1.0).shape == (4,)
    assert tr.multivariate_normal(KEY, np.zeros(3), np.eye(3), (5,)).shape == (5, 3)
    assert tr.uniform(KEY, (2, 3), minval=np.zeros(3)).shape == (2, 3)


# ---------------------------------------------------------------------------
# Transformations


def _all_samplers(k):
    return [tr.uniform(k, (3,)), tr.normal(k, (3,)), tr.randint(k, (3,), -5, 5),
            tr.bernoulli(k, 0.5, (3,)), tr.categorical(k, tnp.zeros(4), shape=(3,)),
            tr.gumbel(k, (3,)), tr.exponential(k, (3,)), tr.permutation(k, 6),
            tr.permutation(k, tnp.arange(6.0)), tr.choice(k, 7, (3,)),
            tr.choice(k, 7, (3,), replace=False), tr.choice(k, 4, (3,), p=tnp.ones(4) / 4),
            tr.choice(k, 4, (3,), replace=False, p=tnp.ones(4) / 4),
            tr.truncated_normal(k, -1.0, 2.0, (3,)),
            tr.multivariate_normal(k, tnp.zeros(2), tnp.eye(2), (3,)),
            tr.split(k, 3), tr.fold_in(k, 5), tr.bits(k, (3,))]


def test_eager_equals_jit_bit_exact():
    eager = _all_samplers(KEY)
    jitted = tg.jit(_all_samplers)(KEY)
    assert len(eager) == len(jitted)
    for a, b in zip(eager, jitted):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_vmap_over_keys_equals_loop():
    keys = tr.split(KEY, 4)
    out = tg.vmap(_all_samplers)(keys)
    for i, k in enumerate(keys):
        ref = _all_samplers(k)
        for a, b in zip(out, ref):
            assert np.array_equal(a[i], b)
    # Different keys give different streams.
    assert not np.allclose(out[1][0], out[1][1])
    # vmap under jit, and nested vmap.
    jv = tg.jit(tg.vmap(lambda k: tr.normal(k, (2,))))(keys)
    assert np.array_equal(jv, np.stack([tr.normal(k, (2,)) for k in keys]))
    grid = tr.split(KEY, 6).reshape(2, 3, 2)
    nested = tg.vmap(tg.vmap(lambda k: tr.uniform(k, (2,))))(grid)
    assert np.array_equal(nested[1, 2], tr.uniform(grid[1, 2], (2,)))


def test_vmap_over_parameters_only():
    mus = np.arange(3.0)
    out = tg.vmap(lambda m: m + tr.normal(KEY, (2,)))(mus)
    assert np.allclose(out, mus[:, None] + tr.normal(KEY, (2,))[None])


def test_grad_wrt_float_parameters():
    z = tr.normal(KEY, (5,))

    def f(mu, sigma):
        return tnp.sum(mu + sigma * tr.normal(KEY, (5,)))

    gmu, gs = tg.grad(f, argnums=(0, 1))(1.0, 2.0)
    assert np.allclose(gmu, 5.0) and np.allclose(gs, z.sum())
    gmu2, gs2 = tg.jit(tg.grad(f, argnums=(0, 1)))(1.0, 2.0)
    assert np.allclose(gmu2, 5.0) and np.allclose(gs2, z.sum())
    u = tr.uniform(KEY, (4,))
    g = tg.grad(lambda a, b: tnp.sum(tr.uniform(KEY, (4,), minval=a, maxval=b)), argnums=(0, 1))(1.0, 3.0)
    assert np.allclose(g[0], np.sum(1 - u)) and np.allclose(g[1], np.sum(u))
    # Differentiating through code that also uses the key is fine (key gets a zero tangent).
    h = tg.grad(lambda s, k: s * tr.normal(k, ()))(1.0, KEY)
    assert np.allclose(h, tr.normal(KEY, ()))


# ---------------------------------------------------------------------------
# Statistics


def test_normal_and_uniform_moments():
    n = 20000
    z = tr.normal(KEY, (n,))
    assert abs(z.mean()) < 0.04 and abs(z.var() - 1) < 0.05
    u = tr.uniform(tr.PRNGKey(1), (n,))
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    v = tr.uniform(tr.PRNGKey(2), (n,), minval=-2.0, maxval=4.0)
    assert v.min() >= -2 and v.max() < 4 and abs(v.mean() - 1) < 0.06
    e = tr.exponential(KEY, (n,))
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.04
    g = tr.gumbel(KEY, (n,))
    assert abs(g.mean() - np.euler_gamma) < 0.04
    t = tr.truncated_normal(KEY, -0.5, 1.0, (n,))
    assert t.min() >= -0.5 and t.max() <= 1.0
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    m = tr.multivariate_normal(KEY, np.array([1.0, -1.0]), cov, (n,))
    assert np.allclose(m.mean(0), [1, -1], atol=0.05) and np.allclose(np.cov(m.T), cov, atol=0.08)
    z32 = tr.normal(KEY, (n,), np.float32)
    assert abs(z32.mean()) < 0.04 and abs(z32.var() - 1) < 0.05


def test_randint_range_and_coverage():
    r = tr.randint(KEY, (20000,), -3, 4)
    assert r.min() == -3 and r.max() == 3
    counts = np.bincount(r + 3)
    assert np.all(np.abs(counts / 20000 - 1 / 7) < 0.015)
    assert np.all(tr.randint(KEY, (10,), 5, 5) == 5)
    big = tr.randint(KEY, (1000,), 0, 2 ** 40)
    assert big.min() >= 0 and big.max() < 2 ** 40 and big.max() > 2 ** 39
    per_elem = tr.randint(KEY, (3, 1000), np.array([[0], [10], [100]]), np.array([[2], [20], [200]]))
    assert per_elem[0].max() < 2 and per_elem[1].min() >= 10 and per_elem[2].max() < 200


def test_bernoulli_frequency():
    b = tr.bernoulli(KEY, 0.3, (20000,))
    assert abs(b.mean() - 0.3) < 0.015


def test_categorical_frequencies():
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    s = tr.categorical(KEY, logits, shape=(20000,))
    assert s.dtype.kind == "i"
    freq = np.bincount(s, minlength=4) / 20000
    assert np.allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.015)
    logits2 = np.array([[0.0, 0.0, 10.0], [10.0, 0.0, 0.0]])
    s2 = tr.categorical(KEY, logits2, shape=(500, 2))
    assert (s2[:, 0] == 2).mean() > 0.99 and (s2[:, 1] == 0).mean() > 0.99


def test_permutation_and_choice():
    p = tr.permutation(KEY, 100)
    assert sorted(p.tolist()) == list(range(100)) and not np.array_equal(p, np.arange(100))
    x = np.arange(12.0).reshape(3, 4)
    px = tr.permutation(KEY, x, axis=1)
    assert np.array_equal(np.sort(px, axis=1), x)
    assert np.array_equal(px[:, np.argsort(px[0])], x)  # columns moved together
    c = tr.choice(KEY, 10, (10,), replace=False)
    assert sorted(c.tolist()) == list(range(10))
    pw = np.array([0.0, 0.5, 0.0, 0.5])
    cw = tr.choice(KEY, 4, (2000,), p=pw)
    assert set(np.unique(cw).tolist()) == {1, 3}
    cnr = tr.choice(KEY, 4, (2,), replace=False, p=pw)
    assert sorted(cnr.tolist()) == [1, 3]
    with pytest.raises(ValueError, match="choice"):
        tr.choice(KEY, 3, (5,), replace=False)


# ---------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("bad", [np.array([1, 2, 3], np.uint32), np.array([1, 2], np.int64),
                                 np.zeros(2), 0])
def test_bad_key_errors(bad):
    with pytest.raises(TypeError, match=r"normal: argument 'key'"):
        tr.normal(bad, (3,))
    with pytest.raises(TypeError, match=r"split: argument 'key'"):
        tr.split(bad)


def test_other_errors():
    with pytest.raises(TypeError, match=r"randint: argument 'minval'"):
        tr.randint(KEY, (3,), 0.5, 3)
    with pytest.raises(TypeError, match=r"fold_in: argument 'data'"):
        tr.fold_in(KEY, 1.5j)
    # a float is truncated, as by JAX's jnp.uint32(data) (test_random_keys compares with JAX)
    np.testing.assert_array_equal(tr.fold_in(KEY, 1.5), tr.fold_in(KEY, 1))
    with pytest.raises(TypeError, match=r"PRNGKey: argument 'seed'"):
        tr.PRNGKey(np.float64(1.0))
    with pytest.raises(TypeError, match="uniform: argument 'dtype'"):
        tr.uniform(KEY, (2,), dtype=np.int32)


def test_zero_size_shapes_draw_nothing():
    # JAX returns empty arrays of the requested shape; so do eager and jitted draws here.
    for shape in [(0,), (0, 3), (2, 0)]:
        for fn in (tr.uniform, tr.normal):
            out = fn(KEY, shape)
            assert out.shape == shape and out.dtype == np.float64
            assert tg.jit(lambda k: fn(k, shape))(KEY).shape == shape
    assert tg.vmap(lambda k: tr.uniform(k, (0,)))(tr.split(KEY, 3)).shape == (3, 0)
