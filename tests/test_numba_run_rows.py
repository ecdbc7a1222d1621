"""A scan body's row loads and stores done by the loop over a run of copies (issue 23, the
fori family: ``codegen._Gen.run_plans``, ``_row_reads``, ``_row_writes``).

``jit(grad)`` of a ``fori_loop`` whose body has n dynamic slices and updates repeats one
segment per slice in the forward body (whose residual rows it stores into the scan's
stacks) and its transposed copy in the backward body (which loads them).  The copies were
calls one by one: the forward body's copies read index arithmetic that common-subexpression
elimination shared with the copy before the last (``(i + 2k) % m`` is copy 2k's offset),
and the backward body's row loads sat between its copies.  Now each body is one loop over
its copies, the loop loading and storing the rows at stack indices stepping with the copy.
The numbers must be those of the copies called one by one (``TANGENTIA_NUMBA_SEG_LOOPS=0``),
bit for bit, the NumPy backend's, and the finite differences'.

The program is compiled twice (loops on and off) for the whole module (``_compiled``).
"""
from __future__ import annotations

import re
from typing import Any, Dict, Iterator, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import codegen  # noqa: E402

from _numba_util import compile_numba, empty_cache, fd_grad, program  # noqa: E402

M, N, STEPS, W = 16, 8, 3, 4        # state size, slices per step, steps, slice width


def _f(x: Any) -> Any:
    def body(i: Any, s: Any) -> Any:
        for k in range(N):
            v = lax.dynamic_slice_in_dim(s, (i + k) % 12, W)
            s = lax.dynamic_update_slice_in_dim(s, tnp.sin(v) * 0.9 + 0.1, (i + 2 * k) % 12, 0)
        return s
    return tnp.sum(lax.fori_loop(0, STEPS, body, x) ** 2)


def _loss(x: np.ndarray) -> float:
    s = x.copy()
    for i in range(STEPS):
        for k in range(N):
            a = min(max((i + k) % 12, 0), M - W)
            v = s[a:a + W].copy()
            b = min(max((i + 2 * k) % 12, 0), M - W)
            s[b:b + W] = np.sin(v) * 0.9 + 0.1
    return float(np.sum(s ** 2))


X = np.linspace(0.05, 0.95, M)


@pytest.fixture(scope="module")
def compiled() -> Iterator[Dict[str, Any]]:
    """``{"on"/"off": (outputs, copies, loops)}``, ``"source"``, ``"jaxpr"``, ``"args"``."""
    out: Dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TANGENTIA_NUMBA_SEGMENTS", "1")
        for loops in ("0", "1"):
            mp.setenv("TANGENTIA_NUMBA_SEG_LOOPS", loops)
            empty_cache(mp, "tangentia_run_rows_")
            jaxpr, args = program(tg.grad(_f), X)      # (each compile its own program)
            c0, l0 = codegen.SEG_STATS["copies"], codegen.SEG_STATS["loops"]
            fn = compile_numba(jaxpr)
            res = [np.asarray(r) for r in fn(*args)]
            out["on" if loops == "1" else "off"] = (
                res, codegen.SEG_STATS["copies"] - c0, codegen.SEG_STATS["loops"] - l0)
            if loops == "1":
                out["source"] = get_backend("numba").source(jaxpr)
                out["jaxpr"], out["args"] = jaxpr, args
    yield out


def test_loops_bit_for_bit_as_calls_and_as_numpy(compiled: Dict[str, Any]) -> None:
    on, copies_on, loops_on = compiled["on"]
    off, copies_off, loops_off = compiled["off"]
    assert loops_off == 0 and loops_on >= 2       # (the forward body's run and the backward's)
    assert copies_on == copies_off >= 2 * (N - 2)
    assert len(on) == len(off) == 1
    for x, y in zip(on, off):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
    numpy = get_backend("numpy").compile(compiled["jaxpr"])(*compiled["args"])
    np.testing.assert_allclose(on[0], np.asarray(numpy[0]), rtol=1e-12, atol=1e-14)


def test_grad_against_finite_differences_and_eager(compiled: Dict[str, Any]) -> None:
    got = compiled["on"][0][0]
    np.testing.assert_allclose(got, fd_grad(_loss, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, tg.grad(_f)(X), rtol=1e-13, atol=1e-15)


def test_rows_loaded_and_stored_in_the_loops(compiled: Dict[str, Any]) -> None:
    """Both bodies' copies are loops over the copies (``for c``) that store (forward)
    and load (backward) the residual rows ``stack[first + stride * c, step]``: one call of each
    copy's unit in the source, no row of the copies' outputs stacked and read back after
    a loop, one statement per copy."""
    source: str = compiled["source"]
    assert len(re.findall(r"^\s+for c\d+ in range\(\d+\):", source, re.M)) == 2, source
    # (the stack's row at the copy's index, by its index among the stack's rows)
    row = r"\w+, \(-?\d+ \+ \(-?\d+\) \* c\d+\) \* \d+ \+ \w+"
    assert len(re.findall(r"^\s+_st\d+\(" + row + r", \(", source, re.M)) == 3, source
    assert len(re.findall(r"^\s+\(s\d+, s\d+, s\d+, s\d+, \) = _ld\d+\(" + row + r"\)$", source,
                          re.M)) == 3, source
    assert len(re.findall(r"= _u\d+\(", source)) == 2, source
    assert not re.search(r"_ld\d+\(st\d+, \d+\)", source), source


def test_coverage_prefers_the_split_copies() -> None:
    """``_covered``: the fraction of a program's equations in copies."""
    segs: Dict[int, Tuple[Any, ...]] = {0: (3, None, "a", []), 3: (3, None, "a", [])}
    assert codegen._covered(segs, 12) == 0.5
    assert codegen._covered({}, 12) == 0.0 and codegen._covered({}, 0) == 0.0
