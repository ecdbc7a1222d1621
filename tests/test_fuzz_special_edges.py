"""``hyp2f1``, ``betainc`` and ``sph_harm_y`` at the edges of their domains (session 18's probe):
huge, negative, infinite and NaN parameters, ``x`` at and next to +-1, +-inf and NaN, against
SciPy's values, eagerly and under jit on both backends, each call bounded in wall-clock time.

The probe (386,000 ``hyp2f1`` points, 3,757 ``betainc`` points, 4,800 ``sph_harm_y`` points, each
call in a child process watched by a 3 s bound) found no hang in ``hyp2f1`` or ``betainc`` and
one crash: SciPy's ``hyp2f1`` ends the process with SIGSEGV at ``x = NaN`` when ``c`` equals
``a`` (or ``b``), ``c >= 2**53`` and the other parameter is in (0, 1) (e.g.
``hyp2f1(1e17, 0.5, 1e17, nan)``); ours called it.  The crash is checked in a child process, so
that a regression fails this test rather than the test run.
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.special as sc

import tangentia as tg
import tangentia.scipy.special as tsp

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The points of the probe that SciPy survives: parameters huge, negative, infinite and NaN.
_P = [0.0, 0.5, -0.5, -3.0, 2.5, 1e6 + 0.5, -1e6, 1e15, -1e300, 1e300, np.inf, -np.inf, np.nan]
_X = [-np.inf, -1e6, -1.0, -0.5, 0.0, 0.5, 1 - 1e-15, 1.0, 1 + 1e-15, 2.0, np.inf, np.nan]


def _crashes_scipy(a, b, c, x):
    """The region where SciPy 1.17's hyp2f1 crashes (the probe's finding, a superset)."""
    return np.isnan(x) and np.isfinite(c) and c >= 2.0 ** 53 and (a == c or b == c)


def _edge_grid():
    pts = [p for p in itertools.product(_P, _P, _P, _X) if not _crashes_scipy(*p)]
    return tuple(np.array(v) for v in zip(*pts))


@pytest.mark.timeout(120)
def test_hyp2f1_nan_x_with_huge_equal_parameters_is_nan_not_a_crash() -> None:
    """``hyp2f1(a, b, a, nan)`` with ``a >= 2**53`` is NaN (JAX's value, SciPy's wherever it
    does not crash there), eagerly, under jit on both backends and under grad; the same call
    next to it (x finite, c below 2**53, a != c) is SciPy's value."""
    code = textwrap.dedent("""
        import numpy as np, scipy.special as sc
        import tangentia as tg, tangentia.scipy.special as tsp
        a = np.array([1e17, 0.5, 1e300, 1e18, 1e15, 1e17, 1e17, 1e17])
        b = np.array([0.5, 1e17, 1e-300, 0.25, 0.5, 0.5, 0.5, 0.0])
        c = np.array([1e17, 1e17, 1e300, 1e18, 1e15, 1e17, 2e17, 1e17])
        x = np.array([np.nan, np.nan, np.nan, np.nan, np.nan, 0.3, np.nan, np.nan])
        want = np.array([np.nan] * 5 + [sc.hyp2f1(1e17, 0.5, 1e17, 0.3)] + [np.nan, 1.0])
        f = lambda x: tsp.hyp2f1(a, b, c, x)
        for g in (f, tg.jit(f), tg.jit(f, backend="numpy")):
            np.testing.assert_array_equal(g(x), want)
        np.testing.assert_array_equal(tsp.hyp2f1(1e17, 0.5, 1e17, np.nan), np.nan)
        np.testing.assert_array_equal(tsp.hyp2f1(np.float32(1e20), np.float32(0.5),
                                                 np.float32(1e20), np.float32(np.nan)), np.nan)
        d = tg.vmap(tg.grad(lambda x: tsp.hyp2f1(1e17, 0.5, 1e17, x)))(np.array([np.nan, 0.3]))
        assert np.isnan(d[0]) and np.isfinite(d[1]), d
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=110,
                       cwd=_ROOT, env={**os.environ, "PYTHONPATH": _ROOT})
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), (r.returncode, r.stderr[-2000:])


@pytest.mark.timeout(120)
def test_hyp2f1_edges_are_scipys_values_eager_and_jit() -> None:
    """On the probe's edge grid (26,000 points) ours is SciPy's number (NaN where SciPy's is
    NaN), eagerly and under jit on both backends, and the jit of its derivative in x is the
    eager one."""
    a, b, c, x = _edge_grid()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sc.hyp2f1(a, b, c, x)
    for f in (tsp.hyp2f1, tg.jit(tsp.hyp2f1), tg.jit(tsp.hyp2f1, backend="numpy")):
        np.testing.assert_array_equal(f(a, b, c, x), want)
    sel = slice(None, None, 7)
    dfdx = tg.vmap(tg.grad(tsp.hyp2f1, argnums=3))
    np.testing.assert_array_equal(tg.jit(dfdx)(a[sel], b[sel], c[sel], x[sel]),
                                  dfdx(a[sel], b[sel], c[sel], x[sel]))


_PB = [0.0, 1e-300, 1e-10, 0.5, 1.0, 2.5, 1e6, 1e15, 1e300, np.inf, np.nan, -1.0, -0.5]
_XB = [-1.0, 0.0, 1e-300, 0.5, 1 - 1e-16, 1.0, 1.5, np.inf, -np.inf, np.nan]


@pytest.mark.timeout(120)
def test_betainc_edges_are_scipys_values_eager_and_jit() -> None:
    """``betainc`` on the probe's edge grid: SciPy's number eagerly and under jit on both
    backends (no call above 0.05 s in the probe)."""
    a, b, x = (np.array(v) for v in zip(*itertools.product(_PB, _PB, _XB)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sc.betainc(a, b, x)
    for f in (tsp.betainc, tg.jit(tsp.betainc), tg.jit(tsp.betainc, backend="numpy")):
        np.testing.assert_array_equal(f(a, b, x), want)


@pytest.mark.timeout(120)
def test_sph_harm_y_n_max_clips_as_jax() -> None:
    """``n_max`` below the largest degree clips the result to it, as JAX documents ("the
    results are clipped to n_max": its Legendre table stops at degree and order n_max, read at
    (min(|m|, n_max), min(n, n_max)), times exp(i |m| phi)); ours ignored ``n_max`` and gave the
    degree-n value.  Eagerly and under jit, against JAX 0.10.2; with n_max at or above every
    degree, the value and the derivatives in theta and phi are the ones without n_max."""
    jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference for n_max's clipping")
    jax.config.update("jax_enable_x64", True)
    from jax.scipy.special import sph_harm_y as jax_sph_harm_y
    rng = np.random.default_rng(18)
    n = rng.integers(0, 12, 200)
    m = rng.integers(-12, 13, 200)
    keep = np.abs(m) <= n
    n, m = n[keep], m[keep]
    theta, phi = rng.uniform(0, np.pi, n.size), rng.uniform(0, 2 * np.pi, n.size)
    for n_max in (0, 3, 7, 11):
        want = np.asarray(jax_sph_harm_y(n, m, theta, phi, n_max=n_max))

        def f(t, p, n_max=n_max):
            return tsp.sph_harm_y(n, m, t, p, n_max=n_max)
        np.testing.assert_allclose(f(theta, phi), want, rtol=1e-12, atol=1e-13)
        np.testing.assert_array_equal(tg.jit(f)(theta, phi), f(theta, phi))
    with pytest.raises(TypeError, match="^The `n_max` argument of `jnp.scipy.special.sph_harm`"):
        tsp.sph_harm_y(n, m, theta, phi, n_max=-1)

    def re(t, p, n_max=None):
        return tsp.sph_harm_y(n[:5], m[:5], t, p, n_max=n_max).real.sum()
    for argnums in (0, 1):
        np.testing.assert_allclose(tg.grad(re, argnums)(theta[:5], phi[:5], 11),
                                   tg.grad(re, argnums)(theta[:5], phi[:5]), rtol=1e-12,
                                   atol=1e-13)
