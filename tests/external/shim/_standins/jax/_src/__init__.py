"""``jax._src``: the package of the test-only stand-ins for JAX's private modules.

A module not found among the stand-ins beside this file is looked up as ``tangentia.<name>``
(``jax._src.tree_util`` is ``tangentia.tree_util``); see tests/external/shim/jax/__init__.py.
"""
