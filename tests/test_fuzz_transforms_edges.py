"""Corner cases of reductions and comparisons against JAX 0.10.2 (x64), each of which failed
before its fix: ``cumlogsumexp``'s derivative over -infs, ``tnp.equal`` with a non-array,
``lax.reduce`` with a computation that is not a monoid.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax as tlax
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)

NINF = -np.inf


@pytest.mark.parametrize("x", [[NINF, NINF, NINF, NINF, NINF], [NINF, NINF, 0.0, NINF],
                               [0.0, NINF, 1.0]])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumlogsumexp_derivatives_over_minus_infinity_match_jax(x: list[float],
                                                                reverse: bool) -> None:
    """logaddexp's derivative at (-inf, -inf) is NaN, as JAX's: ours split the tie evenly,
    so cumlogsumexp over five -infs had the row [1/8, 1/8, 1/8, 1/8, 1/2] (its scan's tree),
    where JAX's is NaN (the limit depends on the direction)."""
    a = np.array(x)
    ours = run(lambda: (tg.jacfwd(lambda v: tlax.cumlogsumexp(v, reverse=reverse))(a),
                        tg.jacrev(lambda v: tlax.cumlogsumexp(v, reverse=reverse))(a),
                        tg.grad(lambda v: tnp.sum(tlax.cumlogsumexp(v, reverse=reverse)))(a)))
    theirs = jax.jit(lambda a: (   # one compile (JAX's op-by-op dispatch took 7-9 s here)
        jax.jacfwd(lambda v: jax.lax.cumlogsumexp(v, reverse=reverse))(a),
        jax.jacrev(lambda v: jax.lax.cumlogsumexp(v, reverse=reverse))(a),
        jax.grad(lambda v: jax.numpy.sum(jax.lax.cumlogsumexp(v, reverse=reverse)))(a)))(a)
    assert_same(f"cumlogsumexp derivatives at {x}", ours, theirs)


def test_logaddexp_derivative_at_two_minus_infinities_is_nan_and_elsewhere_unchanged() -> None:
    pairs = [(NINF, NINF), (NINF, 0.0), (0.0, 0.0), (1.0, 0.0), (np.nan, NINF)]
    for p in pairs:
        ours = run(lambda: (tnp.logaddexp(*p), tg.grad(tnp.logaddexp, argnums=(0, 1))(*p),
                            tg.jvp(tnp.logaddexp, p, (1.0, 0.0))[1],
                            tg.jit(tg.grad(tnp.logaddexp, argnums=(0, 1)))(*p)))
        g = jax.grad(jax.numpy.logaddexp, argnums=(0, 1))(*p)
        theirs = (jax.numpy.logaddexp(*p), g, jax.jvp(jax.numpy.logaddexp, p, (1.0, 0.0))[1], g)
        assert_same(f"logaddexp at {p}", ours, theirs, rtol=1e-15, dtypes=False)


@pytest.mark.parametrize("other", [object(), "a", None, {1: 2}, [1, "a"]],
                         ids=["object", "str", "None", "dict", "list with str"])
@pytest.mark.parametrize("name", ["equal", "not_equal"])
def test_equal_with_a_non_array_raises_jaxs_type_error(other: Any, name: str) -> None:
    """tnp.equal(x, object()) was an array of False (NumPy compares Python objects)."""
    x = np.arange(3.0)
    with pytest.raises(TypeError) as ours:
        getattr(tnp, name)(x, other)
    with pytest.raises(TypeError) as theirs:
        getattr(jax.numpy, name)(x, other)
    head = str(theirs.value).split(" <function")[0].split(" at position")[0]
    assert str(ours.value).startswith(head), (str(ours.value), str(theirs.value))
    with pytest.raises(TypeError):
        tg.jit(lambda v: getattr(tnp, name)(v, other))(x)


def test_traced_comparison_with_a_non_array_is_pythons() -> None:
    """``tracer == object()`` is False and ``!=`` True, as on JAX's tracers (ours raised)."""
    x = np.arange(3.0)
    for o in (object(), "a", None):
        ours = tg.jit(lambda v: (v == o, v != o))(x)
        theirs = jax.jit(lambda v: (v == o, v != o))(x)
        assert_same(f"tracer == {o!r}", ours, theirs)
    assert_same("tracer == number", tg.jit(lambda v: v == 1.0)(x), jax.jit(lambda v: v == 1.0)(x))


COMPUTATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "sub": lambda a, b: a - b,
    "div": lambda a, b: a / b,
    "a*0.5+b": lambda a, b: a * 0.5 + b,
    "first": lambda a, b: a,
    "second": lambda a, b: b,
}


