"""Differential fuzzing against JAX 0.10.2 (x64) of sorting (``sort``/``argsort`` descending,
``lax.sort`` with several operands and keys, ``top_k``, ``searchsorted``, ``unique`` with
``size=``), segment reductions (``jax.ops.segment_*``, out-of-range ids dropped) and ``tnp.fft``
(every transform, ``n``/``s`` cropping and padding, each ``norm``): values eagerly and under
``jit``, derivatives under ``grad``/``jit``/``vmap``.

Not compared: segment_prod's gradient (JAX raises NotImplementedError for it; ours is the
product rule's); index dtypes (``searchsorted``/``argpartition`` give int64, JAX int32 under x64);
FFTs of empty arrays (JAX's fft gives an empty result, its rfft fails to compile; ours raise
NumPy's 'Invalid number of FFT data points').
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.ops as tops
from tangentia import lax as tlax
from _fuzz_jax_common import FUZZ, assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

_VALUES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.5, 3.0, 1.0, 2.5]
# one length and two sizes: JAX compiles each operation once per shape
_vectors = st.lists(st.sampled_from(_VALUES), min_size=6, max_size=6).map(np.array)


def _sorting(L: Any, N: Any, O: Any, x: np.ndarray, ids: np.ndarray,
             k: int) -> dict[str, Callable[[], Any]]:
    y = np.arange(x.size)[::-1].copy()
    return {
        "sort": lambda: N.sort(x),
        "sort descending": lambda: N.sort(x, descending=True),
        "argsort": lambda: N.argsort(x, stable=True),
        "argsort descending": lambda: N.argsort(x, stable=True, descending=True),
        "lax.sort 2": lambda: L.sort((x, y), num_keys=1),
        "lax.sort 2 keys": lambda: L.sort((N.round(x), -x, y), num_keys=2),
        "sort_key_val": lambda: L.sort_key_val(x, y),
        "top_k": lambda: L.top_k(x, min(k, x.size)),
        "unique inf pad": lambda: N.unique(x, size=k, return_index=True),
        "unique size": lambda: N.unique(x, size=k, fill_value=-7.0),
        "unique counts": lambda: N.unique(x, size=k, return_index=True, return_inverse=True,
                                          return_counts=True),
        "segment_sum": lambda: O.segment_sum(x, ids, num_segments=4),
        "segment_sum no num": lambda: O.segment_sum(x, ids),
        "segment_max": lambda: O.segment_max(x, ids, num_segments=3),
        "segment_min": lambda: O.segment_min(x, ids, num_segments=3),
        "segment_prod": lambda: O.segment_prod(x, ids, num_segments=5),
    }


@FUZZ
@given(x=_vectors, data=st.data(), k=st.sampled_from([2, 8]))
def test_sorting_and_segments(x: np.ndarray, data: Any, k: int) -> None:
    """NaNs last (first with descending), -0.0 and 0.0 kept in order, ties stable; segments
    with ids out of range dropped; eagerly and under jit."""
    ids = np.array(data.draw(st.lists(st.integers(-1, 5), min_size=x.size, max_size=x.size)))
    if not (ids >= 0).any():
        ids[0] = 0  # without num_segments the ids' max must be a segment
    ours, theirs = _sorting(tlax, tnp, tops, x, ids, k), _sorting(jax.lax, jnp, jax.ops, x, ids, k)
    for name in ours:
        want = run(theirs[name])
        assert_same(name, run(ours[name]), want, dtypes=False)
        assert_same(f"jit {name}", run(tg.jit(ours[name])), want, dtypes=False)


def _losses(L: Any, N: Any, O: Any) -> dict[str, Callable[[Any], Any]]:
    ids = np.array([0, 0, 1, 1, 1, 3, 3, -1, 5])
    w = np.arange(1.0, 10.0)
    return {
        "sort": lambda v: N.sum(N.sort(v) * w),
        "lax.sort 2": lambda v: N.sum(L.sort((v, v * w), num_keys=1)[1] * w),
        "top_k": lambda v: N.sum(L.top_k(v, 3)[0] * w[:3]),
        "segment_sum": lambda v: N.sum(O.segment_sum(v, ids, num_segments=4) ** 2),
        "segment_max": lambda v: N.sum(O.segment_max(v, ids, num_segments=4) * w[:4]),
        "median": lambda v: N.median(v),
        "quantile": lambda v: N.quantile(v, 0.3),
        "cumprod": lambda v: N.sum(N.cumprod(v - 4.0)),
    }


_LT, _LJ = _losses(tlax, tnp, tops), _losses(jax.lax, jnp, jax.ops)


@settings(FUZZ, max_examples=max(4, FUZZ.max_examples // 2))
@given(name=st.sampled_from(sorted(_LT)),
       v=st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0, 5.5, -1.0]), min_size=9,
                  max_size=9).map(np.array))
def test_sorting_derivatives(name: str, v: np.ndarray) -> None:
    """Gradients with ties (JAX's choice of which tied entry gets the cotangent)."""
    want = jax.grad(_LJ[name])(v)
    assert_same(f"grad {name}", run(tg.grad(_LT[name]), v), want)
    assert_same(f"jit grad {name}", run(tg.jit(tg.grad(_LT[name])), v), want)
    stack = np.stack([v, v[::-1]])
    assert_same(f"vmap grad {name}", run(tg.vmap(tg.grad(_LT[name])), stack),
                np.stack([want, jax.grad(_LJ[name])(v[::-1])]))


def test_segment_sum_without_num_segments_under_jit() -> None:
    """Constant segment ids under jit give the number of segments (tnp.max staged them:
    ConcretizationTypeError); traced ids still raise it."""
    ids = np.array([0, 2, 2, 1, -1])
    x = np.arange(5.0)
    f = tg.jit(lambda v: tops.segment_sum(v, ids))
    assert_same("jit", f(x), jax.ops.segment_sum(x, ids))
    with pytest.raises(tg.errors.ConcretizationTypeError):
        tg.jit(tops.segment_sum)(x, ids)


_FFTS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
         "fftn", "ifftn", "rfftn", "irfftn"]


