"""Lower-level operations (``tangentia.lax``), mirroring ``jax.lax``."""
from .control_flow import cond, fori_loop, map, scan, switch, while_loop
from . import linalg  # noqa: F401  (jax.lax.linalg)
from .implicit import custom_linear_solve, custom_root
from .ops import (broadcast, broadcast_in_dim, clamp, concatenate, full, full_like, cummax,
                  cummin, cumprod, cumsum, dot, dot_general, dynamic_index_in_dim,
                  dynamic_slice, dynamic_slice_in_dim, dynamic_update_index_in_dim,
                  dynamic_update_slice, dynamic_update_slice_in_dim, erf, expand_dims, logistic,
                  pow, reduce_max, reduce_min, reduce_prod, reduce_sum, rsqrt, slice,
                  slice_in_dim, sort, square, squeeze, reshape, transpose, convert_element_type,
                  select)
from ..primitives.elementwise import ceil, cosh, floor, maximum, minimum, sinh
from .collectives import (all_gather, all_to_all, axis_index, axis_size, pmax, pmean, pmin,
                          ppermute, pshuffle, psum, psum_scatter, pswapaxes)
from .convolution import (conv, conv_dimension_numbers, conv_general_dilated,
                          conv_general_dilated_local, conv_general_dilated_patches,
                          conv_general_permutations, conv_general_shape_tuple, conv_shape_tuple,
                          conv_transpose, conv_transpose_shape_tuple, conv_with_general_padding,
                          padtype_to_pads)
from .slicing import (gather, scatter, scatter_add, scatter_apply, scatter_max, scatter_min,
                      scatter_mul, scatter_sub)
from .windowed import reduce, reduce_window, reduce_window_shape_tuple
from .ragged import ragged_dot
from .rng import rng_bit_generator
from .enums import (AccuracyMode, ConvDimensionNumbers, ConvGeneralDilatedDimensionNumbers,
                    DotAlgorithm, DotAlgorithmPreset, DotDimensionNumbers, FftType,
                    GatherDimensionNumbers, GatherScatterMode, Precision, PrecisionLike,
                    RandomAlgorithm, RoundingMethod, ScatterDimensionNumbers, Tolerance)
from .numeric import (abs, neg, sign, integer_pow, acos, acosh, argmax, argmin, asin, asinh, atan, atanh,
                      bessel_i0e,
                      bessel_i1e, betainc, bitcast_convert_type, bitwise_and, bitwise_not,
                      bitwise_or, bitwise_xor, cbrt, clz, conj, cos, digamma, dtype, erf_inv,
                      erfc, exp, exp2, expm1, log, log1p, sin, sqrt, tan, tanh,
                      igamma, igamma_grad_a, igammac, is_finite, lgamma, max, min, mulhi,
                      nextafter, add, sub, mul, div, rem, atan2, eq, ne, lt, le, gt, ge,
                      polygamma, population_count, reciprocal, reduce_and, reduce_or,
                      reduce_precision, reduce_xor, round, shift_left, shift_right_arithmetic,
                      shift_right_logical, zeta)
from .shaping import (approx_max_k, approx_min_k, associative_scan, batch_matmul,
                      broadcast_like, broadcast_shapes, broadcast_to_rank, composite,
                      platform_dependent, shape_as_value,
                      broadcasted_iota, collapse, cumlogsumexp, empty, index_in_dim, index_take,
                      iota, optimization_barrier, pad, rev, select_n, sort_key_val, split, stack,
                      tile, top_k, unstack, with_sharding_constraint)
from ..primitives.elementwise import imag, real
from .numeric import complex_ as complex
from ..primitives.fft import fft
from ..primitives.structural import broadcast_to, stop_gradient

