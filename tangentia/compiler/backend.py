"""The backend interface of ``jit``.

A *backend* compiles a closed program (a typed ``Jaxpr`` without constvars)
into a Python callable ``fn(*arrays) -> list of arrays``.  Each backend owns
its lowering table, keyed by primitive; nothing backend-specific lives on
``Primitive``.  Backends register themselves here by name; ``jit`` and the
eager implementations of call-like primitives (``cond``, ``while``,
``scan``, ``jit``, ``checkpoint``, custom-rule calls, ...) ask for one.

Which backend runs: an explicit ``jit(f, backend=...)``, else
``config.update("jit_backend", ...)``, else the ``TANGENTIA_JIT_BACKEND``
environment variable, else ``"numba"`` (``"numpy"`` when numba is not
installed).

This module sits at the core layer: it imports only ``core``.
"""
from __future__ import annotations

import os
import threading

from .. import core
from ..core import Eqn, Jaxpr, Var

DEFAULT_BACKEND = "numba"
_ENV_VAR = "TANGENTIA_JIT_BACKEND"


class Backend:
    """A compiler from programs to callables.

    Subclasses set ``name`` and implement ``compile`` and ``source``.
    """

    name = "?"

    def compile(self, jaxpr):
        """``fn(*args) -> list`` running ``jaxpr`` (which has no constvars)."""
        raise NotImplementedError

    def source(self, jaxpr):
        """The generated code for ``jaxpr``, as text (what ``jit(f).lower(...)`` shows)."""
        raise NotImplementedError


_BACKENDS = {}
# "jit_backend": set by config.update("jit_backend", ...); "resolved": the
# default's name, computed once (the environment variable is read then).
_override = {"jit_backend": None, "resolved": None}


def register_backend(backend):
    _BACKENDS[backend.name] = backend
    _override["resolved"] = None


def available_backends():
    return sorted(_BACKENDS)


def set_default_backend(name):
    """``config.update("jit_backend", name)``; ``None`` restores the default."""
    if name is not None:
        _check_name(name, "config.update('jit_backend', ...)")
    _override["jit_backend"] = name
    _override["resolved"] = None


def default_backend_name():
    """The name of the backend ``jit`` uses when none is named."""
    name = _override["resolved"]
    if name is None:
        name = _override["jit_backend"] or os.environ.get(_ENV_VAR) or DEFAULT_BACKEND
        if name not in _BACKENDS:
            if name == DEFAULT_BACKEND and "numpy" in _BACKENDS:
                name = "numpy"  # numba is not installed: the reference backend runs
            else:
                _check_name(name, f"the {_ENV_VAR} environment variable")
        _override["resolved"] = name
    return name


def _check_name(name, where):
    if name not in _BACKENDS:
        raise ValueError(f"{where}: unknown jit backend {name!r}; the backends are "
                         f"{', '.join(repr(b) for b in available_backends())}")


def get_backend(name=None, where="jit"):
    """The backend called ``name`` (``None``: the default one)."""
    if name is None:
        name = default_backend_name()
    else:
        _check_name(name, f"{where}(backend=...)")
    return _BACKENDS[name]


def compile_jaxpr(jaxpr, backend=None):
    """Compile ``jaxpr`` with ``backend`` (a name, or None for the default)."""
    return get_backend(backend).compile(jaxpr)


# ---------------------------------------------------------------------------
# Eager evaluation of call-like primitives: the equation alone is compiled by
# the default backend (so eager loops run compiled bodies, as JAX's do).

_EQN_CACHE = {}
_EQN_CACHE_MAX = 4096  # distinct (primitive, types, params); cleared when full
_EQN_LOCK = threading.Lock()


def _params_key(params):
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def run_equation(prim, args, params):
    """Evaluate ``prim[params](*args)`` by compiling the single equation."""
    avals = tuple(core.get_aval(a).strip_weak() for a in args)
    pkey = _params_key(params)
    backend = get_backend()
    key = None if pkey is None else (backend.name, prim, avals, pkey)
    fn = _EQN_CACHE.get(key) if key is not None else None
    if fn is None:
        invars = [Var(a) for a in avals]
        out = prim.abstract_eval(*avals, **params)
        out_avals = list(out) if prim.multiple_results else [out]
        outvars = [Var(a.strip_weak()) for a in out_avals]
        jaxpr = Jaxpr([], invars, [Eqn(prim, list(invars), outvars, params)], outvars)
        fn = backend.compile(jaxpr)
        if key is not None:
            with _EQN_LOCK:
                if len(_EQN_CACHE) >= _EQN_CACHE_MAX:
                    _EQN_CACHE.clear()
                fn = _EQN_CACHE.setdefault(key, fn)
    outs = fn(*args)
    return outs if prim.multiple_results else outs[0]
