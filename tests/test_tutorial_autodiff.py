"""Behaviours JAX's autodiff tutorials rely on (custom derivative rules, the autodiff
cookbook, advanced autodiff, gradient checkpointing), each found different from JAX by
running those tutorials with only their imports changed; our own code and numbers."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


def test_bwd_structure_error_begins_with_jax_wording_then_names_the_rule():
    @tg.custom_vjp
    def tap(x):
        return x

    def tap_bwd(res, g):
        return g                                    # not a tuple

    tap.defvjp(lambda x: (x, None), tap_bwd)
    with pytest.raises(TypeError) as ei:
        tg.grad(lambda x: tnp.cos(tap(x * x)))(1.5)
    msg = str(ei.value)
    assert msg.startswith("Custom VJP bwd rule must produce an output with the same container "
                          "(pytree) structure as the args tuple of the primal function"), msg
    assert "tap_bwd of function tap" in msg


def test_bwd_shape_error_begins_with_jax_wording_then_names_the_rule():
    @tg.custom_vjp
    def total(x):
        return tnp.sum(x)

    def total_bwd(res, g):
        return (tnp.ones(4) * g,)

    total.defvjp(lambda x: (total(x), None), total_bwd)
    with pytest.raises(ValueError) as ei:
        tg.grad(total)(np.arange(3.0))
    msg = str(ei.value)
    assert msg.startswith("Custom VJP bwd rule must produce an output with the same type as the "
                          "args tuple of the primal function, but at output[0] the bwd rule "
                          "produced an output of type float64[4] corresponding to an input of "
                          "type float64[3], so the shapes do not match"), msg
    assert "total_bwd of function total" in msg
