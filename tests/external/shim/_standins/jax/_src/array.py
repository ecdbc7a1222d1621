"""``jax._src.array`` stand-in: ``ArrayImpl`` is the class of tangentia's eager results."""
from tangentia._array import ArrayImpl  # noqa: F401
from tangentia import Array  # noqa: F401
