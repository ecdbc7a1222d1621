"""Differential fuzzing of the numba backend's IR blocks (``irblock``) in loops: generated
loop bodies that are long runs of scalarized operations (vectors of 4-8 elements) with
matrix-vector products (contraction loops over a matrix in memory, or unrolled for a 4x4
one), reductions, accumulated outer products (``M + outer(a, b)``: wide values written by the
block), mixed float64/float32/int32/bool operations, traced indices clamped into range, under
``scan`` (its rows stacked and read back), ``fori_loop`` and ``while_loop`` (whose condition
may be NaN), their reverse-mode derivatives (stacked residuals, ``dW`` accumulated) and vmap.

Each example is ONE program with many outputs, run four ways:

* numba with blocks against numba without them (``TANGENTIA_NUMBA_IRBLOCK=0``, the statement
  per element code the blocks replace): the same numbers bit for bit (the emitter's promise;
  signed zeros aside: a contraction loop's sum of -0.0 terms is +0.0, the unrolled
  statements' -0.0, see ``test_numba_irblock_loops``), under a randomly drawn -O1 threshold
  (``TANGENTIA_NUMBA_LARGE_IR``: ``1`` puts every generated function through the -O1
  pipeline, which promises the same bits);
* numba against the NumPy backend (the tiered jit's first calls) and the NumPy backend
  against eager, within rounding (BLAS sums in another order; a loop amplifies a last-bit
  difference), NaN and infinities in the same places.

``TANGENTIA_FUZZ_EXAMPLES=100 pytest tests/test_fuzz_numba_blocks.py`` fuzzes locally (add
``TANGENTIA_FUZZ_RANDOM=1`` for examples beyond the derandomized sequence); the default runs
one example per test (about 10 s of CPU cold: four numba compiles).
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import native  # noqa: E402

from _numba_util import program  # noqa: E402
from test_fuzz_numba import fuzz as _fuzz  # noqa: E402

F64, F32, I32, BOOL = (np.dtype(t) for t in (np.float64, np.float32, np.int32, np.bool_))
_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e-300]


@st.composite
def floats(draw, shape, dtype=F64, special=0.3):
    """Values of moderate size (so loops of a few steps stay well conditioned); with
    probability ``special``, one of them special (NaN, an infinity, a signed zero, huge or
    tiny): one NaN in a matrix-vector product spreads to every element, hiding the others
    (each element special with 5% made almost every program all NaN after a step)."""
    n = int(np.prod(shape))
    out = draw(st.lists(st.floats(-2, 2, allow_subnormal=False), min_size=n, max_size=n))
    if n and draw(st.floats(0, 1)) < special:
        out[draw(st.integers(0, n - 1))] = draw(st.sampled_from(_SPECIALS))
    with np.errstate(all="ignore"):
        return np.array(out, dtype).reshape(shape)


# ---------------------------------------------------------------------------
# body operations: fn(env, operands) over a pool of length-n vectors of one dtype each

# name -> (operand dtypes, result's dtype, function of (env, *operands))
OPS: dict[str, tuple[tuple[np.dtype, ...], np.dtype, Callable[..., Any]]] = {
    # float64 elementwise (in the blocks' rule table)
    "add": ((F64, F64), F64, lambda e, a, b: a + b),
    "sub": ((F64, F64), F64, lambda e, a, b: a - b),
    "mul": ((F64, F64), F64, lambda e, a, b: a * b),
    "div": ((F64, F64), F64, lambda e, a, b: a / b),
    "max": ((F64, F64), F64, lambda e, a, b: tnp.maximum(a, b)),
    "min": ((F64, F64), F64, lambda e, a, b: lax.min(a, b)),
    "pow": ((F64, F64), F64, lambda e, a, b: lax.pow(a, b)),
    "atan2": ((F64, F64), F64, lambda e, a, b: lax.atan2(a, b)),
    "copysign": ((F64, F64), F64, lambda e, a, b: tnp.copysign(a, b)),
    "nextafter": ((F64, F64), F64, lambda e, a, b: lax.nextafter(a, b)),
    "neg": ((F64,), F64, lambda e, a: -a),
    "abs": ((F64,), F64, lambda e, a: tnp.abs(a)),
    "sin": ((F64,), F64, lambda e, a: tnp.sin(a)),
    "cos": ((F64,), F64, lambda e, a: tnp.cos(a)),
    "tanh": ((F64,), F64, lambda e, a: tnp.tanh(a)),
    "exp": ((F64,), F64, lambda e, a: tnp.exp(a)),
    "log": ((F64,), F64, lambda e, a: tnp.log(a)),
    "sqrt": ((F64,), F64, lambda e, a: tnp.sqrt(a)),
    "expm1": ((F64,), F64, lambda e, a: lax.expm1(a)),
    "log1p": ((F64,), F64, lambda e, a: lax.log1p(a)),
    "atan": ((F64,), F64, lambda e, a: lax.atan(a)),
    "sinh": ((F64,), F64, lambda e, a: lax.sinh(a)),
    "floor": ((F64,), F64, lambda e, a: lax.floor(a)),
    "round": ((F64,), F64, lambda e, a: lax.round(a, 1)),
    "ipow3": ((F64,), F64, lambda e, a: lax.integer_pow(a, 3)),
    "square": ((F64,), F64, lambda e, a: a * a),
    "isfinite": ((F64,), BOOL, lambda e, a: lax.is_finite(a)),
    "isnan": ((F64,), BOOL, lambda e, a: tnp.isnan(a)),
    "gt": ((F64, F64), BOOL, lambda e, a, b: a > b),
    "le": ((F64, F64), BOOL, lambda e, a, b: a <= b),
    "select": ((BOOL, F64, F64), F64, lambda e, p, a, b: tnp.where(p, a, b)),
    # structural (element lists rearranged in the block)
    "rev": ((F64,), F64, lambda e, a: a[::-1]),
    "roll": ((F64,), F64, lambda e, a: tnp.concatenate([a[1:], a[:1]])),
    "bcast_sum": ((F64,), F64, lambda e, a: a + tnp.sum(a)),
    "bcast_max": ((F64,), F64, lambda e, a: a * tnp.max(a)),
    "bcast_prod": ((F64,), F64, lambda e, a: a - tnp.prod(a[:3])),
    # contractions: with the matrix in memory (a loop over the contraction when n > 4)
    "matvec": ((F64,), F64, lambda e, a: e["W"] @ a),
    "vecmat": ((F64,), F64, lambda e, a: a @ e["W"]),
    "matTvec": ((F64,), F64, lambda e, a: e["W"][::-1].T @ a),
    "colsum": ((F64,), F64, lambda e, a: a + tnp.sum(e["W"], axis=0)),
    "rowmax": ((F64,), F64, lambda e, a: a - tnp.max(e["W"], axis=1)),
    "outer_acc": ((F64, F64), F64, lambda e, a, b: _outer_acc(e, a, b)),
    "dot": ((F64, F64), F64, lambda e, a, b: a * tnp.dot(a, b)),
    # traced indices, clamped into range as JAX's (out of range on the last steps)
    "clamp_index": ((F64,), F64, lambda e, a: a + a[e["i"] + 2]),
    "dyn_index": ((F64,), F64, lambda e, a: a * lax.dynamic_index_in_dim(a, e["i"] * 3 - 2,
                                                                          keepdims=False)),
    "dyn_slice": ((F64,), F64, lambda e, a: a + tnp.sum(lax.dynamic_slice(a, [e["i"] * 2], [3]))),
    "row_of_W": ((F64,), F64, lambda e, a: a + e["W"][e["i"] * 3 - 1]),
    # float32 and mixed precision
    "f32_add": ((F32, F32), F32, lambda e, a, b: a + b),
    "f32_mul": ((F32, F32), F32, lambda e, a, b: a * b),
    "f32_tanh": ((F32,), F32, lambda e, a: tnp.tanh(a)),
    "f32_sin": ((F32,), F32, lambda e, a: tnp.sin(a)),
    "f32_div": ((F32, F32), F32, lambda e, a, b: a / b),
    "f32_matvec": ((F32,), F32, lambda e, a: e["W"].astype(np.float32) @ a),
    "f32_scalar": ((F32,), F32, lambda e, a: a * 1.7 - 0.25),
    "mixed": ((F32, F64), F64, lambda e, a, b: a + b),
    "to_f32": ((F64,), F32, lambda e, a: a.astype(np.float32)),
    "f32_to_f64": ((F32,), F64, lambda e, a: lax.convert_element_type(a, np.float64)),
    # integers and booleans
    "i_add": ((I32, I32), I32, lambda e, a, b: a + b),
    "i_mul": ((I32, I32), I32, lambda e, a, b: a * b * 3),
    "i_sub": ((I32, I32), I32, lambda e, a, b: a - b),
    "i_and": ((I32, I32), I32, lambda e, a, b: a & b),
    "i_xor": ((I32, I32), I32, lambda e, a, b: a ^ (b + 7)),
    "i_max": ((I32, I32), I32, lambda e, a, b: tnp.maximum(a, b)),
    "i_neg": ((I32,), I32, lambda e, a: -a),
    "i_abs": ((I32,), I32, lambda e, a: tnp.abs(a)),
    "i_not": ((I32,), I32, lambda e, a: ~a),
    "i_sum": ((I32,), I32, lambda e, a: a + tnp.sum(a)),
    "i_step": ((I32,), I32, lambda e, a: a + e["i"]),
    "i_sq": ((I32,), I32, lambda e, a: lax.integer_pow(a, 2)),
    "i_shift": ((I32,), I32, lambda e, a: tnp.right_shift(a, 3)),
    "i_lt": ((I32, I32), BOOL, lambda e, a, b: a < b),
    "i_select": ((BOOL, I32, I32), I32, lambda e, p, a, b: lax.select(p, a, b)),
    "to_i32": ((F64,), I32, lambda e, a: lax.convert_element_type(lax.clamp(-1e6, a, 1e6),
                                                                    np.int32)),
    "i_to_f64": ((I32,), F64, lambda e, a: a * 0.001),
    "i_to_f64c": ((I32,), F64, lambda e, a: lax.convert_element_type(a, np.float64)),
    "b_and": ((BOOL, BOOL), BOOL, lambda e, a, b: a & b),
    "b_or": ((BOOL, BOOL), BOOL, lambda e, a, b: a | b),
    "b_not": ((BOOL,), BOOL, lambda e, a: ~a),
    "b_to_f64": ((BOOL,), F64, lambda e, a: a.astype(np.float64)),
}
# the operations with a derivative (the rest of a gradient's body: integers, booleans)
DIFFERENTIABLE = {"add", "sub", "mul", "div", "max", "min", "atan2", "neg", "abs", "sin", "cos",
                  "tanh", "exp", "log", "sqrt", "expm1", "log1p", "atan", "sinh", "ipow3",
                  "square", "select", "rev", "roll", "bcast_sum", "bcast_max", "bcast_prod",
                  "matvec", "vecmat", "matTvec", "colsum", "rowmax", "outer_acc", "dot",
                  "clamp_index", "dyn_index", "dyn_slice", "row_of_W", "mixed", "f32_add",
                  "f32_mul", "f32_tanh", "f32_sin", "f32_matvec", "f32_scalar", "to_f32",
                  "f32_to_f64", "pow", "copysign", "floor", "round"}
_DTYPES = [F64, F32, I32, BOOL]


def _outer_acc(e: dict[str, Any], a: Any, b: Any) -> Any:
    """The carried matrix plus an outer product (a wide value computed in the block, as a
    matrix gradient's ``dW + outer(g, h)``), read back through a matrix-vector product."""
    e["M"] = e["M"] + tnp.outer(a, b) * 0.25
    return e["M"] @ a


@st.composite
def body(draw, differentiable=False):
    """The steps of a loop body: ``(op name, operand indices)`` over a pool starting with the
    carried float64, float32, int32 values, the step's row of ``xs`` and a boolean."""
    names = sorted(DIFFERENTIABLE if differentiable else OPS)
    dts = [F64, F32, I32, F64, BOOL]
    steps = []
    for _ in range(draw(st.integers(6, 16))):
        name = draw(st.sampled_from(names))
        ins, out, _ = OPS[name]
        ops = []
        for dt in ins:
            choices = [k for k, d in enumerate(dts) if d == dt]
            # (mostly the latest values: long chains rather than a shallow fan)
            ops.append(choices[-1] if draw(st.integers(0, 2)) else draw(st.sampled_from(choices)))
        steps.append((name, ops))
        dts.append(out)
    return steps


def run_steps(steps: list[Any], env: dict[str, Any], h: Any, f: Any, k: Any, x: Any) -> tuple[Any, Any, Any]:
    """The new carry ``(h, f, k)``: the body's last float64, float32 and int32 values (the old
    ones if it made none), squashed so that loops stay bounded."""
    pool = [h, f, k, x, h > x]
    for name, ops in steps:
        pool.append(OPS[name][2](env, *[pool[j] for j in ops]))
    last: dict[np.dtype, Any] = {dt: next((v for v in reversed(pool) if np.dtype(v.dtype) == dt), None)
            for dt in (F64, F32, I32)}
    h2 = tnp.tanh(last[F64] if last[F64] is not None else h) + 0.5 * h
    f2 = tnp.tanh(last[F32] if last[F32] is not None else f).astype(np.float32)
    return h2, f2, last[I32] if last[I32] is not None else k


FORMS = ["scan", "fori", "while", "while_nan", "scan_rev"]


@st.composite
def loop_program(draw, differentiable=False, forms=FORMS):
    """(f, args, description): a program of one to three loops over one drawn body."""
    n = draw(st.sampled_from([4, 6, 8]))
    t = draw(st.sampled_from([2, 3, 5]))
    steps = draw(body(differentiable))
    kinds = draw(st.lists(st.sampled_from(forms), min_size=1, max_size=3))
    W = draw(floats((n, n), special=0.1)) * (1.0 / n)
    h0 = draw(floats((n,)))
    xs = draw(floats((t, n)))
    f0 = draw(floats((n,), F32))
    k0 = np.array(draw(st.lists(st.integers(-5, 5) | st.sampled_from([2 ** 31 - 1, -2 ** 31]),
                                min_size=n, max_size=n)), np.int32)

    def f(W, h0, xs, f0, k0):
        # (eagerly, ``xs[i]`` with a traced ``i`` needs a tangentia array)
        W, h0, xs, f0, k0 = (tnp.asarray(v) for v in (W, h0, xs, f0, k0))
        outs: list[Any] = []
        M0 = tnp.zeros((n, n)) + W

        def step(carry, x, i):
            h, fv, k, M = carry
            env = {"W": W, "M": M, "i": i}
            h, fv, k = run_steps(steps, env, h, fv, k, x)
            return (h, fv, k, env["M"])
        init = (h0, f0, k0, M0)
        for kind in kinds:
            if kind in ("scan", "scan_rev"):
                def sbody(c, xi):
                    x, i = xi
                    c2 = step(c, x, i)
                    return c2, (c2[0] * 2.0, c2[2])
                carry, ys = lax.scan(sbody, init, (xs, tnp.arange(t, dtype=np.int32)),
                                     reverse=kind == "scan_rev")
                outs += list(ys)
            elif kind == "fori":
                carry = lax.fori_loop(0, t, lambda i, c: step(c, xs[i], i), init)
            else:
                def cond(c):
                    i, (h, _, _, _) = c
                    go = i < t
                    if kind == "while_nan":   # (ends at the first NaN: NaN < 1e9 is false)
                        go = go & (tnp.sum(h) < 1e9)
                    return go
                carry = lax.while_loop(cond, lambda c: (c[0] + 1, step(c[1], xs[c[0]], c[0])),
                                       (np.int32(0), init))[1]
            outs += list(carry)
        return outs
    desc = f"{kinds} n={n} t={t}: " + " ".join(f"{s}{o}" for s, o in steps)
    return f, [W, h0, xs, f0, k0], desc


# ---------------------------------------------------------------------------
# running and comparing


def _numba(jaxpr: Any, blocks: bool, large_ir: str) -> tuple[Callable[..., Any], str]:
    """``jaxpr`` compiled by numba itself (no NumPy fallback), with or without IR blocks."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TANGENTIA_NUMBA_IRBLOCK", "1" if blocks else "0")
        mp.setenv("TANGENTIA_NUMBA_LARGE_IR", large_ir)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)   # (no fallback to NumPy)
            fn, fallbacks = native._compile_program(jaxpr, native._settings())
    assert not fallbacks, fallbacks
    return fn, fn.source


def _close(a: np.ndarray, b: np.ndarray, rtol: float) -> np.ndarray:
    """Within ``rtol`` of each other or of the output's largest finite magnitude (sums in
    another order cancel differently), NaN and infinities (with their signs) alike."""
    with np.errstate(all="ignore"):
        fin = np.isfinite(a) & np.isfinite(b)
        big = max(float(np.max(np.abs(b[fin]), initial=0.0)), 1e-300)
        near = np.abs(a - b) <= rtol * np.maximum(np.abs(b), 1e-3 * big)
        return np.where(fin, near, (a == b) | (np.isnan(a) & np.isnan(b)))


def agree(name: str, got: list[Any], want: list[Any], what: str, exact: bool = False,
          rtol: float = 1e-9) -> None:
    assert len(got) == len(want), (name, len(got), len(want))
    for j, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, \
            f"{name}: output {j} {a.dtype}{a.shape}, {what} {b.dtype}{b.shape}"
        if a.dtype.kind != "f":
            ok = a == b
        elif exact:     # (NaN's sign and payload, and zeros' signs aside)
            ok = (a == b) | (np.isnan(a) & np.isnan(b))
        else:
            ok = _close(a, b, rtol * (1e5 if a.dtype == F32 else 1.0))
        if not np.all(ok):
            bad = np.flatnonzero(~ok)[:4]
            raise AssertionError(f"{name}: output {j} ({a.dtype}{a.shape}) differs at flat "
                                 f"{bad}: numba {a.ravel()[bad]!r}, {what} {b.ravel()[bad]!r}")


def run_all(f: Callable[..., Any], args: list[Any], large_ir: str,
            plain: bool = True) -> dict[str, list[np.ndarray]]:
    """``f``'s outputs compiled by numba with blocks and (if ``plain``) without them, by the
    NumPy backend and eagerly (NumPy's warnings silenced)."""
    jaxpr, full = program(f, *args)
    flat = lambda r: [np.asarray(v) for v in tg.tree_util.tree_leaves(r)]  # noqa: E731
    out = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        blocks, source = _numba(jaxpr, True, large_ir)
        out["blocks"] = flat(blocks(*full))
        if plain:
            out["plain"] = flat(_numba(jaxpr, False, large_ir)[0](*full))
        out["numpy"] = flat(get_backend("numpy").compile(jaxpr)(*full))
        out["eager"] = flat(f(*args))
    out["source"] = source   # type: ignore[assignment]
    return out


def check(name: str, r: dict[str, Any], f32: bool = False) -> None:
    rtol = 1e-5 if f32 else 1e-9
    if "plain" in r:
        agree(name, r["blocks"], r["plain"], "numba without blocks", exact=True)
    agree(name, r["numpy"], r["eager"], "eager", rtol=rtol)
    agree(name, r["blocks"], r["numpy"], "NumPy backend", rtol=rtol)


def fuzz(default: int) -> settings:
    """``test_fuzz_numba``'s profile, without shrinking (each step recompiles: a wide run
    spent minutes shrinking one failure; the failing example is printed as drawn)."""
    return settings(_fuzz(default), phases=[Phase.explicit, Phase.generate])


_LARGE = ["6000", "1", "0"]   # the default -O1 threshold, every function at -O1, never


@fuzz(1)
@given(prog=loop_program(), large=st.sampled_from(_LARGE))
def test_fuzz_loop_bodies(prog, large):
    f, args, desc = prog
    r = run_all(f, args, large)
    assert "_blk" in r["source"], desc     # (the body is an IR block)
    check(desc, r, f32=any(s in desc for s in ("f32", "mixed")))


@st.composite
def grad_program(draw):
    """The gradient of a loss of a generated loop program (float64 outputs summed, NaN and
    infinities dropped) with respect to the matrix, the initial vector and the rows: a
    reverse-mode scan reads its stacked residual rows back and accumulates dW."""
    f, args, desc = draw(loop_program(differentiable=True, forms=["scan", "scan_rev", "fori"]))

    def loss(W, h0, xs, f0, k0):
        outs = [o for o in f(W, h0, xs, f0, k0) if np.dtype(o.dtype).kind == "f"]
        return sum((tnp.sum(tnp.where(tnp.isfinite(o), o, 0.0).astype(np.float64)) for o in outs),
                   tnp.zeros(()))

    def g(W, h0, xs, f0, k0):
        return list(tg.grad(loss, argnums=(0, 1, 2))(W, h0, xs, f0, k0))
    return g, args, "grad " + desc


@fuzz(1)
@given(prog=grad_program(), large=st.sampled_from(_LARGE))
def test_fuzz_loop_gradients(prog, large):
    f, args, desc = prog
    check(desc, run_all(f, args, large), f32=any(s in desc for s in ("f32", "mixed")))


@st.composite
def vmap_program(draw):
    """A generated loop program vmapped over rows of its initial vector and its matrix
    (B = 1, 3 or 6), checked against a loop over the rows too."""
    f, (W, h0, xs, f0, k0), desc = draw(loop_program())
    b = draw(st.sampled_from([1, 3, 6]))
    Ws = np.stack([W] + [draw(floats(W.shape, special=0.1)) / W.shape[0] for _ in range(b - 1)])
    hs = np.stack([h0] + [draw(floats(h0.shape)) for _ in range(b - 1)])
    g = tg.vmap(f, in_axes=(0, 0, None, None, None))
    return g, f, [Ws, hs, xs, f0, k0], f"vmap B={b} " + desc


@fuzz(1)
@given(prog=vmap_program(), large=st.sampled_from(_LARGE))
def test_fuzz_vmapped_loops(prog, large):
    g, f, args, desc = prog
    # (the default example skips the compile without blocks: 2-3 s of the suite's CPU; the
    # other two tests compare blocks with the statements, a wide run does here too)
    r = run_all(g, args, large, plain=bool(os.environ.get("TANGENTIA_FUZZ_EXAMPLES")))
    f32 = any(s in desc for s in ("f32", "mixed"))
    check(desc, r, f32)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = [[np.asarray(v) for v in f(W, h, *args[2:])] for W, h in zip(args[0], args[1])]
    looped = [np.stack([row[j] for row in rows]) for j in range(len(r["eager"]))]
    agree(desc, r["eager"], looped, "loop over rows", rtol=1e-5 if f32 else 1e-9)
