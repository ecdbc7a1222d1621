"""Differential fuzzing of the numba backend's data movement and per-axis array operations:
generated programs run compiled by numba, by the NumPy backend (the reference) and eagerly,
and must agree bit for bit (``test_fuzz_numba.run_three``/``compare``).

* Chains of data movement (basic slices with any start, stop and step, transposes, ``rev``,
  broadcasts, integer indices, new axes, reshapes, ``dynamic_slice`` with out-of-range starts,
  concatenation, ``pad`` with negative widths) between elementwise operations: the numba
  backend composes a chain into one read of its operand (lazy values, ``rules._remap``), each
  step's index expression put into the one before. ``x[::-1][1:]`` read ``x[33 - i]`` where
  ``x[31 - i]`` is right (52d4478), found by the second test below.
* Operations along each axis of 1-D to 3-D arrays of every dtype, the edge cases of their
  definitions: ``argmax``/``argmin`` ties and NaN, ``cumsum``/``cumprod``/``cummax``/``cummin``
  (reversed too), stable ``sort``/``argsort`` with NaN, reductions (size-0 axes included),
  ``where`` with NaN, ``dynamic_slice``/``dynamic_update_slice`` with out-of-range starts
  (clamped, as JAX's), scatter with repeated and out-of-range indices, gather modes, ``pad``
  with negative widths, ``rev``, ``reduce_window`` (strides, padding) and the gradient of a
  max pool, rounding (half to even), ``nextafter``/``copysign``/``spacing``, integer division
  and remainder signs, shifts by the bit width and more.

``TANGENTIA_FUZZ_EXAMPLES=100 TANGENTIA_FUZZ_RANDOM=1 pytest tests/test_fuzz_numba_movement.py``
fuzzes locally; the default runs a few derandomized examples (one numba compile each; the
chains' third finds 52d4478's bug).
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

from test_fuzz_numba import DTYPES, compare, fuzz as _fuzz, run_three, values  # noqa: E402


def fuzz(default: int) -> settings:
    """test_fuzz_numba's settings, without shrinking (each step a numba compile: a failing
    example is reported as drawn, its description naming each chain and operation)."""
    return settings(_fuzz(default), phases=[Phase.explicit, Phase.generate])

# ---------------------------------------------------------------------------
# chains of data movement


def _slices(draw: Any, ndim: int) -> tuple:
    out = []
    for _ in range(ndim):
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2, -3]))
        start = draw(st.one_of(st.none(), st.integers(-12, 12)))
        stop = draw(st.one_of(st.none(), st.integers(-12, 12)))
        out.append(slice(start, stop, step))
    return tuple(out)


# (kind, parameters) -> a step of a chain, applied to a value of any shape
def _step(x: Any, kind: str, p: Any) -> Any:
    if kind == "slice":
        return x[p[:x.ndim]]
    if kind == "transpose":
        perm = tuple(a for a in p if a < x.ndim)
        return tnp.transpose(x, perm)
    if kind == "rev":
        return lax.rev(x, tuple(a for a in range(x.ndim) if p[a % len(p)]))
    if kind == "broadcast":
        return tnp.broadcast_to(x[None], (2,) + x.shape) if x.ndim < 3 else x
    if kind == "int":
        return x[p % x.shape[0]] if x.ndim > 1 and x.shape[0] else x
    if kind == "newaxis":
        return x[:, None] if 0 < x.ndim < 3 else x
    if kind == "elementwise":
        return x * x.dtype.type(2) + x.dtype.type(1) if x.dtype != np.bool_ else ~x
    if kind == "reshape":
        return tnp.reshape(x, (-1,))
    if kind == "dynamic_slice":   # (a start out of range: clamped into the array, as JAX's)
        return lax.dynamic_slice(x, [p - 4] * x.ndim, [(d + 1) // 2 for d in x.shape])
    if kind == "concatenate":
        return tnp.concatenate([x, x[::-1]], axis=0) if x.ndim else x
    if kind == "pad":
        return (lax.pad(x, np.zeros((), x.dtype), [(1, -1, p % 2)] + [(0, 0, 0)] * (x.ndim - 1))
                if x.ndim and x.shape[0] > 1 else x)
    raise ValueError(kind)


_KINDS = ["slice"] * 5 + ["transpose", "rev", "rev", "broadcast", "int", "newaxis",
                          "elementwise", "reshape", "dynamic_slice", "concatenate", "pad"]
# (33,) and the 2-D and 3-D ones: results are loops reading the operand through the composed
# index; (3,), (2, 2): scalarized results, indexed with ints
_CHAIN_SHAPES = [(33,), (40,), (7, 9), (5, 6, 7), (64, 3), (3, 50), (3,), (2, 2)]
_CHAIN_DTYPES = [np.dtype(d) for d in (np.float64, np.float32, np.int32, np.uint8, np.int64,
                                       np.complex128, np.bool_)]


@st.composite
def movement_program(draw: Any) -> tuple:
    shape = draw(st.sampled_from(_CHAIN_SHAPES))
    dt = draw(st.sampled_from(_CHAIN_DTYPES))
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) * 3 - 17)
    x = (x % 2 == 0) if dt == np.bool_ else x.astype(dt) * (1 - 1j if dt.kind == "c" else 1)
    chains = []
    for _ in range(draw(st.integers(4, 8))):
        chain = []
        for _ in range(draw(st.integers(2, 5))):
            kind = draw(st.sampled_from(_KINDS))
            p: Any = (_slices(draw, 3) if kind == "slice" else
                      draw(st.permutations([0, 1, 2])) if kind == "transpose" else
                      draw(st.lists(st.booleans(), min_size=3, max_size=3)) if kind == "rev" else
                      draw(st.integers(0, 9)))
            chain.append((kind, p))
        chains.append(chain)

    def f(x: Any) -> list:
        out = []
        for chain in chains:
            y = tnp.asarray(x)
            for kind, p in chain:
                y = _step(y, kind, p)
            out.append(y)
        return out
    desc = [" > ".join(f"{k}{p if k != 'slice' else ''}" for k, p in c) + f" [{dt}{shape}]"
            for c in chains]
    return f, [x], [True] * len(chains), desc


@fuzz(3)
@given(prog=movement_program())
def test_fuzz_data_movement_chains(prog: tuple) -> None:
    f, args, exact, desc = prog
    compare(" ; ".join(desc), *run_three(f, args), exact)


# ---------------------------------------------------------------------------
# operations along each axis


def _axes(x: Any) -> range:
    return range(x.ndim)


def _nonempty(x: Any) -> list:
    return [a for a in range(x.ndim) if x.shape[a]]


def _shift_counts(x: Any) -> Any:
    bits = np.dtype(x.dtype).itemsize * 8
    counts = [0, 1, bits - 1, bits, bits + 1, 2 * bits, -1, -bits]
    wrap = np.dtype(x.dtype).kind == "u"
    return np.array([c % 2 ** bits if wrap else c for c in counts], object).astype(x.dtype)


def _windows(x: Any) -> list:
    if x.ndim < 2 or not x.size:
        return []
    one = (1,) * (x.ndim - 2)
    out = []
    dt = np.dtype(x.dtype)
    for comp, init in ((lax.max, -np.inf if dt.kind == "f" else np.iinfo(dt).min),
                       (lax.min, np.inf if dt.kind == "f" else np.iinfo(dt).max), (lax.add, 0)):
        for dims, strides, pad in (
                (one + (2, 2), (1,) * x.ndim, "VALID"),
                (one + (2, 1), one + (2, 1), "SAME"),
                ((1,) * (x.ndim - 1) + (3,), (1,) * x.ndim, [(0, 0)] * (x.ndim - 1) + [(1, 2)])):
            if pad == "VALID" and any(w > d for w, d in zip(dims, x.shape)):
                continue
            out.append(lax.reduce_window(x, dt.type(init), comp, dims, strides, pad))
    return out


def _maxpool_grad(x: Any) -> list:
    if x.ndim < 2 or x.shape[-1] < 2 or x.shape[-2] < 2:
        return []
    one = (1,) * (x.ndim - 2)

    def loss(y: Any) -> Any:
        return tnp.sum(lax.reduce_window(y, -np.inf, lax.max, one + (2, 2), one + (1, 2),
                                         "VALID") ** 2)
    return [tg.grad(loss)(tnp.nan_to_num(x))]


def _scatters(x: Any) -> list:
    if not x.size:
        return []
    j = tnp.array([0, 1, 0, 0, -1, 1, 5, -7], np.int32)
    out = [x.at[j].add(x[0]), x.at[j].set(x[-1], mode="drop"), x.at[j].set(x[1 % x.shape[0]]),
           x.at[j].mul(x[0], mode="clip")]
    if np.dtype(x.dtype).kind != "c":
        out += [x.at[j].min(x[0]), x.at[j].max(x[-1], mode="drop")]
    return out


def _gathers(x: Any, i: Any) -> list:
    if not x.size:
        return []
    out = [x.at[i].get(mode="clip"), x.at[i].get(mode="fill", fill_value=3)]
    if x.ndim >= 2 and x.shape[1]:
        key = x.real if np.dtype(x.dtype).kind == "c" else x
        out += [x[:, i % x.shape[1]], x[i % x.shape[0], i % x.shape[1]],
                tnp.take(x, i, axis=1, mode="clip"), tnp.take(x, i, axis=-1, mode="wrap"),
                tnp.take_along_axis(x, tnp.argsort(key, axis=0, stable=True), axis=0)]
    return out


def _dynamic(x: Any, i: Any) -> list:
    out = []
    for s in ((-5, 100), (i[0], i[1]), (i[2], i[3])):
        starts = [s[j % 2] for j in range(x.ndim)]
        size = [min(2, d) for d in x.shape]
        out.append(lax.dynamic_slice(x, starts, size))
        out.append(lax.dynamic_update_slice(x, tnp.zeros(size, x.dtype), starts))
    if x.ndim and x.shape[0]:
        out.append(lax.dynamic_index_in_dim(x, i[4], 0, keepdims=False))
    return out


def _pads(x: Any) -> list:
    out = []
    for cfg in ((1, -1, 1), (-1, 2, 0), (2, -2, 2), (-2, -1, 1), (0, 0, 3)):
        for a in range(x.ndim):
            widths = [cfg if j == a else (1, 0, 0) for j in range(x.ndim)]
            if all(lo + hi + d + max(d - 1, 0) * it >= 0
                   for (lo, hi, it), d in zip(widths, x.shape)):
                out.append(lax.pad(x, np.zeros((), x.dtype), widths))
    return out


def _int_division(x: Any) -> list:
    y = x[..., ::-1] if x.ndim else x
    three = x.dtype.type(3)
    return [tnp.floor_divide(x, y), tnp.remainder(x, y), tnp.fmod(x, y), lax.div(x, y),
            lax.rem(x, y), tnp.divmod(x, y)[1], x // three, x % three,
            x % x.dtype.type(-3) if np.dtype(x.dtype).kind == "i" else x]


def _shifts(x: Any) -> list:
    s = tnp.asarray(_shift_counts(x))
    xs = tnp.resize(x, (8,)) if x.size else tnp.zeros(8, x.dtype)
    bits = np.dtype(x.dtype).itemsize * 8
    return [lax.shift_left(xs, s), lax.shift_right_logical(xs, s),
            lax.shift_right_arithmetic(xs, s), tnp.left_shift(xs, s), tnp.right_shift(xs, s),
            xs << 3, xs >> (bits - 1), lax.shift_left(s, xs), tnp.right_shift(s, xs)]


# name -> (dtype kinds, exact?, fn(x, i))
AXIS_OPS: dict[str, tuple[str, bool, Callable[[Any, Any], list]]] = {
    "argmax": ("fiub", True, lambda x, i: [tnp.argmax(x, axis=a) for a in _nonempty(x)]
               + ([tnp.argmax(tnp.transpose(x), axis=0)] if x.ndim and x.shape[-1] else [])),
    "argmin": ("fiub", True, lambda x, i: [tnp.argmin(x, axis=a) for a in _nonempty(x)]
               + ([tnp.argmin(x[::-1], axis=-1)] if x.ndim and x.shape[-1] else [])),
    "cumsum": ("fiu", False, lambda x, i: [tnp.cumsum(x, axis=a) for a in _axes(x)]
               + [lax.cumsum(x, a, reverse=True) for a in _axes(x)]),
    "cumprod": ("fiu", False, lambda x, i: [tnp.cumprod(x, axis=a) for a in _axes(x)]),
    "cummax": ("fiu", True, lambda x, i: [lax.cummax(x, a) for a in _axes(x)]
               + [lax.cummin(x, a, reverse=True) for a in _axes(x)]),
    "cumlogsumexp": ("f", False, lambda x, i: [lax.cumlogsumexp(x, a) for a in _axes(x)]),
    "sort": ("fiub", True, lambda x, i: [tnp.sort(x, axis=a) for a in _axes(x)]
             + [tnp.argsort(x, axis=a, stable=True) for a in _axes(x)]
             + ([tnp.argsort(x[..., ::-1], axis=-1, descending=True, stable=True)]
                if x.ndim else [])),
    "sum": ("fiubc", False, lambda x, i: [tnp.sum(x, axis=a) for a in _axes(x)]
            + [tnp.prod(x, axis=a) for a in _axes(x)]
            + [tnp.sum(x, axis=tuple(range(x.ndim))[:2])]),
    "minmax": ("fiub", True, lambda x, i: [lax.reduce_max(x, (a,)) for a in _axes(x)]
               + [lax.reduce_min(x, tuple(_axes(x)))] + [tnp.any(x, axis=a) for a in _axes(x)]
               + ([tnp.all(x, axis=-1)] if x.ndim else [])),
    "bits": ("iub", True, lambda x, i: [r(x, (a,)) for a in _axes(x)
                                        for r in (lax.reduce_and, lax.reduce_or, lax.reduce_xor)]),
    "where": ("fiubc", True, lambda x, i: [tnp.where(x == x, x, x[..., ::-1]),
                                           tnp.where(tnp.isnan(x) if np.dtype(x.dtype).kind in "fc"
                                                     else x != 0, x.dtype.type(0), x)]),
    "dynamic": ("fiubc", True, _dynamic),
    "scatter": ("fiuc", False, lambda x, i: _scatters(x)),
    "gather": ("fiubc", True, _gathers),
    "pad": ("fiubc", True, lambda x, i: _pads(x)),
    "rev": ("fiubc", True, lambda x, i: [lax.rev(x, (a,)) for a in _axes(x)]
            + [lax.rev(x, tuple(_axes(x)))[..., 1:]]),
    "clamp": ("fiu", True, lambda x, i: [lax.clamp(x.dtype.type(1), x, x.dtype.type(3)),
                                         lax.clamp(x.dtype.type(3), x, x.dtype.type(1)),
                                         tnp.clip(x, x.dtype.type(1), None),
                                         tnp.clip(x, None, x.dtype.type(3))]),
    "round": ("f", True, lambda x, i: [tnp.round(x), tnp.round(x, 1), tnp.round(x, -1),
                                       tnp.rint(x), lax.round(x, 1), lax.round(x, 0),
                                       tnp.round(x * x.dtype.type(10), 2)]),
    "next": ("f", True, lambda x, i: [lax.nextafter(x, x[..., ::-1]), tnp.nextafter(x, 0),
                                      tnp.copysign(x, x[..., ::-1]), tnp.copysign(1, x),
                                      tnp.nextafter(x, np.inf), tnp.spacing(x)]),
    "windows": ("fiu", True, lambda x, i: _windows(x)),
    "maxpool_grad": ("f", False, lambda x, i: _maxpool_grad(x)),
    "int_division": ("iu", True, lambda x, i: _int_division(x)),
    "shifts": ("iu", True, lambda x, i: _shifts(x)),
    "top_k": ("fiu", True, lambda x, i: list(lax.top_k(x, 2))
              if x.ndim and x.shape[-1] >= 2 else []),
}
_AXIS_SHAPES = [(2, 3, 4), (3, 1, 5), (0, 3, 2), (4, 0), (1, 7), (5, 3), (6,), (33,), (2, 2, 9)]
_INDEX = [0, -1, 2, 5, -7, 100, -100, 1]


@st.composite
def axis_program(draw: Any) -> tuple:
    dt = draw(st.sampled_from(DTYPES))
    shape = draw(st.sampled_from(_AXIS_SHAPES))
    x = draw(values(dt, shape))
    names = sorted(n for n, (kinds, _, _) in AXIS_OPS.items() if dt.kind in kinds)
    chosen = draw(st.lists(st.sampled_from(names), min_size=4, max_size=8, unique=True))
    idx = np.array(draw(st.permutations(_INDEX)), np.int32)
    # (the number of outputs of each, found eagerly)
    counts = [len(AXIS_OPS[n][2](tnp.asarray(x), tnp.asarray(idx))) for n in chosen]

    def f(x: Any, i: Any) -> list:
        x, out = tnp.asarray(x), []
        for n in chosen:
            out += AXIS_OPS[n][2](x, i)
        return out
    exact = [AXIS_OPS[n][1] for n, c in zip(chosen, counts) for _ in range(c)]
    return f, [x, idx], exact, [f"{n}[{dt}{shape}]" for n in chosen]


@fuzz(2)
@given(prog=axis_program())
def test_fuzz_operations_along_each_axis(prog: tuple) -> None:
    f, args, exact, desc = prog
    with np.errstate(all="ignore"):
        compare(" ; ".join(desc), *run_three(f, args), exact)
