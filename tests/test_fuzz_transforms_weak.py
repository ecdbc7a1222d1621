"""Weakly typed (Python-scalar) carries and operands of control flow, against JAX 0.10.2 (x64).

As JAX does, a loop body (and a branch) is traced with the carry's weak type: ``c * x32`` with
``c`` started at ``1`` is float32, and a carry whose type the body changes takes the promoted
type (a second trace).  Ours traced every body with strong carries (a Python ``0.0`` was a
float64 array), so float32 loops became float64 (``ys``, comparisons in ``cond_fun``: a loop
ran a step more), uint8 sums did not wrap, and ``fori_loop(0, 3, f, np.int32(0))`` raised.
Seven cases and the program check failed before the fix (eagerly, under ``jit`` and under
``vmap``); the others guard the paths beside them (promotion errors, ``cond``, grad).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax as tlax
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)

f32 = np.float32
A32 = np.arange(1, 4, dtype=f32) / 3
Z32, Z8 = np.zeros(1, f32), np.zeros(1, np.int8)

# name -> case(L): L is tangentia.lax or jax.lax
CASES: dict[str, Callable[[Any], Any]] = {
    # the carry stays a weak float64; ys = c * x is float32 in JAX (ours was float64)
    "scan ys of a weak carry": lambda L: L.scan(lambda c, x: (c + 1.0, c * x), 0.1, A32),
    # cond_fun compares the weak carry in float32: 0.3 < f32(0.3) is False (ours ran to 0.4)
    "while compares in float32": lambda L: L.while_loop(
        lambda c: c < f32(0.3), lambda c: c + 0.1, 0.0),
    # the index is a weak int64: c + i keeps an int32 carry int32 (ours raised)
    "fori int32 carry + index": lambda L: L.fori_loop(0, 3, lambda i, c: c + i, np.int32(0)),
    "fori int32 bounds, int32 carry": lambda L: L.fori_loop(
        np.int32(1), np.int32(4), lambda i, c: c * i, np.int32(1)),
    # a Python-int carry meeting uint8 becomes uint8 and wraps (ours: int64, 600)
    "fori weak int carry + uint8": lambda L: L.fori_loop(0, 3, lambda i, c: c + np.uint8(200), 0),
    "fori weak int carry * float32": lambda L: L.fori_loop(0, 3, lambda i, c: c * f32(1.1), 1),
    "nested fori, weak carry": lambda L: L.fori_loop(
        0, 2, lambda i, c: L.fori_loop(0, 2, lambda j, d: d * f32(1.1), c), 1),
    "while, two weak carries": lambda L: L.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * f32(1.1)), (0, 1)),
    "scan weak float carry + float32 xs": lambda L: L.scan(lambda c, x: (c + x, c), 0.0, A32),
    "scan weak int carry + float16 xs": lambda L: L.scan(
        lambda c, x: (c + x, c), 1, np.ones(2, np.float16)),
    "scan pair carry": lambda L: L.scan(
        lambda c, x: ((c[0] * x, c[1] + 1), c[0] > x), (1.0, 0), A32),
    "cond, weak operand": lambda L: L.cond(True, lambda y: y * f32(1.1), lambda y: y * f32(2), 1.0),
    "switch, weak operand": lambda L: L.switch(
        1, [lambda y: y * A32, lambda y: f32(1) + y * A32], 0.1),
    "map, weak constant": lambda L: L.map(lambda x: x * 0.1, A32),
    # JAX's two passes only: the second pass changes another carry's type -> its TypeError
    "fori, promotion needs a third pass": lambda L: L.fori_loop(
        0, 2, lambda i, c: (c[0] * f32(2), c[1] + c[0]), (1, 1)),
    "fori weak float carry to int32": lambda L: L.fori_loop(0, 2, lambda i, c: np.int32(1), 0.0),
}


def _modes(api: Any, L: Any, case: Callable[[Any], Any]) -> dict[str, Any]:
    def no_jit() -> Any:
        # Python loops: a weakly typed result (ours: a Python scalar) keeps a float32
        # (an int8) float32 (int8), a strong one does not
        with api.disable_jit():
            return api.tree_util.tree_map(lambda r: api.numpy.add(
                Z32 if np.asarray(r).dtype.kind in "fc" else Z8, r), case(L))
    return {"eager": run(lambda: case(L)),
            "jit": run(lambda: api.jit(lambda: case(L))()),
            "vmap": run(lambda: api.vmap(lambda _: case(L))(np.zeros(2))),
            "disable_jit": run(no_jit)}


# JAX's scan under disable_jit stacks ys of two dtypes (the weak carry's first y, then
# float32 or float16 ones) with lax.concatenate, which raises TypeError; under jit its ys
# have one dtype, and ours have that in every mode: compared with JAX's jit result.
JAX_DISABLE_JIT_RAISES = {"scan weak float carry + float32 xs", "scan weak int carry + float16 xs"}


@pytest.mark.parametrize("name", list(CASES))
def test_weak_carry_types_and_values_match_jax(name: str) -> None:
    ours = _modes(tg, tlax, CASES[name])
    theirs = _modes(jax, jax.lax, CASES[name])
    if name in JAX_DISABLE_JIT_RAISES:
        assert isinstance(theirs["disable_jit"], TypeError)
        with jax.disable_jit(False):
            theirs["disable_jit"] = jax.tree_util.tree_map(
                lambda r: jax.numpy.add(Z32, r), theirs["jit"])
    for mode in ours:
        assert_same(f"{name} ({mode})", ours[mode], theirs[mode], rtol=1e-6)


def test_grad_through_a_weak_carry_matches_jax() -> None:
    """The float32 ``ys`` of a weak carry, differentiated (and vmapped) through the loop."""
    def loss(L: Any, np_: Any) -> Callable[[Any], Any]:
        def f(w: Any) -> Any:
            _, ys = L.scan(lambda c, x: (c + 0.5, c * x * w), 0.1, A32)
            return np_.sum(ys * ys)
        return f
    x = f32(1.3)
    ours = run(lambda: (tg.grad(loss(tlax, tnp))(x), tg.vmap(tg.grad(loss(tlax, tnp)))(A32)))
    theirs = (jax.grad(loss(jax.lax, jax.numpy))(x),
              jax.vmap(jax.grad(loss(jax.lax, jax.numpy)))(A32))
    assert_same("grad/vmap(grad) through a weak carry", ours, theirs, rtol=1e-6)


def test_weak_loop_bodies_have_strong_inputs() -> None:
    """The traced body takes strong inputs, each use that relied on a weak type converted:
    the program gives the same types whatever its carry holds (a float64 array from the
    second step on), which the NumPy backend relies on."""
    jaxpr = tg.make_jaxpr(lambda: tlax.scan(lambda c, x: (c + 1.0, c * x), 0.1, A32))()
    (eqn,) = jaxpr.jaxpr.eqns
    body = eqn.params["jaxpr"]
    assert not any(v.aval.weak_type for v in body.invars)
    assert [e.prim.name for e in body.eqns].count("convert_element_type") == 1
    assert [v.aval.dtype for v in body.outvars] == [np.float64, np.float32]
