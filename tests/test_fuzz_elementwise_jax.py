"""Silent wrong numbers in elementwise numerics: values against JAX 0.10.2 (x64) on grids of
special values (signed zeros, infinities, NaN, huge values), eagerly, and the numba backend
against eager evaluation (the NumPy backend runs the same ``impl``) bit for bit, with one
compiled program per test.

Where JAX's numbers are platform noise, the comparison says so and does not ask for them:

* XLA on CPU flushes subnormal numbers to zero (inputs, results and intermediates): a result
  that is subnormal here and zero in JAX agrees, and the grids hold no value whose
  intermediate ratio is subnormal.
* XLA contracts multiply-adds into fused ones where NumPy rounds each product, so finite
  quotients may differ in the last bits (relative to the quotient's magnitude).
* The sum of a product that overflowed depends on the order of accumulation: JAX's own
  ``A @ B`` gives ``inf`` or ``nan`` for the same row and column depending on the matrix's
  shape (Eigen's blocking), so overflowing matrix products are not compared with JAX.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax

_JAX_REASON = "JAX 0.10.2 is the reference these tests compare with"


def _jax():
    jax = pytest.importorskip("jax", reason=_JAX_REASON)
    jax.config.update("jax_enable_x64", True)
    return jax


def _quiet(f, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(f(*args))


def _parts(v):
    v = np.asarray(v)
    if v.dtype.kind == "c":
        return [v.real, v.imag]
    return [v.astype(np.float64) if v.dtype.kind == "V" else v]   # (bfloat16: exact in float64)


def _same_bits(a, b):
    """Elementwise: every part the same bits (signed zeros told apart), or both NaN."""
    ok = np.ones(np.shape(a), bool)
    for x, y in zip(_parts(a), _parts(b)):
        ok &= ((x == y) & (np.signbit(x) == np.signbit(y))) | (np.isnan(x) & np.isnan(y))
    return ok


def _like_jax(ours, theirs, rtol):
    """``_same_bits``, or JAX's platform noise: parts below the smallest normal number, one of
    them not zero (flushed to zero), or finite values within ``rtol`` of the magnitude (fused
    multiply-adds, last-bit rounding); zeros of opposite signs differ."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    ok = _same_bits(ours, theirs)
    tiny = np.finfo(_parts(theirs)[0].dtype).tiny
    flushed = np.ones(ours.shape, bool)
    for x, y in zip(_parts(ours), _parts(theirs)):
        flushed &= ((x == y) & (np.signbit(x) == np.signbit(y))) | (np.isnan(x) & np.isnan(y)) \
            | ((np.abs(x) < tiny) & (np.abs(y) < tiny) & ((x != 0) | (y != 0)))
    with np.errstate(all="ignore"):
        near = (np.isfinite(ours) & np.isfinite(theirs) & ((ours != 0) | (theirs != 0))
                & (np.abs(ours - theirs) <= rtol * np.abs(theirs)))
    return ok | flushed | near


def _report(name, ok, *columns):
    bad = np.flatnonzero(~np.asarray(ok))
    rows = [" ".join(repr(np.ravel(c)[i]) for c in columns) for i in bad[:8]]
    assert bad.size == 0, f"{name}: {bad.size} of {np.size(ok)} differ, e.g.\n" + "\n".join(rows)


# Special parts: no value whose ratio to another is subnormal (XLA would flush it)
_PARTS128 = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e300]
_PARTS64 = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e30]


def _pairs(parts, dtype):
    quads = np.array(list(itertools.product(parts, repeat=4)))
    a = (quads[:, 0] + 0j).astype(dtype)
    a.imag = quads[:, 1]
    b = (quads[:, 2] + 0j).astype(dtype)
    b.imag = quads[:, 3]
    return a, b


@pytest.mark.parametrize("dtype,parts,rtol", [(np.complex128, _PARTS128, 4e-16),
                                              (np.complex64, _PARTS64, 2e-7)])
def test_complex_division_special_values_as_jax(dtype, parts, rtol):
    """JAX divides complex numbers as C99's Annex G: where Smith's algorithm gives NaN in both
    parts, the limit (``1 / (inf+infj)`` is 0, ``(inf+0j) / 1j`` is -inf j), and a zero
    divisor gives ``copysign(inf, y.real) * x`` part by part.  NumPy's division (ours) gave
    NaN or other infinities in 496 of these 4,096 pairs (complex128)."""
    jnp = _jax().numpy
    a, b = _pairs(parts, dtype)
    ours = _quiet(tnp.divide, a, b)
    theirs = _quiet(lambda a, b: jnp.asarray(a) / jnp.asarray(b), a, b)
    assert ours.dtype == theirs.dtype == dtype
    _report("divide", _like_jax(ours, theirs, rtol), a, b, ours, theirs)
    # integer_pow's negative powers divide the same way (1 / x ** |y|)
    c = a[np.isfinite(a) | np.isinf(a)]    # (keep values with a NaN part out: no limit there)
    ours = _quiet(lax.integer_pow, c, -1)
    theirs = _quiet(lambda c: _jax().lax.integer_pow(jnp.asarray(c), -1), c)
    _report("integer_pow -1", _like_jax(ours, theirs, rtol), c, ours, theirs)


