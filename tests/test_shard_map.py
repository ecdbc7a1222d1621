"""shard_map on the one CPU device (every mesh axis of size 1), against JAX's on its one CPU
device: the same values, collectives over the mesh's axis names, grad and jit through it."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.experimental.shard_map import shard_map as legacy_shard_map

jax.config.update("jax_enable_x64", True)


def _mesh(lib, names=("i",)):
    return lib.sharding.Mesh(np.array(lib.devices()).reshape((1,) * len(names)), names)


def test_collectives_over_mesh_axes_as_jax():
    outs = []
    for lib, np_ in ((jax, jnp), (tg, tnp)):
        P = lib.sharding.PartitionSpec

        def f(x, y, lib=lib):
            return (lib.lax.psum(x * y, "i"), lib.lax.axis_index("j") + x,
                    lib.lax.all_gather(x, "i"), lib.lax.pmax(x, ("i", "j")))
        g = lib.shard_map(f, mesh=_mesh(lib, ("i", "j")), in_specs=(P("i"), P()),
                          out_specs=(P(), P("i"), P(), P()), check_vma=False)
        outs.append(g(np_.arange(4.0), 2.0))
    for got, want in zip(outs[1], outs[0]):
        np.testing.assert_array_equal(got, want)


def test_grad_and_jit_through_shard_map():
    outs = []
    for lib, np_ in ((jax, jnp), (tg, tnp)):
        P = lib.sharding.PartitionSpec
        mesh = _mesh(lib)
        loss = lib.shard_map(lambda z, lib=lib: lib.lax.pmean((z ** 2).sum(), "i"), mesh=mesh,
                             in_specs=P("i"), out_specs=P())
        outs.append(lib.jit(lib.grad(loss))(np_.arange(3.0)))
        with lib.sharding.set_mesh(mesh):   # the mesh from the context
            outs.append(lib.shard_map(lambda x: x * 2, in_specs=P("i"), out_specs=P("i"))(
                np_.ones(2)))
    np.testing.assert_array_equal(outs[2], outs[0])
    np.testing.assert_array_equal(outs[3], outs[1])
    P = tg.sharding.PartitionSpec
    got = legacy_shard_map(lambda x: tg.lax.psum(x, "i"), _mesh(tg), P("i"), P())(tnp.ones(2))
    np.testing.assert_array_equal(got, [1.0, 1.0])


def test_bad_arguments_raise_jaxs_errors():
    P = tg.sharding.PartitionSpec
    with pytest.raises(ValueError, match=r"^shard_map in_specs argument must refer to an axis "
                                         r"marked as manual .*'j'"):
        tg.shard_map(lambda x: x, mesh=_mesh(tg), in_specs=P("j"), out_specs=P())(tnp.ones(2))
    with pytest.raises(ValueError, match="^The context mesh cannot be empty"):
        tg.shard_map(lambda x: x, in_specs=P("i"), out_specs=P("i"))(tnp.ones(2))
    with pytest.raises(TypeError, match="shard_map requires a callable"):
        tg.shard_map(3, mesh=_mesh(tg), out_specs=P())
