"""``nn``'s normalizations and NumPy reductions' ``where=``/``initial=`` against JAX 0.10.2 (x64),
found by session 19's probe (391 expressions over reductions with ``where``/``initial``,
cumulative ops with ``dtype``, convolutions, ``reduce_window``, segment ops, ``einsum``,
``pad``, ``interp``, ``bincount``/``histogram``, polynomials, ``nn`` activations,
``map_coordinates`` and ``scipy.signal``; eager, jit and grad).  Each test here failed before
its fix.  The probe's deliberate differences (NumPy's dtypes: integer ``convolve`` stays
integer, ``histogram``'s counts are int64) are left alone.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.nn as tnn
import tangentia.scipy.special as tsp

jax = pytest.importorskip("jax", reason="JAX 0.10.2 (x64) is the reference")
jax.config.update("jax_enable_x64", True)
import jax.nn as jnn  # noqa: E402

pytestmark = pytest.mark.timeout(120)

_INF = np.inf
# rows: +inf with finite values, all -inf, -inf with finite, +inf and -inf, NaN, finite
_X = np.array([[_INF, 1., 2.], [-_INF, -_INF, -_INF], [0., -_INF, 1.], [_INF, -_INF, 0.],
               [np.nan, 0., 1.], [3., -1., 0.5]])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_a_slice_holding_inf_is_all_nan_as_jax(name: str) -> None:
    """JAX documents "If any input values are +inf, the result will be all NaN" (x - max is NaN
    at the +inf and -inf beside it, so the sum is NaN); ours shifted a non-finite max by 0 and
    gave NaN at the +inf only and 0 (-inf for log_softmax) beside it.  Over both axes, with
    ``where=``, eagerly, under jit on both backends, and the gradient."""
    ours, theirs = getattr(tnn, name), getattr(jnn, name)
    mask = np.array([[True, True, False]] * 6)
    for kw in ({"axis": 1}, {"axis": 0}, {"axis": 1, "where": mask}, {"axis": None}):
        want = np.asarray(theirs(_X, **kw))
        got = ours(_X, **kw)
        # NaN where JAX's are, and the other values to an ulp (its exp and sum are XLA's)
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0, err_msg=f"{name} {kw}")
        # one compiled program per backend for the slices along axis 1 (compiles are slow)
        for backend in ("numba", "numpy") if kw == {"axis": 1} else ("numpy",):
            np.testing.assert_array_equal(
                tg.jit(lambda x, kw=kw: ours(x, **kw), backend=backend)(_X), got)
        w = np.linspace(0.5, 1.5, _X.size).reshape(_X.shape)
        np.testing.assert_allclose(
            tg.grad(lambda x, kw=kw: (ours(x, **kw) * w).sum())(_X),
            np.asarray(jax.grad(lambda x, kw=kw: (theirs(x, **kw) * w).sum())(_X)),
            rtol=1e-12, atol=1e-16, err_msg=f"grad {name} {kw}")
    # SciPy's softmax (all axes by default) shares the rule
    np.testing.assert_array_equal(getattr(tsp, name)(_X[0]), np.full(3, np.nan))


def test_correlate_conjugates_a_complex_v_under_jit() -> None:
    """``correlate(a, v)`` is ``sum a[n + k] * conj(v[n])`` (NumPy's and JAX's); eagerly ours
    was NumPy's, but traced (jit, vmap, grad) it correlated with ``v`` unconjugated: the
    imaginary parts had the wrong sign under jit, silently."""
    import jax.numpy as jnp
    import tangentia.numpy as tnp
    a = np.array([0.5, -1., 2., 0.25, 3.])
    v = np.array([1., 2j, 3. - 1j])
    for mode in ("full", "same", "valid"):
        for x, y in ((a, v), (v, a), (v, v[::-1] * 1j + 1.), (a[:2], v)):
            want = np.asarray(jnp.correlate(x, y, mode))
            np.testing.assert_allclose(want, np.correlate(x, y, mode), rtol=1e-15)
            np.testing.assert_allclose(tnp.correlate(x, y, mode), want, rtol=1e-15, atol=1e-15)
            np.testing.assert_allclose(
                tg.jit(lambda p, q, mode=mode: tnp.correlate(p, q, mode), backend="numpy")(x, y),
                want, rtol=1e-14, atol=1e-15, err_msg=f"jit {mode} {x} {y}")
    got = tg.vmap(lambda q: tnp.correlate(a, q, "full"))(np.stack([v, 1j * v]))
    np.testing.assert_allclose(got, [np.correlate(a, v, "full"), np.correlate(a, 1j * v, "full")],
                               rtol=1e-14)


_NA = np.array([[1., np.nan, 3., 4.], [np.nan, np.nan, 2., -1.], [5., 6., np.nan, 0.]])
_NI = np.array([[1, 7, 3, 4], [-2, 5, 2, -1], [5, 6, 8, 0]])
_NM = np.array([[1, 1, 0, 1], [1, 0, 0, 1], [0, 0, 0, 0]], bool)


def _nan_fns(module: object) -> dict[str, object]:
    return {k: getattr(module, k) for k in dir(module) if k.startswith("nan")}


@pytest.mark.parametrize("expr", [
    "nanmean(x, where=m, axis=1)", "nanmean(x, where=m)", "nanvar(x, where=m, axis=1)",
    "nanstd(x, where=m, axis=1, ddof=1)", "nanvar(x, where=m[0], axis=1, keepdims=True)",
    "nanprod(x, where=m, axis=1)", "nanmax(x, where=m, axis=1, initial=-9.)",
    "nanmin(x, where=m, axis=0, initial=9.)", "nanmean(i, where=m, axis=0)",
    "nanmax(i, where=m, axis=1, initial=-3)", "nanvar(i, where=m, axis=1)"])
def test_nan_reductions_take_where_as_jax(expr: str) -> None:
    """JAX's nanmean/nanvar/nanstd/nanprod/nanmax/nanmin take ``where=`` (the NaN entries and
    those outside ``where`` are both left out); ours raised TypeError (an unexpected keyword).
    Values against JAX eagerly, under jit, and the gradient at a NaN-free point."""
    import jax.numpy as jnp
    import tangentia.numpy as tnp

    def run(fns: dict[str, object], v: Any) -> Any:
        return eval(expr, {}, {"x": v, "i": _NI, "m": _NM, **fns})
    want = np.asarray(run(_nan_fns(jnp), _NA))
    got = run(_nan_fns(tnp), _NA)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    np.testing.assert_allclose(tg.jit(lambda v: run(_nan_fns(tnp), v), backend="numpy")(_NA),
                               want, rtol=1e-14, atol=0)
    if "(x" in expr:
        y = np.nan_to_num(_NA, nan=0.5)
        theirs = jax.grad(lambda v: jnp.sum(jnp.nan_to_num(run(_nan_fns(jnp), v))))(y)
        mine = tg.grad(lambda v: tnp.sum(tnp.nan_to_num(run(_nan_fns(tnp), v))))(y)
        np.testing.assert_allclose(mine, np.asarray(theirs), rtol=1e-12, atol=1e-15)


def test_pad_empty_mode_pads_zeros_as_jax() -> None:
    """``pad(mode='empty')`` pads with zeros as JAX's and our traced path; eagerly ours was
    NumPy's, whose padding is uninitialized memory (it held the values of an array freed
    just before)."""
    import jax.numpy as jnp
    import tangentia.numpy as tnp
    a = np.arange(1., 13.).reshape(3, 4)
    for widths in (((1, 2), (3, 0)), 2, ((0, 3), (4, 4))):
        want = np.asarray(jnp.pad(a, widths, mode="empty"))
        np.testing.assert_array_equal(want, np.pad(a, widths, mode="constant"))
        junk = np.full(want.shape, 7.0)   # memory NumPy's allocator hands out again
        del junk
        np.testing.assert_array_equal(tnp.pad(a, widths, mode="empty"), want)
        np.testing.assert_array_equal(
            tg.jit(lambda x, w=widths: tnp.pad(x, w, mode="empty"), backend="numpy")(a), want)


def test_einsum_takes_the_interleaved_sublist_form_as_jax() -> None:
    """``einsum(op0, sublist0, op1, sublist1, ..., [out])`` (NumPy's and JAX's; ints in [0, 52)
    and Ellipsis as labels); ours raised "only the string form of subscripts is supported".
    Values against JAX and NumPy, eagerly, under jit and the gradient."""
    import jax.numpy as jnp
    import tangentia.numpy as tnp
    rng = np.random.default_rng(19)
    t, y, x = rng.normal(size=(3, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 3))
    cases: list[tuple[Any, ...]] = [
        (t, [0, 1], t, [0, 1], [1]), (t, [0, 1], t, [0, 1]), (x, [0, 0]), (x, [0, 0], [0]),
        (y, [Ellipsis, 1, 2], t, [1, 2], [Ellipsis]), (t, [26, 51], t.T, [51, 3], [26, 3]),
        (y, [0, Ellipsis]), (t, [0, 1], [])]
    for args in cases:
        want = np.asarray(jnp.einsum(*args))
        np.testing.assert_allclose(want, np.einsum(*args), rtol=1e-13)
        got = tnp.einsum(*args)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
        first = args[0]

        def f(v: Any, args: tuple[Any, ...] = args) -> Any:
            return tnp.einsum(v, *args[1:])
        np.testing.assert_allclose(tg.jit(f, backend="numpy")(first), want, rtol=1e-13,
                                   atol=1e-14)
        np.testing.assert_allclose(
            tg.grad(lambda v: tnp.sum(f(v)))(first),
            np.asarray(jax.grad(lambda v: jnp.sum(jnp.einsum(v, *args[1:])))(first)),
            rtol=1e-13, atol=1e-14)
    with pytest.raises(TypeError, match="^einsum: each subscript must be either an integer"):
        tnp.einsum(t, [0, 1.5])
    with pytest.raises(ValueError, match="^einsum: subscript is not within the valid range"):
        tnp.einsum(t, [0, 52])
