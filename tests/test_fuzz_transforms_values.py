"""Special values (infinities, NaN parts, ties) through eager, ``jit`` and derivatives, against
JAX 0.10.2 (x64): the numbers where NumPy's ufuncs and XLA's kernels disagree, and JAX's are
the reference.  Each test here failed before its fix.
"""
from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest

import tangentia as tg
from tangentia import lax as tlax
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)

_PARTS = [0.0, 1.0, -2.5, np.inf, -np.inf, np.nan]
_Z = np.array([complex(a, b) for a in _PARTS for b in _PARTS])


@pytest.mark.parametrize("n", [-3, -2, -1, 3])
def test_complex_integer_pow_at_infinities(n: int) -> None:
    """``integer_pow`` of complex values, JAX's order (repeated squaring, then one reciprocal
    as XLA divides): NumPy's power gave ``(inf+0j) ** -1 = nan`` where JAX gives 0."""
    want = np.asarray(jax.lax.integer_pow(_Z, n))
    assert_same(f"integer_pow {n}", run(tlax.integer_pow, _Z, n), want)
    assert_same(f"jit integer_pow {n}", run(tg.jit(lambda v: tlax.integer_pow(v, n)), _Z), want)
    # the cases fixed: an infinite base and a negative power is zero (a finite number)
    if n < 0:
        inf = np.isinf(_Z.real) | np.isinf(_Z.imag)
        with np.errstate(all="ignore"):
            got = np.asarray(tlax.integer_pow(_Z, n))
        assert np.all((got == want)[inf & np.isfinite(want)])


def _pairs() -> tuple[np.ndarray, np.ndarray]:
    parts = [0.0, 1.0, -0.0, np.inf, np.nan]
    zs = [complex(a, b) for a in parts for b in parts]
    x, y = np.array(list(itertools.product(zs, zs))).T
    return x, y


@pytest.mark.parametrize("name", ["max", "min"])
def test_complex_max_min_with_nan_parts(name: str) -> None:
    """lax.max/min (and tnp.maximum/minimum) of complex values: JAX picks lexicographically
    by selects (``max(1+nan j, 1+1j)`` is ``1+1j``); NumPy's ufunc propagated the NaN part.
    Their derivative goes to the selected argument (both halves at ties), as JAX's."""
    x, y = _pairs()
    ours, theirs = getattr(tlax, name), getattr(jax.lax, name)
    want = np.asarray(theirs(x, y))
    assert_same(name, run(ours, x, y), want)
    assert_same(f"jit {name}", run(tg.jit(ours), x, y), want)
    assert_same(f"vmap {name}", run(tg.vmap(ours), x, y), want)
    tnp_name = {"max": "maximum", "min": "minimum"}[name]
    assert_same(f"tnp.{tnp_name}", run(getattr(tg.numpy, tnp_name), x, y),
                np.asarray(getattr(jax.numpy, tnp_name)(x, y)))
    t = np.cos(np.arange(len(x))) + 0.5j
    for k in range(2):
        args = (x, y)
        f = (lambda v: ours(v, y)) if k == 0 else (lambda v: ours(x, v))
        g = (lambda v: theirs(v, y)) if k == 0 else (lambda v: theirs(x, v))
        assert_same(f"jvp {name} by {k}", run(tg.jvp, f, (args[k],), (t,)),
                    jax.jvp(g, (args[k],), (t,)))


def test_complex_clamp() -> None:
    """lax.clamp of complex values is XLA's: real parts compared only (``clamp(1+1j, 1+2j,
    2)`` is ``1+1j``); ours was NumPy's lexicographic max then min."""
    parts = [0.0, 1.0, 2.0, np.nan]
    zs = [complex(a, b) for a in parts for b in parts]
    lo, x, hi = np.array(list(itertools.product(zs, zs, zs))).T
    want = np.asarray(jax.lax.clamp(lo, x, hi))
    assert_same("clamp", run(tlax.clamp, lo, x, hi), want)
    assert_same("jit clamp", run(tg.jit(tlax.clamp), lo, x, hi), want)
    assert_same("scalar bounds", run(tlax.clamp, 1 + 1j, x, 2 + 0j),
                np.asarray(jax.lax.clamp(1 + 1j, x, 2 + 0j)))


