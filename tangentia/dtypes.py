"""Dtype rules: NumPy promotion, float64 default, weakly typed Python scalars.

``float0`` is the tangent dtype of integer and boolean values: a zero-size
dtype, as in JAX, so a tangent of an integer input carries no data.
"""
import sys
from functools import lru_cache

import numpy as np

float0 = np.dtype([("float0", np.void, 0)])

bool_ = np.dtype(np.bool_)
float64 = np.dtype(np.float64)
float32 = np.dtype(np.float32)
int64 = np.dtype(np.int64)
complex128 = np.dtype(np.complex128)

# A weak (Python-scalar) value of each kind, used to ask NumPy's own
# promotion rules (NEP 50) what a strong dtype combined with it becomes.
_WEAK_PROTOTYPE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}

_PY_SCALAR_DTYPE = {bool: bool_, int: int64, float: float64, complex: complex128}


def py_scalar_dtype(x):
    """Dtype of a Python scalar (None if ``x`` is not one)."""
    return _PY_SCALAR_DTYPE.get(type(x))


def kind(dtype):
    """``dtype.kind``, but ml_dtypes' types (whose NumPy kind is ``'V'``) get the kind
    of what they are: ``'f'`` for bfloat16 and the float8/float6/float4 family,
    ``'i'``/``'u'`` for int4 and its kin.  Every classification of dtypes (which
    values are differentiable, tangent dtypes, promotion) goes through it."""
    k = dtype.kind
    if k != "V":
        return k
    return _ml_kind(dtype)


def _ml_kind(dtype):
    t = dtype.type
    if t in _ML_KINDS:
        return _ML_KINDS[t]
    floats, signed, unsigned = _custom_kinds()
    k = "f" if t in floats else "i" if t in signed else "u" if t in unsigned else "V"
    if floats:     # (cached once ml_dtypes is imported: its types are then known)
        _ML_KINDS[t] = k
    return k


_ML_KINDS = {}


def is_float(dtype):
    """Whether ``dtype`` is floating or complex (bfloat16 and the float8 family too)."""
    return dtype.kind in "fc" or (dtype.kind == "V" and _ml_kind(dtype) == "f")


def is_inexact(dtype):
    return dtype.kind in "fc" or (dtype.kind == "V" and _ml_kind(dtype) == "f")


def is_real_floating(dtype):
    """Whether ``dtype`` is a real floating dtype (bfloat16 and the float8 family too)."""
    return dtype.kind == "f" or (dtype.kind == "V" and _ml_kind(dtype) == "f")


def is_ml_float(dtype):
    """Whether ``dtype`` is one of ml_dtypes' floating types (bfloat16, float8_*, ...):
    NumPy's kind ``'V'``, computed here in float32 (as JAX computes most of their ops)."""
    return dtype.kind == "V" and _ml_kind(dtype) == "f"


def is_integer(dtype):
    return dtype.kind in "iub" or (dtype.kind == "V" and _ml_kind(dtype) in "iu")


def result_type(*args, return_weak_type_flag=False):
    """``jax.dtypes.result_type``: the dtype values, dtypes and Python scalars promote to.

    Internally (the primitives' shape rules) it is called with ``(dtype, weak)`` pairs and
    returns the pair ``(dtype, weak)``.
    """
    if args and all(type(a) is tuple and len(a) == 2 and isinstance(a[0], np.dtype)
                    for a in args):
        return _promote(*args)
    if not args:
        raise ValueError("at least one array or dtype is required")
    pairs = []
    for a in args:
        if type(a) in _PY_SCALAR_DTYPE:
            pairs.append((_PY_SCALAR_DTYPE[type(a)], True))
        elif hasattr(a, "dtype") and not isinstance(a, (type, np.dtype)):
            pairs.append((np.dtype(a.dtype), bool(getattr(a, "weak_type", False))))
        else:
            pairs.append((to_dtype(a) if type(a) is str else np.result_type(a), False))
    dtype, weak = _promote(*pairs)
    return (dtype, weak) if return_weak_type_flag else dtype


@lru_cache(maxsize=4096)
def _promote(*dtypes_and_weak):
    """Promote ``(dtype, weak)`` pairs with NumPy's rules; returns (dtype, weak).

    Weak entries behave like Python scalars of their kind; the result is weak
    only when every input is weak.
    """
    strong = [d for d, w in dtypes_and_weak if not w]
    weak = [d for d, w in dtypes_and_weak if w]
    if not strong:
        return np.result_type(*weak), True
    operands = strong + [_WEAK_PROTOTYPE[kind(d)] for d in weak]
    return np.result_type(*operands), False


