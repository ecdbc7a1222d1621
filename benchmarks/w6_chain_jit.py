"""Workload 6: jit(grad) of the 251-primitive elementwise chain on 8 numbers.

The function of workload 1 (250 elementwise operations on f64[8] and a sum),
differentiated and compiled: ``jit(grad(f))`` per tangentia jit backend
against ``jax.jit(jax.grad(f))``.  With 8 numbers the compiled code's work
is tiny, so this measures how much per-operation cost compilation removes
(a fusing backend runs the whole program as one loop).

Standalone: ``python benchmarks/w6_chain_jit.py [--quick]``.
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only chain_jit`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "chain_jit", "--no-json", *sys.argv[1:]])

import numpy as np  # noqa: E402

from _harness import (Impl, backend_note, jit_targets, peer, run_impls,  # noqa: E402
                      tg_impls, tg_jit)
from w1_eager_grad import N_OPS, make_f  # noqa: E402

TARGETS = {"jax": 1.0}  # issue 9: at most JAX jit
NAME = "chain_jit"
TITLE = f"jit(grad) of the {N_OPS}-primitive elementwise chain on f64[8]"


def impls():
    x = np.linspace(-1.0, 1.0, 8)

    def tg_jit_grad(backend):
        import tangentia as tg
        import tangentia.numpy as tnp
        g = tg_jit(tg.grad(make_f(tnp)), backend)
        return lambda: g(x)

    def jax_jit_grad():
        jax, _ = peer("jax")
        import jax.numpy as jnp
        g = jax.jit(jax.grad(make_f(jnp)))
        xj = jnp.asarray(x)
        return lambda: g(xj).block_until_ready()

    def tg_eager():
        import tangentia as tg
        import tangentia.numpy as tnp
        g = tg.grad(make_f(tnp))
        return lambda: g(x)

    return tg_impls("tangentia", "tangentia[{backend}]: tg.jit(tg.grad(f))", tg_jit_grad,
                    ratio_to=["jax"]) + [
        Impl("jax", "jax: jax.jit(jax.grad(f))", jax_jit_grad, requires="jax"),
        Impl("tangentia-eager", "context: tangentia eager tg.grad(f)", tg_eager,
             role="context", ratio_to=["jax"]),
    ]


def run(cfg, log=print):
    entries = run_impls(impls(), cfg, rtol=1e-10, atol=1e-12, targets=jit_targets(TARGETS),
                        log=log)
    return {"title": TITLE, "entries": entries, "notes": [backend_note()]}
