"""Derivatives of indexing with out-of-bounds indices, where JAX 0.10.2's are wrong.

A fuzz of ``.at[].set/add/mul/min/max/get`` (modes None, 'clip', 'drop', 'fill',
'promise_in_bounds'; negative, out-of-range and repeated indices), ``dynamic_slice`` /
``dynamic_update_slice`` with out-of-range starts, ``take``/``take_along_axis``,
sort/argsort/top_k/cummax/max with ties, ``reduce_precision``, ``associative_scan`` and
``lax.map(batch_size=)`` under eager, jit, vmap, grad, jit(grad), vmap(grad) and jvp agreed
with JAX on 668 of 679 comparisons.  Of the others, 2 are exception classes (JAX's and ours
are different classes of the same name) and 9 are JAX's errors, kept here and checked
against finite differences and the jvp/vjp identity:

* ``x.at[i].get()`` clamps an out-of-range index (as JAX does), but JAX's gradient drops
  that element's cotangent (its transpose is a scatter that drops out-of-range indices),
  so JAX's ``grad`` disagrees with its own ``jvp``.  Ours sends it to the clamped element.
* ``x.at[i].max(u, mode='clip')``: JAX's jvp is ``inf`` or the tangent of the element that
  lost, ours is the winner's (the average at a tie, as JAX's rule elsewhere).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

X = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
I = np.array([0, -1, 7, -9, 2])     # in range, negative, above, below (clamped: 0 4 4 0 2)
T = np.arange(1.0, 6.0)             # a tangent

CASES: dict[str, Callable[[Any], Any]] = {
    "get, clamped indices": lambda x: x.at[I].get(),
    "get mode clip": lambda x: x.at[I].get(mode="clip"),
    "max mode clip": lambda x: x.at[I].max(2.0 * x + 1.0, mode="clip"),
    "min mode clip": lambda x: x.at[I].min(1.0 - x, mode="clip"),
    "add mode clip": lambda x: x.at[I].add(x * x, mode="clip"),
}


def _fd(f: Callable[[Any], Any], x: np.ndarray, t: np.ndarray, eps: float = 1e-6) -> Any:
    hi, lo = f(tnp.asarray(x + eps * t)), f(tnp.asarray(x - eps * t))
    return (np.asarray(hi) - np.asarray(lo)) / (2 * eps)


@pytest.mark.parametrize("name", list(CASES))
def test_out_of_range_index_derivatives_match_finite_differences(name: str) -> None:
    f = CASES[name]
    tan = tg.jvp(f, (X,), (T,))[1]
    np.testing.assert_allclose(tan, _fd(f, X, T), rtol=1e-7, atol=1e-9)
    # reverse mode is the transpose of the same linear map: <u, J t> == <J^T u, t>
    u = np.array([0.5, -1.0, 2.0, 1.5, -0.25])
    ct = tg.vjp(f, X)[1](u)[0]
    np.testing.assert_allclose(np.dot(u, tan), np.dot(ct, T), rtol=1e-12)
    # and the same under jit and vmap
    np.testing.assert_allclose(tg.jit(lambda t: tg.jvp(f, (X,), (t,))[1])(T), tan, rtol=1e-12)
    vm = tg.vmap(lambda x: tg.vjp(f, x)[1](u)[0])(np.stack([X, X]))
    np.testing.assert_allclose(vm, np.stack([ct, ct]), rtol=1e-12)


def test_clamped_gather_gradient_counts_every_use() -> None:
    # x[[0, 4, 4, 0, 2]] after clamping: each of x0 and x4 is used twice (JAX: once)
    g = tg.grad(lambda x: tnp.sum(x.at[I].get()))(X)
    np.testing.assert_array_equal(g, [2.0, 0.0, 1.0, 0.0, 2.0])
