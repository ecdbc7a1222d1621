"""The numba backend's lean pipeline and its cache of numba's own functions
(``numba_backend/native.py``, issue 23).

Generated programs and units compile without numba's SSA passes; a check after typing
(``_SameTypes``) sends any function whose names the lean pipeline would type otherwise
than the default one back to the default pipeline.  numba's ``@overload``
implementations (``np.empty``, ...) are cached on disk while our programs compile.
Each test compiles a few tiny functions (well under a second each).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.numba_backend import native  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def _lean_dispatcher(f: Any) -> Any:
    opts = native._lean_options(dict(native._NJIT_OPTIONS))
    assert "pipeline_class" in opts
    return numba.njit(**opts)(f)


def _retyped(x: float) -> Any:
    a = 7
    b = a // 2            # an int under the default pipeline (a float if ``a`` were widened)
    a = x * 0.5           # type: ignore[assignment]
    return b, a


def _carried(x: float) -> float:
    s = 0.0
    for i in range(5):
        s = s * x + i
    return s


def test_a_name_of_two_types_compiles_under_the_default_pipeline() -> None:
    before = dict(native.LEAN_STATS)
    disp = _lean_dispatcher(_retyped)
    native._compile_lean(disp, (numba.types.float64,))
    assert native.LEAN_STATS["default"] == before["default"] + 1
    b, a = disp(3.0)
    assert type(b) is int and b == 3 and a == 1.5      # as Python computes it


def test_loop_carries_stay_on_the_lean_pipeline() -> None:
    before = dict(native.LEAN_STATS)
    disp = _lean_dispatcher(_carried)
    native._compile_lean(disp, (numba.types.float64,))
    assert native.LEAN_STATS["lean"] == before["lean"] + 1
    assert native.LEAN_STATS["default"] == before["default"]
    assert disp(1.5) == _carried(1.5)


def test_lean_off_uses_numbas_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TANGENTIA_NUMBA_LEAN", "0")
    assert "pipeline_class" not in native._lean_options(dict(native._NJIT_OPTIONS))


def test_programs_with_loops_agree_with_the_numpy_backend(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Any) -> None:
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))

    def f(x: Any, n: Any) -> Any:
        def body(i: Any, c: Any) -> Any:
            y, k = c
            return tnp.sin(y) * 1.5 + x[i % 3] * k, k + 1
        y, k = lax.fori_loop(0, 7, body, (x, n))
        return tnp.sum(y * y) + k

    x = np.array([0.3, -1.2, 2.0])
    n = np.int32(2)
    before = dict(native.LEAN_STATS)
    got = tg.jit(tg.grad(f), backend="numba")(x, n)
    want = tg.jit(tg.grad(f), backend="numpy")(x, n)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    assert native.LEAN_STATS["lean"] > before["lean"]
    assert native.LEAN_STATS["default"] == before["default"]


_OVERLOAD_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import numba.core.event as ev
    import tangentia as tg
    from tangentia.compiler.numba_backend import native
    compiled = []
    class Listener(ev.Listener):
        def on_start(self, e):
            d = e.data
            if d["name"].startswith("nopython_type_inference") and d["qualname"].startswith("ol_np_empty"):
                compiled.append(d["args"])
        def on_end(self, e):
            pass
    ev.register("numba:run_pass", Listener())
    scale = float(sys.argv[1])
    x = np.linspace(0.0, 1.0, 5)
    got = tg.jit(lambda x: x * scale + 1.0, backend="numba")(x)
    np.testing.assert_allclose(got, x * scale + 1.0, rtol=1e-15)
    # (generated code allocates with alloc._empty, no overload: a function of ours that
    # calls np.empty, compiled as the backend compiles its programs)
    import numba
    with native._fast_typing():
        f = numba.njit(lambda n: np.empty((n, 2)).shape[0] * scale)
        assert f(3) == 3 * scale
    print(json.dumps({"compiled": compiled, "cached": native.OVERLOAD_STATS["cached"]}))
""")


