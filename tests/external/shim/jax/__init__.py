"""Test-only shim: ``import jax`` gives tangentia.

Put ``tests/external/shim`` first on ``sys.path`` (run_optax.py and run_jax_tests.py do)
and code written for JAX (optax, chex, JAX's own test files) imports tangentia instead.
``jax`` *is* the ``tangentia`` module (so ``jax.Array``, ``jax.tree_util`` ... are
tangentia's own objects).  A meta path finder serves every ``jax.x.y``, in this order:

1. a test-only stand-in, ``tests/external/shim/_standins/jax/x/y.py`` (or ``.../y/__init__.py``):
   JAX's private modules that test files import (``jax._src.test_util``,
   ``jax._src.config``, ``jax._src.dtypes`` ...), written for the shim;
2. for ``jax._src.internal_test_util.*`` and ``jax._src.lax_reference``: the file of the
   JAX wheel installed in the venv, executed under the shim (NumPy reference
   implementations and test records that JAX's test files read; nothing of them is copied
   into the repository);
3. ``tangentia.x.y`` itself (``jax._src.x`` is looked up as ``tangentia.x``).

A name none of these has raises ``ModuleNotFoundError`` naming ``jax.x.y``.  Real JAX
(``jaxlib``) is made unimportable so nothing falls back to it silently.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

import tangentia

_SHIM = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STANDINS = os.path.join(_SHIM, "_standins")
# modules of the installed JAX wheel that are data for JAX's tests, not JAX itself
_FROM_WHEEL = ("jax._src.internal_test_util", "jax._src.lax_reference")


def _wheel_file(name):
    """The file of module ``name`` in the installed JAX wheel (found without importing it)."""
    rel = name.split(".")
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == _SHIM:
            continue
        base = os.path.join(entry, *rel)
        for path, is_pkg in ((base + ".py", False), (os.path.join(base, "__init__.py"), True)):
            if os.path.isfile(path):
                return path, is_pkg
    return None, False


def _standin_file(name):
    base = os.path.join(_STANDINS, *name.split("."))
    if os.path.isfile(base + ".py"):
        return base + ".py", False
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py"), True
    return None, False


class _JaxToTangentia(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "jaxlib" or name.startswith("jaxlib."):
            raise ImportError(f"{name}: real JAX is disabled by the tangentia test shim")
        if not name.startswith("jax."):
            return None
        for locate in (_standin_file,
                       lambda n: _wheel_file(n) if n.startswith(_FROM_WHEEL) else (None, False)):
            file, is_pkg = locate(name)
            if file is not None:
                return importlib.util.spec_from_file_location(
                    name, file,
                    submodule_search_locations=[os.path.dirname(file)] if is_pkg else None)
        rest = name[len("jax._src"):] if name.startswith("jax._src.") else name[3:]
        target_name = "tangentia" + rest
        try:
            found = importlib.util.find_spec(target_name)
        except ImportError:
            found = None
        if found is None:
            return None  # ModuleNotFoundError naming jax.x, as JAX would
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        name = spec.name
        rest = name[len("jax._src"):] if name.startswith("jax._src.") else name[3:]
        return importlib.import_module("tangentia" + rest)

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _JaxToTangentia())
sys.modules[__name__] = tangentia

# ``from jax import export``: ``jax`` is the tangentia module, so a submodule that only
# exists as a stand-in (``_standins/jax/export.py``) must also be an attribute of it
for _entry in sorted(os.listdir(os.path.join(_STANDINS, "jax"))):
    _name = _entry[:-3] if _entry.endswith(".py") else None
    if _name and not _name.startswith("_") and not hasattr(tangentia, _name):
        setattr(tangentia, _name, importlib.import_module("jax." + _name))

# ``jax.config.parse_flags_with_absl()`` (lax_autodiff_test.py calls it on the config object;
# other files call the module function of the jax._src.config stand-in): JAX parses its absl
# flags there; the shim has none
tangentia.config.parse_flags_with_absl = lambda: None