def to_inexact(dtype):
    """The floating dtype an integer/bool dtype becomes under float ops."""
    if is_inexact(dtype):
        return dtype
    return float64


def tangent_dtype(dtype):
    """Dtype of tangents/cotangents for values of ``dtype``."""
    return dtype if is_inexact(dtype) else float0


def canonicalize(dtype):
    return to_dtype(dtype)


# ml_dtypes' type names, which NumPy knows only once ml_dtypes is imported (it registers
# them): the one place a dtype given by name imports it (``to_dtype``, ``load_named``).
ML_DTYPE_NAMES = frozenset((
    "bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
    "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2", "int4", "uint1", "uint2", "uint4"))


def to_dtype(dtype, align=False, copy=False) -> np.dtype:
    """``np.dtype(dtype)``, also for ml_dtypes' names given as strings (``"bfloat16"``,
    ``"float8_e4m3fn"``, ``"int4"``, ...) before anything imported ml_dtypes: it is
    imported then, and only then (an eager import costs about a second).  The conversion
    point of dtype arguments; ``jax.numpy.dtype`` is this (as JAX's, which imports ml_dtypes
    at start, knows those names)."""
    try:
        return np.dtype(dtype, align, copy)
    except TypeError:
        if not load_named((dtype,)):
            raise
    return np.dtype(dtype, align, copy)


def load_named(values, kwvalues=()) -> bool:
    """Import ml_dtypes if it is not imported yet and one of ``values`` (or ``kwvalues``)
    is a string naming one of its types; whether it was imported now (so a call that failed
    on such a name can be made again: ``_array.public``'s twins do)."""
    if "ml_dtypes" in sys.modules:
        return False
    for v in (*values, *kwvalues):
        if type(v) is str and v in ML_DTYPE_NAMES:
            return _ml_dtypes() is not None
    return False


# ---------------------------------------------------------------------------
# The public names of ``jax.dtypes`` (our dtypes are NumPy's, float64 by
# default: canonicalization is the identity, as JAX's with x64 enabled).

# ml_dtypes (bfloat16, the float8 family, int4, ...) is imported on first use, not at
# import: it costs about half a second, and an array of its dtypes can only exist once
# something has imported it.  ``bfloat16``, ``finfo`` and ``iinfo`` are resolved then.
_ML = []


def _ml_dtypes():
    """The ml_dtypes module (imported now if needed), or None where it is not installed."""
    if not _ML:
        try:
            import ml_dtypes as ml
        except ImportError:  # pragma: no cover - depends on the environment
            ml = None
        _ML.append(ml)
    return _ML[0]


def _custom_kinds():
    """(floats, signed, unsigned): ml_dtypes' scalar classes, which sit outside NumPy's
    hierarchy; empty while ml_dtypes is not imported (no value can have them then)."""
    ml = sys.modules.get("ml_dtypes")
    if ml is None:
        return frozenset(), frozenset(), frozenset()
    names = (("bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
              "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
              "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"),
             ("int1", "int2", "int4"), ("uint1", "uint2", "uint4"))
    return tuple(frozenset(getattr(ml, n) for n in group if hasattr(ml, n)) for group in names)


def _numpy_own(dtype) -> bool:
    """Whether ``dtype`` is none of ml_dtypes' (which then need not be imported): not one of
    their names, and while ml_dtypes is not imported no value can have one of their types."""
    if type(dtype) is str:
        return dtype not in ML_DTYPE_NAMES
    if "ml_dtypes" not in sys.modules:
        return True
    try:
        t = np.dtype(dtype).type
    except TypeError:
        return False
    return not any(t in kinds for kinds in _custom_kinds())


def finfo(dtype: object) -> np.finfo:
    """Machine limits of a floating dtype: NumPy's for NumPy's dtypes, ``ml_dtypes.finfo``
    (imported then) for bfloat16 and the float8 family.  Importing ml_dtypes costs about
    0.5 s of CPU, which ``random.normal``'s first call paid for ``finfo(float64)``: 2x
    JAX's whole cold ``jit(grad)`` of a dropout loss (``bench_cold_survey.py``)."""
    if _numpy_own(dtype):
        return np.finfo(dtype)
    ml = _ml_dtypes()
    return (ml or np).finfo(dtype)


def iinfo(dtype: object) -> np.iinfo:
    """Machine limits of an integer dtype: NumPy's for NumPy's dtypes, ``ml_dtypes.iinfo``
    for int4 and its kin (imported then; see ``finfo``)."""
    if _numpy_own(dtype):
        return np.iinfo(dtype)
    ml = _ml_dtypes()
    return (ml or np).iinfo(dtype)


