"""The numba backend's float -> integer conversions and reduce_and/reduce_or/reduce_xor,
against eager evaluation (which follows JAX/XLA: tests/test_jax_suite_fixes_lax4.py).

Conversions saturate at the integer type's limits and send NaN to 0 (LLVM's cast
is undefined out of range: int8(300.0) was C's wrapped value); reduce_and and
reduce_or of integers are bitwise (they were computed as logical and/or: 12 & 10
gave 1), and so is reduce_xor (native; it ran in object mode); comparisons with a
Python bool compare in the other operand's dtype (``x == True`` compared x's truth
value: 2 == True was true), and with a Python int outside the other operand's range by
value (uint8 x < -1 compared x with 255); complex division by zero gives NumPy's infinities (numba's
raised ZeroDivisionError).  Three small programs, each compiled once.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.numba_backend import NumbaBackend  # noqa: E402
from _numba_util import program  # noqa: E402  (shared by the numba tests)

NUMBA = NumbaBackend()
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
EDGES = [300.0, -1e30, np.nan, 2.7, -2.7, 1e300, -0.5, -np.inf, np.inf, 127.9, -128.9, 255.5,
         2.0 ** 31, -(2.0 ** 31) - 1, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 64, 65535.7, -0.0, 1e-300]


def _compiled(f, *args):
    jaxpr, full = program(f, *args)
    src = NUMBA.source(jaxpr)
    assert "objmode" not in src and "NumPy calls" not in src, src
    return NUMBA.compile(jaxpr)(*full), src


def _check(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert g.dtype == w.dtype, (k, g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w, err_msg=f"output {k} ({w.dtype})")


def test_float_to_integer_conversion_saturates_and_maps_nan_to_zero():
    small = np.array(EDGES[:12])            # scalarized (a block around the conversions)
    large = np.array(EDGES * 2)             # a loop

    def f(s, x):
        out = []
        for dt in INTS:
            out.append(lax.convert_element_type(s * 1.0 + 0.0, dt) * 1)
            out.append(lax.convert_element_type(x, dt))
            out.append(lax.convert_element_type(x.astype(np.float32), dt))
        return out
    with np.errstate(all="ignore"):
        want = f(small, large)
        got, src = _compiled(f, small, large)
    _check(got, want)
    assert "_f2i(" in src and "_f2u(" in src
    assert got[0].tolist()[:3] == [127, -128, 0]     # (JAX's int8(300.), int8(-1e30), int8(nan))


def test_integer_reduce_and_or_xor_are_bitwise():
    v = (np.arange(1, 41, dtype=np.int64).reshape(2, 20) * 7) ^ 0x55
    w = np.array([12, 10], np.int64)

    def f(v, w):
        return [lax.reduce_and(w, (0,)), lax.reduce_or(w, (0,)),
                lax.reduce_and(v, (1,)), lax.reduce_or(v, (0,)),
                lax.reduce_and(v.astype(np.uint16), (1,)), lax.reduce_or(v.astype(np.int8), (1,)),
                lax.reduce_and(v[:, :3].astype(np.int32), (0, 1)),
                lax.reduce_and(v > 100, (1,)), lax.reduce_or(v > 300, (1,)),
                lax.reduce_xor(v, (1,)), lax.reduce_xor(v.astype(np.uint8), (0, 1)),
                lax.reduce_xor(w, (0,)), lax.reduce_xor(v > 100, (1,)),
                lax.reduce_xor((v > 50)[:, :3], (0,)),
                # comparisons with a Python bool compare values, not truth (G1's finding)
                tnp.equal(w - 11, True), tnp.less(v.astype(np.float32) * 0.002, True),
                tnp.not_equal(True, v.astype(np.uint8)), tnp.greater_equal(w[0] - 11, True),
                # ... and with a Python int outside the operand's range by value (G1's finding:
                # uint8 x < -1 compared with 255), in a block of scalar operations and a loop
                tnp.less((w.astype(np.uint8) * 2 + 1) ^ 3, -1) | (w.astype(np.int8) > 300),
                tnp.greater(v.astype(np.uint8), -1), tnp.equal(v.astype(np.uint8), 300),
                tnp.less_equal(-300, v.astype(np.int8)), tnp.not_equal(v.astype(np.uint64), -1)]
    want = f(v, w)
    got, src = _compiled(f, v, w)
    _check(got, want)
    assert int(got[0]) == 8 and int(got[1]) == 14 and int(got[11]) == 12 ^ 10
    assert got[14].tolist() == [True, False]        # 12 - 11 == True; 10 - 11 != True
    assert got[19].all() and not got[20].any()      # uint8 > -1; uint8 == 300 (not 44)


def test_complex_division_by_zero_gives_numpys_infinities():
    # numba's complex ``/`` raised ZeroDivisionError for a zero divisor; NumPy's loop
    # (helpers._cdiv, _cdiv64) gives C's infinities and NaN, as eager and JAX do.
    a = np.array([1 + 2j, 0j, 1 + 0j, 3 - 4j, np.inf + 1j, 1e300 + 1e300j, -2j])
    b = np.array([0j, 0j, 0j, 1 + 1j, 2 + 0j, 1e-300 + 1e300j, 0.5 + 0j])

    def f(a, b):
        big_a, big_b = tnp.tile(a, 3), tnp.tile(b, 3)    # (21 elements: a loop)
        return [a / b, lax.div(a.astype(np.complex64), b.astype(np.complex64)),
                big_a / big_b, 1.0 / b]
    with np.errstate(all="ignore"):
        want = f(a, b)
        got, src = _compiled(f, a, b)
    _check(got, want)
    assert "_cdiv64(" in src and np.isinf(got[0][0]) and np.isnan(got[0][1])


@pytest.mark.parametrize("f", [lambda x: x + 300, lambda x: x * -1, lambda x: tnp.maximum(x, 256)],
                         ids=["add_300", "mul_minus_1", "maximum_256"])
def test_python_int_outside_the_integer_loop_raises_numpys_overflow_error(f):
    # uint8 x + 300: NumPy 2 (so eager evaluation and the NumPy backend) raises; the numba
    # backend cast the literal into the loop's dtype (300 -> 44) and returned wrapped numbers
    x = np.array([1, 2, 3], np.uint8)
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        f(x)
    jaxpr, _ = program(f, x)
    with pytest.raises(OverflowError, match="Python integer -?[0-9]+ out of bounds for uint8"):
        NUMBA.source(jaxpr)
    assert (tg.jit(lambda x: x + 255)(x) == x + 255).all()   # in range: computed as before
