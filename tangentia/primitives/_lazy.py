"""SciPy imported where it is first used, not by ``import tangentia``.

``import scipy.special`` alone costs ~0.2 s of CPU (it pulls in ``numpy.f2py``,
``numpy.ma``, ``numpy.testing``, SciPy's array-API layer), half of a bare
``import tangentia``; most programs never call SciPy.  A module that calls SciPy
in its functions binds the name it would have imported to a ``LazyModule``:

    _sla = LazyModule("scipy.linalg", globals(), "_sla")

The first attribute read imports the module and rebinds the global to it, so
every later read is the module's own (no cost per call once it is loaded).
Importing is thread-safe (the import lock), and rebinding a global is atomic.
"""
from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for the module ``name`` in the namespace ``namespace`` (a module's
    ``globals()``) under the name ``var``, until an attribute is read."""

    __slots__ = ("_name", "_namespace", "_var")

    def __init__(self, name: str, namespace: dict, var: str) -> None:
        self._name, self._namespace, self._var = name, namespace, var

    def load(self) -> Any:
        """The module, imported now (the first time) and bound in its namespace."""
        module = importlib.import_module(self._name)
        if self._namespace.get(self._var) is self:
            self._namespace[self._var] = module
        return module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.load(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        # (the module's attribute, as for a module: ``monkeypatch.setattr(P._sla, ...)``)
        if attr in LazyModule.__slots__:
            object.__setattr__(self, attr, value)
        else:
            setattr(self.load(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self.load(), attr)

    def __repr__(self) -> str:
        return f"<{self._name}, imported at its first use>"
