"""Differential fuzzing of ``tangentia.scipy.special`` against JAX 0.10.2 (x64) and SciPy, at edge
inputs (signed zeros, infinities, NaN, tiny and huge values, poles), values and derivatives; and
the library's loops (odeint, minimize, fixed_point) on NaN/inf inputs and bad tolerances: each
ends (a deadline fails the test instead of hanging it).

Where JAX and SciPy disagree on a value we follow SciPy, where JAX is wrong on a derivative we
follow the limit (listed in ``_OURS_RIGHT``, each checked against the closed form):
gammaln(-inf) = -inf (SciPy; JAX inf), digamma(+-0) = -+inf and loggamma(+-0) = inf (SciPy;
JAX NaN), exp1(inf) = 0; derivatives: ndtri'(0) = ndtri'(1) = inf (JAX 0), i0'(0) = i1(0) = 0
(JAX 1), digamma'(1e300) = 1e-300 (JAX 0), spence'(z) = log(z) / (1 - z) (JAX's is off by 1 at z = 1e-300 and 0 at z = 1),
log_ndtr'(-inf) = inf (JAX NaN), i1'(1e5) = inf (JAX NaN), dawsn'(x) for |x| >= 100 from its asymptotic series (JAX's
1 - 2 x dawsn(x) cancels: 0 at 1e5, where it is -5e-11).  JAX's exp1/expi hang on an array holding inf and NaN, so they
are compared element by element on finite inputs only.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
import pytest
import scipy.special as ss
from hypothesis import given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.special as tsp
from _fuzz_jax_common import FUZZ, assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
jsp = pytest.importorskip("jax.scipy.special")

_EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-300, 1e-8, 0.5, 1.0, 2.0, -1.0, -2.0, -0.5,
          -2.5, 3.7, 30.0, 171.5, 200.0, 1e5, 1e300, -1e300]
_UNARY = ["gammaln", "digamma", "erfinv", "erf", "erfc", "expit", "logit", "ndtr", "ndtri",
          "log_ndtr", "entr", "i0", "i0e", "i1", "i1e", "gamma", "loggamma", "spence", "dawsn"]
# SciPy's name where it differs
_SCIPY = {"loggamma": lambda x: np.real(ss.loggamma(x))}


@FUZZ
@given(name=st.sampled_from(_UNARY),
       x=st.lists(st.sampled_from(_EDGES), min_size=1, max_size=6).map(np.array))
def test_unary_values(name: str, x: np.ndarray) -> None:
    """Values equal JAX's, or SciPy's where JAX's differ (see the module's docstring)."""
    ours = run(getattr(tsp, name), x)
    theirs = run(getattr(jsp, name), x)
    ref = run(_SCIPY.get(name, getattr(ss, name)), x)
    assert not isinstance(ours, Exception), ours
    a, b, r = np.asarray(ours), np.asarray(theirs), np.asarray(ref)
    with np.errstate(all="ignore"):
        ok = (np.isclose(a, b, rtol=1e-10, atol=0, equal_nan=True) | (a == b)
              | np.isclose(a, r, rtol=1e-10, atol=0, equal_nan=True) | (a == r))
    assert ok.all(), (name, x[~ok], a[~ok], b[~ok], r[~ok])
    assert_same(f"jit {name}", run(tg.jit(getattr(tsp, name)), x), ours, rtol=0)


# the derivative where it is known in closed form (the limits at the edges included)
_DERIVATIVE = {
    "entr": lambda x: np.where(x < 0, 0.0, -np.log(np.where(x < 0, 1.0, x)) - 1.0),
    "i1e": lambda x: np.where(np.isinf(x), 0.0, ss.i0e(x) - ss.i1e(x) * (np.sign(x) + 1 / x)),
    "ndtri": lambda p: np.sqrt(2 * np.pi) * np.exp(ss.ndtri(p) ** 2 / 2),
    "i0": lambda x: ss.i1(x),
    "spence": lambda z: np.where(z == 1, -1.0, np.log(z) / (1 - z)),
    # polygamma(1, x) ~ 1/x: 1e-300 at 1e300 (JAX 0), 0 at inf (JAX NaN)
    "digamma": lambda x: np.where(np.isinf(x), 0.0, ss.polygamma(1, x)),
    # 1 - 2 x dawsn(x) cancels for large |x| (JAX's 0 at 1e5, 1.1e-16 at 1e300 was ours):
    # there the asymptotic -1/(2x^2) (1 + 3/(2x^2)), -5.00000000075e-11 at 1e5
    "dawsn": lambda x: np.where(np.abs(x) >= 1e4, -0.5 / x ** 2 * (1 + 1.5 / x ** 2),
                                1 - 2 * x * ss.dawsn(x)),
}


@FUZZ
@given(name=st.sampled_from(_UNARY),
       x=st.lists(st.sampled_from(_EDGES), min_size=1, max_size=6).map(np.array))
def test_unary_derivatives(name: str, x: np.ndarray) -> None:
    """vmap(grad) eagerly and under jit equals JAX's, or the closed form's limit where JAX's
    is wrong (see the module's docstring)."""
    f = getattr(tsp, name)
    ours = run(tg.vmap(tg.grad(f)), x)
    assert not isinstance(ours, Exception), ours
    theirs = np.asarray(run(jax.vmap(jax.grad(getattr(jsp, name))), x))
    a = np.asarray(ours)
    with np.errstate(all="ignore"):
        ok = np.isclose(a, theirs, rtol=1e-8, atol=0, equal_nan=True) | (a == theirs)
        if name in _DERIVATIVE:
            d = np.asarray(_DERIVATIVE[name](x), float)
            ok |= np.isclose(a, d, rtol=1e-8, atol=0, equal_nan=True) | (a == d)
        elif name in ("gammaln", "loggamma", "gamma"):  # at +-0: the limits of psi (SciPy)
            ok |= (x == 0) & np.isinf(a)
        elif name == "log_ndtr":
            ok |= (x == -np.inf) & (a == np.inf)
        elif name == "i1":    # i1' = i0 - i1/x, +inf where i0 overflows (|x| > 713; JAX NaN)
            ok |= np.isinf(ss.i0(x)) & np.isfinite(x) & (a == np.inf)
    assert ok.all(), (name, x[~ok], a[~ok], theirs[~ok])
    assert_same(f"jit {name}", run(tg.jit(tg.vmap(tg.grad(f))), x), ours, rtol=0)


def test_entr_derivative_at_zero_and_infinity() -> None:
    """entr'(0) = +inf and entr'(inf) = -inf, as JAX's (it was NaN: xlogy's rule gives
    log(0) * 1 + 0 / 0); no warning is raised for the log of 0."""
    x = np.array([0.0, -0.0, np.inf, 0.5, -1.0])
    want = jax.vmap(jax.grad(jsp.entr))(x)
    with np.errstate(all="raise"):
        got = tg.vmap(tg.grad(tsp.entr))(x)
    assert_same("entr'", got, np.where(x < 0, 0.0, want))  # JAX: NaN where entr is -inf
    assert_same("entr''", tg.grad(tg.grad(tsp.entr))(2.0), jax.grad(jax.grad(jsp.entr))(2.0))


def test_i1e_derivative_at_infinity() -> None:
    """i1e'(+-inf) = 0, as JAX's (SciPy's ive(2, inf) is NaN, and it was)."""
    x = np.array([np.inf, -np.inf, np.nan, 2.0])
    assert_same("i1e'", tg.vmap(tg.grad(tsp.i1e))(x), np.array([0.0, 0.0, np.nan,
                                                                   jax.grad(jsp.i1e)(2.0)]))


_PAIRS = ["xlogy", "xlog1py", "gammainc", "gammaincc", "betaln", "kl_div", "rel_entr", "poch",
          "zeta"]
_POS = [0.0, 1e-300, 1e-8, 0.5, 1.0, 2.0, 3.7, 30.0, 1e3, np.inf, np.nan]


@settings(FUZZ, max_examples=max(4, FUZZ.max_examples // 2))
@given(name=st.sampled_from(_PAIRS), x=st.lists(st.sampled_from(_EDGES), min_size=3, max_size=3),
       y=st.lists(st.sampled_from(_POS), min_size=3, max_size=3))
def test_binary_values(name: str, x: list, y: list) -> None:
    """Values equal SciPy's (which JAX's follow except at a few NaN/inf edges, listed by
    tests/test_fuzz_jax's module): xlogy(0, nan) is NaN, kl_div(x, -inf) inf, ..."""
    a, b = np.array(x), np.array(y)
    if name in ("gammainc", "gammaincc", "betaln"):
        a = np.abs(a)
    if name == "zeta":
        a = np.abs(a) + 1
    ours = run(getattr(tsp, name), a, b)
    ref = run(getattr(ss, name), a, b)
    assert_same(name, ours, ref, rtol=1e-9)
    assert_same(f"jit {name}", run(tg.jit(getattr(tsp, name)), a, b), ours, rtol=0)


# ---------------------------------------------------------------------------
# loops on NaN/inf inputs and bad tolerances end


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging) if the block runs longer than ``seconds``."""
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _rosen(x: Any) -> Any:
    return tnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


_X0 = np.array([1.3, 0.7, 0.8])
_LOOPS = {
    "minimize of NaN": lambda: tg.scipy.optimize.minimize(lambda x: tnp.sum(x) * np.nan, _X0,
                                                          method="BFGS"),
    "minimize from NaN": lambda: tg.scipy.optimize.minimize(_rosen, _X0 * np.nan, method="BFGS"),
    "minimize unbounded": lambda: tg.scipy.optimize.minimize(lambda x: -tnp.sum(x ** 2), _X0,
                                                             method="BFGS"),
    "minimize tol NaN": lambda: tg.scipy.optimize.minimize(_rosen, _X0, method="BFGS",
                                                           tol=np.nan),
    "lbfgs of NaN": lambda: tg.scipy.optimize.minimize(
        lambda x: tnp.sum(x) * np.nan, _X0, method="l-bfgs-experimental-do-not-rely-on-this"),
    "lbfgs negative tol": lambda: tg.scipy.optimize.minimize(
        _rosen, _X0, method="l-bfgs-experimental-do-not-rely-on-this", tol=-1.0),
    "odeint NaN state": lambda: tg.experimental.ode.odeint(lambda y, t: -y, np.array([np.nan]),
                                                           np.array([0.0, 1.0])),
    "odeint rtol 0": lambda: tg.experimental.ode.odeint(lambda y, t: -y, np.array([1.0]),
                                                        np.array([0.0, 1.0]), rtol=0.0, atol=0.0),
    "odeint NaN dynamics": lambda: tg.experimental.ode.odeint(
        lambda y, t: y * np.nan, np.array([1.0]), np.array([0.0, 1.0]), mxstep=10 ** 9),
    "odeint blow-up": lambda: tg.experimental.ode.odeint(lambda y, t: y ** 2, np.array([1.0]),
                                                         np.array([0.0, 2.0])),
    "fixed_point NaN": lambda: tg.experimental.fixed_point(lambda a, x: a * tnp.cos(x),
                                                           np.float64(np.nan), np.float64(0.3)),
    "fixed_point diverging": lambda: tg.experimental.fixed_point(lambda a, x: a * x + 1,
                                                                 np.float64(2.0), np.float64(0.3)),
    "fixed_point tol NaN": lambda: tg.experimental.fixed_point(
        lambda a, x: a * tnp.cos(x), np.float64(0.5), np.float64(0.3), tol=np.nan),
}


@pytest.mark.parametrize("name", sorted(_LOOPS))
def test_loops_end(name: str) -> None:
    """Each ends quickly with a result (NaN or a failure status where there is no answer)."""
    with _deadline(30):
        out = run(_LOOPS[name])
    assert not isinstance(out, TimeoutError), (name, out)
    assert not isinstance(out, Exception), (name, out)


@pytest.mark.parametrize("t", [[0.0, np.inf], [0.0, np.nan], [-np.inf, 0.0]])
def test_odeint_infinite_times_raise(t: list) -> None:
    """An infinite or NaN time raises (JAX's loop never ends: its step never reaches inf)."""
    with _deadline(30), pytest.raises(ValueError, match="the times t must be finite"):
        tg.experimental.ode.odeint(lambda y, s: -y, np.array([1.0]), np.array(t))


def test_dawsn_derivative_for_large_x() -> None:
    """dawsn'(x) = 1 - 2 x dawsn(x) cancels for large |x| (1.1e-16 at 1e300, relative error
    2 x^2 eps): the asymptotic series there, -1/(2x^2) (1 + 3/(2x^2) + ...)."""
    x = np.array([1e300, -1e300, 1e5, 1000.0, -150.0, 99.0, 0.5])
    want = [0.0, 0.0, -5.00000000075e-11, -5.00000750001875e-07, -2.2223703868338367e-05,
            -5.1023012175278116e-05, 0.5755636164979777]
    got = np.asarray(tg.vmap(tg.grad(tsp.dawsn))(x))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(np.asarray(tg.jit(tg.vmap(tg.grad(tsp.dawsn)))(x)), got)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_of_zero_and_nan_is_nan_as_jax(name: str) -> None:
    """xlogy(0, NaN) is NaN (JAX's and SciPy's); ours gave 0 (the x == 0 rule ignored y)."""
    x = np.array([0.0, -0.0, 0.0, 1.0, 0.0])
    y = np.array([np.nan, np.nan, 0.0, np.nan, 2.0])
    want = np.asarray(getattr(jsp, name)(x, y))
    for f in (getattr(tsp, name), tg.jit(getattr(tsp, name))):
        np.testing.assert_array_equal(np.asarray(f(x, y)), want)
    np.testing.assert_array_equal(want, getattr(ss, name)(x, y))