@FUZZ
@given(name=st.sampled_from(_FFTS), shape=st.sampled_from([(4,), (3, 5), (2, 3, 4), (1, 6)]),
       n=st.sampled_from([None, 1, 3, 8]), norm=st.sampled_from([None, "ortho", "forward"]),
       complex_=st.booleans(), seed=st.integers(0, 1000))
def test_fft(name: str, shape: tuple[int, ...], n: int | None, norm: str | None, complex_: bool,
             seed: int) -> None:
    """Values eagerly and under jit, and the jvp, equal JAX's (a complex input to a real
    transform raises JAX's ValueError)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)
    one_axis = name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
    if one_axis:
        kw: dict[str, Any] = {"n": n, "axis": 0}
    else:
        kw = {"s": None if n is None else (n, n), "axes": (-2, -1)} if len(shape) > 1 else {}
    kw["norm"] = norm

    def ours(a: Any) -> Any:
        return getattr(tnp.fft, name)(a, **kw)

    def theirs(a: Any) -> Any:
        return getattr(jnp.fft, name)(a, **kw)
    want = run(theirs, x)
    assert_same(name, run(ours, x), want, rtol=1e-9, atol=1e-12)
    assert_same(f"jit {name}", run(tg.jit(ours), x), want, rtol=1e-9, atol=1e-12)
    if not isinstance(want, Exception):
        t = np.cos(np.arange(x.size)).reshape(shape).astype(x.dtype)
        assert_same(f"jvp {name}", run(tg.jvp, ours, (x,), (t,)), jax.jvp(theirs, (x,), (t,)),
                    rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("x", [[np.nan, np.inf], [np.inf, -np.inf], [3.0, 1.0, 2.0, 1.0]],
                         ids=str)
def test_unique_size_padding(x: list) -> None:
    """The default fill is the first sorted entry (it was min(): NaN), and indices are padded
    with its index (they were padded with 0), eagerly and under jit."""
    a = np.array(x)
    kw: dict[str, Any] = dict(size=6, return_index=True, return_counts=True)
    want = jnp.unique(a, **kw)
    assert_same("unique", tnp.unique(a, **kw), want)
    assert_same("jit unique", tg.jit(lambda v: tnp.unique(v, **kw))(a), want)


def test_rfft_of_complex_is_jax_error() -> None:
    with pytest.raises(ValueError, match="^only real valued inputs supported for rfft"):
        tnp.fft.rfft(np.ones(4) * 1j)
