"""Functions' less common parameters against JAX 0.10.2 (x64), session 23's probe: ``average``
with weights, ``histogram``/``histogram2d``/``histogramdd``, ``bincount``, every quantile method,
``cov``/``corrcoef`` weights, ``numpy.linalg``/``scipy.linalg`` options, ``lax`` parameters.
Each test here failed before its fix.

Left alone (deliberate or JAX's rounding): ``average``/``cov`` raise ZeroDivisionError for
concrete weights summing to zero (NumPy's; JAX's NaN); ``cov`` with ``ddof`` >= the
observations is inf (NumPy's clamp of the divisor; JAX's a negative variance);
``histogram`` counts are int64 and its uniform edges NumPy's (JAX's ``linspace`` puts the
middle edge of (-2, 2) in 10 bins at 5.6e-17, not 0, so a value at 0 counts one bin lower);
``nanpercentile(q=100/3)`` of 4 values rounds as NumPy's and JAX's ``percentile`` (JAX's
``nanpercentile`` differs from its own ``percentile`` there).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

_RNG = np.random.default_rng(23)
_M = _RNG.normal(size=(3, 5))
_AW = _RNG.uniform(0.1, 1.0, size=5)


# --- cov's weights: fweights must be integer (JAX and NumPy raise: ours took 1.5 as a count);
# negative weights count by their magnitude, as JAX's (ours: [1, -1, 1, 1, 1] gave 4.5468 for
# cov[0, 0], JAX 2.3234; aweights -aw gave -inf, JAX 1.2764)

def test_cov_fweights_must_be_integer() -> None:
    with pytest.raises(TypeError, match=r"^fweights must be integer\. cov: argument 'fweights'"):
        tnp.cov(_M, fweights=np.array([1.0, 2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(TypeError, match="fweights must be integer"):
        jnp.cov(_M, fweights=np.array([1.0, 2.0, 1.0, 1.0, 1.0]))


@pytest.mark.parametrize("fw, aw", [(np.array([1, -1, 2, 1, 3]), None), (None, -_AW),
                                    (np.array([1, -2, 0, 1, 3]), _AW * [1, -1, 1, -1, 1])])
def test_cov_negative_weights_count_by_magnitude_as_jax(fw, aw) -> None:
    for ddof in (None, 0, 2):
        want = jnp.cov(_M, fweights=fw, aweights=aw, ddof=ddof)
        np.testing.assert_allclose(tnp.cov(_M, fweights=fw, aweights=aw, ddof=ddof), want,
                                   rtol=1e-12, atol=1e-14)
    f = tg.jit(lambda m: tnp.cov(m, fweights=fw, aweights=aw))
    np.testing.assert_allclose(f(_M), jnp.cov(_M, fweights=fw, aweights=aw), rtol=1e-12)
    if aw is not None:
        g = tg.grad(lambda w: tnp.sum(tnp.cov(_M, fweights=fw, aweights=w) ** 2))(aw)
        gj = jax.grad(lambda w: jnp.sum(jnp.cov(_M, fweights=fw, aweights=w) ** 2))(aw)
        np.testing.assert_allclose(g, gj, rtol=1e-10, atol=1e-13)