def test_complex_division_named_cases():
    """A few of the pairs, spelled out (the values JAX 0.10.2 gives; no JAX needed)."""
    inf, nan = np.inf, np.nan
    x = np.array([1, 0j, 1j, complex(inf, 0), complex(inf, inf), 1j, complex(nan, 1), 1e300 + 1e300j])
    y = np.array([complex(inf, inf), complex(nan, inf), complex(-0.0, 0), 1j, complex(1, -2.5), 0j,
                  complex(-0.0, 0), complex(inf, -inf)])
    want = np.array([complex(0, -0.0), 0j, complex(nan, -inf), complex(nan, -inf), complex(nan, inf),
                     complex(nan, inf), complex(nan, -inf), complex(0, 0)])
    got = _quiet(tnp.divide, x, y)
    _report("divide", _same_bits(got, want), x, y, got, want)


def _ties(dtype):
    x = np.array([0.0, -0.0, 0.0, -0.0, np.nan, 1.0, np.nan, -np.inf, 2.0]).astype(dtype)
    y = np.array([-0.0, 0.0, 0.0, -0.0, 1.0, np.nan, np.nan, -np.inf, 2.0]).astype(dtype)
    return x, y


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_max_min_signed_zeros_as_jax(dtype):
    """JAX's max/min order -0.0 below 0.0 (``maximum(0., -0.)`` is 0.); NumPy returns one of
    two equal values (the second, or for float16 the first), as our eager max/min did.
    ``fmax``/``fmin`` take the second of equals (NumPy's took the first)."""
    jax = _jax()
    jnp = jax.numpy
    dt = jnp.dtype(dtype)
    x, y = _ties(dt)
    for ours, theirs in ((tnp.maximum, jnp.maximum), (tnp.minimum, jnp.minimum),
                         (lax.max, jax.lax.max), (lax.min, jax.lax.min),
                         (tnp.fmax, jnp.fmax), (tnp.fmin, jnp.fmin)):
        for u, v in ((x, y), (y, x)):
            got, want = _quiet(ours, u, v), _quiet(theirs, u, v)
            assert got.dtype == want.dtype, (ours, got.dtype, want.dtype)
            _report(f"{ours.__name__}({dtype})", _same_bits(got, want), u, v, got, want)
        for k in (0.0, -0.0, 0, 2.0) if ours not in (lax.max, lax.min) else ():
            for u, v in ((x, k), (k, x)):   # (a Python scalar: the operands' order decides)
                got, want = _quiet(ours, u, v), _quiet(theirs, u, v)
                assert got.dtype == want.dtype, (ours, got.dtype, want.dtype)
                _report(f"{ours.__name__}({dtype}, {k!r})", _same_bits(got, want), got, want)
    assert str(tnp.maximum(-0.0, 0.0)) == "0.0" and str(tnp.minimum(0.0, -0.0)) == "-0.0"


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "complex128",
                                   "complex64"])
def test_sign_of_zero_as_jax(dtype):
    """``sign(-0.0)`` is -0.0 in JAX (NumPy: 0.0), ``sign(-0-0j)`` is -0-0j, and a complex sign
    is each part over ``abs`` (``sign(inf+0j)`` is NaN+0j; NumPy's 1+0j, and its ``z / abs(z)``
    differed in the last bit for a third of finite values)."""
    jax = _jax()
    dt = jax.numpy.dtype(dtype)
    v = np.array([-0.0, 0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])
    if dt.kind == "c":
        v = np.array([complex(-0.0, -0.0), 0j, complex(0, -0.0), complex(-0.0, 0), 3 - 4j,
                      complex(np.inf, 0), complex(np.nan, 0)])
    v = v.astype(dt)
    for ours, theirs in ((tnp.sign, jax.numpy.sign), (lax.sign, jax.lax.sign)):
        got, want = _quiet(ours, v), _quiet(theirs, v)
        assert got.dtype == want.dtype
        _report(f"sign({dtype})", _same_bits(got, want), v, got, want)


