"""Typed PRNG keys (``tangentia.random.key``: JAX's ``key<fry>`` arrays) against JAX's.

Every number is compared with ``jax.random`` (x64) for the same seed: the data of a typed
key, what ``split``/``fold_in`` give, the samples drawn from typed keys; and each
transformation against its definition (vmap against a loop, jit against eager, both jit
backends, jvp's tangents are float0, scan/cond/while carries)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.random as tr
from tangentia import dtypes

jax.config.update("jax_enable_x64", True)


def data(k):
    return np.asarray(tr.key_data(k))


def jdata(k):
    return np.asarray(jax.random.key_data(k))


SEEDS = [0, 42, 2 ** 40 + 3, -2, np.uint32(5), np.int32(-2)]


@pytest.mark.parametrize("seed", SEEDS, ids=repr)
def test_key_data_as_jax(seed):
    k = tr.key(seed)
    assert isinstance(k, np.ndarray) and isinstance(k, tg.Array)
    assert k.shape == () and k.ndim == 0 and k.dtype == dtypes.key_fry
    np.testing.assert_array_equal(data(k), jdata(jax.random.key(seed)))
    assert data(k).dtype == np.uint32 and data(k).shape == (2,)
    np.testing.assert_array_equal(data(k), tr.PRNGKey(seed))


def test_key_dtype_as_jax():
    k = tr.key(0)
    assert tnp.issubdtype(k.dtype, tg.dtypes.prng_key)
    assert tnp.issubdtype(k.dtype, tg.dtypes.extended)
    assert jnp.issubdtype(jax.random.key(0).dtype, jax.dtypes.prng_key)
    assert not tnp.issubdtype(k.dtype, np.integer) and not tnp.issubdtype(k.dtype, np.floating)
    assert not tnp.issubdtype(np.uint32, tg.dtypes.prng_key)
    assert k.dtype != np.uint32
    assert tr.key_dtype() == k.dtype
    assert str(tg.typeof(k)) == str(jax.typeof(jax.random.key(0))) == "key<fry>[]"
    assert tr.key_impl(k) == "threefry2x32" == str(tr.key_impl(k))
    jaxpr = str(tg.make_jaxpr(lambda k: tr.split(k))(k))
    assert "key<fry>[]" in jaxpr and "key<fry>[2]" in jaxpr


@pytest.mark.parametrize("num", [2, 3, (2, 3), ()], ids=repr)
def test_split_as_jax(num):
    ks = tr.split(tr.key(7), num)
    jks = jax.random.split(jax.random.key(7), num)
    assert ks.shape == jks.shape and ks.dtype == dtypes.key_fry
    np.testing.assert_array_equal(data(ks), jdata(jks))
    # the raw key gives the same data, raw
    np.testing.assert_array_equal(tr.split(tr.PRNGKey(7), num), data(ks))


@pytest.mark.parametrize("d", [0, 5, 2 ** 31 + 1, np.uint32(9), np.int32(-3)], ids=repr)
def test_fold_in_as_jax(d):
    k = tr.fold_in(tr.key(3), d)
    assert k.shape == () and k.dtype == dtypes.key_fry
    np.testing.assert_array_equal(data(k), jdata(jax.random.fold_in(jax.random.key(3), d)))
    np.testing.assert_array_equal(tr.fold_in(tr.PRNGKey(3), d), data(k))


SAMPLERS = {
    "normal": lambda m, k: m.normal(k, (3,)),
    "uniform": lambda m, k: m.uniform(k, (2, 2), minval=-1.0, maxval=2.0),
    "randint": lambda m, k: m.randint(k, (4,), 0, 100),
    "bits": lambda m, k: m.bits(k, (3,), np.uint32),
    "bernoulli": lambda m, k: m.bernoulli(k, 0.3, (5,)),
    "permutation": lambda m, k: m.permutation(k, 6),
    "choice": lambda m, k: m.choice(k, 10, (3,), replace=False),
    "exponential": lambda m, k: m.exponential(k, (3,)),
    "categorical": lambda m, k: m.categorical(k, np.log(np.array([0.2, 0.3, 0.5])), shape=(4,)),
    "truncated_normal": lambda m, k: m.truncated_normal(k, -1.0, 1.0, (3,)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_samplers_take_typed_keys(name):
    f = SAMPLERS[name]
    typed = np.asarray(f(tr, tr.key(11)))
    np.testing.assert_array_equal(typed, np.asarray(f(tr, tr.PRNGKey(11))))
    np.testing.assert_allclose(typed, np.asarray(f(jax.random, jax.random.key(11))),
                               rtol=1e-13, atol=0)


def test_wrap_key_data_as_jax():
    raw = np.array([[1, 2], [3, 4], [5, 6]], np.uint32)
    ks = tr.wrap_key_data(raw)
    assert ks.shape == (3,) and ks.dtype == dtypes.key_fry
    np.testing.assert_array_equal(data(ks), raw)
    np.testing.assert_array_equal(tr.normal(ks[1], (2,)),
                                  jax.random.normal(jax.random.wrap_key_data(raw)[1], (2,)))
    # a raw key's data is itself
    np.testing.assert_array_equal(tr.key_data(tr.PRNGKey(4)), tr.PRNGKey(4))


def test_errors_as_jax():
    ks = tr.split(tr.key(0), 3)
    for fn in (lambda: tr.normal(ks), lambda: tr.split(ks), lambda: tr.fold_in(ks, 1)):
        with pytest.raises(ValueError, match=r"accepts a single key, but was given a key array "
                                             r"of shape \(3,\) != \(\)\. Use jax.vmap"):
            fn()
    with pytest.raises(TypeError, match="JAX encountered invalid PRNG key data: expected "
                                        "key_data.shape to end with"):
        tr.wrap_key_data(np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match="JAX encountered invalid PRNG key data: expected "
                                        "key_data.dtype = uint32; got dtype=float32"):
        tr.wrap_key_data(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="key accepts a scalar seed, but was given an array"):
        tr.key(np.arange(3))
    with pytest.raises(TypeError, match="key accepts a scalar seed, but was given a PRNG key"):
        tr.key(tr.key(0))
    # no arithmetic on keys: JAX's TypeError, eagerly, under jit and vmap
    k, jk = tr.key(0), jax.random.key(0)
    for m, kk in ((tnp, k), (jnp, jk)):
        with pytest.raises(TypeError, match=r"add does not accept dtype key<fry> at position 0\."):
            m.add(kk, kk)
        with pytest.raises(TypeError, match=r"multiply does not accept dtypes key<fry>, int64\."
                           if m is jnp else r"mul does not accept dtypes key<fry>, int64\."):
            m.multiply(kk, 2)
    with pytest.raises(TypeError, match=r"add does not accept dtype key<fry> at position 0\."):
        tg.jit(lambda a, b: a + b)(k, k)
    with pytest.raises(TypeError, match=r"sin does not accept dtype key<fry> at position 0\."):
        tg.vmap(tnp.sin)(tr.split(k, 2))
    with pytest.raises(TypeError, match=r"add does not accept dtypes key<fry>, int64\."):
        tg.vmap(lambda a: a + 1)(tr.split(k, 2))
    with pytest.raises(TypeError, match="equal does not accept dtypes key<fry>"):
        tnp.equal(tr.key(0), 1)


def test_structural_operations_as_jax():
    ks, jks = tr.split(tr.key(5), 6), jax.random.split(jax.random.key(5), 6)
    cases = [
        (lambda m, k: m.reshape(k, (2, 3)), None),
        (lambda m, k: k[1:4], None),
        (lambda m, k: k[::-1], None),
        (lambda m, k: m.broadcast_to(k[2], (2, 3)), None),
        (lambda m, k: m.concatenate([k, k[:2]]), None),
        (lambda m, k: m.stack([k, k]), None),
        (lambda m, k: m.where(np.array([True, False] * 3), k, k[::-1]), None),
        (lambda m, k: m.reshape(k, (3, 2)).T, None),
        (lambda m, k: m.expand_dims(k, 0), None),
    ]
    for fn, _ in cases:
        out, jout = fn(tnp, ks), fn(jnp, jks)
        assert out.shape == jout.shape and out.dtype == dtypes.key_fry
        np.testing.assert_array_equal(data(out), jdata(jout))


def test_equality_as_jax():
    ks, jks = tr.split(tr.key(1), 4), jax.random.split(jax.random.key(1), 4)
    for fn in (lambda m, k: m.equal(k, k[1]), lambda m, k: m.not_equal(k, k[::-1]),
               lambda m, k: k == k[2], lambda m, k: k != k,
               lambda m, k: m.array_equal(k, k), lambda m, k: m.array_equal(k, k[::-1])):
        np.testing.assert_array_equal(np.asarray(fn(tnp, ks)), np.asarray(fn(jnp, jks)))
        np.testing.assert_array_equal(np.asarray(tg.jit(lambda k: fn(tnp, k))(ks)),
                                      np.asarray(fn(jnp, jks)))
    out = tg.vmap(lambda a, b: tnp.equal(a, b), (0, None))(ks, ks[2])
    np.testing.assert_array_equal(out, [False, False, True, False])


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_comparisons_of_keys_are_the_primitives_as_jax(backend):
    """``==``/``!=``/``equal``/``not_equal`` of keys compare their data (``eq``/``ne`` of
    ``random_unwrap``'s words, reduced; JAX's lowering unwraps them too): the same values
    as JAX eagerly, under ``jit`` and ``vmap`` (against a loop), keys broadcast as arrays."""
    ks = tnp.reshape(tr.split(tr.key(5), 6), (2, 3))
    jks = jnp.reshape(jax.random.split(jax.random.key(5), 6), (2, 3))
    ks = tnp.where(np.array([[True, False, True], [False, True, True]]), ks, ks[0, 0])
    jks = jnp.where(jnp.array([[True, False, True], [False, True, True]]), jks, jks[0, 0])
    fns = [lambda m, l, a, b: a == b, lambda m, l, a, b: a != b,
           lambda m, l, a, b: m.equal(a, b), lambda m, l, a, b: m.not_equal(a, b)]
    for fn in fns:
        for a, b, ja, jb in ((ks, ks[0, 0], jks, jks[0, 0]), (ks, ks[::-1], jks, jks[::-1]),
                             (ks[:1], ks, jks[:1], jks)):
            want = np.asarray(fn(jnp, jax.lax, ja, jb))
            got = fn(tnp, tg.lax, a, b)
            assert got.dtype == np.bool_ and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(
                tg.jit(lambda a, b: fn(tnp, tg.lax, a, b), backend=backend)(a, b), want)
        # vmap against a loop, batched on either side or both
        f = lambda a, b: fn(tnp, tg.lax, a, b)   # noqa: E731
        for axes in ((0, None), (None, 0), (0, 0), (1, 1)):
            a = ks if axes[0] is not None else ks[0, 1]
            b = ks[::-1] if axes[1] is not None else ks[1, 1]
            out = tg.vmap(f, axes)(a, b)
            n = ks.shape[axes[0] if axes[0] is not None else axes[1]]
            loop = np.stack([f(a if axes[0] is None else tnp.take(a, i, axis=axes[0]),
                               b if axes[1] is None else tnp.take(b, i, axis=axes[1]))
                             for i in range(n)])
            np.testing.assert_array_equal(out, loop)
    # no tangent through a comparison: the keys are constants of the derivative
    g = tg.grad(lambda x: tnp.sum(tnp.where(ks == ks[0, 0], x, 2 * x)))(1.0)
    assert float(g) == float(jax.grad(lambda x: jnp.sum(jnp.where(jks == jks[0, 0], x, 2 * x)))(1.0))


def test_comparison_errors_of_keys_as_jax():
    """A key compared with a value that is no key, and ``<``, ``<=``, ``>``, ``>=`` of keys:
    JAX's TypeError (its words first) eagerly, under jit and under vmap."""
    k, jk = tr.key(0), jax.random.key(0)
    cases = [(lambda a: a == 1, r"equal does not accept dtypes key<fry>, int64\."),
             (lambda a: a != 1, r"not_equal does not accept dtypes key<fry>, int64\."),
             (lambda a: a < a, r"lt does not accept dtype key<fry> at position 0\."),
             (lambda a: a >= a, r"ge does not accept dtype key<fry> at position 0\."),
             (lambda a: a <= a, r"le does not accept dtype key<fry> at position 0\."),
             (lambda a: a > a, r"gt does not accept dtype key<fry> at position 0\.")]
    for fn, msg in cases:
        with pytest.raises(TypeError, match=msg):
            fn(jk)
        for run in (fn, tg.jit(fn), lambda a: tg.vmap(fn)(tr.split(a, 2))):
            with pytest.raises(TypeError, match=msg):
                run(k)
    # a key ordered against a number: JAX's words eagerly (jnp.less's name; under a
    # transformation the message names the primitive, "lt does not accept dtypes ...")
    for kk in (k, jk):
        with pytest.raises(TypeError, match=r"less does not accept dtypes key<fry>, int64\."):
            kk < 1
    with pytest.raises(TypeError, match=r"equal does not accept dtypes key<fry>, uint32\."):
        tnp.equal(k, tr.key_data(k))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_jit_as_eager(backend):
    def f(k, x):
        k1, k2 = tr.split(tr.fold_in(k, 3))
        return tr.normal(k1, (3,)) * x + tr.uniform(k2, ()), tr.split(k2, 2)

    k = tr.key(8)
    out, keys = tg.jit(f, backend=backend)(k, 2.0)
    eout, ekeys = f(k, 2.0)
    np.testing.assert_array_equal(out, eout)
    assert keys.dtype == dtypes.key_fry and keys.shape == (2,) and isinstance(keys, np.ndarray)
    np.testing.assert_array_equal(data(keys), data(ekeys))

    def jf(k, x):
        k1, k2 = jax.random.split(jax.random.fold_in(k, 3))
        return jax.random.normal(k1, (3,)) * x + jax.random.uniform(k2, ()), None
    np.testing.assert_allclose(out, jf(jax.random.key(8), 2.0)[0], rtol=1e-14)
    # keys given and returned through jit unchanged
    np.testing.assert_array_equal(data(tg.jit(lambda k: k, backend=backend)(keys)), data(keys))


