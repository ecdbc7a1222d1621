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


def _in_float32(prim):
    impl = prim.impl

    def impl_in_float32(*args, **params):
        for a in args:
            if getattr(a, "dtype", None) is not None and a.dtype.kind == "V":
                break
        else:
            return impl(*args, **params)
        if not any(dtypes.is_ml_float(np.dtype(a.dtype)) for a in args if hasattr(a, "dtype")):
            return impl(*args, **params)
        want = prim.abstract_eval(*[core.get_aval(a) for a in args], **params).dtype
        wide = [np.asarray(a, _float32) if hasattr(a, "dtype") and dtypes.is_ml_float(
            np.dtype(a.dtype)) else a for a in args]
        return np.asarray(impl(*wide, **params)).astype(want, copy=False)

    impl_in_float32.__name__ = f"{prim.name}_impl_in_float32"
    impl_in_float32.__wrapped__ = impl
    prim.impl = impl_in_float32


for _p in (reduce_sum_p, reduce_prod_p, cumsum_p, dot_general_p, einsum_p,
           conv_general_dilated_p):
    _in_float32(_p)
