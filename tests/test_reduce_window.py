"""lax.reduce_window and lax.reduce for the monoids add/mul/max/min: values
against a direct loop over windows and numbers computed with jax 0.10.2 (x64;
padding and base-dilation holes contribute nothing, init starts every
window), derivatives against finite differences (also where JAX's own VJP
refuses: window dilation, products), vmap against loops, the numba backend
against the NumPy one."""
import itertools

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.compiler.numba_backend import rules as numba_rules
from tangentia.test_util import check_grads

X = np.array([[1.0, -2, 3, 0.5], [4, 0, -1, 2], [-3, 5, 1, 1]])
RNG = np.random.default_rng(0)
UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
LAX = {"add": lax.add, "mul": lax.mul, "max": lax.max, "min": lax.min}


def _reference(x, init, op, dims, strides, padding, base, wdil):
    """Loop over windows; positions in padding or base-dilation holes are skipped."""
    out_shape = []
    for n, k, s, (lo, hi), b, d in zip(x.shape, dims, strides, padding, base, wdil):
        size = (1 + b * (n - 1)) + lo + hi
        out_shape.append(max((size - (1 + d * (k - 1))) // s + 1, 0))
    out = np.empty(out_shape)
    for pos in itertools.product(*[range(m) for m in out_shape]):
        acc = init
        for tap in itertools.product(*[range(k) for k in dims]):
            src = []
            for p, t, s, d, (lo, _), b, n in zip(pos, tap, strides, wdil, padding, base, x.shape):
                q = p * s + t * d - lo
                src.append(q // b if q >= 0 and q % b == 0 and q // b < n else None)
            if None not in src:
                acc = UFUNC[op](acc, x[tuple(src)])
        out[pos] = acc
    return out


CASES = {
    "sum SAME strided": (0.0, "add", dict(window_dimensions=(1, 3, 2), window_strides=(1, 2, 1),
                                          padding="SAME")),
    "max padded, window dilation": (-np.inf, "max", dict(
        window_dimensions=(1, 3, 3), window_strides=(1, 2, 2),
        padding=((0, 0), (1, 1), (0, 1)), window_dilation=(1, 1, 2))),
    "min base dilation": (np.inf, "min", dict(window_dimensions=(2, 2, 2),
                                              window_strides=(1, 1, 3), padding="VALID",
                                              base_dilation=(1, 2, 1))),
    "product": (1.0, "mul", dict(window_dimensions=(1, 2, 3), window_strides=(1, 1, 1),
                                 padding=((0, 0), (0, 1), (1, 0)))),
    "sum init 0.5, base dilation": (0.5, "add", dict(
        window_dimensions=(1, 2, 2), window_strides=(1, 2, 1),
        padding=((0, 1), (1, 1), (0, 0)), base_dilation=(1, 1, 2))),
    "max SAME, base dilation": (-np.inf, "max", dict(
        window_dimensions=(1, 3, 2), window_strides=(1, 2, 2), padding="SAME",
        base_dilation=(1, 2, 1))),
}


def _explicit(x, kw):
    pad = kw["padding"]
    if isinstance(pad, str):  # JAX pads for the undilated operand shape
        eff = [1 + d * (k - 1) for k, d in zip(kw["window_dimensions"],
                                                kw.get("window_dilation", (1,) * x.ndim))]
        pad = lax.padtype_to_pads(x.shape, eff, kw["window_strides"], pad)
    return pad


@pytest.mark.parametrize("name", list(CASES))
def test_matches_direct_loops_jit_and_vmap(name):
    init, op, kw = CASES[name]
    x = RNG.normal(size=(2, 7, 6))
    nd = x.ndim
    want = _reference(x, init, op, kw["window_dimensions"], kw["window_strides"],
                      _explicit(x, kw), kw.get("base_dilation", (1,) * nd),
                      kw.get("window_dilation", (1,) * nd))
    f = lambda x: lax.reduce_window(x, init, LAX[op], **kw)  # noqa: E731
    np.testing.assert_allclose(f(x), want, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(f)(x), want, rtol=1e-13)
    xs = np.stack([x, -2 * x, x[::-1]])
    np.testing.assert_allclose(tg.vmap(f)(xs), np.stack([f(v) for v in xs]), rtol=1e-13)


@pytest.mark.parametrize("name", list(CASES))
def test_derivatives_against_finite_differences(name):
    init, op, kw = CASES[name]
    # distinct entries, so max/min have a unique winner in every window
    x = RNG.permutation(84).reshape(2, 7, 6) / 20.0 + 0.3
    f = lambda x: lax.reduce_window(x, init, LAX[op], **kw)  # noqa: E731
    check_grads(f, (x,), 2 if op in ("add", "mul") else 1, modes=("fwd", "rev"), eps=1e-4)
    g = tg.grad(lambda x: tnp.sum(tnp.sin(f(x))))
    xs = np.stack([x, x[:, ::-1]])
    np.testing.assert_allclose(tg.vmap(g)(xs), np.stack([g(v) for v in xs]), rtol=1e-13)


def test_numbers_from_jax():
    np.testing.assert_array_equal(
        lax.reduce_window(X, 0.5, lax.add, (2, 2), (1, 2), ((1, 0), (0, 1)), (1, 2)),
        [[1.5, -1.5, 3.5, 1.0], [5.5, -1.5, 2.5, 3.0], [1.5, 5.5, 0.5, 3.5]])
    np.testing.assert_array_equal(
        lax.reduce_window(X, 1.5, lax.max, (2, 3), (1, 1), "SAME", None, (1, 2)),
        [[4.0, 2.0, 4.0, 2.0], [4.0, 5.0, 4.0, 5.0], [1.5, 5.0, 1.5, 5.0]])
    np.testing.assert_array_equal(lax.reduce_window(X, 2.0, lax.mul, (1, 2), (1, 1), "VALID"),
                                  [[-4.0, -12.0, 3.0], [0.0, -0.0, -4.0], [-30.0, 10.0, 2.0]])
    weights = np.arange(1.0, 7).reshape(2, 3)
    g = tg.grad(lambda x: tnp.sum(lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1),
                                                    "VALID") * weights))(X)
    np.testing.assert_array_equal(g, [[0, 0, 5, 0], [1, 0, 0, 6], [0, 9, 0, 0]])
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = lax.reduce_window(ints, np.int32(-2**31), lax.max, (2, 2), (1, 2), "VALID")
    assert out.dtype == np.int32 and out.tolist() == [[5, 7], [9, 11]]
    np.testing.assert_array_equal(lax.reduce(X, 0.7, lax.max, (1,)), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(lax.reduce(X, 2.0, lax.mul, (0,)), [-24.0, -0.0, -6.0, 2.0])
    np.testing.assert_allclose(lax.reduce(X, 0.0, lax.add, (0, 1)), X.sum())


def test_computations_are_recognized_by_what_they_compute():
    ref = lax.reduce_window(X, -np.inf, lax.max, (2, 2), (1, 1), "VALID")
    for fn in (tnp.maximum, lambda a, b: tnp.where(a > b, a, b), lax.max):
        np.testing.assert_array_equal(lax.reduce_window(X, -np.inf, fn, (2, 2), (1, 1),
                                                        "VALID"), ref)
    np.testing.assert_array_equal(lax.reduce(X, 0.0, lambda a, b: a + b, (1,)), X.sum(1))
    # any other computation and several operands are reduced by the computation itself
    # (edf0b2c): no longer NotImplementedError
    pair = lax.reduce((X, 2 * X), (0.0, 0.0), lambda a, b: (a[0] + b[0], a[1] + b[1]), (0,))
    np.testing.assert_allclose(pair[0], X.sum(0))
    np.testing.assert_allclose(pair[1], 2 * X.sum(0))
    with pytest.raises(ValueError, match="reduce_window: window_dimensions"):
        lax.reduce_window(X, 0.0, lax.add, (2,), (1,), "VALID")


def test_avg_pool_gradient_is_the_spread_cotangent():
    x = RNG.normal(size=(1, 6, 6, 2))
    pool = lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1),  # noqa
                                       "VALID") / 4.0
    g = tg.grad(lambda x: tnp.sum(pool(x)))(x)
    np.testing.assert_allclose(g, np.full_like(x, 0.25), rtol=1e-15)
    assert lax.reduce_window_shape_tuple((1, 6, 6, 2), (1, 2, 2, 1), (1, 2, 2, 1),
                                         ((0, 0),) * 4) == (1, 3, 3, 2)


def test_numba_backend_agrees():
    paths = numba_rules.lowering_paths()
    assert paths["window_reduce"] == "native" and paths["window_argmax"] == "native"
    x = RNG.normal(size=(2, 7, 6))
    init, op, kw = CASES["max padded, window dilation"]
    g = tg.grad(lambda x: tnp.sum(tnp.cos(lax.reduce_window(x, init, LAX[op], **kw))))
    np.testing.assert_allclose(tg.jit(g, backend="numba")(x), tg.jit(g, backend="numpy")(x),
                               rtol=1e-13)
