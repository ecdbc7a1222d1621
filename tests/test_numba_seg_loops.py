"""Consecutive copies of a repeated segment emitted as one loop (``codegen._Gen.emit_run``).

A network written as a Python loop over its layers repeats one segment per layer (and its
transposed copy per layer in ``grad``).  The copies in a row are one loop calling the
segment's function: inputs read from the packed parameters at a constant stride, the
carried value threaded through, the values read later written into stacks, and program
outputs returned as rows of a stack.  The numbers must be those of the copies emitted one
call each, bit for bit, and of the NumPy backend; outputs must not share memory.

Each program is compiled once with the loops on and once with them off (the reference) for
the whole module (``_compiled``): the tests share them (numba's compiles are the module's
CPU time).  Runs of copies start at ``codegen.SEG_MIN_COPIES`` (3): the programs hold runs
of 1, 2, 3 and more than 3 copies.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import codegen, objcache  # noqa: E402

from _numba_util import compile_numba, empty_cache, program  # noqa: E402

Case = Tuple[Callable[..., Any], List[Any]]


def _params(n: int, width: int = 5) -> List[Any]:
    rng = np.random.default_rng(n)
    return [(rng.standard_normal((width, width)) / width, rng.standard_normal(width) * 0.1,
             np.float64(0.5 + 0.1 * i)) for i in range(n)]


def _mlp_loss(odd: Tuple[int, ...] = (), width: int = 5, batch: int = 4) -> Callable[[Any], Any]:
    """The loss of a residual MLP (a matrix, a bias and a gain a layer); the layers ``odd``
    compute something else (they interrupt the runs of copies)."""
    X = np.random.default_rng(99).standard_normal((batch, width))

    def loss(p: Any) -> Any:
        h = X
        for i, (W, b, a) in enumerate(p):
            if i in odd:
                h = h * tnp.sin(h @ W) - b
            else:
                h = h + a * tnp.tanh(h @ W + b)
        return tnp.mean(h ** 2)
    return loss


def _mlp(n: int, odd: Tuple[int, ...] = (), width: int = 5) -> Case:
    """grad of that MLP of n layers."""
    return tg.grad(_mlp_loss(odd, width)), [_params(n, width)]


def _activations(n: int) -> Case:
    """Every layer's activation a program output (no grad): the carried value's rows."""
    X = np.random.default_rng(7).standard_normal((4, 5))

    def f(p: Any) -> Any:
        h, hs = X, []
        for W, b, a in p:
            h = h + a * tnp.tanh(h @ W + b)
            hs.append(h)
        return hs, tnp.sum(h)
    return f, [_params(n)]


# The module's programs: (case, loops at least).  "mlp6": the forward run of 6 copies, the
# backward run of 5 (the first layer's transposed copy computes no cotangent of the input);
# "runs": runs of 1, 2 and 3 copies between layers of another kind; "wide": matrices too
# large to be packed (33x33 > irblock.ARRAY_MAX); "acts": every layer's activation an output.
_CASES: Dict[str, Tuple[Callable[[], Case], int]] = {
    "mlp6": (lambda: _mlp(6), 2),
    "runs": (lambda: _mlp(8, (1, 4)), 2),
    "wide": (lambda: _mlp(5, width=33), 2),
    "acts": (lambda: _activations(5), 1),
}


class _Compiled:
    """One program compiled with the loops on (``fn``, in the cache ``cache``) and off."""
    jaxpr: Any
    args: List[Any]
    fn: Any
    cache: str
    looped: List[np.ndarray]
    calls: List[np.ndarray]
    copies: Tuple[int, int]     # (off, on)
    loops: Tuple[int, int]      # (off, on)
    min_loops: int


def _run(jaxpr: Any, loops: str, mp: pytest.MonkeyPatch) -> Tuple[Any, str, int, int]:
    """Compiled with TANGENTIA_NUMBA_SEG_LOOPS=loops in a fresh cache: (fn, cache, copies, loops)."""
    mp.setenv("TANGENTIA_NUMBA_SEGMENTS", "1")
    mp.setenv("TANGENTIA_NUMBA_SEG_LOOPS", loops)
    cache = empty_cache(mp, "tangentia_seg_loops_")
    c0, l0 = codegen.SEG_STATS["copies"], codegen.SEG_STATS["loops"]
    fn = compile_numba(jaxpr)
    return fn, cache, codegen.SEG_STATS["copies"] - c0, codegen.SEG_STATS["loops"] - l0


@pytest.fixture(scope="module")
def compiled() -> Iterator[Callable[[str], _Compiled]]:
    memo: Dict[str, _Compiled] = {}

    def get(name: str) -> _Compiled:
        if name not in memo:
            make, min_loops = _CASES[name]
            f, fargs = make()
            r = _Compiled()
            r.min_loops = min_loops
            with pytest.MonkeyPatch.context() as mp:
                # (each compile its own program: a backend keeps what it compiled by program)
                jaxpr, args = program(f, *fargs)
                off, _, c_off, l_off = _run(jaxpr, "0", mp)
                r.jaxpr, args = program(f, *fargs)
                mp.setenv("TANGENTIA_NUMBA_FAST_LOAD", "1")    # (the machine code kept in r.cache)
                r.fn, r.cache, c_on, l_on = _run(r.jaxpr, "1", mp)
                r.args = tg.tree_util.tree_leaves(args)
                r.calls = list(off(*r.args))
                r.looped = list(r.fn(*r.args))
            r.copies, r.loops = (c_off, c_on), (l_off, l_on)
            memo[name] = r
        return memo[name]
    yield get


def _check(r: _Compiled) -> List[np.ndarray]:
    """Loops where there were copies, bit for bit as the copies called one by one, and as
    the NumPy backend's numbers."""
    assert r.loops[0] == 0 and r.copies[0] == r.copies[1]
    assert r.loops[1] >= r.min_loops
    assert len(r.looped) == len(r.calls)
    for x, y in zip(r.looped, r.calls):
        assert type(x) is np.ndarray
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
    numpy = get_backend("numpy").compile(r.jaxpr)(*r.args)
    for g, w in zip(r.looped, numpy):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-14)
    return r.looped


