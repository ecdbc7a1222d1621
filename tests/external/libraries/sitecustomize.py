"""Harness only (never imported by tangentia's suite): with ``TG_JAX_ALIAS=1`` and this
directory on ``PYTHONPATH``, ``import jax`` (and every ``jax.x``) gives ``tangentia``
(``tangentia.x``), by the finder of ``tests/_jax_alias.py``.  Unlike
``tests/external/shim`` (JAX's own test files, which need stand-ins for
``jax._src.test_util``), nothing is stood in: a library sees tangentia's own ``_src``."""
import os
import sys

if os.environ.get("TG_JAX_ALIAS") == "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from _jax_alias import JaxAlias

    sys.meta_path.insert(0, JaxAlias())
    del sys.path[0]
