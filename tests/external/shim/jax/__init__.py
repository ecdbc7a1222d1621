"""Test-only shim: ``import jax`` gives tangentia.

Put ``tests/external/shim`` first on ``sys.path`` (run_optax.py does) and libraries
written for JAX (optax, chex) import tangentia instead.  ``jax`` *is* the ``tangentia``
module (so ``jax.Array``, ``jax.tree_util`` ... are tangentia's own objects), and every
``jax.x.y`` is imported as ``tangentia.x.y`` by a meta path finder.  Real JAX
(``jaxlib``) is made unimportable so nothing falls back to it silently.
"""
import importlib
import importlib.abc
import importlib.util
import sys

import tangentia


class _JaxToTangentia(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "jaxlib" or name.startswith("jaxlib."):
            raise ImportError(f"{name}: real JAX is disabled by the tangentia test shim")
        if name.startswith("jax."):
            target_name = "tangentia" + name[3:]
            try:
                found = importlib.util.find_spec(target_name)
            except ImportError:
                found = None
            if found is None:
                return None  # ModuleNotFoundError naming jax.x, as JAX would
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("tangentia" + spec.name[3:])

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _JaxToTangentia())
sys.modules[__name__] = tangentia
