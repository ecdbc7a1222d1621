"""``while`` loops repeated in a program, compiled once as a unit (``rules._while_unit``).

``vmap`` of a Python loop of ``while_loop`` stages (Newton's square root, then a
``cond``) gives a program of many loops with the same condition, body and types; each
becomes a call of one compile unit holding the whole loop.  Checked against the NumPy
backend and a Python loop over the examples, bit for bit against the same program
compiled without units (each loop inline), and the choice: a loop alone in its program,
or loops that differ, stay inline.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402

NUMBA = nbb.NumbaBackend()
FEW = settings(max_examples=3, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _stages(n, tol=1e-12, vary=False):
    def f(a):
        x = a
        for i in range(n):
            c = a + 0.1 * i

            def cond(s, c=c, i=i):
                lim = 40 + i if vary else 40      # (vary: loops that differ)
                return (tnp.abs(s[0] * s[0] - c) > tol) & (s[1] < lim)

            def body(s, c=c):
                return 0.5 * (s[0] + c / s[0]), s[1] + 1
            x = lax.while_loop(cond, body, (x + 1.0, 0))[0]
            x = lax.cond(x > 1.5, lambda v: v * 0.9, lambda v: v + 0.2, x)
        return x
    return f


def _compile(f, *args):
    closed = tg.make_jaxpr(f)(*args)
    jaxpr = convert_constvars_to_invars(closed.jaxpr)
    full = list(closed.consts) + list(args)
    return NUMBA.compile(jaxpr), jaxpr, full


def _units(src):
    return re.findall(r"# ---- unit (\w+)", src)


@FEW
@given(hnp.arrays(np.float64, st.sampled_from([3, 8]), elements=st.floats(0.5, 9.0)))
def test_repeated_while_loops_are_one_unit_and_match(a):
    f = tg.vmap(_stages(4))
    fn, jaxpr, full = _compile(f, a)
    got = fn(*full)[0]
    src = NUMBA.source(jaxpr)
    assert len(set(_units(src))) == 1, src          # four loops, one unit
    main = src.split("# ---- unit")[0]
    assert "while True:" not in main, main          # (the loop is in the unit)
    want = get_backend("numpy").compile(jaxpr)(*full)[0]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    loop = np.array([_stages(4)(np.float64(v)) for v in a])
    np.testing.assert_allclose(got, loop, rtol=1e-13, atol=0)


def test_the_unit_computes_the_inline_loops_bits(monkeypatch):
    a = np.linspace(1.0, 4.0, 8)
    f = tg.vmap(_stages(3))
    fn, jaxpr, full = _compile(f, a)
    assert _units(NUMBA.source(jaxpr))
    monkeypatch.setenv("TANGENTIA_NUMBA_UNITS", "0")
    fn0, jaxpr0, full0 = _compile(f, a)
    src0 = NUMBA.source(jaxpr0)
    assert not _units(src0) and src0.count("while True:") == 3, src0
    assert np.array_equal(fn(*full)[0], fn0(*full0)[0])


def test_a_loop_alone_or_loops_that_differ_stay_inline():
    a = np.linspace(1.0, 4.0, 8)
    for f in (tg.vmap(_stages(1)), tg.vmap(_stages(3, vary=True))):
        fn, jaxpr, full = _compile(f, a)
        src = NUMBA.source(jaxpr)
        assert not _units(src) and "while True:" in src, src
        want = get_backend("numpy").compile(jaxpr)(*full)[0]
        np.testing.assert_allclose(fn(*full)[0], want, rtol=1e-13, atol=0)
