"""What optax's own test suite (tests/external/run_optax.py) needed from tangentia:
reduction methods taking ``where``/``initial``, ``jax.dtypes.result_type``'s public
signature, and ``jnp.bfloat16``.  Compared with JAX (x64)."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import dtypes as tdtypes

jax = pytest.importorskip("jax", reason="JAX is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


@pytest.mark.parametrize("method,kw", [
    ("min", dict(initial=np.inf)), ("max", dict(initial=-np.inf)), ("sum", {}),
    ("prod", {}), ("mean", {}), ("var", {}), ("std", {}), ("any", {}), ("all", {}),
    ("sum", dict(initial=10.0)), ("prod", dict(initial=2.0)),
])
@pytest.mark.parametrize("jit", [False, True])
def test_reduction_methods_take_where_and_initial(method, kw, jit):
    x = np.array([[3.0, -1.0, 4.0], [1.5, 5.0, -9.0]])
    w = x > 0

    def ours(x, w):
        return getattr(x, method)(axis=1, where=w, **kw)
    f = tg.jit(ours) if jit else ours
    got = f(tnp.asarray(x), tnp.asarray(w))
    # against jnp's function: JAX 0.10.2's ``Array.sum``/``prod`` methods drop ``initial``
    # (x.sum(initial=10.) == x.sum()), where jnp.sum and NumPy add it; we follow the latter
    want = getattr(jnp, method)(jnp.asarray(x), axis=1, where=jnp.asarray(w), **kw)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))


def test_reduction_method_where_gradient():
    x = np.array([3.0, -1.0, 4.0])
    got = tg.grad(lambda x: x.sum(where=x > 0) + x.max(where=x < 4, initial=-5.0))(x)
    want = jax.grad(lambda x: x.sum(where=x > 0) + x.max(where=x < 4, initial=-5.0))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))


def test_dtypes_result_type_public_signature():
    f32 = np.ones(3, np.float32)
    cases = [(f32,), (f32, 1.0), (1.0,), (np.int32(1),), ("float32",), (np.float16, 2),
             (f32, np.ones(2, np.float64))]
    for args in cases:
        assert tdtypes.result_type(*args) == jax.dtypes.result_type(*args), args
    assert tdtypes.result_type(1.0, return_weak_type_flag=True) == \
        jax.dtypes.result_type(1.0, return_weak_type_flag=True)
    assert tdtypes.result_type(f32, return_weak_type_flag=True) == (np.dtype("float32"), False)

    # traced values (optax's check_subdtype calls it inside jit)
    def f(x):
        assert tdtypes.result_type(x) == np.float32
        assert tdtypes.result_type(x, 2.0) == np.float32
        return x * 2
    np.testing.assert_allclose(np.asarray(tg.jit(f)(f32)), 2 * f32)
    with pytest.raises(ValueError, match="at least one"):
        tdtypes.result_type()


def test_numpy_bfloat16_is_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert tnp.bfloat16 is ml_dtypes.bfloat16
    assert np.dtype(tnp.bfloat16) == np.dtype(jnp.bfloat16)
    x = tnp.ones((3, 2), dtype=tnp.bfloat16)
    assert x.dtype == jnp.ones((3, 2), dtype=jnp.bfloat16).dtype
    assert (x * 2).dtype == tnp.bfloat16
    np.testing.assert_allclose(np.asarray(tnp.sum(x), np.float64), 6.0)
    with pytest.raises(AttributeError, match="has no attribute 'bfloat17'"):
        tnp.bfloat17  # noqa: B018


@pytest.mark.parametrize("name,args", [("zeros_like", ()), ("ones_like", ()),
                                       ("empty_like", ()), ("full_like", (2.5,))])
def test_like_functions_take_shape_dtype_structs(name, args):
    # optax's optimizers initialise their state from jax.ShapeDtypeStruct parameters
    got = getattr(tnp, name)(tg.ShapeDtypeStruct((2, 4), np.float32), *args)
    want = getattr(jnp, name)(jax.ShapeDtypeStruct((2, 4), np.float32), *args)
    assert got.shape == want.shape and got.dtype == want.dtype
    if name != "empty_like":
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert getattr(tnp, name)(tg.ShapeDtypeStruct((3,), np.int32), *args, dtype=np.float64,
                              shape=(5,)).shape == (5,)


def test_random_normal_complex_dtype_moments_and_jit():
    k = tg.random.key(3)
    z = tg.random.normal(k, (40000,), dtype=np.complex64)
    assert z.dtype == jax.random.normal(jax.random.key(3), (2,), dtype=jnp.complex64).dtype
    zz = np.asarray(z)
    # real and imaginary parts independent N(0, 1/2), as JAX's: E|z|^2 = 1
    assert abs(np.var(zz.real) - 0.5) < 0.02 and abs(np.var(zz.imag) - 0.5) < 0.02
    assert abs(np.mean(np.abs(zz) ** 2) - 1.0) < 0.03
    assert abs(np.corrcoef(zz.real, zz.imag)[0, 1]) < 0.03
    np.testing.assert_array_equal(np.asarray(tg.jit(
        lambda k: tg.random.normal(k, (5,), dtype=np.complex128))(k)),
        np.asarray(tg.random.normal(k, (5,), dtype=np.complex128)))
    with pytest.raises(TypeError, match="normal: argument 'dtype'"):
        tg.random.normal(k, (2,), dtype=np.int32)


@pytest.mark.parametrize("name,args", [("normal", ((3,),)), ("uniform", ((3,),)),
                                       ("bits", ((3,),)), ("rademacher", ((3,),)),
                                       ("randint", ((3,), 0, 5)), ("bernoulli", (0.5, (3,))),
                                       ("gumbel", ((3,),)), ("permutation", (5,))])
def test_random_samplers_take_out_sharding(name, args):
    k = tg.random.key(0)
    f = getattr(tg.random, name)
    want = np.asarray(f(k, *args))
    for s in (None, tg.sharding.PartitionSpec()):
        np.testing.assert_array_equal(np.asarray(f(k, *args, out_sharding=s)), want)
    import inspect
    assert "out_sharding" in inspect.signature(getattr(jax.random, name)).parameters
    assert "out_sharding" in inspect.signature(f).parameters
    with pytest.raises(TypeError, match=f"{name}: argument 'out_sharding'"):
        f(k, *args, out_sharding="x")


def test_iscomplexobj_takes_scalar_types():
    # optax's tests call jnp.iscomplexobj(dtype) with jnp.float32 / jnp.complex64
    pairs = [(tnp.float32, jnp.float32), (tnp.complex64, jnp.complex64),
             (tnp.complex128, jnp.complex128), (tnp.int32, jnp.int32)]
    for ours, theirs in pairs:
        assert tnp.iscomplexobj(ours) == jnp.iscomplexobj(theirs)
        assert tnp.isrealobj(ours) == jnp.isrealobj(theirs)
    for x in (None, [1j], 1.0, np.ones(2, np.complex64)):
        assert tnp.iscomplexobj(x) == jnp.iscomplexobj(x)
    with pytest.raises(TypeError):
        tnp.iscomplexobj(object)


def test_numpy_issubdtype_finfo_know_bfloat16():
    pytest.importorskip("ml_dtypes")
    for a, b in [(tnp.bfloat16, tnp.floating), (tnp.bfloat16, tnp.inexact),
                 (tnp.bfloat16, tnp.integer), (np.float32, tnp.floating), ("int32", tnp.integer),
                 (np.complex64, tnp.floating)]:
        jb = getattr(jnp, b.__name__) if isinstance(b, type) else b
        ja = jnp.bfloat16 if a is tnp.bfloat16 else a
        assert tnp.issubdtype(a, b) == jnp.issubdtype(ja, jb), (a, b)
    assert tnp.finfo(tnp.bfloat16).eps == jnp.finfo(jnp.bfloat16).eps
    assert tnp.finfo(np.float32).tiny == jnp.finfo(np.float32).tiny
    assert tnp.iinfo(np.int16).min == jnp.iinfo(np.int16).min


def test_stop_gradient_of_a_pytree_stops_each_leaf():
    """lax.stop_gradient maps over a pytree as JAX's does (it wrapped the dict in an array,
    and grad through it was silently wrong)."""
    import tangentia as tg
    import tangentia.numpy as tnp
    x = np.array([1.0, 2.0])
    out = tg.lax.stop_gradient({"a": x, "b": (3.0, None)})
    assert set(out) == {"a", "b"} and out["b"][1] is None
    np.testing.assert_array_equal(out["a"], x)
    # d/dx sum(sg(x) * x) = sg(x) = x
    g = tg.grad(lambda v: tnp.sum(tg.lax.stop_gradient({"a": v})["a"] * v))(x)
    np.testing.assert_array_equal(g, x)
    g = tg.grad(lambda v: tnp.sum(tg.lax.stop_gradient([v, 2 * v])[1] * v))(x)
    np.testing.assert_array_equal(g, 2 * x)
