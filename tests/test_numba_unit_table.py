"""A compile unit takes its caller's addressed arrays as a segment of the address table.

Past ``native.PACK_MAX_ELEMENTS`` a program's closed-over matrices are not packed but
addressed: the program rebuilds each from one table of data addresses
(``native._addressed``).  A scan body compiled as a unit took each such matrix as an
array parameter of its own: a scan over 1,500 closed-over 8x8 matrices (482 addressed)
called its body unit with 4,340 arguments, twice, and LLVM's function passes over that
caller took 20 of the compile's 32 s (47 s in all on a quiet machine).  Now the unit takes
the run of table entries (``native._segments``) and rebuilds the arrays itself
(``native._at_entry``): its parameters no longer grow with the number of matrices, and a
unit it calls takes them on the same way.
"""
from __future__ import annotations

import re
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import native  # noqa: E402

from _numba_util import compile_numba, empty_cache, program  # noqa: E402

pytestmark = pytest.mark.timeout(120)

M = 8
PACKED = 4      # layers whose matrices fit in the lowered packing limit


def _scan(n: int, steps: int = 4) -> Tuple[Callable[..., Any], Tuple[np.ndarray, np.ndarray]]:
    """``grad`` of bench_cold's ``scan`` family at ``n`` closed-over layers (both arguments)."""
    rng = np.random.default_rng(n)
    Ws = [rng.standard_normal((M, M)) / 3.0 for _ in range(n)]
    xs = rng.standard_normal((steps, M))

    def loss(W0: Any, c0: Any) -> Any:
        def body(c: Any, x: Any) -> Any:
            h = tnp.tanh(W0 @ c + x)
            for W in Ws:
                h = tnp.tanh(W @ h + 0.1 * c)
            return h, h[0]
        cT, ys = lax.scan(body, c0, xs)
        return tnp.sum(cT ** 2) + 0.1 * tnp.sum(ys)
    return loss, (rng.standard_normal((M, M)) / 3.0, np.linspace(-1.0, 1.0, M))


def _units(source: str) -> List[str]:
    return source.split("# ---- unit")[1:]


def _params(unit: str) -> List[str]:
    m = re.search(r"def body\(([^)]*)\)", unit)
    assert m is not None
    return [p.strip() for p in m.group(1).split(",") if p.strip()]


def _limits(monkeypatch: pytest.MonkeyPatch) -> None:
    empty_cache(monkeypatch, "tg_unit_table_")
    monkeypatch.setattr(native, "PACK_MAX_ELEMENTS", PACKED * M * M + 2 * M + 3 * M)
    monkeypatch.setattr(native, "UNIT_MIN_COST", 100)     # (the scan's bodies: units)


def _check(loss: Callable[..., Any], args: Tuple[np.ndarray, ...], monkeypatch: pytest.MonkeyPatch) -> str:
    """Compile ``grad(loss)`` with numba; check it against the NumPy backend and a
    directional finite difference; return its source."""
    g = tg.grad(loss, argnums=(0, 1))
    jaxpr, full = program(g, *args)
    fn = compile_numba(jaxpr)
    assert len(fn.addressed) >= 8          # (the case: past the packing limit)
    got = fn(*full)
    want = get_backend("numpy").compile(jaxpr)(*full)
    assert len(got) == len(want) == 2
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-15)
    rng = np.random.default_rng(1)
    d = [rng.standard_normal(a.shape) for a in args]
    h = 1e-6
    fd = (float(loss(*(a + h * e for a, e in zip(args, d)))) -
          float(loss(*(a - h * e for a, e in zip(args, d))))) / (2 * h)
    dot = sum(float(np.sum(np.asarray(a) * e)) for a, e in zip(got, d))
    assert abs(fd - dot) <= 1e-7 * max(1.0, abs(dot))
    return fn.source


def test_scan_body_unit_takes_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan body's units (forward and backward) at 12 and 20 layers: the same
    parameters whatever the number of addressed matrices, each matrix an ``_at`` of a
    table segment inside the unit, none rebuilt by the program for the units' sake."""
    _limits(monkeypatch)
    counts = {}
    for n in (12, 20):
        src = _check(*_scan(n), monkeypatch)
        units = _units(src)
        assert len(units) == 2, src[:2000]
        counts[n] = [len(_params(u)) for u in units]
        for u in units:
            # (an addressed matrix: one entry of the segment, rebuilt where the unit starts)
            assert len(re.findall(r"= _at\w*\(p\d+, \d+\)", u)) >= n - PACKED
        top = src.split("# ---- unit")[0]
        assert len(re.findall(r"= _at\w*\(_xa, \d+\)", top)) < 8, top
    assert counts[12] == counts[20], counts
    assert max(counts[20]) < 40, counts      # (scalars of the carry and a few segments)


def test_nested_units_pass_the_segment_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """An outer scan whose body has layers of its own and runs an inner scan of the
    same layers: the outer body's units pass their segment of the table on to the
    inner body's units (whose matrices are then entries of a segment of a segment)."""
    _limits(monkeypatch)
    n = 12
    rng = np.random.default_rng(5)
    Ws = [rng.standard_normal((M, M)) / 3.0 for _ in range(n)]
    xs, ys = rng.standard_normal((3, M)), rng.standard_normal((2, M))

    def loss(W0: Any, c0: Any) -> Any:
        def inner(c: Any, x: Any) -> Any:
            h = tnp.tanh(W0 @ c + x)
            for W in Ws:
                h = tnp.tanh(W @ h + 0.1 * c)
            return h, h[1]

        def outer(c: Any, y: Any) -> Any:
            for W in Ws[::-1]:
                c = tnp.sin(W @ c) * 0.9 + 0.1 * y
            cT, hs = lax.scan(inner, c, xs)
            return cT * 0.5 + c, tnp.sum(hs)
        cT, zs = lax.scan(outer, c0, ys)
        return tnp.sum(cT ** 2) + tnp.sum(zs)
    src = _check(loss, (rng.standard_normal((M, M)) / 3.0, np.linspace(-1.0, 1.0, M)), monkeypatch)
    units = _units(src)
    ats = [re.findall(r"= _at\w*\((p\d+), \d+\)", u) for u in units]
    # (the inner units' matrices from their caller's segment: no unit takes them apart)
    assert len(units) >= 4 and sum(1 for a in ats if len(a) >= n - PACKED) >= 4, ats
    # (the outer body reads the layers reversed: still one stretch of the table, one segment)
    assert all(len(set(a)) <= 2 for a in ats), ats
