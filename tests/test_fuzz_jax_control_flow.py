"""Differential fuzzing of lax control flow and custom derivative rules against JAX 0.10.2 (x64):
``scan`` (pytree carries and outputs, ``reverse=``, ``unroll=``, ``length=`` without xs),
``fori_loop`` (empty and negative ranges, ``unroll=``), ``while_loop``, ``cond`` with pytree
operands, ``switch`` with a clamped index, ``map`` with ``batch_size=``, ``associative_scan``;
batched predicates and indices under ``vmap``; and ``custom_jvp``/``custom_vjp`` functions; each
under ``grad``, ``jacfwd``, ``hessian``, ``vmap`` and ``jit`` compositions.  The bodies are drawn
from a few elementwise steps (where JAX's and ours must agree to float64 rounding).
"""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax as tlax
from _fuzz_jax_common import FUZZ, assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

_STEPS = ["sin", "half", "shift", "abs", "leaky", "square", "cos_mix"]


def _step(N: Any, name: str, v: Any, w: Any) -> Any:
    return {"sin": lambda: N.sin(v), "half": lambda: v * 0.5, "shift": lambda: v + w,
            "abs": lambda: N.maximum(v, -v), "leaky": lambda: N.where(v > 0, v, 0.1 * v),
            "square": lambda: v * v * 0.3, "cos_mix": lambda: N.cos(v) * w}[name]()


def _programs(L: Any, N: Any, steps: list[str], n: int
              ) -> Callable[[Any, Any], dict[str, Callable[[], Any]]]:
    def body(v: Any, w: Any) -> Any:
        for s in steps:
            v = _step(N, s, v, w)
        return v

    def scan_body(c: Any, xs: Any) -> Any:
        a, d = c
        xi, yi = xs
        a2 = body(a, xi) + d["k"]
        return (a2, {"k": d["k"] * 0.9 + yi.sum()}), (a2 * 2, yi[::-1])

    def progs(x: Any, y: Any) -> dict[str, Callable[[], Any]]:
        return {
            "scan": lambda: L.scan(scan_body, (x[0], {"k": x[1]}), (x, y)),
            "scan reverse": lambda: L.scan(scan_body, (x[0], {"k": x[1]}), (x, y), reverse=True),
            "scan unroll": lambda: L.scan(scan_body, (x[0], {"k": x[1]}), (x, y), unroll=2),
            "scan length": lambda: L.scan(lambda c, _: (body(c, 1.5), c), x, None, length=n),
            "fori": lambda: L.fori_loop(0, n, lambda i, c: body(c, i * 0.5), x),
            "fori unroll": lambda: L.fori_loop(1, n + 1, lambda i, c: body(c, 1.0), x, unroll=2),
            "fori empty": lambda: L.fori_loop(3, 1, lambda i, c: body(c, 1.0), x),
            "while": lambda: L.while_loop(lambda c: c[1] < n, lambda c: (body(c[0], 0.3), c[1] + 1),
                                          (x, 0))[0],
            "cond": lambda: L.cond(x[0] > 0, lambda a, b: (body(a, 1.0), {"z": b * 2}),
                                   lambda a, b: (a * 0.5, {"z": -b}), x, y),
            "switch": lambda: L.switch(n - 2, [lambda a: a, lambda a: body(a, 2.0),
                                               lambda a: a * 3.0], x),
            "map": lambda: L.map(lambda r: body(r, 1.0) * r.sum(), y, batch_size=2),
            "associative_scan": lambda: L.associative_scan(lambda a, b: a + body(b, 1.0), x),
        }
    return progs


def _scalar(N: Any, out: Any, leaves: Callable[[Any], list]) -> Any:
    return sum(N.sum(N.sin(v) * (k + 1)) for k, v in enumerate(leaves(out))
               if np.dtype(v.dtype).kind == "f")


_NAMES = sorted(_programs(tlax, tnp, [], 0)(np.zeros(3), np.zeros((3, 3))))


