"""The numerically stable logistic function and its custom rule, shared by
``lax.logistic``, ``tangentia.scipy.special.expit`` and ``tangentia.nn.sigmoid``.

They live in the lax layer, which ``scipy.special`` and ``nn`` build on, so that no
module of ``lax`` imports a library module above it.
"""
from __future__ import annotations

from .. import numpy as tnp
from ..custom_derivatives import custom_jvp


def _named_custom_jvp(fun, name, nondiff_argnums=()):
    fun.__name__ = fun.__qualname__ = name
    return custom_jvp(fun, nondiff_argnums=nondiff_argnums)


# ---------------------------------------------------------------------------
# -|x| with a one-sided derivative
#
# The stable logistic formulas compute e = exp(-|x|) <= 1, which never
# overflows.  Plain differentiation of abs gives 0 at x == 0, which would make
# the rules below wrong at x == 0 under *further* differentiation (their
# outputs are differentiated like any other code at higher orders).  This
# helper's derivative is -1 for x >= 0 and +1 for x < 0, consistent with the
# branch the rules select with ``x >= 0``, so every derivative of the rules is
# the derivative of one analytic branch.


def _neg_abs_fun(x):
    return tnp.negative(tnp.abs(x))


_neg_abs = _named_custom_jvp(_neg_abs_fun, "neg_abs")


@_neg_abs.defjvp
def _neg_abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _neg_abs(x), tnp.where(tnp.greater_equal(x, 0), tnp.negative(t), t)


def _exp_neg_abs(x):
    """``(x >= 0, exp(-|x|))``, the one exponential the logistic rules share."""
    return tnp.greater_equal(x, 0), tnp.exp(_neg_abs(x))


# ---------------------------------------------------------------------------
# the logistic sigmoid of a real x


def _expit_fun(x):
    e = tnp.exp(tnp.negative(tnp.abs(x)))
    return tnp.divide(tnp.where(tnp.greater_equal(x, 0), 1.0, e), tnp.add(1.0, e))


_expit = _named_custom_jvp(_expit_fun, "expit")


@_expit.defjvp
def _expit_jvp(primals, tangents):
    # A rule that shares work with the value: one exponential e = exp(-|x|) serves both the
    # value, y = 1/(1+e) or e/(1+e), and the derivative, e/(1+e)^2 (no second
    # exp, no cancellation, finite everywhere).  Under grad only the
    # derivative's part survives dead-code elimination.
    (x,), (t,) = primals, tangents
    pos, e = _exp_neg_abs(x)
    d = tnp.add(1.0, e)
    y = tnp.divide(tnp.where(pos, 1.0, e), d)
    return y, tnp.multiply(t, tnp.divide(e, tnp.multiply(d, d)))


def logistic(x):
    """``1 / (1 + exp(-x))`` of a floating or complex ``x`` (its dtype already checked):
    the stable rule above for real ``x``, the plain formula (holomorphic) for complex."""
    if tnp.iscomplexobj(x):
        return tnp.divide(1.0, tnp.add(1.0, tnp.exp(tnp.negative(x))))
    return _expit(x)
