"""Neural-network functions (``tangentia.nn``), mirroring ``jax.nn``.

Activations whose plain composition differentiates badly carry custom JVP
rules (seeds 000 and 004):

* ``relu``: derivative 0 at 0 (as in JAX), at every order;
* ``sigmoid`` (= ``tangentia.scipy.special.expit``): one ``exp(-|x|)`` shared
  by the value and the derivative;
* ``softplus``: the same shared exponential gives ``log1p(exp(-|x|))`` and
  the derivative ``sigmoid(x)`` -- exactly 1.0 at 1000 and 0.0 at -1000;
* ``softmax`` / ``log_softmax``: max-shifted, with derivative rules whose
  Jacobians are finite for inputs of any size.

Everything else is a composition of those and ``tangentia.numpy``; every
function works under ``grad``, ``jvp``, ``vmap`` and ``jit`` in any order.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import core
from .. import numpy as tnp
from ..core import Tracer
from ..scipy import special as _sp
from ..scipy.special import (_exp_neg_abs, _inexact, _log_softmax, _named_custom_jvp,
                             _softmax, _softmax_impl, logsumexp)

__all__ = ["relu", "softplus", "sigmoid", "log_sigmoid", "silu", "swish", "gelu", "elu",
           "leaky_relu", "one_hot", "softmax", "log_softmax", "logsumexp"]


# ---------------------------------------------------------------------------
# relu


def _relu_fun(x):
    return tnp.maximum(x, 0)


_relu = _named_custom_jvp(_relu_fun, "relu")


@_relu.defjvp
def _relu_jvp(primals, tangents):
    # The derivative at 0 is 0 (maximum's rule would give 1/2).
    (x,), (t,) = primals, tangents
    return _relu(x), tnp.where(tnp.greater(x, 0), t, 0.0)


def relu(x):
    """``max(x, 0)``; its derivative at 0 is 0, as in JAX."""
    if not isinstance(x, Tracer):
        x = core.as_array(x, "relu: argument 'x'")
    dt = x.aval.dtype if isinstance(x, Tracer) else x.dtype
    if dt.kind == "b":
        x = tnp.astype(x, np.float64)
    elif dt.kind not in "iuf":
        raise TypeError(f"relu: argument 'x' must be a real numeric array, got dtype {dt}")
    return _relu(x)


# ---------------------------------------------------------------------------
# sigmoid, softplus and friends


def sigmoid(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))`` (``tangentia.scipy.special.expit``)."""
    return _sp._expit(_inexact("sigmoid", "x", x))


def _softplus_fun(x):
    return tnp.add(tnp.maximum(x, 0), tnp.log1p(tnp.exp(tnp.negative(tnp.abs(x)))))


_softplus = _named_custom_jvp(_softplus_fun, "softplus")


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    # softplus(x) = max(x, 0) + log1p(e) and softplus'(x) = sigmoid(x), with
    # e = exp(-|x|) computed once for both.  The branch is picked with a
    # select (not maximum) so that higher derivatives see one analytic branch.
    (x,), (t,) = primals, tangents
    pos, e = _exp_neg_abs(x)
    y = tnp.add(tnp.where(pos, x, 0.0), tnp.log1p(e))
    dy = tnp.divide(tnp.where(pos, 1.0, e), tnp.add(1.0, e))
    return y, tnp.multiply(t, dy)


