"""A corpus of programs whose numba source is generated (never compiled): the
benchmark programs (``benchmarks/bench_cold.py``'s cases, the pendulum gradient,
the MLP, scan, vmap/jacfwd/Newton) and programs drawn from
``tests/test_numba_backend.py`` (every representation: scalarized, lazy, array,
row by row, blocks, units, outlined bodies, kernels, object mode, complex).

The tests check that generation is deterministic (the disk cache's key is the
source text) and a few structural facts of the generated code.  Run as a script,
this module prints one hash per program (and the generation time of the largest
ones with ``--time``): a refactor of the backend that must not change the
generated code compares these hashes before and after, e.g. against an older
clone with ``PYTHONPATH=<clone> python tests/test_numba_codegen_golden.py``.
No hash is frozen in a test: a legitimate change of the generated code would
break it for no reason.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.numba_backend import native  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402

Case = Callable[[], Tuple[Callable[..., Any], List[Any]]]


def _pend(y, t, b, c):
    return tnp.stack([y[1], -b * y[1] - c * tnp.sin(y[0])])


def _ode_loss(n):
    from tangentia.experimental.ode import odeint
    y0, ts = np.array([np.pi - 0.1, 0.0]), np.linspace(0.0, 10.0, n)

    def loss(p):
        return tnp.sum(odeint(_pend, y0, ts, p[0], p[1])[-1] ** 2)
    return loss


def _elementwise10(x):
    for i in range(10):
        x = tnp.sin(x) * 1.1 + 0.1 if i % 2 else tnp.exp(-x * x)
    return x


def _scan_case(T):
    rng = np.random.default_rng(0)
    W = rng.standard_normal((8, 8)) / 3.0
    xs = rng.standard_normal((T, 8))

    from _programs import scan_tanh_loss
    return tg.grad(scan_tanh_loss(xs)), [W, np.ones(8)]


def _mlp():
    rng = np.random.default_rng(0)
    params = [rng.standard_normal((8, 32)) * 0.3, np.zeros(32),
              rng.standard_normal((32, 1)) * 0.3, np.zeros(1)]
    X, Y = rng.standard_normal((64, 8)), rng.standard_normal((64, 1))

    def loss(p, X, Y):
        h = tnp.tanh(X @ p[0] + p[1])
        return tnp.mean((h @ p[2] + p[3] - Y) ** 2)
    return tg.grad(loss), [params, X, Y]


def _mlp_sgd():
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [(rng.standard_normal((m, n)) / np.sqrt(m), np.zeros(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    X, Y = rng.standard_normal((128, 784)), np.eye(10)[rng.integers(0, 10, 128)]

    def loss(p, X, Y):
        h = X
        for W, b in p[:-1]:
            h = tnp.tanh(h @ W + b)
        logits = h @ p[-1][0] + p[-1][1]
        logits = logits - tnp.max(logits, axis=1, keepdims=True)
        return -tnp.mean(tnp.sum(Y * (logits - tnp.log(tnp.sum(tnp.exp(logits), axis=1,
                                                                 keepdims=True))), axis=1))

    def step(p, X, Y):
        g = tg.grad(loss)(p, X, Y)
        return [(W - 0.01 * gW, b - 0.01 * gb) for (W, b), (gW, gb) in zip(p, g)]
    return step, [params, X, Y]


def _newton(a):
    def cond(s):
        x, i = s
        return (tnp.abs(x * x - a) > 1e-12) & (i < 50)

    def body(s):
        x, i = s
        return 0.5 * (x + a / x), i + 1
    return lax.while_loop(cond, body, (a, 0))[0]


def _per_example():
    rng = np.random.default_rng(0)
    p = [rng.standard_normal((32, 64)) * 0.2, np.zeros(64), rng.standard_normal(64) * 0.2]
    X, Y = rng.standard_normal((256, 32)), rng.standard_normal(256)

    def loss(p, x, y):
        return (tnp.tanh(x @ p[0] + p[1]) @ p[2] - y) ** 2
    return tg.vmap(tg.grad(loss), in_axes=(None, 0, 0)), [p, X, Y]


def _hvp():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((256, 256)) / 16.0

    def f(x):
        return tnp.sum(tnp.tanh(A @ x) ** 2)
    return (lambda x, v: tg.jvp(tg.grad(f), (x,), (v,))[1],
            [rng.standard_normal(256), rng.standard_normal(256)])


def _chain(n):
    def f(x):
        for i in range(n):
            x = tnp.sin(x) * 1.01 + 0.1 if i % 3 == 0 else (x * x * 0.5 if i % 3 == 1
                                                             else tnp.cos(x) - x)
        return tnp.sum(x)
    return tg.grad(f), [np.linspace(0.0, 1.0, 8)]


from _programs import rk_loop as _rk_loop  # noqa: E402  (shared with the other numba tests)


def _unary(x):
    return [tnp.sin(x), tnp.cos(x), tnp.exp(x), tnp.log1p(tnp.abs(x)), tnp.expm1(x),
            tnp.tanh(x), tnp.arctan(x), tnp.sqrt(tnp.abs(x)), tnp.cbrt(x), tnp.sign(x),
            tnp.floor(x), tnp.round(x), tnp.isnan(x), tnp.signbit(x), x ** 3, x ** 2,
            lax.erf(x), lax.lgamma(tnp.abs(x) + 1.0), -x]


def _binary(x, y):
    return [x + y, x - y, x * y, x / (y + 10.0), x ** 2.0, tnp.maximum(x, y),
            tnp.minimum(x, y), tnp.arctan2(x, y), x % 3.0, x // 2.0, x == y, x < y,
            (x > 0) & (y < 0), (x > 0) ^ (y < 0), tnp.copysign(x, y),
            x.astype(np.int64) & 3, x.astype(np.float32) * 2.0]


def _reductions(x):
    return [tnp.sum(tnp.exp(x) * 2 + x, axis=0), tnp.max(tnp.abs(x), axis=1),
            tnp.argmax(x, axis=0), tnp.mean(x * x), tnp.prod(x[:, :2] + 1.0, axis=0),
            tnp.min(x, axis=1), tnp.any(x > 0, axis=0), tnp.argmin(x, axis=1)]


def _moves(x, i):
    shape = x.shape
    return [x.reshape(-1), x.T, tnp.broadcast_to(x[:, :1], shape),
            tnp.concatenate([x, x.astype(np.int64)], axis=1),
            tnp.concatenate([x[:1], x], axis=0), tnp.stack([x, 2 * x]),
            x[1], x[:, ::-1], x[None, 1:3], x[..., 0], x[-1, -1], x[i], x[-i, i],
            tnp.expand_dims(x, 0) + x[:, None, :]]


def _updates(x, y, i):
    return [x.at[1].set(y), x.at[-1].add(y), x.at[1:].mul(y), x.at[i].min(-1.0),
            x.at[0].max(100.0), x.at[i].add(x[0]), x.astype(np.int64).at[0].add(1.7)]


def _dots(x, y, v):
    return [x @ y, tnp.tensordot(x, x, axes=(0, 0)), x.astype(np.float32) @ y.astype(np.float32),
            x[:3, :3] @ y[:3, :2], v @ v, x.astype(np.int64) @ y.astype(np.int64),
            tnp.einsum("bij,bjk->bik", x.reshape(5, 8, 6), tnp.broadcast_to(y, (5, 6, 4))),
            tnp.outer(v, v)]


from _programs import branches as _branches, loops as _loops  # noqa: E402
from _programs import nested as _nested  # noqa: E402  (shared with test_numba_backend)


def _custom():
    from _programs import custom_rules_in_scan
    f, _ = custom_rules_in_scan()
    return tg.grad(lambda w, xs: tg.checkpoint(f)(w, xs)), [np.float64(0.7), np.linspace(-1, 1, 9)]


def _rows(v, w):
    u = v.at[1].add(w[0]) * w[1]
    c = tnp.concatenate([u[:2], v[::-1]])
    m = tnp.stack([c[:2], c[2:4]])
    return (tnp.sum(m.T * c[:2], axis=1) + tnp.max(c) - u[-1],
            tnp.cumsum(v)[..., 1:] + c.reshape(5, 1)[1:3, 0])


def _kernels_and_objmode(x):
    return [tnp.sort(x), tnp.cumsum(x), tnp.fft.fft(x).real, tnp.linalg.inv(x.reshape(2, 2) + 3.0),
            lax.reduce_window(x.reshape(2, 2), 0.0, lax.add, (2, 1), (1, 1), "VALID"),
            lax.reduce_window(x.reshape(2, 2), -np.inf, lax.max, (1, 2), (1, 1), "VALID")]


def _complex(z):
    return [z * z + 1j, tnp.exp(z), tnp.abs(z), z.real, tnp.conj(z), tnp.sum(z), z == z,
            tnp.sqrt(z) @ z[:, None]]


def _special(x):
    from tangentia.scipy import special
    return [special.gammaln(x + 2.0), special.erf(x), special.expit(x), special.ndtri(
        tnp.clip(x, 0.1, 0.9)), special.i0e(x)]


def _pools(x):
    return lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2), "VALID")


def _big_lin():
    x = np.linspace(-1, 1, 40)
    return tg.grad(lambda x: tnp.sum(tnp.tanh(x * 2 + 1) ** 2 - x)), [x]


CORPUS: Dict[str, Case] = {
    # benchmarks/bench_cold.py (its cases' programs, unjitted: the programs jit compiles)
    "bench_jit_elementwise": lambda: (_elementwise10, [np.linspace(0.0, 1.0, 8)]),
    "bench_jit_grad_elementwise": lambda: (
        tg.grad(lambda x: tnp.sum(_elementwise10(x))), [np.linspace(0.0, 1.0, 8)]),
    "bench_jit_grad_scan": lambda: _scan_case(100),
    "bench_jit_grad_mlp": _mlp,
    "bench_jit_vmap_jacfwd_newton": lambda: (tg.vmap(tg.jacfwd(_newton)), [np.linspace(1, 4, 8)]),
    "bench_ode_grad": lambda: (tg.grad(_ode_loss(101)), [np.array([0.25, 5.0])]),
    "bench_ode_vmap_grad": lambda: (tg.vmap(tg.grad(_ode_loss(51))), [
        np.stack([np.linspace(0.2, 0.3, 8), np.linspace(4.0, 5.0, 8)], axis=1)]),
    "bench_chain_jit_251": lambda: (tg.grad(lambda x: tnp.sum(
        _chain251(x))), [np.linspace(0.0, 1.0, 8)]),
    "bench_mlp_sgd_784": _mlp_sgd,
    "bench_per_example_grads": _per_example,
    "bench_hvp_256": _hvp,
    "bench_sigmoid": lambda: (tg.grad(lambda x: tnp.sum(1.0 / (1.0 + tnp.exp(-x)))),
                              [np.linspace(-5.0, 5.0, 10 ** 6)]),
    "bench_sizes_300": lambda: _chain(300),
    # tests/test_numba_backend.py and friends
    "unary_small": lambda: (_unary, [np.linspace(-2, 2, 6)]),
    "unary_large": lambda: (_unary, [np.linspace(-2, 2, 20).reshape(4, 5)]),
    "unary_f32": lambda: (_unary, [np.linspace(-2, 2, 20, dtype=np.float32).reshape(4, 5)]),
    "binary_small": lambda: (_binary, [np.linspace(-2, 2, 3), np.float64(0.5)]),
    "binary_large": lambda: (_binary, [np.linspace(-2, 2, 20).reshape(4, 5), np.linspace(1, 2, 5)]),
    "reductions": lambda: (_reductions, [np.linspace(-3, 3, 210).reshape(30, 7)]),
    "reductions_small": lambda: (_reductions, [np.linspace(-3, 3, 6).reshape(2, 3)]),
    "moves_small": lambda: (_moves, [np.arange(6.0).reshape(2, 3), np.int64(1)]),
    "moves_large": lambda: (_moves, [np.arange(30.0).reshape(6, 5), np.int64(1)]),
    "updates_small": lambda: (_updates, [np.arange(3.0), np.float64(2.5), np.int64(-2)]),
    "updates_large": lambda: (_updates, [np.arange(28.0).reshape(7, 4), np.float64(2.5),
                                         np.int64(-2)]),
    "dots": lambda: (_dots, [np.linspace(-1, 1, 240).reshape(40, 6),
                             np.linspace(-1, 1, 240).reshape(60, 4)[:6], np.linspace(0, 1, 50)]),
    "dot_blas": lambda: (lambda x, y: [x @ y[:30], x.T @ x, tnp.einsum("bij,bjk->bik", x.reshape(
        2, 20, 30), y.reshape(2, 30, 10))], [np.ones((40, 30)), np.ones((60, 10))]),
    "loops": lambda: (_loops, [np.array([1.0, 2.0]), np.linspace(0.0, 1.0, 40)]),
    "branches_small": lambda: (_branches, [np.int64(1), np.array([0.3, -1.2])]),
    "branches_large": lambda: (_branches, [np.int64(1), -np.linspace(0.0, 1.0, 30)]),
    "nested": lambda: (_nested, [np.linspace(0.0, 1.0, 11)]),
    "custom_rules": _custom,
    "rk_loop": lambda: (_rk_loop, [np.array([1.0, 0.1])]),
    "rk_loop_vmap8": lambda: (tg.vmap(_rk_loop), [
        np.stack([np.linspace(0.5, 1.5, 8), np.full(8, 0.1)], 1)]),
    "rk_loop_vmap32": lambda: (tg.vmap(_rk_loop), [
        np.stack([np.linspace(0.5, 1.5, 32), np.full(32, 0.1)], 1)]),
    "rows": lambda: (tg.vmap(_rows), [np.linspace(-1, 1, 72).reshape(24, 3),
                                      np.linspace(2, 3, 48).reshape(24, 2)]),
    "long_chain_fused": lambda: (_chain_fused, [np.linspace(-1, 1, 40)]),
    "kernels_objmode": lambda: (_kernels_and_objmode, [np.array([3.0, 1.0, 2.0, 0.5])]),
    "complex": lambda: (_complex, [np.array([1 + 2j, -0.5j, 3.0])]),
    "complex_large": lambda: (_complex, [np.linspace(-1, 1, 20) + 0.5j]),
    "special": lambda: (_special, [np.linspace(-1, 1, 20)]),
    "pools": lambda: (_pools, [np.linspace(-1, 1, 64).reshape(8, 8)]),
    "grad_large_elementwise": _big_lin,
    "jit_inside": lambda: (tg.jit(lambda x: tg.jit(tnp.sin)(x) * 2.0), [np.linspace(0, 1, 5)]),
}


def _chain251(x):
    for i in range(250):
        x = tnp.sin(x) if i % 2 else x * 1.0001 + 0.001
    return x


def _chain_fused(x):
    for k in range(300):
        x = tnp.sin(x) * 1.001 + 0.01 * k if k % 2 else x * 0.999 - 0.002
    return x


# for the generation time only (``--time``): bench_cold.py --sizes's largest chain
TIMING: Dict[str, Case] = {"bench_sizes_10000": lambda: _chain(10000)}


def program(name: str):
    """The program (constants made inputs) of corpus entry ``name``."""
    f, args = {**CORPUS, **TIMING}[name]()
    closed = tg.make_jaxpr(f)(*args)
    return convert_constvars_to_invars(closed.jaxpr)


def source(jaxpr) -> str:
    """The module source ``jit`` would compile for ``jaxpr`` (its units' sources
    appended), generated, not compiled; whether NumPy calls run it is ignored."""
    text, *_, units = native._generate(jaxpr)
    return native._with_units(text, units)


GEMM_MODES = ("blas", "own")


def digests(names=None) -> Dict[str, str]:
    """``{"name/gemm mode": sha256 of the source}`` for the corpus."""
    saved = os.environ.get("TANGENTIA_NUMBA_GEMM")
    out = {}
    try:
        for name in names or CORPUS:
            jaxpr = program(name)
            for mode in GEMM_MODES:
                os.environ["TANGENTIA_NUMBA_GEMM"] = mode
                out[f"{name}/{mode}"] = hashlib.sha256(source(jaxpr).encode()).hexdigest()[:16]
    finally:
        if saved is None:
            os.environ.pop("TANGENTIA_NUMBA_GEMM", None)
        else:
            os.environ["TANGENTIA_NUMBA_GEMM"] = saved
    return out


# ---------------------------------------------------------------------------
# Tests (cheap: generation only)


@pytest.fixture(autouse=True)
def _blas(monkeypatch):
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")   # (no calibration)


# (the others take 0.1-0.3 s to trace and generate: for the script only)
_CHEAP = [n for n in CORPUS if n not in ("bench_sigmoid", "bench_mlp_sgd_784", "bench_ode_vmap_grad",
                                         "bench_sizes_300", "bench_ode_grad", "bench_chain_jit_251")]


@pytest.mark.parametrize("name", _CHEAP)
def test_generation_is_deterministic(name):
    jaxpr = program(name)
    first = source(jaxpr)
    assert source(jaxpr) == first
    assert source(program(name)) == first       # (a new trace of the same function)
    compile(first.split("\n# ---- unit")[0], name, "exec")   # valid Python


def test_structure_of_benchmark_programs():
    mlp = source(program("bench_mlp_sgd_784"))
    assert "_blasdot" in mlp                          # large products: BLAS
    chain = source(program("bench_jit_grad_elementwise"))
    assert "irblock" in chain                        # scalarized runs: one intrinsic
    ode = source(program("bench_ode_grad"))
    assert "# ---- unit" in ode                      # odeint's loop bodies: compile units
    rows = source(program("rk_loop_vmap32"))
    lines = rows.split("while True:\n")[1].splitlines()
    body = [ln for ln in lines[:next(k for k, ln in enumerate(lines) if not ln.startswith(" " * 8))]]
    assert sum("for " in ln for ln in body) == 1                   # batched values: one loop over the rows
    objm = source(program("kernels_objmode"))
    assert "numba.objmode" in objm and "_k" in objm  # fft: object mode; sort: a kernel
    fused = source(program("grad_large_elementwise"))
    assert fused.count("for ") <= 3                  # fused elementwise chains
    sig = source(program("bench_sigmoid"))
    assert "def program(" in sig


def test_a_long_chain_of_vector_operations_looks_for_no_row_runs(monkeypatch):
    # Every equation of a chain over a vector has a row plan (rows of one element), but a
    # run of only such rows gains nothing (codegen._Gen.row_run): the plan says so
    # (plan.Plan.wide_from) and the generator does not look for a run at each of them,
    # which was quadratic (750 equations: 3.5 s of a 3.8 s generation).
    from tangentia.compiler.numba_backend import codegen
    calls = []
    real = codegen._Gen.row_run
    monkeypatch.setattr(codegen._Gen, "row_run", lambda g, *a: calls.append(1) or real(g, *a))
    t0 = time.process_time()
    text = source(program("long_chain_fused"))
    assert not calls and "for " in text
    assert time.process_time() - t0 < 2.0        # (was 4 s; now ~0.02 s)
    calls.clear()
    source(program("rows"))                     # batched rows of 2-3 elements: looked for
    assert calls


if __name__ == "__main__":
    setattr(native, "_VERSION", "golden")   # (units' names hash the backend's files otherwise)
    names = [a for a in sys.argv[1:] if not a.startswith("-")] or None
    if "--once" in sys.argv or "--trace-only" in sys.argv:
        # (for an instruction count of one generation: ``perf stat -e instructions:u``,
        # minus that of ``--trace-only``)
        os.environ["TANGENTIA_NUMBA_GEMM"] = "blas"
        for name in names or ["bench_ode_grad"]:
            jaxpr = program(name)
            if "--once" in sys.argv:
                native._generate(jaxpr)
    elif "--time" in sys.argv:
        os.environ["TANGENTIA_NUMBA_GEMM"] = "blas"
        for name in names or ["bench_ode_grad"]:
            source(program(name))
            best = []
            for _ in range(5):
                jaxpr = program(name)     # (a new program: nothing memoized on it)
                t0 = time.process_time()
                native._generate(jaxpr)
                best.append(time.process_time() - t0)
            print(f"{name}: generation {min(best) * 1e3:.1f} ms CPU (best of 5)")
    else:
        print(json.dumps(digests(names), indent=1, sort_keys=True))
