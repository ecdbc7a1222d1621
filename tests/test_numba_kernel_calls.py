"""Programs call the library's precompiled kernels (the own GEMM, ``gemm._gemm`` and
``_gemm_into``; numba's np.dot, ``blasdot._dot``) through their addresses, as compile units are called (``native._Kernel``):
the kernel's code is not linked into each program's module, where LLVM optimized and
compiled it again in every program (~1 s of CPU per program calling it).  The results are
the NumPy backend's; the machine-code cache keeps and loads the kernel with the program,
in a new process that never imports numba, bit for bit; a call passing arrays of other
types than the kernel was compiled for is refused while typing, never cast."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.numba_backend import gemm, objcache  # noqa: E402

import test_interrupt  # noqa: E402
from _numba_util import empty_cache  # noqa: E402
from test_numba_backend import NUMBA, check, program  # noqa: E402

needs_avx512 = pytest.mark.skipif(not gemm._has_avx512(),
                                  reason="numba's target CPU has no AVX-512F: products call BLAS")


def _step(w1: Any, w2: Any, x: Any) -> Any:
    """An MLP's SGD step: products the own kernel computes, a fused update (``_gemm_into``)."""
    g1, g2 = tg.grad(lambda w1, w2: tnp.sum(tnp.tanh(tnp.tanh(x @ w1) @ w2) ** 2), argnums=(0, 1))(w1, w2)
    return [w1 - 0.1 * g1, w2 - 0.1 * g2]


# the MLP's shapes (w1, w2, x): the own kernel's products; BLAS's (each has fewer than
# 2 * 24 columns, so no product is the own kernel's, and the program is compiled)
SHAPES = {"own": ((48, 64), (64, 56), (64, 48)), "blas": ((48, 40), (40, 10), (64, 48))}


def _data(mode: str = "own") -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(3)
    s1, s2, s3 = SHAPES[mode]
    return rng.normal(size=s1) / 7, rng.normal(size=s2) / 8, rng.normal(size=s3)


@needs_avx512
def test_programs_call_the_kernel_through_its_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")     # (auto: measured)
    empty_cache(monkeypatch, "tg-kernel-calls-")
    args = _data()
    check(_step, *args, rtol=1e-11, atol=1e-13)
    jaxpr, full = program(_step, *args)
    run = NUMBA.compile(jaxpr)
    kernels = [u for u in run.units if getattr(u, "strict", False)]
    assert {u.disp for u in kernels} == {gemm._gemm, gemm._gemm_into}, run.source
    assert all(u.ptr for u in kernels)
    # the program's own code holds none of the kernel's functions (it did when it called the
    # dispatcher: numba linked the kernel's library into the program's)
    cres = next(c for c in run.dispatcher.overloads.values() if c.entry_point is run.entry)
    ir = cres.library.get_llvm_str()
    assert "gemm" not in "".join(line for line in ir.splitlines() if line.startswith("define")), \
        [line for line in ir.splitlines() if line.startswith("define") and "gemm" in line]


_CHILD = """
import json, sys
import numpy as np
import tangentia as tg, tangentia.numpy as tnp
from tangentia.compiler.numba_backend import objcache
rng = np.random.default_rng(3)
s1, s2, s3 = json.loads(sys.argv[1])
w1, w2, x = rng.normal(size=s1) / 7, rng.normal(size=s2) / 8, rng.normal(size=s3)
def step(w1, w2, x):
    g1, g2 = tg.grad(lambda w1, w2: tnp.sum(tnp.tanh(tnp.tanh(x @ w1) @ w2) ** 2), argnums=(0, 1))(w1, w2)
    return [w1 - 0.1 * g1, w2 - 0.1 * g2]
r = tg.jit(step, backend="numba")(w1, w2, x)
print(json.dumps({"r": [np.asarray(a).tobytes().hex() for a in r], "numba": "numba" in sys.modules,
                  "stats": objcache.STATS}))
"""


def test_blas_products_call_np_dot_through_its_address(monkeypatch: pytest.MonkeyPatch) -> None:
    """BLAS products (``np.dot``) are ``blasdot._dot``, precompiled per dtype and operand
    layouts (C, or F for the transposed views of the backward pass) and called through its
    address: the program's module holds no BLAS call of its own, so numba does not type
    np.dot in each new process (~0.17 s CPU per layout pair)."""
    from tangentia.compiler.numba_backend import blasdot

    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")
    empty_cache(monkeypatch, "tg-kernel-calls-")
    args = _data("blas")
    check(_step, *args, rtol=1e-11, atol=1e-13)
    jaxpr, full = program(_step, *args)
    run = NUMBA.compile(jaxpr)
    kernels = [u for u in run.units if getattr(u, "strict", False)]
    assert {u.disp for u in kernels} == {blasdot._dot}, run.source
    # x @ w1, h @ w2 (C, C); g @ w2.T (C, F); x.T @ g (F, C): the output always C
    layouts = {tuple(t.layout for t in u.argtys) for u in kernels}
    assert layouts == {("C", "C", "C"), ("C", "F", "C"), ("F", "C", "C")}, layouts
    assert all(u.ptr for u in kernels)
    cres = next(c for c in run.dispatcher.overloads.values() if c.entry_point is run.entry)
    assert "xxgemm" not in cres.library.get_llvm_str()      # (numba's np.dot calls numba_xxgemm)


