"""Special functions (``tangentia.scipy.special``), mirroring ``jax.scipy.special``.

Two kinds of functions live here:

* thin wrappers of special-function *primitives* (``erf``, ``erfc``,
  ``erfinv``, ``gammaln``, ``digamma``, ``polygamma``, ``ndtr``, ``ndtri``,
  ``log_ndtr``, ``gamma``, ``rgamma``, ``gammasgn``, ``beta``, ``betaln``,
  ``gammainc``, ``gammaincc``, ``betainc``, ``erfcinv``, the Bessel
  functions ``i0``/``i0e``/``i1``/``i1e``/``iv``/``ive``/``jv``/``yv`` and
  their integer-order spellings, ``zeta``, ``erfcx``, the exponential
  integrals ``exp1``/``expi``/``expn``, ``poch``, ``kl_div``, ``rel_entr``,
  ``hyp1f1``/``hyp2f1`` (differentiable in ``x``), ``spence``, ``dawsn``,
  ``fresnel``, ``sici``, ``owens_t``, ``wofz`` (complex) and ``sph_harm_y``; see
  ``tangentia/primitives/special.py``), which promote
  integer inputs to float64 and check their arguments;
* functions written with ``tnp`` and given **custom derivative rules** where
  the rule is more stable or cheaper than differentiating the composition
  (for stability and to share work between value and derivative): ``expit``, ``logit``, ``xlogy``, ``xlog1py``,
  ``softmax`` and ``log_softmax``.  ``logsumexp`` uses the max-shift with a
  ``stop_gradient`` instead, which makes its derivative exact and finite at
  any input, at every order.

Every function works under ``grad``, ``jvp``, ``vmap`` and ``jit`` in any
composition.  ``tangentia.nn`` builds its activations on the rules here.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import core, dtypes
from .. import numpy as tnp
from ..core import Tracer
from ..lax._stable import _named_custom_jvp
from ..lax._stable import logistic as _logistic
from ..primitives import special as _SP
from ..primitives import structural as _S
from ..primitives._lazy import LazyModule as _LazyModule

_scipy_special = _LazyModule("scipy.special", globals(), "_scipy_special")  # (at first use)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from ..typing import Array, ArrayLike, Axis

__all__ = ["expit", "logit", "logsumexp", "xlogy", "xlog1py", "erf", "erfc", "erfinv", "gammaln",
           "digamma", "polygamma", "log_ndtr", "ndtr", "ndtri", "softmax", "log_softmax",
           "gamma", "rgamma", "gammasgn", "loggamma", "psi", "beta", "betaln", "gammainc",
           "gammaincc", "betainc", "entr", "multigammaln", "erfcinv", "i0", "i0e", "i1", "i1e",
           "iv", "ive", "jv", "jn", "j0", "j1", "yv", "yn", "y0", "y1", "zeta", "erfcx", "exp1",
           "expi", "expn", "poch", "factorial", "comb", "kl_div", "rel_entr", "hyp1f1", "hyp2f1",
           "spence", "dawsn", "fresnel", "sici", "owens_t", "bernoulli", "boxcox", "boxcox1p",
           "wofz", "bessel_jn", "sph_harm_y"]


# ---------------------------------------------------------------------------
# Argument checking and promotion


def _dtype_of(x):
    return x.aval.dtype if isinstance(x, Tracer) else x.dtype


def _inexact(fname, argname, x, keep_scalars=False, complex_ok=False):
    """``x`` as a real floating array: bools and integers become float64.

    With ``keep_scalars``, Python numbers stay Python floats, so that they
    promote weakly against the other argument (as in JAX). With ``complex_ok``,
    complex arrays are taken as they are (SciPy's function is defined on them).
    """
    if keep_scalars and type(x) in (bool, int, float):
        return float(x)
    if not isinstance(x, Tracer):
        x = core.as_array(x, f"{fname}: argument '{argname}'")
    dt = _dtype_of(x)
    if dtypes.is_real_floating(dt):   # (bfloat16 too)
        return x
    if dt.kind in "biu":
        return tnp.astype(x, np.float64)
    if dt.kind == "c":
        if complex_ok:
            return x
        raise TypeError(f"{fname}: argument '{argname}' has complex dtype {dt}; only real inputs "
                        "are supported")
    raise TypeError(f"{fname}: argument '{argname}' must be a numeric array, got dtype {dt}")


def _normalize_axes(fname, axis, nd):
    """``axis`` (None, an int or a sequence of ints) as a sorted tuple of axes."""
    if axis is None:
        return tuple(range(nd))
    seq = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in seq:
        if isinstance(a, (bool, np.bool_)) or isinstance(a, Tracer):
            raise TypeError(f"{fname}: argument 'axis' must be None, an int or a tuple of ints, "
                            f"got {axis!r}")
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"{fname}: argument 'axis' must be None, an int or a tuple of ints, "
                            f"got {axis!r}") from None
        if not -nd <= a < nd:
            raise ValueError(f"{fname}: axis {a} (argument 'axis') is out of bounds for an array "
                             f"of rank {nd}")
        out.append(a % nd)
    if len(set(out)) != len(out):
        raise ValueError(f"{fname}: argument 'axis' has repeated axes: {axis!r}")
    return tuple(sorted(out))


def _as_mask(fname, where, shape):
    """The ``where`` argument as a boolean array broadcast-compatible with ``shape``."""
    if not isinstance(where, Tracer):
        where = core.as_array(where, f"{fname}: argument 'where'")
    if _dtype_of(where) != np.bool_:
        raise TypeError(f"{fname}: argument 'where' must be a boolean array, got dtype "
                        f"{_dtype_of(where)}")
    ws = tnp.shape(where)
    try:
        out = np.broadcast_shapes(ws, shape)
    except ValueError:
        out = None
    if out != tuple(shape):
        raise ValueError(f"{fname}: argument 'where' of shape {ws} does not broadcast to the "
                         f"shape {tuple(shape)} of the input")
    return where


# ---------------------------------------------------------------------------
# expit (the logistic sigmoid) and logit: the stable rule is lax's (lax/_stable.py)


def expit(x: ArrayLike) -> Array:
    """The logistic sigmoid ``1 / (1 + exp(-x))``, stable for any real ``x``; complex
    ``x`` as JAX's (``lax.logistic``; SciPy's takes none), holomorphic."""
    return _logistic(_inexact("expit", "x", x, complex_ok=True))


def _logit_fun(x):
    return tnp.log(tnp.divide(x, tnp.subtract(1.0, x)))


_logit = _named_custom_jvp(_logit_fun, "logit")


@_logit.defjvp
def _logit_jvp(primals, tangents):
    # 1 - x is shared by the value and the derivative 1 / (x (1 - x)); near 1,
    # 1 - x is exact, so both stay accurate at p = 1 - 1e-12.
    (x,), (t,) = primals, tangents
    q = tnp.subtract(1.0, x)
    return tnp.log(tnp.divide(x, q)), tnp.divide(t, tnp.multiply(x, q))


def logit(x: ArrayLike) -> Array:
    """The inverse of ``expit``: ``log(x / (1 - x))``."""
    return _logit(_inexact("logit", "x", x))


# ---------------------------------------------------------------------------
# logsumexp


def logsumexp(a: ArrayLike, axis: Axis | None = None, b: ArrayLike | None = None,
              keepdims: bool = False, return_sign: bool = False,
              where: ArrayLike | None = None) -> Array | tuple[Array, Array]:
    """``log(sum(b * exp(a)))`` over ``axis``, computed stably.

    The maximum is subtracted before exponentiating and added back after the
    log; it is wrapped in ``stop_gradient`` (the result does not depend on
    it), so the derivative is ``b * exp(a - max) / sum`` -- finite even for
    inputs near the float64 limits.  With ``b``, negative sums give NaN unless
    ``return_sign=True``, which returns ``(log|sum|, sign(sum))``.
    """
    fname = "logsumexp"
    a = _inexact(fname, "a", a)
    a_shape = tnp.shape(a)
    if b is not None:
        b = _inexact(fname, "b", b)
        b_shape = tnp.shape(b)
        try:
            shape = tuple(np.broadcast_shapes(a_shape, b_shape))
        except ValueError:
            raise ValueError(f"{fname}: argument 'b' of shape {b_shape} is not broadcast-"
                             f"compatible with argument 'a' of shape {a_shape}") from None
        if shape != a_shape:
            a = tnp.broadcast_to(a, shape)
        if b_shape != shape:
            b = tnp.broadcast_to(b, shape)
        # Terms with b == 0 do not count, even where a is inf.
        a = tnp.where(tnp.not_equal(b, 0), a, -np.inf)
    else:
        shape = a_shape
    if where is not None:
        mask = _as_mask(fname, where, shape)
        a = tnp.where(mask, a, -np.inf)
    nd = len(shape)
    axes = _normalize_axes(fname, axis, nd)
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    if builtins.any(shape[i] == 0 for i in axes):
        amax = np.zeros(kept, _dtype_of(a))
    else:
        amax = tnp.max(a, axis=axes, keepdims=True)
        amax = _S.stop_gradient(tnp.where(tnp.isfinite(amax), amax, 0.0))
    exp_a = tnp.exp(tnp.subtract(a, amax))
    if b is not None:
        exp_a = tnp.multiply(exp_a, b)
    sumexp = tnp.sum(exp_a, axis=axes, keepdims=True)
    sign = tnp.sign(sumexp)
    if b is not None:
        sumexp = tnp.abs(sumexp)
    out = tnp.add(tnp.log(sumexp), amax)
    if not keepdims:
        reduced = tuple(d for i, d in enumerate(shape) if i not in axes)
        out = tnp.reshape(out, reduced)
        sign = tnp.reshape(sign, reduced)
    if return_sign:
        return out, sign
    if b is not None:
        out = tnp.where(tnp.less(sign, 0), np.nan, out)
    return out


# ---------------------------------------------------------------------------
# xlogy and xlog1py (zero at x == 0, with JAX's derivative semantics)


def _xlogy_fun(x, y):
    # (0 * log(NaN) is NaN, as JAX's and SciPy's: only a number y is ignored at x == 0)
    x_ok = tnp.logical_or(tnp.not_equal(x, 0), tnp.isnan(y))
    safe_y = tnp.where(x_ok, y, 1.0)
    return tnp.where(x_ok, tnp.multiply(x, tnp.log(safe_y)), 0.0)


_xlogy = _named_custom_jvp(_xlogy_fun, "xlogy")


def _fit_tangent(t, out):
    shape = tnp.shape(out)
    if tnp.shape(t) != shape:
        t = tnp.broadcast_to(t, shape)
    return tnp.astype(t, _dtype_of(out)) if _dtype_of(t) != _dtype_of(out) else t


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    # As in JAX: d/dx = log(y), d/dy = x / y (so at x == 0, y > 0 the
    # derivatives are log(y) and 0).
    (x, y), (tx, ty) = primals, tangents
    out = _xlogy(x, y)
    t = tnp.add(tnp.multiply(tx, tnp.log(y)), tnp.divide(tnp.multiply(ty, x), y))
    return out, _fit_tangent(t, out)


def _promote_pair(fname, x, y):
    """Promote two arguments; a Python number takes the other argument's dtype (weak typing)."""
    x = _inexact(fname, "x", x, True)
    y = _inexact(fname, "y", y, True)
    if type(x) is float and type(y) is not float:
        x = np.asarray(x, _dtype_of(y))
    elif type(y) is float and type(x) is not float:
        y = np.asarray(y, _dtype_of(x))
    return x, y


