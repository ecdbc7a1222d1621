"""The numba backend's generated kernels (``numba_backend/kernels.py``) are named by their
code, so a program loaded from numba's disk cache calls the kernel it was compiled with.

numba names a compiled function's symbol by its module, its name and a counter of the
process; a kernel exec'd from generated source is ``<dynamic>.cumulative``.  The kernel of
``cumsum`` of ``f64[32]`` compiled in one process and that of ``f64[48]`` compiled first in a
second process had one symbol, and the second process's program for ``f64[32]``, loaded from
numba's cache, linked to the ``f64[48]`` kernel: ``jit(cumsum)`` returned 48 elements (the 32
values and 16 read past the input), on the tree of 90f6d6d too.  Kernels made as closures
inside a factory (``det``'s and ``slogdet``'s cores) shared a qualified name the same way.
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.numba_backend import kernels  # noqa: E402

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# one process: the programs of the sizes given, each checked against NumPy
_SCRIPT = """
import sys
import numpy as np
import tangentia as tg, tangentia.numpy as tnp
f = tg.jit(lambda x: [tnp.cumsum(x), tnp.sort(x[::-1]), x[::-1][1:] * 2.0], backend="numba")
for n in map(int, sys.argv[1:]):
    x = np.linspace(0.0, 1.0, n) ** 2
    got = [np.asarray(v) for v in f(x)]
    want = [np.cumsum(x), np.sort(x), x[::-1][1:] * 2.0]
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(g, w), (n, g.shape, w.shape)
print("ok")
"""


# one process: det and/or slogdet of a matrix of det 18 (their kernels' cores are closures of
# one factory, kernels._det_core)
_DET_SCRIPT = """
import sys
import numpy as np
import tangentia as tg, tangentia.numpy as tnp
a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
fs = {"det": lambda a: [tnp.linalg.det(a)], "slogdet": lambda a: list(tnp.linalg.slogdet(a))}
want = {"det": [18.0], "slogdet": [1.0, np.log(18.0)]}
for name in sys.argv[1:]:
    got = [float(v) for v in tg.jit(fs[name], backend="numba")(a)]
    assert np.allclose(got, want[name], rtol=1e-14), (name, got)
print("ok")
"""


def _run(cache: str, *args: Any, script: str = _SCRIPT) -> None:
    env = dict(os.environ, TANGENTIA_CACHE_DIR=cache, TANGENTIA_JIT_TIERED="0",
               TANGENTIA_COMPILE_PROGRESS="0", PYTHONPATH=_ROOT)
    r = subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr[-3000:]


def test_a_cached_program_calls_its_own_kernel(tmp_path: Any) -> None:
    """Process 1 compiles the program of f64[32]; process 2 compiles f64[48] first, then
    loads f64[32]'s from numba's cache (before the fix: a (48,) cumsum)."""
    cache = str(tmp_path)
    _run(cache, 32)
    _run(cache, 48, 32)


def test_a_cached_program_calls_its_own_closure_kernel(tmp_path: Any) -> None:
    """The same with kernels made as closures inside a factory (kernels._njit): process 2
    compiles slogdet, then loads det's program (before the fix: det 1.0, slogdet's sign)."""
    cache = str(tmp_path)
    _run(cache, "det", script=_DET_SCRIPT)
    _run(cache, "slogdet", "det", script=_DET_SCRIPT)


def _cumsum_kernel(n: int) -> Any:
    eqn = tg.make_jaxpr(tnp.cumsum)(np.zeros(n)).jaxpr.eqns[0]
    return kernels.kernel_for(eqn)


def test_kernels_are_named_by_their_code() -> None:
    """Kernels of different code have different names in every process (not a counter);
    the kernel of one signature is built once."""
    k32, k48 = _cumsum_kernel(32), _cumsum_kernel(48)
    assert k32 is _cumsum_kernel(32)
    assert k32.py_func.__name__ != k48.py_func.__name__
    assert k32.py_func.__name__ == "cumulative_" + kernels._code_key(k32.tangentia_source, {})
