"""``np.dot`` as a precompiled kernel: the BLAS products of the generated programs
(``rules._dot_blas``) call ``_dot`` through its address (``_Gen.call_compiled``,
``native._Kernel``), one specialization per dtype and operand layouts (C, or F for a
transposed view), compiled once per machine and loaded from numba's cache.

Why: numba types ``np.dot`` anew in every process, ~0.17 s of CPU per combination of
layouts (an MLP's gradient has three: ``x @ w``, ``g @ w.T``, ``x.T @ g``), paid by every
program compiled in that process, cold or reusing the cache's units; loading the
kernel costs a few ms.  The call is the same BLAS call with the same arguments."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _dot(a, b, c):
    """``c[:] = a @ b`` (2-D arrays; ``c`` C-contiguous): numba's ``np.dot``, BLAS's gemm."""
    np.dot(a, b, c)


# a call whose arrays are not of the types the call site named compiles this function
# inline (numba's own np.dot for those types), not a cast (``native._caller``)
_dot.py_func.inline_on_mismatch = True