@pytest.mark.parametrize("name", list(COMPUTATIONS))
@pytest.mark.parametrize("dims", [(0,), (1,), (0, 1), (2, 0)])
def test_reduce_with_a_computation_that_is_no_monoid_matches_jax(name: str,
                                                                 dims: tuple[int, ...]) -> None:
    """JAX (XLA on the CPU) folds left to right from the initial value over dimensions of at
    most 32; ours combined pairs first, so reduce(rows of 1..4, 0., sub, (1,)) was 0, not -10."""
    fn = COMPUTATIONS[name]
    x = np.cos(np.arange(24.0)).reshape(2, 3, 4) + 2.0
    for init in (0.0, 1.5):
        ours = run(lambda: (tlax.reduce(x, init, fn, dims),
                            tg.jit(lambda v: tlax.reduce(v, init, fn, dims))(x),
                            tg.vmap(lambda v: tlax.reduce(v, init, fn, (0,)))(x)))
        theirs = run(lambda: (jax.lax.reduce(x, init, fn, dims),
                              jax.jit(lambda v: jax.lax.reduce(v, init, fn, dims))(x),
                              jax.vmap(lambda v: jax.lax.reduce(v, init, fn, (0,)))(x)))
        assert_same(f"reduce {name} init {init} over {dims}", ours, theirs, rtol=1e-12)


def test_reduce_of_a_pytree_and_of_monoids_is_unchanged() -> None:
    v, i = np.array([3.0, 1.0, 3.0, 2.0]), np.arange(4)

    def argmax(np_: Any) -> Callable[[Any, Any], Any]:
        def f(a: Any, b: Any) -> Any:
            take = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
            return np_.where(take, a[0], b[0]), np_.where(take, a[1], b[1])
        return f
    assert_same("argmax pair", tlax.reduce((v, i), (NINF, 0), argmax(tnp), (0,)),
                jax.lax.reduce((v, i), (NINF, 0), argmax(jax.numpy), (0,)))
    x = np.cos(np.arange(40.0))
    assert_same("logaddexp", tlax.reduce(x, NINF, tnp.logaddexp, (0,)),
                jax.lax.reduce(x, NINF, jax.numpy.logaddexp, (0,)), rtol=1e-13)


def test_reduce_that_jax_leaves_undefined_warns() -> None:
    """Over a dimension longer than 32 XLA reorders the reduction (JAX: "the result is
    undefined" for a computation that is no monoid); ours folds, and says so."""
    x = np.cos(np.arange(40.0))
    with pytest.warns(UserWarning, match="not associative") as rec:
        out = tlax.reduce(x, 0.0, lambda a, b: a - b, (0,))
    assert rec[0].filename == __file__
    np.testing.assert_allclose(out, -np.sum(x), rtol=1e-13)
    with pytest.warns(UserWarning, match="not its identity"):
        tlax.reduce(x, 1.0, tlax.add, (0,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tlax.reduce(x, 0.0, tlax.add, (0,))
        tlax.reduce(x[:32], 1.0, lambda a, b: a - b, (0,))


def test_reduce_fold_gradient_matches_finite_differences() -> None:
    x = np.cos(np.arange(6.0)).reshape(2, 3)

    def f(w: Any) -> Any:
        return tnp.sum(tlax.reduce(x * w + w * w, 0.5, lambda a, b: a * 0.5 + b * b, (1,)))
    w, h = 0.7, 1e-6
    fd = (float(f(w + h)) - float(f(w - h))) / (2 * h)
    np.testing.assert_allclose(float(tg.grad(f)(w)), fd, rtol=1e-7)


@pytest.mark.parametrize("method", ["set", "add", "multiply", "min"])
def test_scatter_promise_in_bounds_drops_out_of_bounds_updates(method: str) -> None:
    """An update at an out-of-bounds index with mode="promise_in_bounds" is dropped, as by
    XLA's scatter (JAX's); ours clamped it: x.at[100].set(-1.) wrote the last entry."""
    idx = np.array([100, 3, -20])

    def f(np_: Any, i: Any) -> Any:
        return getattr(np_.arange(10.0).at[i], method)(-1.0, mode="promise_in_bounds")
    ours = run(lambda: (f(tnp, idx), tg.jit(lambda i: f(tnp, i))(idx), f(tnp, 100)))
    theirs = (f(jax.numpy, idx), jax.jit(lambda i: f(jax.numpy, i))(idx), f(jax.numpy, 100))
    assert_same(f"at[...].{method}(promise_in_bounds)", ours, theirs)
    dn = tlax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    jdn = jax.lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))
    assert_same("lax.scatter_add(PROMISE_IN_BOUNDS)",
                tlax.scatter_add(np.arange(10.0), idx[:, None], -np.ones(3), dn,
                                 mode=tlax.GatherScatterMode.PROMISE_IN_BOUNDS),
                jax.lax.scatter_add(np.arange(10.0), idx[:, None], -np.ones(3), jdn,
                                    mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS))


