"""Sparse linear algebra (``tangentia.scipy.sparse``), mirroring
``jax.scipy.sparse``: the matrix-free Krylov solvers of :mod:`.linalg`."""
from . import linalg  # noqa: F401