def _overload_child(cache: Any, scale: float, **env: str) -> Any:
    out = subprocess.run([sys.executable, "-c", _OVERLOAD_CHILD, str(scale)], capture_output=True,
                         text=True, timeout=240,
                         env=dict(os.environ, TANGENTIA_CACHE_DIR=str(cache), TANGENTIA_JIT_TIERED="0",
                                  NUMBA_CACHE_DIR=str(cache / "numba_own"), **env))
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_numbas_own_functions_are_cached_across_processes(tmp_path: Any) -> None:
    first = _overload_child(tmp_path, 2.0)
    assert first["compiled"] and first["cached"] > 0     # np.empty's implementation, compiled once
    files = [f for _, _, fs in os.walk(tmp_path / "numba" / "overloads") for f in fs]
    assert any("ol_np_empty" in f and f.endswith(".nbc") for f in files), files
    # another program in a new process: np.empty's implementation comes from the cache
    second = _overload_child(tmp_path, 3.0)
    assert [a for a in second["compiled"] if a in first["compiled"]] == []


# Large generated functions (``native.LARGE_IR``): LLVM at -O1, the same numbers.

def _horner_sums(x: Any) -> Any:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        s, t = 0.0, x[i]
        for k in range(7):
            s = s * t + 1.0 / (k + 1.5) - math.sqrt(abs(t) + k) * 0.25
        out[i] = s / (1.0 + t * t) + math.sin(s)
    return out


def _compiled_with_large_ir(monkeypatch: pytest.MonkeyPatch, limit: str) -> Any:
    monkeypatch.setenv("TANGENTIA_NUMBA_LARGE_IR", limit)
    disp = _lean_dispatcher(_horner_sums)
    native._compile_lean(disp, (numba.types.float64[::1],))
    return disp


def test_large_functions_compile_at_O1_to_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.linspace(-3.0, 3.0, 37)
    before = native.LARGE_STATS["large"]
    small = _compiled_with_large_ir(monkeypatch, "0")           # off: numba's -O3
    assert native.LARGE_STATS["large"] == before
    large = _compiled_with_large_ir(monkeypatch, "1")           # every function is large
    assert native.LARGE_STATS["large"] == before + 1
    lib = large.overloads[(numba.types.float64[::1],)].library
    assert type(lib).__name__ == "SizedLibrary" and lib._ir_lines > 1
    assert lib.serialize_using_object_code()[2]                 # (what numba's disk cache saves)
    a, b = small(x), large(x)
    assert a.tobytes() == b.tobytes()
    np.testing.assert_allclose(b, _horner_sums(x), rtol=1e-14)    # (in Python)


def test_large_programs_are_cached_and_agree_with_numbas_pipeline(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Any) -> None:
    def f(x: Any) -> Any:
        def body(c: Any, xi: Any) -> Any:
            c = tnp.tanh(c * 0.9 + xi) / (1.0 + c * c)
            return c, tnp.sum(c)
        c, ys = lax.scan(body, x, tnp.stack([x * 0.5, x - 1.0, x * x]))
        return tnp.sum(c * c) + tnp.sum(ys)

    x = np.array([0.3, -1.2, 2.0])
    got = {}
    # (numba writes its cache beside the generated module, under TANGENTIA_CACHE_DIR, unless
    # NUMBA_CACHE_DIR is set, as the README's cold-suite recipe does: then under that folder)
    import numba.core.config
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", "")
    # (two programs, so that neither is the other's memo: the second reshapes its input)
    for limit, arg in (("0", x), ("1", x.reshape(1, 3))):
        monkeypatch.setenv("TANGENTIA_NUMBA_LARGE_IR", limit)
        monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path / limit))
        before = native.LARGE_STATS["large"]
        got[limit] = np.asarray(tg.jit(tg.grad(lambda a: f(a.reshape(3))), backend="numba")(arg))
        assert (native.LARGE_STATS["large"] > before) == (limit == "1")
    assert got["0"].tobytes() == got["1"].tobytes()
    files = [n for _, _, fs in os.walk(tmp_path / "1" / "numba") for n in fs]
    assert any(n.endswith(".nbc") for n in files), files        # written to numba's disk cache
    np.testing.assert_allclose(got["1"].ravel(), tg.jit(tg.grad(f), backend="numpy")(x), rtol=1e-13)


