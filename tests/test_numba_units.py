"""Compile units of the numba backend (``numba_backend/native.py``, issue 23).

A nested program (loop body, branch, called function) large enough outside its own
units is generated into a module of its own, named by the hash of its source, and
cached by numba on its own; programs call it through its address.  So a second
program with the same body (another time grid, an edited loss) compiles only what
changed.  The threshold is lowered here so that tiny programs have units (each
numba compile stays well under a second).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import weakref
from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import NumbaBackend  # noqa: E402
from tangentia.compiler.numba_backend import native  # noqa: E402
from _numba_util import program  # noqa: E402  (shared by the numba tests)

pytestmark = pytest.mark.timeout(300)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def small_units(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    """Units from a cost of 20 on, in a fresh cache directory, none yet in this process."""
    monkeypatch.setattr(native, "UNIT_MIN_COST", 20)
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TANGENTIA_NUMBA_UNITS", raising=False)
    return tmp_path


def step(c: Any) -> Any:
    """A loop body of a few dozen scalar operations (the shared unit)."""
    i, y = c
    for _ in range(4):
        y = tnp.sin(y) * 1.25 + tnp.cos(y[::-1]) * 0.5 - y * y * 0.125
    return i + 1, y


def solve(y: Any) -> Any:
    return lax.while_loop(lambda c: c[0] < 6, step, (0, y))[1]


def integrate(ys: Any) -> Any:
    """A scan over the rows of ``ys`` (any number: the time grid), each solved."""
    def body(acc: Any, y: Any) -> Any:
        z = solve(y + acc)
        return acc + 0.25 * z, tnp.sum(z)
    return lax.scan(body, tnp.zeros(3), ys)


def unit_files(cache: Any) -> list[str]:
    return sorted(n for n in os.listdir(os.path.join(cache, "numba"))
                  if n.startswith("tangentia_numba_unit_") and n.endswith(".py"))


def run_both(f: Callable[..., Any], *args: Any) -> tuple[list[Any], list[Any], Any]:
    """(numba results, NumPy backend results, compiled function) of ``f`` at ``args``."""
    jaxpr, full = program(f, *args)
    fn = NumbaBackend().compile(jaxpr)
    return fn(*full), get_backend("numpy").compile(jaxpr)(*full), fn


def test_a_second_program_reuses_the_loop_body(small_units: Any) -> None:
    y = np.array([0.1, -0.4, 0.7])
    before = dict(native.UNIT_STATS)
    got1, want1, fn1 = run_both(lambda y: solve(y) * 2.0, y)
    assert native.UNIT_STATS["compiled"] == before["compiled"] + 1
    assert len(fn1.units) == 1 and "_up[0]" in fn1.source
    files = unit_files(small_units)
    assert len(files) == 1
    # another program (an edited line) with the same loop: the body is not compiled again
    got2, want2, fn2 = run_both(lambda y: tnp.sum(solve(y)) + 1.0, y)
    assert native.UNIT_STATS["compiled"] == before["compiled"] + 1
    assert native.UNIT_STATS["reused"] > before["reused"]
    assert fn2.units[0] is fn1.units[0]
    assert unit_files(small_units) == files
    for got, want in ((got1, want1), (got2, want2)):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-14)
    # and the numbers are a Python loop's
    i, z = 0, y
    while i < 6:
        i, z = step((i, z))
    np.testing.assert_allclose(got1[0], np.asarray(z) * 2.0, rtol=1e-13)


def test_a_longer_time_grid_compiles_only_the_outer_program(small_units: Any) -> None:
    rng = np.random.default_rng(0)
    ys5, ys8 = rng.standard_normal((5, 3)) * 0.3, rng.standard_normal((8, 3)) * 0.3
    got5, want5, fn5 = run_both(integrate, ys5)
    compiled = native.UNIT_STATS["compiled"]
    files = unit_files(small_units)
    assert files, "no unit was made"
    got8, want8, fn8 = run_both(integrate, ys8)
    assert native.UNIT_STATS["compiled"] == compiled      # the scan's body is shared
    assert unit_files(small_units) == files
    assert fn8.source.split("# ---- unit")[0] != fn5.source.split("# ---- unit")[0]
    for got, want in ((got5, want5), (got8, want8)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def test_units_give_the_same_bits_as_one_function(small_units: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    ys = rng.standard_normal((4, 3)) * 0.3
    f = lambda ys: tnp.sum(integrate(ys)[1] ** 2) + integrate(ys * 0.5)[0]  # noqa: E731
    with_units, want, fn = run_both(f, ys)
    assert fn.units
    monkeypatch.setenv("TANGENTIA_NUMBA_UNITS", "0")
    jaxpr, full = program(f, ys)
    source = NumbaBackend().source(jaxpr)
    assert "unit" not in source
    without = NumbaBackend().compile(jaxpr)(*full)
    np.testing.assert_array_equal(with_units[0], without[0])
    np.testing.assert_allclose(with_units[0], want[0], rtol=1e-12, atol=1e-13)


_CHILD = textwrap.dedent("""
    import sys, numpy as np
    import tangentia as tg, tangentia.numpy as tnp
    from tangentia import lax
    from tangentia.compiler.numba_backend import native
    native.UNIT_MIN_COST = 20
    tg.config.update("jit_tiered", False)
    def step(c):
        i, y = c
        for _ in range(4):
            y = tnp.sin(y) * 1.25 + tnp.cos(y[::-1]) * 0.5 - y * y * 0.125
        return i + 1, y
    k = float(sys.argv[1])
    f = tg.jit(lambda y: lax.while_loop(lambda c: c[0] < 6, step, (0, y))[1] * k, backend="numba")
    r = f(np.array([0.1, -0.4, 0.7]))
    print(repr([float(v) for v in r]), native.UNIT_STATS["compiled"], native.UNIT_STATS["loaded"])
