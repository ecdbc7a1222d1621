"""SciPy-compatible functions (``tangentia.scipy.special``, ``tangentia.scipy.linalg``)."""
from . import linalg, special  # noqa: F401
