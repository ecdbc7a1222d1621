"""Workload 2: one SGD step of an MLP, jitted.

784-512-512-10 with tanh, batch 128, softmax cross-entropy (logsumexp written
with the library's own ops, max-subtracted), plain SGD.  The jitted function
takes the parameters as a list of (W, b) tuples and returns the updated list.
Time is dominated by the six large matmuls, so this measures the quality of
the compiled program rather than Python overhead.

Target: tangentia at most 1.0x JAX jit (issue 9; the first workload issue asked 1.5x).
"""
from __future__ import annotations

if __name__ == "__main__" and "--steady" not in __import__("sys").argv:
    # standalone: the same as `python benchmarks/run.py --only mlp_sgd`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "mlp_sgd", "--no-json", *sys.argv[1:]])

import numpy as np  # noqa: E402

from _harness import (Impl, backend_note, jit_targets, peer, run_impls,  # noqa: E402
                      tg_impls, tg_jit)

NAME = "mlp_sgd"
TITLE = "MLP SGD step: 784-512-512-10 tanh, batch 128, softmax xent, jit"
TARGETS = {"jax": 1.0}
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

    def tg_jitted(backend):
        import tangentia as tg
        import tangentia.numpy as tnp
        step = tg_jit(make_step(tnp, tg.grad), backend)
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

    return tg_impls("tangentia", "tangentia[{backend}]: tg.jit(step)", tg_jitted) + [
        Impl("jax", "jax: jax.jit(step)", jax_jit, requires="jax"),
        Impl("torch", "torch: eager autograd.grad + update", torch_eager, requires="torch"),
    ]


def run(cfg, log=print):
    targets = jit_targets(TARGETS)
    entries = run_impls(impls(), cfg, targets=targets, log=log)
    return {"title": TITLE, "entries": entries, "notes": [backend_note()]}


def steady(rounds=21, calls=20, log=print):
    """tangentia's (numba, untiered) and JAX's jitted step, interleaved: ``rounds`` rounds,
    each timing ``calls`` steps of each (order alternating), in CPU time of the process
    (``time.process_time``: every thread's, so a library computing on helper threads pays
    for them; pin the process to one core to compare like with like).  Reports per step
    the minimum, median and maximum of each and the median of the per-round ratios, so
    that one library's unsteady rounds show as spread rather than as a ratio."""
    import time
    import tangentia as tg
    import tangentia.numpy as tnp
    jax, _ = peer("jax")
    import jax.numpy as jnp
    params, X, Y = data()
    tg.config.update("jit_tiered", False)
    ours = tg.jit(make_step(tnp, tg.grad), backend="numba")
    theirs = jax.jit(make_step(jnp, jax.grad))
    pj = [(jnp.asarray(W), jnp.asarray(b)) for W, b in params]
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    fns = {"tangentia": lambda: ours(params, X, Y),
           "jax": lambda: jax.block_until_ready(theirs(pj, Xj, Yj))}
    a = [np.asarray(w) for wb in fns["tangentia"]() for w in wb]
    b = [np.asarray(w) for wb in fns["jax"]() for w in wb]
    err = max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))
    for f in fns.values():      # (warm: the pool's blocks, the caches)
        for _ in range(calls):
            f()
    times = {k: [] for k in fns}
    for r in range(rounds):
        for k in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            f = fns[k]
            t0 = time.process_time()
            for _ in range(calls):
                f()
            times[k].append((time.process_time() - t0) / calls * 1e3)
    ratios = sorted(x / y for x, y in zip(times["tangentia"], times["jax"]))
    out = {}
    for k, ts in times.items():
        ts = sorted(ts)
        out[k] = (ts[0], ts[len(ts) // 2], ts[-1])
        log(f"{k:10s} ms per step (CPU): min {ts[0]:.2f}  median {ts[len(ts) // 2]:.2f}  "
            f"max {ts[-1]:.2f}  ({rounds} rounds x {calls} steps)")
    log(f"tangentia / jax, per round: min {ratios[0]:.3f}  median {ratios[len(ratios) // 2]:.3f}  "
        f"max {ratios[-1]:.3f}; min / min {out['tangentia'][0] / out['jax'][0]:.3f}; "
        f"max |difference| of the updated parameters {err:.1e}")
    return out, ratios


if __name__ == "__main__":      # python benchmarks/w2_mlp_sgd.py --steady [rounds] [calls]
    import sys
    _a = [int(x) for x in sys.argv[1:] if x.isdigit()]
    steady(*_a)