""")


def _child(env: dict[str, str], k: float) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _CHILD, repr(k)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(p: subprocess.Popen[str]) -> tuple[list[float], int, int]:
    out, err = p.communicate(timeout=240)
    assert p.returncode == 0, err[-800:]
    values, compiled, loaded = out.strip().rsplit(" ", 2)
    return eval(values), int(compiled), int(loaded)


def _expected(k: float) -> np.ndarray:
    i, y = 0, np.array([0.1, -0.4, 0.7])
    while i < 6:
        i, y = step((i, y))
    return np.asarray(y) * k


def test_processes_share_units_and_a_damaged_unit_is_compiled_again(tmp_path: Any) -> None:
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(tmp_path), TANGENTIA_COMPILE_PROGRESS="0")
    env.pop("TANGENTIA_NUMBA_UNITS", None)
    # numba's index and data next to the unit's source (damaged below), not in a
    # NUMBA_CACHE_DIR of the run (a cold-cache measurement sets one)
    env.pop("NUMBA_CACHE_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    # two processes compiling the same unit at once (different programs around it)
    first = [_finish(p) for p in [_child(env, 2.0), _child(env, 3.0)]]
    for (values, compiled, loaded), k in zip(first, (2.0, 3.0)):
        np.testing.assert_allclose(values, _expected(k), rtol=1e-13)
        assert compiled + loaded == 1
    files = unit_files(tmp_path)
    assert len(files) == 1
    numba_dir = tmp_path / "numba"
    assert not [n for n in os.listdir(numba_dir) if n.endswith(".tmp")]
    # damaged: the source cut short, numba's index and data overwritten
    name = files[0][:-3]
    with open(numba_dir / files[0], "r+") as f:
        f.truncate(40)
    cached = [n for n in os.listdir(numba_dir / "__pycache__") if n.startswith(name + ".")]
    assert any(n.endswith(".nbi") for n in cached) and any(n.endswith(".nbc") for n in cached)
    for n in cached:
        with open(numba_dir / "__pycache__" / n, "wb") as f:
            f.write(b"\x80\x04garbage")
    values, compiled, loaded = _finish(_child(env, 7.0))
    np.testing.assert_allclose(values, _expected(7.0), rtol=1e-13)
    assert (compiled, loaded) == (1, 0)
    # the unit written again is whole: a new program around it, in a new process, loads it
    values, compiled, loaded = _finish(_child(env, 11.0))
    np.testing.assert_allclose(values, _expected(11.0), rtol=1e-13)
    assert (compiled, loaded) == (0, 1)


def test_a_lowered_threshold_is_never_served_what_another_decided(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    # The thresholds are read once per compile into the plan's settings (``plan.Settings``),
    # which key the outlining pass's decisions and the compiled code: the same program
    # compiled again under a lowered threshold gets units, not the code compiled before.
    from tangentia.compiler.numba_backend import plan
    from tangentia.compiler.numba_backend.rules import FUSIBLE, ROWS
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TANGENTIA_NUMBA_UNITS", raising=False)
    y = np.array([0.1, -0.4, 0.7])
    jaxpr, full = program(lambda y: solve(y) * 2.0, y)
    backend = NumbaBackend()
    fn = backend.compile(jaxpr)
    assert not fn.units and backend.compiled(jaxpr) is fn
    body = next(e for e in jaxpr.eqns if e.params.get("body_jaxpr") is not None).params["body_jaxpr"]
    assert plan.program_plan(jaxpr, native._settings(), ROWS, FUSIBLE).calls[body].kind == "inline"
    default = native.UNIT_MIN_COST
    monkeypatch.setattr(native, "UNIT_MIN_COST", 20)
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    assert plan.program_plan(jaxpr, native._settings(), ROWS, FUSIBLE).calls[body].kind == "unit"
    assert backend.compiled(jaxpr) is None
    small = backend.compile(jaxpr)
    assert small is not fn and len(small.units) == 1 and backend.compiled(jaxpr) is small
    np.testing.assert_array_equal(small(*full)[0], fn(*full)[0])
    monkeypatch.setattr(native, "UNIT_MIN_COST", default)   # (back: the first code again)
    assert backend.compiled(jaxpr) is fn


def test_the_cache_key_holds_the_pipeline_and_llvm_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # (numba's disk cache keys a function by its module, named by this key: code compiled
    # under TANGENTIA_NUMBA_LARGE_IR or TANGENTIA_NUMBA_LEAN's other value is never read)
    source = "def f(x):\n    return x\n"
    monkeypatch.delenv("TANGENTIA_NUMBA_LEAN", raising=False)
    monkeypatch.delenv("TANGENTIA_NUMBA_LARGE_IR", raising=False)
    default = native._source_key(source)
    assert native._source_key(source) == default
    monkeypatch.setenv("TANGENTIA_NUMBA_LARGE_IR", "0")
    no_large = native._source_key(source)
    monkeypatch.setenv("TANGENTIA_NUMBA_LARGE_IR", str(native.LARGE_IR))
    assert native._source_key(source) == default        # (the default, spelled out)
    monkeypatch.setenv("TANGENTIA_NUMBA_LEAN", "0")
    no_lean = native._source_key(source)
    assert len({default, no_large, no_lean}) == 3


def test_object_mode_calls_in_two_loops_compile() -> None:
    # (numba issue #9574: the environment pointer of object-mode blocks, kept from the first
    # one numba lowers -- inside the first loop -- did not dominate the second loop's, and
    # LLVM refused the program: the whole program fell back to the NumPy backend)
    import warnings
    import tangentia as tg
    from _numba_util import compile_numba

    def cb(x: Any) -> Any:
        return tg.pure_callback(lambda v: np.asarray(v) * 2.0 - 1.0,
                                tg.ShapeDtypeStruct((4,), np.float64), x)

    def f(x: Any) -> Any:
        x = lax.fori_loop(0, 2, lambda i, c: cb(c) + 0.5, x)
        return lax.fori_loop(0, 3, lambda i, c: cb(c) * 0.25, x)

    x = np.linspace(-1.0, 1.0, 4)
    jaxpr, full = program(f, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", native.ObjectModeWarning)
        fn = compile_numba(jaxpr)
    assert "numba.objmode" in fn.source
    want = x
    for _ in range(2):
        want = want * 2.0 - 1.0 + 0.5
    for _ in range(3):
        want = (want * 2.0 - 1.0) * 0.25
    assert np.asarray(fn(*full)[0]).tobytes() == want.tobytes()
