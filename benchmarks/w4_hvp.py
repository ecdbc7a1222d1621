"""Workload 4: Hessian-vector product, forward-over-reverse, jitted.

f(x) = sum(tanh(A @ x) ** 2) with A of shape 256x256;
hvp(A, x, v) = jvp(grad(f), (x,), (v,))[1].

Target: tangentia at most 1.0x JAX jit (issue 9).
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only hvp`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "hvp", "--no-json", *sys.argv[1:]])

import numpy as np  # noqa: E402

from _harness import (Impl, backend_note, jit_targets, peer, run_impls,  # noqa: E402
                      tg_impls, tg_jit)

NAME = "hvp"
TITLE = "Hessian-vector product: jvp(grad(f)), f = sum(tanh(A@x)**2), A 256x256, jit"
TARGETS = {"jax": 1.0}
N = 256


def data():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(N, N)) / np.sqrt(N)
    x = rng.normal(size=N)
    v = rng.normal(size=N)
    return A, x, v


def make_f(np_):
    def f(A, x):
        return np_.sum(np_.tanh(A @ x) ** 2)
    return f


def make_hvp(np_, jvp, grad):
    f = make_f(np_)

    def hvp(A, x, v):
        return jvp(lambda x_: grad(f, argnums=1)(A, x_), (x,), (v,))[1]
    return hvp


def impls():
    A, x, v = data()

    def tg_jitted(backend):
        import tangentia as tg
        import tangentia.numpy as tnp
        h = tg_jit(make_hvp(tnp, tg.jvp, tg.grad), backend)
        return lambda: h(A, x, v)

    def tg_eager():
        import tangentia as tg
        import tangentia.numpy as tnp
        h = make_hvp(tnp, tg.jvp, tg.grad)
        return lambda: h(A, x, v)

    def jax_jit():
        jax, _ = peer("jax")
        import jax.numpy as jnp
        h = jax.jit(make_hvp(jnp, jax.jvp, jax.grad))
        Aj, xj, vj = jnp.asarray(A), jnp.asarray(x), jnp.asarray(v)
        return lambda: h(Aj, xj, vj).block_until_ready()

    def torch_func():
        torch, _ = peer("torch")
        from torch.func import grad, jvp
        h = make_hvp(torch, jvp, grad)
        At, xt, vt = torch.tensor(A), torch.tensor(x), torch.tensor(v)
        return lambda: h(At, xt, vt)

    return tg_impls("tangentia", "tangentia[{backend}]: tg.jit(hvp)", tg_jitted) + [
        Impl("jax", "jax: jax.jit(hvp)", jax_jit, requires="jax"),
        Impl("torch", "torch: torch.func.jvp(torch.func.grad)", torch_func, requires="torch"),
        Impl("tangentia-eager", "context: tangentia hvp without jit", tg_eager, role="context"),
    ]


def run(cfg, log=print):
    targets = jit_targets(TARGETS)
    entries = run_impls(impls(), cfg, targets=targets, log=log)
    return {"title": TITLE, "entries": entries, "notes": [backend_note()]}
