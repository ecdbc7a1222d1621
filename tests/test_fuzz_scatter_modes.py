"""Scatter and gather modes against JAX 0.10.2 (x64): ``x.at[idx]`` updates with repeated,
negative and out-of-bounds indices under each ``mode``, eagerly, under jit and differentiated
(session 18's sweep: 6 index sets x 6 modes x get/set/add/multiply/min/max/divide/power, take
and take_along_axis, values and jit(grad)).  Each test here failed before its fix; the sweep's
other differences are JAX's (see the notes at the end).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

_INDICES = [np.array([0, 2, 5]), np.array([1, 1, 1]), np.array([1, -5, 3, 3]),
            np.array([6, 7, -7, -8]), np.array([], int)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", [None, "clip", "fill", "drop", "promise_in_bounds"])
def test_power_update_with_repeated_indices_as_jax(mode) -> None:
    """``x.at[idx].power(v)`` raises a repeated entry to each of its values in turn (JAX's
    ``x ** (1 *= v at idx)``: ``x[1] ** (0.5 * 1.25 * 2.0)``); ours read ``x[idx]`` once and set
    ``x[idx] ** v``, so the last repeat won (2 ** 2.0 = 4 where JAX gives 2 ** 1.25 = 2.38), and
    out-of-bounds updates clipped under mode='clip' met the same fate.  Floats, integers and
    complex numbers, eagerly and under jit; the gradient in x eagerly and under jit."""
    kw = {} if mode is None else {"mode": mode}
    x = np.arange(1.0, 7.0) - 2.0
    for ix in _INDICES:
        if mode == "promise_in_bounds" and ix.size and (ix.max() >= 6 or ix.min() < -6):
            continue   # (out of bounds: no promise to keep)
        v = np.linspace(0.5, 3.0, ix.size)
        for xx, vv in [(x + 2.5, v), (x, v), (np.arange(6), np.arange(ix.size) + 1),
                       (x + 1j, v)]:
            def ours(a, b, ix=ix):
                return tnp.asarray(a).at[ix].power(b, **kw)

            def theirs(a, b, ix=ix):
                return jnp.asarray(a).at[ix].power(b, **kw)
            want = run(theirs, xx, vv)
            name = f"power({ix}, {mode}, {xx.dtype})"
            assert_same(name, run(ours, xx, vv), want, rtol=1e-13)
            assert_same(name + " jit", run(tg.jit(ours), xx, vv), want, rtol=1e-13)
            if xx.dtype.kind == "f" and xx.min() > 0:
                gw = run(jax.grad(lambda a, b: jnp.sum(theirs(a, b))), xx, vv)
                g = tg.grad(lambda a, b: tnp.sum(ours(a, b)))
                assert_same(name + " grad", run(g, xx, vv), gw, rtol=1e-12)
                assert_same(name + " jit(grad)", run(tg.jit(g), xx, vv), gw, rtol=1e-12)


def test_power_update_under_vmap_and_on_slices_as_jax() -> None:
    """The same with a repeated index on a slice and under vmap (values and grad)."""
    m = np.arange(1.0, 13.0).reshape(3, 4)
    cases = [(lambda a: a.at[np.array([0, 0]), 1:].power(2.0), None),
             (lambda a: a.at[np.array([1, 1])].power(np.array([2.0, 0.5])), "vmap")]
    for f, how in cases:
        ours = tg.vmap(f) if how else f
        theirs = jax.vmap(f) if how else f
        want = theirs(jnp.asarray(m))
        assert_same("value", ours(tnp.asarray(m)), want, rtol=1e-13)
        assert_same("grad", tg.grad(lambda a: tnp.sum(ours(a)))(m),
                    jax.grad(lambda a: jnp.sum(theirs(a)))(m), rtol=1e-12)


# The sweep's differences that are JAX's, left as they are:
# - x.at[idx].get() (default mode) with an out-of-bounds index clamps it in the value, and
#   JAX's jvp agrees (tangent 1 there), but jax.grad gives 0 there (its transpose drops the
#   out-of-bounds cotangent): JAX's grad disagrees with its own jvp and with finite
#   differences; ours follows the value (grad = jvp transposed).
# - x.at[idx].min/max(v, mode='clip') with out-of-bounds indices clipped onto an entry whose
#   operand loses: JAX's gradient in x is 1 there (finite differences: 0; ours 0).
# - take_along_axis(x, idx, mode='promise_in_bounds') with a negative index reads x[0] where
#   JAX's take and at[].get read x[-1] (ours: x[-1] everywhere); the index broke the promise.
# - x.at[idx] with an empty idx accepts mode='wrap' in JAX (not validated); ours refuses it.