def test_traced_shift_and_divmod_operators() -> None:
    """``x << y``, ``x >> y`` and ``divmod`` on traced values, as on JAX's tracers (ours raised
    "unsupported operand type(s)")."""
    def f(a: Any, b: Any) -> Any:
        return (a << b, a >> b, 3 << a, 200 >> a, divmod(a, 3), divmod(7, a + 1), a << 2,
                np.uint8(5) >> a)
    a, b = np.arange(3, dtype=np.uint8), np.uint8(1)
    assert_same("uint8 shifts", tg.jit(f)(a, b), jax.jit(f)(a, b))
    g = lambda v: (v << 2, 1 << v, divmod(v, 2.5), v >> 1)  # noqa: E731
    assert_same("int64 shifts", tg.jit(g)(np.arange(4)), jax.jit(g)(np.arange(4)))
    assert_same("vmap shift", tg.vmap(lambda v: v << 1)(np.arange(4)),
                jax.vmap(lambda v: v << 1)(np.arange(4)))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64])
def test_var_and_std_with_a_dtype_compute_in_it(dtype: type) -> None:
    """var/std(x, dtype=...) compute in that dtype, as JAX's: ours followed NumPy (float64
    deviations from a float32 mean), so four equal float64 entries had a float32 variance of
    2.3e-15, JAX's 0; a real dtype for complex values is JAX's ValueError."""
    x = np.array([1.3, 1.3, 1.3, 1.3])
    m = np.abs(np.cos(np.arange(12.0))).reshape(3, 4) + 1.0
    for a in (x, m, m.astype(np.complex128) * (1 + 0.5j)):
        ours = run(lambda: (tnp.var(a, dtype=dtype), tnp.std(a, axis=-1, dtype=dtype),
                            tg.jit(lambda v: tnp.var(v, axis=0, dtype=dtype))(a)))
        theirs = run(lambda: (jax.numpy.var(a, dtype=dtype),
                              jax.numpy.std(a, axis=-1, dtype=dtype),
                              jax.jit(lambda v: jax.numpy.var(v, axis=0, dtype=dtype))(a)))
        assert_same(f"var/std dtype={dtype.__name__} of {a.dtype}", ours, theirs, rtol=2e-3)
    assert float(tnp.var(x, dtype=np.float32)) == 0.0


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "int32", "bool"])
def test_angle_and_nan_to_num_of_real_values(dtype: str) -> None:
    """angle(x) of real x is atan2(0, x) in x's dtype, as JAX's: ours was pi where x < 0 in
    float64 (angle(nan) 0, angle(-0.) 0, float32 in, float64 out); nan_to_num of bfloat16
    left NaN and infinities (W1's finding)."""
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = (np.array([np.nan, -0.0, 0.0, -2.0, 3.0, np.inf, -np.inf]) if dt.kind != "b" and
         dtype != "int32" else np.array([0, 2, 3])).astype(dt)

    def f(np_: Any, api: Any) -> Any:
        out = (np_.angle(x), np_.angle(x, deg=True), api.jit(np_.angle)(x))
        return out + ((np_.nan_to_num(x), api.jit(np_.nan_to_num)(x)) if dt.kind not in "ib"
                      else ())
    ours, theirs = run(lambda: f(tnp, tg)), f(jax.numpy, jax)
    assert_same(f"angle/nan_to_num {dtype}", [np.asarray(v, np.float64) for v in ours],
                [np.asarray(v, np.float64) for v in theirs], rtol=1e-15)
    assert [v.dtype for v in ours] == [v.dtype for v in theirs]
    assert_same("grad angle", tg.grad(tnp.angle)(-2.0), jax.grad(jax.numpy.angle)(-2.0))