def __getattr__(name):
    if name == "bfloat16":
        ml = _ml_dtypes()
        if ml is not None:
            return ml.bfloat16
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | ({"bfloat16"} if _ml_dtypes() is not None else set()))


class extended(np.generic):  # noqa: N801 - JAX's name
    """Scalar class of extended dtypes, for ``issubdtype`` only (never
    instantiated).  tangentia's one extended dtype is ``key_fry``, the dtype of
    typed PRNG keys: ``issubdtype(key_fry, extended)`` is True."""


class prng_key(extended):  # noqa: N801 - JAX's name
    """Scalar class of PRNG key dtypes, for ``issubdtype`` only:
    ``issubdtype(jax.random.key(0).dtype, prng_key)`` is True."""


# The dtype of a typed PRNG key (``tangentia.random.key``; JAX's ``key<fry>``): one key is
# one element, whose data are the two uint32 words of a raw threefry2x32 key.  A NumPy
# structured dtype, so that eager key arrays are ndarrays of the keys' own shape (a scalar
# key has shape ()) whose structural operations (reshape, indexing, broadcast, concatenate,
# where, scan carries) are NumPy's on 8-byte elements; arithmetic has no loop for it.  Its
# kind is 'V', so the numba backend leaves a program holding keys to the NumPy backend.
key_fry = np.dtype([("key<fry>", np.uint32, (2,))])
KEY_FIELD = "key<fry>"


def is_key(dtype) -> bool:
    """Whether ``dtype`` is the typed PRNG key dtype (``key_fry``)."""
    return isinstance(dtype, np.dtype) and dtype.kind == "V" and dtype == key_fry


def key_operand_error(name, operand_dtypes):
    """JAX's TypeError for an operation that takes no typed PRNG keys (arithmetic, ...)
    given one (``operand_dtypes``: the dtypes of its operands, None for a non-array), or
    None when no operand is a key."""
    keys = [i for i, d in enumerate(operand_dtypes) if is_key(d)]
    if not keys:
        return None
    detail = (f" ({name}: typed PRNG keys take only structural operations and comparisons; "
              "random.key_data(key) gives their uint32 data)")
    if len(keys) == len(operand_dtypes) or len(set(map(str, operand_dtypes))) == 1:
        return TypeError(f"{name} does not accept dtype key<fry> at position {keys[0]}."
                         + detail)
    names = ", ".join("key<fry>" if is_key(d) else str(d) for d in operand_dtypes)
    return TypeError(f"{name} does not accept dtypes {names}." + detail)


def operand_dtype(x):
    """The dtype of an operand: its ``dtype``, a Python scalar's (``py_scalar_dtype``), else
    None."""
    dt = getattr(x, "dtype", None)
    return dt if dt is not None else py_scalar_dtype(x)


def key_comparison_error(name, operand_dtypes):
    """JAX's TypeError for ``equal``/``not_equal`` (``name``) of a typed PRNG key and a value
    that is no key ("equal does not accept dtypes key<fry>, int64."), or None when every
    operand is a key or none is (two keys compare their data)."""
    keys = [is_key(d) for d in operand_dtypes]
    if all(keys) or not any(keys):
        return None
    names = ", ".join("key<fry>" if k else str(d) for k, d in zip(keys, operand_dtypes))
    return TypeError(f"{name} does not accept dtypes {names}. ({name}: typed PRNG keys "
                     "compare only with keys)")


class TypePromotionError(ValueError):
    """Raised when type promotion fails (as ``jax.dtypes.TypePromotionError``).
    tangentia promotes with NumPy's rules, which always succeed for numeric
    dtypes."""


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False) -> np.dtype:
    """The dtype tangentia uses for ``dtype``: ``np.dtype(dtype)`` (no 64-bit to
    32-bit narrowing: tangentia behaves as JAX with x64 enabled).

    Args:
      dtype: anything ``np.dtype`` accepts.
      allow_extended_dtype: whether the extended scalar classes (``extended``,
        ``prng_key``) are accepted (returned as they are).
    """
    if isinstance(dtype, type) and issubclass(dtype, extended):
        if not allow_extended_dtype:
            raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype} "
                             "with allow_extended_dtype=False")
        return dtype
    return to_dtype(dtype)


def _scalar_class(x):
    """The NumPy scalar class of a dtype-like ``x`` (or ``x`` itself when it is one)."""
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    return to_dtype(x).type


