"""Differential fuzzing of the numba backend: generated programs (random DAGs of ``lax`` and
``tangentia.numpy`` operations over every dtype the backend compiles) run compiled by numba, by
the NumPy backend (the reference) and eagerly, and must agree.

What "agree" means (the numba backend's promise):

* integer, boolean and exactly rounded float results (arithmetic, comparisons, min/max,
  rounding, casts, selection, data movement) bit for bit, signed zeros and NaN included;
* transcendental functions within a few ULP (``vecmath`` promises 4 ULP on its ranges), so
  float results are compared with ``rtol`` 1e-12 (float64) / 4e-6 (float32) -- chained
  programs amplify a last-bit difference -- with NaN and infinities in the same places.

One hypothesis example is ONE program with many outputs (a numba compile costs 0.3-1 s): the
program draws its operations from tables of unary, binary, ternary and NumPy-promoting
(mixed dtypes, Python scalars) elementwise operations, reductions, scans, sorts, data
movement, indexing, contractions and control flow (bodies drawn from the elementwise tables),
each operand cast to the dtype the operation needs (``lax.convert_element_type``: floats to
integers saturate, NaN to 0, as XLA's); vmap (checked against a loop over rows too) and
grad/jvp of generated programs.

``TANGENTIA_FUZZ_EXAMPLES=400 pytest tests/test_fuzz_numba.py`` fuzzes locally; the default
runs a few derandomized examples.  Each bug found keeps a minimal regression test below.

Known differences a wide run may report (left alone, not wrong numbers of ours): a contraction
(dot, matmul, einsum) whose products overflow -- NumPy's BLAS fuses multiply-adds, so 1e300 *
1e300 added to -inf stays -inf where a rounded product makes inf - inf = NaN, and a complex
(0.1 + 1e300j) ** 2 in a dot has a NaN imaginary part in BLAS, 2e299 here (the exact value).
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402

_ENV = os.environ.get("TANGENTIA_FUZZ_EXAMPLES")


def fuzz(default: int) -> settings:
    """``default`` derandomized examples (one numba compile each: the file's cold cost is
    budgeted), or ``TANGENTIA_FUZZ_EXAMPLES`` of them; ``TANGENTIA_FUZZ_RANDOM=1`` draws them
    at random (a wide run exploring beyond the derandomized sequence earlier runs covered;
    ``--hypothesis-seed=N`` repeats one)."""
    return settings(max_examples=int(_ENV) if _ENV else default, deadline=None,
                    derandomize=not os.environ.get("TANGENTIA_FUZZ_RANDOM"), database=None,
                    suppress_health_check=list(HealthCheck))

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float32, np.float64]
COMPLEX = [np.complex64, np.complex128]
DTYPES = [np.dtype(d) for d in [np.bool_] + INTS + FLOATS + COMPLEX]
# () scalar, (3,) scalarized (IR blocks), (4, 5) unrolled from scalars, (37,) fused loops
SHAPES = [(), (3,), (4, 5), (37,)]

_F_POOL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.0,
           1e-300, 1e300, -1e300, 700.0, -745.5, 88.7, 1e-40, 3.4e38, 2.0 ** 31, 2.0 ** 63, 0.1]
_I_POOL = [0, 1, -1, 2, -2, 3, 7, -8, 31, 32, 33, 63, 64, 65, 127, -128, 255, 2 ** 15, 2 ** 31 - 1,
           -2 ** 31, 2 ** 63 - 1, -2 ** 63, 2 ** 64 - 1]


@st.composite
def values(draw, dtype, shape):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "b":
        flat: Any = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = st.one_of(st.sampled_from(_I_POOL), st.integers(-3, 3))
        flat = [v % (info.max - info.min + 1) + info.min if not info.min <= v <= info.max else v
                for v in draw(st.lists(pool, min_size=n, max_size=n))]
    else:
        pool = st.one_of(st.sampled_from(_F_POOL), st.floats(-4, 4))
        if dtype.kind == "c":
            flat = [complex(a, b) for a, b in zip(draw(st.lists(pool, min_size=n, max_size=n)),
                                                  draw(st.lists(pool, min_size=n, max_size=n)))]
        else:
            flat = draw(st.lists(pool, min_size=n, max_size=n))
    with np.errstate(all="ignore"):
        return np.array(flat, dtype=dtype).reshape(shape)


# ---------------------------------------------------------------------------
# running and comparing


def _program(f: Callable[..., Any], args: list[Any]) -> tuple[Any, list[Any]]:
    closed = tg.make_jaxpr(f)(*args)
    return convert_constvars_to_invars(closed.jaxpr), list(closed.consts) + list(args)


def run_three(f: Callable[..., Any], args: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """(numba, NumPy backend, eager) results of ``f`` at ``args``, each a list of arrays."""
    jaxpr, full = _program(f, args)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = get_backend("numba").compile(jaxpr)(*full)
        want = get_backend("numpy").compile(jaxpr)(*full)
        eager = f(*args)
    flat = lambda r: [np.asarray(v) for v in tg.tree_util.tree_leaves(r)]  # noqa: E731
    return flat(got), flat(want), flat(eager)


def _same(a: np.ndarray, b: np.ndarray, exact: bool, scale: float = 1.0) -> np.ndarray:
    """Elementwise agreement of two arrays of one dtype (``scale`` multiplies the tolerance)."""
    if a.dtype.kind not in "fc":
        return a == b
    parts = [(a.real, b.real), (a.imag, b.imag)] if a.dtype.kind == "c" else [(a, b)]
    ok = np.ones(a.shape, bool)
    tol = scale * (4e-6 if a.dtype in (np.float32, np.complex64) else 1e-12)
    if a.dtype.kind == "c" and not exact:   # complex: within tol of the modulus
        with np.errstate(all="ignore"):
            close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= tol * np.abs(b))
            # a part not finite in both (products of infinities: C99's choices of inf or NaN
            # differ, and NumPy's fused multiply-adds), the other close; never a finite part
            # against an infinite one (exp(710+1j): 1.2e308+infj, not inf+infj)
            ok = close | _same(a, b, True)
            each = np.ones(a.shape, bool)
            for x, y in ((a.real, b.real), (a.imag, b.imag)):
                each &= (~np.isfinite(x) & ~np.isfinite(y)) | _same(x, y, False, scale)
        return ok | each
    for x, y in parts:
        with np.errstate(all="ignore"):
            both_nan = np.isnan(x) & np.isnan(y)
            if exact:
                eq = (x == y) & (np.signbit(x) == np.signbit(y))
            else:
                tiny = np.finfo(x.dtype).tiny
                eq = (x == y) | (np.isfinite(x) & np.isfinite(y)
                                 & ((np.abs(x - y) <= tol * np.abs(y)) | (np.abs(x) + np.abs(y) < 4 * tiny)))
        ok &= both_nan | eq
    return ok


def assert_agree(name: str, got: list[Any], want: list[Any], exact: list[bool] | None = None,
                 what: str = "NumPy backend", scale: float = 1.0) -> None:
    assert len(got) == len(want), (name, len(got), len(want))
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, \
            f"{name} output {k}: {a.dtype}{a.shape}, {what} {b.dtype}{b.shape}"
        ok = _same(a, b, exact[k] if exact else False, scale)
        if not np.all(ok):
            bad = np.flatnonzero(~ok)[:5]
            raise AssertionError(f"{name} output {k} ({a.dtype}) differs at flat {bad}: numba "
                                 f"{a.ravel()[bad]!r}, {what} {b.ravel()[bad]!r}")


# ---------------------------------------------------------------------------
# the operation tables


def to_dtype(x: Any, dt: np.dtype) -> Any:
    """``x`` cast to ``dt`` (complex to real: the real part; floats to integers saturate, NaN
    to 0, as XLA's)."""
    if np.dtype(x.dtype) == dt:
        return x
    if np.dtype(x.dtype).kind == "c" and dt.kind != "c":
        x = lax.real(x)
    return lax.convert_element_type(x, dt)


K_F, K_I, K_B, K_C = "f", "iu", "b", "c"
# name -> (kinds accepted, exactly rounded?, function)
UNARY: dict[str, tuple[str, bool, Callable[[Any], Any]]] = {
    "neg": ("fiuc", True, lax.neg), "abs": ("fic", False, lax.abs),
    "sign": ("fic", True, lax.sign), "floor": ("f", True, lax.floor), "ceil": ("f", True, lax.ceil),
    "round_away": ("f", True, lambda x: lax.round(x, 0)),
    "round_even": ("f", True, lambda x: lax.round(x, 1)),
    "exp": ("fc", False, lax.exp), "exp2": ("f", False, lax.exp2), "log": ("fc", False, lax.log),
    "log1p": ("f", False, lax.log1p), "expm1": ("f", False, lax.expm1),
    "sin": ("fc", False, lax.sin), "cos": ("fc", False, lax.cos), "tan": ("fc", False, lax.tan),
    "asin": ("fc", False, lax.asin), "acos": ("fc", False, lax.acos),
    "atan": ("fc", False, lax.atan), "sinh": ("fc", False, lax.sinh),
    "cosh": ("fc", False, lax.cosh), "tanh": ("fc", False, lax.tanh),
    "asinh": ("fc", False, lax.asinh), "acosh": ("fc", False, lax.acosh),
    "atanh": ("fc", False, lax.atanh), "sqrt": ("fc", True, lax.sqrt),
    "rsqrt": ("f", False, lax.rsqrt), "cbrt": ("f", False, lax.cbrt),
    "logistic": ("f", False, lax.logistic), "is_finite": ("f", True, lax.is_finite),
    "erf": ("f", False, lax.erf), "erfc": ("f", False, lax.erfc),
    "square": ("fiuc", True, lax.square), "reciprocal": ("fc", False, lax.reciprocal),
    "not": ("iub", True, lax.bitwise_not), "popcnt": ("iu", True, lax.population_count),
    "clz": ("iu", True, lax.clz), "real": ("c", True, lax.real), "imag": ("c", True, lax.imag),
    "conj": ("c", True, lax.conj),
    "ipow0": ("fiuc", True, lambda x: lax.integer_pow(x, 0)),
    "ipow2": ("fiuc", True, lambda x: lax.integer_pow(x, 2)),
    "ipow3": ("fiuc", False, lambda x: lax.integer_pow(x, 3)),
    "ipow7": ("fiuc", False, lambda x: lax.integer_pow(x, 7)),
    "ipow-1": ("fc", False, lambda x: lax.integer_pow(x, -1)),
    "ipow-2": ("fc", False, lambda x: lax.integer_pow(x, -2)),
    "isnan": ("f", True, tnp.isnan), "isinf": ("f", True, tnp.isinf),
    "signbit": ("f", True, tnp.signbit), "rint": ("f", True, tnp.rint),
    "trunc": ("f", True, tnp.trunc), "fix": ("f", True, tnp.fix),
    "nextafter_up": ("f", True, lambda x: lax.nextafter(x, lax.full_like(x, np.inf))),
}
BINARY: dict[str, tuple[str, bool, Callable[[Any, Any], Any]]] = {
    "add": ("fiuc", True, lax.add), "sub": ("fiuc", True, lax.sub),
    "mul": ("fiuc", True, lax.mul), "div": ("fiuc", True, lax.div),
    "rem": ("fiu", True, lax.rem), "pow": ("fc", False, lax.pow),
    "max": ("fiub", True, lax.max), "min": ("fiub", True, lax.min),
    "atan2": ("f", False, lax.atan2), "nextafter": ("f", True, lax.nextafter),
    "eq": ("fiubc", True, lax.eq), "ne": ("fiubc", True, lax.ne),
    "lt": ("fiub", True, lax.lt), "le": ("fiub", True, lax.le),
    "gt": ("fiub", True, lax.gt), "ge": ("fiub", True, lax.ge),
    "and": ("iub", True, lax.bitwise_and), "or": ("iub", True, lax.bitwise_or),
    "xor": ("iub", True, lax.bitwise_xor),
    "shl": ("iu", True, lax.shift_left), "shr_logical": ("iu", True, lax.shift_right_logical),
    "shr_arith": ("iu", True, lax.shift_right_arithmetic),
    "floor_divide": ("fiu", True, tnp.floor_divide), "remainder": ("fiu", True, tnp.remainder),
    "fmod": ("fiu", True, tnp.fmod), "fmax": ("fiu", True, tnp.fmax),
    "fmin": ("fiu", True, tnp.fmin), "copysign": ("f", True, tnp.copysign),
    "heaviside": ("f", True, tnp.heaviside), "logaddexp": ("f", False, tnp.logaddexp),
    "hypot": ("f", False, tnp.hypot), "tnp_power": ("f", False, tnp.power),
    "gcd": ("iu", True, tnp.gcd), "lcm": ("iu", True, tnp.lcm),
    "right_shift": ("iu", True, tnp.right_shift), "left_shift": ("iu", True, tnp.left_shift),
    "maximum": ("fiubc", True, tnp.maximum), "minimum": ("fiubc", True, tnp.minimum),
    "float_power": ("f", False, tnp.float_power), "mulhi": ("iu", True, lax.mulhi),
}
# NumPy-promoting binary functions, given operands of different dtypes or a Python scalar
MIXED: dict[str, Callable[[Any, Any], Any]] = {
    "add": tnp.add, "subtract": tnp.subtract, "multiply": tnp.multiply,
    "true_divide": tnp.true_divide, "floor_divide": tnp.floor_divide,
    "remainder": tnp.remainder, "maximum": tnp.maximum,
    # (integer exponents made nonnegative: an integer base to a negative power raises NumPy's
    # ValueError, eagerly and on both backends; test_signed_unsigned_..._integer_powers)
    "power": lambda a, b: tnp.power(a, abs(b) if type(b) is int else tnp.abs(b)
                                    if np.dtype(getattr(b, "dtype", "O")).kind == "i" else b),
    "minimum": tnp.minimum, "bitwise_and": tnp.bitwise_and, "bitwise_xor": tnp.bitwise_xor,
    "left_shift": tnp.left_shift, "right_shift": tnp.right_shift, "less": tnp.less,
    "equal": tnp.equal, "arctan2": tnp.arctan2, "fmod": tnp.fmod, "copysign": tnp.copysign,
    "logical_and": tnp.logical_and, "where": lambda a, b: tnp.where(a > b, a, b),
}
SCALARS = [2, -1, 0, 3, 300, 0.5, -2.5, True, 1j]
TERNARY: dict[str, tuple[str, bool, Callable[[Any, Any, Any], Any]]] = {
    "select": ("fiubc", True, lambda p, a, b: lax.select(p != 0, a, b)),
    # (bounds of x's shape or scalars, as lax.clamp and JAX's require)
    "clamp": ("fiu", True, lambda lo, x, hi: lax.clamp(*tnp.broadcast_arrays(lo, x, hi))),
    "clip": ("fiu", True, lambda x, lo, hi: tnp.clip(x, lo, hi)),
}


def _kind_dtypes(kinds: str) -> list[np.dtype]:
    return [d for d in DTYPES if d.kind in kinds]


@st.composite
def elementwise_program(draw, n_ops=(3, 10)):
    """(function, inputs, exactness of each output): a random DAG of elementwise operations."""
    shape = draw(st.sampled_from(SHAPES))
    n_in = draw(st.integers(2, 4))
    in_dts = [draw(st.sampled_from(DTYPES)) for _ in range(n_in)]
    in_shapes = [shape if draw(st.integers(0, 3)) else () for _ in range(n_in)]
    in_shapes[0] = shape
    args = [draw(values(d, s)) for d, s in zip(in_dts, in_shapes)]
    steps: list[Any] = []
    exact_of = [True] * n_in
    for _ in range(draw(st.integers(*n_ops))):
        arity = draw(st.sampled_from([1, 2, 2, 3, 0]))
        if arity == 0:   # a NumPy-promoting function of two values, or of a value and a scalar
            name = draw(st.sampled_from(sorted(MIXED)))
            a = draw(st.integers(0, n_in + len(steps) - 1))
            b: Any = (draw(st.integers(0, n_in + len(steps) - 1)) if draw(st.booleans())
                      else ("scalar", draw(st.sampled_from(SCALARS))))
            steps.append((0, name, None, [a, b]))
            exact_of.append(name not in ("power", "arctan2") and exact_of[a]
                            and (isinstance(b, tuple) or exact_of[b]))
            continue
        table: Any = {1: UNARY, 2: BINARY, 3: TERNARY}[arity]
        name = draw(st.sampled_from(sorted(table)))
        kinds, exact, _ = table[name]
        dt = draw(st.sampled_from(_kind_dtypes(kinds)))
        ops = [draw(st.integers(0, n_in + len(steps) - 1)) for _ in range(arity)]
        steps.append((arity, name, dt, ops))
        exact_of.append(exact and all(exact_of[i] for i in ops))

    def f(*xs):
        pool = list(xs)
        for arity, name, dt, ops in steps:
            if arity == 0:
                a, b = pool[ops[0]], ops[1][1] if isinstance(ops[1], tuple) else pool[ops[1]]
                dt_a = np.dtype(a.dtype)
                if type(b) is int and dt_a.kind in "iu" and not (
                        np.iinfo(dt_a).min <= b <= np.iinfo(dt_a).max):
                    # (uint8 x ^ 300: eager raises NumPy's OverflowError at once, a staged
                    # program when it runs -- on both backends alike; JAX wraps the int)
                    pool.append(a)
                    continue
                try:
                    r = MIXED[name](a, b)
                except (TypeError, ValueError, OverflowError):  # (no such loop, as NumPy's)
                    r = a
                pool.append(r)
                continue
            table: Any = {1: UNARY, 2: BINARY, 3: TERNARY}[arity]
            fn = table[name][2]
            operands = [to_dtype(pool[i], dt) for i in ops]
            if name == "select":
                operands[0] = pool[ops[0]] if pool[ops[0]].dtype == np.bool_ else operands[0]
            pool.append(fn(*operands))
        return pool[len(xs):]
    desc = [f"{name}[{dt}]({ops})" for _, name, dt, ops in steps]
    return f, args, exact_of[n_in:], desc


def compare(name: str, got: list[Any], want: list[Any], eager: list[Any], exact: list[bool],
            scale: float = 1.0) -> None:
    """numba against the NumPy backend, the NumPy backend against eager.  Complex arithmetic
    is not bit for bit (numba's complex64 products round once from complex128, NumPy's twice in
    float32; abs, sqrt, products: different formulas, within 2 ulp), and a float32 value
    upstream carries float32 differences into float64 results: such outputs get float32's
    tolerance."""
    exact = [e and np.asarray(w).dtype.kind != "c" for e, w in zip(exact, want)]
    if any(np.asarray(w).dtype in (np.float32, np.complex64) for w in want):
        scale *= 4e6
    assert_agree(name, want, eager, exact, what="eager", scale=scale)
    assert_agree(name, got, want, exact, scale=scale)


def check_program(f, args, exact, desc):
    compare(" ; ".join(desc), *run_three(f, args), exact)


@fuzz(2)
@given(prog=elementwise_program())
def test_fuzz_elementwise_programs(prog):
    check_program(*prog)


# ---------------------------------------------------------------------------
# reductions, scans, sorting, data movement, indexing, contractions


def _ax(x: Any, k: int) -> int:
    return k % max(x.ndim, 1)


# name -> (kinds accepted, exact?, fn(x, i, k)): ``i`` an int32 index array of edge indices
# (negative, out of bounds), ``k`` an axis number
ARRAY_OPS: dict[str, tuple[str, bool, Callable[[Any, Any, int], Any]]] = {
    "sum": ("fiubc", False, lambda x, i, k: tnp.sum(x, axis=_ax(x, k))),
    "sum_all": ("fiubc", False, lambda x, i, k: tnp.sum(x)),
    "prod": ("fiuc", False, lambda x, i, k: tnp.prod(x, axis=_ax(x, k))),
    "max": ("fiub", True, lambda x, i, k: tnp.max(x, axis=_ax(x, k), initial=-5)),
    "min_all": ("fiub", True, lambda x, i, k: tnp.min(x, initial=3)),
    # (of empty axes: eager raises, JAX gives the identity; reported to G2)
    "reduce_max": ("fiub", True, lambda x, i, k: lax.reduce_max(x, (_ax(x, k),)) if x.size else x),
    "reduce_min": ("fiub", True, lambda x, i, k: lax.reduce_min(x, tuple(range(x.ndim)))
                   if x.size else x),
    "argmax": ("fiub", True, lambda x, i, k: tnp.argmax(x, axis=_ax(x, k)) if x.size else x),
    "argmin": ("fiub", True, lambda x, i, k: tnp.argmin(x, axis=_ax(x, k)) if x.size else x),
    "any": ("fiub", True, lambda x, i, k: tnp.any(x, axis=_ax(x, k))),
    "all": ("fiub", True, lambda x, i, k: tnp.all(x)),
    "reduce_and": ("iub", True, lambda x, i, k: lax.reduce_and(x, (_ax(x, k),))),
    "reduce_or": ("iub", True, lambda x, i, k: lax.reduce_or(x, (_ax(x, k),))),
    "cumsum": ("fiuc", False, lambda x, i, k: lax.cumsum(x, _ax(x, k))),
    "cumsum_rev": ("fiu", False, lambda x, i, k: lax.cumsum(x, _ax(x, k), reverse=True)),
    "cumprod": ("fiu", False, lambda x, i, k: lax.cumprod(x, _ax(x, k))),
    "cummax": ("fiu", True, lambda x, i, k: lax.cummax(x, _ax(x, k))),
    "cummin_rev": ("fiu", True, lambda x, i, k: lax.cummin(x, _ax(x, k), reverse=True)),
    "sort": ("fiub", True, lambda x, i, k: tnp.sort(x, axis=_ax(x, k))),
    "sort_desc": ("fiu", True, lambda x, i, k: lax.rev(tnp.sort(x, axis=-1), (max(x.ndim - 1, 0),))
                  if x.ndim else x),
    "argsort": ("fiub", True, lambda x, i, k: tnp.argsort(x, axis=_ax(x, k), stable=True)),
    "sort_kv": ("fiu", True, lambda x, i, k: lax.sort((x, -x), dimension=max(x.ndim - 1, 0),
                                                      num_keys=1)[1] if x.ndim else x),
    "transpose": ("fiubc", True, lambda x, i, k: tnp.transpose(x) + 0),
    "reshape": ("fiubc", True, lambda x, i, k: tnp.reshape(x, (-1,))[::-1]),
    "rev": ("fiubc", True, lambda x, i, k: lax.rev(x, tuple(range(x.ndim)))),
    "pad": ("fiubc", True, lambda x, i, k: lax.pad(x, np.array(0, x.dtype),
                                                   [(1, -1, 1)] + [(0, 2, 0)] * (x.ndim - 1))
            if x.ndim and x.shape[0] else x),
    "concat": ("fiubc", True, lambda x, i, k: tnp.concatenate([x, x[..., ::-1], x * 2], axis=_ax(x, k))
               if x.ndim else x),
    "slice": ("fiubc", True, lambda x, i, k: x[..., 1::2] if x.ndim else x),
    "gather": ("fiubc", True, lambda x, i, k: x[lax.rem(i, np.int32(x.shape[0]))]
               if x.ndim and x.shape[0] else x),
    "gather_clip": ("fiubc", True, lambda x, i, k: x.at[i].get(mode="clip")
                    if x.ndim and x.shape[0] else x),
    "gather_fill": ("fiubc", True, lambda x, i, k: x.at[i].get(mode="fill", fill_value=7)
                    if x.size else x),
    "take_last": ("fiubc", True, lambda x, i, k: tnp.take(x, i, axis=-1) if x.size else x),
    "scatter_set": ("fiubc", True, lambda x, i, k: x.at[i].set(x[0]) if x.size else x),
    "scatter_add": ("fiuc", False, lambda x, i, k: x.at[i].add(2) if x.size else x),
    "scatter_max": ("fiu", True, lambda x, i, k: x.at[i].max(1) if x.size else x),
    "scatter_mul": ("fiu", False, lambda x, i, k: x.at[i].multiply(3) if x.size else x),
    "dyn_slice": ("fiubc", True, lambda x, i, k: lax.dynamic_slice(
        x, [i[0]] + [i[-1]] * (x.ndim - 1), [min(2, d) for d in x.shape])),
    "dyn_update": ("fiubc", True, lambda x, i, k: lax.dynamic_update_slice(
        x, tnp.ones([min(2, d) for d in x.shape], x.dtype), [i[1]] + [i[2]] * (x.ndim - 1))),
    "where_idx": ("fiubc", True, lambda x, i, k: tnp.where(x != 0, x, x[::-1] if x.ndim else x)),
    "dot_t": ("fiuc", False, lambda x, i, k: x @ tnp.swapaxes(x, -1, -2) if x.ndim == 2 else x * x),
    "dot_vec": ("fiuc", False, lambda x, i, k: tnp.dot(x, tnp.transpose(x[::-1])) if x.ndim else x * x),
    "einsum": ("fiuc", False, lambda x, i, k: tnp.einsum("ij,ij->j", x, x) if x.ndim == 2 else x),
    "matmul_bcast": ("fc", False, lambda x, i, k: tnp.matmul(x[..., None], x[..., None, :])),
    "clip_cum": ("f", True, lambda x, i, k: lax.cummax(tnp.nan_to_num(x), _ax(x, k))),
}
ARRAY_SHAPES = [(0,), (1,), (3,), (2, 3), (4, 5), (17,), (3, 17), (5, 0), (65,)]
_INDEX = np.array([0, -1, 2, 5, -7, 100, -100, 1], np.int32)


@st.composite
def array_program(draw, n_ops=(3, 8)):
    dt = draw(st.sampled_from(DTYPES))
    shape = draw(st.sampled_from(ARRAY_SHAPES))
    x = draw(values(dt, shape))
    names = sorted(n for n, (kinds, _, _) in ARRAY_OPS.items() if dt.kind in kinds)
    chosen = draw(st.lists(st.sampled_from(names), min_size=n_ops[0], max_size=n_ops[1]))
    ks = [draw(st.integers(0, 1)) for _ in chosen]
    idx = np.array(draw(st.permutations(list(_INDEX))), np.int32)

    def f(x, i):
        x, out = tnp.asarray(x), []
        for name, k in zip(chosen, ks):
            out.append(ARRAY_OPS[name][2](x, i, k))
        return out
    exact = [ARRAY_OPS[n][1] for n in chosen]
    return f, [x, idx], exact, [f"{n}[{dt}{shape}]" for n in chosen]


def check_array(f, args, exact, desc):
    compare(" ; ".join(desc), *run_three(f, args), exact)


@fuzz(1)
@given(prog=array_program())
def test_fuzz_array_programs(prog):
    check_array(*prog)


# ---------------------------------------------------------------------------
# control flow with generated bodies; vmap and derivatives of generated programs


@st.composite
def body_steps(draw, dt, n=(1, 4)):
    """Steps of an elementwise body over [carry, counter]: (arity, name, dtype, operands)."""
    steps = []
    for _ in range(draw(st.integers(*n))):
        arity = draw(st.sampled_from([1, 2, 2, 3]))
        table: Any = {1: UNARY, 2: BINARY, 3: TERNARY}[arity]
        names = sorted(k for k, v in table.items() if dt.kind in v[0])
        name = draw(st.sampled_from(names))
        ops = [draw(st.integers(0, 1 + len(steps))) for _ in range(arity)]
        steps.append((arity, name, ops))
    return steps


def run_body(steps, carry, counter):
    """The body's new carry: its steps over [carry, counter] (in the carry's dtype), the last
    result cast back to the carry's dtype and shape."""
    dt = np.dtype(carry.dtype)
    pool = [carry, to_dtype(counter, dt)]
    for arity, name, ops in steps:
        table: Any = {1: UNARY, 2: BINARY, 3: TERNARY}[arity]
        operands = [to_dtype(pool[i], dt) for i in ops]
        pool.append(table[name][2](*operands))
    return tnp.broadcast_to(to_dtype(pool[-1], dt), carry.shape)


CONTROL = ["fori", "while", "scan", "cond", "switch", "fori_dyn"]


@st.composite
def control_program(draw):
    dt = draw(st.sampled_from([d for d in DTYPES if d.kind != "b"]))
    shape = draw(st.sampled_from([(), (3,), (4, 5), (37,)]))
    x = draw(values(dt, shape))
    kinds = draw(st.lists(st.sampled_from(CONTROL), min_size=1, max_size=3))
    bodies = [draw(body_steps(dt)) for _ in kinds]
    n = np.int32(draw(st.integers(-1, 5)))

    def f(x, n):
        out = []
        for kind, steps in zip(kinds, bodies):
            if kind == "fori":
                r = lax.fori_loop(0, 3, lambda i, c: run_body(steps, c, i), x)
            elif kind == "fori_dyn":
                r = lax.fori_loop(0, n, lambda i, c: run_body(steps, c, i), x)
            elif kind == "while":
                r = lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, run_body(steps, c[1], c[0])),
                                   (np.int32(0), x))[1]
            elif kind == "scan":
                xs = tnp.arange(4, dtype=np.int32)
                c, ys = lax.scan(lambda c, i: (run_body(steps, c, i), c), x, xs)
                out.append(ys)
                r = c
            elif kind == "cond":
                r = lax.cond(n > 2, lambda c: run_body(steps, c, n), lambda c: c, x)
            else:
                r = lax.switch(n, [lambda c: c, lambda c: run_body(steps, c, n),
                                   lambda c: run_body(steps, run_body(steps, c, n), n)], x)
            out.append(r)
        return out
    desc = [f"{k}[{dt}{shape}]: " + " ".join(s[1] for s in b) for k, b in zip(kinds, bodies)]
    exact = all(UNARY.get(s[1], BINARY.get(s[1], TERNARY.get(s[1])))[1]  # type: ignore[index]
                for b in bodies for s in b)
    return f, [x, n], [exact] * 8, desc