_POW = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 2.5, np.inf, -np.inf, np.nan, 1e300,
        -1e300, 1e-300, 0.3]


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 4e-16), (np.float32, 2e-7)])
def test_power_special_values_as_jax(dtype, rtol):
    """C's (and JAX's) pow at every pair of special values, with the exponent an array and a
    scalar: NumPy's loop takes a scalar exponent 0.5 for a square root, so ``(-inf) ** 0.5``
    was NaN (JAX inf) and ``(-0.) ** 0.5`` -0. (JAX 0.).  Finite powers: NumPy's vector loop
    and XLA round differently in the last bit (not compared bit for bit)."""
    jnp = _jax().numpy
    v = _quiet(np.array, _POW, dtype)   # (1e300 is inf in float32)
    x, y = np.repeat(v, v.size), np.tile(v, v.size)
    ours, theirs = _quiet(tnp.power, x, y), _quiet(jnp.power, x, y)
    _report("power", _like_jax(ours, theirs, rtol), x, y, ours, theirs)
    for k in (0.5, 2.0, -1.0, 3.0, -0.5):
        for e in (k, dtype(k), np.full(v.shape, k, dtype)):
            ours, theirs = _quiet(tnp.power, v, e), _quiet(jnp.power, v, e)
            assert ours.dtype == theirs.dtype, (k, ours.dtype, theirs.dtype)
            _report(f"power(v, {e!r})", _like_jax(ours, theirs, rtol), v, ours, theirs)


_DIVMOD = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e308, -1e308, 1.0, -1.0, 0.5, -2.5, 3.0, 7.0, -7.0,
           1e-300]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_remainder_floor_divide_zero_signs_as_jax(dtype):
    """JAX's remainder is C's fmod plus ``y`` where their signs differ: a zero result has ``x``'s
    sign (NumPy's ``y``'s: ``remainder(-0., 1.)`` was 0., JAX -0.); its floor division gives a
    zero quotient ``y``'s sign (NumPy's that of ``x / y``: ``floor_divide(-0., 5.)`` was -0.)."""
    jax = _jax()
    jnp = jax.numpy
    v = _quiet(np.array, _DIVMOD, jnp.dtype(dtype))
    x, y = np.repeat(v, v.size), np.tile(v, v.size)
    for ours, theirs in ((tnp.remainder, jnp.remainder), (tnp.floor_divide, jnp.floor_divide),
                         (lax.rem, jax.lax.rem), (tnp.fmod, jnp.fmod)):
        got, want = _quiet(ours, x, y), _quiet(theirs, x, y)
        assert got.dtype == want.dtype
        _report(f"{ours.__name__}({dtype})", _same_bits(got, want), x, y, got, want)
    for k, (got, want) in enumerate(zip(_quiet(lambda *a: np.stack(tnp.divmod(*a)), x, y),
                                        _quiet(lambda *a: np.stack(jnp.divmod(*a)), x, y))):
        _report(f"divmod[{k}]({dtype})", _same_bits(got, want), x, y, got, want)


def test_remainder_gradients_as_jax():
    """d/dy remainder(x, y) is minus the quotient the remainder took: at an infinite ``y`` of
    the other sign, ``remainder(1., -inf)`` is -inf (``1 + y``) and its derivative 1 (JAX's);
    the rule's ``-floor(x / y)`` gave 0 (``floor(-0.)``).  Pairs with a NaN value are left out
    (JAX's derivative there is +-inf, ours NaN)."""
    jax = _jax()
    pts = [0.0, -0.0, 1.0, -1.0, 0.5, 7.0, -7.5, np.inf, -np.inf, 3.0, -3.0, 1e300]
    x, y = np.repeat(pts, len(pts)), np.tile(pts, len(pts))
    keep = ~np.isnan(_quiet(np.remainder, x, y))
    x, y = x[keep], y[keep]
    for argnum in (0, 1):
        got = _quiet(tg.vmap(tg.grad(tnp.remainder, argnums=argnum)), x, y)
        want = _quiet(jax.vmap(jax.grad(jax.numpy.remainder, argnums=argnum)), x, y)
        _report(f"d remainder / d arg {argnum}", _same_bits(got, want) | (got == want), x, y,
                got, want)