# ``alloc._empty``: numba's ``np.empty`` without its overload's compile.

def test_empty_allocates_as_numbas_np_empty() -> None:
    from tangentia.compiler.numba_backend import alloc
    _empty: Any = alloc._empty      # (an intrinsic: its typing context is numba's argument)

    @numba.njit
    def both(n: Any) -> Any:
        a = _empty((2, n), np.float64)
        b = _empty(n, np.int64)
        c = _empty((), np.bool_)
        d = _empty((n, 2, 1), np.complex128)
        e = _empty((0, n), np.float32)
        a[:] = 1.5
        b[:] = 7
        c[()] = True
        d[:] = 2j
        return a, b, c, d, e

    got = both(3)
    for g, shape, dtype in zip(got, [(2, 3), (3,), (), (3, 2, 1), (0, 3)],
                               [np.float64, np.int64, np.bool_, np.complex128, np.float32]):
        want = np.empty(shape, dtype)
        assert (g.shape, g.dtype, g.flags.c_contiguous, g.flags.writeable) \
            == (want.shape, want.dtype, True, True)
        assert g.strides == (want.strides if g.size else (12, 4))    # (numba's, where NumPy's are 0)
    assert got[0].tolist() == [[1.5] * 3] * 2 and got[1].tolist() == [7] * 3 and got[2][()]
    assert got[3].tolist() == [[[2j]] * 2] * 3
    # numba's np.empty's errors, with its messages
    with pytest.raises(ValueError, match="^negative dimensions not allowed$"):
        both(-1)
    with pytest.raises(ValueError, match="array is too big"):
        numba.njit(lambda n: _empty((n, n, n), np.float64))(1 << 40)


# ``_quiet_gc``: the collector kept off the objects that existed before a compile.

def test_compiles_freeze_old_objects_and_restore_the_collector() -> None:
    import gc

    from tangentia.compiler.numba_backend import GC_THRESHOLD, _quiet_gc
    if not gc.isenabled():
        pytest.skip("the collector is off in this process (nothing of ours to check)")
    suite_frozen = gc.get_freeze_count() > 0       # (conftest freezes what the suite holds)
    gc.unfreeze()
    try:
        _check_quiet_gc(gc, GC_THRESHOLD, _quiet_gc)
    finally:
        if suite_frozen:
            gc.freeze()


def _check_quiet_gc(gc: Any, GC_THRESHOLD: int, _quiet_gc: Any) -> None:
    from tangentia.compiler.numba_backend import _refreeze
    before = gc.get_threshold()
    with _quiet_gc():
        frozen = gc.get_freeze_count()
        assert frozen > 0 and gc.get_threshold()[0] == GC_THRESHOLD
        garbage: list[Any] = []
        garbage.append(garbage)             # a cycle made during the compile is collected then
        del garbage
        assert gc.collect(0) >= 1
        with _quiet_gc():                   # a nested compile shares the period
            gc.set_threshold(1234, *before[1:])         # the process changes it meanwhile
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == (1234,) + before[1:]
    gc.set_threshold(*before)
    with _quiet_gc():
        pass
    assert gc.get_threshold() == before
    # a process that froze objects itself keeps them frozen
    gc.freeze()
    try:
        n = gc.get_freeze_count()
        with _quiet_gc():
            _refreeze()
        assert gc.get_freeze_count() == n
    finally:
        gc.unfreeze()
