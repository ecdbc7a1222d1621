"""A compile unit's float constants are its parameters (``numba_backend/unit_consts.py``,
issue 23: a changed program reuses what it can).

A program whose only change is a constant in every step (a spring chain's damping) loads
its compile units from the cache instead of compiling them again; the constant reaches the
code through the caller, so the numbers are the new program's, never the old one's; and
literals whose lifting could change a number or a call's speed stay in the unit.
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

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import NumbaBackend, native, unit_consts  # noqa: E402

from _numba_util import program  # noqa: E402

pytestmark = pytest.mark.timeout(300)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NB = (np.arange(16) + 1) % 16


def chain(c: float, steps: int) -> Callable[..., Any]:
    """grad of ``steps`` steps of a spring chain of 16 particles damped by ``c`` (each step
    a repeated segment's copy: a compile unit, forward and transposed)."""
    def sim(x0: Any, v0: Any) -> Any:
        x, v = x0, v0
        for _ in range(steps):
            f = (x[NB] - x) * 2.0 - (x - x[NB - 1]) * 1.5 - c * v
            v = (v + 0.01 * f).at[0].set(0.0)
            x = x + 0.01 * v
            x = x.at[:, 1].set(tnp.maximum(x[:, 1], 0.0))
        return tnp.sum(x ** 2) + tnp.sum(v ** 2)
    return tg.grad(sim, argnums=(0, 1))


ARGS = (np.random.default_rng(0).standard_normal((16, 2)), np.zeros((16, 2)))


def test_which_literals_become_parameters() -> None:
    x = np.linspace(0.5, 2.0, 4)
    jaxpr, args = program(lambda x: tnp.maximum(x * 0.1 + 2.0, 0.0) / 3.0 + x ** 2.5, x)
    got = unit_consts.lifted(jaxpr)
    assert got is not None
    new, lits = got
    # (mul, add, max: lifted; the divisor and the exponent stay: LLVM folds those)
    assert sorted(float(a.val) for a in lits) == [0.0, 0.1, 2.0]
    assert len(new.invars) == len(jaxpr.invars) + 3
    assert unit_consts.lifted(jaxpr) is got         # (memoized per program)
    text = str(new)
    assert "3.0" in text and "2.5" in text and "0.1" not in text
    # the lifted program given its literals computes the original's numbers
    ref = get_backend("numpy").compile(jaxpr)(*args)
    out = get_backend("numpy").compile(new)(*args, *[a.val for a in lits])
    np.testing.assert_array_equal(out[0], ref[0])
    # float32: a weakly typed literal keeps x's precision, a float64 value would not
    j32, _ = program(lambda x: x * 0.1 + 2.0, x.astype(np.float32))
    assert unit_consts.lifted(j32) is None
    # constants of nested programs stay (their bodies are emitted inside the unit)
    jl, _ = program(lambda x: lax.fori_loop(0, 3, lambda i, y: y * 0.5, x), x)
    assert unit_consts.lifted(jl) is None


@pytest.fixture
def fresh_units(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    """A fresh cache directory, no unit of this process shared, lifting on."""
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TANGENTIA_NUMBA_UNITS", raising=False)
    monkeypatch.setenv("TANGENTIA_NUMBA_UNIT_CONSTS", "1")     # (off by default)
    return tmp_path


_CHILD = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, sys.argv[1])
    import test_numba_unit_consts as T
    from tangentia.compiler.numba_backend import NumbaBackend, native
    jaxpr, args = T.program(T.chain(0.1, 3), *T.ARGS)
    NumbaBackend().compile(jaxpr)(*args)
    print(native.UNIT_STATS["compiled"])
""")


def test_a_changed_constant_loads_the_units_and_gives_its_numbers(fresh_units: Any) -> None:
    env = dict(os.environ, TANGENTIA_NUMBA_FAST_LOAD="0", PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(ROOT, "tests")], env=env,
                       capture_output=True, text=True, timeout=280)
    assert p.returncode == 0, p.stderr[-2000:]
    assert int(p.stdout.split()[-1]) == 2       # the step's copies and their transposes
    # another damping and one more step: the same units, loaded; the new numbers
    before = dict(native.UNIT_STATS)
    jaxpr, args = program(chain(0.2, 4), *ARGS)
    fn = NumbaBackend().compile(jaxpr)
    got = fn(*args)
    assert len(fn.units) == 2
    assert native.UNIT_STATS["loaded"] == before["loaded"] + 2
    assert native.UNIT_STATS["compiled"] == before["compiled"]
    assert "0.2" in fn.source.split("# ---- unit")[0]      # (the caller passes the value)
    want = get_backend("numpy").compile(jaxpr)(*args)
    old = get_backend("numpy").compile(program(chain(0.1, 4), *ARGS)[0])(*args)
    for g, w, o in zip(got, want, old):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
        assert not np.allclose(g, o, rtol=1e-9, atol=0)     # not the old constant's


def test_the_same_bits_as_literals(fresh_units: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "UNIT_MIN_COST", 20)    # (a small loop body: a unit)

    def f(y: Any) -> Any:
        def body(i: Any, y: Any) -> Any:
            return tnp.maximum(tnp.sin(y) * 1.25 - y * y * 0.125, -0.75) + 0.5
        return lax.fori_loop(0, 5, body, y)
    jaxpr, args = program(f, np.linspace(-1.0, 1.0, 3))
    fn = NumbaBackend().compile(jaxpr)
    assert fn.units and "1.25" in fn.source.split("# ---- unit")[0]   # (the caller passes it)
    lifted = fn(*args)
    monkeypatch.setenv("TANGENTIA_NUMBA_UNIT_CONSTS", "0")
    jaxpr, args = program(f, np.linspace(-1.0, 1.0, 3))
    fn0 = NumbaBackend().compile(jaxpr)
    assert "1.25" not in fn0.source.split("# ---- unit")[0]
    assert len(fn.units[0].argtys) == len(fn0.units[0].argtys) + 4   # 1.25, 0.125, -0.75, 0.5
    np.testing.assert_array_equal(lifted[0], fn0(*args)[0])
    np.testing.assert_allclose(lifted[0], get_backend("numpy").compile(jaxpr)(*args)[0],
                               rtol=1e-13, atol=1e-14)
