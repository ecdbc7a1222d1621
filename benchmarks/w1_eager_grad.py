"""Workload 1: overhead of eager (un-jitted) reverse mode, per primitive.

A scalar function of 250 elementwise operations on a length-8 float64 vector
then a sum (251 primitives), differentiated with no jit.  The arrays are
tiny, so the time is almost all per-operation dispatch: tracing, building the
linear program and transposing it.  Reported per primitive (time / 251) for
tangentia, PyTorch autograd, autograd, JAX without jit and NumPy's own floor:
the same gradient written by hand in NumPy (the forward ops plus the
backward ops, no machinery at all).

Target (from the issue): tangentia <= autograd per call.

Standalone: ``python benchmarks/w1_eager_grad.py [--quick]``.
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only eager_grad`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "eager_grad", "--no-json", *sys.argv[1:]])

import numpy as np

from _harness import Impl, peer, run_impls

NAME = "eager_grad"
TITLE = "eager grad overhead: 251 primitives (250 elementwise ops + sum) on f64[8], no jit"
N_CYCLES = 25
N_OPS = 10 * N_CYCLES + 1  # primitives, the final sum included
TARGETS = {"autograd": 1.0, "torch": 1.0}  # issue 14: no more per primitive than PyTorch


def make_f(np_):
    """The same function for any NumPy-like module (tnp, autograd.numpy, jnp, torch).

    10 operations per cycle, 25 cycles = 250 elementwise operations, then a
    sum: 251 primitives.  Values stay bounded: sin/tanh/cos squash, exp only
    sees values in [-0.1, 0.1].
    """
    def f(x):
        y = x
        for _ in range(N_CYCLES):
            y = np_.sin(y)
            y = y * 0.9
            y = y + x
            y = np_.tanh(y)
            y = y * 0.1
            y = np_.exp(y)
            y = y - x
            y = y * y
            y = np_.cos(y)
            y = y * 0.5
        return np_.sum(y)
    return f


def numpy_grad(x):
    """The gradient of ``make_f(np)`` written by hand: NumPy's floor for eager grad."""
    saved = []
    y = x
    for _ in range(N_CYCLES):
        a = y
        y = np.sin(a)
        y = y * 0.9
        y = y + x
        t = np.tanh(y)
        y = t * 0.1
        e = np.exp(y)
        b = e - x
        y = b * b
        c = y
        y = np.cos(c)
        y = y * 0.5
        saved.append((a, t, e, b, c))
    g = np.ones_like(x)
    gx = np.zeros_like(x)
    for a, t, e, b, c in reversed(saved):
        g = g * 0.5
        g = g * -np.sin(c)
        g = g * (2.0 * b)
        gx = gx - g
        g = g * e
        g = g * 0.1
        g = g * (1.0 - t * t)
        gx = gx + g
        g = g * 0.9
        g = g * np.cos(a)
    return g + gx


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

    def np_grad():
        return lambda: numpy_grad(x)

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
        Impl("tangentia", "tangentia: tg.grad (eager)", tg_grad, role="tangentia",
             ratio_to=["autograd", "torch", "jax", "numpy-grad"]),
        Impl("autograd", "autograd: autograd.grad", autograd_grad, requires="autograd"),
        Impl("jax", "jax: jax.grad (no jit)", jax_grad, requires="jax"),
        Impl("torch", "torch: eager autograd, .backward()", torch_backward, requires="torch"),
        Impl("numpy-grad", "numpy floor: the gradient written by hand in NumPy", np_grad,
             role="reference"),
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
        notes.append(f"per-primitive cost (median / {N_OPS} primitives): " + ", ".join(per_op))
    try:
        import tangentia as tg
        import tangentia.numpy as tnp
        n_eqns = len(tg.make_jaxpr(make_f(tnp))(np.linspace(-1.0, 1.0, 8)).jaxpr.eqns)
        if n_eqns != N_OPS:
            notes.append(f"WARNING: tangentia stages {n_eqns} primitives, not {N_OPS}")
    except Exception as ex:  # noqa: BLE001
        n_eqns = None
        notes.append(f"could not count the primitives: {ex!r}")
    return {"title": TITLE, "entries": entries, "notes": notes, "n_ops": N_OPS,
            "n_primitives_staged": n_eqns}
