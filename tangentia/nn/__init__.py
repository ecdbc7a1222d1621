"""Neural-network functions (``tangentia.nn``), mirroring ``jax.nn``.

Activations whose plain composition differentiates badly carry custom JVP
rules (stable, and sharing work between the value and the derivative):

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

from .. import core, dtypes
from .. import numpy as tnp
from ..core import Tracer
from .. import lax as _lax
from ..scipy import special as _sp
from ..lax._stable import _exp_neg_abs, _expit, _named_custom_jvp
from ..scipy.special import _inexact, _log_softmax, _softmax, _softmax_impl, logsumexp

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Literal
    from ..typing import Array, ArrayLike, Axis, AxisName

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


def relu(x: ArrayLike) -> Array:
    """``max(x, 0)``; its derivative at 0 is 0, as in JAX."""
    if not isinstance(x, Tracer):
        x = core.as_array(x, "relu: argument 'x'")
    dt = x.aval.dtype if isinstance(x, Tracer) else x.dtype
    if dt.kind == "b":
        x = tnp.astype(x, np.float64)
    elif dt.kind not in "iuf" and not dtypes.is_ml_float(dt):
        raise TypeError(f"relu: argument 'x' must be a real numeric array, got dtype {dt}")
    return _relu(x)


# ---------------------------------------------------------------------------
# sigmoid, softplus and friends


def sigmoid(x: ArrayLike) -> Array:
    """The logistic sigmoid ``1 / (1 + exp(-x))`` (``tangentia.scipy.special.expit``)."""
    x = _inexact("sigmoid", "x", x, complex_ok=True)
    if _sp._dtype_of(x).kind == "c":   # (JAX's logistic; the stable real form uses abs)
        return _lax.logistic(x)
    return _expit(x)


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


def softplus(x: ArrayLike) -> Array:
    """``log(1 + exp(x))``, stable for any ``x``; its derivative is ``sigmoid(x)``."""
    return _softplus(_inexact("softplus", "x", x))


def log_sigmoid(x: ArrayLike) -> Array:
    """``log(sigmoid(x)) = -softplus(-x)``, stable for any ``x``."""
    x = _inexact("log_sigmoid", "x", x)
    return tnp.negative(_softplus(tnp.negative(x)))


def silu(x: ArrayLike) -> Array:
    """``x * sigmoid(x)`` (also called swish)."""
    x = _inexact("silu", "x", x)
    return tnp.multiply(x, _expit(x))


swish = silu


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x: ArrayLike, approximate: bool = True) -> Array:
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


def elu(x: ArrayLike, alpha: ArrayLike = 1.0) -> Array:
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""
    x = _inexact("elu", "x", x)
    alpha = _scalar_param("elu", "alpha", alpha)
    pos = tnp.greater(x, 0)
    safe = tnp.where(pos, 0.0, x)  # no overflow in the unused branch
    return tnp.where(pos, x, tnp.multiply(alpha, tnp.expm1(safe)))


def leaky_relu(x: ArrayLike, negative_slope: ArrayLike = 0.01) -> Array:
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise."""
    x = _inexact("leaky_relu", "x", x)
    negative_slope = _scalar_param("leaky_relu", "negative_slope", negative_slope)
    return tnp.where(tnp.greater_equal(x, 0), x, tnp.multiply(negative_slope, x))


# ---------------------------------------------------------------------------
# softmax, log_softmax and one_hot


def softmax(x: ArrayLike, axis: Axis = -1, where: ArrayLike | None = None) -> Array:
    """``exp(x) / sum(exp(x))`` over ``axis``; entries outside ``where`` are 0."""
    return _softmax_impl("softmax", _softmax, x, axis, where)


def log_softmax(x: ArrayLike, axis: Axis = -1, where: ArrayLike | None = None) -> Array:
    """``x - logsumexp(x)`` over ``axis``; entries outside ``where`` are -inf."""
    return _softmax_impl("log_softmax", _log_softmax, x, axis, where)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int | AxisName = -1) -> Array:
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


# ---------------------------------------------------------------------------
# More activations (jax.nn's definitions)