def xlogy(x: ArrayLike, y: ArrayLike) -> Array:
    """``x * log(y)``, defined as 0 where ``x == 0`` (even if ``y == 0``)."""
    return _xlogy(*_promote_pair("xlogy", x, y))


def _xlog1py_fun(x, y):
    x_ok = tnp.logical_or(tnp.not_equal(x, 0), tnp.isnan(y))
    safe_y = tnp.where(x_ok, y, 0.0)
    return tnp.where(x_ok, tnp.multiply(x, tnp.log1p(safe_y)), 0.0)


_xlog1py = _named_custom_jvp(_xlog1py_fun, "xlog1py")


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = _xlog1py(x, y)
    t = tnp.add(tnp.multiply(tx, tnp.log1p(y)),
                tnp.divide(tnp.multiply(ty, x), tnp.add(1.0, y)))
    return out, _fit_tangent(t, out)


def xlog1py(x: ArrayLike, y: ArrayLike) -> Array:
    """``x * log1p(y)``, defined as 0 where ``x == 0`` (even if ``y == -1``)."""
    return _xlog1py(*_promote_pair("xlog1py", x, y))


# ---------------------------------------------------------------------------
# Special-function primitives


def erf(x: ArrayLike) -> Array:
    """The error function, of real or complex ``x`` (complex as SciPy's, which JAX's
    rejects); holomorphic, so ``grad(..., holomorphic=True)`` gives ``erf'``."""
    return _SP.erf(_inexact("erf", "x", x, complex_ok=True))