def test_i0_keeps_low_precision_float_dtypes() -> None:
    """i0 of float16/bfloat16 keeps the dtype, as JAX's (ours returned float64)."""
    import ml_dtypes
    for dt in (np.float16, ml_dtypes.bfloat16):
        x = np.array([0.5, -3.0, 10.0]).astype(dt)
        ours, theirs = tnp.i0(x), jax.numpy.i0(x)
        assert ours.dtype == theirs.dtype == tg.jit(tnp.i0)(x).dtype
        np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64),
                                   rtol=1e-2)


@pytest.mark.parametrize("name", ["cumsum", "nancumsum"])
def test_float16_cumulative_sums_accumulate_in_float32(name: str) -> None:
    """tnp.cumsum of float16 (and bfloat16) accumulates in float32, as JAX's: NumPy's float16
    running sum rounds every partial sum (137 off JAX's after 3000 terms near 1).  (cumprod
    is left: JAX's rounds every step in float16, as NumPy's, though not in the same order.)"""
    import ml_dtypes
    for dt in (np.float16, ml_dtypes.bfloat16):
        x = (np.arange(3000) % 7 * 0.37).astype(dt)
        ours, theirs = getattr(tnp, name)(x), getattr(jax.numpy, name)(x)
        assert ours.dtype == theirs.dtype == tg.jit(getattr(tnp, name))(x).dtype
        spacing = np.abs(np.asarray(theirs, np.float64)) * 2.0 ** -(8 if dt == np.float16 else 5)
        assert np.all(np.abs(np.asarray(ours, np.float64) - np.asarray(theirs, np.float64))
                      <= spacing + 1e-30), name


@pytest.mark.parametrize("name", ["sub", "a*0.5+b"])
@pytest.mark.parametrize("init", [0.0, 1.0])
def test_reduce_window_with_a_computation_that_is_no_monoid_matches_jax(name: str,
                                                                        init: float) -> None:
    """reduce_window folds each window from the initial value and skips padding, as XLA on
    the CPU: ours combined pairs and folded the initial value in for padded entries."""
    fn = COMPUTATIONS[name]
    x = np.cos(np.arange(12.0)).reshape(3, 4) + 2.0
    for win, st, pad in (((2, 2), (1, 1), "VALID"), ((1, 3), (1, 2), "SAME"),
                         ((3, 1), (2, 1), ((1, 0), (0, 1)))):
        ours = run(lambda: (tlax.reduce_window(x, init, fn, win, st, pad),
                            tg.jit(lambda v: tlax.reduce_window(v, init, fn, win, st, pad))(x)))
        theirs = (jax.lax.reduce_window(x, init, fn, win, st, pad),
                  jax.jit(lambda v: jax.lax.reduce_window(v, init, fn, win, st, pad))(x))
        assert_same(f"reduce_window {name} {init} {win} {pad}", ours, theirs, rtol=1e-12)


def test_take_refuses_promise_in_bounds_as_jax() -> None:
    """JAX 0.10.2's jnp.take refuses mode='promise_in_bounds' (ours took it, then raised an
    IndexError for an out-of-bounds index)."""
    with pytest.raises(ValueError, match="Invalid mode 'promise_in_bounds' for np.take"):
        tnp.take(np.arange(12.0), np.array([0, 13]), mode="promise_in_bounds")
    with pytest.raises(ValueError, match="Invalid mode 'promise_in_bounds' for np.take"):
        jax.numpy.take(np.arange(12.0), np.array([0, 13]), mode="promise_in_bounds")


def test_checkpoint_takes_unhashable_static_arguments() -> None:
    # JAX's checkpoint traces at every call, so a static argument need not be hashable
    # (equinox's filter_checkpoint passes a tuple holding a dict); jit's must be
    f = tg.checkpoint(lambda s, x: x * s[0]["a"], static_argnums=(0,))
    assert float(tg.grad(lambda x: f(({"a": 2.0},), x))(1.0)) == 2.0
    assert float(tg.jit(lambda x: f(({"a": 3.0},), x))(1.0)) == 3.0
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        tg.jit(lambda s, x: x, static_argnums=0)({"a": 1}, 1.0)


def test_round_of_integers_with_negative_decimals_raises_as_jax() -> None:
    # JAX: NotImplementedError (ours gave float64 [-10., -0., 20., 20.] for int8 input)
    x = np.array([-7, -5, 15, 25], np.int8)
    for np_ in (tnp, jax.numpy):
        with pytest.raises(NotImplementedError,
                           match="integer np.round not implemented for decimals < 0"):
            np_.round(x, -1)
    assert tnp.round(x, 2).dtype == np.int8