def check_control(f, args, exact, desc):
    got, want, eager = run_three(f, args)
    # (a loop iterating an inexact body amplifies last-bit differences: 100x the tolerance)
    compare(" ; ".join(desc), got, want, eager, exact[:1] * len(got), scale=100.0)


@fuzz(1)
@given(prog=control_program())
def test_fuzz_control_flow_programs(prog):
    check_control(*prog)


@st.composite
def vmap_program(draw):
    """An array program vmapped over a leading axis of B rows (B = 1, 3 or 20: the row batching
    paths), the index array not batched; checked against a loop over the rows too."""
    f, (x, idx), exact, desc = draw(array_program(n_ops=(2, 5)))
    b = draw(st.sampled_from([1, 3, 20]))
    rows = np.stack([x] + [draw(values(x.dtype, x.shape)) for _ in range(b - 1)])
    return tg.vmap(f, in_axes=(0, None)), [rows, idx], exact, [f"vmap B={b}"] + desc, f


def check_vmap(g, args, exact, desc, f):
    got, want, eager = run_three(g, args)
    name = " ; ".join(desc)
    loop = [[np.asarray(v) for v in f(r, args[1])] for r in args[0]]
    looped = [np.stack([row[k] for row in loop]) for k in range(len(got))]
    compare(name, got, want, eager, exact)
    assert_agree(name, eager, looped, [False] * len(got), what="loop over rows")


