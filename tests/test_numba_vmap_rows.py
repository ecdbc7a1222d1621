"""vmap's row loops and loop carries under the numba backend, differentially.

What the generator does with them (``codegen._Gen.lower_rows``, ``fresh_vars``,
``from_names``, ``assign_all``, ``packed``): a batched value too large to scalarize
but with small rows is computed in one loop over the rows, each row read and written
by one call (``rowio``) and runs of row equations emitted as IR blocks; scalarized
loop carries live in tuples whose elements are read where they are used, never into
names of their own, and are handed whole to the calls that take them all.

Each program is compiled by both backends and run on the same inputs (rtol 1e-12),
and ``vmap`` is checked against a Python loop over the examples.  Shapes are drawn
from two batch sizes per program (each a compile, cached on disk after the first
run), hypothesis varies the values.
"""
from __future__ import annotations

import re
import warnings

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
from _programs import loop_body  # noqa: E402

NUMBA = nbb.NumbaBackend()
FEW = settings(max_examples=4, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FLOATS = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False, width=64)


def _program(f, *args):
    closed = tg.make_jaxpr(f)(*args)
    return convert_constvars_to_invars(closed.jaxpr), list(closed.consts) + list(args)


def _both(f, *args):
    """(numba results, NumPy backend results, numba source) of ``f``'s program."""
    jaxpr, full = _program(f, *args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = NUMBA.compile(jaxpr)
    assert not [w for w in caught if "numba backend: cannot" in str(w.message)]
    got = fn(*full)
    want = get_backend("numpy").compile(jaxpr)(*full)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    return got, want, NUMBA.source(jaxpr)


def _loop_of(f, *args, in_axes):
    """``vmap(f, in_axes)(*args)`` written as a loop over the examples."""
    n = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
            for i in range(n)]
    return [np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0]))]


