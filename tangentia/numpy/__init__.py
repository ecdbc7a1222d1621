"""A NumPy-compatible API whose functions can be transformed.

Outside any transformation the functions return ``numpy.ndarray`` and cost
little more than NumPy itself; under a transformation they bind tangentia
primitives.  Dtype semantics are NumPy's: float64 by default, NumPy 2
promotion, Python scalars weakly typed.

This file only gathers the public names; the code is in one module per topic
(each module imports only the ones listed before it):

``_util``          private helpers on abstract values (shapes, dtypes, axes)
``_constants``     constants, dtypes and ``ndarray`` for isinstance checks
``_conversion``    ``asarray``, ``astype``, ``copy``
``_shapes``        shape queries, reshaping, transposing, broadcasting, joining, splitting
``_indexing``      ``x[idx]``, ``x.at[idx]``, ``take``, ``flip``/``roll``, nonzero, index helpers
``_elementwise``   arithmetic, exponentials, trigonometry, rounding, logic, ``where``, ``clip``
``_creation``      ``zeros``/``full``/``eye``/..., ``array``, ``arange``/``linspace``, ``meshgrid``
``_complex``       ``real``, ``imag``, ``conj``, ``angle``, ``isreal``, ...
``_reductions``    ``sum``/``max``/``mean``/..., cumulative and NaN-ignoring variants, ``allclose``
``_matrices``      ``matmul``/``dot``/``einsum``/..., ``diag``/``trace``/``tril``/``vander``
``_sorting``       sorting, searching, ``unique`` and set operations, ``bincount``
``_statistics``    ``average``, ``cov``, ``corrcoef``, quantiles, medians, histograms
``_padding``       ``pad``
``_editing``       ``insert``, ``put``, ``place``, ``choose``, ``compress``, ...: functional edits
``_calculus``      ``diff``, ``ediff1d``, ``trapezoid``, ``gradient``
``_polynomials``   ``polyval``/``polyadd``/..., ``convolve``, ``correlate``, ``interp``
``_functional``    ``apply_along_axis``, ``vectorize``, ``select``, ``piecewise``
``_array_methods`` operators and methods of traced values (``x + y``, ``x.sum()``, ``x.at``)
``fft``            ``tangentia.numpy.fft``
``linalg``         ``tangentia.numpy.linalg``
``_polyfit``       ``poly``, ``polydiv``, ``polyfit``, ``roots`` (after linalg: eigenvalues, lstsq)
``_ufunc``         ``ufunc``, ``frompyfunc``; the ufunc methods of ``add``, ``multiply``, ...
"""
from __future__ import annotations

from .. import dtypes as _dtypes

from ._constants import (  # noqa: F401
    bool_, can_cast, complex128, complex64, complexfloating, double, dtype, e, euler_gamma,
    finfo, float16, float32, float64, float_, floating, iinfo, inexact, inf, int16, int32,
    int64, int8, int_, integer, isdtype, issubdtype, iterable, nan, ndarray, newaxis, number,
    pi, promote_types, result_type, single, uint, uint16, uint32, uint64, uint8, cdouble, csingle,
    complex_, character, flexible, generic, signedinteger, unsignedinteger, object_,
    ComplexWarning)
# the public scalar types: NumPy's, callable on traced values (internal code uses NumPy's)
from ._scalar_types import (  # noqa: F401,F811
    bool_, cdouble, complex128, complex64, complex_, csingle, double, float16, float32, float64,
    float_, int16, int32, int64, int8, int_, single, uint, uint16, uint32, uint64, uint8)
from ._conversion import public_astype as astype  # noqa: F401
from ._conversion import (  # noqa: F401
    asarray, copy, get_printoptions, set_printoptions, printoptions, array_repr,
    array_str, frombuffer, fromfile, fromiter, fromstring, from_dlpack, load, save, savez)
from ._creation import (  # noqa: F401
    arange, array, bartlett, blackman, empty, empty_like, eye, full, full_like, geomspace,
    hamming, hanning, identity, kaiser, linspace, logspace, meshgrid, ones, ones_like, tri,
    zeros, zeros_like)
from ._shapes import (  # noqa: F401
    append, array_split, atleast_1d, atleast_2d, atleast_3d, broadcast_arrays,
    broadcast_shapes, broadcast_to, column_stack, concat, concatenate, dsplit, dstack,
    expand_dims, hsplit, hstack, isscalar, matrix_transpose, moveaxis, ndim, permute_dims,
    ravel, repeat, reshape, rollaxis, shape, size, split, squeeze, stack, swapaxes, tile,
    transpose, vsplit, vstack, block)
from ._indexing import (  # noqa: F401
    argwhere, at, c_, delete, diag_indices, diag_indices_from, flatnonzero, flip, fliplr,
    flipud, index_exp, indices, ix_, mgrid, nonzero, ogrid, r_, ravel_multi_index, roll, rot90,
    s_, take, take_along_axis, tril_indices, tril_indices_from, triu_indices,
    triu_indices_from, unravel_index, unstack)
