"""SciPy-compatible functions (``tangentia.scipy.special``, ``tangentia.scipy.linalg``)."""
from . import linalg, special, stats  # noqa: F401
from . import fft, integrate, ndimage, optimize, signal  # noqa: F401
from . import cluster, interpolate, sparse, spatial  # noqa: F401