def erfc(x: ArrayLike) -> Array:
    """The complementary error function ``1 - erf(x)`` (accurate for large x), of real or
    complex ``x`` (complex as SciPy's, which JAX's rejects)."""
    return _SP.erfc(_inexact("erfc", "x", x, complex_ok=True))


def erfinv(x: ArrayLike) -> Array:
    """The inverse of ``erf`` on (-1, 1)."""
    return _SP.erfinv(_inexact("erfinv", "x", x))


def gammaln(x: ArrayLike) -> Array:
    """``log|Gamma(x)|``."""
    return _SP.gammaln(_inexact("gammaln", "x", x))


def _nan_where(cond, out):
    """``out`` with NaN where ``cond`` (added, so that the derivative is ``out``'s)."""
    return out + tnp.where(cond, np.nan, 0.0).astype(tnp.result_type(out))


def digamma(x: ArrayLike) -> Array:
    """The logarithmic derivative of Gamma (its derivative is ``polygamma(1, x)``); NaN at
    the poles 0, -0 and the negative integers, as JAX's (SciPy's is -inf/+inf at +0/-0)."""
    x = _inexact("digamma", "x", x)
    return _nan_where(x == 0, _SP.digamma(x))


def polygamma(n: ArrayLike, x: ArrayLike) -> Array:
    """The n-th derivative of ``digamma`` (``n`` a non-negative integer; not differentiable)."""
    if not isinstance(n, Tracer):
        n_arr = core.as_array(n, "polygamma: argument 'n'")
        if n_arr.dtype.kind not in "iu":
            if n_arr.dtype.kind != "f" or not np.all(np.equal(np.mod(n_arr, 1), 0)):
                raise TypeError(f"polygamma: argument 'n' must be integer-valued, got {n!r:.60}")
        if np.any(n_arr < 0):
            raise ValueError(f"polygamma: argument 'n' must be non-negative, got {n!r:.60}")
        n = int(n) if isinstance(n, (int, np.integer)) else n_arr
    x = _inexact("polygamma", "x", x)
    # at a pole (0, -0, a negative integer) an even order has no sign: NaN, as JAX's
    # (SciPy's is -inf, or +-inf for n = 0); an odd order is +inf in both
    pole = (x <= 0) & (tnp.floor(x) == x)
    return _nan_where(pole & (tnp.asarray(n) % 2 == 0), _SP.polygamma(n, x))


def ndtr(x: ArrayLike) -> Array:
    """The standard normal CDF."""
    return _SP.ndtr(_inexact("ndtr", "x", x))


def ndtri(p: ArrayLike) -> Array:
    """The inverse of ``ndtr`` (the standard normal quantile function)."""
    return _SP.ndtri(_inexact("ndtri", "p", p))