@fuzz(1)
@given(prog=vmap_program())
def test_fuzz_vmap_programs(prog):
    check_vmap(*prog)


@st.composite
def grad_program(draw):
    """grad and jvp of a float64 elementwise program (its float outputs summed)."""
    f, args, exact, desc = draw(elementwise_program())
    args = [a.astype(np.float64) if a.dtype.kind != "c" else a.real.copy() for a in args]

    def loss(*xs):
        outs = [o for o in f(*xs) if np.dtype(o.dtype).kind == "f"]
        return sum((tnp.sum(tnp.where(tnp.isfinite(o), o, 0.0).astype(np.float64)) for o in outs),
                   tnp.zeros(()))

    def both(*xs):
        g = tg.grad(loss, argnums=tuple(range(len(xs))))(*xs)
        _, t = tg.jvp(loss, xs, tuple(tnp.ones_like(a) for a in xs))
        return list(g) + [t]
    return both, args, [False] * (len(args) + 1), ["grad/jvp"] + desc


def check_grad(f, args, exact, desc):
    # (a float32 step -- or a NumPy-promoting one, which may make one -- gives the float64
    # derivatives float32's differences)
    low = any(s in d for d in desc for s in ("float32", "complex64", "[None]"))
    compare(" ; ".join(desc), *run_three(f, args), exact, scale=4e6 if low else 1.0)


