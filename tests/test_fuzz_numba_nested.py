"""Differential fuzzing of the numba backend on transformations nested inside control flow and
control flow inside transformations: generated programs run compiled by numba, by the NumPy
backend (the reference) and eagerly, and must agree (``test_fuzz_numba.run_three``/``compare``).

test_fuzz_numba draws loops with elementwise bodies and transforms whole programs;
test_fuzz_numba_blocks draws long scalarized loop bodies with their gradients and vmap.
Here the transformation is *inside* the loop or branch, or batches a loop whose trip count or
branch differs from row to row:

* ``vmap`` of a generated body over the rows of a ``scan``'s or ``fori_loop``'s carry;
* ``grad`` (gradient descent steps) and ``jvp`` inside ``while_loop``/``scan`` bodies;
* ``vmap`` of ``while_loop``/``fori_loop`` whose trip count is batched (the batched loop runs
  until every row is done, each row's carry selected), of ``cond``/``switch`` with a batched
  predicate or index (out of range: clamped), of a ``scan`` whose carry becomes batched;
* ``grad`` and ``jacfwd`` of ``scan`` (forward and reverse, unrolled), of ``fori_loop`` and of
  ``cond`` inside a ``scan``;
* gathers and scatters at traced indices inside loop bodies under ``vmap`` (``mode=`` clip,
  drop, fill; negative and out-of-range indices), ``dynamic_slice`` and
  ``dynamic_update_slice`` at out-of-range starts (clamped, as JAX's).

Bodies are drawn from test_fuzz_numba's elementwise tables over float64, float32, complex64
(vmap and loops only) and int32 (no derivatives).  One hypothesis example is ONE program
with several outputs (a numba compile each); a loop amplifies a last-bit difference, so
inexact outputs get 100x test_fuzz_numba's tolerance (float32's where float32 is involved).

``TANGENTIA_FUZZ_EXAMPLES=50 TANGENTIA_FUZZ_RANDOM=1 pytest tests/test_fuzz_numba_nested.py``
fuzzes locally; the default runs a few derandomized examples.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402

from test_fuzz_numba import (BINARY, TERNARY, UNARY, compare, fuzz as _fuzz,  # noqa: E402
                             run_body, run_three, values)

F64, F32, C64, I32 = (np.dtype(t) for t in (np.float64, np.float32, np.complex64, np.int32))
# operations whose derivative is defined and finite almost everywhere on moderate values, and
# computed without cancellation (not tanh' = 1 - tanh**2 nor logistic's s * (1 - s): the numba
# backend's tanh is within a few ulp of NumPy's, and near tanh(7.7) one ulp of tanh is 5e-10 of
# 1 - tanh**2: a wide random run found a gradient 3.6e-9 apart, each within a few ulp of tanh)
_SMOOTH = {"neg", "sin", "cos", "atan", "square", "exp", "sinh", "erf",
           "ipow2", "ipow3", "add", "sub", "mul", "max", "min", "select", "hypot",
           "logaddexp", "atan2", "abs", "copysign", "floor", "round_even"}


def fuzz(default: int) -> settings:
    """test_fuzz_numba's settings, without shrinking (each step a numba compile: a failing
    example is reported as drawn, its description naming each part)."""
    return settings(_fuzz(default), phases=[Phase.explicit, Phase.generate])


@st.composite
def body(draw: Any, dt: np.dtype, smooth: bool = False, n: tuple = (1, 4)) -> list:
    """Steps of an elementwise body over [carry, counter] (test_fuzz_numba.run_body's)."""
    steps: list = []
    for _ in range(draw(st.integers(*n))):
        arity = draw(st.sampled_from([1, 2, 2, 3]))
        table: Any = {1: UNARY, 2: BINARY, 3: TERNARY}[arity]
        names = sorted(k for k, v in table.items() if dt.kind in v[0]
                       and (not smooth or k in _SMOOTH))
        steps.append((arity, draw(st.sampled_from(names)),
                      [draw(st.integers(0, 1 + len(steps))) for _ in range(arity)]))
    return steps


def _moderate(x: Any) -> Any:
    """A body's result kept finite and moderate (so a loop of gradient steps stays in range
    and its derivatives are not all NaN): floats through ``x / (1 + |x|)`` (exactly rounded
    operations, its derivative ``1 / (1 + |x|)**2`` without cancellation), integers as they
    are."""
    if np.dtype(x.dtype).kind == "f":
        return x / (1 + tnp.abs(x))
    return x


# ---------------------------------------------------------------------------
# the parts a program is made of: each draws what it needs and returns
# (fn(x, rows, n, idx) -> list of outputs, description)


def _vmap_in_scan(draw: Any, dt: np.dtype) -> tuple:
    steps = draw(body(dt))

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        def step(c: Any, r: Any) -> tuple:
            new = tg.vmap(lambda row, k: run_body(steps, row, k))(c, idx[:c.shape[0]])
            return new, new[0]
        c, ys = lax.scan(step, rows, rows[:3])
        return [c, ys]
    return fn, "vmap-in-scan: " + " ".join(s[1] for s in steps)


def _vmap_in_fori(draw: Any, dt: np.dtype) -> tuple:
    steps = draw(body(dt))
    dynamic = draw(st.booleans())

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        def step(i: Any, c: Any) -> Any:
            ax = 1 if c.ndim > 1 else 0   # (the columns of a matrix of rows)
            return tg.vmap(lambda row: run_body(steps, row, i), in_axes=ax, out_axes=ax)(c)
        return [lax.fori_loop(0, n[0] if dynamic else 3, step, rows)]
    return fn, f"vmap-in-fori(dynamic={dynamic}): " + " ".join(s[1] for s in steps)


def _grad_in_while(draw: Any, dt: np.dtype) -> tuple:
    steps = draw(body(dt, smooth=True))

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        def loss(v: Any) -> Any:
            return tnp.sum(_moderate(run_body(steps, v, np.int32(1))) ** 2)

        def step(s: tuple) -> tuple:
            k, v = s
            g = tg.grad(loss)(v)
            return k + 1, v - dt.type(0.25) * tnp.where(tnp.isfinite(g), g, dt.type(0))
        return list(lax.while_loop(lambda s: s[0] < n[1], step, (np.int32(0), x)))
    return fn, "grad-in-while: " + " ".join(s[1] for s in steps)


def _jvp_in_scan(draw: Any, dt: np.dtype) -> tuple:
    steps = draw(body(dt, smooth=True))

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        def step(c: Any, r: Any) -> tuple:
            y, t = tg.jvp(lambda v: _moderate(run_body(steps, v, np.int32(2))), (c,), (r,))
            return y, t
        return list(lax.scan(step, x, rows[:3]))
    return fn, "jvp-in-scan: " + " ".join(s[1] for s in steps)


def _vmap_while(draw: Any, dt: np.dtype) -> tuple:
    steps = draw(body(dt))
    fori = draw(st.booleans())

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        def one(row: Any, k: Any) -> Any:
            if fori:
                return lax.fori_loop(0, k, lambda i, c: run_body(steps, c, i), row)
            return lax.while_loop(lambda s: s[0] < k,
                                  lambda s: (s[0] + 1, run_body(steps, s[1], s[0])),
                                  (np.int32(0), row))
        r = tg.vmap(one)(rows, n[:rows.shape[0]])
        return list(r) if isinstance(r, tuple) else [r]
    return fn, f"vmap-{'fori' if fori else 'while'}(batched n): " + " ".join(s[1] for s in steps)


def _vmap_branch(draw: Any, dt: np.dtype) -> tuple:
    steps = draw(body(dt))
    switch = draw(st.booleans())

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        def one(row: Any, k: Any) -> Any:
            if switch:
                return lax.switch(k, [lambda c: c, lambda c: run_body(steps, c, k),
                                      lambda c: run_body(steps, run_body(steps, c, k), k)], row)
            return lax.cond(k > 1, lambda c: run_body(steps, c, k), lambda c: -c, row)
        return [tg.vmap(one)(rows, n[:rows.shape[0]])]
    return fn, f"vmap-{'switch' if switch else 'cond'}(batched): " + " ".join(s[1] for s in steps)


def _vmap_scan_promoted(draw: Any, dt: np.dtype) -> tuple:
    steps = draw(body(dt))

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        def one(row: Any) -> Any:   # (the initial carry is not batched, the row is)
            return lax.scan(lambda c, v: (run_body(steps, c + v, np.int32(1)), c),
                            tnp.ones((), dt), row)
        return list(tg.vmap(one)(rows.reshape(rows.shape[0], -1)))
    return fn, "vmap-scan(carry made batched): " + " ".join(s[1] for s in steps)


def _grad_of_loops(draw: Any, dt: np.dtype) -> tuple:
    steps = draw(body(dt, smooth=True))
    reverse, unroll = draw(st.booleans()), draw(st.sampled_from([1, 2, 3]))
    kind = draw(st.sampled_from(["scan", "fori", "scan-cond"]))

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        ws = rows[:3]

        def loss(v: Any) -> Any:
            if kind == "fori":
                c = lax.fori_loop(0, 3, lambda i, c: _moderate(run_body(steps, c, i)), v)
                return tnp.sum(c)
            if kind == "scan-cond":
                def st_(c: Any, w: Any) -> tuple:
                    c = lax.cond(tnp.sum(w) > 0, lambda c: _moderate(run_body(steps, c * w, np.int32(1))),
                                 lambda c: c * dt.type(0.5), c)
                    return c, tnp.sum(c)
                c, ys = lax.scan(st_, v, ws, reverse=reverse)
                return tnp.sum(c) + tnp.sum(ys)
            c, ys = lax.scan(lambda c, w: (_moderate(run_body(steps, c * w, np.int32(1))), c),
                             v, ws, reverse=reverse, unroll=unroll)
            return tnp.sum(c) + tnp.sum(ys * ys)
        out = [tg.grad(loss)(x)]
        if x.ndim == 1 and x.shape[0] <= 5:
            out.append(tg.jacfwd(tg.grad(loss))(x))
        return out
    return fn, f"grad-of-{kind}(reverse={reverse}, unroll={unroll}): " + " ".join(s[1] for s in steps)


def _indexing_in_loop(draw: Any, dt: np.dtype) -> tuple:
    under_vmap = draw(st.booleans())

    def fn(x: Any, rows: Any, n: Any, idx: Any) -> list:
        def run(v: Any) -> Any:
            def step(s: tuple) -> tuple:
                k, v = s
                j = idx[k % idx.shape[0]]
                one = v.dtype.type(1)
                v = v.at[j].add(one, mode="drop").at[j - 3].set(v[0], mode="clip")
                v = v.at[j + 1].mul(v[-1], mode="drop")
                g = v.at[idx].get(mode="fill", fill_value=-5) if v.dtype.kind != "c" else \
                    v.at[idx].get(mode="clip")
                d = lax.dynamic_slice(v, (j,), (min(2, v.shape[0]),))
                v = (lax.dynamic_update_slice(v, d[::-1], (j * 2,))
                     + g[:v.shape[0]].sum().astype(v.dtype))   # (NumPy: int32 sums to int64)
                return k + 1, v
            return lax.while_loop(lambda s: s[0] < 5, step, (np.int32(0), v))[1]
        if under_vmap:
            return [tg.vmap(run)(rows.reshape(rows.shape[0], -1))]
        return [run(x.reshape(-1))]
    return fn, f"indexing-in-while(vmap={under_vmap})"


# part -> (dtype kinds it takes)
PARTS: dict[str, tuple[str, Callable[..., tuple]]] = {
    "vmap_in_scan": ("fci", _vmap_in_scan), "vmap_in_fori": ("fci", _vmap_in_fori),
    "grad_in_while": ("f", _grad_in_while), "jvp_in_scan": ("f", _jvp_in_scan),
    "vmap_while": ("fci", _vmap_while), "vmap_branch": ("fci", _vmap_branch),
    "vmap_scan_promoted": ("fci", _vmap_scan_promoted), "grad_of_loops": ("f", _grad_of_loops),
    "indexing_in_loop": ("fci", _indexing_in_loop),
}
_ROW_SHAPES = [(3,), (5, 3), (4, 2), (9, 4)]


@st.composite
def nested_program(draw: Any, dtypes: tuple = (F64, F64, F32, C64, I32)) -> tuple:
    dt = draw(st.sampled_from(dtypes))
    shape = draw(st.sampled_from(_ROW_SHAPES))   # rows: the batch (leading axis) of x's
    rows = draw(values(dt, shape))
    if dt.kind in "fc":   # (moderate values: loops of steps stay in range)
        rows = np.where(np.isfinite(rows) & (np.abs(rows) < 8), rows, dt.type(0.5)).astype(dt)
    x = rows[0].copy()
    n = np.array(draw(st.lists(st.integers(-1, 5), min_size=9, max_size=9)), np.int32)
    idx = np.array(draw(st.permutations([0, -1, 2, 5, -7, 100, -100, 1, 3])), np.int32)
    names = sorted(k for k, (kinds, _) in PARTS.items() if dt.kind in kinds)
    chosen = draw(st.lists(st.sampled_from(names), min_size=2, max_size=4, unique=True))
    parts = [PARTS[k][1](draw, dt) for k in chosen]

    def f(x: Any, rows: Any, n: Any, idx: Any) -> list:
        # (eagerly, a NumPy array indexed by a traced loop counter raises, as in JAX)
        x, rows, n, idx = (tnp.asarray(v) for v in (x, rows, n, idx))
        out: list = []
        for fn, _ in parts:
            out += fn(x, rows, n, idx)
        return out
    return f, [x, rows, n, idx], [f"[{dt}{shape}] {d}" for _, d in parts]


@fuzz(3)
@given(prog=nested_program())
def test_fuzz_nested_transformations_and_control_flow(prog: tuple) -> None:
    f, args, desc = prog
    with np.errstate(all="ignore"):
        got, want, eager = run_three(f, args)
    low = any(s in d for d in desc for s in ("float32", "complex64"))
    compare(" ; ".join(desc), got, want, eager, [False] * len(got),
            scale=100.0 * (4e6 if low else 1.0))
