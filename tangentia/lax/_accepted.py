"""The dtypes each ``jax.lax`` operation accepts, as JAX's: lax does not promote, so
``lax.sin`` of an integer, ``lax.add`` of booleans or ``lax.bitwise_and`` of floats are
JAX's TypeError (``sin does not accept dtype int8. Accepted dtypes are subtypes of
floating, complexfloating.``) where NumPy's ufuncs would return a number.
``tangentia.numpy``'s functions promote as NumPy's.

``accepting(name, fn)`` wraps a lax function with the check of its array arguments; the
table lists, per function, JAX's primitive name (used in the message) and the kinds it
accepts at each position.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .. import core, dtypes

_F, _C, _INT, _SINT, _B = "floating", "complexfloating", "integer", "signedinteger", "bool"
_NUM = "number"
_FC = (_F, _C)
_IFC = (_INT, _F, _C)

# lax name: (JAX's primitive name, accepted kinds, number of array arguments checked)
ACCEPTED: dict[str, tuple[str, tuple[str, ...], int]] = {
    **{n: (n, _FC, 1) for n in (
        "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sqrt", "rsqrt",
        "logistic", "exp2", "acos", "asin", "atan", "sinh", "cosh", "asinh", "acosh", "atanh")},
    **{n: (n, (_F,), 1) for n in (
        "floor", "ceil", "round", "cbrt", "is_finite", "erf", "erfc", "lgamma", "digamma",
        "erf_inv", "bessel_i0e", "bessel_i1e")},
    "abs": ("abs", (_F, _C, _SINT), 1),
    "neg": ("neg", _IFC, 1), "sign": ("sign", _IFC, 1), "square": ("square", _IFC, 1),
    "integer_pow": ("integer_pow", _IFC, 1),
    "real": ("real", (_C,), 1), "imag": ("imag", (_C,), 1),
    "population_count": ("population_count", (_INT,), 1), "clz": ("clz", (_INT,), 1),
    "bitwise_not": ("not", (_INT, _B), 1),
    **{n: (n, _IFC, 2) for n in ("add", "sub", "mul", "div")},
    "atan2": ("atan2", _FC, 2), "nextafter": ("nextafter", (_F,), 2),
    "igamma": ("igamma", (_F,), 2), "igammac": ("igammac", (_F,), 2),
    "zeta": ("zeta", (_F,), 2), "polygamma": ("polygamma", (_F,), 2),
    "bitwise_and": ("and", (_INT, _B), 2), "bitwise_or": ("or", (_INT, _B), 2),
    "bitwise_xor": ("xor", (_INT, _B), 2),
    **{n: (n, (_INT,), 2) for n in ("shift_left", "shift_right_logical",
                                     "shift_right_arithmetic", "mulhi")},
    **{n: (n, (_NUM,), 1) for n in ("reduce_sum", "reduce_prod", "cumsum", "cumprod",
                                     "cummax", "cummin", "cumlogsumexp")},
    # (JAX's argmax/argmin compare with gt/lt: their words, at position 0)
    "argmax": ("gt", (_INT, _F, _B), 1), "argmin": ("lt", (_INT, _F, _B), 1),
}
_POSITIONAL = {"argmax", "argmin"}   # the message names position 0 of a one-operand check


def _is(dtype: np.dtype, kind: str) -> bool:
    k = dtypes.kind(dtype)
    return {_F: k == "f", _C: k == "c", _INT: k in "iu", _SINT: k == "i", _B: k == "b",
            _NUM: k in "iufc"}[kind]


def check(name: str, args: tuple[Any, ...]) -> None:
    """JAX's TypeError if an array argument of lax's ``name`` has a dtype it does not accept."""
    prim, kinds, n = ACCEPTED[name]
    for pos, a in enumerate(args[:n]):
        dt = np.dtype(core.get_aval(a).dtype)
        if not any(_is(dt, k) for k in kinds):
            where = f" at position {pos}" if n > 1 or name in _POSITIONAL else ""
            raise TypeError(f"{prim} does not accept dtype {dt.name}{where}. Accepted dtypes"
                            f"{where} are subtypes of {', '.join(kinds)}. (tangentia: "
                            f"lax.{name} does not promote; tangentia.numpy's functions do)")


def accepting(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (lax's ``name``) checking its arguments' dtypes first, with JAX's words."""
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        check(name, args)
        return fn(*args, **kwargs)
    return op