def test_vmap_as_loop():
    ks = tr.split(tr.key(2), 4)
    out = tg.vmap(lambda k: tr.normal(k, (2,)))(ks)
    # (the same bits; erfinv batched may differ from the loop's in the last bit)
    np.testing.assert_allclose(out, np.stack([tr.normal(ks[i], (2,)) for i in range(4)]),
                               rtol=1e-14)
    np.testing.assert_allclose(
        out, jax.vmap(lambda k: jax.random.normal(k, (2,)))(jax.random.split(jax.random.key(2), 4)),
        rtol=1e-14)
    bits = tg.vmap(lambda k: tr.bits(k, (3,)))(ks)
    np.testing.assert_array_equal(bits, np.stack([tr.bits(ks[i], (3,)) for i in range(4)]))
    sp = tg.vmap(lambda k: tr.split(k, 3))(ks)
    assert sp.shape == (4, 3) and sp.dtype == dtypes.key_fry
    np.testing.assert_array_equal(data(sp), np.stack([data(tr.split(ks[i], 3)) for i in range(4)]))
    # fold_in with batched data and an unbatched key
    fo = tg.vmap(tr.fold_in, (None, 0))(ks[0], np.arange(4))
    np.testing.assert_array_equal(data(fo), np.stack([data(tr.fold_in(ks[0], i)) for i in range(4)]))
    # key arrays mapped along a later axis; key_data/wrap_key_data under vmap
    grid = tnp.reshape(tr.split(tr.key(3), 6), (2, 3))
    cols = tg.vmap(lambda k: tr.key_data(k), in_axes=1)(grid)
    np.testing.assert_array_equal(cols, np.stack([data(grid[:, j]) for j in range(3)]))
    raw = data(ks)                                   # (4, 2)
    w0 = tg.vmap(tr.wrap_key_data)(raw)
    np.testing.assert_array_equal(data(w0), raw)
    w1 = tg.vmap(tr.wrap_key_data, in_axes=1)(np.ascontiguousarray(raw.T))  # batch on key axis
    np.testing.assert_array_equal(data(w1), raw)