@pytest.mark.parametrize("case", ["inside", "ties", "crossed", "scalar bounds"])
def test_clamp_derivatives_at_ties(case: str) -> None:
    """JAX's clamp derivative: ``x``'s where ``lo < x < hi``, ``lo``'s where ``x < lo < hi``,
    ``hi``'s where ``hi < x``, nothing at ties; ours (max then min) gave halves at ties."""
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    z, o = np.zeros(5), np.ones(5)
    lo, hi = {"inside": (z, o), "ties": (x, x), "crossed": (o, z), "scalar bounds": (z, o)}[case]
    for k in range(3):
        def f(L: Any) -> Any:
            if case == "scalar bounds":  # (JAX's own rule fails by a scalar bound: only x)
                return lambda b: L.clamp(0.0, b, 1.0).sum()
            return lambda a, b, c: L.clamp(a, b, c).sum()
        if case == "scalar bounds" and k != 1:
            continue
        args = (x,) if case == "scalar bounds" else (lo, x, hi)
        kk = 0 if case == "scalar bounds" else k
        assert_same(f"grad by {k}", run(tg.grad(f(tlax), argnums=kk), *args),
                    jax.grad(f(jax.lax), argnums=kk)(*args))
        assert_same(f"jit grad by {k}", run(tg.jit(tg.grad(f(tlax), argnums=kk)), *args),
                    jax.grad(f(jax.lax), argnums=kk)(*args))


@pytest.mark.parametrize("args", [
    (np.zeros((2, 3)), np.zeros(3), 1.0),           # a bound of a larger shape
    (np.zeros(3), np.zeros((2, 3)), 1.0),
    (0.0, np.zeros(3, np.float32), 1.0),            # dtypes differ
    (0, np.arange(3), 1.5),
])
def test_clamp_bad_arguments(args: tuple) -> None:
    """JAX's TypeErrors for bounds of another shape or dtype; ours broadcast (a (2, 3) result
    for a (3,) operand) and promoted."""
    theirs = run(jax.lax.clamp, *args)
    ours = run(tlax.clamp, *args)
    assert isinstance(theirs, TypeError) and isinstance(ours, TypeError)
    assert str(ours).startswith(str(theirs))


# ---------------------------------------------------------------------------
# inputs that are not arrays


class _Wrapped:
    """An object that converts itself by JAX's ``__jax_array__`` protocol (as equinox's and
    flax's wrappers of parameters do)."""

    def __init__(self, value: Any, N: Any) -> None:
        self.value, self.N = value, N

    def __jax_array__(self) -> Any:
        return self.N.asarray(self.value)


@pytest.mark.parametrize("name", ["asarray", "array", "concatenate", "tile", "pad"])
def test_jax_array_protocol_in_explicit_conversions(name: str) -> None:
    """JAX 0.10.2 honours ``__jax_array__`` in ``jnp.asarray``/``jnp.array`` (and the functions
    that call them); ours raised TypeError (an object array)."""
    v = np.array([1.0, -2.0, 3.5])

    def call(N: Any) -> Any:
        w = _Wrapped(v, N)
        return {"asarray": lambda: N.asarray(w), "array": lambda: N.array(w, dtype=N.float32),
                "concatenate": lambda: N.concatenate([w, w]), "tile": lambda: N.tile(w, 2),
                "pad": lambda: N.pad(w, 1)}[name]()
    assert_same(name, run(call, tg.numpy), call(jax.numpy))
    # inside jit and grad, __jax_array__ may return a traced value
    f = lambda N: (lambda a: N.sum(N.asarray(_Wrapped(a * a, N)) * 2.0))  # noqa: E731
    assert_same("jit", run(tg.jit(f(tg.numpy)), v), jax.jit(f(jax.numpy))(v))
    assert_same("grad", run(tg.grad(f(tg.numpy)), v), jax.grad(f(jax.numpy))(v))


class _Opaque:
    pass


@pytest.mark.parametrize("case", ["where object", "where str", "lax.select", "select_n",
                                  "logical_and", "logical_or", "logical_not", "positive",
                                  "copy", "copy str"])
