"""Clustering (``tangentia.scipy.cluster``), mirroring ``jax.scipy.cluster``:
vector quantization in :mod:`.vq`."""
from . import vq  # noqa: F401