def log_ndtr(x: ArrayLike, series_order: int = 3) -> Array:
    """``log(ndtr(x))``, accurate in both tails (e.g. x = -40 or x = 40).

    ``series_order`` is accepted for compatibility with JAX; the value comes
    from SciPy's ``log_ndtr``, which is accurate everywhere.
    """
    if isinstance(series_order, bool) or not isinstance(series_order, (int, np.integer)):
        raise TypeError(f"log_ndtr: argument 'series_order' must be a Python int, got "
                        f"{series_order!r:.60}")
    if not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: argument 'series_order' must be in [0, 30], got "
                         f"{series_order}")
    return _SP.log_ndtr(_inexact("log_ndtr", "x", x))


def gamma(x: ArrayLike) -> Array:
    """The Gamma function (``inf`` at 0 and the negative integers, as SciPy)."""
    return _SP.gamma(_inexact("gamma", "x", x))


def rgamma(x: ArrayLike) -> Any:
    """``1 / gamma(x)`` (0 at the poles of gamma)."""
    return _SP.rgamma(_inexact("rgamma", "x", x))


def gammasgn(x: ArrayLike) -> Array:
    """The sign of ``gamma(x)`` (derivative 0)."""
    return _SP.gammasgn(_inexact("gammasgn", "x", x))


def loggamma(x: ArrayLike) -> Array:
    """``log(gamma(x))`` for real ``x``: ``gammaln`` for ``x >= 0``, NaN for ``x < 0`` (SciPy)."""
    x = _inexact("loggamma", "x", x)
    return tnp.where(tnp.less(x, 0), np.nan, _SP.gammaln(x))


psi = digamma


def _promote_all(fname, names, args):
    """Promote several arguments together (Python numbers weakly, like NumPy)."""
    args = [_inexact(fname, n, a, True) for n, a in zip(names, args)]
    arrays = [a for a in args if type(a) is not float]
    if not arrays:
        return [np.asarray(a, np.float64) for a in args]
    dt = np.result_type(*[_dtype_of(a) for a in arrays])
    return [np.asarray(a, dt) if type(a) is float else
            (a if _dtype_of(a) == dt else tnp.astype(a, dt)) for a in args]


def beta(a: ArrayLike, b: ArrayLike) -> Array:
    """The Beta function ``gamma(a) gamma(b) / gamma(a + b)``."""
    return _SP.beta(*_promote_all("beta", ("a", "b"), (a, b)))


def betaln(a: ArrayLike, b: ArrayLike) -> Array:
    """``log|beta(a, b)|``, accurate for large arguments."""
    return _SP.betaln(*_promote_all("betaln", ("a", "b"), (a, b)))


def gammainc(a: ArrayLike, x: ArrayLike) -> Array:
    """The regularized lower incomplete gamma function ``P(a, x)``.

    Differentiable with respect to ``x`` and to the shape ``a`` (first order in
    ``a``: by differentiating its series or continued fraction).
    """
    return _SP.gammainc(*_promote_all("gammainc", ("a", "x"), (a, x)))


def gammaincc(a: ArrayLike, x: ArrayLike) -> Array:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    return _SP.gammaincc(*_promote_all("gammaincc", ("a", "x"), (a, x)))


def betainc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> Array:
    """The regularized incomplete beta function ``I_x(a, b)``.

    Differentiable with respect to ``x``; derivatives with respect to ``a`` and
    ``b`` raise ``NotImplementedError`` (as in JAX).
    """
    return _SP.betainc(*_promote_all("betainc", ("a", "b", "x"), (a, b, x)))


def _entr_fun(x):
    neg = tnp.less(x, 0)
    safe = tnp.where(neg, 1.0, x)
    return tnp.where(neg, -np.inf, tnp.negative(xlogy(safe, safe)))


_entr = _named_custom_jvp(_entr_fun, "entr")


@_entr.defjvp
def _entr_jvp(primals, tangents):
    # -log(x) - 1 for x >= 0: +inf at 0 and -inf at inf, as JAX's (through xlogy's rule the
    # derivative was 0 * log(0) + 0 / 0 = NaN there); 0 where entr is the constant -inf
    (x,), (t,) = primals, tangents
    pos = tnp.greater(x, 0)
    d = tnp.negative(tnp.add(tnp.log(tnp.where(pos, x, 1.0)), 1.0))
    d = tnp.where(pos, d, tnp.where(tnp.equal(x, 0), np.inf, tnp.where(tnp.less(x, 0), 0.0, x)))
    out = _entr(x)
    return out, _fit_tangent(tnp.multiply(t, d), out)


def entr(x: ArrayLike) -> Array:
    """``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0`` (SciPy's ``entr``)."""
    return _entr(_inexact("entr", "x", x))


