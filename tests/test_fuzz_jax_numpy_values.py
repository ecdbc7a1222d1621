"""Values of NumPy-API functions against JAX 0.10.2 (x64) where a differential probe of
session 16 found ours different (each test failed before its fix): quantile's 'nearest' ties
and exact positions next to an infinite entry, its 'inverted_cdf' method, lstsq's residuals'
shape, and the SciPy-backed matrix functions on NaN/inf input (one looped for minutes).

The probe (about 4,600 cases: nan-reductions with ddof and all-NaN slices, every quantile method,
interp, digitize, bincount, histogram, round, integer and float division, cumulative sums and
products, casts of NaN/inf, clip, sort/unique/partition with NaN and -0.0, take modes, pad
modes; 50 linear-algebra functions on 20 kinds of matrices) found no other value of ours
that JAX's contradicts, apart from the deliberate NumPy conventions (cumsum of int8 accumulates
in int64; pad's integer linear_ramp rounds; unique(axis=0) keeps NaN rows apart).
"""
from __future__ import annotations

import signal
import threading

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.linalg as tsl

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
jsl = pytest.importorskip("jax.scipy.linalg")

# [-inf, 1, inf] sorted: the exact position 1 lies between two infinite entries
INF_ENDS = np.array([np.inf, -np.inf, 1.0])
SIX = np.arange(1.0, 7.0)
WITH_NAN = np.array([1.0, np.nan, 3.0, -0.0, 2.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest",
                                    "inverted_cdf"])
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_methods_as_jax(name: str, method: str) -> None:
    """'nearest' sends a tie to the lower entry (NumPy: to the even one; q=0.3 of 1..6 was 3,
    JAX 2); an exact position next to an infinite entry gives the entry (q=0.5 of [-inf, 1,
    inf] was NaN, JAX 1; midpoint at q=1 was NaN, JAX inf); 'inverted_cdf' raised.  Eagerly
    and under jit with a traced q, with JAX's derivative."""
    q = np.array([0.0, 0.2, 0.3, 0.5, 0.7, 0.75, 1.0])
    ours_fn = getattr(tnp, name)
    theirs_fn = getattr(jnp, name)
    for x in (SIX, INF_ENDS, WITH_NAN):
        want = np.asarray(theirs_fn(x, q, axis=-1, method=method))
        got = ours_fn(x, q, axis=-1, method=method)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {method} {x}")
        np.testing.assert_array_equal(
            tg.jit(lambda a, b: ours_fn(a, b, axis=-1, method=method))(x, q), want)
    if name == "nanquantile" or method in ("lower", "higher"):
        return   # the same derivative as quantile's (kept cheap: each JAX call compiles)
    g = tg.grad(lambda a: tnp.sum(ours_fn(a, q, method=method) ** 2))(SIX)
    np.testing.assert_allclose(
        g, jax.grad(lambda a: jnp.sum(theirs_fn(a, q, method=method) ** 2))(SIX), rtol=1e-14)


def test_percentile_and_median_at_infinite_entries_as_jax() -> None:
    np.testing.assert_array_equal(tnp.percentile(INF_ENDS, [50.0, 100.0], method="midpoint"),
                                  jnp.percentile(INF_ENDS, np.array([50.0, 100.0]),
                                                 method="midpoint"))
    x = np.array([1.0, np.inf, np.inf])
    assert tnp.median(x) == jnp.median(x) == np.inf