def identity(x: ArrayLike) -> Array:
    """``x`` itself."""
    return tnp.asarray(x)


def tanh(x: ArrayLike) -> Array:
    """The hyperbolic tangent (``tangentia.numpy.tanh``)."""
    return tnp.tanh(x)


def _relu6_fun(x):
    return tnp.minimum(tnp.maximum(x, 0), 6.0)


_relu6 = _named_custom_jvp(_relu6_fun, "relu6")


@_relu6.defjvp
def _relu6_jvp(primals, tangents):
    # Derivative 0 at both kinks (0 and 6), as in JAX.
    (x,), (t,) = primals, tangents
    inside = tnp.logical_and(tnp.greater(x, 0), tnp.less(x, 6))
    return _relu6(x), tnp.where(inside, t, 0.0)


def relu6(x: ArrayLike) -> Array:
    """``min(max(x, 0), 6)``; its derivative is 0 at 0 and at 6, as in JAX."""
    return _relu6(_inexact("relu6", "x", x))


def hard_sigmoid(x: ArrayLike) -> Array:
    """``relu6(x + 3) / 6``."""
    return tnp.divide(relu6(tnp.add(_inexact("hard_sigmoid", "x", x), 3.0)), 6.0)


def hard_silu(x: ArrayLike) -> Array:
    """``x * hard_sigmoid(x)`` (also called hard_swish)."""
    x = _inexact("hard_silu", "x", x)
    return tnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def hard_tanh(x: ArrayLike) -> Array:
    """``x`` clipped to ``[-1, 1]``."""
    x = _inexact("hard_tanh", "x", x)
    return tnp.where(tnp.greater(x, 1), 1.0, tnp.where(tnp.less(x, -1), -1.0, x))


def celu(x: ArrayLike, alpha: ArrayLike = 1.0) -> Array:
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = _inexact("celu", "x", x)
    alpha = _scalar_param("celu", "alpha", alpha)
    return tnp.add(tnp.maximum(x, 0.0), tnp.multiply(alpha, tnp.expm1(tnp.divide(
        tnp.minimum(x, 0.0), alpha))))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: ArrayLike) -> Array:
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return tnp.multiply(_SELU_SCALE, elu(_inexact("selu", "x", x), _SELU_ALPHA))


def glu(x: ArrayLike, axis: int = -1) -> Array:
    """Gated linear unit: ``x1 * sigmoid(x2)`` for the two halves of ``x`` along ``axis``."""
    x = _inexact("glu", "x", x)
    size = tnp.shape(x)[axis]
    if size % 2:
        raise AssertionError(f"axis size must be divisible by 2, got {size} (glu: argument 'x')")
    x1, x2 = tnp.split(x, 2, axis)
    return tnp.multiply(x1, sigmoid(x2))


def mish(x: ArrayLike) -> Array:
    """``x * tanh(softplus(x))``."""
    x = _inexact("mish", "x", x)
    return tnp.multiply(x, tnp.tanh(softplus(x)))


def soft_sign(x: ArrayLike) -> Array:
    """``x / (|x| + 1)``."""
    x = _inexact("soft_sign", "x", x)
    return tnp.divide(x, tnp.add(tnp.abs(x), 1.0))


def squareplus(x: ArrayLike, b: ArrayLike = 4) -> Array:
    """``(x + sqrt(x^2 + b)) / 2``."""
    x = _inexact("squareplus", "x", x)
    b = _scalar_param("squareplus", "b", b)
    return tnp.divide(tnp.add(x, tnp.sqrt(tnp.add(tnp.square(x), b))), 2.0)


def sparse_plus(x: ArrayLike) -> Array:
    """0 for ``x <= -1``, ``x`` for ``x >= 1``, ``(x + 1)^2 / 4`` between."""
    x = _inexact("sparse_plus", "x", x)
    return tnp.where(tnp.less_equal(x, -1.0), 0.0,
                     tnp.where(tnp.greater_equal(x, 1.0), x, tnp.divide(tnp.square(x + 1.0), 4.0)))


