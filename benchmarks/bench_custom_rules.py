"""Benchmark: eager cost of a custom-rule call relative to a plain primitive.

Target (issue 14): under eager ``grad`` a custom_jvp or custom_vjp call costs at
most 2x a plain primitive (PyTorch's ``autograd.Function`` is about 2x its plain
op).  The workload is ``grad``
of a chain of 100 ``sin`` applications on a length-8 vector, then a sum:

* tangentia: plain ``tnp.sin``, a ``custom_jvp`` sin and a ``custom_vjp`` sin;
* JAX without jit: ``jnp.sin``, ``jax.custom_jvp`` and ``jax.custom_vjp`` sins;
* PyTorch: ``torch.sin`` and a ``torch.autograd.Function`` sin.

Ratios: each custom rule / the same library's plain primitive (the relative
cost the target is about), and tangentia / the peer's same kind of call.

Standalone: ``python benchmarks/bench_custom_rules.py [--quick]``
(= ``run.py --only custom_rules``).
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only custom_rules`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "custom_rules", "--no-json", *sys.argv[1:]])

import numpy as np  # noqa: E402

from _harness import Impl, peer, run_impls  # noqa: E402

NAME = "custom_rules"
TITLE = "eager grad through custom rules: chain of 100 sin on f64[8], cost per call"
N_CALLS = 100
TARGET = 2.0


def chain(f, total):
    def g(x):
        for _ in range(N_CALLS):
            x = f(x)
        return total(x)
    return g


def tg_sins():
    import tangentia as tg
    import tangentia.numpy as tnp

    @tg.custom_jvp
    def sin_jvp(x):
        return tnp.sin(x)

    sin_jvp.defjvp(lambda p, t: (sin_jvp(p[0]), tnp.cos(p[0]) * t[0]))

    @tg.custom_vjp
    def sin_vjp(x):
        return tnp.sin(x)

    sin_vjp.defvjp(lambda x: (tnp.sin(x), tnp.cos(x)), lambda c, g: (c * g,))
    return {"plain": tnp.sin, "custom_jvp": sin_jvp, "custom_vjp": sin_vjp}


def jax_sins():
    import jax
    import jax.numpy as jnp

    @jax.custom_jvp
    def sin_jvp(x):
        return jnp.sin(x)

    sin_jvp.defjvp(lambda p, t: (sin_jvp(p[0]), jnp.cos(p[0]) * t[0]))

    @jax.custom_vjp
    def sin_vjp(x):
        return jnp.sin(x)

    sin_vjp.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (c * g,))
    return {"plain": jnp.sin, "custom_jvp": sin_jvp, "custom_vjp": sin_vjp}


def torch_sins():
    import torch

    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return torch.cos(x) * g

    return {"plain": torch.sin, "function": Sin.apply}


def impls():
    x = np.linspace(0.1, 0.8, 8)

    def tg_make(kind):
        def build():
            import tangentia as tg
            import tangentia.numpy as tnp
            g = tg.grad(chain(tg_sins()[kind], tnp.sum))
            return lambda: g(x)
        return build

    def jax_make(kind):
        def build():
            jax, _ = peer("jax")
            import jax.numpy as jnp
            g = jax.grad(chain(jax_sins()[kind], jnp.sum))
            xj = jnp.asarray(x)
            return lambda: g(xj).block_until_ready()
        return build

    def torch_make(kind):
        def build():
            torch, _ = peer("torch")
            f = chain(torch_sins()[kind], torch.sum)
            x0 = torch.tensor(x, dtype=torch.float64)

            def g():
                xt = x0.detach().requires_grad_(True)
                f(xt).backward()
                return xt.grad
            return g
        return build

    return [
        Impl("tangentia-plain", "tangentia: tnp.sin", tg_make("plain"), role="tangentia",
             ratio_to=["jax-plain", "torch-plain"]),
        Impl("tangentia-custom_jvp", "tangentia: custom_jvp sin", tg_make("custom_jvp"),
             role="tangentia", ratio_to=["tangentia-plain", "jax-custom_jvp"]),
        Impl("tangentia-custom_vjp", "tangentia: custom_vjp sin", tg_make("custom_vjp"),
             role="tangentia", ratio_to=["tangentia-plain", "jax-custom_vjp", "torch-function"]),
        Impl("jax-plain", "jax (no jit): jnp.sin", jax_make("plain"), requires="jax"),
        Impl("jax-custom_jvp", "jax (no jit): jax.custom_jvp sin", jax_make("custom_jvp"),
             requires="jax", ratio_to=["jax-plain"]),
        Impl("jax-custom_vjp", "jax (no jit): jax.custom_vjp sin", jax_make("custom_vjp"),
             requires="jax", ratio_to=["jax-plain"]),
        Impl("torch-plain", "torch: torch.sin, .backward()", torch_make("plain"),
             requires="torch"),
        Impl("torch-function", "torch: autograd.Function sin, .backward()",
             torch_make("function"), requires="torch", ratio_to=["torch-plain"]),
    ]


def run(cfg, log=print):
    targets = {"tangentia-custom_jvp/tangentia-plain": TARGET,
               "tangentia-custom_vjp/tangentia-plain": TARGET}
    entries = run_impls(impls(), cfg, rtol=1e-12, atol=1e-14, targets=targets, log=log)
    per_call = [f"{e['impl']} {e['median_s'] / N_CALLS * 1e6:.1f} us"
                for e in entries if e.get("status") == "ok"]
    notes = [f"cost per call (median / {N_CALLS} calls): " + ", ".join(per_call)]
    return {"title": TITLE, "entries": entries, "notes": notes, "n_calls": N_CALLS}
