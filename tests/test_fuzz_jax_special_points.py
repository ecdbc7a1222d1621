"""Values and derivatives at special points (zeros, ties, empty axes) against JAX 0.10.2 (x64),
found by session 17's probe of reductions and norms (1,540 cases: max/min/sort/prod/cumprod,
every ``norm`` order, std/var/ptp/median, the nan-reductions, clip, quantiles, logsumexp with
``b`` and ``return_sign``, on arrays with ties, zeros, NaN and infinities; value, grad, jvp and
the numba backend's jit(grad)).  Each test here failed before its fix.
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

_NORMS = [(np.inf, None, (3,)), (np.inf, 1, (2, 3)), (1, None, (2, 3)), (np.inf, None, (2, 3)),
          (2, None, (2, 3))]


@pytest.mark.parametrize("ord_, axis, shape", _NORMS)
def test_max_norms_at_zero_and_of_empty_arrays_as_jax(ord_, axis, shape) -> None:
    """The norms that are a maximum (vector inf; matrix 1, inf and 2) take it with JAX's
    ``initial=0``: the norm of an empty vector or matrix is 0 (ours raised 'zero-size array to
    reduction operation max'), and at a zero argument the tie with that 0 takes half the
    cotangent (ours: all of it, so grad of norm(zeros((2, 3)), 1) was 1/3 per entry, JAX 1/6)."""
    def ours(v):
        return tnp.linalg.norm(v, ord=ord_, axis=axis)

    def theirs(v):
        return jnp.linalg.norm(v, ord=ord_, axis=axis)

    zero = np.zeros(shape)
    mixed = np.zeros(shape)
    mixed.ravel()[-1] = -1.5   # a row/column at zero next to one that is not
    for name, x in (("zeros", zero), ("mixed", mixed)):
        want = np.asarray(jax.jacrev(theirs)(jnp.asarray(x)))
        assert_same(f"jacrev {name}", run(tg.jacrev(ours), x), want)
        if name == "mixed":   # one compiled program per case (the numba backend)
            assert_same(f"jit(jacrev) numba {name}",
                        run(tg.jit(tg.jacrev(ours), backend="numba"), x), want)
        t = np.ones(shape)
        assert_same(f"jvp {name}", run(lambda v: tg.jvp(ours, (v,), (t,))[1], x),
                    np.asarray(jax.jvp(theirs, (jnp.asarray(x),), (jnp.asarray(t),))[1]))
    empty = np.zeros(tuple(0 if i == 0 else n for i, n in enumerate(shape)))
    assert_same("empty", run(ours, empty), np.asarray(theirs(jnp.asarray(empty))))
    assert_same("jit empty", run(tg.jit(ours), empty), np.asarray(theirs(jnp.asarray(empty))))