def sparse_sigmoid(x: ArrayLike) -> Array:
    """``clip((x + 1) / 2, 0, 1)`` (the derivative of sparse_plus)."""
    x = _inexact("sparse_sigmoid", "x", x)
    return tnp.multiply(0.5, tnp.clip(tnp.add(x, 1.0), 0.0, 2.0))


def log1mexp(x: ArrayLike) -> Array:
    """``log(1 - exp(-x))`` for ``x > 0``, accurate at both ends (Maechler's switch at log 2)."""
    x = _inexact("log1mexp", "x", x)
    big = tnp.greater(x, math.log(2.0))
    safe_big = tnp.where(big, x, 1.0)
    safe_small = tnp.where(big, 1.0, x)
    return tnp.where(big, tnp.log1p(tnp.negative(tnp.exp(tnp.negative(safe_big)))),
                     tnp.log(tnp.negative(tnp.expm1(tnp.negative(safe_small)))))


def logmeanexp(x: ArrayLike, axis: Axis | None = None, where: ArrayLike | None = None,
               keepdims: bool = False) -> Array:
    """``log(mean(exp(x)))`` over ``axis``, stable (``logsumexp - log(count)``)."""
    x = _inexact("logmeanexp", "x", x)
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where) if where is not None else \
        logsumexp(x, axis=axis, keepdims=keepdims)
    if where is None:
        shape = tnp.shape(x)
        axes = range(len(shape)) if axis is None else (
            [axis] if isinstance(axis, int) else list(axis))
        count = math.prod(shape[a] for a in axes)
        return tnp.subtract(lse, math.log(count))
    count = tnp.sum(tnp.broadcast_to(where, tnp.shape(x)), axis=axis, keepdims=keepdims)
    return tnp.subtract(lse, tnp.log(tnp.astype(count, tnp.result_type(x))))


