"""The shortcuts of eager ``grad``'s hot path give the same values as the
general code: shared literals of Python scalars (signed zeros and NaNs are
never shared with other values), and values of custom rules, which user code
sees as tangentia arrays while differentiation carries them as plain ndarrays."""
import numpy as np

import tangentia as tg
import tangentia.numpy as tnp
from tangentia._array import ArrayImpl


def test_signed_zero_and_nan_literals_keep_their_values():
    x = np.array([1.0, -2.0])
    for _ in range(2):  # the second round would hit a cache of literals
        pos = tg.jit(lambda v: v * 0.0)(x)
        neg = tg.jit(lambda v: v * -0.0)(x)
        np.testing.assert_array_equal(np.signbit(pos), np.signbit(x * 0.0))
        np.testing.assert_array_equal(np.signbit(neg), np.signbit(x * -0.0))
        assert np.isnan(tg.jit(lambda v: v + float("nan"))(x)).all()
        # 1, 1.0 and True are equal Python values but literals of different types
        assert tg.jit(lambda v: v + 1)(np.int32(2)).dtype == np.int32
        assert tg.jit(lambda v: v + True)(np.int32(2)).dtype == np.int32
        assert tg.jit(lambda v: v + 1.0)(np.int32(2)).dtype == np.float64
    g = tg.grad(lambda v: tnp.sum(v * -0.0 + tnp.sin(v) * 2.5))(x)
    np.testing.assert_array_equal(g, -0.0 + np.cos(x) * 2.5)


def test_custom_rules_see_tangentia_arrays_and_differentiate_exactly():
    seen = []

    @tg.custom_jvp
    def f(x):
        return tnp.sin(x)

    def f_jvp(primals, tangents):
        p = f(primals[0])
        c = tnp.cos(primals[0])
        seen.append((type(p), type(c)))
        return p, c * tangents[0]

    f.defjvp(f_jvp)

    def chain(x):
        for _ in range(5):
            x = f(x)
        return tnp.sum(x)

    x = np.linspace(0.1, 0.5, 4)
    want, y = np.ones_like(x), x
    for _ in range(5):
        want, y = want * np.cos(y), np.sin(y)
    g = tg.grad(chain)(x)
    np.testing.assert_allclose(g, want, rtol=1e-14)
    assert type(g) is ArrayImpl
    assert seen and all(s == (ArrayImpl, ArrayImpl) for s in seen)
