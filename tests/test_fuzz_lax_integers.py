"""Silent wrong numbers in integer elementwise numerics: values against JAX 0.10.2 (x64) on
grids of special values of every integer width (0, +-1, the extremes, the bit width), eagerly,
under ``jit`` with the NumPy backend, and the numba backend against eager evaluation bit for
bit, with one compiled program for all widths.

Where JAX's numbers are not the arithmetic's, ours stay and the test says why: ``jnp.power``
of integers squares only the exponent's 6 low bits (``jnp.power(2, 64)`` is 1, ``0 ** 64`` is
1), where NumPy's (ours) wraps modulo 2**bits; an integer to a negative power raises NumPy's
ValueError (JAX's values are its squaring loop's).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from test_fuzz_elementwise_jax import _jax


def _quiet(f, *args):
    with np.errstate(all="ignore"):
        return f(*args)


def _grid(dtype):
    """Every pair of special values of ``dtype`` (dividend, divisor)."""
    info = np.iinfo(dtype)
    vals = [v for v in (0, 1, -1, 2, -2, 7, -7, info.bits, info.min, info.min + 1, info.max)
            if info.min <= v <= info.max]
    v = np.array(sorted(set(vals)), dtype)
    return np.repeat(v, v.size), np.tile(v, v.size)


def _report(name, got, want, *columns):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    bad = np.flatnonzero(got != want)
    rows = [" ".join(repr(np.ravel(c)[i]) for c in (*columns, got, want)) for i in bad[:8]]
    assert bad.size == 0, f"{name}: {bad.size} of {got.size} differ, e.g.\n" + "\n".join(rows)


def _divisions(np_like, lax_like):
    """The integer quotients and remainders of a library (ours or JAX's)."""
    return {"floor_divide": np_like.floor_divide, "//": lambda x, y: np_like.asarray(x) // y,
            "divmod[0]": lambda x, y: np_like.divmod(x, y)[0],
            "divmod[1]": lambda x, y: np_like.divmod(x, y)[1],
            "remainder": np_like.remainder, "fmod": np_like.fmod,
            "lax.div": lax_like.div, "lax.rem": lax_like.rem}


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint64"])   # (every width once)
def test_integer_division_by_zero_as_jax(dtype):
    """XLA's integer quotient by zero has every bit set; JAX's floor division then takes one
    off a signed quotient where the remainder has another sign than 0's: ``7 // 0`` and
    ``-7 // 0`` are -2, ``0 // 0`` is -1, unsigned ``x // 0`` the maximum (NumPy's, ours
    before: 0).  ``INT_MIN // -1`` wraps to ``INT_MIN``; remainders by zero are 0
    (``lax.rem``: ``x``)."""
    jax = _jax()
    x, y = _grid(dtype)
    ours, theirs = _divisions(tnp, tg.lax), _divisions(jax.numpy, jax.lax)
    for name, f in ours.items():
        want = _quiet(theirs[name], x, y)
        _report(f"{name}({dtype}) eager", _quiet(f, x, y), want, x, y)
        _report(f"{name}({dtype}) jit", _quiet(tg.jit(f, backend="numpy"), x, y), want, x, y)


def test_integer_division_by_zero_named_cases():
    """The values JAX 0.10.2 gives (no JAX needed)."""
    x = np.array([7, -7, 0, -128], np.int8)
    y = np.array([0, 0, 0, -1], np.int8)
    _report("floor_divide int8", _quiet(tnp.floor_divide, x, y),
            np.array([-2, -2, -1, -128], np.int8))
    u = np.array([0, 5, 255], np.uint8)
    _report("floor_divide uint8", _quiet(tnp.floor_divide, u, np.uint8(0)),
            np.full(3, 255, np.uint8))


def test_numba_integer_division_matches_eager():
    """One numba program over four widths: the quotients and remainders of the grid, as a
    loop and as scalars, bit for bit as eager evaluation (``helpers._ifloordiv``); it never
    traps (``INT_MIN // -1``, ``x // 0``)."""
    widths = ["int8", "int64", "uint8", "uint64"]   # (signed and unsigned, narrow and wide:
    grids = [_grid(dt) for dt in widths]            # one compile stays cheap)
    names = ["floor_divide", "divmod[1]", "lax.div", "lax.rem"]
    fs = [_divisions(tnp, tg.lax)[n] for n in names]

    def f(*args):
        outs = []
        for x, y in zip(args[0::2], args[1::2]):
            outs += [g(x, y) for g in fs] + [tnp.floor_divide(x[:3], y[-3:])]
        return outs
    args = [a for g in grids for a in g]
    want = _quiet(f, *args)
    got = _quiet(tg.jit(f, backend="numba"), *args)
    for k, (g, w) in enumerate(zip(got, want)):
        per = len(names) + 1
        dt, name = widths[k // per], (names + ["floor_divide (scalars)"])[k % per]
        _report(f"{name}({dt}) numba", g, w)


_FLOATS_TO_INT = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 127.5, 128.0, -129.0,
                  255.9, 256.0, 65535.5, 65536.0, 2.0**31, -2.0**31 - 1e3, 2.0**32, 2.0**63,
                  -2.0**63, 2.0**64, 1e20, -1e20, 3e38]


@pytest.mark.parametrize("dtype", ["int8", "uint64"])
def test_bits_and_conversions_as_jax(dtype):
    """Guards on values that already agree with JAX (eagerly and under jit): shifts by the
    bit width or more and by negative amounts (0, or all sign bits), ``population_count``,
    ``clz``, and float -> integer conversion of NaN (0), infinities and out-of-range values
    (saturating; NumPy's C cast is undefined there) from float64/float32/float16/bfloat16."""
    jax = _jax()
    x, y = _grid(dtype)
    ours = {"shift_left": tg.lax.shift_left, "shift_right_logical": tg.lax.shift_right_logical,
            "shift_right_arithmetic": tg.lax.shift_right_arithmetic, "left_shift": tnp.left_shift,
            "right_shift": tnp.right_shift}
    for name, f in ours.items():
        want = _quiet(getattr(jax.lax, name, None) or getattr(jax.numpy, name), x, y)
        for got in (_quiet(f, x, y), _quiet(tg.jit(f, backend="numpy"), x, y)):
            _report(f"{name}({dtype})", got, want, x, y)
    v = x[:: int(np.sqrt(x.size))]
    for name in ("population_count", "clz"):
        want = _quiet(getattr(jax.lax, name), v)
        for f in (getattr(tg.lax, name), tg.jit(getattr(tg.lax, name), backend="numpy")):
            _report(f"{name}({dtype})", _quiet(f, v), want, v)
    for src in ("float64", "float32", "float16", "bfloat16"):
        fv = _quiet(np.asarray, _FLOATS_TO_INT, jax.numpy.dtype(src))
        want = _quiet(lambda a: jax.lax.convert_element_type(a, dtype), fv)
        for f in (lambda a: tg.lax.convert_element_type(a, dtype),
                  lambda a: tnp.asarray(a).astype(dtype)):
            for got in (_quiet(f, fv), _quiet(tg.jit(f, backend="numpy"), fv)):
                _report(f"{src} -> {dtype}", got, want, fv)
