"""Workload 1: overhead of eager (un-jitted) reverse mode.

A scalar function of 200 elementwise operations on a length-8 float64 vector
(then a sum), differentiated with no jit.  The arrays are tiny, so the time
is almost all per-operation interpreter overhead: tracing, building the
linear program and transposing it.

Target (from the issue): tangentia <= autograd per call.
"""
from __future__ import annotations

import numpy as np

from _harness import Impl, peer, run_impls

NAME = "eager_grad"
TITLE = "1. eager grad overhead: 200 elementwise ops on f64[8], no jit"
N_OPS = 200
TARGETS = {"autograd": 1.0}


def make_f(np_):
    """The same function for any NumPy-like module (tnp, autograd.numpy, jnp, torch).

    8 operations per cycle, 25 cycles = 200 elementwise operations, then a sum.
    Values stay bounded: sin/tanh squash, exp only sees values in [-0.1, 0.1].
    """
    def f(x):
        y = x
        for _ in range(N_OPS // 8):
            y = np_.sin(y)
            y = y * 0.9
            y = y + x
            y = np_.tanh(y)
            y = y * 0.1
            y = np_.exp(y)
            y = y - x
            y = y * y
        return np_.sum(y)
    return f


def impls():
    x = np.linspace(-1.0, 1.0, 8)

    def tg_grad():
        import tangentia as tg
        import tangentia.numpy as tnp
        g = tg.grad(make_f(tnp))
        return lambda: g(x)

    def tg_forward():
        import tangentia.numpy as tnp
        f = make_f(tnp)
        return lambda: f(x)

    def np_forward():
        f = make_f(np)
        return lambda: f(x)

    def autograd_grad():
        autograd, _ = peer("autograd")
        import autograd.numpy as anp
        g = autograd.grad(make_f(anp))
        return lambda: g(x)

    def jax_grad():
        jax, _ = peer("jax")
        import jax.numpy as jnp
        g = jax.grad(make_f(jnp))
        xj = jnp.asarray(x)
        return lambda: g(xj).block_until_ready()

    def torch_backward():
        torch, _ = peer("torch")
        f = make_f(torch)
        xt0 = torch.tensor(x, dtype=torch.float64)

        def g():
            xt = xt0.detach().requires_grad_(True)
            f(xt).backward()
            return xt.grad
        return g

    return [
        Impl("tangentia", "tangentia: tg.grad (eager)", tg_grad, role="tangentia"),
        Impl("autograd", "autograd: autograd.grad", autograd_grad, requires="autograd"),
        Impl("jax", "jax: jax.grad (no jit)", jax_grad, requires="jax"),
        Impl("torch", "torch: eager autograd, .backward()", torch_backward, requires="torch"),
        Impl("tangentia-fwd", "context: tangentia forward only (no grad)", tg_forward,
             role="context", check=False),
        Impl("numpy-fwd", "context: plain numpy forward only", np_forward,
             role="context", check=False),
    ]


def run(cfg, log=print):
    entries = run_impls(impls(), cfg, targets=TARGETS, log=log)
    notes = []
    per_op = []
    for e in entries:
        if e.get("status") == "ok":
            e["per_op_s"] = e["median_s"] / N_OPS
            per_op.append(f"{e['impl']} {e['per_op_s'] * 1e6:.1f} us")
    if per_op:
        notes.append(f"per-op cost (median / {N_OPS} ops): " + ", ".join(per_op))
    return {"title": TITLE, "entries": entries, "notes": notes, "n_ops": N_OPS}
