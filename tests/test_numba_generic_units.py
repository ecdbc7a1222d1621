"""Compile units generic in their sizes (``numba_backend/native.py``, ``_generic_source``;
issue 23).

A unit's literals equal to a large leading dimension of one of its array parameters (a
batch) are read from that parameter's shape on entry, and the unit's module is named by
that source: a program at another batch size loads the layers' code instead of compiling
it.  What must hold: the numbers at the new size are right (against the NumPy backend),
the units are loaded (counted, not timed), and a size that changes one of the generator's
decisions (an IR block unrolled over the batch, a dimension below ``GENERIC_MIN``) gets
code of its own, also right.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import weakref
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.numba_backend import native  # noqa: E402

pytestmark = pytest.mark.timeout(300)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIDTH, LAYERS = 8, 4


def params() -> list[tuple[np.ndarray, np.ndarray, np.float64]]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((WIDTH, WIDTH)) / 3.0, rng.standard_normal(WIDTH) * 0.1,
             np.float64(0.5 + 0.01 * i)) for i in range(LAYERS)]


def data(batch: int) -> np.ndarray:
    return np.random.default_rng(batch).standard_normal((batch, WIDTH))


def loss(p: Any, X: Any) -> Any:
    """A residual MLP written as a Python loop over its layers (a repeated segment: one
    compile unit for the layers, one for their transposes)."""
    h = X
    for W, b, a in p:
        h = h + a * tnp.tanh(h @ W + b)
    return tnp.mean(h ** 2)


def reference(batch: int) -> np.ndarray:
    g = tg.jit(tg.grad(loss), backend="numpy")(params(), data(batch))
    return np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(g)])


_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import tangentia as tg
    sys.path.insert(0, sys.argv[2])
    from test_numba_generic_units import data, loss, params
    from tangentia.compiler.numba_backend import native
    g = tg.jit(tg.grad(loss), backend="numba")(params(), data(int(sys.argv[1])))
    flat = np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(g)])
    top = native.PROGRAM_STATS
    print(repr(flat.tolist()), native.UNIT_STATS["compiled"], native.UNIT_STATS["loaded"],
          native.GENERIC_STATS["generic"], f"{top['generic']}/{top['compiled']}/{top['loaded']}")
""")


def _run(env: dict[str, str], batch: int) -> tuple[np.ndarray, int, int, int, str]:
    p = subprocess.run([sys.executable, "-c", _CHILD, str(batch), os.path.join(ROOT, "tests")],
                       env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-800:]
    values, compiled, loaded, generic, top = p.stdout.strip().rsplit(" ", 4)
    return np.array(eval(values)), int(compiled), int(loaded), int(generic), top


@pytest.fixture
def env(tmp_path: Any) -> dict[str, str]:
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(tmp_path), TANGENTIA_COMPILE_PROGRESS="0",
               TANGENTIA_JIT_TIERED="0")
    for k in ("TANGENTIA_NUMBA_UNITS", "TANGENTIA_NUMBA_GENERIC", "NUMBA_CACHE_DIR"):
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def test_a_new_batch_size_in_a_new_process_loads_the_units(env: dict[str, str]) -> None:
    # (top level: "generic/compiled/loaded", ``native.PROGRAM_STATS``)
    values, compiled, loaded, generic, top = _run(env, 160)
    np.testing.assert_allclose(values, reference(160), rtol=1e-12, atol=1e-15)
    assert (compiled, loaded, generic, top) == (2, 0, 2, "1/1/0")
    # batch 136: the same decisions as at 160, only the size differs: both units and the
    # program's top level loaded
    values, compiled, loaded, generic, top = _run(env, 136)
    np.testing.assert_allclose(values, reference(136), rtol=1e-12, atol=1e-15)
    assert (compiled, loaded, generic, top) == (0, 2, 2, "1/0/1")


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    for k in ("TANGENTIA_NUMBA_UNITS", "TANGENTIA_NUMBA_GENERIC"):
        monkeypatch.delenv(k, raising=False)
    return tmp_path


def test_two_batch_sizes_in_one_process_share_the_module_and_a_changed_decision_compiles(
        fresh: Any) -> None:
    # One module per unit, its compiled function called with arrays of 150 and of 170 rows
    # by two programs: each gets its own numbers (the size is read from the arguments).
    before = dict(native.GENERIC_STATS)
    for batch in (150, 170):
        g = tg.jit(tg.grad(loss), backend="numba")(params(), data(batch))
        flat = np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(g)])
        np.testing.assert_allclose(flat, reference(batch), rtol=1e-12, atol=1e-15)
    assert native.GENERIC_STATS["generic"] - before["generic"] == 4
    mods = sorted(n for n in os.listdir(fresh / "numba") if n.startswith("tangentia_numba_unit_"))
    assert len(mods) == 2
    for n in mods:
        text = (fresh / "numba" / n).read_text()
        assert "_n0 = p" in text and "range(_n0)" in text
        assert "150" not in text and "170" not in text
    # the programs' top level too: one module, its sizes read from the batch's shape (the
    # mean's divisor included: float(_n0 * 8) is the double 150 * 8.0 is)
    tops = _programs(fresh)
    assert len(tops) == 1
    text = (fresh / "numba" / tops[0]).read_text()
    assert "_n0 = x" in text and "float((_n0 * 8))" in text
    assert not {"150", "149", "170", "1200", "1360"} & set(native._INT.findall(text))
    # batch 48 changes the generator's decisions (loops where 150 rows called BLAS, the
    # bias gradients' sums an IR block unrolled over the rows): two modules of its own,
    # and a top level of its own
    g = tg.jit(tg.grad(loss), backend="numba")(params(), data(48))
    flat = np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(g)])
    np.testing.assert_allclose(flat, reference(48), rtol=1e-12, atol=1e-15)
    assert len([n for n in os.listdir(fresh / "numba") if n.startswith("tangentia_numba_unit_")]) == 4
    assert len(_programs(fresh)) == 2


