"""Names that JAX programs commonly use, so they run after changing imports:
more jax.numpy functions, jax.tree, config.update, devices."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.test_util import check_grads

A = np.array([-2.5, -1.0, 0.3, 1.7, 4.0])


@pytest.mark.parametrize("name,args", [
    ("fmod", (A, 1.5)), ("modf", (A,)), ("float_power", (np.abs(A) + 0.5, 1.5)),
    ("divmod", (A, 1.5)), ("fabs", (A,)), ("isposinf", (np.array([np.inf, -np.inf, 1.0]),)),
    ("isneginf", (np.array([np.inf, -np.inf, 1.0]),)), ("trapezoid", (A ** 2,)),
    ("diagflat", (A[:3],)), ("polyder", (A,)), ("polyint", (A,)), ("polymul", (A[:3], A[2:])),
    ("polyadd", (A[:2], A)), ("polysub", (A, A[:2])), ("angle", (A,)), ("imag", (A,)),
    ("pow", (np.abs(A), 2.0)), ("concat", ([A, A],)), ("permute_dims", (A.reshape(5, 1), (1, 0))),
    ("copy", (A,)),
])
def test_values_match_numpy_eagerly_and_under_jit(name, args):
    want = getattr(np, name if name not in ("concat", "permute_dims") else
                   {"concat": "concatenate", "permute_dims": "transpose"}[name])(*args)
    got = getattr(tnp, name)(*args)
    if name == "concat":
        jitted = tg.jit(lambda a: tnp.concat([a, a]))(A)
    elif name == "permute_dims":  # the axes are static
        jitted = tg.jit(lambda a: tnp.permute_dims(a, args[1]))(args[0])
    else:
        jitted = tg.jit(lambda *a: getattr(tnp, name)(*a))(*args)
    for g, j, w in zip(*[x if isinstance(x, tuple) else (x,) for x in (got, jitted, want)]):
        np.testing.assert_allclose(g, w, rtol=1e-14)
        np.testing.assert_allclose(j, w, rtol=1e-14)


def test_splits_unstack_rollaxis_vectorize():
    x = np.arange(24.0).reshape(2, 3, 4)
    for g, w in zip(tnp.array_split(np.arange(7.0), 3), np.array_split(np.arange(7.0), 3)):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(tnp.hsplit(x, 3), np.hsplit(x, 3)):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(tnp.dsplit(x, 2), np.dsplit(x, 2)):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(tnp.unstack(x, axis=1), [x[:, i] for i in range(3)]):
        np.testing.assert_array_equal(g, w)
    assert tnp.rollaxis(x, 2).shape == np.rollaxis(x, 2).shape
    assert tnp.rollaxis(x, 0, 3).shape == np.rollaxis(x, 0, 3).shape
    f = tnp.vectorize(lambda a, b: tnp.sin(a) * b)
    np.testing.assert_allclose(f(A, A[:, None]), np.sin(A) * A[:, None], rtol=1e-15)
    np.testing.assert_allclose(tnp.matvec(x, np.ones(4)), x.sum(-1), rtol=1e-15)
    np.testing.assert_allclose(tnp.vecmat(np.ones(3), x), x.sum(-2), rtol=1e-15)


def test_derivatives_of_compositions():
    check_grads(lambda a: tnp.fmod(a, 1.5) * a, (A + 0.01,), 2)
    check_grads(lambda a: tnp.trapezoid(tnp.sin(a), a), (np.sort(A),), 2)
    check_grads(lambda a: tnp.polyval(tnp.polyder(a), 0.7), (A,), 2)
    check_grads(lambda a: tnp.vectorize(lambda u: u ** 3)(a), (A,), 2)


def test_index_helpers_and_dtypes():
    np.testing.assert_array_equal(tnp.ix_(np.arange(2), np.arange(3))[1], np.ix_(np.arange(2),
                                                                               np.arange(3))[1])
    assert tnp.s_[1:3] == slice(1, 3)
    assert tnp.bool == np.bool_ and issubclass(tnp.bool, np.bool_) and tnp.zeros(2, tnp.bool).dtype == np.bool_
    np.testing.assert_array_equal(tnp.unravel_index(5, (2, 3)), (1, 2))
    assert tnp.mgrid[0:2, 0:3].shape == (2, 2, 3)


def test_tree_config_and_devices():
    t = {"a": 1.0, "b": (2.0, 3.0)}
    assert tg.tree.map(lambda v: v * 2, t) == {"a": 2.0, "b": (4.0, 6.0)}
    assert tg.tree.leaves(t) == [1.0, 2.0, 3.0]
    assert tg.tree.unflatten(tg.tree.structure(t), [4, 5, 6]) == {"a": 4, "b": (5, 6)}
    tg.config.update("jax_enable_x64", True)
    with pytest.raises(NotImplementedError, match="float64 by default"):
        tg.config.update("jax_enable_x64", False)
    with pytest.raises(NotImplementedError, match="debug_nans"):
        tg.config.update("jax_debug_nans", True)
    with pytest.raises(ValueError, match="unknown or unsupported option 'jax_foo'"):
        tg.config.update("jax_foo", 1)
    assert tg.device_count() == 1 and tg.devices()[0].platform == "cpu"
    x = tg.device_put([1.0, np.float32(2.0)])
    assert all(isinstance(v, np.ndarray) for v in x) and x[1].dtype == np.float32
    y = np.ones(2)
    assert tg.block_until_ready(y) is y
    np.testing.assert_allclose(tg.jacobian(lambda v: v ** 2)(A), np.diag(2 * A), rtol=1e-15)


def test_disable_jit_runs_python_eagerly():
    seen = []

    def f(x):
        seen.append(type(x))
        return float(x) + 1  # would fail on a traced value

    with tg.disable_jit():
        assert tg.jit(f)(1.0) == 2.0
        assert tg.jit(f)(np.float64(2.0)) == 3.0
    assert all(not issubclass(t, tg.core.Tracer) for t in seen)
    with pytest.raises(tg.ConcretizationTypeError):
        tg.jit(f)(1.0)
    with tg.disable_jit(False):
        with pytest.raises(tg.ConcretizationTypeError):
            tg.jit(f)(1.0)


def test_lax_broadcast_full_like():
    from tangentia import lax
    x = np.arange(3.0)
    np.testing.assert_array_equal(lax.broadcast(x, (2,)), np.broadcast_to(x, (2, 3)))
    got = lax.broadcast_in_dim(x, (2, 3, 4), (1,))
    np.testing.assert_array_equal(got, np.broadcast_to(x[None, :, None], (2, 3, 4)))
    with pytest.raises(TypeError, match=r"^broadcast_in_dim operand dimension sizes must either be 1, "
                                        r"or be equal .* got operand of shape \(3,\), target "
                                        r"broadcast shape \(2, 4\)"):   # JAX's words
        lax.broadcast_in_dim(x, (2, 4), (1,))
    f = lax.full_like(np.ones(3, np.int32), 7)
    assert f.dtype == np.int32 and f.tolist() == [7, 7, 7]
    g = lax.full_like(np.ones(2), 1.5, dtype=np.float32, shape=(2, 2))
    assert g.dtype == np.float32 and g.shape == (2, 2)
    assert lax.full((2,), 3.0).dtype == np.float64
    # under transformations: the gradient of a full_like-based expression
    assert float(tg.grad(lambda x: (x * lax.full_like(x, 2.0)).sum())(np.ones(3))[0]) == 2.0
    assert tg.jit(lambda x: lax.full_like(x, 0.5))(np.ones(4)).shape == (4,)


_PRODUCTS = {
    "dot": (tnp.dot, np.dot),
    "matmul": (tnp.matmul, np.matmul),
    "inner": (lambda a, b, **k: tnp.inner(a, b.T, **k), lambda a, b: np.inner(a, b.T)),
    "vdot": (tnp.vdot, np.vdot),
    "tensordot": (lambda a, b, **k: tnp.tensordot(a, b, 1, **k), lambda a, b: np.tensordot(a, b, 1)),
    "einsum": (lambda a, b, **k: tnp.einsum("ij,jk->ik", a, b, **k),
               lambda a, b: np.einsum("ij,jk->ik", a, b)),
    "linalg.matmul": (tnp.linalg.matmul, np.matmul),
}


@pytest.mark.parametrize("name", list(_PRODUCTS))
def test_products_take_jaxs_precision_and_preferred_element_type(name):
    """JAX's products take precision= and preferred_element_type=: the latter
    is the type the product accumulates in (int8 products sum in int32 without
    wrapping) and the result's dtype."""
    ours, theirs = _PRODUCTS[name]
    a = np.full((2, 3), 100, np.int8) + np.arange(6, dtype=np.int8).reshape(2, 3)
    b = np.full((3, 2), 90, np.int8) if name != "vdot" else a
    want = theirs(a.astype(np.int32), b.astype(np.int32))
    for f in (ours, tg.jit(ours, static_argnames=("preferred_element_type", "precision"))):
        got = f(a, b, precision=tg.lax.Precision.HIGHEST, preferred_element_type=np.int32)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
    x = np.linspace(0.5, 1.5, 6).reshape(2, 3)
    y = x if name == "vdot" else x.T.copy()
    got = ours(x, y, precision="highest", preferred_element_type=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, theirs(x, y), rtol=1e-6)
    g = tg.grad(lambda x: tnp.sum(ours(x, y, precision=tg.lax.Precision.HIGHEST)))(x)
    np.testing.assert_allclose(g, tg.grad(lambda x: tnp.sum(ours(x, y)))(x), rtol=0)


def test_python_round_of_arrays_and_tracers():
    """round(x[, n]) works on arrays as on JAX's (NumPy's ndarray has no __round__):
    half to even, an int64 array without n."""
    x = tnp.asarray([1.26, 2.5, -3.5, 0.449])
    np.testing.assert_array_equal(round(x), np.array([1, 2, -4, 0]))
    assert round(x).dtype == np.int64 and isinstance(round(tnp.asarray(2.5)), np.ndarray)
    np.testing.assert_allclose(round(x, 1), np.round(np.asarray(x), 1))
    np.testing.assert_array_equal(tg.jit(lambda v: round(v))(x), round(x))
    np.testing.assert_allclose(tg.jit(lambda v: round(v, 1))(x), np.round(np.asarray(x), 1))
    np.testing.assert_allclose(tg.grad(lambda v: round(v, 1) * v)(1.26), 1.3)
