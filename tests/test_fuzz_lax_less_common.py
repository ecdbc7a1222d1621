"""lax's less common primitives against JAX 0.10.2 (x64), under vmap with batched and
unbatched operands mixed, and differentiated (session 20's sweep: ``dynamic_slice`` /
``dynamic_update_slice`` / ``dynamic_index_in_dim`` with out-of-bounds and small-integer
starts; ``take`` and ``.at[]`` in each mode; ``lax.gather`` / ``scatter*`` with
``indices_are_sorted`` / ``unique_indices`` and each mode; ``reduce_window`` with strides,
padding, base and window dilation, ties, integer and multi-operand forms; cumulative reductions
with ``reverse`` on each axis; ``lax.sort`` with several operands and ``num_keys``, NaN and -0.0
keys; ``top_k``).  Each test here failed before its fix, but the last, a guard where JAX
differs from itself.

Left alone, JAX's: ``lax.cumprod``/``cummax``/``cummin``/``cumlogsumexp`` with ``axis=-1``
raise JAX's 'XLA operations do not allow negative axes' eagerly, under jit and vmap, but JAX's
jvp and grad of them run (their rules go through ``associative_scan``, which counts from the
end) or raise a TypeError with ``reverse=True``; ours raise the ValueError everywhere.
``reduce_window`` max/min with ``window_dilation`` differentiate here (JAX's VJP raises
NotImplementedError); ours are checked against finite differences below.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as tlax
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)


def _sort(lax: Any, nk: int) -> Any:
    return lambda a, b: lax.sort((a, b), num_keys=nk)


@pytest.mark.parametrize("nk", [1, 2])
@pytest.mark.parametrize("shapes", [((5,), (2,)), ((2, 3), (3,)), ((2, 3), (3, 2))])
def test_sort_of_operands_of_different_shapes_raises_as_jax(nk: int, shapes: Any) -> None:
    """JAX raises 'Arguments to sort must have equal shapes'; ours sorted by the first
    operand's order and indexed the others with it (num_keys=2 of a (5,) and a (2,) operand
    returned two arrays, silently; num_keys=1 raised an IndexError), eagerly and under jit."""
    a, b = (np.arange(float(np.prod(s))).reshape(s) for s in shapes)
    for wrap in (lambda f: f, jax.jit):
        theirs = run(wrap(_sort(jax.lax, nk)), a, b)
        ours = run((tg.jit if wrap is jax.jit else wrap)(_sort(tlax, nk)), a, b)
        assert isinstance(theirs, TypeError)
        assert_same(f"sort {shapes}", ours, theirs)
        assert str(ours).startswith("Arguments to sort must have equal shapes, got: "
                                    + " ".join(str(s) for s in shapes))


def test_sort_under_vmap_with_unbatched_keys_of_another_length_raises_as_jax() -> None:
    """Per example a (5,) key and (2,) values: JAX raises, ours returned numbers."""
    k, v = np.array([3.0, 1.0, 3.0, 1.0, 2.0]), np.arange(10.0).reshape(2, 5)
    theirs = run(jax.vmap(_sort(jax.lax, 2), in_axes=(None, 1)), k, v)
    ours = run(tg.vmap(_sort(tlax, 2), in_axes=(None, 1)), k, v)
    assert_same("vmap sort", ours, theirs)
    # the same shapes still sort, batched and unbatched mixed
    v5 = np.arange(10.0).reshape(5, 2)
    assert_same("vmap sort ok", tg.vmap(_sort(tlax, 2), in_axes=(None, 1))(k, v5),
                jax.vmap(_sort(jax.lax, 2), in_axes=(None, 1))(k, v5))


def test_second_order_custom_jvp_inside_loops_uses_the_rule_as_outside() -> None:
    """A guard where JAX 0.10.2 disagrees with itself (JAX's bug, not fixed here): a custom_jvp
    rule that calls the function for its primal (``nondiff_argnums`` too) is used again at
    second order, so ``grad(grad(f))(a) = f(a) (k + 1)**2`` for the rule ``f' = f (k + 1)``.
    JAX gives that eagerly, under jit, cond and checkpoint, but ``f (k + 1) k`` (the primal
    function's own derivative at second order) when ``f`` is inside a ``scan`` or
    ``fori_loop``.  Ours uses the rule in every one."""
    from functools import partial

    @partial(tg.custom_jvp, nondiff_argnums=(1,))
    def f(a: Any, k: float) -> Any:
        return tg.numpy.exp(a * k)

    @f.defjvp
    def f_jvp(k: float, p: Any, t: Any) -> Any:
        return f(p[0], k), f(p[0], k) * t[0] * (k + 1.0)

    want = np.exp(0.5 * 0.3) * 1.3 ** 2
    wraps = {"eager": lambda a: f(a, 0.3),
             "scan": lambda a: tlax.scan(lambda c, _: (f(c, 0.3), None), a, None, length=1)[0],
             "fori": lambda a: tlax.fori_loop(0, 1, lambda i, c: f(c, 0.3), a),
             "cond": lambda a: tlax.cond(True, lambda c: f(c, 0.3), lambda c: c, a)}
    for name, g in wraps.items():
        np.testing.assert_allclose(tg.grad(tg.grad(g))(0.5), want, rtol=1e-13, err_msg=name)
        np.testing.assert_allclose(tg.jit(tg.grad(tg.grad(g)))(0.5), want, rtol=1e-13,
                                   err_msg=name)
    # JAX's own numbers, so that the note above stays true while JAX's bug does
    jf = jax.custom_jvp(lambda a, k: jax.numpy.exp(a * k), nondiff_argnums=(1,))
    jf.defjvp(lambda k, p, t: (jf(p[0], k), jf(p[0], k) * t[0] * (k + 1.0)))
    j_scan = jax.grad(jax.grad(lambda a: jax.lax.scan(lambda c, _: (jf(c, 0.3), None), a, None,
                                                      length=1)[0]))(0.5)
    np.testing.assert_allclose(jax.grad(jax.grad(lambda a: jf(a, 0.3)))(0.5), want, rtol=1e-13)
    assert abs(float(j_scan) - np.exp(0.15) * 1.3 * 0.3) < 1e-12