@settings(FUZZ, max_examples=max(6, FUZZ.max_examples // 2))  # JAX compiles each (~1 s)
@given(steps=st.lists(st.sampled_from(_STEPS), min_size=1, max_size=3), n=st.integers(0, 4),
       x=st.lists(st.floats(-2.0, 2.0, allow_subnormal=False),  # XLA flushes them
                  min_size=3, max_size=3).map(np.array),
       name=st.sampled_from(_NAMES))
def test_control_flow(steps: list[str], n: int, x: np.ndarray, name: str) -> None:
    """Values (eager and jit), grad, jit(grad), jacfwd and vmap equal JAX's."""
    y = np.stack([x, x[::-1] * 0.5, x + 1.0])
    ours, theirs = _programs(tlax, tnp, steps, n), _programs(jax.lax, jnp, steps, n)
    for name in [name]:
        def f(a: Any, b: Any, name: str = name) -> Any:
            return ours(a, b)[name]()

        def jf(a: Any, b: Any, name: str = name) -> Any:
            return theirs(a, b)[name]()
        want = run(jf, x, y)
        assert_same(name, run(f, x, y), want, dtypes=False)
        assert_same(f"jit {name}", run(tg.jit(f), x, y), want, dtypes=False)

        def loss(a: Any, b: Any, f: Any = f) -> Any:
            return _scalar(tnp, f(a, b), tg.tree_util.tree_leaves)

        def jloss(a: Any, b: Any, jf: Any = jf) -> Any:
            return _scalar(jnp, jf(a, b), jax.tree_util.tree_leaves)
        try:
            jg = jax.grad(jloss, argnums=(0, 1))(x, y)
        except ValueError as err:   # reverse mode through while_loop: JAX raises, so must we
            head = str(err).split(". ")[0]
            with pytest.raises(ValueError, match=re.escape(head)):
                tg.grad(loss, argnums=(0, 1))(x, y)
            assert name == "while", (name, err)
            continue
        tol: dict[str, Any] = dict(rtol=1e-9, atol=1e-12)
        assert_same(f"grad {name}", run(tg.grad(loss, argnums=(0, 1)), x, y), jg, **tol)
        assert_same(f"jit grad {name}", run(tg.jit(tg.grad(loss, argnums=(0, 1))), x, y), jg,
                    **tol)
        assert_same(f"jacfwd {name}", run(tg.jacfwd(loss), x, y), jg[0], **tol)
        stack = np.stack([x, -x])
        assert_same(f"vmap grad {name}", run(tg.vmap(tg.grad(loss), in_axes=(0, None)), stack, y),
                    np.stack([jg[0], jax.grad(jloss)(-x, y)]), **tol)


def _batched(L: Any, N: Any) -> dict[str, Callable[[Any, Any], Any]]:
    return {
        "cond": lambda x, i: L.cond(x[0] > 0, lambda a: N.sin(a) * 2, lambda a: a ** 2, x),
        "switch": lambda x, i: L.switch(i, [lambda a: a, lambda a: N.sin(a), lambda a: a * 3], x),
        "while": lambda x, i: L.while_loop(lambda c: c[0] < i + 3,
                                           lambda c: (c[0] + 1, c[1] * 1.5 + N.sin(c[1])),
                                           (0, x))[1],
        "while on x": lambda x, i: L.while_loop(lambda c: N.sum(c ** 2) < 50.0,
                                                lambda c: c * 1.7 + 0.1, x),
        "fori bound": lambda x, i: L.fori_loop(0, N.clip(i, 0, 4), lambda k, c: c * 1.1 + k, x),
        "cond in while": lambda x, i: L.while_loop(
            lambda c: c[0] < 4, lambda c: (c[0] + 1, L.cond(c[1][0] > c[1][1], lambda a: a - 1.0,
                                                            lambda a: a * 1.3, c[1])), (0, x))[1],
    }


_BT, _BJ = _batched(tlax, tnp), _batched(jax.lax, jnp)


@settings(FUZZ, max_examples=4)  # JAX compiles each vmapped loop (seconds)
@given(name=st.sampled_from(sorted(_BT)),
       x=st.lists(st.sampled_from([0.3, -1.2, -2.0, 0.5, 1.5, np.nan, 0.0]), min_size=8,
                  max_size=8).map(lambda v: np.array(v).reshape(4, 2)),
       i=st.lists(st.integers(-2, 6), min_size=4, max_size=4).map(np.array))
def test_batched_predicates(name: str, x: np.ndarray, i: np.ndarray) -> None:
    """Predicates, indices and loop bounds that differ across a vmapped batch; forward mode
    (JAX has no reverse mode through a while loop)."""
    f, jf = _BT[name], _BJ[name]
    want = jax.vmap(jf)(x, i)
    assert_same(f"vmap {name}", run(tg.vmap(f), x, i), want)
    assert_same(f"jit vmap {name}", run(tg.jit(tg.vmap(f)), x, i), want)
    assert_same(f"vmap jacfwd {name}", run(tg.vmap(tg.jacfwd(f)), x, i),
                jax.vmap(jax.jacfwd(jf))(x, i), rtol=1e-9)


# ---------------------------------------------------------------------------
# custom_jvp / custom_vjp under compositions


def _customs(api: Any, N: Any) -> dict[str, Callable[[Any], Any]]:
    @api.custom_jvp
    def softclip(x: Any) -> Any:
        return N.where(x > 1.0, 1.0 + N.log(N.maximum(x, 1.0)), x)

    @softclip.defjvp
    def _softclip_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return softclip(x), N.where(x > 1.0, 1.0 / N.maximum(x, 1.0), 1.0) * t

    @api.custom_vjp
    def scaled(x: Any, s: Any) -> Any:
        return N.sin(x) * s

    def _fwd(x: Any, s: Any) -> Any:
        return scaled(x, s), (N.cos(x), s, N.sin(x))

    def _bwd(res: Any, g: Any) -> Any:
        c, s, sn = res
        return g * c * s * 0.5, N.sum(g * sn)  # a deliberately non-true rule for x

    scaled.defvjp(_fwd, _bwd)
    return {
        "custom_jvp": lambda x: N.sum(softclip(x * 2.0) ** 2),
        "custom_vjp": lambda x: N.sum(scaled(x, 1.5) * x),
        "both in scan": lambda x: N.sum(api.lax.scan(
            lambda c, v: (softclip(c + v), scaled(c, v)), x[0], x)[1]),
    }


_CT, _CJ = _customs(tg, tnp), _customs(jax, jnp)


@FUZZ
@given(name=st.sampled_from(sorted(_CT)),
       x=st.lists(st.sampled_from([0.3, -1.2, 2.0, 0.5, 1.0, 1.5]), min_size=3,
                  max_size=3).map(np.array))
def test_custom_rules_in_compositions(name: str, x: np.ndarray) -> None:
    """The user's rules are used (not the function's own derivative) under grad, jit(grad),
    vmap(grad), jit(vmap(grad)) and jacfwd where JAX allows it (not of a custom_vjp)."""
    f, jf = _CT[name], _CJ[name]
    want = jax.grad(jf)(x)
    assert_same(f"grad {name}", run(tg.grad(f), x), want, rtol=1e-9)
    assert_same(f"jit grad {name}", run(tg.jit(tg.grad(f)), x), want, rtol=1e-9)
    stack = np.stack([x, x[::-1]])
    jv = jax.vmap(jax.grad(jf))(stack)
    assert_same(f"vmap grad {name}", run(tg.vmap(tg.grad(f)), stack), jv, rtol=1e-9)
    assert_same(f"jit vmap grad {name}", run(tg.jit(tg.vmap(tg.grad(f))), stack), jv, rtol=1e-9)
    if name == "custom_jvp":
        assert_same(f"hessian {name}", run(tg.hessian(f), x), jax.hessian(jf)(x), rtol=1e-9)
