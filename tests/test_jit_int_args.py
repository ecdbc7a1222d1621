"""Python int arguments of a jitted function are traced as weakly typed int64 (as JAX's,
with x64): one outside int64's range raises JAX's OverflowError, on the first call and on
every later call (the call cache's fast path), instead of a number that depends on the
backend (the NumPy backend computed with the exact Python int, numba would wrap it)."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import random

pytestmark = pytest.mark.timeout(120)

JAX_START = "An overflow was encountered while parsing an argument to a jitted computation"


@pytest.mark.parametrize("value", [2 ** 63, 2 ** 64 - 1, -2 ** 63 - 1, 10 ** 30])
def test_out_of_range_int_raises_on_first_and_cached_calls(value):
    f = tg.jit(lambda x, n: x * n + 1.0)
    assert f(2.0, 3) == 7.0                       # an in-range int: compiled and cached
    for _ in range(2):                            # the cached program's fast path, twice
        with pytest.raises(OverflowError, match=JAX_START) as e:
            f(2.0, value)
        assert "argument 'n'" in str(e.value) and str(value) in str(e.value)
    g = tg.jit(lambda n: n * 1.0)
    with pytest.raises(OverflowError, match=JAX_START):   # first call: the traced path
        g(value)
    assert f(2.0, -4) == -7.0                     # the cache still serves in-range ints


@pytest.mark.parametrize("value", [2 ** 63 - 1, -2 ** 63, 0, -1])
def test_int64_extremes_pass_and_match_eager(value):
    f = tg.jit(lambda n: tnp.asarray(n) // 2)
    np.testing.assert_array_equal(f(value), np.int64(value) // 2)
    np.testing.assert_array_equal(f(value), f(value))    # and from the cache


def test_prngkey_under_jit_rejects_a_seed_outside_int64():
    with pytest.raises(OverflowError, match=JAX_START):
        tg.jit(random.PRNGKey)(2 ** 64 - 1)
    np.testing.assert_array_equal(tg.jit(random.PRNGKey)(7), random.PRNGKey(7))


def test_matches_jax_message():
    jax = pytest.importorskip("jax", reason="JAX is the reference for the message")
    jax.config.update("jax_enable_x64", True)
    with pytest.raises(OverflowError) as ours:
        tg.jit(lambda x: x * 1.0)(2 ** 64 - 1)
    with pytest.raises(OverflowError) as theirs:
        jax.jit(lambda x: x * 1.0)(2 ** 64 - 1)
    head = str(theirs.value).split(", whose argument path")[0]
    assert str(ours.value).startswith(head)
