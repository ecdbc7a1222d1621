"""Benchmark: ``jit(grad(sum(sigmoid(x))))`` on 10^6 float64 elements, the plain
composition and a work-sharing custom_jvp rule (seed 004), against JAX.

* plain: ``1 / (1 + exp(-x))`` differentiated by the library (tangentia per jit
  backend, and JAX);
* rule: ``tangentia.nn.sigmoid``, a custom_jvp computing ``e = exp(-|x|)`` once
  and reusing it for the derivative ``e / (1 + e)^2``; the JAX peer is the same
  rule written with ``jax.custom_jvp``, and ``jax.nn.sigmoid`` (XLA's logistic)
  is shown as well.

Ratios: tangentia plain / JAX plain, tangentia rule / JAX rule and /
``jax.nn.sigmoid``, and tangentia rule / tangentia plain (target: the rule is
>= 1.3x faster, i.e. ratio <= 0.77; issue 9 asks plain and rule each <= 1.0x JAX's).  All gradients agree to rtol 1e-12.

Standalone: ``python benchmarks/bench_sigmoid.py [--quick]`` (= ``run.py --only sigmoid``).
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only sigmoid`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "sigmoid", "--no-json", *sys.argv[1:]])

import numpy as np  # noqa: E402

from _harness import (Impl, backend_note, peer, run_impls, tg_backends,  # noqa: E402
                      tg_impls, tg_jit)

NAME = "sigmoid"
TITLE = "jit(grad(sum(sigmoid(x)))), x f64[10**6]: plain composition and custom_jvp rule"
SIZE = 10 ** 6
RULE_SPEEDUP = 1.3


def plain_loss(np_):
    return lambda x: np_.sum(1.0 / (1.0 + np_.exp(-x)))


def jax_rule_sigmoid():
    """tangentia's expit rule written with jax.custom_jvp."""
    import jax
    import jax.numpy as jnp

    @jax.custom_jvp
    def sigmoid(x):
        e = jnp.exp(-jnp.abs(x))
        return jnp.where(x >= 0, 1.0, e) / (1.0 + e)

    @sigmoid.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        e = jnp.exp(-jnp.abs(x))
        d = 1.0 + e
        return jnp.where(x >= 0, 1.0, e) / d, t * (e / (d * d))

    return sigmoid


def impls():
    x = np.random.default_rng(0).standard_normal(SIZE) * 3.0

    def tg_make(kind):
        def make(backend):
            import tangentia as tg
            import tangentia.nn as nn
            import tangentia.numpy as tnp
            loss = plain_loss(tnp) if kind == "plain" else (lambda x: tnp.sum(nn.sigmoid(x)))
            g = tg_jit(tg.grad(loss), backend)
            return lambda: g(x)
        return make

    def jax_make(kind):
        def build():
            jax, _ = peer("jax")
            import jax.numpy as jnp
            if kind == "plain":
                loss = plain_loss(jnp)
            else:
                sig = jax_rule_sigmoid() if kind == "rule" else jax.nn.sigmoid
                loss = lambda x: jnp.sum(sig(x))  # noqa: E731
            g = jax.jit(jax.grad(loss))
            xj = jnp.asarray(x)
            return lambda: g(xj).block_until_ready()
        return build

    out = []
    for b in tg_backends():
        out += tg_impls("tangentia-plain", "tangentia[{backend}]: plain 1/(1+exp(-x))",
                        tg_make("plain"), [b], ratio_to=["jax-plain"])
        out += tg_impls("tangentia-rule", "tangentia[{backend}]: nn.sigmoid (custom_jvp rule)",
                        tg_make("rule"), [b],
                        ratio_to=["jax-rule", "jax-nn", f"tangentia-plain[{b[0]}]"])
    return out + [
        Impl("jax-plain", "jax: plain 1/(1+exp(-x))", jax_make("plain"), requires="jax"),
        Impl("jax-rule", "jax: the same rule as a jax.custom_jvp", jax_make("rule"),
             requires="jax"),
        Impl("jax-nn", "jax: jax.nn.sigmoid", jax_make("nn"), requires="jax"),
    ]


def run(cfg, log=print):
    targets = {}
    for b, _ in tg_backends():  # issue 9: plain and rule each at most JAX's
        targets.update({f"tangentia-rule[{b}]/tangentia-plain[{b}]": 1 / RULE_SPEEDUP,
                        f"tangentia-plain[{b}]/jax-plain": 1.0, f"tangentia-rule[{b}]/jax-rule": 1.0})
    entries = run_impls(impls(), cfg, rtol=1e-12, atol=1e-15, targets=targets, log=log)
    notes = [backend_note()]
    for e in entries:
        for other, r in e.get("ratios", {}).items():
            if e["impl"].startswith("tangentia-rule") and other.startswith("tangentia-plain"):
                notes.append(f"{e['impl']}: the rule is {1 / r:.2f}x faster than the plain "
                             f"composition (target >= {RULE_SPEEDUP}x)")
    return {"title": TITLE, "entries": entries, "notes": notes}