@fuzz(1)
@given(prog=grad_program())
def test_fuzz_grad_programs(prog):
    check_grad(*prog)


# ---------------------------------------------------------------------------
# regressions: bugs the fuzzing found


def test_complex_division_by_zero():
    """eager, the NumPy backend and JAX give C's infinities and NaN; numba raised
    ZeroDivisionError whatever its error model (scalar, scalarized and looped alike), and
    rounded finite quotients differently: helpers._cdiv/_cdiv64 are NumPy's loop, bit for bit."""
    x = np.array([1 + 2j, 0j, 1 + 0j, np.nan, 3 - 4j, 1e300j, -1.0, 2j], np.complex128)
    y = np.array([0j, 0j, 0j, 1j, 1 + 1e-300j, 1e-300 + 1e300j, -0.0, 3 - 1j], np.complex128)

    def f(x, y):
        return [lax.div(x, y), lax.div(x.astype(np.complex64), y.astype(np.complex64)),
                lax.div(x[0], y[0]), tnp.true_divide(tnp.tile(x, 5), tnp.tile(y, 5))]
    got, want, eager = run_three(f, [x, y])
    assert_agree("complex div", want, eager, [True] * 4, what="eager")
    assert_agree("complex div", got, want, [True] * 4)


def test_comparison_with_a_python_bool():
    """``tnp.equal(x, True)`` is ``x == 1`` (NumPy, JAX); numba computed ``(x != 0) == True``
    (rules._loop_dtypes: resolve_dtypes refuses ``bool``; fixed by B in b9bcda6)."""
    x = np.array([0, 1, 2, 127, -3], np.int8)
    y = np.array([0.5, 1.0, -0.0, 2.0, np.nan])

    def f(x, y):
        return [tnp.equal(x, True), tnp.not_equal(y, True), tnp.less(y, True),
                tnp.greater_equal(True, x), tnp.equal(y[1], False), tnp.equal(tnp.tile(x, 8), True)]
    got, want, eager = run_three(f, [x, y])
    assert_agree("compare with True", want, eager, [True] * 6, what="eager")
    np.testing.assert_array_equal(want[0], x == 1)
    assert_agree("compare with True", got, want, [True] * 6)


_SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e300, -1e-300, 710.0, -710.0, 0.5,
            3.0, 89.0, 1e-30, 2e30]
_CFNS = ["exp", "log", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
         "tanh", "arcsinh", "arccosh", "arctanh"]


def _bits_agree(name: str, got: np.ndarray, want: np.ndarray, args: list[np.ndarray]) -> None:
    """Both parts equal with their signs (a NaN's sign aside)."""
    bad = np.zeros(got.shape, bool)
    for a, b in ((got.real, want.real), (got.imag, want.imag)):
        bad |= ~((a == b) & (np.signbit(a) == np.signbit(b)) | np.isnan(a) & np.isnan(b))
    if bad.any():
        i = np.flatnonzero(bad)[:4]
        raise AssertionError(f"{name} at {[x[i] for x in args]}: numba {got[i]}, NumPy {want[i]}")


def test_complex_functions_and_power_are_numpys():
    """Complex exp, log, sqrt, trigonometric and hyperbolic functions, their inverses and
    power give NumPy's values bit for bit, special values included (helpers._cexp ...: glibc's
    libm, which NumPy's loops call; helpers._cpow: NumPy's power loop).  numba's cmath gave
    exp(710+1j) = inf+infj (NumPy 1.2e308+infj: e^710 overflows, e^710 cos 1 does not), the
    same in complex64 from exp(89+1j), sin(0.5+710j) and cosh(-710+3j) alike, exp(710+0j)
    inf+nanj (inf+0j), tan(inf+0j) nan+nanj (nan+0j), arctan(nanj) 1.57+nanj (nan+nanj), and
    numba's ``**`` (1+1e300j) ** (3+1e300j) = nan+nanj (-0+0j), complex64 (3j) ** 101 nan+infj
    (-inf+infj)."""
    from tangentia.compiler.numba_backend import helpers
    if helpers._LIBM is None:
        pytest.skip("compiled code calls glibc's libm (as NumPy does) only on x86-64 Linux; "
                    "the cmath fallback elsewhere differs at special values")
    z = np.array([complex(a, b) for a in _SPECIAL for b in _SPECIAL])
    pa = np.array([complex(a, b) for a in _SPECIAL[::3] for b in _SPECIAL[::2] for _ in range(6)])
    pb = np.array([complex(a, b) for _ in range(len(_SPECIAL[::3]) * len(_SPECIAL[::2]))
                   for a, b in ((3.0, 1e300), (-1.0, 0.0), (2.0, -0.0), (101.0, 0.0), (0.5, 0.1),
                                (-3.0, 0.0))])

    def f(z32, z64, a32, b32, a64, b64):
        return ([getattr(tnp, fn)(z) for z in (z64, z32) for fn in _CFNS]
                + [lax.pow(a64, b64), lax.pow(a32, b32)])
    with np.errstate(over="ignore"):
        args = [z.astype(np.complex64), z, pa.astype(np.complex64), pb.astype(np.complex64), pa, pb]
    got, want, eager = run_three(f, args)
    names = [f"{fn}[{dt}]" for dt in ("complex128", "complex64") for fn in _CFNS] + ["pow", "pow64"]
    for name, g, w, e in zip(names, got, want, eager):
        ins = [pa, pb] if name.startswith("pow") else [z]
        _bits_agree(name + " (NumPy backend against eager)", w, e, ins)
        _bits_agree(name, g, w, ins)