def test_derivatives_see_keys_as_constants():
    k = tr.key(4)
    g = tg.grad(lambda x, k: tnp.sum(x * tr.normal(k, (3,))))(np.ones(3), k)
    np.testing.assert_array_equal(g, tr.normal(k, (3,)))
    zero = np.zeros((), dtypes.float0)
    out, t = tg.jvp(lambda k: tr.split(k), (k,), (zero,))
    jout, jt = jax.jvp(lambda k: jax.random.split(k), (jax.random.key(4),),
                       (np.zeros((), jax.dtypes.float0),))
    np.testing.assert_array_equal(data(out), jdata(jout))
    assert t.dtype == dtypes.float0 and t.shape == jt.shape == (2,)
    (ct,) = tg.vjp(lambda k: tr.key_data(k), k)[1](np.zeros((2,), dtypes.float0))
    assert ct.dtype == dtypes.float0 and ct.shape == ()
    (val, aux), g = tg.value_and_grad(lambda x, k: (x * tr.normal(k), tr.split(k)),
                                      has_aux=True)(2.0, k)
    np.testing.assert_array_equal(data(aux), data(tr.split(k)))
    np.testing.assert_array_equal(g, tr.normal(k))


def test_loops_carry_keys():
    def body(c, _):
        k, sub = tr.split(c)
        return k, tr.normal(sub)

    def jbody(c, _):
        k, sub = jax.random.split(c)
        return k, jax.random.normal(sub)

    k, xs = tg.lax.scan(body, tr.key(6), None, length=4)
    jk, jxs = jax.lax.scan(jbody, jax.random.key(6), None, length=4)
    np.testing.assert_allclose(xs, jxs, rtol=1e-14)
    np.testing.assert_array_equal(data(k), jdata(jk))
    k2, xs2 = tg.jit(lambda k: tg.lax.scan(body, k, None, length=4))(tr.key(6))
    np.testing.assert_array_equal(xs2, xs)
    np.testing.assert_array_equal(data(k2), data(k))
    w = tg.lax.while_loop(lambda c: c[1] < 3, lambda c: (tr.fold_in(c[0], c[1]), c[1] + 1),
                          (tr.key(1), 0))
    jw = jax.lax.while_loop(lambda c: c[1] < 3,
                            lambda c: (jax.random.fold_in(c[0], c[1]), c[1] + 1),
                            (jax.random.key(1), 0))
    np.testing.assert_array_equal(data(w[0]), jdata(jw[0]))
    c = tg.lax.cond(True, lambda k: tr.split(k)[0], lambda k: k, tr.key(1))
    np.testing.assert_array_equal(data(c), jdata(jax.random.split(jax.random.key(1))[0]))