def test_numba_matches_eager_bit_for_bit():
    """One numba program computing everything above; each value bit for bit as eager
    evaluation (the NumPy backend's ``impl``): complex division and ``integer_pow`` with
    negative powers (``helpers._cdiv``), max/min of tied zeros in loops (``helpers._fmax``),
    fmax/fmin, sign of zeros, ``x ** 0.5`` at -inf and -0, remainder and floor division
    (``helpers._frem``/``_ffloordiv``: zeros' signs)."""
    a, b = _pairs(_PARTS128, np.complex128)
    a64, b64 = _pairs(_PARTS64, np.complex64)
    z = a[np.isfinite(a) | np.isinf(a)]   # (powers of finite or infinite values: no overflow of
    z = z[np.abs(z) < 1e100]              # a product, where NumPy's fused loop and numba differ)
    x, y = _ties(np.float64)
    xl, yl = np.tile(x, 4), np.tile(y, 4)            # (36 elements: a loop, not scalars)
    s = np.array([-0.0, 0.0, 1.5, -2.0, np.inf, np.nan])
    c = np.array([complex(-0.0, -0.0), 0j, complex(0, -0.0), 3 - 4j, complex(np.nan, 0)])

    def f(a, b, a64, b64, z, x, y, xl, yl, s, c, dx, dy):
        return (lax.div(a, b), lax.div(a64, b64), lax.integer_pow(z, -1),
                lax.integer_pow(z.astype(np.complex64), -3),
                tnp.fmax(x, y), tnp.fmin(y, x), tnp.maximum(xl, yl), tnp.minimum(yl, xl),
                lax.max(yl, xl), tnp.sign(s), tnp.sign(s.astype(np.float32)), tnp.sign(c),
                tnp.power(s, 0.5), tnp.power(xl, 0.5), tnp.remainder(dx, dy),
                tnp.floor_divide(dx, dy), tnp.remainder(dx.astype(np.float32), dy.astype(np.float32)))
    dv = _quiet(np.array, _DIVMOD)
    dx, dy = np.repeat(dv, dv.size), np.tile(dv, dv.size)
    args = (a, b, a64, b64, z, x, y, xl, yl, s, c, dx, dy)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = [np.asarray(w) for w in f(*args)]
        got = tg.jit(f, backend="numba")(*args)
    names = ["div", "div c64", "integer_pow -1", "integer_pow -3 c64", "fmax", "fmin",
             "maximum loop", "minimum loop", "max loop", "sign", "sign f32", "sign complex",
             "x ** 0.5", "x ** 0.5 loop", "remainder", "floor_divide", "remainder f32"]
    for name, g, w in zip(names, got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
        _report(name, _same_bits(g, w), g, w)


def test_numba_scalarized_max_min_of_tied_zeros():
    """max/min of a few elements compile as scalars (``irblock``), with the rule of loops and
    eager: -0.0 orders below 0.0."""
    x, y = _ties(np.float64)

    def f(x, y):
        return tnp.maximum(x, y), tnp.minimum(y, x)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = [np.asarray(w) for w in f(x, y)]
        got = tg.jit(f, backend="numba")(x, y)
    for name, g, w in zip(["maximum", "minimum"], got, want):
        _report(name, _same_bits(np.asarray(g), w), x, y, g, w)


def test_eager_operators_as_jax():
    """Operators of eager results (``ArrayImpl``, whose NumPy operators called the ufuncs
    directly) give JAX's values as the functions do, reflected and in place too:
    ``remainder(-0., 1.)`` by ``%`` was 0. (JAX -0.), ``1 / (inf+infj)`` by ``/`` NaN (JAX 0),
    ``(-inf) ** 0.5`` by ``**`` NaN (JAX inf)."""
    jnp = _jax().numpy
    dv = _quiet(np.array, _DIVMOD)
    x, y = np.repeat(dv, dv.size), np.tile(dv, dv.size)
    a, b = _pairs(_PARTS128, np.complex128)
    ex, ey, ea, eb = (tnp.asarray(v) for v in (x, y, a, b))
    jx, jy, ja, jb = (jnp.asarray(v) for v in (x, y, a, b))

    def inplace_mod(u, v):
        u %= v
        return u
    cases = {"x % y": lambda u, v: u % v, "x // y": lambda u, v: u // v,
             "divmod": lambda u, v: np.stack(divmod(u, v)), "1.5 % y": lambda u, v: 1.5 % v,
             "x ** 0.5": lambda u, v: u ** 0.5, "x %= y": inplace_mod}
    for name, op in cases.items():
        got, want = _quiet(op, ex, ey), _quiet(op, jx, jy)
        _report(name, _same_bits(got, want), x, y, got, want)
    for name, op in {"a / b": lambda u, v: u / v, "1 / b": lambda u, v: 1 / v}.items():
        got, want = _quiet(op, ea, eb), _quiet(op, ja, jb)
        _report(name, _like_jax(got, want, 4e-16), a, b, got, want)
    # integers: x // 0 as JAX's (-2, -1 for 0 // 0)
    i = tnp.asarray(np.array([7, -7, 0]))
    with np.errstate(all="ignore"):
        assert (i // 0).tolist() == [-2, -2, -1] and (i % 0).tolist() == [0, 0, 0]
        assert type(i // 2) is type(ex ** 0.5) is type(divmod(ex, 2.0)[1]) is type(ex)
    with warnings.catch_warnings(record=True) as caught:   # silent, as JAX's (8e31318)
        warnings.simplefilter("always")
        ex // 0.0
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], \
        [str(w) for w in caught]