def softplus(x):
    """``log(1 + exp(x))``, stable for any ``x``; its derivative is ``sigmoid(x)``."""
    return _softplus(_inexact("softplus", "x", x))


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for any ``x``."""
    x = _inexact("log_sigmoid", "x", x)
    return tnp.negative(_softplus(tnp.negative(x)))


def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    x = _inexact("silu", "x", x)
    return tnp.multiply(x, _sp._expit(x))


swish = silu


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x, approximate=True):
    """The Gaussian error linear unit.

    ``approximate=True``: ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``;
    ``approximate=False``: the exact ``x * Phi(x)`` (``Phi`` the normal CDF).
    """
    if not isinstance(approximate, (bool, np.bool_)):
        raise TypeError(f"gelu: argument 'approximate' must be a Python bool, got "
                        f"{type(approximate).__name__}")
    x = _inexact("gelu", "x", x)
    if approximate:
        inner = tnp.multiply(_SQRT_2_OVER_PI,
                             tnp.add(x, tnp.multiply(0.044715, tnp.multiply(x, tnp.square(x)))))
        return tnp.multiply(tnp.multiply(0.5, x), tnp.add(1.0, tnp.tanh(inner)))
    return tnp.multiply(x, _sp.ndtr(x))


def _scalar_param(fname, argname, v):
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{fname}: argument '{argname}' must be a number or array, got a bool")
    if isinstance(v, (int, float, np.integer, np.floating)):
        return float(v)
    return _inexact(fname, argname, v)


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""
    x = _inexact("elu", "x", x)
    alpha = _scalar_param("elu", "alpha", alpha)
    pos = tnp.greater(x, 0)
    safe = tnp.where(pos, 0.0, x)  # no overflow in the unused branch
    return tnp.where(pos, x, tnp.multiply(alpha, tnp.expm1(safe)))


def leaky_relu(x, negative_slope=0.01):
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise."""
    x = _inexact("leaky_relu", "x", x)
    negative_slope = _scalar_param("leaky_relu", "negative_slope", negative_slope)
    return tnp.where(tnp.greater_equal(x, 0), x, tnp.multiply(negative_slope, x))


# ---------------------------------------------------------------------------
# softmax, log_softmax and one_hot


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` over ``axis``; entries outside ``where`` are 0."""
    return _softmax_impl("softmax", _softmax, x, axis, where)


def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x)`` over ``axis``; entries outside ``where`` are -inf."""
    return _softmax_impl("log_softmax", _log_softmax, x, axis, where)


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """One-hot encode ``x``: ``out[..., k, ...] = (x == k)`` for ``k < num_classes``.

    The new axis of size ``num_classes`` is placed at ``axis`` of the result.
    Values outside ``[0, num_classes)`` give all-zero rows.
    """
    if isinstance(num_classes, Tracer):
        try:
            num_classes = num_classes.concrete_value("one_hot")
        except core.ConcretizationTypeError:
            raise core.ConcretizationTypeError(
                "one_hot: argument 'num_classes' must be a concrete integer (it determines the "
                "shape of the result), but it is traced") from None
        if np.ndim(num_classes) != 0 or np.asarray(num_classes).dtype.kind not in "iu":
            raise TypeError(f"one_hot: argument 'num_classes' must be an integer, got "
                            f"{num_classes!r:.60}")
        num_classes = int(num_classes)
    if isinstance(num_classes, (bool, np.bool_)):
        raise TypeError("one_hot: argument 'num_classes' must be an integer, got a bool")
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError(f"one_hot: argument 'num_classes' must be an integer, got "
                        f"{num_classes!r:.60} of type {type(num_classes).__name__}") from None
    if num_classes < 0:
        raise ValueError(f"one_hot: argument 'num_classes' must be non-negative, got "
                         f"{num_classes}")
    try:
        dtype = np.dtype(np.float64 if dtype is None else dtype)
    except TypeError:
        raise TypeError(f"one_hot: argument 'dtype' is not a valid dtype: {dtype!r}") from None
    if not isinstance(x, Tracer):
        x = core.as_array(x, "one_hot: argument 'x'")
    xdt = x.aval.dtype if isinstance(x, Tracer) else x.dtype
    if xdt.kind not in "biuf":
        raise TypeError(f"one_hot: argument 'x' must be an integer array, got dtype {xdt}")
    nd = tnp.ndim(x) + 1
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"one_hot: argument 'axis' must be an int, got {axis!r}")
    if not -nd <= axis < nd:
        raise ValueError(f"one_hot: axis {axis} (argument 'axis') is out of bounds for a result "
                         f"of rank {nd}")
    axis = int(axis) % nd
    lhs = tnp.expand_dims(x, axis)
    rhs_shape = [1] * nd
    rhs_shape[axis] = num_classes
    rhs = np.arange(num_classes).reshape(rhs_shape)
    return tnp.astype(tnp.equal(lhs, rhs), dtype)