def test_pytrees_hold_keys_as_leaves():
    tree = {"a": tr.key(0), "b": [tr.split(tr.key(1), 2)]}
    leaves = tg.tree_util.tree_leaves(tree)
    assert len(leaves) == 2 and all(leaf.dtype == dtypes.key_fry for leaf in leaves)
    out = tg.jit(lambda t: tg.tree_util.tree_map(lambda k: tr.split(k, 1)[0]
                                                 if k.ndim == 0 else k, t))(tree)
    np.testing.assert_array_equal(data(out["a"]), data(tr.split(tr.key(0), 1)[0]))


def test_indexing_and_iteration_give_key_arrays():
    ks = tr.split(tr.key(9), 3)
    k1, k2, k3 = ks                      # JAX's: each a key array of shape ()
    for k, i in ((k1, 0), (k2, 1), (k3, 2), (ks[1], 1), (ks[-1], 2)):
        assert isinstance(k, tg.Array) and isinstance(k, np.ndarray)
        assert k.shape == () and k.dtype == dtypes.key_fry
        np.testing.assert_array_equal(data(k), data(ks)[i])
    grid = tnp.reshape(tr.split(tr.key(9), 6), (2, 3))
    rows = list(grid)
    assert [r.shape for r in rows] == [(3,), (3,)] and all(isinstance(r, tg.Array) for r in rows)
    assert isinstance(grid[1, 2], tg.Array) and grid[1, 2].shape == ()
    np.testing.assert_array_equal(tr.normal(k2, (2,)), tr.normal(tr.split(tr.key(9), 3)[1], (2,)))


