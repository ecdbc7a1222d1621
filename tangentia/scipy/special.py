"""Special functions (``tangentia.scipy.special``)."""
