"""Spatial algorithms (``tangentia.scipy.spatial``), mirroring ``jax.scipy.spatial``:
the ``transform`` submodule (``Rotation``, ``Slerp``)."""
from . import transform  # noqa: F401
