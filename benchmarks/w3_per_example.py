"""Workload 3: per-example gradients, jit(vmap(grad)).

MLP 32-64-1 with tanh, squared loss of one example, batch 256: the gradient
of every example's loss with respect to all parameters (batched over x, y;
the parameters are shared, in_axes=(None, 0, 0)).

Target (from the issue): tangentia within 2x of JAX.
"""
from __future__ import annotations

import numpy as np

from _harness import Impl, peer, run_impls

NAME = "per_example_grads"
TITLE = "3. per-example grads: jit(vmap(grad)), MLP 32-64-1 tanh, batch 256"
TARGETS = {"jax": 2.0}
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

    def tg_jit():
        import tangentia as tg
        import tangentia.numpy as tnp
        f = tg.jit(tg.vmap(tg.grad(make_loss(tnp)), in_axes=(None, 0, 0)))
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

    return [
        Impl("tangentia", "tangentia: tg.jit(tg.vmap(tg.grad))", tg_jit, role="tangentia"),
        Impl("jax", "jax: jax.jit(jax.vmap(jax.grad))", jax_jit, requires="jax"),
        Impl("torch", "torch: torch.func.vmap(torch.func.grad)", torch_func, requires="torch"),
    ]


def run(cfg, log=print):
    entries = run_impls(impls(), cfg, targets=TARGETS, log=log)
    return {"title": TITLE, "entries": entries, "notes": []}
