"""Small values a compile unit takes from a buffer (issue 23, the fori family): a program's
small inputs of one dtype arrive in one buffer per dtype (``_xb<k>``, concatenated by the
runner: ``objcache.runner``'s ``buffers``, as the float64 ones in ``_xp``), each is scalarized from its view of the buffer
(``native._Views.scalars``), and a unit it is passed to (a loop body, a repeated segment's
copy) takes the view -- one segment of the buffer for many values -- not its elements.
Checked for the numbers: numba against the NumPy backend, jit against eager, gradients
against finite differences, with loop states of 1, 2, 16 and 65 scalars, int64, float64
and bool values, and values that are also outputs of the program.
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

from _numba_util import compile_numba, fd_grad, program  # noqa: E402


def _outputs(fn: Any, args: List[Any]) -> List[np.ndarray]:
    out = fn(*args)
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]


def _against_numpy(f: Callable[..., Any], args: List[Any]) -> Tuple[str, List[np.ndarray]]:
    """The numba program's source and results, checked against the NumPy backend's
    (integers and booleans exactly, floats to rounding)."""
    jaxpr, full = program(f, *args)
    got = _outputs(compile_numba(jaxpr), full)
    want = _outputs(get_backend("numpy").compile(jaxpr), full)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    return get_backend("numba").source(jaxpr), got


def _fori(m: int, n: int) -> Tuple[Callable[..., Any], Callable[[np.ndarray], float], int]:
    """``f`` (a 3-step fori_loop over a state of ``m`` float64 scalars whose body has ``n``
    dynamic slices and updates of width ``w``), the same loss in NumPy, and ``w``."""
    w = max(1, min(4, m // 2))
    top = m - w

    def f(x: Any) -> Any:
        def body(i: Any, s: Any) -> Any:
            for k in range(n):
                v = lax.dynamic_slice_in_dim(s, (i + k) % m, w)
                s = lax.dynamic_update_slice_in_dim(s, tnp.sin(v) * 0.9 + 0.1, (i + 2 * k) % m, 0)
            return s
        return tnp.sum(lax.fori_loop(0, 3, body, x) ** 2)

    def loss(x: np.ndarray) -> float:
        s = x.copy()
        for i in range(3):
            for k in range(n):
                a = min(max((i + k) % m, 0), top)       # (JAX's clamping of the start)
                v = s[a:a + w].copy()
                b = min(max((i + 2 * k) % m, 0), top)
                s[b:b + w] = np.sin(v) * 0.9 + 0.1
        return float(np.sum(s ** 2))
    return f, loss, w


@pytest.mark.parametrize("m", [1, 2, 16, 65])
def test_fori_states_against_numpy_eager_and_finite_differences(m: int) -> None:
    f, loss, _ = _fori(m, 6)
    x = np.linspace(0.1, 0.9, m)
    grad_f = tg.grad(f)
    source, got = _against_numpy(grad_f, [x])
    np.testing.assert_allclose(got[0], fd_grad(loss, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tg.jit(grad_f)(x), grad_f(x), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(tg.jit(f)(x), loss(x), rtol=1e-13)


def test_index_constants_reach_the_units_as_one_buffer() -> None:
    """The fori program's 24 index arrays of 4 elements (two per slice, forward and
    backward) are one int64 buffer, whose segments the repeated copies' units take: the
    program reads (by one call) only the elements its own code uses, and no unit takes
    dozens of scalar parameters."""
    f, _, _ = _fori(16, 6)      # (test_fori_states' m=16 program: compiled once, in one run)
    source, _ = _against_numpy(tg.grad(f), [np.linspace(0.0, 1.0, 16)])
    main = source.split("# ---- unit")[0]
    assert re.search(r"^def program\([^)]*\b_xb0\b", main, re.M), main    # (an argument)
    assert len(re.findall(r"^def program\(([^)]*)\)", main, re.M)[0].split(",")) < 6, main
    reads = re.findall(r"^\s+\((.*)\) = _g\d+\(_xb0\)$", main, re.M)
    assert len(reads) <= 1 and sum(r.count(",") for r in reads) <= 24, reads
    assert "_xb0, " in main                  # (segments of it passed to the units)
    params = [len(p.split(",")) for p in re.findall(r"^def body\(([^)]*)\)", source, re.M)]
    assert params and max(params) < 40, params


def _mixed(n: int = 5) -> Tuple[Callable[..., Any], List[np.ndarray]]:
    """A fori_loop over an (f64[6], i64[6], bool[6]) state, closing over small int64,
    int32, float64 and bool constants (one buffer per dtype)."""
    ci = [np.array([k, k + 2, k + 3]) for k in range(n)]
    ci32 = [np.array([k + 1, 2, -k], np.int32) for k in range(n)]
    cf = [np.linspace(0.5, 1.0, 3) * (k + 1) for k in range(n)]
    cb = [np.array([True, k % 2 == 0, False]) for k in range(n)]

    def f(x: Any) -> Any:
        def body(i: Any, c: Any) -> Any:
            s, t, flag = c
            for k in range(n):
                idx = (ci[k] + i) % 6
                s = s.at[idx].add(tnp.where(cb[k], cf[k], -cf[k]) * tnp.sin(s[idx]))
                t = t.at[idx].add(ci32[k].astype(np.int64) * (i + 1))
                flag = flag.at[idx].set(cb[k] ^ flag[idx])
            return s, t, flag
        s, t, flag = lax.fori_loop(0, 3, body, (x, tnp.zeros(6, np.int64), tnp.zeros(6, bool)))
        return s, t, flag
    return f, [np.linspace(0.1, 0.6, 6)]


def test_int_float_and_bool_values_in_buffers() -> None:
    f, args = _mixed()
    _, got = _against_numpy(f, args)
    eager = _outputs(f, args)
    jitted = _outputs(tg.jit(f), args)
    assert [o.dtype for o in got] == [np.float64, np.int64, np.bool_]
    for a, b, c in zip(got, eager, jitted):
        assert a.dtype == b.dtype == c.dtype
        np.testing.assert_allclose(a, b, rtol=1e-13)
        np.testing.assert_allclose(c, b, rtol=1e-13)

    def loss(x: Any) -> Any:
        s, t, flag = f(x)
        return tnp.sum(s ** 2) + tnp.sum(tnp.where(flag, s, 0.0)) + 0.01 * tnp.sum(t)
    x = args[0]
    _, g = _against_numpy(tg.grad(loss), [x])
    np.testing.assert_allclose(g[0], tg.grad(loss)(x), rtol=1e-12)
    np.testing.assert_allclose(g[0], fd_grad(lambda y: float(loss(y)), x), rtol=1e-6, atol=1e-8)


def test_a_value_passed_to_units_is_also_an_output() -> None:
    """Small inputs that the repeated copies take from a buffer, returned too: the outputs
    have their values and dtypes, and share memory with no argument (before the buffers,
    such an output was the caller's own array: writing into the result changed the
    argument) and with no other output."""
    n = 6

    def f(x: Any, *cs: Any) -> Any:
        y = x
        for k in range(n):
            y = y.at[cs[k] % 8].add(tnp.cos(y[cs[k] % 8]) * 0.5)
        return (y,) + tuple(cs[:3])
    x = np.linspace(0.0, 1.0, 8)
    cs = [np.array([k, k + 1, 7 - k]) for k in range(n)]
    _, got = _against_numpy(f, [x] + cs)
    for o, c in zip(got[1:], cs[:3]):
        assert o.dtype == c.dtype and o.tobytes() == c.tobytes()
    jaxpr, full = program(f, x, *cs)
    out = _outputs(compile_numba(jaxpr), full)      # (numba's code itself, not tier 0's)
    for k, o in enumerate(out):
        assert not any(np.shares_memory(o, a) for a in full), k
        assert not any(np.shares_memory(o, p) for j, p in enumerate(out) if j != k), k
    out[1][...] = -5
    for k, c in enumerate(cs):
        np.testing.assert_array_equal(c, [k, k + 1, 7 - k])
    np.testing.assert_array_equal(out[2], cs[1])
    np.testing.assert_allclose(out[0], np.asarray(tg.jit(f)(x, *cs)[0]), rtol=1e-13)
    np.testing.assert_allclose(out[0], np.asarray(f(tnp.asarray(x), *cs)[0]), rtol=1e-13)


def test_the_runner_concatenates_buffers_and_binds_their_prefix() -> None:
    """The runner concatenates each dtype's small inputs into its buffer (``buffers``),
    also when ``bind`` takes some of them as constants: every split of the inputs into
    bound constants and call arguments gives the NumPy backend's numbers, an argument of
    another dtype is converted, and one of the wrong shape is refused."""
    n = 5
    ci = [np.array([k, k + 2, 7 - k]) for k in range(n)]
    ci32 = [np.array([k + 1, 3, 6 - k], np.int32) for k in range(n)]
    cb = [np.array([k % 2 == 0, True, False]) for k in range(n)]

    def f(x: Any, *cs: Any) -> Any:
        y = x
        for k in range(n):
            i, j, b = cs[3 * k], cs[3 * k + 1], cs[3 * k + 2]
            y = y.at[i % 8].add(tnp.where(b, tnp.cos(y[j % 8]), -0.5) * (k + 1))
        return y, cs[1]
    x = np.linspace(0.0, 1.0, 8)
    cs = [c for k in range(n) for c in (ci[k], ci32[k], cb[k])]
    jaxpr, full = program(f, x, *cs)
    run = compile_numba(jaxpr)
    assert sorted(np.dtype(dt).name for dt, _ in run.buffers) == ["bool", "int32", "int64"]
    want = _outputs(get_backend("numpy").compile(jaxpr), full)
    got = _outputs(run, full)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-13)
    for k in range(len(full) + 1):
        bound = run.bind(full[:k])
        for g, w in zip(_outputs(bound, full[k:]), want):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-13, err_msg=f"{k} bound")
    # (an int32 array where int64 was compiled for: converted, as any argument)
    other = [a.astype(np.int32) if a.dtype == np.int64 else a for a in full]
    np.testing.assert_allclose(_outputs(run, other)[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(_outputs(run.bind(other[:4]), other[4:])[0], want[0], rtol=1e-13)
    bad = list(full)
    bad[2] = np.arange(4, dtype=np.int32)
    with pytest.raises(TypeError, match="compiled program: an argument of shape"):
        run(*bad)
    with pytest.raises(TypeError, match="compiled program: an argument of shape"):
        run.bind(bad[:1])(*bad[1:])
    with pytest.raises(TypeError, match="compiled program: an argument of shape"):
        run.bind(bad[:3])