def test_objects_and_strings_are_not_arrays(case: str) -> None:
    """JAX's TypeError for an object or a string where an array is expected; NumPy's loops took
    them eagerly (``where(True, obj, 0)`` was an object array, ``logical_and(x, obj)``
    compared truthiness, ``copy("abc")`` a string array)."""
    o, x = _Opaque(), np.ones(2)

    def call(N: Any, L: Any) -> Any:
        return {"where object": lambda: N.where(True, o, 0.0),
                "where str": lambda: N.where(True, "a", "b"),
                "lax.select": lambda: L.select(np.array(True), o, 0.0),
                "select_n": lambda: L.select_n(np.array(True), o, 0.0),
                "logical_and": lambda: N.logical_and(x, o),
                "logical_or": lambda: N.logical_or(o, x),
                "logical_not": lambda: N.logical_not(o),
                "positive": lambda: N.positive(o),
                "copy": lambda: N.copy(o), "copy str": lambda: N.copy("abc")}[case]()
    assert isinstance(run(call, jax.numpy, jax.lax), TypeError)
    ours = run(call, tg.numpy, tlax)
    assert isinstance(ours, TypeError), ours
    assert "is not a valid JAX type" in str(ours) or "not a valid" in str(ours)


def test_lgamma_at_minus_infinity() -> None:
    """lgamma(-inf) is +inf in JAX (C's lgamma: |Gamma| grows without bound); SciPy's gammaln,
    which ours evaluated, gives -inf (the numba backend's helper followed SciPy)."""
    x = np.array([-np.inf, np.inf, 0.0, -1.0, 2.5, np.nan])
    want = np.asarray(jax.lax.lgamma(x))
    assert_same("lgamma", run(tlax.lgamma, x), want)
    assert_same("jit lgamma", run(tg.jit(tlax.lgamma, backend="numpy"), x), want)
    assert_same("gammaln", run(tg.scipy.special.gammaln, x),
                np.asarray(jax.scipy.special.gammaln(x)))
    assert_same("float32", run(tlax.lgamma, x.astype(np.float32)),
                np.asarray(jax.lax.lgamma(x.astype(np.float32))), rtol=1e-6)


@pytest.mark.parametrize("src", ["float16", "float32", "float64", "bfloat16", "complex128"])
def test_eager_astype_to_integers_saturates(src: str) -> None:
    """An eager result's ``.astype(int)`` converts as JAX's (and as ``jit`` did): truncated,
    saturating at the limits, NaN to 0.  It was NumPy's C cast: ``inf`` and ``7e4`` in float16
    gave INT_MIN (W1's report), ``1e300`` in float64 INT_MIN where JAX gives INT_MAX."""
    import ml_dtypes
    dt = ml_dtypes.bfloat16 if src == "bfloat16" else np.dtype(src)
    with np.errstate(all="ignore"):
        v = np.array([np.inf, 7e4, -np.inf, np.nan, 1e300, -3.7, 2.9, 300.0]).astype(dt)
    for to in (np.int32, np.uint8, np.int8, np.uint64, np.bool_):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = tg.numpy.asarray(v).astype(to)
            theirs = np.asarray(jax.numpy.asarray(v).astype(to))
            jitted = tg.jit(lambda a: a.astype(to))(v)
        assert type(ours).__name__ == "ArrayImpl"
        assert_same(f"{src} to {np.dtype(to).name}", ours, theirs)
        assert_same(f"jit {src} to {np.dtype(to).name}", ours, jitted)


def test_jax_array_protocol_is_not_honoured_by_jit_arguments() -> None:
    """JAX 0.10.2 refuses an ``__jax_array__`` object as a jit argument with a ValueError
    ('Triggering __jax_array__() during abstractification is no longer supported'); ours
    raised the TypeError of any non-array."""
    f = lambda a: a * 2.0  # noqa: E731
    theirs = run(jax.jit(f), _Wrapped(np.ones(2), jax.numpy))
    ours = run(tg.jit(f), _Wrapped(np.ones(2), tg.numpy))
    assert isinstance(theirs, ValueError) and isinstance(ours, ValueError), ours
    assert str(ours).startswith(str(theirs).split("\n")[0])