def test_iteration_of_eager_results_as_numpy():
    x, y = tnp.arange(3.0), tnp.reshape(tnp.arange(6), (2, 3))
    elems = list(x)
    assert [type(e) for e in elems] == [type(e) for e in np.arange(3.0)]
    assert elems == [0.0, 1.0, 2.0]
    rows = list(y)
    assert all(type(r) is type(y) for r in rows)
    np.testing.assert_array_equal(np.stack(rows), np.arange(6).reshape(2, 3))
    a, b = tnp.array([4, 5])
    assert (a, b) == (4, 5)
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(tnp.asarray(1.0))


def test_grad_of_a_key_argument_as_jax():
    k, jk = tr.key(0), jax.random.key(0)
    msg = (r"grad requires real- or complex-valued inputs \(input dtype that is a sub-dtype of "
           r"np.inexact\), but got key<fry>")
    with pytest.raises(TypeError, match=msg):
        tg.grad(lambda x, k: x * 2.0, argnums=(0, 1))(1.0, k)
    with pytest.raises(TypeError, match=msg):
        jax.grad(lambda x, k: x * 2.0, argnums=(0, 1))(1.0, jk)
    g = tg.grad(lambda x, k: x * tr.normal(k), argnums=(0, 1), allow_int=True)(1.0, k)
    jg = jax.grad(lambda x, k: x * jax.random.normal(k), argnums=(0, 1), allow_int=True)(1.0, jk)
    np.testing.assert_allclose(g[0], jg[0], rtol=1e-15)
    assert g[1].dtype == dtypes.float0 and g[1].shape == jg[1].shape == ()