def test_np_dot_called_with_other_layouts_compiles_it_inline() -> None:
    """A call of ``blasdot._dot`` whose arrays are not of the layouts named for it (a
    strided view) compiles numba's np.dot for them in place: the right product, no cast."""
    import numba
    from numba import types as nbt
    from tangentia.compiler.numba_backend import blasdot, native

    mat = nbt.Array(nbt.float64, 2, "C")
    kernel = native._Kernel(blasdot._dot, (mat, mat, mat))
    kernel.compile()
    call = kernel.caller
    ptr = np.array([kernel.ptr], np.int64)

    @numba.njit
    def strided(p: Any, a: Any, b: Any, c: Any, d: Any) -> Any:
        call(p[0], (a[:, ::2], b, c))
        call(p[0], (b[:2, :].T, a[:3, :2].T, d))     # (F, F): BLAS's transpose flags
        return c, d

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 8)), rng.normal(size=(4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (numba: np.dot is faster on contiguous arrays)
        c, d = strided(ptr, a, b, np.empty((5, 3)), np.empty((3, 3)))
    np.testing.assert_allclose(c, a[:, ::2] @ b, rtol=1e-13)
    np.testing.assert_allclose(d, b[:2, :].T @ a[:3, :2].T, rtol=1e-13)


@pytest.mark.parametrize("mode", ["own", "blas"])
def test_a_new_process_loads_the_kernel_without_numba(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                      mode: str) -> None:
    """The machine-code cache keeps the kernels a program calls as it keeps its compile
    units: the next process loads program and kernels with llvmlite alone, same bits
    (the own GEMM's, or numba's np.dot's: ``blasdot._dot``)."""
    if mode == "own" and not gemm._has_avx512():
        pytest.skip("numba's target CPU has no AVX-512F: products call BLAS")
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TANGENTIA_NUMBA_FAST_LOAD", "1")     # (the suite turns it off: conftest)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", mode)
    # (the child runs a copy of the library, whose key this process computes: edits to the
    # working tree meanwhile do not make it miss)
    root = test_interrupt.library_snapshot(tmp_path / "src")
    w1, w2, x = _data(mode)
    want = tg.jit(_step, backend="numba")(w1, w2, x)
    assert objcache.STATS["saved"] >= 1 and os.listdir(tmp_path / "numba" / "fast")
    env = test_interrupt.child_env(dict(os.environ, TANGENTIA_JIT_TIERED="0"), root)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_CHILD), json.dumps(SHAPES[mode])], env=env, capture_output=True,
                         text=True, timeout=120, cwd=root)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["numba"] is False and got["stats"]["loaded"] == 1, got["stats"]
    assert [bytes.fromhex(h) for h in got["r"]] == [np.asarray(a).tobytes() for a in want]


def test_a_kernel_call_with_other_array_types_is_refused() -> None:
    """Arrays reach a kernel exactly as typed for it: a strided view where it was compiled
    for C-contiguous matrices is a typing error, not a cast (a cast would read the view's
    memory as contiguous)."""
    import numba
    from numba.core.errors import TypingError
    from tangentia.compiler.numba_backend import native
    from tangentia.compiler.numba_backend.rules import _gemm_types

    kernel = native._Kernel(gemm._gemm, _gemm_types(np.dtype(np.float64)))
    kernel.compile()
    call = kernel.caller
    ptr = np.array([kernel.ptr], np.int64)

    @numba.njit
    def contiguous(p: Any, a: Any, b: Any, c: Any) -> Any:
        call(p[0], (a, np.bool_(False), b, np.bool_(False), c))
        return c

    @numba.njit
    def strided(p: Any, a: Any, b: Any, c: Any) -> Any:
        call(p[0], (a[:, ::2], np.bool_(False), b, np.bool_(False), c))
        return c

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 4)), rng.normal(size=(4, 3))
    np.testing.assert_allclose(contiguous(ptr, a, b, np.empty((5, 3))), a @ b, rtol=1e-13)
    with pytest.raises((TypingError, TypeError), match="kernel tangentia.compiler.numba_backend.gemm._gemm"):
        strided(ptr, np.ones((5, 8)), b, np.empty((5, 3)))
