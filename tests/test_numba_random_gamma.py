"""``random_gamma`` (``random.gamma``, ``beta``, ``dirichlet``, ...) on the numba backend:
a kernel (``numba_backend/kernels.py``: JAX's rejection sampler one element at a time, on
the same threefry keys), no longer NumPy's implementation in object mode.  The samples are
the NumPy backend's draws: equal to a few ULP (libm's log and sqrt where NumPy ran its
SIMD loops), in float64 and float32, in log space, through the edges (alpha NaN, 0,
negative, infinite, tiny), and the gradient of a sample (``igamma_grad_a``) through jit."""
from __future__ import annotations

from typing import Any, List

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.primitives import prng  # noqa: E402
from _numba_util import compile_numba, objmode_spy, program  # noqa: E402

NUMBA = nbb.NumbaBackend()


@pytest.fixture
def objmode_calls(monkeypatch: Any) -> List[str]:
    """The primitives the numba generator runs in object mode (a fresh cache: generated)."""
    return objmode_spy(monkeypatch, "tangentia-random-gamma-")


def _alphas(dtype: Any) -> np.ndarray:
    rng = np.random.default_rng(0)
    edges = [0.1, 0.5, 1.0, 3.0, 100.0, 1e-3, np.nan, 0.0, -1.0, np.inf, 1e6, 0.999, 1.0001]
    return np.concatenate([edges, 10 ** rng.uniform(-2, 2, 400 - len(edges))]).astype(dtype)


def _compare(dtype: Any, log_space: bool) -> np.ndarray:
    keys = np.asarray(tg.random.split(tg.random.PRNGKey(3), 4))
    a = _alphas(dtype).reshape(4, 100)
    f = lambda k, a: [prng.random_gamma_p.bind(k, a, log_space=log_space)]  # noqa: E731
    jaxpr, full = program(f, keys, a)
    (got,) = compile_numba(jaxpr, NUMBA)(*full)
    with np.errstate(invalid="ignore"):     # (alpha < 0: NaN, as the sampler's sqrt)
        (want,) = get_backend("numpy").compile(jaxpr)(*full)
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    ok = np.isfinite(want)
    assert np.array_equal(got[~ok], want[~ok], equal_nan=True)   # NaN and infinities
    eps = np.finfo(dtype).eps
    g, w = got[ok].astype(np.float64), want[ok].astype(np.float64)
    if log_space:   # (log d + log V + log of the boost: a sum of terms, to their rounding)
        np.testing.assert_allclose(g, w, rtol=0, atol=16 * eps * (1.0 + np.abs(w)).max())
    else:
        np.testing.assert_allclose(g, w, rtol=4 * eps, atol=0)
    return got


@pytest.mark.parametrize("dtype,log_space", [(np.float64, False), (np.float32, True),
                                             (np.float32, False), (np.float64, True)])
def test_samples_are_the_numpy_backends(objmode_calls: List[str], dtype: Any,
                                        log_space: bool) -> None:
    got = _compare(dtype, log_space)
    assert objmode_calls == []
    a = _alphas(dtype).reshape(4, 100)
    finite = np.isfinite(got) & (a > 0) & np.isfinite(a)
    if not log_space:       # Gamma(a, 1) samples: positive, mean a (400 draws, loosely)
        assert np.all(got[finite] >= 0)
        assert abs(np.mean(got[finite] / a[finite]) - 1.0) < 0.15


def test_gamma_sampling_and_its_gradient_under_jit(objmode_calls: List[str]) -> None:
    # random.gamma's reparameterized gradient (igamma_grad_a) through jit on numba
    key = tg.random.PRNGKey(7)
    a = np.array([0.5, 2.0, 9.0])

    def f(a: Any) -> Any:
        return tg.numpy.sum(tg.random.gamma(key, a))
    got = tg.jit(tg.value_and_grad(f), backend="numba")(a)
    want = tg.jit(tg.value_and_grad(f), backend="numpy")(a)
    assert objmode_calls == []
    np.testing.assert_allclose(got[0], want[0], rtol=1e-14)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    # the implicit reparameterization: d x / d a = -(d P(a, x) / d a) / p(x; a) at the
    # sample x, P the regularized incomplete gamma function (finite differences in a)
    import scipy.special as sc
    import scipy.stats as ss
    x = np.asarray(tg.random.gamma(key, a))
    h = 1e-6
    fd = -(sc.gammainc(a + h, x) - sc.gammainc(a - h, x)) / (2 * h) / ss.gamma.pdf(x, a)
    np.testing.assert_allclose(got[1], fd, rtol=1e-6)
