"""Workload 2: one SGD step of an MLP, jitted.

784-512-512-10 with tanh, batch 128, softmax cross-entropy (logsumexp written
with the library's own ops, max-subtracted), plain SGD.  The jitted function
takes the parameters as a list of (W, b) tuples and returns the updated list.
Time is dominated by the six large matmuls, so this measures the quality of
the compiled program rather than Python overhead.

Target (from the issue): tangentia within 1.5x of JAX.
"""
from __future__ import annotations

import numpy as np

from _harness import Impl, peer, run_impls

NAME = "mlp_sgd"
TITLE = "2. MLP SGD step: 784-512-512-10 tanh, batch 128, softmax xent, jit"
TARGETS = {"jax": 1.5}
SIZES = (784, 512, 512, 10)
BATCH = 128
LR = 0.1


def data():
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(m, n)) / np.sqrt(m), 0.1 * rng.normal(size=n))
              for m, n in zip(SIZES[:-1], SIZES[1:])]
    X = rng.normal(size=(BATCH, SIZES[0]))
    labels = rng.integers(0, SIZES[-1], size=BATCH)
    Y = np.eye(SIZES[-1])[labels]  # one-hot
    return params, X, Y


def make_loss(np_):
    # torch.max(x, dim) returns (values, indices); amax is the array maximum.
    amax = np_.amax if getattr(np_, "__name__", "") == "torch" else np_.max

    def loss(params, X, Y):
        h = X
        for W, b in params[:-1]:
            h = np_.tanh(h @ W + b)
        W, b = params[-1]
        logits = h @ W + b
        m = amax(logits, axis=1, keepdims=True)
        lse = np_.log(np_.sum(np_.exp(logits - m), axis=1, keepdims=True)) + m
        return -np_.mean(np_.sum(Y * (logits - lse), axis=1))
    return loss


def make_step(np_, grad):
    loss = make_loss(np_)

    def step(params, X, Y):
        grads = grad(loss)(params, X, Y)
        return [(W - LR * gW, b - LR * gb) for (W, b), (gW, gb) in zip(params, grads)]
    return step


def impls():
    params, X, Y = data()

    def tg_jit():
        import tangentia as tg
        import tangentia.numpy as tnp
        step = tg.jit(make_step(tnp, tg.grad))
        return lambda: step(params, X, Y)

    def jax_jit():
        jax, _ = peer("jax")
        import jax.numpy as jnp
        step = jax.jit(make_step(jnp, jax.grad))
        pj = [(jnp.asarray(W), jnp.asarray(b)) for W, b in params]
        Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
        return lambda: jax.block_until_ready(step(pj, Xj, Yj))

    def torch_eager():
        torch, _ = peer("torch")
        loss = make_loss(torch)
        pt = [(torch.tensor(W), torch.tensor(b)) for W, b in params]
        Xt, Yt = torch.tensor(X), torch.tensor(Y)

        def step():
            leaves = [(W.detach().requires_grad_(True), b.detach().requires_grad_(True))
                      for W, b in pt]
            flat = [p for wb in leaves for p in wb]
            grads = torch.autograd.grad(loss(leaves, Xt, Yt), flat)
            with torch.no_grad():
                return [(W - LR * grads[2 * i], b - LR * grads[2 * i + 1])
                        for i, (W, b) in enumerate(pt)]
        return step

    return [
        Impl("tangentia", "tangentia: tg.jit(step)", tg_jit, role="tangentia"),
        Impl("jax", "jax: jax.jit(step)", jax_jit, requires="jax"),
        Impl("torch", "torch: eager autograd.grad + update", torch_eager, requires="torch"),
    ]


def run(cfg, log=print):
    entries = run_impls(impls(), cfg, targets=TARGETS, log=log)
    return {"title": TITLE, "entries": entries, "notes": []}
