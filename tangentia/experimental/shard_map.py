"""``jax.experimental.shard_map``: the older home and signature of ``shard_map``
(``shard_map(f, mesh, in_specs, out_specs, check_rep=True, auto=frozenset())``)."""
from .._shard_map import legacy_shard_map as shard_map

__all__ = ["shard_map"]
