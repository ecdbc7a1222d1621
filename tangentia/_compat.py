"""Names JAX programs commonly call that have a trivial meaning here (one CPU
device, NumPy arrays that are always ready), so such programs run after
changing only their imports."""
from __future__ import annotations

import numpy as np

from ._array import CPU as _CPU, CpuDevice, to_user  # noqa: F401  (CpuDevice: the one device)
from .compiler.backend import default_backend_name, set_default_backend
from ._traceback_util import set_filtering
from .core import Tracer
from .tree_util import tree_map


def block_until_ready(x):
    """Results are computed eagerly: returns ``x`` unchanged.

    Args:
      x: an array or pytree of arrays.
    """
    return x


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Arrays live in host memory: converts leaves to tangentia arrays (``numpy.ndarray``).

    Args:
      x: an array, scalar or pytree of them.
      device: accepted for JAX compatibility (the one CPU device).
      src: accepted for JAX compatibility.
      donate: accepted for JAX compatibility.
      may_alias: accepted for JAX compatibility.

    Returns:
      ``x`` with every leaf a tangentia array.
    """
    return tree_map(lambda v: v if isinstance(v, Tracer) else to_user(np.asarray(v)), x)


def device_get(x):
    """Arrays live in host memory: converts leaves to ``numpy.ndarray``.

    Args:
      x: an array, scalar or pytree of them.

    Returns:
      ``x`` with every leaf a NumPy array.
    """
    return tree_map(lambda v: v if isinstance(v, Tracer) else np.asarray(v), x)


def devices(backend=None):
    """The devices: one CPU device.

    Args:
      backend: accepted for JAX compatibility (``None`` or ``"cpu"``).
    """
    return [_CPU]


local_devices = devices


def device_count(backend=None):
    """The number of devices: 1.

    Args:
      backend: accepted for JAX compatibility (``None`` or ``"cpu"``).
    """
    return 1


local_device_count = device_count


def default_backend():
    """The platform name JAX reports: ``"cpu"`` (for the ``jit`` backend, see
    ``config.jit_backend``)."""
    return "cpu"


class _Config:
    """``config.update(name, value)`` for the JAX options that have a meaning here."""

    jax_enable_x64 = True
    jax_platform_name = "cpu"

    @property
    def jit_backend(self):
        """The backend ``jit`` uses when none is named (``"numba"`` or ``"numpy"``)."""
        return default_backend_name()

    def update(self, name, value):
        if name == "jax_enable_x64":
            if not value:
                raise NotImplementedError(
                    "config.update('jax_enable_x64', False): tangentia always uses NumPy's dtype "
                    "semantics (float64 by default); pass float32 arrays to compute in float32")
            return
        if name in ("jax_platform_name", "jax_platforms", "jax_default_device"):
            if value not in (None, "cpu", _CPU):
                raise NotImplementedError(f"config.update({name!r}, {value!r}): tangentia runs "
                                          "on the CPU only")
            return
        if name in ("tangentia_traceback_filtering", "jax_traceback_filtering"):
            set_filtering(value)
            return
        if name == "jit_backend":
            set_default_backend(value)
            return
        if name == "jax_debug_nans":
            raise NotImplementedError(
                "config.update('jax_debug_nans', ...): use the context manager "
                "`with tangentia.debug_nans(): ...` instead (it is per thread)")
        raise ValueError(f"config.update: unknown or unsupported option {name!r}")


config = _Config()
