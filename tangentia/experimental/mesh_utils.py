"""``jax.experimental.mesh_utils``: device meshes, of tangentia's one CPU device (every
mesh shape must multiply to 1, as JAX's on one device)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._compat import devices as _devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]

device_kind_handler_dict: dict[str, Any] = {}


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """An array of shape ``mesh_shape`` of the devices (here the one CPU device)."""
    devs = list(_devices() if devices is None else devices)
    if math.prod(mesh_shape) != len(devs):
        raise ValueError(f"Number of devices {len(devs)} must equal the product of "
                         f"mesh_shape {tuple(mesh_shape)}")
    out = np.empty(len(devs), dtype=object)
    out[:] = devs
    return out.reshape(tuple(mesh_shape))


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A mesh of shape ``mesh_shape * dcn_mesh_shape`` (one process: as ``create_device_mesh``)."""
    shape = [a * b for a, b in zip(mesh_shape, dcn_mesh_shape)]
    return create_device_mesh(shape, devices)
