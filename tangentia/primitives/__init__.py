"""Primitive operations, each defined once with all of its rules."""
from . import structural, reductions, elementwise, indexing, contraction, call, control_flow  # noqa: F401
from . import sorting, misc, remat, prng, callback  # noqa: F401
from . import _low_precision  # noqa: F401,E402  (bfloat16 sums and products in float32)
