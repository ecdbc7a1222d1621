"""Complex parts and tests (``real``, ``imag``, ``conj``, ``angle``, ``isreal``, ...).

Complex arrays work eagerly (through NumPy); under a transformation only real
arrays are supported for now, and a complex one is a clear error."""
from __future__ import annotations

import numpy as _np

from ..primitives import elementwise as _E
from ..primitives import structural as _S
from ._constants import bool_, pi
from ._creation import ones_like, zeros_like
from ._elementwise import rad2deg, where
from ._util import _aval, _is_tracer


def _complex_unsupported(fname, x):
    if _aval(x).dtype.kind == "c":
        if not _is_tracer(x):
            return getattr(_np, fname)(x)
        raise NotImplementedError(
            f"{fname}: complex arrays are not supported under transformations yet "
            f"(got {_aval(x).str_short()})")
    return None


def real(x):
    """Real part (the value itself for real arrays)."""
    out = _complex_unsupported("real", x)
    return _S.unchanged(x) if out is None else out


def imag(val):
    """Imaginary part: zeros for real arrays."""
    out = _complex_unsupported("imag", val)
    return zeros_like(val) if out is None else out


def conj(x):
    """Complex conjugate (the value itself for real arrays)."""
    out = _complex_unsupported("conj", x)
    return _S.unchanged(x) if out is None else out


conjugate = conj


def angle(z, deg=False):
    """Angle of real numbers: 0 for x >= 0, pi for x < 0."""
    out = where(_E.lt(z, 0), pi, 0.0)
    return rad2deg(out) if deg else out


def isreal(x):
    """Elementwise test for a zero imaginary part (all True: real arrays only)."""
    return ones_like(x, dtype=bool_)


def iscomplex(x):
    """Elementwise test for a nonzero imaginary part (all False: real arrays only)."""
    return zeros_like(x, dtype=bool_)


def isrealobj(x):
    """Whether the array's dtype is not complex."""
    return _aval(x).dtype.kind != "c"


def iscomplexobj(x):
    """Whether the array's dtype is complex."""
    return _aval(x).dtype.kind == "c"