def multigammaln(a: ArrayLike, d: ArrayLike) -> Array:
    """The log of the multivariate gamma function of dimension ``d`` (a Python int)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"multigammaln: argument 'd' must be a positive Python int, got {d!r:.60}")
    a = _inexact("multigammaln", "a", a)
    d = int(d)
    const = d * (d - 1) / 4.0 * np.log(np.pi)
    js = np.arange(d, dtype=_dtype_of(a))
    terms = gammaln(tnp.subtract(tnp.expand_dims(a, -1), js / 2.0))
    return tnp.add(tnp.sum(terms, axis=-1), np.asarray(const, _dtype_of(a)))


# ---------------------------------------------------------------------------
# softmax and log_softmax (shared by tangentia.nn)


def _masked(x, mask):
    return x if mask is None else tnp.where(mask, x, -np.inf)


def _shift(x, axes):
    """``x - max(x)`` over ``axes``; a max of -inf (a slice all -inf or masked) or NaN shifts
    by 0, one of +inf by itself: a slice holding +inf is all NaN, as JAX documents ("If any
    input values are +inf, the result will be all NaN"; ours gave NaN at the +inf and 0 or
    -inf beside it)."""
    m = tnp.max(x, axis=axes, keepdims=True)
    keep = tnp.logical_or(tnp.isfinite(m), tnp.isposinf(m))
    return tnp.subtract(x, _S.stop_gradient(tnp.where(keep, m, 0.0)))


def _softmax_fun(x, axes, mask):
    u = tnp.exp(_shift(_masked(x, mask), axes))
    y = tnp.divide(u, tnp.sum(u, axis=axes, keepdims=True))
    return y if mask is None else tnp.where(mask, y, 0.0)


_softmax = _named_custom_jvp(_softmax_fun, "softmax", nondiff_argnums=(1, 2))


@_softmax.defjvp
def _softmax_jvp(axes, mask, primals, tangents):
    # The output is shared by the value and the derivative
    # y * (t - <y, t>), which is bounded however large x is.
    (x,), (t,) = primals, tangents
    y = _softmax(x, axes, mask)
    if mask is not None:
        # a masked entry neither moves the output nor has a tangent, also in a slice that is
        # NaN (0 * NaN), as JAX's (its where= selects x before the rule): masked on the way in
        # for the transpose, and out for the jvp
        t = tnp.where(mask, t, 0.0)
    ty = tnp.multiply(y, tnp.subtract(t, tnp.sum(tnp.multiply(y, t), axis=axes, keepdims=True)))
    return y, ty if mask is None else tnp.where(mask, ty, 0.0)


def _log_softmax_fun(x, axes, mask):
    s = _shift(_masked(x, mask), axes)
    y = tnp.subtract(s, tnp.log(tnp.sum(tnp.exp(s), axis=axes, keepdims=True)))
    return y if mask is None else tnp.where(mask, y, -np.inf)


_log_softmax = _named_custom_jvp(_log_softmax_fun, "log_softmax", nondiff_argnums=(1, 2))


@_log_softmax.defjvp
def _log_softmax_jvp(axes, mask, primals, tangents):
    # exp(x - max) is computed once: its sum gives the value and, divided by
    # that sum, the softmax in the derivative t - <softmax, t>.
    (x,), (t,) = primals, tangents
    s = _shift(_masked(x, mask), axes)
    u = tnp.exp(s)
    z = tnp.sum(u, axis=axes, keepdims=True)
    y = tnp.subtract(s, tnp.log(z))
    p = tnp.divide(u, z)
    if mask is not None:   # (a row masked whole has p = 0/0: no weight there, as JAX's)
        p = tnp.where(mask, p, 0.0)
    ty = tnp.subtract(t, tnp.sum(tnp.multiply(p, t), axis=axes, keepdims=True))
    if mask is not None:
        y = tnp.where(mask, y, -np.inf)
        ty = tnp.where(mask, ty, 0.0)
    return y, ty


def _softmax_impl(fname, fn, x, axis, where):
    x = _inexact(fname, "x", x)
    shape = tnp.shape(x)
    axes = _normalize_axes(fname, axis, len(shape))
    mask = None if where is None else _as_mask(fname, where, shape)
    if builtins.any(shape[i] == 0 for i in axes):
        return x  # nothing to normalize: an empty result
    return fn(x, axes, mask)


def softmax(x: ArrayLike, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """``exp(x) / sum(exp(x))`` over ``axis`` (all axes by default, as in SciPy)."""
    return _softmax_impl("softmax", _softmax, x, axis, None)


def log_softmax(x: ArrayLike, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """``x - logsumexp(x)`` over ``axis`` (all axes by default, as in SciPy)."""
    return _softmax_impl("log_softmax", _log_softmax, x, axis, None)


# ---------------------------------------------------------------------------
# erfcinv, Bessel functions and zeta (primitives; derivatives in x only)


def _unary(name: str, prim_fn: Callable[..., Array], doc: str) -> Callable[[ArrayLike], Array]:
    def fn(x: ArrayLike) -> Array:
        return prim_fn(_inexact(name, "x", x))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


erfcinv = _unary("erfcinv", _SP.erfcinv, "The inverse of ``erfc``: ``erfcinv(erfc(x)) == x``.")
i0 = _unary("i0", _SP.i0, "The modified Bessel function of the first kind of order 0.")
i0e = _unary("i0e", _SP.i0e, "Exponentially scaled ``i0``: ``i0(x) * exp(-|x|)``.")
i1 = _unary("i1", _SP.i1, "The modified Bessel function of the first kind of order 1.")
i1e = _unary("i1e", _SP.i1e, "Exponentially scaled ``i1``: ``i1(x) * exp(-|x|)``.")
j0 = _unary("j0", _SP.j0, "The Bessel function of the first kind of order 0.")
j1 = _unary("j1", _SP.j1, "The Bessel function of the first kind of order 1.")
y0 = _unary("y0", _SP.y0, "The Bessel function of the second kind of order 0.")
y1 = _unary("y1", _SP.y1, "The Bessel function of the second kind of order 1.")


def _binary(name: str, prim_fn: Callable[..., Array], names: tuple[str, str],
            doc: str) -> Callable[[ArrayLike, ArrayLike], Array]:
    def fn(v: ArrayLike, x: ArrayLike) -> Array:
        return prim_fn(*_promote_all(name, names, (v, x)))
    # its parameters take JAX's names (``expn(n=, x=)``, ``kl_div(p=, q=)``, ...)
    fn.__code__ = fn.__code__.replace(co_varnames=names + fn.__code__.co_varnames[2:])
    fn.__annotations__ = {names[0]: "ArrayLike", names[1]: "ArrayLike", "return": "Array"}
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


iv = _binary("iv", _SP.iv, ("v", "z"), "The modified Bessel function of the first kind of real "
             "order ``v``; differentiable in ``z`` (not in ``v``).")
ive = _binary("ive", _SP.ive, ("v", "z"), "Exponentially scaled ``iv``: ``iv(v, z) * exp(-|z|)``.")
jv = _binary("jv", _SP.jv, ("v", "z"), "The Bessel function of the first kind of real order "
             "``v``; differentiable in ``z`` (not in ``v``).")
yv = _binary("yv", _SP.yv, ("v", "z"), "The Bessel function of the second kind of real order "
             "``v``; differentiable in ``z`` (not in ``v``).")
jn = _binary("jn", _SP.jv, ("n", "x"), "The Bessel function of the first kind of integer order "
             "``n`` (SciPy's ``jn`` is ``jv``).")
yn = _binary("yn", _SP.yv, ("n", "x"), "The Bessel function of the second kind of integer order "
             "``n``.")


def zeta(x: ArrayLike, q: ArrayLike | None = None) -> Array:
    """The Hurwitz zeta function ``sum_k (k + q)**-x`` (Riemann's for ``q=None``).

    Differentiable in ``q``: ``d/dq zeta(x, q) = -x zeta(x + 1, q)``; the
    derivative in ``x`` raises ``NotImplementedError`` (as in JAX).
    """
    return _SP.zeta(*_promote_all("zeta", ("x", "q"), (x, 1.0 if q is None else q)))


erfcx = _unary("erfcx", _SP.erfcx, "The scaled complementary error function ``exp(x**2) erfc(x)``.")
exp1 = _unary("exp1", _SP.exp1, "The exponential integral ``E1(x) = int_1^inf exp(-x t) / t dt``.")
expi = _unary("expi", _SP.expi, "The exponential integral ``Ei(x)``.")
spence = _unary("spence", _SP.spence, "Spence's function ``int_1^z log(t) / (1 - t) dt`` "
                "(SciPy's convention).")
dawsn = _unary("dawsn", _SP.dawsn, "Dawson's integral ``exp(-x**2) int_0^x exp(t**2) dt``.")
expn = _binary("expn", _SP.expn, ("n", "x"), "The generalized exponential integral ``E_n(x)``; "
               "differentiable in ``x``.")
poch = _binary("poch", _SP.poch, ("z", "m"), "The Pochhammer symbol ``gamma(z + m) / gamma(z)``.")


def kl_div(p: ArrayLike, q: ArrayLike) -> Array:
    """Elementwise ``p log(p / q) - p + q`` (``inf`` outside the domain, as SciPy)."""
    p, q = _promote_all("kl_div", ("p", "q"), (p, q))
    # where p / q under- or overflows, p (log p - log q) - p + q: SciPy's kl_div was -inf at
    # p = 1e-300, q = 1e300 (JAX's and the true 1e300) and inf at p = 1e300, q = 1e-300
    # (1.38e303); the other branch's inputs are 1 there, so no inf reaches a cotangent
    r = tnp.true_divide(p, q)
    far = ((p > 0) & (q > 0) & (p < np.inf) & (q < np.inf)
           & ((r < np.finfo(np.float64).tiny) | (r == np.inf)))
    if not isinstance(far, Tracer) and not far.any():
        return _SP.kl_div(p, q)
    ps, qs = tnp.where(far, p, 1.0), tnp.where(far, q, 1.0)
    logs = tnp.subtract(tnp.log(ps), tnp.log(qs))
    return tnp.where(far, tnp.add(tnp.subtract(tnp.multiply(ps, logs), ps), qs),
                     _SP.kl_div(tnp.where(far, 1.0, p), tnp.where(far, 1.0, q)))


rel_entr = _binary("rel_entr", _SP.rel_entr, ("p", "q"), "Elementwise relative entropy "
                   "``p log(p / q)`` (``inf`` outside the domain, as SciPy).")
owens_t = _binary("owens_t", _SP.owens_t, ("h", "a"), "Owen's T function.")


def hyp1f1(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> Array:
    """The confluent hypergeometric function ``1F1(a; b; x)``; differentiable in ``x``
    (the derivative in ``a`` and ``b`` raises ``NotImplementedError``)."""
    return _SP.hyp1f1(*_promote_all("hyp1f1", ("a", "b", "x"), (a, b, x)))


def hyp2f1(a: ArrayLike, b: ArrayLike, c: ArrayLike, x: ArrayLike) -> Array:
    """The Gauss hypergeometric function ``2F1(a, b; c; x)``; differentiable in ``x``."""
    return _SP.hyp2f1(*_promote_all("hyp2f1", ("a", "b", "c", "x"), (a, b, c, x)))


def fresnel(x: ArrayLike) -> tuple[Array, Array]:
    """The Fresnel integrals ``(S(x), C(x))``."""
    x = _inexact("fresnel", "x", x)
    return _SP.fresnel_s(x), _SP.fresnel_c(x)


def sici(x: ArrayLike) -> tuple[Array, Array]:
    """The sine and cosine integrals ``(Si(x), Ci(x))``."""
    x = _inexact("sici", "x", x)
    return _SP.sici_si(x), _SP.sici_ci(x)


def wofz(z: ArrayLike) -> Array:
    """The Faddeeva function ``exp(-z**2) erfc(-i z)`` (complex; holomorphic derivative)."""
    z = z if isinstance(z, Tracer) else core.as_array(z, "wofz: argument 'z'")
    dt = _dtype_of(z)
    if dt.kind not in "biufc":
        raise TypeError(f"wofz: argument 'z' must be a numeric array, got dtype {dt}")
    if dt.kind != "c":
        z = tnp.astype(z, np.complex64 if dt == np.float32 else np.complex128)
    return _SP.wofz(z)


def factorial(n: ArrayLike, exact: bool = False) -> Array:
    """``n!`` as ``gamma(n + 1)``, 0 for negative ``n`` (``exact=True`` is not supported, as
    in JAX)."""
    if exact:
        raise ValueError("factorial with exact=True is not supported. "
                         "(tangentia.scipy.special.factorial: argument 'exact' must be False)")
    n = _inexact("factorial", "n", n)
    return tnp.where(tnp.less(n, 0), 0.0, _SP.gamma(tnp.where(tnp.less(n, 0), 0.0, n) + 1.0))


def comb(N: ArrayLike, k: ArrayLike, *, exact: Any = False, repetition: bool = False) -> Array:
    """The binomial coefficient ``N choose k`` via ``gammaln`` (0 where ``k < 0`` or ``k > N``);
    with ``repetition=True``, ``N + k - 1 choose k``."""
    if exact:
        raise ValueError("comb: argument 'exact' must be False (exact integers are not "
                         "supported, as in JAX)")
    N, k = _promote_all("comb", ("N", "k"), (N, k))
    if repetition:
        N = N + k - 1.0
    ok = tnp.logical_and(tnp.logical_and(tnp.greater_equal(k, 0), tnp.greater_equal(N, k)),
                         tnp.greater_equal(N, 0))
    kk, nn = tnp.where(ok, k, 0.0), tnp.where(ok, N, 0.0)
    val = tnp.exp(_SP.gammaln(nn + 1.0) - _SP.gammaln(kk + 1.0) - _SP.gammaln(nn - kk + 1.0))
    return tnp.where(ok, val, 0.0)


def bernoulli(n: int) -> Array:
    """The Bernoulli numbers ``B_0 .. B_n`` (``B_1 = -1/2``), as ``scipy.special.bernoulli``;
    ``n`` is a static integer."""
    if isinstance(n, Tracer) or not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"bernoulli: argument 'n' must be a static non-negative integer, got {n!r}")
    if n < 0:
        raise ValueError(f"bernoulli: argument 'n' must be non-negative, got {n}")
    return tnp.asarray(_scipy_special.bernoulli(int(n)))


def boxcox(x: ArrayLike, lmbda: ArrayLike) -> Array:
    """The Box-Cox transform ``(x**lmbda - 1) / lmbda`` (``log x`` at ``lmbda == 0``);
    differentiable in both arguments."""
    x, lmbda = _promote_all("boxcox", ("x", "lmbda"), (x, lmbda))
    return _boxcox_of_log(tnp.log(x), lmbda)


def boxcox1p(x: ArrayLike, lmbda: ArrayLike) -> Array:
    """The Box-Cox transform of ``1 + x``, accurate for small ``x``."""
    x, lmbda = _promote_all("boxcox1p", ("x", "lmbda"), (x, lmbda))
    return _boxcox_of_log(tnp.log1p(x), lmbda)


def _boxcox_of_log(logx, lmbda):
    zero = tnp.equal(lmbda, 0)
    safe = tnp.where(zero, 1.0, lmbda)
    return tnp.where(zero, logx, tnp.expm1(safe * logx) / safe)


def bessel_jn(z: ArrayLike, *, v: int, n_iter: int = 50) -> Array:
    """The Bessel functions ``J_0(z) .. J_v(z)`` stacked on a new first axis (JAX's signature;
    ``n_iter`` is accepted and unused: the values are SciPy's)."""
    if isinstance(v, Tracer) or not isinstance(v, (int, np.integer)) or v < 0:
        raise TypeError(f"bessel_jn: argument 'v' must be a static non-negative integer, got {v!r}")
    z = _inexact("bessel_jn", "z", z)
    return tnp.stack([_SP.jv(np.asarray(float(k), _dtype_of(z)), z) for k in range(int(v) + 1)])


# The largest degree sph_harm_y computes: SciPy 1.17's sph_harm_y is NaN from degree 646 on,
# whatever the order and angle (its normalization overflows).
_SPH_HARM_MAX_DEGREE = 645


def _sph_harm_degree(n, n_max) -> tuple[int, str]:
    """The largest degree ``sph_harm_y`` reads: ``max(n)``, at most ``n_max``; ``n_max`` for a
    traced ``n``; with ``n_max=None`` a traced ``n`` is JAX's ConcretizationTypeError, and
    an empty ``n`` NumPy's (JAX's) error of ``max`` over no values."""
    if n_max is not None:
        if isinstance(n_max, Tracer) or not isinstance(n_max, (int, np.integer)) or n_max < 0:
            raise TypeError("The `n_max` argument of `jnp.scipy.special.sph_harm` must be "
                            "statically specified to use `sph_harm` within JAX "
                            "transformations. (sph_harm_y: argument 'n_max' must be a static "
                            f"non-negative integer, got {n_max!r})")
    if isinstance(n, Tracer):
        try:
            n = n.concrete_value("sph_harm_y")
        except core.ConcretizationTypeError as err:
            if n_max is not None:
                return int(n_max), "n_max, for a traced 'n'"
            first, _, rest = str(err).partition("\n")
            raise core.ConcretizationTypeError(
                f"{first}\nThe `n_max` argument of `jnp.scipy.special.sph_harm` must be "
                "statically specified to use `sph_harm` within JAX transformations. "
                "(sph_harm_y: with n_max=None the largest degree is read from argument 'n', "
                "which is traced here: pass a static n_max.)"
                + (f"\n{rest}" if rest else "")) from None
    n = np.asarray(n)
    if n.size == 0:
        if n_max is not None:
            return 0, "an empty 'n'"
        raise ValueError("zero-size array to reduction operation maximum which has no "
                         "identity (sph_harm_y: with n_max=None the largest degree is read "
                         "from argument 'n', which is empty)")
    top = int(n.max())
    if n_max is not None and top > n_max:
        return int(n_max), "n_max"
    return top, "the largest in 'n'"


def sph_harm_y(n: ArrayLike, m: ArrayLike, theta: ArrayLike, phi: ArrayLike,
               diff_n: int | None = None, n_max: int | None = None) -> Array:
    """The spherical harmonics ``Y_n^m(theta, phi)`` (SciPy's ``sph_harm_y``; ``theta`` polar,
    ``phi`` azimuthal), complex; differentiable in ``theta`` and ``phi``.  ``n_max`` (static)
    clips the degree as JAX's does (see below); ``diff_n`` must be None, as JAX's.

    As JAX's, ``n_max=None`` reads the largest degree from ``n``, which must then be concrete
    (JAX builds its Legendre table up to it; a traced ``n`` raises its
    ConcretizationTypeError).  The degree the values need (``max(n)``, at most ``n_max``; or
    ``n_max`` for a traced ``n``) must be at most ``_SPH_HARM_MAX_DEGREE``: SciPy's values,
    which ours are, are NaN from degree 646 on (SciPy 1.17), after a loop as long as the
    degree that nothing interrupts (``n = 2**62`` ran for hours); JAX's table takes
    ``(n_max + 1)**3`` floats and raises RESOURCE_EXHAUSTED near degree 1000 (16 GB)."""
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported. "
            f"(sph_harm_y: argument 'diff_n' must be None, got {diff_n!r})")
    n, m = (tnp.asarray(a) for a in (n, m))
    for name, a in (("n", n), ("m", m)):
        if _dtype_of(a).kind not in "iu":
            raise TypeError(f"sph_harm_y: argument '{name}' must hold integers, got dtype "
                            f"{_dtype_of(a)}")
    theta, phi = _promote_all("sph_harm_y", ("theta", "phi"), (theta, phi))
    degree, where = _sph_harm_degree(n, n_max)
    if degree > _SPH_HARM_MAX_DEGREE:
        raise ValueError(
            f"sph_harm_y: argument 'n' must hold degrees at most {_SPH_HARM_MAX_DEGREE} "
            f"(SciPy's values, which these are, are NaN above), got degree {degree} ("
            f"{where}). JAX's sph_harm_y runs out of memory near degree 1000 (its table holds "
            "(n_max + 1)**3 values).")
    if n_max is None:
        return _SP.sph_harm_y(tnp.astype(n, np.int64), tnp.astype(m, np.int64), theta, phi)
    # JAX's n_max: "If the supplied n_max is not the true maximum value of n, the results are
    # clipped to n_max": its table of Legendre functions stops at degree and order n_max, read
    # at (min(|m|, n_max), min(n, n_max)), times exp(i |m| phi) (conjugated, with (-1)**|m|,
    # for m < 0).  Where |m| <= n_max that is Y at degree min(n, n_max).  (n is clipped in its
    # own dtype: a uint64 degree above int64's range wrapped to a negative one.)
    n = tnp.astype(tnp.minimum(n, int(n_max)), np.int64)
    m = tnp.astype(m, np.int64)
    am = tnp.abs(m)
    k = tnp.minimum(am, int(n_max))
    legendre = tnp.real(_SP.sph_harm_y(n, k, theta, tnp.zeros_like(phi)))
    angle = tnp.astype(am, _dtype_of(phi)) * phi
    y = tnp.multiply(legendre, tnp.cos(angle)) + 1j * tnp.multiply(legendre, tnp.sin(angle))
    sign = tnp.where(am % 2 == 1, -1.0, 1.0).astype(_dtype_of(phi))
    return tnp.where(m < 0, sign * tnp.conj(y), y)
