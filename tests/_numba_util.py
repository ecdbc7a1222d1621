"""What the numba backend's test modules share: a function's program with its full argument
list, that program compiled by numba itself, never handed back to the NumPy backend, an
empty compile cache to compile it in, and a central finite-difference gradient.

Written once here, where about eight test modules had each written it again with small
variations (which message counts as a fallback, whether the arguments come back)."""
from __future__ import annotations

import atexit
import shutil
import tempfile
import warnings
from typing import Any, Callable

import numpy as np

import tangentia as tg
from tangentia.interpreters.partial_eval import convert_constvars_to_invars

# The words of the warning the numba backend gives where it hands an equation or a whole
# program to the NumPy backend ("numba backend: cannot compile ...") or runs it in
# object mode.
FALLBACK = "numba backend"


def empty_cache(mp: Any, prefix: str) -> str:
    """A new, empty ``TANGENTIA_CACHE_DIR`` (set through the monkeypatch ``mp``; removed at
    exit): code generation runs there, where a test's spies and counters see it (a program
    another test compiled first, in a shared cache, would be loaded instead)."""
    cache = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, cache, True)
    mp.setenv("TANGENTIA_CACHE_DIR", cache)
    return cache


def objmode_spy(mp: Any, prefix: str) -> list[str]:
    """The names of the primitives the numba generator runs in object mode from now on (a
    spy on ``codegen._Gen.objmode_call``, set through the monkeypatch ``mp``), in an empty
    cache (``empty_cache``: the code is generated, not loaded)."""
    from tangentia.compiler.numba_backend import codegen
    empty_cache(mp, prefix)
    calls: list[str] = []
    real = codegen._Gen.objmode_call

    def spy(self: Any, eqn: Any, ins: Any) -> Any:
        calls.append(eqn.prim.name)
        return real(self, eqn, ins)
    mp.setattr(codegen._Gen, "objmode_call", spy)
    return calls


def program(f: Callable[..., Any], *args: Any) -> tuple[Any, list[Any]]:
    """``(program without constvars, full argument list)`` of ``f`` at ``args``: the
    constants first, as the backends take them."""
    closed = tg.make_jaxpr(f)(*args)
    return convert_constvars_to_invars(closed.jaxpr), list(closed.consts) + list(args)


def compile_numba(jaxpr: Any, backend: Any = None, refuse: str = FALLBACK) -> Any:
    """``jaxpr`` compiled by the numba backend (``backend``, else a new ``NumbaBackend``),
    failing the test if it warned that it fell back (a warning whose message contains
    ``refuse``): the test then checks numba's code, not the NumPy backend's."""
    if backend is None:
        from tangentia.compiler.numba_backend import NumbaBackend
        backend = NumbaBackend()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = backend.compile(jaxpr)
    fallbacks = [str(w.message) for w in caught if refuse in str(w.message)]
    assert not fallbacks, fallbacks   # compiled by numba, not handed to the NumPy backend
    return fn


def fd_grad(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """The central finite-difference gradient of the scalar function ``f`` at ``x``."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g
