"""``jax._src.sharding_impls`` stand-in: tangentia's shardings (one CPU device)."""
from tangentia.sharding import (NamedSharding, PartitionSpec, PositionalSharding,  # noqa: F401
                                SingleDeviceSharding, make_single_device_sharding)
