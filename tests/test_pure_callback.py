"""tangentia.pure_callback (jax.pure_callback): values eagerly and under jit
(both backends), every vmap_method against a loop (and how often the callback
runs), a custom_jvp around it under grad/vmap, pure results dropped when
unused, and JAX's errors."""
import numpy as np
import pytest
import scipy.special as ss

import tangentia as tg
import tangentia.numpy as tnp

X = np.arange(6.0).reshape(3, 2)


def _expit(x):
    return tg.pure_callback(ss.expit, tg.ShapeDtypeStruct(x.shape, x.dtype), x)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_values_eager_and_jit(backend):
    x = np.linspace(-2.0, 2.0, 5)
    np.testing.assert_array_equal(_expit(x), ss.expit(x))
    np.testing.assert_array_equal(tg.jit(_expit, backend=backend)(x), ss.expit(x))
    # pytrees in and out, keyword arguments, float32 kept
    def both(d, *, scale):
        return {"s": np.sin(d["a"]) * scale, "c": (np.cos(d["b"]),)}
    d = {"a": np.ones(3, np.float32), "b": np.zeros(2)}
    shapes = {"s": tg.ShapeDtypeStruct((3,), np.float32), "c": (tg.ShapeDtypeStruct((2,), np.float64),)}
    out = tg.jit(lambda d: tg.pure_callback(both, shapes, d, scale=np.float32(2)), backend=backend)(d)
    assert out["s"].dtype == np.float32
    np.testing.assert_allclose(out["s"], 2 * np.sin(1.0), rtol=1e-6)
    np.testing.assert_array_equal(out["c"][0], np.ones(2))


@pytest.mark.parametrize("method,calls", [("sequential", [(2,)] * 3), ("sequential_unrolled", [(2,)] * 3),
                                          ("expand_dims", [(3, 2)]), ("broadcast_all", [(3, 2)]),
                                          ("legacy_vectorized", [(3, 2)])])
def test_vmap_methods_against_a_loop(method, calls):
    seen = []

    def cb(x, y):
        seen.append((x.shape, np.shape(y)))
        return np.sin(x) + y

    def g(x, y):
        return tg.pure_callback(cb, tg.ShapeDtypeStruct(x.shape, x.dtype), x, y, vmap_method=method)

    y = np.array([1.0, 2.0])
    got = tg.vmap(g, in_axes=(0, None))(X, y)
    np.testing.assert_allclose(got, np.stack([np.sin(r) + y for r in X]))
    assert [s for s, _ in seen] == calls
    unbatched_y = {"sequential": (2,), "sequential_unrolled": (2,), "expand_dims": (1, 2),
                   "broadcast_all": (3, 2), "legacy_vectorized": (2,)}[method]
    assert seen[0][1] == unbatched_y
    seen.clear()
    np.testing.assert_allclose(tg.jit(tg.vmap(g, in_axes=(0, None)))(X, y), got)
    np.testing.assert_allclose(tg.vmap(g, in_axes=(1, None))(X.T, y), got)


def test_custom_jvp_around_a_callback():
    @tg.custom_jvp
    def expit(x):
        return tg.pure_callback(ss.expit, tg.ShapeDtypeStruct(x.shape, x.dtype), x,
                                vmap_method="expand_dims")

    @expit.defjvp
    def _rule(primals, tangents):
        y = expit(primals[0])
        return y, y * (1 - y) * tangents[0]

    x = np.linspace(-1.0, 1.0, 4)
    want = ss.expit(x) * (1 - ss.expit(x))
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(expit(x)))(x), want, rtol=1e-15)
    np.testing.assert_allclose(tg.vmap(tg.grad(expit))(x), want, rtol=1e-15)
    np.testing.assert_allclose(tg.jit(tg.grad(lambda x: tnp.sum(expit(x))))(x), want, rtol=1e-15)


def test_unused_results_are_dropped_under_jit():
    seen = []

    def cb(x):
        seen.append(1)
        return x

    f = tg.jit(lambda x: (tg.pure_callback(cb, tg.ShapeDtypeStruct((2,), np.float64), x), x * 2)[1],
               backend="numpy")
    np.testing.assert_array_equal(f(np.ones(2)), 2 * np.ones(2))
    assert seen == []


def test_errors():
    x = np.ones(3)
    with pytest.raises(NotImplementedError, match="^vmap is only supported for the pure_callback "
                                                  "primitive when vmap_method is one of"):
        tg.vmap(_expit)(X)
    with pytest.raises(ValueError, match="^Pure callbacks do not support JVP"):
        tg.grad(lambda x: tnp.sum(_expit(x)))(x)
    with pytest.raises(ValueError, match="^Pure callbacks do not support"):
        tg.jvp(_expit, (x,), (x,))
    bad = lambda x: tg.pure_callback(lambda v: v.astype(np.float32), tg.ShapeDtypeStruct((3,), np.float64), x)  # noqa: E731
    with pytest.raises(ValueError, match="^Incorrect output dtype for return value 0: Expected: "
                                         "float64, Actual: float32"):
        bad(x)
    with pytest.raises(ValueError, match="^Incorrect output shape for return value 0"):
        tg.jit(lambda x: tg.pure_callback(lambda v: v[:2], tg.ShapeDtypeStruct((3,), np.float64), x),
               backend="numpy")(x)
    with pytest.raises(ValueError, match="^vmap_method must be on of the allowed methods"):
        tg.pure_callback(ss.expit, x, x, vmap_method="loop")
    with pytest.raises(TypeError, match="pure_callback: argument 'result_shape_dtypes'"):
        tg.pure_callback(ss.expit, 3, x)
    with pytest.raises(TypeError, match="pure_callback: argument 'callback' must be callable"):
        tg.pure_callback(None, x, x)
