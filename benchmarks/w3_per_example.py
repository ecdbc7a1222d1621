"""Workload 3: per-example gradients, jit(vmap(grad)).

MLP 32-64-1 with tanh, squared loss of one example, batch 256: the gradient
of every example's loss with respect to all parameters (batched over x, y;
the parameters are shared, in_axes=(None, 0, 0)).

Target: tangentia at most 1.0x JAX jit (issue 9; the first workload issue asked 2x).
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: `python benchmarks/run.py --only per_example_grads`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "per_example_grads", "--no-json", *sys.argv[1:]])

import numpy as np  # noqa: E402

from _harness import (Impl, backend_note, jit_targets, peer, run_impls,  # noqa: E402
                      tg_impls, tg_jit)

NAME = "per_example_grads"
TITLE = "per-example grads: jit(vmap(grad)), MLP 32-64-1 tanh, batch 256"
TARGETS = {"jax": 1.0}
BATCH = 256


def data():
    rng = np.random.default_rng(1)
    params = [(rng.normal(size=(32, 64)) / np.sqrt(32), 0.1 * rng.normal(size=64)),
              (rng.normal(size=(64, 1)) / 8.0, 0.1 * rng.normal(size=1))]
    X = rng.normal(size=(BATCH, 32))
    y = rng.normal(size=BATCH)
    return params, X, y


def make_loss(np_):
    def loss(params, x, y):
        (W1, b1), (W2, b2) = params
        h = np_.tanh(x @ W1 + b1)
        out = (h @ W2 + b2)[0]
        return (out - y) ** 2
    return loss


def impls():
    params, X, y = data()

    def tg_jitted(backend):
        import tangentia as tg
        import tangentia.numpy as tnp
        f = tg_jit(tg.vmap(tg.grad(make_loss(tnp)), in_axes=(None, 0, 0)), backend)
        return lambda: f(params, X, y)

    def jax_jit():
        jax, _ = peer("jax")
        import jax.numpy as jnp
        f = jax.jit(jax.vmap(jax.grad(make_loss(jnp)), in_axes=(None, 0, 0)))
        pj = [(jnp.asarray(W), jnp.asarray(b)) for W, b in params]
        Xj, yj = jnp.asarray(X), jnp.asarray(y)
        return lambda: jax.block_until_ready(f(pj, Xj, yj))

    def torch_func():
        torch, _ = peer("torch")
        from torch.func import grad, vmap
        f = vmap(grad(make_loss(torch)), in_dims=(None, 0, 0))
        pt = [(torch.tensor(W), torch.tensor(b)) for W, b in params]
        Xt, yt = torch.tensor(X), torch.tensor(y)
        return lambda: f(pt, Xt, yt)

    return tg_impls("tangentia", "tangentia[{backend}]: tg.jit(tg.vmap(tg.grad))",
                    tg_jitted) + [
        Impl("jax", "jax: jax.jit(jax.vmap(jax.grad))", jax_jit, requires="jax"),
        Impl("torch", "torch: torch.func.vmap(torch.func.grad)", torch_func, requires="torch"),
    ]


def run(cfg, log=print):
    targets = jit_targets(TARGETS)
    entries = run_impls(impls(), cfg, targets=targets, log=log)
    return {"title": TITLE, "entries": entries, "notes": [backend_note()]}
