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
    """Results are computed eagerly: returns ``x`` unchanged."""
    return x


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Arrays live in host memory: converts leaves to tangentia arrays (``numpy.ndarray``)."""
    return tree_map(lambda v: v if isinstance(v, Tracer) else to_user(np.asarray(v)), x)


def device_get(x):
    return tree_map(lambda v: v if isinstance(v, Tracer) else np.asarray(v), x)


def devices(backend=None):
    return [_CPU]


local_devices = devices


def device_count(backend=None):
    return 1


local_device_count = device_count


def default_backend():
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