from ._elementwise import (  # noqa: F401
    abs, absolute, acos, acosh, add, arccos, arccosh, arcsin, arcsinh, arctan, arctan2,
    arctanh, around, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_count,
    bitwise_invert, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift,
    bitwise_xor, cbrt, ceil, clip, copysign, cos, cosh, deg2rad, degrees, divide, divmod,
    equal, exp, exp2, expm1, fabs, fix, float_power, floor, floor_divide, fmax, fmin, fmod,
    frexp, gcd, greater, greater_equal, heaviside, hypot, i0, invert, isclose, isfinite, isinf,
    isnan, isneginf, isposinf, lcm, ldexp, left_shift, less, less_equal, log, log10, log1p,
    log2, logaddexp, logaddexp2, logical_and, logical_not, logical_or, logical_xor, maximum,
    minimum, mod, modf, multiply, nan_to_num, negative, nextafter, not_equal, positive, pow,
    power, rad2deg, radians, reciprocal, remainder, right_shift, rint, round, sign, signbit,
    sin, sinc, sinh, spacing, sqrt, square, subtract, tan, tanh, true_divide, trunc, where)
from ._complex import (  # noqa: F401
    angle, conj, conjugate, imag, iscomplex, iscomplexobj, isreal, isrealobj, real,
    real_if_close)
from ._reductions import (  # noqa: F401
    all, allclose, amax, amin, any, argmax, argmin, array_equal, array_equiv, count_nonzero,
    cummax, cummin, cumprod, cumsum, cumulative_prod, cumulative_sum, max, mean, min,
    nanargmax, nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmin, nanprod, nanstd,
    nansum, nanvar, prod, ptp, std, sum, var)
from ._matrices import (  # noqa: F401
    cross, diag, diagflat, diagonal, dot, einsum, inner, kron, matmul, matvec, outer,
    tensordot, trace, tril, triu, vander, vdot, vecdot, vecmat)
from ._sorting import (  # noqa: F401
    argpartition, argsort, bincount, digitize, intersect1d, isin, lexsort, partition,
    searchsorted, setdiff1d, setxor1d, sort, sort_complex, union1d, unique, unique_all,
    unique_counts, unique_inverse, unique_values)
from ._statistics import (  # noqa: F401
    average, corrcoef, cov, histogram, histogram2d, histogram_bin_edges, histogramdd, median,
    nanmedian, nanpercentile, nanquantile, percentile, quantile)
from ._padding import (  # noqa: F401
    pad)
from ._editing import (  # noqa: F401
    choose, compress, extract, fill_diagonal, insert, mask_indices, packbits, place, put,
    put_along_axis, resize, trim_zeros, unpackbits)
from ._shapes import vstack as row_stack  # noqa: F401  (NumPy's older name)
from ._calculus import (  # noqa: F401
    diff, ediff1d, gradient, trapezoid, unwrap)
from ._polynomials import (  # noqa: F401
    convolve, correlate, interp, polyadd, polyder, polyint, polymul, polysub, polyval)
from ._functional import (  # noqa: F401
    apply_along_axis, apply_over_axes, einsum_path, fromfunction, piecewise, select, vectorize)
from . import _array_methods
from . import fft, linalg  # noqa: F401
from ._polyfit import poly, polydiv, polyfit, roots  # noqa: F401
from . import _ufunc
from ._ufunc import frompyfunc, ufunc  # noqa: F401
from ._index_tricks import c_, r_  # noqa: F401,F811  (with traced entries; NumPy's take none)

_array_methods.install()
_ufunc.install()

