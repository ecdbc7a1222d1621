"""jit's results are fresh arrays, as JAX's (new buffers): an output that is one of the
program's inputs (``jit(lambda x: x)``), one of its captured constants, or a repeat of
another output (``lambda x: (x, x)``) is a copy, on the NumPy backend, the numba backend
untiered, and both tiers of a tiered numba program (``compiler.backend.compile_program``,
``_FreshOutputs``).  Checked by writing into the results: neither the caller's arrays,
nor the next call's results, nor another result of the same call change.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Tuple

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.compiler import backend as B

_W = np.array([1.0, -2.0, 3.5])


def _cases() -> Dict[str, Tuple[Callable[..., Any], Callable[[], List[Any]]]]:
    w = _W.copy()
    return {
        "identity": (lambda x: x, lambda: [np.arange(4.0)]),
        "twice": (lambda x: (x, x), lambda: [np.arange(4.0)]),
        "input_and_new": (lambda x: (x, x + 1.0), lambda: [np.arange(4.0)]),
        "int_input": (lambda x, i: (i, x * 2.0), lambda: [np.arange(4.0), np.arange(6)]),
        "constant": (lambda x: (x * 1.0, w), lambda: [np.arange(3.0)]),
        "computed_twice": (lambda x: (lambda y: (y, y))(tnp.sin(x)), lambda: [np.arange(4.0)]),
        # (5 small int inputs: the numba backend's buffer of them; returned as they are)
        "int_buffer": (lambda x, *cs: (x + 1.0,) + tuple(cs),
                       lambda: [np.arange(4.0)] + [np.arange(3) + k for k in range(5)]),
    }


def _check(fn: Callable[..., Any], f: Callable[..., Any], make: Callable[[], List[Any]]) -> None:
    args = make()
    keep = [a.copy() for a in args]
    want = [np.asarray(o) for o in tg.tree_util.tree_leaves(f(*make()))]
    for call in range(3):
        outs = [np.asarray(o) for o in tg.tree_util.tree_leaves(fn(*args))]
        assert len(outs) == len(want)
        for k, (o, w) in enumerate(zip(outs, want)):
            assert o.dtype == w.dtype and o.shape == w.shape
            np.testing.assert_array_equal(o, w, err_msg=f"call {call}, output {k}")
            assert not any(np.shares_memory(o, a) for a in args), (call, k)
            assert not any(np.shares_memory(o, p) for j, p in enumerate(outs) if j != k), (call, k)
        for o in outs:
            if o.flags.writeable:
                o[...] = 7
        for a, b in zip(args, keep):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(_W, [1.0, -2.0, 3.5])


@pytest.fixture
def untiered() -> Iterator[None]:
    tg.config.update("jit_tiered", False)
    try:
        yield
    finally:
        tg.config.update("jit_tiered", None)


@pytest.mark.parametrize("name", sorted(_cases()))
def test_numpy_backend(name: str, untiered: None) -> None:
    f, make = _cases()[name]
    _check(tg.jit(f, backend="numpy"), f, make)


@pytest.mark.parametrize("name", ["identity", "twice", "constant", "int_buffer"])
def test_numba_backend_untiered(name: str, untiered: None) -> None:
    pytest.importorskip("numba")
    f, make = _cases()[name]
    _check(tg.jit(f, backend="numba"), f, make)


def _tier(fn: Any) -> Any:
    """The Tiered object a call-cache entry runs (through its copying wrapper), or None."""
    fn = getattr(fn, "fn", fn)
    fn = getattr(fn, "func", fn)        # (a functools.partial binding the constants)
    return fn if type(fn) is B.Tiered else None


def test_both_tiers_of_a_tiered_numba_program() -> None:
    """The NumPy tier's calls (the first ones) and the native code's (after the switch)."""
    pytest.importorskip("numba")
    f, make = _cases()["int_buffer"]
    g, make_c = _cases()["constant"]
    tg.config.update("jit_tiered", True)
    try:
        jf, jg = tg.jit(f, backend="numba"), tg.jit(g, backend="numba")
        _check(jf, f, make)             # (NumPy tier: the compile is queued at the 2nd call)
        _check(jg, g, make_c)
        B.wait_for_compiles(300)
        for j in (jf, jg):     # (the native code, in the Tiered or in its place in the cache)
            fns = [fn for cache in j.fast_caches.values() for fn, _, _ in cache.values()]
            assert fns and all(_tier(fn) is None or _tier(fn).native is not None for fn in fns), fns
        _check(jf, f, make)             # (native code)
        _check(jg, g, make_c)
    finally:
        B.wait_for_compiles(300)
        tg.config.update("jit_tiered", None)


def test_programs_without_such_outputs_are_not_wrapped() -> None:
    """Only programs with an output that is an input or a repeat pay for copies."""
    x = tnp.arange(3.0)
    jaxpr = tg.make_jaxpr(lambda x: (x * 2.0, x + 1.0))(x).jaxpr
    assert B._aliased_outputs(jaxpr) == ()
    jaxpr = tg.make_jaxpr(lambda x: (x * 2.0, x, x))(x).jaxpr
    assert B._aliased_outputs(jaxpr) == (1, 2)
