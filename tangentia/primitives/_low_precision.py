"""bfloat16 and ml_dtypes' other small floats in the primitives whose NumPy kernel would
compute in that precision (or not at all): they compute in float32 and round once, as JAX
(XLA) does.

ml_dtypes' elementwise ufuncs already compute each element in float32 and round it, which
is what JAX does; but NumPy's reductions accumulate in the input's dtype (a bfloat16 sum
rounds after every addition: sum(exp([.3, -1.2, 2.5, .75])) is 16.0, JAX's 15.9375),
``matmul`` returns float32, and ``einsum`` refuses the dtype.  The wrapped ``impl`` of each
primitive below converts ml_dtypes float operands to float32, runs the kernel, and rounds
the result to the dtype the primitive's shape rule gives (bfloat16 stays bfloat16).  Other
dtypes take the original kernel after one loop over the operands' dtypes.
"""
from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..interpreters.base_ops import reduce_sum_p
from .contraction import dot_general_p, einsum_p
from .convolution import conv_general_dilated_p
from .reductions import cumsum_p, reduce_prod_p

_float32 = np.dtype(np.float32)


def _wide(prim, impl, args, params):
    """``impl`` on ``args`` with ml_dtypes floats computed in float32, rounded to the dtype
    of the primitive's shape rule (any other args: ``impl`` as it is)."""
    if not any(dtypes.is_ml_float(np.dtype(a.dtype)) for a in args if hasattr(a, "dtype")):
        return impl(*args, **params)
    want = prim.abstract_eval(*[core.get_aval(a) for a in args], **params).dtype
    wide = [np.asarray(a, _float32) if hasattr(a, "dtype") and dtypes.is_ml_float(
        np.dtype(a.dtype)) else a for a in args]
    return np.asarray(impl(*wide, **params)).astype(want, copy=False)


def _kind(x):
    try:
        return x.dtype.kind
    except AttributeError:   # (a Python scalar)
        return ""


# One wrapper per signature, with the parameters spelled out (cheaper than **params): the
# common path costs a dtype-kind test per array argument and a call.
def _wrap_unary_axes(prim):
    impl = prim.impl

    def impl_in_float32(x, axes):
        try:
            if x.dtype.kind != "V":
                return impl(x, axes)
        except AttributeError:   # (a Python scalar)
            return impl(x, axes)
        return _wide(prim, impl, (x,), {"axes": axes})
    return impl_in_float32


def _wrap_cumsum(prim):
    impl = prim.impl

    def impl_in_float32(x, axis, reverse):
        try:
            if x.dtype.kind != "V":
                return impl(x, axis, reverse)
        except AttributeError:
            return impl(x, axis, reverse)
        return _wide(prim, impl, (x,), {"axis": axis, "reverse": reverse})
    return impl_in_float32


def _wrap_dot_general(prim):
    impl = prim.impl

    def impl_in_float32(x, y, dimension_numbers, precision=None):
        try:
            if x.dtype.kind != "V" and y.dtype.kind != "V":
                return impl(x, y, dimension_numbers)
        except AttributeError:
            if _kind(x) != "V" and _kind(y) != "V":
                return impl(x, y, dimension_numbers)
        return _wide(prim, impl, (x, y), {"dimension_numbers": dimension_numbers})
    return impl_in_float32


def _wrap_any(prim):
    impl = prim.impl

    def impl_in_float32(*args, **params):
        for a in args:
            if _kind(a) == "V":
                return _wide(prim, impl, args, params)
        return impl(*args, **params)
    return impl_in_float32


for _p, _wrap in ((reduce_sum_p, _wrap_unary_axes), (reduce_prod_p, _wrap_unary_axes),
                  (cumsum_p, _wrap_cumsum), (dot_general_p, _wrap_dot_general),
                  (einsum_p, _wrap_any), (conv_general_dilated_p, _wrap_any)):
    _f = _wrap(_p)
    _f.__name__ = f"{_p.name}_impl_in_float32"
    _f.__wrapped__ = _p.impl
    _p.impl = _f
