"""Small dtypes and special values through ``tangentia.numpy`` against NumPy and JAX 0.10.2 (x64)
(session 20's sweep: every public function taking one or two arrays, on int8/uint8/uint32/bool/
float16/float32/complex64 inputs with signed zeros, infinities, NaN and empty shapes, values
against JAX's and result dtypes against NumPy's).  Each test here failed before its fix.

Left alone (NumPy's semantics, deliberate, or JAX's platform): ``cumsum``/``trapezoid`` of small
integers wrap as NumPy's (``trapezoid(int8)`` adds neighbours in int8; JAX converts first);
float32 subnormals (XLA flushes them to zero: ``ceil``, ``sign``, ``nonzero``, ``log`` of 1e-39);
``asinh`` of complex values on the branch cut with a -0.0 real part (ours C99's, JAX ignores the
sign); complex ``max``/``min``/``ptp`` with NaN parts (XLA's comparisons order them at random).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from _fuzz_jax_common import assert_same

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)

_INTS = np.array([-3, -1, 0, 1, 2, 5])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.bool_, np.int32])
def test_sinc_of_small_integers_in_float64_as_numpy(dtype: type) -> None:
    """NumPy's ``sinc`` computes ``pi * x`` in float64 for integer and boolean ``x``; ours cast
    int8/uint8/bool to float16 (NumPy's ``sin`` dtype), so ``sinc(1)`` was 3.1e-4 (float16's pi)
    where NumPy gives 3.9e-17 and JAX (float32) -2.8e-8.  Eagerly and under jit."""
    x = _INTS.astype(dtype)
    want = np.sinc(x)
    for f in (tnp.sinc, tg.jit(tnp.sinc)):
        got = f(x)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    assert_same("sinc vs JAX", tnp.sinc(x), jax.numpy.sinc(x), rtol=1e-6, atol=1e-7, dtypes=False)


@pytest.mark.parametrize("roots", [[1.0, np.inf], [-0.0, 0.0, np.inf, -np.inf, np.nan, 1e308],
                                   [], [1 + 1j, 1 - 1j, 2.0], [0j, -0j, 1.0, -1.0],
                                   [[1.0, 2.0], [3.0, 4.0]]])
def test_poly_of_infinite_roots_and_no_roots_as_jax(roots: list) -> None:
    """``poly`` multiplies by ``(x - r)`` as NumPy's and JAX's convolutions do, product by
    product: ours convolved zero-padded vectors, so an infinite root made the leading
    coefficient 0 * inf = NaN (JAX and NumPy: 1).  No roots give JAX's 0-d 1 (ours had shape
    (1,)).  Signed zeros as JAX's (its sums start from +0); eagerly, under jit and jacfwd."""
    r = np.asarray(roots)
    theirs = jax.numpy.poly(r)
    assert_same("poly", tnp.poly(r), theirs, rtol=1e-13)
    assert_same("jit poly", tg.jit(tnp.poly)(r), theirs, rtol=1e-13)
    np.testing.assert_array_equal(np.signbit(np.imag(tnp.poly(r))), np.signbit(np.imag(theirs)))
    np.testing.assert_array_equal(np.signbit(np.real(tnp.poly(r))), np.signbit(np.real(theirs)))
    if r.dtype.kind == "f" and r.ndim == 1 and r.size and np.isfinite(r).all():
        assert_same("jacfwd", tg.jacfwd(tnp.poly)(r), jax.jacfwd(jax.numpy.poly)(r), rtol=1e-13)


def test_bernoulli_of_a_nan_outcome_is_nan_as_jax() -> None:
    """``bernoulli.pmf/logpmf`` at ``k = NaN`` (or ``k - loc`` NaN): SciPy and JAX give NaN
    (and JAX a NaN gradient in ``p``); ours read NaN as outside {0, 1}: 0 and -inf, a
    missing outcome counted as impossible.  (``binom``/``poisson`` at NaN give 0, as JAX's;
    SciPy's NaN there is left to JAX.)"""
    import tangentia.scipy.stats as tst
    k = np.array([np.nan, 0.0, 1.0, 2.0, -1.0, 0.5, np.inf])
    scipy_pmf = np.array([np.nan, 0.7, 0.3, 0.0, 0.0, 0.0, 0.0])  # scipy.stats.bernoulli.pmf(k, .3)
    for fn in ("pmf", "logpmf"):
        ki = k[k != 0.5]   # JAX's formula at k = 0.5 gives sqrt(p (1 - p)); SciPy's and ours 0
        theirs = getattr(jax.scipy.stats.bernoulli, fn)(ki, 0.3)
        assert_same(fn, getattr(tst.bernoulli, fn)(ki, 0.3), theirs, rtol=1e-13)
        with np.errstate(divide="ignore"):
            want = scipy_pmf if fn == "pmf" else np.log(scipy_pmf)
        np.testing.assert_allclose(getattr(tst.bernoulli, fn)(k, 0.3), want, rtol=1e-13)
        assert np.isnan(getattr(tst.bernoulli, fn)(1.0, 0.3, loc=np.nan))
    ks = np.array([0.0, 1.0, np.nan])
    assert_same("grad", tg.grad(lambda p: tst.bernoulli.logpmf(ks, p).sum())(0.3),
                jax.grad(lambda p: jax.scipy.stats.bernoulli.logpmf(ks, p).sum())(0.3))