def test_lstsq_residuals_of_a_vector_keep_their_axis() -> None:
    """(1,) for a 1-D right-hand side, as JAX's and NumPy's (ours was 0-d)."""
    a = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, 0.0, 2.0])
    want = jnp.linalg.lstsq(a, b)[1]
    for got in (tnp.linalg.lstsq(a, b)[1], tg.jit(lambda a, b: tnp.linalg.lstsq(a, b)[1])(a, b)):
        assert got.shape == want.shape == (1,)
        np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="the deadline is a SIGALRM, delivered to the main thread")
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_matrix_functions_of_nonfinite_input_end_with_nan(bad: float) -> None:
    """logm of [[1, inf], [0, 1]] looped for minutes in SciPy's norm estimate; sqrtm of
    [[1, nan], [0, 1]] kept its 1s (JAX: NaN everywhere); solve_sylvester, and so sqrtm's
    derivative, raised SciPy's 'array must not contain infs or NaNs' (JAX: NaN)."""
    a = np.array([[1.0, bad], [0.0, 1.0]])

    def alarm(*_):
        raise TimeoutError("a matrix function of a non-finite matrix did not end in 20 s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    try:
        results = {
            "logm": tsl.logm(a),
            "sqrtm": tsl.sqrtm(a),
            "solve_sylvester": tsl.solve_sylvester(a, a, np.eye(2)),
            "jvp logm": tg.jvp(tsl.logm, (a,), (np.ones((2, 2)),))[1],
            "grad sqrtm": tg.grad(lambda m: tnp.real(tsl.sqrtm(m)).sum())(a),
        }
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    for name, r in results.items():
        assert np.isnan(r).all(), name
    np.testing.assert_array_equal(results["sqrtm"], jsl.sqrtm(a))
    np.testing.assert_array_equal(results["solve_sylvester"], jsl.solve_sylvester(a, a, np.eye(2)))
    # finite input unchanged: logm(expm(m)) == m
    m = np.array([[0.5, 0.25], [0.0, -0.5]])
    np.testing.assert_allclose(tsl.logm(tsl.expm(m)), m, atol=1e-13)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_tangent_of_a_leading_nonfinite_entry_as_jax(reverse: bool) -> None:
    """The first entry of a cumulative product is the entry itself, its tangent the entry's
    tangent: the scan's padding multiplied 0 by a NaN or infinite entry (the tangent of
    cumprod([inf, 2, 3, 0, 5])[0] was NaN, JAX 0.10.2: 1), under jvp, grad and vmap."""
    x = np.array([[1.0, np.nan], [np.nan, np.nan], [2.0, 4.0]])
    y = np.array([[np.inf, 2.0, 3.0, 0.0, 5.0]])
    for a, axis in ((x, 0), (x, 1), (y[:, ::-1] if reverse else y, 1)):
        t = np.arange(1.0, a.size + 1).reshape(a.shape)
        got = tg.jvp(lambda m: tg.lax.cumprod(m, axis=axis, reverse=reverse), (a,), (t,))[1]
        want = jax.jvp(lambda m: jax.lax.cumprod(m, axis=axis, reverse=reverse), (a,), (t,))[1]
        np.testing.assert_array_equal(got[np.isfinite(want)], np.asarray(want)[np.isfinite(want)])
    g = tg.grad(lambda m: tnp.sum(tnp.cumprod(m, axis=0) * np.arange(6.0).reshape(3, 2)))(x)
    np.testing.assert_array_equal(g, jax.grad(lambda m: jnp.sum(jnp.cumprod(m, axis=0) * np.arange(
        6.0).reshape(3, 2)))(x))
    v = tg.vmap(lambda r: tg.jvp(tnp.cumprod, (r,), (tnp.ones_like(r),))[1])(x)
    np.testing.assert_array_equal(v[:, 0], [1.0, 1.0, 1.0])


@pytest.mark.parametrize("name, x1, x2", [
    ("matvec", np.ones(4), np.ones(4)),           # was the dot product, 4.0
    ("matvec", np.ones((2, 4)), np.ones(())),
    ("vecmat", np.ones((2, 3, 4)), np.ones(4)),   # was a (2, 3) array
    ("vecmat", np.ones(()), np.ones((2, 2)))])
def test_matvec_vecmat_need_their_core_dimensions_as_jax(name: str, x1: np.ndarray,
                                                         x2: np.ndarray) -> None:
    with pytest.raises(ValueError) as theirs:
        getattr(jnp, name)(x1, x2)
    for f in (getattr(tnp, name), tg.jit(getattr(tnp, name))):
        with pytest.raises(ValueError) as ours:
            f(x1, x2)
        assert str(ours.value).startswith(str(theirs.value))
    np.testing.assert_array_equal(tnp.matvec(np.ones((2, 3)), np.arange(3.0)), [3.0, 3.0])


def test_broadcast_to_takes_jaxs_keywords() -> None:
    """``broadcast_to(array=..., shape=...)``, JAX's and NumPy's parameter names (ours was
    ``a``: 4 of flax nnx's tests call it so)."""
    want = jnp.broadcast_to(array=np.arange(3.0), shape=(2, 3))
    np.testing.assert_array_equal(tnp.broadcast_to(array=np.arange(3.0), shape=(2, 3)), want)
