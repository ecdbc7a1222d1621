"""Derivatives at non-differentiable and singular points against JAX 0.10.2 (x64), session 22.

The sweep (abs/sign at +-0, max/min/maximum/clip/sort/median/percentile/quantile at ties, norm
of every ord at 0, sqrt/cbrt/power at +-0, where-guarded NaN branches, arctan2/hypot at 0,
logsumexp/softmax with -inf, the nan-reductions with NaN entries, det/slogdet/inv/pinv/eigh
at singular or repeated inputs; values, gradients and second derivatives) agreed with JAX
except where a test below says.  Each test failed before its fix.

Left alone: ``slogdet``'s gradient at an exactly singular matrix is +-inf with the signs of
the zero pivot's sign (ours LAPACK's -0, JAX's +0): either is the adjugate over a signed zero.
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


def test_cbrt_second_and_third_derivatives_at_signed_zeros():
    # cbrt'' = -2/9 x^(-5/3): -inf at +0, +inf at -0 (JAX's); ours was NaN (the first
    # derivative t / (3 ans ans) differentiated: 0 * inf / inf)
    x = np.array([-0.0, 0.0, 1e-300, -8.0, 2.0, 0.3, 1e300, np.inf, -np.inf, np.nan])
    for order in (1, 2, 3):
        f, g = tnp.cbrt, jnp.cbrt
        for _ in range(order):
            f, g = tg.grad(f), jax.grad(g)
        np.testing.assert_allclose(tg.vmap(f)(x), np.asarray(jax.vmap(g)(x)), rtol=1e-14,
                                   err_msg=f"order {order}")
    assert tg.grad(tg.grad(tnp.cbrt))(0.0) == -np.inf
    assert tg.grad(tg.grad(tnp.cbrt))(-0.0) == np.inf