def test_complex_integer_pow():
    """``integer_pow`` of complex numbers is eager's repeated squaring (and a reciprocal with
    XLA's limits for a negative exponent); numba computed ``x ** 3.0`` with cmath: (-2j) ** 3 was
    -1.5e-15+8j (eager and JAX 0+8j), (inf+0j) ** 3 inf+nanj (nan+nanj)."""
    z = np.array([-2j, complex(np.inf, 0), 1 + 1j, 3 - 0.5j, complex(0, -0.0), complex(np.nan, 1),
                  complex(-np.inf, np.inf), 0.5 + 1e-300j])
    ys = [3, 5, -1, -3, 7]
    got, want, eager = run_three(lambda z, w: [lax.integer_pow(v, y) for v in (z, w) for y in ys],
                                 [z, z.astype(np.complex64)])
    exact = [np.asarray(w).dtype == np.complex128 for w in want]
    assert_agree("complex integer_pow", want, eager, [True] * len(want), what="eager")
    assert_agree("complex integer_pow", got, want, exact)
    np.testing.assert_array_equal(got[0][0], 8j)
    for g, w in zip(got, want):   # NaN and infinite parts where eager's are
        for part in ("real", "imag"):
            a, b = getattr(g, part), getattr(w, part)
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
            np.testing.assert_array_equal(np.isinf(a), np.isinf(b))


