"""Tangents and cotangents have their primal's dtype (JAX's rule), whatever the
rule computes in between: float32 stays float32 next to Python scalars, float64
constants and promoting operations."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core

X32 = np.array([0.3, 0.7, 1.4], np.float32)

# Every elementwise primitive with a floating result, applied with a Python
# scalar and with a float64 array as the other operand where it is binary.
ELEMENTWISE = [(p.name, f, p) for p, f in core.EAGER_FAST_PATHS if isinstance(p.impl, np.ufunc)]


# Primitives with no differentiation rule, as in JAX (their derivatives raise JAX's
# NotImplementedError: test_no_rule_raises_as_jax below)
NO_RULE = ("nextafter", "spacing")


def _float_cases():
    cases = []
    for name, f, prim in ELEMENTWISE:
        if name in ("add_any",) or name in NO_RULE:
            continue
        if prim.impl.nin == 1:
            new = [(name, lambda x, f=f: f(x))]
        else:
            new = [(name + "(x, 0.5)", lambda x, f=f: f(x, 0.5)),
                   (name + "(2.0, x)", lambda x, f=f: f(2.0, x))]
        for c in new:
            with np.errstate(all="ignore"):  # comparisons and logic have zero (float0) tangents
                try:
                    floating = np.asarray(c[1](X32)).dtype.kind in "fc"
                except TypeError:  # integer-only ufuncs (gcd, shifts): no float loop
                    continue
            if floating:
                cases.append(c)
    return cases


CASES = _float_cases() + [
    ("max", lambda x: tnp.max(x)), ("min", lambda x: tnp.min(x)),
    ("clip", lambda x: tnp.clip(x, 0.5, 1.0)), ("power", lambda x: x ** 2.5),
    ("rpower", lambda x: 2.0 ** x), ("arctan2", lambda x: tnp.arctan2(x, 1.0)),
    ("copysign", lambda x: tnp.copysign(x, -1.0)), ("maximum", lambda x: tnp.maximum(x, 0.7)),
    ("promote add", lambda x: x + np.ones(3)), ("promote stack", lambda x: tnp.stack([x, np.ones(3)])),
    ("promote concatenate", lambda x: tnp.concatenate([x, np.ones(3)])),
    ("promote where", lambda x: tnp.where(x > 0.5, x, np.zeros(3))),
    ("promote dot", lambda x: x @ np.ones((3, 2))),
]


@pytest.mark.parametrize("name,f", CASES, ids=[c[0] for c in CASES])
def test_tangent_and_cotangent_dtypes_equal_the_primals(name, f):
    with np.errstate(all="ignore"):
        out, t = tg.jvp(f, (X32,), (np.ones(3, np.float32),))
        assert t.dtype == np.asarray(out).dtype, (name, t.dtype, np.asarray(out).dtype)
        g = tg.grad(lambda x: tnp.sum(f(x)).astype(np.float32))(X32)
        assert g.dtype == np.float32, (name, g.dtype)
        _, pullback = tg.vjp(f, X32)
        ct, = pullback(np.ones_like(np.asarray(out)))
        assert ct.dtype == np.float32, (name, ct.dtype)
        jf = tg.jacfwd(f)(X32)
        assert jf.dtype == np.asarray(out).dtype, (name, jf.dtype)


def test_float64_stays_float64():
    x = X32.astype(np.float64)
    assert tg.grad(lambda x: tnp.sum(tnp.sin(x) * np.float32(2.0)))(x).dtype == np.float64
    assert tg.jvp(lambda x: x * np.float32(2.0), (x,), (np.ones(3),))[1].dtype == np.float64


# Complex primals: tangents and cotangents are complex of the primal's precision;
# a real primal meeting complex values still gets a real cotangent (the real part).
Z64 = (X32 + 1j * X32[::-1]).astype(np.complex64)
COMPLEX_CASES = [
    ("exp", tnp.exp), ("log", tnp.log), ("sqrt", tnp.sqrt), ("sin", tnp.sin),
    ("tanh", tnp.tanh), ("conj", tnp.conj), ("square", lambda z: z * z),
    ("power", lambda z: z ** 2.5), ("reciprocal", lambda z: 1.0 / z),
    ("scalar mul", lambda z: z * (1 + 2j)), ("promote add", lambda z: z + np.ones(3)),
    ("promote where", lambda z: tnp.where(tnp.real(z) > 0.5, z, np.zeros(3))),
    ("dot", lambda z: z @ np.ones((3, 2))), ("cumsum", tnp.cumsum),
]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name,f", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_tangents_and_cotangents_have_the_primals_dtype(name, f, dtype):
    z = Z64.astype(dtype)
    out, t = tg.jvp(f, (z,), (np.ones(3, dtype),))
    assert np.asarray(out).dtype.kind == "c" and t.dtype == np.asarray(out).dtype, (name, t.dtype)
    _, pullback = tg.vjp(f, z)
    ct, = pullback(np.ones_like(np.asarray(out)))
    assert ct.dtype == dtype, (name, ct.dtype)
    real = np.float32 if dtype == np.complex64 else np.float64
    g = tg.grad(lambda z: tnp.sum(tnp.abs(f(z)) ** 2).astype(real))(z)
    assert g.dtype == dtype, (name, g.dtype)


@pytest.mark.parametrize("name,f", [
    ("complex scalar", lambda x: tnp.abs(x * (1 + 2j))),
    ("complex array", lambda x: tnp.real(x * np.array([1j, 2, 3 - 1j], np.complex64))),
    ("plus 0j", lambda x: tnp.imag(tnp.exp(1j * x))),
    ("fft", lambda x: tnp.abs(tnp.fft.fft(x))),
])
def test_real_primals_through_complex_values_get_real_cotangents(name, f):
    g = tg.grad(lambda x: tnp.sum(f(x)))(X32)
    assert g.dtype == np.float32, (name, g.dtype)
    _, t = tg.jvp(f, (X32,), (np.ones(3, np.float32),))
    assert t.dtype == np.float32, (name, t.dtype)


@pytest.mark.parametrize("name", NO_RULE)
def test_no_rule_raises_as_jax(name):
    g = (lambda x: tnp.spacing(x)) if name == "spacing" else (lambda x: tnp.nextafter(x, 0.5))
    with pytest.raises(NotImplementedError, match="^Differentiation rule for 'nextafter'"):
        tg.grad(lambda x: tnp.sum(g(x)))(X32)
