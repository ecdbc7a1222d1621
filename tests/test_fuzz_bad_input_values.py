"""Where JAX 0.10.2 (x64) raises and tangentia returned a number, against JAX: the class of
the error and its message's start.  Session 23 (E2); each case returned before its fix:
``count_nonzero(None)`` (or a dict, an object) was 1, ``full_like(x, None)`` NaN,
``full((2,), None)`` an object array, ``full((2,), 'abc')`` a str array, ``lax.complex(x,
None)`` and ``lax.igamma_grad_a(x, None)`` NaN (NumPy takes None as an object),
``lax.optimization_barrier('abc')`` returned its argument, and ``tri(-1)``,
``tril_indices(-1)``, ``triu_indices(2, 1, -3)`` and ``diag_indices(-1)`` were empty arrays
(NumPy's; JAX's TypeError/ValueError),
``lax.convert_element_type(x, None)`` returned ``x`` and ``lax.bitcast_convert_type(x, None)``
its bits as float64 (JAX: ValueError "dtype must be specified.").  And classes:
``repeat(x, -1)`` NumPy's ValueError (JAX: TypeError), ``dynamic_slice`` with the wrong number
of start indices our TypeError (JAX: ValueError).

``axis=[0]`` (a list) where JAX's function hashes it (static under its jit): ``cumsum``, the
``nan*`` reductions, ``median``/``quantile``, ``count_nonzero``, ``gradient``, ``linalg.norm``
returned the reduction over (0,) (JAX: ValueError "Non-hashable static arguments ...").

Left alone: ``tile(x, -1)`` (JAX: MLIRError, ours NumPy's ValueError), ``repeat(x, [-1, 1],
axis=0)`` (JAX returns an empty array, ours NumPy's ValueError).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

X = np.arange(6.0).reshape(2, 3)


def _raised(call: Callable[[], Any]) -> BaseException:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return e
    raise AssertionError("did not raise")


# (name, call taking the numpy module and the lax module)
CASES: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("count_nonzero(None)", lambda N, L: N.count_nonzero(None)),
    ("count_nonzero(dict)", lambda N, L: N.count_nonzero({"a": 1})),
    ("count_nonzero(axis) of None", lambda N, L: N.count_nonzero(None, axis=0)),
    ("full_like(x, None)", lambda N, L: N.full_like(X, None)),
    ("full_like(x, object())", lambda N, L: N.full_like(X, object())),
    ("full_like(x, None, dtype)", lambda N, L: N.full_like(X, None, dtype=np.float32)),
    ("full((2,), None)", lambda N, L: N.full((2,), None)),
    ("full((2,), dict)", lambda N, L: N.full((2,), {})),
    ("full((2,), [1, 'a'])", lambda N, L: N.full((2,), [1, "a"])),
    ("lax.complex(x, None)", lambda N, L: L.complex(X, None)),
    ("lax.complex(None, x)", lambda N, L: L.complex(None, X)),
    ("lax.complex(x, 'a')", lambda N, L: L.complex(X, "a")),
    ("lax.complex(x, object())", lambda N, L: L.complex(X, object())),
    ("optimization_barrier('abc')", lambda N, L: L.optimization_barrier("abc")),
    ("optimization_barrier((x, 'a'))", lambda N, L: L.optimization_barrier((X, "a"))),
    ("optimization_barrier(object())", lambda N, L: L.optimization_barrier(object())),
    ("optimization_barrier(str array)", lambda N, L: L.optimization_barrier(np.array(["a"]))),
    ("tri(-1)", lambda N, L: N.tri(-1)),
    ("tri(2, -1)", lambda N, L: N.tri(2, -1)),
    ("tri(int64(-1), 2)", lambda N, L: N.tri(np.int64(-1), 2)),
    ("tril_indices(-1)", lambda N, L: N.tril_indices(-1)),
    ("tril_indices(2, 0, -1)", lambda N, L: N.tril_indices(2, 0, -1)),
    ("triu_indices(-2)", lambda N, L: N.triu_indices(-2)),
    ("triu_indices(2, 1, -3)", lambda N, L: N.triu_indices(2, 1, -3)),
    ("diag_indices(-1)", lambda N, L: N.diag_indices(-1)),
    ("lax.igamma_grad_a(x, None)", lambda N, L: L.igamma_grad_a(X, None)),
    ("lax.igamma_grad_a(object(), x)", lambda N, L: L.igamma_grad_a(object(), X)),
    ("lax.convert_element_type(x, None)", lambda N, L: L.convert_element_type(X, None)),
    ("lax.bitcast_convert_type(x, None)", lambda N, L: L.bitcast_convert_type(X, None)),
]

# Where both raise but the class differed: repeat with a negative count was NumPy's
# ValueError (JAX: TypeError), dynamic_slice/dynamic_update_slice with the wrong number of
# start indices our TypeError (JAX: ValueError).
CLASS_CASES: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("repeat(x, -1)", lambda N, L: N.repeat(X, -1)),
    ("repeat(x, -2, axis=0)", lambda N, L: N.repeat(X, -2, axis=0)),
    ("repeat(x, -1, axis=-1)", lambda N, L: N.repeat(X, np.int32(-1), axis=-1)),
    ("dynamic_slice 3 starts", lambda N, L: L.dynamic_slice(X, (0, 0, 0), (1, 1))),
    ("dynamic_slice 1 start", lambda N, L: L.dynamic_slice(X, (0,), (1, 1))),
    ("dynamic_update_slice 3 starts",
     lambda N, L: L.dynamic_update_slice(X, X[:1, :1], (0, 0, 0))),
    ("dynamic_update_slice 1 start", lambda N, L: L.dynamic_update_slice(X, X[:1, :1], (0,))),
    ("dynamic_slice size too big", lambda N, L: L.dynamic_slice(X, (0, 0), (1, 5))),
    ("dynamic_slice negative size", lambda N, L: L.dynamic_slice(X, (0, 0), (1, -1))),
    ("dynamic_update_slice update too big",
     lambda N, L: L.dynamic_update_slice(X, np.ones((3, 3)), (0, 0))),
    ("dynamic_update_slice update rank",
     lambda N, L: L.dynamic_update_slice(X, np.ones(2), (0, 0))),
]


def test_where_jax_raises_we_raise_its_error() -> None:
    for label, call in CASES:
        theirs = _raised(lambda: call(jnp, jax.lax))
        ours = _raised(lambda: call(tnp, tg.lax))
        assert type(ours) is type(theirs), (label, repr(ours), repr(theirs))
        assert str(ours).startswith(str(theirs).strip()), (label, str(ours), str(theirs))


def test_where_both_raise_the_class_is_jaxs() -> None:
    for label, call in CLASS_CASES:
        theirs = _raised(lambda: call(jnp, jax.lax))
        ours = _raised(lambda: call(tnp, tg.lax))
        assert type(ours) is type(theirs), (label, repr(ours), repr(theirs))
        assert str(ours).startswith(str(theirs).strip()), (label, str(ours), str(theirs))
    # (under jit too: the starts are checked before anything is staged)
    e = _raised(lambda: tg.jit(lambda a: tg.lax.dynamic_slice(a, (0, 0, 0), (1, 1)))(X))
    assert type(e) is ValueError and "Length of slice indices" in str(e), repr(e)
    # slice_sizes of the wrong length: JAX's ValueError (of its safe_map), ours in our words
    e = _raised(lambda: tg.lax.dynamic_slice(X, (0, 0), (1, 1, 1)))
    assert type(e) is ValueError and "slice_sizes has 3 entries" in str(e), repr(e)


_STATIC_AXIS = ["count_nonzero", "cumsum", "nancumsum", "nancumprod", "nansum", "nanprod",
                "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "median", "nanmedian",
                "quantile", "percentile", "nanquantile", "nanpercentile", "gradient",
                "linalg.norm"]


@pytest.mark.parametrize("name", _STATIC_AXIS)
def test_a_list_axis_where_jax_hashes_it(name: str) -> None:
    # these took axis=[0] as (0,) and returned a number; JAX compiles them with a static
    # axis and raises its ValueError (sum, mean, max, ... take a list in JAX too: unchanged)
    def fn(mod: Any) -> Any:
        for part in name.split("."):
            mod = getattr(mod, part)
        return mod

    def call(N: Any, axis: Any) -> Any:
        if "quantile" in name or "percentile" in name:
            return fn(N)(X, 0.5, axis=axis)
        return fn(N)(X, axis=axis)
    theirs = _raised(lambda: call(jnp, [0]))
    ours = _raised(lambda: call(tnp, [0]))
    assert type(theirs) is ValueError and type(ours) is ValueError, (repr(ours), repr(theirs))
    assert str(ours).startswith(str(theirs).strip()), (str(ours), str(theirs))
    assert f"tangentia.numpy.{name}: argument 'axis'" in str(ours)
    for good in (0, (0,)) if name not in ("cumsum", "nancumsum", "nancumprod") else (0, -1):
        w = call(jnp, good)
        g = call(tnp, good)
        for gi, wi in zip(g if isinstance(g, (list, tuple)) else [g],
                          w if isinstance(w, (list, tuple)) else [w]):
            np.testing.assert_allclose(gi, np.asarray(wi), rtol=1e-14)


def test_vector_norm_takes_a_list_axis_as_jax() -> None:
    # vector_norm(x, axis=[0, 1]) was the spectral norm 7.3485 (a list went to norm as a
    # matrix's axes), JAX's the 2-norm of all entries 7.4162
    axis: Any
    for axis in ([0], [0, 1], (0, 1), [-1], 0):
        np.testing.assert_allclose(tnp.linalg.vector_norm(X, axis=axis),
                                   np.asarray(jnp.linalg.vector_norm(X, axis=axis)), rtol=1e-14)


def test_the_same_functions_still_compute() -> None:
    f32 = np.float32
    assert tnp.count_nonzero(X) == 5 and tnp.count_nonzero([1, 0, 2]) == 2
    np.testing.assert_array_equal(tnp.count_nonzero(X, axis=0), [1, 2, 2])
    np.testing.assert_array_equal(tnp.full_like(X, 2.5), np.full_like(X, 2.5))
    np.testing.assert_array_equal(tnp.full_like(X, np.float32(2), dtype=f32),
                                  np.full((2, 3), 2, f32))
    np.testing.assert_array_equal(tnp.full((2, 3), [1.0, 2.0, 3.0]),
                                  np.full((2, 3), [1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(tnp.full((2,), (1, 2)), [1, 2])
    np.testing.assert_array_equal(tnp.full((2,), 7, dtype=np.int32), np.full((2,), 7, np.int32))
    np.testing.assert_array_equal(tg.lax.complex(X, 1.0), np.asarray(jax.lax.complex(X, 1.0)))
    np.testing.assert_array_equal(tg.lax.complex(X, X), X + 1j * X)
    tree = {"a": X, "b": None, "c": [1, 2.0]}
    out = tg.lax.optimization_barrier(tree)
    np.testing.assert_array_equal(out["a"], X)
    assert out["b"] is None and out["c"] == [1, 2.0]
    np.testing.assert_allclose(tg.lax.igamma_grad_a(X + 1, X + 0.5),
                               np.asarray(jax.lax.igamma_grad_a(X + 1, X + 0.5)), rtol=1e-10)
    np.testing.assert_array_equal(tg.lax.convert_element_type(X, np.int32), X.astype(np.int32))
    np.testing.assert_array_equal(tg.lax.bitcast_convert_type(X, np.int64), X.view(np.int64))
    np.testing.assert_array_equal(tnp.tri(3, 2, 1), np.tri(3, 2, 1))
    assert tnp.tri(0).shape == (0, 0)
    for got, want in zip(tnp.tril_indices(3, 1, 2) + tnp.triu_indices(3) + tnp.diag_indices(0),
                         np.tril_indices(3, 1, 2) + np.triu_indices(3) + np.diag_indices(0)):
        np.testing.assert_array_equal(got, want)
    for r, ax in [(0, None), (2, 0), (1, -1)]:
        np.testing.assert_array_equal(tnp.repeat(X, r, axis=ax), np.repeat(X, r, axis=ax))
    np.testing.assert_array_equal(tg.lax.dynamic_slice(X, (1, 1), (1, 2)), X[1:2, 1:3])
    np.testing.assert_array_equal(tg.lax.dynamic_update_slice(X, np.zeros((1, 3)), (1, 0)),
                                  np.where(np.arange(2)[:, None] == 1, 0.0, X))
    # traced values: the checks let tracers through
    y = tg.jit(lambda a, v: (tnp.count_nonzero(a), tnp.full_like(a, v), tnp.full((3,), v),
                             tg.lax.complex(a, a), tg.lax.optimization_barrier((a, v))))(X, 2.0)
    assert y[0] == 5
    np.testing.assert_array_equal(y[1], np.full_like(X, 2.0))
    np.testing.assert_array_equal(y[2], np.full((3,), 2.0))
    np.testing.assert_array_equal(y[3], X + 1j * X)
    np.testing.assert_array_equal(y[4][0], X)
    g = tg.grad(lambda a: tnp.sum(tnp.full_like(a, a[0, 1]) * tg.lax.complex(a, a).real))(X)
    np.testing.assert_allclose(g, np.asarray(jax.grad(
        lambda a: jnp.sum(jnp.full_like(a, a[0, 1]) * jax.lax.complex(a, a).real))(X)),
        rtol=1e-14)
