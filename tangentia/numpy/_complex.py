"""Complex parts and tests (``real``, ``imag``, ``conj``, ``angle``, ``isreal``, ...).

Complex arrays work under every transformation with JAX's conventions (see
``primitives/elementwise.py``: ``real_p``, ``imag_p``, ``conj_p``,
``complex_p``); on real arrays these functions are the identity or zeros."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from .. import dtypes as _dtypes
from ..primitives import elementwise as _E
from ..primitives import structural as _S
from ._constants import bool_, pi
from ._creation import ones_like, zeros_like
from ._elementwise import arctan2, rad2deg, where
from ._util import _aval, _flat_seq, _is_tracer

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike


def _is_complex(x):
    return _aval(x).dtype.kind == "c"


def _is_complex_obj(x):
    # JAX's scalar types (jnp.float32, ...) carry a dtype, so iscomplexobj(jnp.complex64)
    # is True there; ours are NumPy's, so a NumPy scalar type is read as its dtype
    if x is None:
        return False
    if isinstance(x, type) and issubclass(x, _np.generic):
        return _np.dtype(x).kind == "c"
    dtype = getattr(x, "dtype", None)
    if dtype is not None and not isinstance(x, type):
        # as JAX's: anything with a dtype (an array, a jax.ShapeDtypeStruct, ...) by its dtype
        return _np.dtype(dtype).kind == "c"
    if isinstance(x, (list, tuple)) and any(map(_is_tracer, _flat_seq(x))):
        # (a sequence holding traced values: complex if any entry is, as its array would be)
        return any(_is_complex(e) for e in _flat_seq(x))
    return _is_complex(x)


def real(x) -> Array:
    """Real part (the value itself for real arrays)."""
    return _E.real(x) if _is_complex(x) else _S.unchanged(x)


def imag(val: ArrayLike) -> Array:
    """Imaginary part: zeros for real arrays."""
    return _E.imag(val) if _is_complex(val) else zeros_like(val)


def conj(x: ArrayLike) -> Array:
    """Complex conjugate (the value itself for real arrays)."""
    return _E.conj(x) if _is_complex(x) else _S.unchanged(x)


conjugate = conj


def angle(z: ArrayLike, deg: bool = False) -> Array:
    """Counterclockwise angle from the positive real axis (``arctan2(imag, real)``)."""
    if _is_complex(z):
        out = arctan2(_E.imag(z), _E.real(z))
    else:
        # arctan2(0, x) in x's floating dtype (integers and booleans: float64), as JAX's:
        # ours was pi where x < 0 in float64, so angle(nan) was 0 (JAX nan), angle(-0.) 0
        # (JAX and NumPy pi) and a float32 angle float64
        dt = _aval(z).dtype
        x = z if dt.kind == "f" or _dtypes.is_ml_float(dt) else _S.convert_element_type(
            z, _np.float64)
        out = arctan2(zeros_like(x), x)
    return rad2deg(out) if deg else out


def isreal(x: ArrayLike) -> Array:
    """Elementwise test for a zero imaginary part."""
    return _E.eq(_E.imag(x), 0) if _is_complex(x) else ones_like(x, dtype=bool_)


def iscomplex(x: ArrayLike) -> Array:
    """Elementwise test for a nonzero imaginary part."""
    return _E.ne(_E.imag(x), 0) if _is_complex(x) else zeros_like(x, dtype=bool_)


def real_if_close(a, tol=100) -> Array:
    """``a``'s real part if every imaginary part is below ``tol`` (in multiples of
    the dtype's machine epsilon when ``tol > 1``), else ``a``, as NumPy's.  The
    result's dtype depends on the values, so under a transformation (traced
    ``a``) the imaginary parts must be concrete."""
    if not _is_complex(a):
        return a if _is_tracer(a) else _np.asarray(a)
    if _is_tracer(a):
        try:
            small = a.concrete_value("real_if_close")
        except _core.ConcretizationTypeError:
            raise _core.ConcretizationTypeError(
                "real_if_close: the dtype of the result depends on the values of argument 'a', "
                "which is traced (under jit or vmap); call it outside the transformed function, "
                "or use real(a)") from None
    else:
        small = a = _np.asarray(a)
    eps = _np.finfo(_aval(a).dtype).eps
    if tol > 1:
        tol = tol * eps
    return real(a) if bool(_np.all(_np.abs(_np.imag(small)) < tol)) else a


def isrealobj(x: Any) -> bool:
    """Whether the array's dtype is not complex (``x`` may also be a scalar type, as jnp.complex64)."""
    return not _is_complex_obj(x)


def iscomplexobj(x: Any) -> bool:
    """Whether the array's dtype is complex (``x`` may also be a scalar type, as jnp.complex64)."""
    return _is_complex_obj(x)
