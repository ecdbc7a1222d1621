"""``tangentia.typeof(x).sharding``: the aval's sharding, as JAX's (a NamedSharding over
the empty AbstractMesh, no axis partitioned), eager, under jit and under grad; what
libraries read from it (optax: ``.mesh.are_all_axes_explicit``, ``.spec``,
``out_sharding=typeof(leaf).sharding`` for the samplers)."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_aval_sharding_matches_jax(shape):
    ours = tg.typeof(tnp.ones(shape)).sharding
    theirs = jax.typeof(jnp.ones(shape)).sharding
    assert isinstance(ours, NamedSharding)
    assert tuple(ours.spec) == tuple(theirs.spec) == (None,) * len(shape)
    m, jm = ours.mesh, theirs.mesh
    assert (m.empty, m.size, m.axis_names, m.axis_sizes, m.axis_types) == (
        jm.empty, jm.size, jm.axis_names, jm.axis_sizes, jm.axis_types)
    assert (m.are_all_axes_explicit, m.are_all_axes_auto, m.are_all_axes_manual) == (
        jm.are_all_axes_explicit, jm.are_all_axes_auto, jm.are_all_axes_manual)
    assert ours.shard_shape(shape) == theirs.shard_shape(shape) == shape
    assert ours.is_fully_replicated and theirs.is_fully_replicated
    assert ours == NamedSharding(AbstractMesh((), ()), PartitionSpec(*(None,) * len(shape)))
    assert ours != NamedSharding(AbstractMesh((), ()), PartitionSpec(*(None,) * (len(shape) + 1)))
    assert hash(m) == hash(AbstractMesh((), ()))


def test_aval_sharding_under_transformations():
    seen = []

    def f(x):
        seen.append(tg.typeof(x).sharding)
        return tnp.sum(x ** 2)

    x = tnp.arange(6.0).reshape(2, 3)
    assert float(tg.jit(f)(x)) == 55.0
    np.testing.assert_array_equal(tg.grad(f)(x), 2 * np.arange(6.0).reshape(2, 3))
    assert len(seen) == 2 and all(s == tg.typeof(x).sharding for s in seen)


def test_out_sharding_from_the_aval_as_optax_passes_it():
    # optax.tree_utils.tree_random_like: sampler(key, shape, dtype, out_sharding=typeof(leaf).sharding)
    leaf = tnp.zeros((4, 2), dtype=tnp.float32)
    s = tg.typeof(leaf).sharding
    key = tg.random.key(3)
    got = tg.random.normal(key, leaf.shape, leaf.dtype, out_sharding=s)
    np.testing.assert_array_equal(got, tg.random.normal(key, leaf.shape, leaf.dtype))
    assert got.dtype == np.float32 and got.shape == (4, 2)


def test_abstract_mesh_axis_queries():
    m = AbstractMesh((1, 1), ("a", "b"), axis_types=(AxisType.Explicit, AxisType.Auto))
    jm = jax.sharding.AbstractMesh((1, 1), ("a", "b"), axis_types=(
        jax.sharding.AxisType.Explicit, jax.sharding.AxisType.Auto))
    assert (m.explicit_axes, m.auto_axes, m.manual_axes) == (
        jm.explicit_axes, jm.auto_axes, jm.manual_axes) == (("a",), ("b",), ())
    assert (m.are_all_axes_explicit, m.size) == (jm.are_all_axes_explicit, jm.size) == (False, 1)
    assert m == AbstractMesh((1, 1), ("a", "b"), axis_types=(AxisType.Explicit, AxisType.Auto))
    assert m != m.update(axis_types=(AxisType.Explicit,) * 2)
    assert m.update(axis_types=(AxisType.Explicit,) * 2).are_all_axes_explicit
    mesh = tg.make_mesh((1,), ("x",))
    assert mesh.update(axis_names=("y",)).axis_names == ("y",)
    assert isinstance(mesh.update(axis_names=("y",)), type(mesh))