def test_as_text_of_a_program_holding_keys_shows_the_code_that_runs():
    """A program holding keys runs on the NumPy backend whatever ``backend`` asks (numba
    has no type for them): its text says so and is the NumPy backend's code, with no
    "tiered" line (it is never compiled by numba); other programs keep theirs."""
    f = tg.jit(lambda k: tr.split(k, 3), backend="numba")
    text = f.lower(tr.key(0)).as_text()
    assert text.startswith("# numba backend: numba has no type for key<fry>; the NumPy "
                           "backend runs this program:\ndef compiled("), text[:200]
    assert "tiered" not in text and "random_wrap" in text
    assert f.lower(tr.key(0)).compile().as_text() == text
    data = tr.key_data
    np.testing.assert_array_equal(data(f(tr.key(0))), data(tr.split(tr.key(0), 3)))
    plain = tg.jit(lambda x: x * 2.0, backend="numba").lower(1.0).as_text()
    assert "numba has no type" not in plain and "import numba" in plain


@pytest.mark.parametrize("shape", [(), (2,), (2, 3)])
def test_text_of_eager_keys_is_jaxs(shape):
    """str, repr and format of eager key arrays read as JAX's (shape, key<fry>, the uint32
    words); NumPy's printing of the structured dtype raised for more than one key (chex's
    checkify message printing two key arrays)."""
    n = int(np.prod(shape))
    ours = tr.split(tr.key(1), n).reshape(shape) if shape else tr.key(1)
    theirs = jax.random.split(jax.random.key(1), n).reshape(shape) if shape else jax.random.key(1)
    for text in (str, repr, "{}".format):
        assert text(ours) == text(theirs)
    assert str(tnp.ones(2)) == "[1. 1.]" and repr(tnp.ones(2)) == "Array([1., 1.])"


def test_fold_in_data_as_jax():
    """``fold_in``'s data as JAX's ``jnp.uint32(data)``: a Python int must fit in uint32
    (JAX's OverflowError), a Python float is truncated first, NumPy values and traced
    floats are converted; an array of data asks for vmap (JAX's TypeError)."""
    for key, jkey in ((tr.key(3), jax.random.key(3)), (tr.PRNGKey(3), jax.random.PRNGKey(3))):
        for d in (0, 2 ** 32 - 1, 3.5, np.float32(3.5), np.array(3.7), True, np.int64(-1),
                  np.uint32(7)):
            np.testing.assert_array_equal(data(tr.fold_in(key, d)) if key.ndim == 0 else
                                          tr.fold_in(key, d),
                                          jdata(jax.random.fold_in(jkey, d)) if key.ndim == 0
                                          else jax.random.fold_in(jkey, d))
        for d in (-1, 2 ** 32, -2.5):
            for fold in (tr.fold_in, jax.random.fold_in):
                with pytest.raises(OverflowError, match=f"Python integer {int(d)} out of bounds "
                                                        "for uint32"):
                    fold(key if fold is tr.fold_in else jkey, d)
        with pytest.raises(TypeError, match=r"fold_in accepts a scalar, but was given an array "
                                            r"of shape \(2,\) != \(\)\. Use jax.vmap"):
            tr.fold_in(key, np.array([1, 2]))
    got = tg.jit(lambda x: tr.key_data(tr.fold_in(tr.key(3), x)))(2.5)
    np.testing.assert_array_equal(got, jax.jit(lambda x: jax.random.key_data(
        jax.random.fold_in(jax.random.key(3), x)))(2.5))


@pytest.mark.parametrize("mdt,cdt,dt", [(np.float64, np.float64, np.float32),
                                        (np.float32, np.float32, None),
                                        (np.float32, np.float64, None),
                                        (np.float32, np.float32, np.float64),
                                        (np.int64, np.int64, None)])
def test_multivariate_normal_dtypes_as_jax(mdt, cdt, dt):
    """JAX's dtypes: mean and cov promoted to a common inexact dtype, the draws in ``dtype``
    (mean's by default), the result promoted from both (float32 draws with float64 mean
    and cov are float64); the same numbers as JAX."""
    mean = np.array([1, -2], mdt)
    cov = np.array([[2, 1], [1, 3]], cdt)
    got = tr.multivariate_normal(tr.key(1), mean, cov, (3,), dtype=dt)
    want = jax.random.multivariate_normal(jax.random.key(1), mean, cov, (3,), dtype=dt)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if np.float32 in (mdt, cdt, dt) else 1e-12)
