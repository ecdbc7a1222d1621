"""Programs with many array inputs of their own take them as one table of data addresses
(``native._addressed``, ``numba_backend/addresses.py``): numba compiled per array argument
an unboxing in its wrapper and 9 values of the program's arguments.  The calls must not
notice: every dtype, layout (transposed, sliced, misaligned, read-only), 0-d and empty
arrays, constants bound once, the machine-code cache, and outputs over an input's memory
(returned as copies: the runner holds the inputs only for the call)."""
from __future__ import annotations

import gc
import re
from typing import Any, List

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import NumbaBackend, addresses, native, objcache  # noqa: E402

from _numba_util import compile_numba, program  # noqa: E402

RNG = np.random.default_rng(7)


def _mixed() -> List[np.ndarray]:
    # float64 arrays too large to pack (> irblock.ARRAY_MAX elements), other dtypes too
    # large to buffer (> SMALL elements) or alone of their dtype (0-d int8, empty int16)
    return [RNG.standard_normal((33, 40)), RNG.standard_normal((40, 33)),
            RNG.standard_normal(1100), RNG.standard_normal((33, 40)).astype(np.float32),
            RNG.integers(-5, 5, (6, 7)).astype(np.int32), RNG.integers(0, 9, 30),
            RNG.standard_normal(20) > 0, (RNG.standard_normal(17) + 1j * RNG.standard_normal(17)),
            np.array(3, np.int8), np.zeros(0, np.int16), RNG.standard_normal((3, 400))]


def mixed(a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, k: Any, z: Any, w: Any) -> Any:
    m = a @ b                                           # f64[33,33]
    s = (d[:, 0] * 2.0 - d[:, 5]) + tnp.sum(a, axis=1)   # float32, promoted to f64
    t = tnp.where(g, tnp.sum(e) * 1.0, c[:20]) + tnp.sum(f) + k
    return m * 0.5 + s[:, None], t, tnp.abs(h) + 1.0, tnp.sum(c) - tnp.sum(w, axis=0), z + 1


def _layouts(args: List[np.ndarray]) -> List[np.ndarray]:
    """The same values as other layouts: transposed, strided, misaligned, read-only."""
    out = list(args)
    out[0] = np.ascontiguousarray(args[0].T).T          # transposed (F order)
    big = np.zeros((40, 66))
    big[:, ::2] = args[1]
    out[1] = big[:, ::2]                                # strided
    raw = np.zeros(args[2].nbytes + 1, np.uint8)
    mis = np.ndarray(args[2].shape, np.float64, buffer=raw.data, offset=1)
    mis[...] = args[2]
    assert not mis.flags.aligned
    out[2] = mis                                        # misaligned
    ro = args[3].copy()
    ro.flags.writeable = False
    out[3] = ro                                         # read-only
    out[10] = np.asfortranarray(args[10])
    return out


def _close(got: Any, want: Any) -> None:
    got, want = tg.tree_util.tree_leaves(got), tg.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_many_arrays_of_every_kind_by_address() -> None:
    args = _mixed()
    jaxpr, full = program(mixed, *args)
    inputs = native._inputs(jaxpr, native.SMALL)
    assert inputs.addressed == tuple(range(11)) and not inputs.packed and not inputs.buffers
    fn = compile_numba(jaxpr)
    assert fn.addressed == inputs.addressed and "_xa" in fn.source
    want = get_backend("numpy").compile(jaxpr)(*full)
    _close(fn(*full), want)
    _close(fn(*_layouts(full)), want)                  # converted as the runner converts
    _close(tg.jit(mixed)(*_layouts(args)), mixed(*args))  # jit against eager
    bad = list(full)
    bad[1] = np.zeros((33, 40))
    with pytest.raises(TypeError, match=r"shape \(33, 40\) where \(40, 33\) was compiled for"):
        fn(*bad)
    with pytest.raises(TypeError, match="takes 11 arguments, got 10"):
        fn(*full[:10])


def test_few_arrays_stay_arguments() -> None:
    # (below ADDRESSED_MIN: numba's own arguments)
    xs = [RNG.standard_normal(1100) for _ in range(native.ADDRESSED_MIN - 1)]
    jaxpr, full = program(lambda *xs: sum(tnp.sin(x) for x in xs), *xs)
    assert native._inputs(jaxpr, native.SMALL).addressed == ()
    assert "_xa" not in NumbaBackend().source(jaxpr)


def _net(n: int, width: int) -> Any:
    params = [(RNG.standard_normal((width, width)) / 6.0, RNG.standard_normal(width) * 0.1,
               np.float64(0.5 + 0.01 * i)) for i in range(n)]
    X = RNG.standard_normal((4, width))

    def loss(p: Any) -> Any:
        h = X
        for W, b, a in p:
            h = h + a * tnp.tanh(h @ W + b)
        return tnp.mean(h ** 2)
    return params, loss