__all__ = [
    "abs", "absolute", "acos", "acosh", "add", "all", "allclose", "amax", "amin", "angle",
    "any", "append", "apply_along_axis", "arange", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "argmax", "argmin", "argpartition", "argsort", "argwhere",
    "around", "array", "array_equal", "array_equiv", "array_split", "asarray", "asin", "asinh",
    "astype", "at", "atan", "atan2", "atanh", "atleast_1d", "atleast_2d", "atleast_3d",
    "average", "bartlett", "bincount", "bitwise_and", "bitwise_count", "bitwise_invert",
    "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "blackman", "bool_", "broadcast_arrays", "broadcast_shapes", "broadcast_to", "c_",
    "can_cast", "cbrt", "ceil", "clip", "column_stack", "complex128", "complex64",
    "complexfloating", "concat", "concatenate", "conj", "conjugate", "convolve", "copy",
    "copysign", "corrcoef", "correlate", "cos", "cosh", "count_nonzero", "cov", "cross",
    "cummax", "cummin", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum", "deg2rad",
    "degrees", "delete", "diag", "diag_indices", "diag_indices_from", "diagflat", "diagonal",
    "diff", "digitize", "divide", "divmod", "dot", "double", "dsplit", "dstack", "dtype", "e",
    "ediff1d", "einsum", "empty", "empty_like", "equal", "euler_gamma", "exp", "exp2",
    "expand_dims", "expm1", "eye", "fabs", "fft", "finfo", "fix", "flatnonzero", "flip",
    "fliplr", "flipud", "float16", "float32", "float64", "float_", "float_power", "floating",
    "floor", "floor_divide", "fmax", "fmin", "fmod", "frexp", "full", "full_like", "gcd",
    "geomspace", "gradient", "greater", "greater_equal", "hamming", "hanning", "heaviside",
    "histogram", "histogram_bin_edges", "hsplit", "hstack", "hypot", "i0", "identity", "iinfo",
    "imag", "index_exp", "indices", "inexact", "inf", "inner", "insert", "int16", "int32",
    "int64", "int8", "int_", "integer", "interp", "intersect1d", "invert", "isclose",
    "iscomplex", "iscomplexobj", "isdtype", "isfinite", "isin", "isinf", "isnan", "isneginf",
    "isposinf", "isreal", "isrealobj", "isscalar", "issubdtype", "iterable", "ix_", "kaiser",
    "kron", "lcm", "ldexp", "left_shift", "less", "less_equal", "lexsort", "linalg",
    "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2", "logical_and",
    "logical_not", "logical_or", "logical_xor", "logspace", "matmul", "matrix_transpose",
    "matvec", "max", "maximum", "mean", "median", "meshgrid", "mgrid", "min", "minimum", "mod",
    "modf", "moveaxis", "multiply", "nan", "nan_to_num", "nanargmax", "nanargmin",
    "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile",
    "nanprod", "nanquantile", "nanstd", "nansum", "nanvar", "ndarray", "ndim", "negative",
    "newaxis", "nextafter", "nonzero", "not_equal", "number", "ogrid", "ones", "ones_like",
    "outer", "pad", "partition", "percentile", "permute_dims", "pi", "piecewise", "poly",
    "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul", "polysub", "polyval",
    "positive", "pow", "power", "prod", "promote_types", "ptp", "put", "quantile", "r_",
    "rad2deg", "radians", "ravel", "ravel_multi_index", "real", "real_if_close", "reciprocal",
    "remainder", "repeat", "reshape", "result_type", "right_shift", "rint", "roll", "rollaxis",
    "roots", "rot90", "round", "row_stack", "s_", "searchsorted", "select", "setdiff1d",
    "setxor1d", "shape", "sign", "signbit", "sin", "sinc", "single", "sinh", "size", "sort",
    "sort_complex", "spacing", "split", "sqrt", "square", "squeeze", "stack", "std",
    "subtract", "sum", "swapaxes", "take", "take_along_axis", "tan", "tanh", "tensordot",
    "tile", "trace", "transpose", "trapezoid", "tri", "tril", "tril_indices",
    "tril_indices_from", "triu", "triu_indices", "triu_indices_from", "true_divide", "trunc",
    "uint", "uint16", "uint32", "uint64", "uint8", "union1d", "unique", "unique_all",
    "unique_counts", "unique_inverse", "unique_values", "unravel_index", "unstack", "vander",
    "var", "vdot", "vecdot", "vecmat", "vectorize", "vsplit", "vstack", "where", "zeros",
    "zeros_like",
    "cdouble", "csingle", "complex_", "character", "flexible", "generic", "signedinteger",
    "unsignedinteger", "object_", "ComplexWarning", "get_printoptions", "set_printoptions",
    "printoptions", "array_repr", "array_str", "frombuffer", "fromfile", "fromiter",
    "fromstring", "from_dlpack", "load", "save", "savez", "block", "histogram2d", "histogramdd",
    "choose", "compress", "extract", "fill_diagonal", "mask_indices", "place", "put_along_axis",
    "resize", "trim_zeros", "unwrap", "apply_over_axes", "einsum_path", "fromfunction",
    "packbits", "unpackbits", "ufunc", "frompyfunc"]


# ml_dtypes' narrow types that jax.numpy names too (served on first use, as bfloat16)
_ML_SCALAR_TYPES = frozenset((
    "int1", "uint1", "int2", "uint2", "int4", "uint4", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn",
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"))


def __getattr__(name):
    # ``tnp.bool`` (jax.numpy's name for the bool dtype) without shadowing the
    # builtin ``bool`` inside this package.
    if name == "bool":
        return bool_
    if name == "bfloat16":   # ml_dtypes' (imported on first use), as tangentia.dtypes'
        return _dtypes.bfloat16
    if name in _ML_SCALAR_TYPES:   # jnp.int4, jnp.float8_e4m3fn, ...: ml_dtypes' types
        ml = _dtypes._ml_dtypes()
        if ml is not None and hasattr(ml, name):
            return getattr(ml, name)
    raise AttributeError(f"module 'tangentia.numpy' has no attribute {name!r}")
