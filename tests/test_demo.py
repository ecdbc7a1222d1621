"""The demo (`python -m tangentia`) runs, and what it claims holds."""
import subprocess
import sys

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


def test_demo_runs_and_shows_the_stability_claim():
    out = subprocess.run([sys.executable, "-m", "tangentia"], capture_output=True, text=True,
                         check=True)
    assert "Warning" not in out.stderr
    lines = [line for line in out.stdout.splitlines() if "1000." in line]
    assert any("1.0" in line and "custom rule" in line for line in lines), lines
    assert any("nan" in line and "naive" in line for line in lines), lines


def test_naive_autodiff_of_log1pexp_fails_at_1000_and_the_custom_rule_does_not():
    @tg.custom_jvp
    def log1pexp(x):
        return tnp.log1p(tnp.exp(x))

    @log1pexp.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + tnp.exp(x)))

    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(tg.grad(lambda x: tnp.log1p(tnp.exp(x)))(1000.0))
        assert float(tg.grad(log1pexp)(1000.0)) == 1.0
    # At 100 the naive derivative is still exactly 1 in float64: the demo must not claim it fails.
    assert float(tg.grad(lambda x: tnp.log1p(tnp.exp(x)))(100.0)) == 1.0


@pytest.mark.parametrize("transform", [tg.grad, tg.jit, tg.vmap])
def test_item_assignment_on_a_traced_value_says_how_to_update(transform):
    def f(x):
        x[0] = 5.0
        return tnp.sum(x)

    with pytest.raises(TypeError, match=r"does not support item assignment\. JAX arrays are "
                                        r"immutable\. Instead of ``x\[idx\] = y``, use "
                                        r"``x = x\.at\[idx\]\.set\(y\)``"):
        transform(f)(np.ones((3, 2)) if transform is tg.vmap else np.ones(3))
