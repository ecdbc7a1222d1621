"""Turning inputs into arrays: ``asarray``, ``astype``, ``copy``, and the
argument helpers the other modules use to accept lists, scalars and tracers;
NumPy's printing (``array_repr``, ``printoptions``, ...) and file/buffer
functions (``frombuffer``, ``load``, ``save``, ...), which work on concrete
values."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from .. import dtypes as _dtypes
from ..core import Tracer as _Tracer
from ..primitives import elementwise as _E
from ..primitives import structural as _S
from ._constants import float64
from ._util import _aval, _check_device, _check_order_k, _flat_seq, _is_tracer

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike


def asarray(a: Any, dtype: DTypeLike | None = None, order: str | None = None, *,
            copy: bool | None = None, device: Any = None, out_sharding: Any = None) -> Array:
    """Convert to an array (tracers are returned as they are, cast if asked; ``order``: None
    or "K", as JAX's)."""
    _check_device(device, "asarray")
    _check_order_k(order, "asarray")
    if isinstance(a, _Tracer):
        out: Any = a if dtype is None else astype(a, dtype)
        return copy_traced(out) if copy and out is a else out
    if _has_jax_array(a):
        return asarray(a.__jax_array__(), dtype)
    if isinstance(a, (list, tuple)) and builtins.any(_is_tracer(x) for x in _flat_seq(a)):
        out = _stack([asarray(x) for x in a], 0)
        return out if dtype is None else astype(out, dtype)
    return _core.as_array(a if dtype is None else _np.asarray(a, dtype=dtype), "asarray: argument")


def astype(x: ArrayLike, dtype: DTypeLike | None, copy: bool = False) -> Array:
    """``x`` converted to ``dtype`` (complex to bool: nonzero, as NumPy's and JAX's astype;
    lax.convert_element_type takes the real part)."""
    dtype = _dtypes.to_dtype(dtype)
    if dtype.kind == "b":
        src = getattr(x, "dtype", None)
        if (src if src is not None else _aval(x).dtype).kind == "c":
            return _E.ne(x, _np.zeros((), src if src is not None else _aval(x).dtype))
    return _S.convert_element_type(x, dtype)


class ComplexToRealWarning(DeprecationWarning, _np.exceptions.ComplexWarning):
    """``astype`` of complex values to a real dtype, which discards the imaginary part: JAX's
    DeprecationWarning (JAX will make it an error) and NumPy's ComplexWarning alike, so that
    code catching either sees it."""


def warn_complex_to_real(src: Any, dtype: Any, stacklevel: int = 4) -> None:
    """JAX's warning for a cast of complex values (dtype ``src``) to the real ``dtype``."""
    if _np.dtype(src).kind == "c" and _np.dtype(dtype).kind not in "cb":   # (bool: as JAX)
        import warnings
        warnings.warn("Casting from complex to real dtypes will soon raise a ValueError. Please "
                      "first use jnp.real or jnp.imag to take the real/imaginary component of "
                      f"your input. (astype: {_np.dtype(src)} to {_np.dtype(dtype)} discards "
                      "the imaginary part, as NumPy's ComplexWarning says; take tnp.real or "
                      "tnp.imag first)", ComplexToRealWarning, stacklevel=stacklevel)


def public_astype(x: ArrayLike, dtype: DTypeLike | None, /, *, copy: bool = False,
                  device: Any = None) -> Array:
    """``x`` converted to ``dtype`` (``jnp.astype``); complex to real warns as JAX's
    (``ComplexToRealWarning``, a DeprecationWarning and NumPy's ComplexWarning)."""
    _check_device(device, "astype")
    src = getattr(x, "dtype", None)
    if src is None:
        src = _aval(x).dtype
    warn_complex_to_real(src, dtype)
    return astype(x, dtype)


def copy_traced(x: Any) -> Any:
    """A new traced value equal to the tracer ``x``, as JAX's copy (``jnp.array(x) is not
    x``): a conversion to its own dtype, whose value under an eager transformation is an
    array (a Python scalar's too, as ``array(0.5)`` is; equinox's loops need it)."""
    return _S.convert_element_type_p.bind(x, new_dtype=_aval(x).dtype, weak_type=False)


def copy(a: ArrayLike, order: str | None = None) -> Array:
    """A copy of ``a`` (under a transformation, a new traced value)."""
    if _is_tracer(a):
        return copy_traced(a)
    return _np.array(_in(a, "copy"), copy=True)   # (an object or a string: JAX's TypeError)


def _has_jax_array(a: Any) -> bool:
    """Whether ``a`` converts itself by JAX's ``__jax_array__`` protocol (an object that is
    not an array, a NumPy scalar or a Python scalar; equinox's and flax's wrappers)."""
    t = type(a)
    return (t not in _PLAIN and not issubclass(t, (_np.ndarray, _np.generic))
            and hasattr(t, "__jax_array__"))


_PLAIN = (float, int, bool, complex, list, tuple)
_VALUES = {float, int, bool, complex, _np.ndarray}


def _checked(a: Any, fname: str, argname: str = "x") -> Any:
    """An argument of a function that binds a primitive directly: ``a`` itself if it is an
    array, a tracer or a scalar (Python scalars stay weakly typed), else as ``_in`` makes it
    (JAX's TypeError for an object or a string, which NumPy's loops would take: ``where``
    made an object array, ``logical_and`` compared truthiness)."""
    if type(a) in _VALUES or isinstance(a, (_np.ndarray, _np.generic, _Tracer)):
        return a
    return _in(a, fname, argname)


def _in(a, fname, argname="a"):
    """An array argument: tracers as they are, an object with ``__jax_array__`` as what
    that returns (as ``asarray`` does), anything else as an ndarray."""
    if _is_tracer(a):
        return a
    if _has_jax_array(a):
        return asarray(a)
    if isinstance(a, (list, tuple)) and builtins.any(_is_tracer(x) for x in _flat_seq(a)):
        return asarray(a)
    return _core.as_array(a, f"{fname}: argument '{argname}'")


def _arraylike(fname, *args, start=0):
    """JAX's ``check_arraylike``: a TypeError naming ``fname`` and the position of an argument
    that is no array, number or tracer (None, a dict, an object), or a sequence NumPy makes an
    object or string array of; ``np.asarray`` takes those as objects, and NumPy's functions
    then return a number for them (``count_nonzero(None)`` was 1, ``full_like(x, None)``
    NaN).  Lists and tuples of numbers are arrays here, as in NumPy."""
    for i, a in enumerate(args, start):
        if (isinstance(a, (_np.ndarray, _np.generic, int, float, complex)) or _is_tracer(a)
                or _has_jax_array(a)):
            continue
        if isinstance(a, (list, tuple)):
            if builtins.any(_is_tracer(x) for x in _flat_seq(a)):
                continue
            try:
                if _np.asarray(a).dtype.kind not in "OUS":
                    continue
            except Exception:  # noqa: BLE001 - (ragged: refused as JAX refuses any list)
                pass
        raise TypeError(f"{fname} requires ndarray or scalar arguments, got {type(a)} at "
                        f"position {i}. (tangentia.numpy.{fname})")


def _inexact(a):
    """``a`` as an inexact array (integers and booleans become float64; bfloat16 and the
    other narrow floats of ml_dtypes stay as they are, as in JAX)."""
    dt = _aval(a).dtype
    return a if dt.kind in "fc" or _dtypes.is_inexact(dt) else astype(a, float64)


def _stack(arrays, axis):
    """``stack``'s implementation (here because ``asarray`` stacks lists of tracers)."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack: need at least one array to stack")
    shapes = {_aval(a).shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got "
                         f"{[_aval(a).shape for a in arrays]}")
    s = _aval(arrays[0]).shape
    ax = axis % (len(s) + 1)
    return _S.concatenate([_S.reshape(a, s[:ax] + (1,) + s[ax:]) for a in arrays], ax)


# ---------------------------------------------------------------------------
# NumPy's printing, file and buffer functions: they work on concrete values and
# return arrays (tangentia arrays at the user boundary).



def get_printoptions() -> Any:
    """NumPy's print options (``numpy.get_printoptions``): they format our arrays too."""
    return _np.get_printoptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, suppress=None,
                     nanstr=None, infstr=None, formatter=None, sign=None, floatmode=None, *,
                     legacy=None, override_repr=None) -> Any:
    """Set NumPy's print options (``numpy.set_printoptions``), which format our arrays too."""
    _np.set_printoptions(precision, threshold, edgeitems, linewidth, suppress, nanstr, infstr,
                         formatter, sign, floatmode, legacy=legacy, override_repr=override_repr)


def printoptions(*args, **kwargs) -> Any:
    """A context manager setting NumPy's print options (``numpy.printoptions``) inside it."""
    return _np.printoptions(*args, **kwargs)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """An array from an object supporting the DLPack protocol (``numpy.from_dlpack``); the
    array lives in host memory, the one device here."""
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                        f"__dlpack_device__ methods. (from_dlpack: got {type(x).__name__})")
    return _np.from_dlpack(x, device=device, copy=copy)

array_repr = _np.array_repr
array_str = _np.array_str
frombuffer = _np.frombuffer
fromfile = _np.fromfile
fromiter = _np.fromiter
fromstring = _np.fromstring


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """``numpy.load``; an array of 2-byte void items (how NumPy saves bfloat16, which it does
    not know) is read as bfloat16, as JAX's ``load``."""
    out = _np.load(file, *args, **kwargs)
    if isinstance(out, _np.ndarray) and out.dtype == _np.dtype("V2"):
        out = out.view(_dtypes.bfloat16)
    return out
save = _np.save
savez = _np.savez
