"""``tangentia.scipy.special`` where a ratio or a power leaves float64's range, against
JAX 0.10.2 (x64), session 22.  Each test failed before its fix.

The rest of the sweep (gammainc/gammaincc/betaln/xlogy/xlog1py/kl_div/rel_entr/beta/poch/
zeta/betainc/polygamma on grids of -inf, -1e300, ..., +-0, 1e-300, ..., 1e300, inf, NaN,
values and gradients) differed from JAX only where the existing tests say ours is SciPy's or
the limit (test_fuzz_jax_special*.py), and at subnormal inputs, which XLA flushes to 0.
``rel_entr(p, NaN)`` is NaN (SciPy's; JAX's inf).  ``poch``'s d/dz at m = 1e-10 is psi(z + m) - psi(z) by difference (ours 7e-8 off, JAX's 6e-7).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.scipy.special as tsp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.scipy.special as jsp  # noqa: E402


def test_kl_div_and_rel_entr_where_p_over_q_leaves_the_range():
    # p / q underflows (1e-300 / 1e300) or overflows: SciPy's kl_div was -inf and inf (JAX's
    # 1e300 and 1.3805510557964273e303), and both functions' d/dp -inf and inf (log(p / q);
    # JAX's -1381.55... and 1381.55...); inside the range the values are SciPy's as before
    p = np.array([1e-300, 1e300, 1e-200, 2e-300, 0.3, 0.0, 1.0, -1.0, 1e-300, 5.0])
    q = np.array([1e300, 1e-300, 1e200, 1e-10, 0.7, 1.0, np.inf, 1.0, 1e-300, 2.0])
    for ours, theirs in ((tsp.kl_div, jsp.kl_div), (tsp.rel_entr, jsp.rel_entr)):
        got, want = ours(p, q), np.asarray(theirs(p, q))
        np.testing.assert_allclose(got, want, rtol=1e-15)
        for arg in (0, 1):
            for f in (tg.vmap(tg.grad(ours, arg)), tg.jit(tg.vmap(tg.grad(ours, arg)))):
                want = np.asarray(jax.vmap(jax.grad(theirs, arg))(p, q))
                np.testing.assert_allclose(f(p, q), want, rtol=1e-14,
                                           atol=2e-16,   # (JAX's 1 - 1 at p = q: 1.1e-16)
                                           err_msg=f"{ours.__name__} d/{arg}")
    assert tsp.kl_div(1e-300, 1e300) == 1e300
    np.testing.assert_allclose(tsp.kl_div(1e300, 1e-300), 1e300 * 1380.5510557964274 + 1e-300,
                               rtol=1e-15)
    # the second derivative in the far region (d2/dp2 = 1/p)
    np.testing.assert_allclose(tg.grad(tg.grad(tsp.kl_div))(1e-200, 1e200), 1e200, rtol=1e-15)
    np.testing.assert_allclose(tg.grad(tg.grad(tsp.rel_entr))(1e300, 1e-300), 1e-300, rtol=1e-15)