def test_layers_read_from_the_table_in_their_loop() -> None:
    """jit(grad) of a residual MLP written as a Python loop of 33x33 layers: the layers'
    matrices are addressed, read by the loops over the copies; numba against the NumPy
    backend, and a directional derivative against finite differences."""
    params, loss = _net(9, 33)
    leaves, tree = tg.tree_util.tree_flatten(params)
    jaxpr, full = program(lambda *ls: tg.grad(loss)(tg.tree_util.tree_unflatten(tree, ls)), *leaves)
    fn = compile_numba(jaxpr)
    assert len(fn.addressed) == 9
    # (the loops over the copies read the table at the copy's index, no tuple of the arrays)
    program_source = fn.source.split("# ---- unit")[0]
    assert re.search(r"= _at\w*\(_xa, \(\d+ \+ \(1\) \* c\d+\)\)", program_source)
    assert re.search(r"= _at\w*\(_xa, \(\d+ \+ \(-1\) \* c\d+\)\)", program_source)
    assert not re.search(r"= \(x\d+, ", program_source)
    _close(fn(*full), get_backend("numpy").compile(jaxpr)(*full))
    g = tg.jit(tg.grad(loss))(params)
    d = [(RNG.standard_normal(W.shape), RNG.standard_normal(b.shape), 1.0) for W, b, _ in params]
    h = 1e-6

    def at(t: float) -> float:
        return float(loss([(W + t * dW, b + t * db, a + t * da) for (W, b, a), (dW, db, da) in zip(params, d)]))
    fd = (at(h) - at(-h)) / (2 * h)
    dot = sum(float(np.sum(np.asarray(gW) * dW) + np.sum(np.asarray(gb) * db) + float(ga) * da)
              for (gW, gb, ga), (dW, db, da) in zip(g, d))
    assert abs(fd - dot) <= 1e-6 * max(1.0, abs(dot))


def test_outputs_over_an_inputs_memory_are_copies() -> None:
    xs = [RNG.standard_normal((30, 40)) for _ in range(9)]
    keep = [x.copy() for x in xs]

    def f(*xs: Any) -> Any:
        return xs[0].reshape(40, 30), xs[1].T, xs[2].reshape(1200), tnp.sum(tnp.stack(xs[3:]), axis=0)
    jaxpr, full = program(f, *xs)
    fn = compile_numba(jaxpr)
    assert fn.addressed
    outs = fn(*full)
    for o in outs:
        assert not any(np.shares_memory(o, x) for x in xs)
    del full, xs
    gc.collect()
    junk = [np.full((30, 40), 9.0) for _ in range(20)]     # (the freed memory, reused)
    _close(outs, f(*keep))
    assert junk[0][0, 0] == 9.0


def test_bound_constants_by_address() -> None:
    ws = [RNG.standard_normal((34, 34)) for _ in range(10)]

    def f(x: Any) -> Any:
        for w in ws:
            x = tnp.tanh(w @ x)
        return x
    x = RNG.standard_normal(34)
    jitted = tg.jit(f, backend="numba")
    _close(jitted(x), f(x))
    _close(jitted(x * 2.0), f(x * 2.0))


def test_fill_writes_data_addresses() -> None:
    arrays = [np.arange(5.0), np.zeros((3, 4), np.int8)[:, 1:], np.array(1.5), np.zeros(0),
              np.ones(3, np.complex128)]
    want = [a.ctypes.data for a in arrays]
    for fill in (addresses.filler(), addresses._fill_py):
        out = np.zeros(len(arrays), np.int64)
        assert fill(out, *arrays) is out and list(out) == want
        assert fill(np.zeros(0, np.int64)).size == 0
    assert addresses.filler() is not addresses._fill_py    # (CPython's layouts checked out)


def test_machine_code_cache_keeps_the_table(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TANGENTIA_NUMBA_FAST_LOAD", "1")
    xs = [RNG.standard_normal(1100) * (k + 1) for k in range(8)]
    jaxpr, full = program(lambda *xs: (sum(x * x for x in xs), xs[3] - xs[5]), *xs)
    fn = compile_numba(jaxpr, NumbaBackend())
    loaded = objcache.load(jaxpr)
    assert loaded is not None and loaded.entry is not fn.entry
    assert loaded.addressed == fn.addressed == tuple(range(8))
    for a, b in zip(loaded(*full), fn(*full)):
        assert a.tobytes() == b.tobytes()
