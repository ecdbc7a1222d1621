"""Linear algebra (``tangentia.scipy.linalg``)."""
