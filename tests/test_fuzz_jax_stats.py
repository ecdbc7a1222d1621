"""``tangentia.scipy.stats`` against JAX 0.10.2 (x64) at the ends of each distribution's support
and parameters (session 21's sweep: every function of the 25 univariate distributions JAX
has, on grids of x at -inf, below, at and inside the support, +inf and NaN, with valid
and invalid shapes and scales; values eagerly and under jit, and the gradient with respect to
each argument).  Each test here failed before its fix.

Left alone (ours is SciPy's or the limit, JAX's is not):

* invalid parameters (``scale <= 0``, ``a <= 0``, ``p`` outside [0, 1], ``wrapcauchy``'s
  ``c = 0``) and a NaN ``x`` give NaN, as SciPy's; JAX's formulas give numbers (``uniform.pdf(nan)``
  is 1, ``expon.cdf(-2, scale=-1)`` 0, ``gamma.pdf(nan)`` 0);
* ``binom.pmf`` at a non-integer ``k`` is 0, as SciPy's (JAX's continuous extension);
  ``betabinom.logpmf(0, 5, 0.5, 3)`` is SciPy's to the last digits, JAX's off at 1e-6;
* gradients where JAX's ``where`` leaks a NaN from the branch it discards (``pareto``,
  ``truncnorm``, ``betabinom``, ``poisson``/``bernoulli`` d/loc outside the support): ours 0;
* ``binom.logpmf`` d/n at ``k = n = 0`` is ``log1p(-p)`` (the formula's derivative; JAX's 0);
* at a kink (``uniform.cdf`` at ``loc`` and ``loc + scale``) ours is the mean of the one-sided
  derivatives (``clip``'s convention), JAX's the inner one;
* ``norm.ppf`` d/q at q = 0 and 1 is +-inf (ours, the limit), JAX's 0;
* ``gamma``/``chi2``.``logsf`` at x = +inf: ours has the derivatives of the limit (d/x
  ``-1/scale``, minus the hazard, as ``expon.logsf``'s), JAX's 0 (chi2) or NaN (gamma).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.special as tsp
import tangentia.scipy.stats as ts

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.stats as js  # noqa: E402

inf, nan = np.inf, np.nan

# x below, at and beyond the support's ends, inside it, and infinite; shapes below, at and
# above 1 (the density is infinite at the end for a shape below 1)
_X = np.array([-inf, -2.0, -1e-300, 0.0, 1e-300, 0.3, 1.0, 1.0 + 1e-15, 2.0, 5.0, inf])
_SHAPES = np.array([0.5, 1.0, 3.0])


def _grid(*cols):
    return [np.ascontiguousarray(c.ravel()) for c in np.meshgrid(*cols, indexing="ij")]


_CASES = [
    ("gamma", ("x", "a", "loc", "scale"), _grid(_X, _SHAPES, np.array([0.0, 1.0]),
                                              np.array([1.0, 2.0]))),
    ("chi2", ("x", "df", "loc", "scale"), _grid(_X, 2 * _SHAPES, np.array([0.0, 1.0]),
                                              np.array([1.0, 2.0]))),
    ("beta", ("x", "a", "b", "loc", "scale"), _grid(_X, _SHAPES, _SHAPES, np.array([0.0]),
                                                  np.array([1.0, 2.0]))),
]


@pytest.mark.parametrize("dist,names,args", _CASES, ids=[c[0] for c in _CASES])
@pytest.mark.parametrize("fn", ["cdf", "sf", "logcdf", "logsf"])
def test_cdf_gradients_outside_the_support_are_zero(dist, names, args, fn):
    """The gradients of the cdf, sf and their logs with respect to x, loc and scale are 0 at
    and beyond the support's ends (as JAX's): ours were NaN left of the support (the argument
    clamped to 0, where the density is infinite for a shape below 1, times the clamp's zero
    derivative) and right of beta's (clamped to 1), and at x = +inf (the gamma density's
    ``inf - inf``).  Inside the support they are JAX's; values too, eagerly and under jit."""
    ours_f, jax_f = getattr(getattr(ts, dist), fn), getattr(getattr(js, dist), fn)
    x = args[0]
    y = (x - args[-2]) / args[-1]
    ends = (y <= 0) | (y >= 1 if dist == "beta" else np.isinf(y) & (fn != "logsf"))
    with np.errstate(all="ignore"):
        want = np.asarray(jax_f(*args))
        # gamma/chi2 logcdf stay finite where P underflows (x = 1e-300, a = 3: -2074.5 = log of
        # x^3 / 6; JAX's -inf): test_fuzz_jax_parameters checks them against the closed form
        beyond = np.isneginf(want) & (fn == "logcdf") & (dist != "beta") & (y > 0)
        for got in (ours_f(*args), tg.jit(ours_f)(*args)):
            got = np.asarray(got)
            assert np.all(np.isfinite(got[beyond]) & (got[beyond] < -700)), got[beyond]
            np.testing.assert_allclose(got[~beyond], want[~beyond], rtol=1e-12, atol=1e-300)
    for i, name in enumerate(names):
        if name not in ("x", "loc", "scale"):
            continue
        g = np.asarray(tg.grad(lambda *a: tnp.sum(ours_f(*a)), argnums=i)(*args))
        jg = np.asarray(jax.grad(lambda *a: jnp.sum(jax_f(*a)), argnums=i)(*args))
        where = f"{dist}.{fn} d/{name}"
        assert np.all(g[ends] == 0), (where, x[ends][g[ends] != 0], g[ends][g[ends] != 0])
        inner = ~ends & np.isfinite(jg) & ~np.isinf(y)   # (logsf at +inf: the next test)
        np.testing.assert_allclose(g[inner], jg[inner], rtol=1e-9, atol=1e-300, err_msg=where)
    # forward mode agrees with reverse mode (a 0 tangent through log(0) is not NaN)
    t = tg.jvp(lambda x: ours_f(x, *args[1:]), (x,), (np.ones_like(x),))[1]
    g = tg.grad(lambda x: tnp.sum(ours_f(x, *args[1:])))(x)
    np.testing.assert_allclose(t, g, rtol=1e-13, atol=0)


