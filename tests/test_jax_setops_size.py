"""The set functions' static ``size=``/``fill_value=`` (JAX's), isin's ``method=``,
bincount's ``out_sharding=`` and sort's keyword-only ``kind``: values against JAX 0.10.2,
eagerly, under jit and under vmap."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

A = np.array([3., 1., 2., 1., 7., 3.])
B = np.array([2., 5., 7., 9.])
AU = np.array([4., 1., 3.])   # unique, unsorted
BU = np.array([3., 8.])
CASES = [("union1d", {}), ("setdiff1d", {}), ("setxor1d", {}), ("intersect1d", {}),
         ("intersect1d", {"return_indices": True}), ("setdiff1d", {"assume_unique": True}),
         ("setxor1d", {"assume_unique": True}),
         ("intersect1d", {"assume_unique": True, "return_indices": True})]


def _same(ours, theirs) -> None:
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        t = np.asarray(t)
        np.testing.assert_array_equal(np.asarray(o), t)
        assert np.asarray(o).dtype == t.dtype


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
@pytest.mark.parametrize("size,fill", [(2, None), (9, None), (9, -1.5)])
def test_set_functions_with_size_as_jax(name, kw, size, fill) -> None:
    a, b = (AU, BU) if kw.get("assume_unique") else (A, B)
    want = getattr(jnp, name)(a, b, size=size, fill_value=fill, **kw)
    f = lambda x, y: getattr(tnp, name)(x, y, size=size, fill_value=fill, **kw)  # noqa: E731
    _same(f(a, b), want)
    _same(tg.jit(f)(a, b), want)
    # vmap over a batch of first arguments: each row as the loop's
    rows = np.stack([a, a[::-1], a + 1.0])
    got = tg.vmap(f, (0, None))(rows, b)
    for i, r in enumerate(rows):
        _same(tuple(g[i] for g in got) if isinstance(got, tuple) else got[i],
              getattr(jnp, name)(r, b, size=size, fill_value=fill, **kw))


def test_set_functions_with_size_and_an_empty_input() -> None:
    # NumPy's results padded (JAX 0.10.2 fails or gives [2.] for intersect1d([], [2.]))
    e = np.zeros(0)
    np.testing.assert_array_equal(tnp.intersect1d(e, B, size=2), [0., 0.])
    np.testing.assert_array_equal(tnp.setdiff1d(e, B, size=2, fill_value=4), [4., 4.])
    np.testing.assert_array_equal(tnp.union1d(e, B, size=5, fill_value=0), [2., 5., 7., 9., 0.])
    np.testing.assert_array_equal(tnp.setxor1d(A, e, size=4), [1., 2., 3., 7.])
    v, i1, i2 = tnp.intersect1d(A, e, size=2, return_indices=True)
    np.testing.assert_array_equal(i1, [6, 6])
    np.testing.assert_array_equal(i2, [0, 0])


def test_set_functions_need_size_under_jit() -> None:
    with pytest.raises(Exception, match="union1d"):
        tg.jit(tnp.union1d)(A, B)
    with pytest.raises(ValueError, match="size"):
        tnp.setdiff1d(A, B, size=-1)


@pytest.mark.parametrize("method", ["auto", "compare_all", "binary_search", "sort"])
def test_isin_method_as_jax(method) -> None:
    x = np.array([[1., 4.], [2., 9.]])
    for invert in (False, True):
        want = jnp.isin(x, B, invert=invert, method=method)
        _same(tnp.isin(x, B, invert=invert, method=method), want)
        _same(tg.jit(lambda u: tnp.isin(u, B, invert=invert, method=method))(x), want)
    with pytest.raises(ValueError, match="method='fast' is not implemented"):
        tnp.isin(x, B, method="fast")


def test_bincount_out_sharding_and_sort_keywords() -> None:
    x = np.array([0, 2, 2, 5])
    _same(tnp.bincount(x, length=7, out_sharding=None), jnp.bincount(x, length=7))
    _same(tg.jit(lambda u: tnp.bincount(u, length=7, out_sharding=None))(x),
          jnp.bincount(x, length=7))
    with pytest.raises(TypeError):
        tnp.sort(A, -1, None)  # type: ignore[call-arg]  # kind is keyword-only, as JAX's
    with pytest.raises(TypeError):
        tnp.argsort(A, -1, None)  # type: ignore[call-arg]
    _same(tnp.sort(A, kind=None), jnp.sort(A))