def _programs(cache: Any) -> list[str]:
    """The modules of programs' top levels in the cache ``cache``."""
    return sorted(n for n in os.listdir(cache / "numba") if n.startswith("tangentia_numba_")
                  and n.endswith(".py") and not n.startswith("tangentia_numba_unit_"))


def test_a_rewritten_program_numba_refuses_is_compiled_from_its_literal_source(
        fresh: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    made = native._generic_program

    def broken(g: Any, params: Any, arrays: Any) -> Any:
        out = made(g, params, arrays)
        if out is None:
            return None
        return out[0].replace(".shape[0]", ".no_such_attribute", 1), out[1] + "broken\n", out[2]
    monkeypatch.setattr(native, "_generic_program", broken)
    before = dict(native.PROGRAM_STATS)
    g = tg.jit(tg.grad(loss), backend="numba")(params(), data(144))
    flat = np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(g)])
    np.testing.assert_allclose(flat, reference(144), rtol=1e-12, atol=1e-15)
    assert native.PROGRAM_STATS["failed"] - before["failed"] == 1
    assert native.PROGRAM_STATS["literal"] - before["literal"] == 1


def test_a_rewrite_that_raises_leaves_the_literal_program(
        fresh: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # (a bug in the rewrite must not send the program to the NumPy backend)
    def broken(g: Any, params: Any, arrays: Any) -> Any:
        raise ValueError("a rewrite's bug")
    monkeypatch.setattr(native, "_generic_program", broken)
    before = dict(native.PROGRAM_STATS)
    g = tg.jit(tg.grad(loss), backend="numba")
    flat = np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(
        g(params(), data(152)))])
    np.testing.assert_allclose(flat, reference(152), rtol=1e-12, atol=1e-15)
    assert native.PROGRAM_STATS["failed"] - before["failed"] == 1
    assert native.PROGRAM_STATS["literal"] - before["literal"] == 1


def test_the_program_reads_a_stack_of_rows_through_a_view_of_the_batch_size(fresh: Any) -> None:
    # (``_view_n``: ``rowio.view_at((128, 8))`` with the leading size from the call; a
    # view's address and strides are those of the literal view of the same size)
    import numba
    view = native._view_n((3,))

    @numba.njit
    def take(n: Any, buf: Any, off: Any) -> Any:
        return view(n, buf, off)
    buf = np.arange(40.0)
    for n, off in ((4, 0), (7, 5), (1, 37)):
        out = take(n, buf, off)
        assert out.shape == (n, 3) and out.flags.c_contiguous
        np.testing.assert_array_equal(out, buf[off:off + 3 * n].reshape(n, 3))
        out[0, 0] = -1.0
        assert buf[off] == -1.0


def test_a_rewritten_unit_numba_refuses_is_compiled_from_its_literal_source(
        fresh: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    made = native._generic_source

    def broken(c: Any, params: Any, arrays: Any) -> Any:
        out = made(c, params, arrays)
        if out is None:
            return None
        bad = out[0].replace(".shape[0]", ".no_such_attribute", 1)
        return bad, out[1] + "broken\n"
    monkeypatch.setattr(native, "_generic_source", broken)
    before = dict(native.GENERIC_STATS)
    g = tg.jit(tg.grad(loss), backend="numba")(params(), data(144))
    flat = np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(g)])
    np.testing.assert_allclose(flat, reference(144), rtol=1e-12, atol=1e-15)
    assert native.GENERIC_STATS["failed"] - before["failed"] == 2
    assert native.GENERIC_STATS["literal"] - before["literal"] == 2


def test_sizes_below_the_threshold_or_also_trailing_stay_literal(fresh: Any) -> None:
    # width 8 (trailing) and batch 12 (< GENERIC_MIN): no unit is rewritten, nor the program
    before, top = dict(native.GENERIC_STATS), dict(native.PROGRAM_STATS)
    g = tg.jit(tg.grad(loss), backend="numba")(params(), data(12))
    flat = np.concatenate([np.ravel(np.asarray(x)) for x in tg.tree_util.tree_leaves(g)])
    np.testing.assert_allclose(flat, reference(12), rtol=1e-12, atol=1e-15)
    assert native.GENERIC_STATS["generic"] == before["generic"]
    assert native.GENERIC_STATS["literal"] - before["literal"] == 2
    assert native.PROGRAM_STATS["generic"] == top["generic"]
    assert native.PROGRAM_STATS["literal"] - top["literal"] == 1



def test_only_integer_literals_are_rewritten() -> None:
    # names, floats (exponents too) are never a size's literal; integers anywhere else are
    line = "    a1 = _v2(p0, 160) * 1e-160 + 2.5e+160 + s160 + 160.0 + x[160] + y[160, 3] - 160"
    found = [line[m.start() - 2:m.end() + 1] for m in native._INT.finditer(line)]
    assert found == [", 160)", "x[160]", "y[160,", ", 3]", "- 160"]
