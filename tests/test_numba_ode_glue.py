"""The numba backend's glue between IR blocks and compile units, as the vmapped ODE
gradient uses it (issue 23, session 15).

``jit(vmap(grad))`` of an ODE loss is an adaptive solver's ``while_loop`` over
batched states: hundreds of scalars carried in tuples, loop bodies that are compile
units, small batched values that become arrays.  What numba had to type and lower
around the blocks was most of its compile time there, so:

* a scalarized value made an array is one call (``alloc.array_of``, a fresh array of
  its elements; ``codegen._Gen.array``), not one ``a[i, j] = e`` statement per
  element;
* a compile unit returns each scalarized output of several elements as one tuple
  (``_Gen.result_items``), which its caller keeps whole (``template_outputs(...,
  grouped=True)``): a loop body's new carries are assigned ``ct5 = ct9``, not
  unpacked into names and packed into tuples again.

Each program is compiled by numba and by the NumPy backend and run on the same
inputs: the same dtypes and values (to 1e-13: numba's ``sin`` is not NumPy's to the
last bit; integers and booleans exactly).  Programs are tiny (a few numba compiles).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from _numba_util import compile_numba, program  # noqa: E402  (shared by the numba tests)
from test_numba_units import small_units  # noqa: E402,F401  (the fixture: units from a cost of 20 on)

pytestmark = pytest.mark.timeout(300)


def _both(f: Any, *args: Any) -> str:
    """Compile ``f``'s program with numba and with the NumPy backend, check that both
    give the same dtypes and values, and return numba's generated source."""
    jaxpr, full = program(f, *args)
    fn = compile_numba(jaxpr)
    got = fn(*full)
    want = get_backend("numpy").compile(jaxpr)(*full)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
    return fn.source


def test_small_values_become_arrays_by_one_store() -> None:
    """Scalarized results of several dtypes (float32, int32, bool, complex128), made
    the program's output arrays, and a concatenation of scalarized operands too large to
    be scalarized itself: one ``_mk`` call each, no element statements or copy loops,
    and the values (a float64 expression cast to float32, say) as the NumPy backend's."""
    def f(x: Any, n: Any, z: Any, w: Any) -> Any:
        y = tnp.sin(x) * 1.5 + x * x                    # f64[2, 3]
        m = n * 3 - 1                                    # i32[4]
        return (y.astype(np.float32), m, m > 2, z * (1 + 2j) - 0.5,
                tnp.stack([y[0, 0], y[1, 2]]),           # (a stack of two scalars)
                tnp.concatenate([w, w[::-1].astype(np.float32)]))   # f64[32], no operation

    x = np.linspace(-1.0, 2.0, 6).reshape(2, 3)
    n = np.array([1, -2, 3, 7], np.int32)
    z = np.array([0.25 - 1j, 3.0 + 0.5j])
    w = np.linspace(0.5, 3.0, 16)
    src = _both(f, x, n, z, w)
    body = src.split("def program(")[1]
    assert len(re.findall(r"a\d+ = _mk\d+\(", body)) == 6, body
    assert not re.search(r"a\d+\[\d+(, \d+)*\] = ", body), body
    assert "for " not in body, body     # (the concatenation: no copy loops)


def test_unit_results_are_the_loop_carries(small_units: Any) -> None:
    """A while loop carrying a step count and four states of 16 lanes (past
    ``codegen.CARRY_SCALARS``: a tuple per state), whose body is a compile unit: the
    unit returns a tuple per state and the loop assigns each whole (``ct<N> = ct<M>``),
    with the values of the NumPy backend."""
    def f(y: Any, v: Any, a: Any) -> Any:
        def cond(c: Any) -> Any:
            return (c[0] < 5) & (tnp.max(tnp.abs(c[1])) < 1e6)

        def body(c: Any) -> Any:
            i, y, w, v, u = c
            y2 = y + 0.125 * tnp.sin(w) * a
            w2 = w - 0.25 * y2 * tnp.cos(y) + v[::-1]
            return i + 1, y2, w2, v * 0.5 + tnp.sum(y2) * 1e-3, u

        return lax.while_loop(cond, body, (0, y, y * 0.5 - 1.0, v, v + y))

    y = np.linspace(0.1, 1.5, 16)
    v = np.linspace(-2.0, 0.5, 16)
    src = _both(f, y, v, 0.75)
    assert "# ---- unit" in src                     # (the loop body is a unit)
    loop = src.split("while True:")[1].split("\n    return")[0]
    # (the condition is a unit too, at this threshold: the body's call is the one
    # giving the carries)
    calls = [line.split("=")[0] for line in loop.splitlines() if re.search(r"= _u\d+\(", line)]
    body = [lhs for lhs in calls if "ct" in lhs]
    assert len(body) == 1, loop
    assert len(re.findall(r"\bct\d+", body[0])) == 4, body     # a tuple per state,
    assert len(re.findall(r"\bs\d+", body[0])) == 1, body      # a name for the count
    assert len(re.findall(r"^\s+ct\d+ = ct\d+$", loop, re.M)) == 4, loop
