"""Shared pytest configuration for the tangentia test suite.

Makes the package importable when the tests are run from a checkout without
installing it (``pytest`` or ``python -m pytest`` from the repository root).
"""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# Which jit backend the suite runs by default.  The numba backend compiles each
# distinct program natively (about a second per program), and the suite stages
# thousands of small programs, so by default they run on the NumPy reference
# backend; the numba backend is tested differentially against it, program by
# program, in tests/test_numba_backend.py (and the tests that name a backend).
# Run everything on numba with TANGENTIA_TEST_BACKEND=numba (slow: tens of minutes).
os.environ["TANGENTIA_JIT_BACKEND"] = os.environ.get("TANGENTIA_TEST_BACKEND", "numpy")
# Tests that name the numba backend check its own code, so it compiles before the
# first call (no tiering); tests/test_tiered.py turns tiering on where it tests it.
os.environ.setdefault("TANGENTIA_JIT_TIERED", "0")
# Every program staged by the suite is type-checked with the programs it carries
# (core.typecheck_jaxpr) as it is built: no measurable cost (CPU time of
# test_control_flow, test_transformations, test_custom_derivatives within +-5%).
os.environ.setdefault("TANGENTIA_CHECK_PROGRAMS", "1")


import gc  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After each test module, drop what compiled programs it left in this worker: jit's
    caches (tangentia's, and JAX's where the module compared with JAX), so a worker's
    memory follows one module's needs, not the sum of every module it ran."""
    yield
    import tangentia
    tangentia.clear_caches()
    jax = sys.modules.get("jax")
    if jax is not None and hasattr(jax, "clear_caches"):
        jax.clear_caches()
    gc.collect()
