"""The dtypes a compiled program returns are the ones its types say, on both tiers.

A Python scalar given to ``jit`` (and a Python-scalar literal) is weakly typed: the NumPy
backend runs it as a Python scalar, so that a ufunc promotes it as the types say.  Where an
operation passed it on unchanged (a branch or a loop returning its operand, a loop that runs
no step, ``stop_gradient``, an inner ``jit``, ``checkpoint``, a custom rule's function) or a
program returned it, the Python scalar came out where the types say float64, and
``x32 + out`` was float32 on the first (NumPy-tier) calls and float64 once the numba tier
took over.  Each case below returned float32 before the fix; the types say float64 (numba's
result, and JAX's too where our weak-type rules agree: see docs/coming_from_jax.md).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax

X32 = np.ones(2, np.float32)


def _custom_jvp(s: Any) -> Any:
    f = tg.custom_jvp(lambda a: a)
    f.defjvp(lambda p, t: (f(p[0]), t[0]))
    return f(s)


def _custom_vjp(s: Any) -> Any:
    f = tg.custom_vjp(lambda a: a)
    f.defvjp(lambda a: (f(a), None), lambda r, ct: (ct,))
    return f(s)


# name -> fn(s), s a weakly typed float64 (a Python float given to jit)
CASES: dict[str, Callable[[Any], Any]] = {
    "cond returns its operand": lambda s: lax.cond(s > 0, lambda a: a, lambda a: a * 2, s),
    "cond returns a Python literal": lambda s: lax.cond(s > 0, lambda: 1.0,
                                                        lambda: tnp.float64(2)),
    "while_loop running no step": lambda s: lax.while_loop(lambda c: c < 0, lambda c: c + 1, s),
    "fori_loop(0, 0)": lambda s: lax.fori_loop(0, 0, lambda i, c: c + 1, s),
    "fori_loop, traced bound, no step": lambda s: lax.fori_loop(
        0, tnp.int32(s) - 1, lambda i, c: c + 1, s),
    "scan of length 0": lambda s: lax.scan(lambda c, x: (c + 1, c), s, None, length=0)[0],
    "scan carrying its input": lambda s: lax.scan(lambda c, x: (c, c), s, None, length=2)[0],
    "inner jit": lambda s: tg.jit(lambda a: a)(s),
    "checkpoint": lambda s: tg.checkpoint(lambda a: a)(s),
    "custom_jvp": _custom_jvp,
    "custom_vjp": _custom_vjp,
    "stop_gradient": lambda s: lax.stop_gradient(s),
    "custom_root": lambda s: lax.custom_root(lambda x: x - s, s, lambda f, x0: x0,
                                             lambda f, y: y),
}


@pytest.mark.parametrize("name", list(CASES))
def test_numpy_backend_returns_the_programs_dtypes(name: str) -> None:
    fn = CASES[name]

    def f(x: Any, s: Any) -> Any:
        return x + fn(s), fn(s)

    want = [a.dtype for a in tg.jit(f).trace(X32, 1.0).jaxpr.out_avals]
    assert want == [np.float64, np.float64]
    out = tg.jit(f)(X32, 1.0)   # the NumPy backend (tests/conftest.py)
    assert [o.dtype for o in out] == want
    np.testing.assert_array_equal(out[0], X32.astype(np.float64) + np.asarray(out[1]))


def test_a_weak_operand_still_meets_a_ufunc_as_a_python_scalar() -> None:
    # the other side: x32 * s, x32 / s (a ufunc, and an elementwise function that is not
    # one) stay float32, as the types say
    out = tg.jit(lambda x, s: (x * s, x / s, tnp.where(x > 0, x, s)))(X32, 2.0)
    assert [o.dtype for o in out] == [np.float32] * 3
    np.testing.assert_array_equal(out[1], X32 / np.float32(2))


def test_python_scalar_argument_is_converted_before_float32_arithmetic() -> None:
    # x32 * s for a Python float s: JAX converts s to float32 first.  The numba backend took
    # s as float64 and rounded the float64 product (1.95000005 for 1.5 * 1.3; JAX and the
    # NumPy tier: 1.94999993), so a jitted function's numbers changed once numba took over.
    # (and inside a custom_jvp / custom_vjp function, whose program numba compiles too)
    cj = tg.custom_jvp(lambda x, s: x * s)
    cj.defjvp(lambda p, t: (cj(*p), t[0] * p[1]))
    cv = tg.custom_vjp(lambda x, s: x * s)
    cv.defvjp(lambda x, s: (cv(x, s), s), lambda s, ct: (ct * s, None))

    def f(x: Any, s: Any) -> Any:
        return x * s, tnp.remainder(x, s), tnp.nextafter(x, s), cj(x, s), cv(x, s)

    x = np.array([1.5, -2.0, 0.25], np.float32)
    s32 = np.float32(1.3)
    want = [x * s32, np.remainder(x, s32), np.nextafter(x, s32), x * s32, x * s32]
    jaxpr = tg.jit(f).trace(x, 1.3).jaxpr
    assert [e.prim.name for e in jaxpr.eqns].count("convert_element_type") == 3   # one per use
    for backend in ("numpy", "numba"):   # one small numba compile
        out = tg.jit(f, backend=backend)(x, 1.3)
        for o, w in zip(out, want):
            assert o.dtype == np.float32
            np.testing.assert_array_equal(o, w, err_msg=backend)