def test_layers_as_loops_bit_for_bit(compiled: Callable[[str], _Compiled]) -> None:
    _check(compiled("mlp6"))


def test_unpacked_matrices_in_a_tuple(compiled: Callable[[str], _Compiled]) -> None:
    """Matrices too large to be packed (33x33) are separate arguments: the loop reads
    copy c's from a tuple of them."""
    _check(compiled("wide"))


def test_runs_interrupted_by_other_layers(compiled: Callable[[str], _Compiled]) -> None:
    """Runs of 1, 2 and 3 consecutive copies between layers of another kind (the
    backward run's last copy reads the other layer's value, not a stack's row)."""
    _check(compiled("runs"))


def test_outputs_do_not_share_memory(compiled: Callable[[str], _Compiled]) -> None:
    """The gradients are rows of the loops' stacks: writing into one changes no other."""
    r = compiled("mlp6")
    _check(r)
    out = list(r.fn(*r.args))       # (this test's own: it writes into them)
    assert len(out) == 18
    for i, a in enumerate(out):
        for b in out[i + 1:]:
            assert not np.shares_memory(a, b)
    before = [o.copy() for o in out]
    for o in out:
        o[...] = -7.0
    out[4][...] = 3.0
    for k, (o, b) in enumerate(zip(out, before)):
        assert (o == (3.0 if k == 4 else -7.0)).all()
    for x, y in zip(r.fn(*r.args), r.looped):   # a new call's outputs are new arrays
        assert x.tobytes() == y.tobytes()


def test_carried_values_as_outputs(compiled: Callable[[str], _Compiled]) -> None:
    """A loop's carried value of every copy is a program output (rows of its stack)."""
    out = _check(compiled("acts"))
    f, args = _activations(5)
    eager = tg.tree_util.tree_leaves(f(*args))
    assert len(out) == len(eager) == 6
    for g, w in zip(out, eager):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-14)


def test_grad_against_finite_differences(compiled: Callable[[str], _Compiled]) -> None:
    """The looped program's gradients (layers 0, 2, 5: a loop's first, middle and last
    copy) against central differences of the loss."""
    grads = compiled("mlp6").looped
    loss, params = _mlp_loss(), _params(6)
    eps = 1e-6
    for li in (0, 2, 5):
        for which, idx in ((0, (1, 3)), (1, (2,)), (2, ())):
            def at(d: float) -> float:
                q = [[np.array(x, dtype=float) for x in layer] for layer in params]
                q[li][which][idx] += d
                return float(loss(q))
            fd = (at(eps) - at(-eps)) / (2 * eps)
            got = grads[3 * li + which][idx]
            np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-9)


def test_jit_against_eager() -> None:
    f, args = _mlp(7, odd=(3,))
    got = tg.tree_util.tree_leaves(tg.jit(f, backend="numba")(*args))
    want = tg.tree_util.tree_leaves(f(*args))
    assert len(got) == len(want) == 21
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-14)


def test_loaded_machine_code_splits_the_same(compiled: Callable[[str], _Compiled],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine-code cache keeps where the outputs are in the returned stacks: the
    looped program, loaded from the cache its compile saved to, splits the same."""
    r = compiled("mlp6")
    assert r.fn.split is not None
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", r.cache)
    monkeypatch.setenv("TANGENTIA_NUMBA_FAST_LOAD", "1")
    monkeypatch.setenv("TANGENTIA_NUMBA_SEGMENTS", "1")
    monkeypatch.setenv("TANGENTIA_NUMBA_SEG_LOOPS", "1")
    loaded = objcache.load(r.jaxpr)
    assert loaded is not None and loaded.split == r.fn.split
    a = loaded(*r.args)
    assert len(a) == len(r.looped) == 18
    for x, y in zip(a, r.looped):
        assert x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
