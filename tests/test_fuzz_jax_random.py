"""``tangentia.random`` draws JAX's numbers (0.10.2, x64) at the edges of its parameters
(session 19's sweep: 374 expressions x 2 seeds, raw uint32 and typed keys, float32 and
float64, shapes with 0-d and size-0 axes; eagerly, under jit and vmap): tiny gamma/beta/
dirichlet concentrations, randint at the dtype's bounds and with empty or inverted ranges,
choice with and without replacement and with ``p``, categorical over -inf logits, poisson
at 0 and huge rates, split/fold_in at the uint32 bounds.  All agreed (integers bit for bit,
floats to a few ulps).  Their differences, left alone: JAX's float32 results flush subnormals
to 0 (XLA), ours keep them; truncated_normal far in a tail (a=5) differs by ~1e-10
relative (erf/erfinv's last bits amplified by the tail's conditioning, JAX's no better);
orthogonal in float32 by ~5e-5 (QR's rounding).  This module keeps a sample of the sweep.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.random as tr

jax = pytest.importorskip("jax", reason="JAX 0.10.2 (x64) is the reference")
jax.config.update("jax_enable_x64", True)
import jax.random as jr  # noqa: E402

pytestmark = pytest.mark.timeout(120)

_CASES = [
    "R.uniform(K, (3,), dtype='float32', minval=-2., maxval=5.)",
    "R.normal(K, (0, 2))",
    "R.normal(K, (3,), dtype='complex64')",
    "R.truncated_normal(K, -1., 2., (4,), dtype='float32')",
    "R.gamma(K, np.array([0.001, 0.01, 0.1, 1., 10.]))",
    "R.loggamma(K, 0.01, (3,))",
    "R.beta(K, np.array([1e-3, 0.01, 5.]), np.array([1e-3, 2., 0.01]))",
    "R.dirichlet(K, np.array([0.05, 0.2, 1.5]), (2,))",
    "R.t(K, np.array([0.5, 1., 100.]))",
    "R.poisson(K, np.array([0., 1e-3, 5., 20., 1e3, 1e6]))",
    "R.binomial(K, 100., 0.7, (3,), dtype='float32')",
    "R.geometric(K, 0.3, (4,))",
    "R.bernoulli(K, np.array([0., 1., 0.5, np.nan]))",
    "R.randint(K, (6,), np.iinfo('int8').min, np.iinfo('int8').max, dtype='int8')",
    "R.randint(K, (6,), -2**63, 2**63 - 1)",
    "R.randint(K, (6,), 7, 3, dtype='uint32')",
    "R.randint(K, (6,), np.array([0, 5, -3, 2, 9, 0]), np.array([1, 5, 4, 100, 3, 2**40]))",
    "R.categorical(K, np.array([[0., -np.inf, 1.], [2., 1., 0.]]), axis=0)",
    "R.categorical(K, np.array([0., 1., 2.]), replace=False, shape=(2,))",
    "R.choice(K, 5, (5,), replace=False)",
    "R.choice(K, np.arange(10.), (4,), replace=False, p=np.arange(10.) / 45.)",
    "R.choice(K, np.arange(12.).reshape(3, 4), (2,), axis=1)",
    "R.permutation(K, np.arange(12.).reshape(3, 4), axis=1, independent=True)",
    "R.multinomial(K, np.array([5., 10.]), np.array([0.2, 0.3, 0.5]), shape=(2, 3))",
    "R.split(K, (2, 3))",
    "R.fold_in(K, 2**32 - 1)",
    "R.bits(K, (3,), dtype='uint16')",
    "R.weibull_min(K, 1.5, 2.5, (2,), dtype='float32')",
    "R.ball(K, 3, 2, (2,))",
]


def _data(x: Any, key_data: Any) -> np.ndarray:
    if "key<" in str(getattr(x, "dtype", "")):
        x = key_data(x)
    return np.asarray(x)


def _check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape)
    if want.dtype.kind in "fc":
        single = want.dtype in (np.float32, np.complex64)
        np.testing.assert_allclose(got, want, rtol=2e-6 if single else 1e-13, atol=0,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("i", range(len(_CASES)))
def test_draws_equal_jax(i: int) -> None:
    """Eagerly against JAX (raw keys for even cases, typed keys for odd ones, seeds 0 and
    2**32 + 5); under jit (NumPy backend) and vmap over two keys against eager, bit for bit."""
    expr = _CASES[i]
    typed = i % 2 == 1
    for seed in (0, 2**32 + 5):
        jk = jr.key(seed) if typed else jr.PRNGKey(seed)
        tk = tr.key(seed) if typed else tr.PRNGKey(seed)
        want = _data(eval(expr, {"R": jr, "K": jk, "np": np}), jr.key_data)
        got = _data(eval(expr, {"R": tr, "K": tk, "np": np}), tr.key_data)
        _check(got, want, f"{expr} seed {seed}")

    def draw(k: Any) -> Any:
        return eval(expr, {"R": tr, "K": k, "np": np})
    keys = tr.split(tk, 2)
    np.testing.assert_array_equal(_data(tg.jit(draw, backend="numpy")(tk), tr.key_data), got)
    looped = np.stack([_data(draw(k), tr.key_data) for k in keys])
    np.testing.assert_array_equal(_data(tg.vmap(draw)(keys), tr.key_data), looped)
