"""Differential fuzzing against JAX 0.10.2 (x64): generated arguments (shapes with 0-d, size-0
and size-1 axes; bool, integer, float32/64 and complex128 dtypes; NaN, infinities, signed zeros,
extreme and negative values) run through ``tangentia.numpy``, ``tangentia.lax`` and the
transformations and through ``jax``, comparing values, shapes, dtypes, errors and derivatives.

The comparison's rules (deliberate differences, not failures):

* dtypes follow NumPy 2's promotion (float64 default, ``bool`` / small integers promote as NumPy
  does), so result dtypes are compared with NumPy's result for the same arguments, values with
  JAX's (cast to the common dtype), or NumPy's where JAX's x64 promotion computes in a narrower
  type (``uint8`` -> ``float32`` in JAX, ``float16`` in NumPy: we compute in float64).
* eager results are ``numpy.ndarray`` instances; only values, shapes and dtypes are compared.

Hypothesis runs a few examples per test by default; ``TANGENTIA_FUZZ_EXAMPLES=2000`` runs many
more locally.  The profile is derandomized so a failure reproduces; each bug found by fuzzing
keeps a minimal regression case (an ``@example`` or a parametrized case naming it).
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax as tlax

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
jlax = jax.lax

settings.register_profile(
    "fuzz", max_examples=int(os.environ.get("TANGENTIA_FUZZ_EXAMPLES", "25")), deadline=None,
    derandomize=True, suppress_health_check=list(HealthCheck), database=None)
FUZZ = settings.get_profile("fuzz")


# ---------------------------------------------------------------------------
# regressions outside the generated families


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float64, np.complex128])
def test_numba_identity_program_per_dtype(dtype):
    """The numba backend names a compiled module by its source, and an identity program's source
    is the same for every dtype: it ran the first dtype's compiled code (conj of uint8 gave bool,
    of float64 failed to unbox)."""
    f = tg.jit(tnp.conj, backend="numba")
    x = np.array([1, 0, 2], dtype)
    got = f(x)
    assert got.dtype == jnp.conj(x).dtype == dtype
    np.testing.assert_array_equal(got, x)
