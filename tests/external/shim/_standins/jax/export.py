"""``jax.export`` stand-in: tangentia has no StableHLO serialization.  Importing works (JAX's
test files import the module at the top); using it raises."""


def _unavailable(*args, **kwargs):
    raise NotImplementedError("jax.export: tangentia has no StableHLO export "
                              "(this is the test shim's stand-in)")


export = deserialize = symbolic_shape = symbolic_args_specs = _unavailable
default_export_platform = lambda: "cpu"  # noqa: E731