def _row_loops(src):
    """The bodies of the generated loops over rows (``for iN in range(B):`` whose body
    reads or writes rows), as text."""
    lines, bodies = src.splitlines(), []
    for k, line in enumerate(lines):
        if re.match(r"\s*for i\d+ in range\(\d+\):$", line):
            indent = len(line) - len(line.lstrip())
            body = []
            for nxt in lines[k + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                body.append(nxt)
            text = "\n".join(body)
            if "_ld" in text or "_st" in text:
                bodies.append(text)
    return bodies




def _rows(draw, b, n):
    return draw(hnp.arrays(np.float64, (b, n), elements=FLOATS))


# -- row loops ------------------------------------------------------------------

def _poly(x, w):
    # rows of 3: elementwise, broadcasts against a shared row, a select, exp/log1p (IR of
    # their own in a block, vectorizable), a reduction of the row at the end
    y = x * w + 0.5 * x * x - w
    z = tnp.where(y > 0.0, tnp.exp(-y * y), tnp.log1p(y * y)) * (x - 1.25)
    return y * z + x, tnp.sum(z * w)


@FEW
@given(st.data())
def test_row_loop_blocks_match_the_numpy_backend_and_a_loop(data):
    b = data.draw(st.sampled_from([24, 33]))     # 72 and 99 elements: rows, not a block
    x, w = _rows(data.draw, b, 3), data.draw(hnp.arrays(np.float64, 3, elements=FLOATS))
    f = tg.vmap(_poly, in_axes=(0, None))
    got, _, src = _both(f, x, w)
    for g, want in zip(got, _loop_of(_poly, x, w, in_axes=(0, None))):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
    rows = _row_loops(src)
    assert rows, src
    # one call per row read and written, and the row's equations in one block
    assert any("_blk" in r and re.search(r"= _ld\d+\(", r) and re.search(r"_st\d+\(", r)
               for r in rows), rows
    assert not any(re.search(r"\ba\d+\[i\d+, \d+\] = ", r) for r in rows), rows


def _osc(x, p):
    # the pendulum's right-hand side per row (a stack of the row's elements), with sin,
    # cos and tanh (computed out of line in a block: rows of them are statements)
    v = tnp.stack([x[1] * p[0], -p[0] * x[1] - p[1] * tnp.sin(x[0])])
    w = tnp.tanh(v) * tnp.cos(x)
    return w * w - x, tnp.sum(w * v)


@FEW
@given(st.data())
def test_row_loops_with_sin_and_tanh(data):
    b = data.draw(st.sampled_from([33, 40]))     # 66 and 80 elements: rows, not a block
    x, p = _rows(data.draw, b, 2), _rows(data.draw, b, 2)
    f = tg.vmap(_osc)
    got, _, src = _both(f, x, p)
    for g, want in zip(got, _loop_of(_osc, x, p, in_axes=(0, 0))):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
    assert _row_loops(src), src


def _twice_in_a_loop(f):
    """``f`` applied in each of two iterations of a ``fori_loop`` (to the same inputs):
    the same operations inside a loop body."""
    def g(x, p):
        def body(i, acc):
            return tuple(a + 0.0 * i + r for a, r in zip(acc, f(x, p)))
        outs = f(x, p)
        return lax.fori_loop(0, 2, body, tuple(tnp.zeros_like(o) for o in outs))
    return g


@FEW
@given(st.data())
def test_batched_values_of_a_few_dozen_elements_are_blocks_outside_loops(data):
    # f64[b, 3], a few rows (b <= irblock.FEW_ROWS) of 17-64 elements: outside a loop
    # body, one IR block (read from the arrays, no row loop: irblock._eligible); inside
    # one, the row loop LLVM vectorizes (rules.loop_body).  Both compute each element with
    # the same operations: the sums of two iterations are the loop's bits, twice the block's.
    b = data.draw(st.sampled_from([6, 8]))       # 18 and 24 elements
    x, p = _rows(data.draw, b, 3), data.draw(hnp.arrays(np.float64, 3, elements=FLOATS))
    f = tg.vmap(_poly, in_axes=(0, None))
    got, _, src = _both(f, x, p)
    for g, want in zip(got, _loop_of(_poly, x, p, in_axes=(0, None))):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
    assert "_blk" in src and not _row_loops(src), src
    looped, _, lsrc = _both(_twice_in_a_loop(f), x, p)
    assert _row_loops(lsrc), lsrc
    for g, w in zip(got, looped):
        assert np.array_equal(np.asarray(g) * 2.0, w)      # (x + x is exact: 2x)


def _euler_loss(p, y0):
    # 6 explicit steps of a damped pendulum with parameters p = (b, c); grad through a scan
    def step(y, _):
        dy = tnp.stack([y[1], -p[0] * y[1] - p[1] * tnp.sin(y[0])])
        return y + 0.1 * dy, y[0]
    y, ys = lax.scan(step, y0, None, length=6)
    return tnp.sum(y * y) + 0.5 * tnp.sum(ys)


@FEW
@given(st.data())
def test_vmap_grad_of_a_scan_matches_a_loop_of_grads(data):
    # 4 sets: every batched value scalarized (tuple carries); 12 sets: row loops in the scan
    b = data.draw(st.sampled_from([4, 12]))
    P = np.stack([data.draw(hnp.arrays(np.float64, b, elements=st.floats(0.1, 0.5))),
                  data.draw(hnp.arrays(np.float64, b, elements=st.floats(2.0, 6.0)))], axis=1)
    y0 = np.array([data.draw(st.floats(-2.0, 2.0)), data.draw(st.floats(-1.0, 1.0))])
    f = tg.vmap(tg.grad(_euler_loss), in_axes=(0, None))
    got, _, _ = _both(f, P, y0)
    want = np.stack([np.asarray(tg.grad(_euler_loss)(p, y0)) for p in P])
    np.testing.assert_allclose(got[0], want, rtol=1e-10, atol=1e-12)
    eps = 1e-6
    fd = np.array([(_euler_loss(p + eps * np.eye(2)[1], y0) - _euler_loss(p - eps * np.eye(2)[1], y0))
                   / (2 * eps) for p in P])
    np.testing.assert_allclose(got[0][:, 1], fd, rtol=1e-6, atol=1e-8)


# -- loop carries in tuples ----------------------------------------------------

def _swap_loop(x, k):
    # 1 + 4 * 16 + 1 carry elements (> CARRY_SCALARS: a tuple per value): a swap
    # (each tuple assigned from one assigned in the same step), a carry passed through
    # unchanged, an integer and a boolean
    def body(c):
        i, a, b, d, e, flag = c
        return i + 1, b, a, d, e + tnp.where(flag, a, -b) + 0.5 * d, ~flag
    return lax.while_loop(lambda c: c[0] < k, body,
                          (0, x, x[::-1] + 1.0, x * x, tnp.zeros_like(x), False))


@FEW
@given(st.data())
def test_swapped_and_unchanged_tuple_carries(data):
    x = data.draw(hnp.arrays(np.float64, 16, elements=FLOATS)).reshape(2, 8)
    k = data.draw(st.integers(0, 5))
    got, want, src = _both(_swap_loop, x, k)
    eager = _swap_loop(x, k)
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, np.asarray(e), rtol=1e-12, atol=1e-14)
    # no tuple element is read into a name but where the tuple is assigned again: the
    # swap's two tuples; the unchanged one is not assigned in the loop
    reads = re.findall(r"^\s*s\d+ = ct\d+\[\d+\]$", src, re.M)
    assert len(reads) == 32, src
    assert len(re.findall(r"^\s*ct\d+ = ", loop_body(src, "while True:"), re.M)) == 3, src


def _nested(x, n):
    # an inner loop whose carry starts as the outer carry (a whole tuple copied), inside a
    # scan (a shared tuple of small carries: 2 + 1 + 1 elements)
    def outer(c, t):
        y, s = c

        def inner(d):
            z, j = d
            return tnp.stack([z[1], -z[0]]) * 0.9 + t, j + 1
        z, _ = lax.while_loop(lambda d: d[1] < n, inner, (y, 0))
        return (z, s + z[0] * t), z[1]
    return lax.scan(outer, (x, 0.0), np.linspace(0.0, 1.0, 5))


@FEW
@given(st.data())
def test_nested_loops_carry_tuples_across(data):
    x = data.draw(hnp.arrays(np.float64, 2, elements=FLOATS))
    n = data.draw(st.integers(0, 4))
    got, _, _ = _both(_nested, x, n)
    eager = tg.tree_util.tree_leaves(_nested(x, n))
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, np.asarray(e), rtol=1e-12, atol=1e-14)


def test_a_batched_while_loop_passes_its_carries_whole():
    # vmap of a while loop over 8 sets: 40+ tuples of 8 or 16 scalars; the body (a compile
    # unit or a block) takes them as tuples, not one statement per element
    def f(p):
        def body(c):
            i, y, v = c
            return i + 1, y + 0.1 * v, v - 0.1 * p * tnp.sin(y)
        return lax.while_loop(lambda c: c[0] < 20, body, (0, tnp.ones(2), tnp.zeros(2)))[1:]
    P = np.linspace(0.5, 2.0, 8)
    got, _, src = _both(tg.vmap(f), P)
    want = _loop_of(f, P, in_axes=(0,))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    assert not re.findall(r"^\s*s\d+ = ct\d+\[\d+\]$", src, re.M), src
