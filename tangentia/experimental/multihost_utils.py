"""``jax.experimental.multihost_utils``: utilities of programs that run as several
processes. tangentia runs as one process on one CPU device, so each is what JAX's gives
with one process: a gather has one part, a broadcast is the value itself, a barrier
returns at once."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tree_util import tree_map

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather",
           "reached_preemption_sync_point", "sync_global_devices"]


def sync_global_devices(name: str) -> None:
    """A barrier across the processes: with one process, returns at once."""


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Each leaf gathered from every process as a NumPy array: with one process, the leaf
    itself (``tiled=True``), or with a leading axis of size 1 (``tiled=False``), as JAX's."""
    def gather(x: Any) -> np.ndarray:
        x = np.asarray(x)
        return x if tiled else x[None]
    return tree_map(gather, in_tree)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Process 0's value on every process: with one process, the values as NumPy arrays."""
    return tree_map(np.asarray, in_tree)


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Checks that every process holds the same value: with one process, it does."""


def reached_preemption_sync_point(step_id: int) -> bool:
    """Whether the processes agreed to stop at ``step_id`` for a preemption: never here."""
    return False


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Any, pspecs: Any) -> Any:
    """The process-local arrays as global ones: with one process and one device, the same
    arrays."""
    return local_inputs


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Any, pspecs: Any) -> Any:
    """The global arrays as the process's local ones: with one process and one device, the
    same arrays."""
    return global_inputs
