"""Scalar functions called from generated numba programs, with NumPy's semantics
where Python's (or numba's) differ.

``_where``, ``_fmax`` and ``_fmin`` are intrinsics (an LLVM ``select``): a call
costs numba almost nothing to compile, while a conditional expression adds
basic blocks (and SSA work) and a call of an njit function adds ~2 ms each.
"""
import math

import numba
from numba.core import types
from numba.core.extending import intrinsic

from . import special


def _unified(typingctx, a, b):
    ty = typingctx.unify_types(a, b)
    if not isinstance(ty, (types.Integer, types.Float, types.Boolean)):
        return None
    return ty


def _select_codegen(make_pred):
    def codegen(context, builder, sig, args):
        ty = sig.return_type
        a = context.cast(builder, args[-2], sig.args[-2], ty)
        b = context.cast(builder, args[-1], sig.args[-1], ty)
        pred = make_pred(context, builder, sig, args, a, b, ty)
        return builder.select(pred, a, b)
    return codegen


@intrinsic
def _where(typingctx, p, a, b):
    """``a if p else b`` without a branch."""
    ty = _unified(typingctx, a, b)
    if ty is None:
        return None

    def pred(context, builder, sig, args, a, b, ty):
        return context.cast(builder, args[0], sig.args[0], types.boolean)
    return ty(p, a, b), _select_codegen(pred)


def _extremum(op):
    def typer(typingctx, a, b):
        ty = _unified(typingctx, a, b)
        if ty is None:
            return None

        def pred(context, builder, sig, args, a, b, ty):
            if isinstance(ty, types.Float):
                # NumPy: a if (a > b or a is NaN) else b -- NaN propagates, and
                # of two equal values (0.0 and -0.0) the second is returned.
                return builder.or_(builder.fcmp_ordered(op, a, b),
                                   builder.fcmp_unordered("uno", a, a))
            if isinstance(ty, types.Integer) and ty.signed:
                return builder.icmp_signed(op, a, b)
            return builder.icmp_unsigned(op, a, b)
        return ty(a, b), _select_codegen(pred)
    return typer


_fmax = intrinsic(_extremum(">"))
_fmax.__doc__ = "NumPy's maximum (NaN propagates), without a branch."
_fmin = intrinsic(_extremum("<"))
_fmin.__doc__ = "NumPy's minimum (NaN propagates), without a branch."


@numba.njit(cache=True)
def _ifloordiv(a, b):
    """NumPy's integer floor division: 0 for a zero divisor, MIN // -1 wraps to MIN."""
    if b == -1:
        return -a
    return a // b


@numba.njit(cache=True)
def _fsign(x):
    """NumPy's sign of a float: +-1, 0.0 for both zeros, NaN for NaN (as float64;
    the caller casts float32 results back)."""
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    if x == 0:
        return 0.0
    return x + 0.0


@numba.njit(cache=True)
def _index(i, n):
    """A possibly negative index into an axis of length n (IndexError when out of bounds)."""
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise IndexError("index out of bounds in a jit-compiled getitem/scatter")
    return j


@numba.njit(cache=True)
def _lgamma(x):
    """scipy.special.gammaln: infinite at -inf and where 1/x overflows (Cephes)."""
    if x == -math.inf:
        return x
    if x != 0 and math.isinf(1.0 / x):   # Cephes works with 1/x there
        return math.inf
    return math.lgamma(x)


globals().update(special.FUNCTIONS)   # SciPy's special functions, imported by generated code
__all__ = HELPERS = ("_fmax", "_fmin", "_fsign", "_index", "_where", "_ifloordiv", "_lgamma") + special.NAMES