def standardize(x: ArrayLike, axis: Axis = -1, mean: ArrayLike | None = None,
                variance: ArrayLike | None = None, epsilon: ArrayLike = 1e-5,
                where: ArrayLike | None = None, *, algorithm: str = "fast") -> Array:
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis`` (mean and variance
    computed when not given: ``algorithm`` "fast", JAX's default, ``mean(x**2) - mean**2``
    clipped at 0 (cancellation can make it negative), or "stable", ``mean((x - mean)**2)``)."""
    x = _inexact("standardize", "x", x)
    if algorithm not in ("fast", "stable"):
        raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    if mean is None:
        mean = tnp.mean(x, axis, keepdims=True, where=where)
    if variance is None and algorithm == "stable":
        variance = tnp.mean(tnp.square(tnp.subtract(x, mean)), axis, keepdims=True, where=where)
    elif variance is None:
        variance = tnp.maximum(tnp.subtract(
            tnp.mean(tnp.square(x), axis, keepdims=True, where=where), tnp.square(mean)), 0)
    return tnp.multiply(tnp.subtract(x, mean), tnp.reciprocal(tnp.sqrt(tnp.add(variance, epsilon))))


def dot_product_attention(query: ArrayLike, key: ArrayLike, value: ArrayLike,
                          bias: ArrayLike | None = None, mask: ArrayLike | None = None, *,
                          scale: float | None = None, is_causal: bool = False,
                          query_seq_lengths: ArrayLike | None = None,
                          key_value_seq_lengths: ArrayLike | None = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: Literal["xla", "cudnn"] | None = None,
                          return_residual: bool = False) -> Array | tuple[Array, Array]:
    """Scaled dot-product attention, as ``jax.nn.dot_product_attention``:
    ``softmax(q k^T * scale + bias, masked) v`` with arrays shaped
    ``[B, T, N, H]`` (query) and ``[B, S, K, H]`` (key, value; ``N`` a multiple
    of ``K``: grouped-query attention), or without the leading batch axis.
    ``mask`` (True keeps), ``is_causal``, the sequence lengths and
    ``local_window_size`` restrict which keys each query sees.  ``return_residual``:
    also the logsumexp of each query's (masked) logits, shaped ``[B, T, N]``, as JAX's
    (differentiable here; JAX's has a zero derivative)."""
    if implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation} "
                         "(dot_product_attention: only None and 'xla' on CPU)")
    q, k, v = (_inexact("dot_product_attention", n, a)
               for n, a in (("query", query), ("key", key), ("value", value)))
    unbatched = tnp.ndim(q) == 3
    if unbatched:
        q, k, v = q[None], k[None], v[None]
        bias = None if bias is None else tnp.asarray(bias)[None] if tnp.ndim(bias) == 3 else bias
        mask = None if mask is None else tnp.asarray(mask)[None] if tnp.ndim(mask) == 3 else mask
    if tnp.ndim(q) != 4 or tnp.ndim(k) != 4 or tnp.ndim(v) != 4:
        raise ValueError("dot_product_attention: query, key and value must be rank 3 ([T, N, H]) "
                         "or 4 ([B, T, N, H])")
    B, T, N, H = tnp.shape(q)
    S, K = tnp.shape(k)[1], tnp.shape(k)[2]
    if N % K:
        raise ValueError(f"dot_product_attention: the number of query heads ({N}) must be a "
                         f"multiple of the number of key/value heads ({K})")
    if N != K:
        k = tnp.repeat(k, N // K, axis=2)
        v = tnp.repeat(v, N // K, axis=2)
    scale = 1.0 / math.sqrt(H) if scale is None else scale
    logits = tnp.multiply(tnp.einsum("btnh,bsnh->bnts", q, k), scale)
    if bias is not None:
        logits = tnp.add(logits, bias)
    keep = None
    if mask is not None:
        keep = tnp.asarray(mask, dtype=bool) if not isinstance(mask, Tracer) else mask
    tpos = np.arange(T)[:, None]
    spos = np.arange(S)[None, :]
    if is_causal:
        c = spos <= tpos
        keep = c if keep is None else tnp.logical_and(keep, c)
    if local_window_size is not None:
        left, right = (local_window_size, local_window_size) if isinstance(local_window_size, int) \
            else local_window_size
        w = (spos >= tpos - left) & (spos <= tpos + right)
        keep = w if keep is None else tnp.logical_and(keep, w)
    if query_seq_lengths is not None:
        qk = tnp.less(tpos[None, None], tnp.reshape(query_seq_lengths, (B, 1, 1, 1)))
        keep = qk if keep is None else tnp.logical_and(keep, qk)
    if key_value_seq_lengths is not None:
        kk = tnp.less(spos[None, None], tnp.reshape(key_value_seq_lengths, (B, 1, 1, 1)))
        keep = kk if keep is None else tnp.logical_and(keep, kk)
    if keep is not None:
        # JAX's -0.7 * max, capped at float32's (the residual of a query whose keys are all
        # masked, -2.4e38 + log S, is JAX's; it was -1.8e308 for float64)
        big_neg = -0.7 * float(min(np.finfo(tnp.result_type(logits)).max,
                                   np.finfo(np.float32).max))
        logits = tnp.where(keep, logits, big_neg)
    probs = softmax(logits, axis=-1)
    out = tnp.einsum("bnts,bsnh->btnh", probs, v)
    if query_seq_lengths is not None:
        # a query past its sequence's length gives 0, as JAX's (its logits are all masked: the
        # softmax was uniform, and the row the mean of the values)
        real = tnp.less(np.arange(T)[None, :], tnp.reshape(query_seq_lengths, (B, 1)))
        out = tnp.multiply(out, tnp.astype(real, tnp.result_type(out))[:, :, None, None])
    if return_residual:
        lse = tnp.transpose(logsumexp(logits, axis=-1), (0, 2, 1))
        return (out[0], lse[0]) if unbatched else (out, lse)
    return out[0] if unbatched else out


__all__ += ["identity", "tanh", "relu6", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
            "celu", "selu", "glu", "mish", "soft_sign", "squareplus", "sparse_plus",
            "sparse_sigmoid", "log1mexp", "logmeanexp", "standardize", "dot_product_attention"]

from . import initializers  # noqa: E402,F401  (jax.nn.initializers)