def test_comparison_with_an_out_of_range_python_int():
    """NumPy 2 (and eager) compare a Python int that does not fit the array's dtype by value:
    ``uint8 < -1`` is False everywhere; numba compared with the literal cast to uint8 (255)
    (fixed by B in 6e50ef4)."""
    x = np.array([0, 5, 255], np.uint8)

    def f(x):
        return [tnp.less(x, -1), tnp.greater(x, -1), tnp.where(x > 300, x, 0), tnp.equal(x, 300)]
    got, want, eager = run_three(f, [x])
    assert_agree("out-of-range int", want, eager, [True] * 4, what="eager")
    np.testing.assert_array_equal(want[0], [False] * 3)
    assert_agree("out-of-range int", got, want, [True] * 4)


def test_signed_unsigned_comparisons_and_integer_powers():
    """An int64 (or narrower signed) array compared with a uint64 one compares by value, as
    NumPy's ``qQ->?`` loops (and JAX): numba compared the bits as one type, so int32 -1 < uint64
    255 was False and -1 == 2**64 - 1 True (helpers._icmp; scalarized blocks and loops alike).
    Integer powers wrap as NumPy's and JAX's: numba's ``**`` saturated for large exponents
    (uint64 7 ** 2**40 was 2**64 - 1, NumPy 17160359449676742657; uint32 4294967294 **
    4294967294 was 4294967295, NumPy 0; helpers._ipow)."""
    a = np.array([-1, -1, -1, 5, -2 ** 31, 0], np.int32)
    b = np.array([2 ** 64 - 1, 255, 2 ** 63, 5, 2 ** 63 + 7, 0], np.uint64)
    pa = np.array([7, 5, 3, 2, 4294967294, 2147483647, 0, 1], np.uint64)
    pb = np.array([2 ** 40, 2 ** 62, 41, 64, 4294967294, 2147483647, 0, 2 ** 63], np.uint64)

    def f(a, b, a3, b3, pa, pb):
        return [tnp.less(a, b), tnp.equal(a, b), tnp.greater_equal(b, a.astype(np.int64)),
                tnp.where(a > b, 1, 0), tnp.not_equal(b, a[0]), tnp.less_equal(a3, b3),
                tnp.greater(b3[::-1], a3.astype(np.int8)),
                tnp.power(pa, pb), tnp.power(pa.astype(np.uint32), pb.astype(np.uint32)),
                tnp.power(pa.astype(np.int64), pb.astype(np.int64) & (2 ** 62 - 1)),
                tnp.power(pa[:3].astype(np.int8), pb[:3].astype(np.int8) & 127)]
    got, want, eager = run_three(f, [np.tile(a, 7), np.tile(b, 7), a[:3], b[:3], pa, pb])
    assert_agree("int vs uint64, powers", want, eager, [True] * 11, what="eager")
    np.testing.assert_array_equal(want[0][:6], [True, True, True, False, True, False])
    np.testing.assert_array_equal(want[7][:2], [17160359449676742657, 1])
    assert_agree("int vs uint64, powers", got, want, [True] * 11)


def test_negative_integer_power_raises_and_lgamma_at_minus_infinity():
    """An integer base to a negative integer power raises NumPy's ValueError on the numba
    backend too (it gave 0, 1 or -1, while eager and the NumPy backend raise: a tiered program
    changed from an error to numbers); lgamma(-inf) is +inf as eager's and JAX's (numba -inf)."""
    x = np.array([2, -1, 1], np.int32)
    y = np.array([-np.inf, 1.0, -2.5, 0.0])
    jaxpr, full = _program(lambda x, y: [tnp.power(x, -x), lax.lgamma(y)], [x, y])
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        get_backend("numba").compile(jaxpr)(*full)
    got, want, eager = run_three(lambda y: [lax.lgamma(y)], [y])
    assert got[0][0] == np.inf and want[0][0] == np.inf
    assert_agree("lgamma", got, want, [False])