def test_gammainc_x_derivative_at_infinity():
    """d/dx gammainc(a, x) at x = +inf is the density's limit 0 (and gammaincc's -0), and the
    mixed derivative d/dx d/da is 0 where the density is (x = +inf; x = 0 for a > 1): ours
    were NaN (``(a - 1) log x - x`` is ``inf - inf``; ``0 * log 0``).  JAX's are NaN too at
    x = +inf for a >= 1; elsewhere they agree, and with finite differences."""
    a = np.array([0.5, 1.0, 3.0, 0.5, 1.0, 3.0, 3.0, 0.5, 1.0, 3.0])
    x = np.array([inf, inf, inf, 2.0, 2.0, 2.0, 0.0, 0.7, 0.7, 0.7])
    dp = tg.vmap(tg.grad(tsp.gammainc, 1))(a, x)
    dq = tg.vmap(tg.grad(tsp.gammaincc, 1))(a, x)
    dpda_dx = tg.vmap(tg.grad(tg.grad(tsp.gammainc, 0), 1))(a, x)
    assert np.all(dp[:3] == 0) and np.all(dq[:3] == 0) and np.all(dpda_dx[:3] == 0)
    assert dpda_dx[6] == 0
    import jax.scipy.special as jsp
    jdp = jax.vmap(jax.grad(jsp.gammainc, 1))(a, x)
    np.testing.assert_allclose(dp[3:], jdp[3:], rtol=1e-12)
    np.testing.assert_allclose(dq[3:], -jdp[3:], rtol=1e-12)
    h = 1e-6
    fd = (tsp.gammainc(a + h, x) - tsp.gammainc(a - h, x)) / (2 * h)
    h = 1e-4
    fd2 = ((tsp.gammainc(a + h, x + h) - tsp.gammainc(a - h, x + h))
           - (tsp.gammainc(a + h, x - h) - tsp.gammainc(a - h, x - h))) / (4 * h * h)
    np.testing.assert_allclose(tg.vmap(tg.grad(tsp.gammainc, 0))(a, x)[7:], fd[7:], rtol=1e-6)
    np.testing.assert_allclose(dpda_dx[7:], fd2[7:], rtol=1e-6)
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(tsp.gammainc, 1)))(a, x), dp, rtol=1e-12)


@pytest.mark.parametrize("dist", ["gamma", "chi2"])
def test_logsf_at_infinity_has_the_limit_slopes(dist):
    """``logsf`` at x = +inf is -inf with its limit's derivatives: the slope in x is minus the
    hazard, which tends to ``1 / scale`` (``2 scale`` for chi2's), as ``expon.logsf``'s (the
    gamma of shape 1); d/loc is the opposite, d/scale +inf.  Ours were 0 (a constant branch;
    JAX's 0 for chi2, NaN for gamma).  The slopes at x = +inf continue those at large x
    (against JAX there), eagerly, under jit, vmapped and in forward mode."""
    shapes, locs, scales = np.array([0.5, 1.0, 2.5, 7.0]), np.array([0.0, -1.0, 1.0, 3.0]), \
        np.array([1.0, 2.0, 0.5, 3.0])
    ours, theirs = getattr(ts, dist).logsf, getattr(js, dist).logsf
    s_eff = scales * (2.0 if dist == "chi2" else 1.0)
    grad = tg.vmap(tg.grad(ours, (0, 2, 3)))
    x = np.full(4, inf)
    for g in (grad(x, shapes, locs, scales), tg.jit(grad)(x, shapes, locs, scales)):
        np.testing.assert_array_equal(g[0], -1.0 / s_eff)
        np.testing.assert_array_equal(g[1], 1.0 / s_eff)
        np.testing.assert_array_equal(g[2], inf)
    assert np.all(ours(x, shapes, locs, scales) == -inf)
    t = tg.jvp(lambda x: ours(x, shapes, locs, scales), (x,), (np.ones(4),))[1]
    np.testing.assert_array_equal(t, -1.0 / s_eff)
    if dist == "gamma":   # the gamma of shape 1 is expon
        np.testing.assert_array_equal(tg.grad(ours, (0, 2, 3))(inf, 1.0, 1.0, 2.0),
                                      tg.grad(ts.expon.logsf, (0, 1, 2))(inf, 1.0, 2.0))
    # approaching: at x = loc + 400 scale the slope in x is within (a - 1) / 400 of the limit
    far = locs + 400.0 * s_eff
    g_far = grad(far, shapes, locs, scales)[0]
    np.testing.assert_allclose(g_far, jax.vmap(jax.grad(theirs))(far, shapes, locs, scales),
                               rtol=1e-9)
    np.testing.assert_allclose(g_far * s_eff, -1.0, atol=0.02)
