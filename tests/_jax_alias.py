"""A ``jax`` -> ``tangentia`` import alias, for the tests that run libraries written for
JAX (optax, flax) on tangentia, and for the comparison harness of
``tests/external/libraries`` (its ``sitecustomize.py`` installs ``JaxAlias``)."""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Iterator
from typing import Any


class JaxAlias:
    """A meta path finder importing ``jax.x`` as ``tangentia.x`` (a name tangentia
    lacks is not found: ``ModuleNotFoundError``, which libraries' optional imports catch)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name == "jax" or name.startswith("jax."):
            try:
                if importlib.util.find_spec("tangentia" + name[3:]) is None:
                    return None
            except ModuleNotFoundError:
                return None
            return importlib.util.spec_from_loader(name, self)   # type: ignore[arg-type]
        return None

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module("tangentia" + spec.name[3:])

    def exec_module(self, module: Any) -> None:
        pass


@contextlib.contextmanager
def jax_is_tangentia(*packages: str) -> Iterator[None]:
    """Within: ``import jax`` gives tangentia, and ``packages`` (libraries written for
    JAX) are imported anew on it; after: the modules imported before are back (real JAX
    among them)."""
    mods = ("jax", *packages)
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in mods}
    for k in saved:
        del sys.modules[k]
    alias = JaxAlias()
    sys.meta_path.insert(0, alias)
    try:
        yield
    finally:
        sys.meta_path.remove(alias)
        for k in [k for k in sys.modules if k.split(".")[0] in mods]:
            del sys.modules[k]
        sys.modules.update(saved)