__all__ = [
    "abs", "add", "atan2", "broadcast", "broadcast_in_dim", "broadcast_to", "full",
    "full_like", "ceil", "clamp", "complex", "concatenate", "cond", "conj", "fft", "imag", "real",
    "convert_element_type", "cos", "cosh", "cummax", "cummin", "cumprod", "cumsum",
    "custom_linear_solve", "custom_root", "div", "dot", "dot_general", "dynamic_index_in_dim",
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "eq", "erf", "exp", "expand_dims",
    "expm1", "floor", "fori_loop", "ge", "gt", "integer_pow", "le", "log", "log1p", "logistic",
    "lt", "map", "maximum", "minimum", "mul", "ne", "neg", "pow", "reduce_max", "reduce_min",
    "ragged_dot", "reduce_prod", "rng_bit_generator", "reduce_sum", "rem", "reshape", "round", "rsqrt", "scan",
    "select", "sign",
    "sin", "sinh", "slice", "slice_in_dim", "sort", "sqrt", "square", "squeeze", "stop_gradient",
    "sub", "switch", "tan", "tanh", "transpose", "while_loop",
    # collectives over a named vmap axis
    "all_gather", "all_to_all", "axis_index", "axis_size", "pmax", "pmean", "pmin", "ppermute",
    "pshuffle", "psum", "psum_scatter", "pswapaxes",
    # convolutions
    "conv", "conv_dimension_numbers", "conv_general_dilated", "conv_general_dilated_local",
    "conv_general_dilated_patches",
    "conv_general_permutations",
    "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose",
    "conv_transpose_shape_tuple", "conv_with_general_padding", "padtype_to_pads",
    # gather/scatter
    "gather", "scatter", "scatter_add", "scatter_apply", "scatter_max", "scatter_min",
    "scatter_mul", "scatter_sub",
    # windows
    "reduce", "reduce_window", "reduce_window_shape_tuple",
    # enums and parameter records
    "AccuracyMode", "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "DotAlgorithm",
    "DotAlgorithmPreset", "DotDimensionNumbers", "FftType", "GatherDimensionNumbers",
    "GatherScatterMode", "Precision", "PrecisionLike", "RandomAlgorithm", "RoundingMethod",
    "ScatterDimensionNumbers", "Tolerance",
    # numeric
    "acos", "acosh", "argmax", "argmin", "asin", "asinh", "atan", "atanh", "bessel_i0e",
    "bessel_i1e", "betainc", "bitcast_convert_type", "bitwise_and", "bitwise_not", "bitwise_or",
    "bitwise_xor", "cbrt", "clz", "digamma", "dtype", "erf_inv", "erfc", "exp2", "igamma",
    "igamma_grad_a", "igammac", "is_finite", "lgamma", "max", "min", "mulhi", "nextafter",
    "polygamma",
    "population_count", "reciprocal", "reduce_and", "reduce_or", "reduce_precision",
    "reduce_xor", "shift_left", "shift_right_arithmetic", "shift_right_logical", "zeta",
    # shaping
    "approx_max_k", "approx_min_k", "associative_scan", "batch_matmul", "broadcast_like",
    "broadcast_shapes", "broadcast_to_rank", "composite", "platform_dependent", "shape_as_value",
    "broadcasted_iota", "collapse", "cumlogsumexp", "empty", "index_in_dim", "index_take", "iota",
    "optimization_barrier", "pad", "rev", "select_n", "sort_key_val", "split", "stack", "tile",
    "top_k", "unstack", "with_sharding_constraint",
]

# lax does not promote: each operation refuses the dtypes JAX's refuses, with JAX's TypeError
from ._accepted import ACCEPTED as _ACCEPTED, accepting as _accepting  # noqa: E402
globals().update({_n: _accepting(_n, globals()[_n]) for _n in _ACCEPTED})

# JAX's primitive names (lax.add_p, lax.cond_p, ...): ours where one means the same
from . import primitive_names as _primitive_names  # noqa: E402
globals().update({n: getattr(_primitive_names, n) for n in _primitive_names.__all__
                  if n.endswith("_p")})
