"""Lower-level operations (``tangentia.lax``), mirroring ``jax.lax``."""
from .control_flow import cond, fori_loop, map, scan, switch, while_loop
from ..primitives.contraction import dot_general
from ..primitives.elementwise import (abs, add, cos, div, exp, integer_pow, log, log1p, maximum,
                                      minimum, mul, neg, select, sin, sqrt, sub, tanh)
from ..primitives.reductions import cumsum
from ..primitives.structural import broadcast_to, convert_element_type, reshape, stop_gradient, transpose

__all__ = ["cond", "fori_loop", "map", "scan", "switch", "while_loop", "abs", "add", "broadcast_to", "convert_element_type", "cos", "cumsum", "div",
           "dot_general", "exp", "integer_pow", "log", "log1p", "maximum", "minimum", "mul",
           "neg", "reshape", "select", "sin", "sqrt", "stop_gradient", "sub", "tanh", "transpose"]

from .implicit import custom_linear_solve, custom_root  # noqa: E402

__all__ += ["custom_linear_solve", "custom_root"]