def test_beta_density_with_shapes_or_scale_not_positive_is_nan_as_jax() -> None:
    """``beta.pdf/logpdf`` with ``a <= 0``, ``b <= 0`` or ``scale <= 0`` are NaN for every
    ``x`` in JAX (and SciPy); ours returned the formula's numbers inside [0, 1] (``pdf(0.3, 1,
    -1)`` was 2.04) and 0 / -inf outside.  Valid shapes keep JAX's values and gradients."""
    import tangentia.scipy.stats as tst
    x = np.array([-np.inf, -1.0, 0.0, 0.3, 1.0, 2.0, np.inf, np.nan])
    for a, b, scale in [(1.0, -1.0, 1.0), (0.0, 2.0, 1.0), (0.5, 0.0, 1.0), (2.0, 3.0, -1.0),
                        (2.0, 3.0, 0.0), (np.inf, -1.0, 1.0), (0.5, 2.0, 1.0), (2.0, 3.0, 2.0)]:
        for fn in ("pdf", "logpdf"):
            assert_same(f"{fn}{a, b, scale}", getattr(tst.beta, fn)(x, a, b, 0.0, scale),
                        getattr(jax.scipy.stats.beta, fn)(x, a, b, 0.0, scale), rtol=1e-12)
    xs = np.array([0.2, 0.5, 0.9])
    assert_same("grad", tg.grad(lambda a: tst.beta.logpdf(xs, a, 3.0).sum())(2.0),
                jax.grad(lambda a: jax.scipy.stats.beta.logpdf(xs, a, 3.0).sum())(2.0), rtol=1e-12)


@pytest.mark.parametrize("fn", ["cdf", "sf", "logcdf", "logsf"])
def test_gamma_and_chi2_cdf_with_shape_not_positive_is_nan_as_scipy(fn: str) -> None:
    """``gamma.cdf/sf`` (and ``chi2``'s, ``df = 2 a``) with ``a <= 0`` are NaN in SciPy's
    ``scipy.stats``; ours read SciPy's ``gammainc(0, x) = 1`` (x > 0): ``gamma.cdf(0.3, 0)`` was
    1 and ``chi2.sf(1, 0)`` 0.  JAX's are NaN at ``a < 0`` and a mixture at ``a = 0`` (its
    ``gammainc(0, x)``: NaN at 0.3, 1 at 2), so SciPy's is followed.  Valid shapes as JAX's."""
    import tangentia.scipy.stats as tst
    x = np.array([-1.0, 0.0, 0.3, 2.0, np.inf])
    for a in (0.0, -1.0):
        assert np.isnan(getattr(tst.gamma, fn)(x, a)).all()
        assert np.isnan(getattr(tst.chi2, fn)(x, 2 * a)).all()
    if fn.endswith("cdf"):
        assert_same(fn, getattr(tst.gamma, fn)(x, -1.0), getattr(jax.scipy.stats.gamma, fn)(x, -1.0))
    for mod, jmod in ((tst.gamma, jax.scipy.stats.gamma), (tst.chi2, jax.scipy.stats.chi2)):
        assert_same(fn, getattr(mod, fn)(x, 0.5), getattr(jmod, fn)(x, 0.5), rtol=1e-12)


def test_gennorm_cdf_with_beta_not_positive_is_nan_as_jax() -> None:
    """``gennorm.cdf`` with ``beta = 0`` read SciPy's ``gammainc(inf, 1) = 0``: 0.5 for every
    ``x``; JAX's and SciPy's are NaN (as ours already were for ``beta < 0``)."""
    import tangentia.scipy.stats as tst
    x = np.array([-np.inf, -1.0, 0.0, 0.3, np.inf])
    for beta in (0.0, -1.0, 0.5, 2.0):
        assert_same(f"beta={beta}", tst.gennorm.cdf(x, beta), jax.scipy.stats.gennorm.cdf(x, beta),
                    rtol=1e-12)
