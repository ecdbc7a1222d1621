"""Special-function primitives backed by ``scipy.special`` ufuncs.

Each primitive is defined once, as in ``elementwise.py``: the SciPy ufunc is
its implementation and its lowering, the shape/dtype rule is NumPy's
broadcasting and the ufunc's own type resolution (float32 stays float32,
integers become float64), batching is elementwise, and the JVP is given by
one function ``fn(t, ans, *primals)`` per argument, written with primitives
so that it can itself be differentiated (higher orders).

These are the building blocks of ``tangentia.scipy.special``; user code
should call the functions there (which also promote integer inputs).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as _sc

from .elementwise import add, elementwise, exp, mul, neg, sub

__all__ = ["erf", "erfc", "erfinv", "gammaln", "digamma", "polygamma", "ndtr", "ndtri",
           "log_ndtr", "erf_p", "erfc_p", "erfinv_p", "lgamma_p", "digamma_p", "polygamma_p",
           "ndtr_p", "ndtri_p", "log_ndtr_p"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _sq(x):
    return mul(x, x)


# erf'(x) = 2/sqrt(pi) exp(-x^2);  erfc' = -erf'
erf_p = elementwise("erf", _sc.erf,
                    [lambda t, ans, x: mul(t, mul(_TWO_OVER_SQRT_PI, exp(neg(_sq(x)))))])
erfc_p = elementwise("erfc", _sc.erfc,
                     [lambda t, ans, x: mul(t, mul(-_TWO_OVER_SQRT_PI, exp(neg(_sq(x)))))])
# erfinv'(x) = sqrt(pi)/2 exp(erfinv(x)^2): reuses the output.
erfinv_p = elementwise("erfinv", _sc.erfinv,
                       [lambda t, ans, x: mul(t, mul(_SQRT_PI_OVER_TWO, exp(_sq(ans))))])


def _polygamma_jvp(t, ans, n, x):
    n1 = n + 1 if isinstance(n, (int, np.integer)) else add(n, 1)
    return mul(t, polygamma(n1, x))


# polygamma(n, x): the order n is an (integer-valued) operand with no derivative.
polygamma_p = elementwise("polygamma", _sc.polygamma, [None, _polygamma_jvp])
digamma_p = elementwise("digamma", _sc.psi, [lambda t, ans, x: mul(t, polygamma(1, x))])
lgamma_p = elementwise("lgamma", _sc.gammaln, [lambda t, ans, x: mul(t, digamma(x))])

# ndtr'(x) = phi(x);  ndtri'(p) = 1 / phi(ndtri(p)) (reuses the output)
ndtr_p = elementwise("ndtr", _sc.ndtr,
                     [lambda t, ans, x: mul(t, mul(_INV_SQRT_2PI, exp(mul(-0.5, _sq(x)))))])
ndtri_p = elementwise("ndtri", _sc.ndtri,
                      [lambda t, ans, x: mul(t, mul(_SQRT_2PI, exp(mul(0.5, _sq(ans)))))])


def _log_ndtr_jvp(t, ans, x):
    # phi(x) / Phi(x) = exp(log phi(x) - log Phi(x)): finite and accurate in the
    # far left tail (x = -40: about 40.025), where phi and Phi both underflow.
    return mul(t, exp(sub(mul(-0.5, _sq(x)), add(ans, _HALF_LOG_2PI))))


log_ndtr_p = elementwise("log_ndtr", _sc.log_ndtr, [_log_ndtr_jvp])


def erf(x):
    return erf_p.bind(x)


def erfc(x):
    return erfc_p.bind(x)


def erfinv(x):
    return erfinv_p.bind(x)


def gammaln(x):
    return lgamma_p.bind(x)


def digamma(x):
    return digamma_p.bind(x)


def polygamma(n, x):
    return polygamma_p.bind(n, x)


def ndtr(x):
    return ndtr_p.bind(x)


def ndtri(x):
    return ndtri_p.bind(x)


def log_ndtr(x):
    return log_ndtr_p.bind(x)
