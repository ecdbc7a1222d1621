"""Scalar functions called from generated numba programs, with NumPy's semantics
where Python's (or numba's) differ."""
import math

import numba

@numba.njit(cache=True)
def _fmax(a, b):
    return a if (a >= b or a != a) else b


@numba.njit(cache=True)
def _fmin(a, b):
    return a if (a <= b or a != a) else b


@numba.njit(cache=True)
def _ifloordiv(a, b):
    """NumPy's integer floor division: 0 for a zero divisor, MIN // -1 wraps to MIN."""
    if b == -1:
        return -a
    return a // b


@numba.njit(cache=True)
def _where(p, a, b):
    return a if p else b


@numba.njit(cache=True)
def _fsign(x):
    if x > 0:
        return x - x + 1.0
    if x < 0:
        return x - x - 1.0
    return x - x if x == 0 else x


@numba.njit(cache=True)
def _index(i, n):
    """A possibly negative index into an axis of length n (IndexError when out of bounds)."""
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise IndexError("index out of bounds in a jit-compiled getitem/scatter")
    return j


@numba.njit(cache=True)
def _lgamma(x):
    """scipy.special.gammaln: infinite at -inf and at subnormal arguments (Cephes)."""
    if x == -math.inf:
        return x
    if x != 0 and abs(x) < 2.2250738585072014e-308:
        return math.inf
    return math.lgamma(x)


__all__ = HELPERS = ("_fmax", "_fmin", "_fsign", "_index", "_where", "_ifloordiv", "_lgamma")