@lru_cache(maxsize=512)
def _issubdtype(a, b) -> bool:
    if isinstance(b, type) and issubclass(b, extended):
        return (isinstance(a, type) and issubclass(a, b)) or is_key(a)
    if is_key(a):   # a key dtype is below extended only (and itself)
        return is_key(b) if isinstance(b, np.dtype) else b is np.generic
    a, b = _scalar_class(a), _scalar_class(b)
    if issubclass(a, extended):
        return False
    floats, signed, unsigned = _custom_kinds()
    for custom, parents in ((floats, (np.floating, np.inexact)),
                            (signed, (np.signedinteger, np.integer)),
                            (unsigned, (np.unsignedinteger, np.integer))):
        if a in custom:    # (ml_dtypes' scalar classes are outside NumPy's hierarchy)
            return b in {a, *parents, np.number, np.generic}
    return bool(np.issubdtype(a, b))


def issubdtype(arg1, arg2) -> bool:
    """Whether ``arg1`` is ``arg2`` or below it in NumPy's type hierarchy, as
    ``np.issubdtype``, also for bfloat16 and the other ml_dtypes types (a
    floating or integer kind) and the ``extended``/``prng_key`` classes.

    Args:
      arg1: a dtype, scalar class or anything ``np.dtype`` accepts.
      arg2: the same, or an abstract class (``np.floating``, ``extended``, ...).
    """
    def hashable(x):
        return x if isinstance(x, (type, np.dtype)) else to_dtype(x)
    return _issubdtype(hashable(arg1), hashable(arg2))


_ISDTYPE_KINDS = {"bool": (np.bool_,), "signed integer": (np.signedinteger,),
                  "unsigned integer": (np.unsignedinteger,), "integral": (np.integer,),
                  "real floating": (np.floating,), "complex floating": (np.complexfloating,),
                  "numeric": (np.number,)}


def isdtype(dtype, kind) -> bool:
    """``jax.numpy.isdtype``: whether ``dtype`` is of ``kind``, also for bfloat16 and
    the other ml_dtypes types (NumPy's ``isdtype`` rejects them).

    Args:
      dtype: a dtype or scalar type (``jnp.bfloat16``, ``np.float32``, ``np.dtype(...)``).
      kind: a dtype, a kind name (``'bool'``, ``'signed integer'``, ``'unsigned integer'``,
        ``'integral'``, ``'real floating'``, ``'complex floating'``, ``'numeric'``) or a
        tuple of them.
    """
    dt = to_dtype(dtype)
    for k in (kind if isinstance(kind, tuple) else (kind,)):
        if isinstance(k, str):
            if k not in _ISDTYPE_KINDS:
                raise ValueError(f"Unrecognized {kind=!r} expected one of "
                                 f"{list(_ISDTYPE_KINDS)}, or a compatible input for "
                                 "jnp.dtype()")
            if any(issubdtype(dt, c) for c in _ISDTYPE_KINDS[k]):
                return True
        else:
            try:
                kd = to_dtype(k)
            except TypeError:
                raise TypeError(f"Expected kind to be a dtype, string, or tuple; got {kind=!r}"
                                ) from None
            if kd == dt:
                return True
    return False


def itemsize_bits(dtype) -> int:
    """The number of bits of one element of ``dtype`` (8 for bool; 4 for int4).

    Args:
      dtype: a numeric dtype.
    """
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    if to_dtype(dtype) == bool_:
        return 8
    if issubdtype(dtype, np.integer):
        return int(iinfo(dtype).bits)
    if issubdtype(dtype, np.floating):
        return int(finfo(dtype).bits)
    if issubdtype(dtype, np.complexfloating):
        return 2 * int(finfo(dtype).bits)
    raise ValueError(f"unexpected input: {dtype=}")


def scalar_type_of(x) -> type:
    """The Python scalar type (bool, int, float or complex) of the values of
    ``x`` (an array, a scalar or anything with a numeric ``dtype``).

    Args:
      x: the value.
    """
    if x is None:
        raise ValueError("Invalid argument to dtype: None.")
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = py_scalar_dtype(x)
    dtype = np.asarray(x).dtype if dtype is None else to_dtype(dtype)
    for kind, scalar in (("b", bool), ("iu", int), ("f", float), ("c", complex)):
        if dtype.kind in kind:
            return scalar
    if issubdtype(dtype, np.floating):
        return float
    if issubdtype(dtype, np.integer):
        return int
    raise TypeError(f"Value '{x}' with dtype {dtype} is not a valid JAX array type. Only arrays "
                    "of numeric types are supported by JAX.")
