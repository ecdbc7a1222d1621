"""Benchmark: the cold first call, in fresh processes with empty compile caches.

Every case runs in its own fresh interpreter (pinned to one core, every library on
one thread), once with tangentia and once with JAX (x64), back to back, the same
code through a name map (``jax``/``jnp``/``lax``/``odeint``/...).  Reported per
case and library: the import time, the first call (tracing, compiling and running,
until the result is ready: ``block_until_ready``), the second call, and the ratio
of first calls tangentia / JAX (< 1: tangentia is faster).  tangentia's compile
cache is a new empty directory per process (``TANGENTIA_CACHE_DIR``); JAX keeps no
persistent cache by default.  Results agree within the case's tolerance (checked).

By default tangentia runs tiered (``jit`` runs the NumPy backend's code while numba
compiles in the background): ``--untiered`` measures the synchronous numba compile
(``TANGENTIA_JIT_TIERED=0``) instead, which is also what ``native_s`` reports
(the time until the background compile has finished, from the first call's start).

    python benchmarks/bench_cold.py                  # every case, 3 rounds
    python benchmarks/bench_cold.py --rounds 5 --only jit_elementwise,ode_grad
    python benchmarks/bench_cold.py --json benchmarks/cold_results.json
    python benchmarks/bench_cold.py --sizes 100,300,1000,3000   # compile time vs size

``--reuse``: a changed program (another time grid, an edited line of the loss, a constant,
an activation, another batch size: ``REUSE``) in a new process after the original filled the
compile cache, against the same changed program with an empty cache (untiered: what
numba's compile units save) and JAX's first call of it (``--no-jax``: not run); the
reusing process's compile units loaded and compiled are printed, and where the reusing and
the cold first calls' CPU went (the machine-code cache's load, numba's import, generating the
source, numba's compile, the rest); ``--tree DIR`` runs another tree's tangentia (an A/B):

    python benchmarks/bench_cold.py --reuse --only ode_grad,ode_vmap_grad --rounds 3
    python benchmarks/bench_cold.py --reuse --only mlp=10,physics=10    # two --sizes programs
    python benchmarks/bench_cold.py --reuse --only physics=10 --variants constant
    python benchmarks/bench_cold.py --reuse --only ode_grad --no-jax --tree /tmp/base

``--sizes``: compile time against program size, for both libraries, per family
(``--families``, ``SIZE_FAMILIES``): ``chain``, ``jit(grad(f))`` of a chain of n
elementwise operations on ``f64[8]``; ``scan``, ``jit(grad)`` of a scan whose body has
n dense 8x8 layers; programs users write, not our benchmarks' (session 17): ``mlp``
(a residual MLP as a Python loop of n 16x16 layers; ``mlpwide``: 64x64), ``hessian``
(n stages on f64[6]),
``vmapwhile`` (vmap of n while_loop + cond stages), ``fori`` (a fori_loop of n dynamic
slices and updates), ``physics`` (n steps of a spring chain: gather, ``.at[].set``),
``special`` (n scalar elementwise operations).  Equations are counted with
``make_jaxpr``, those of nested programs included; compile time is the first call minus
the second call, untiered (the time numba takes), wall and CPU seconds, and JAX's the
same way.  ``--tree DIR`` imports tangentia from another tree (an A/B against a
baseline clone), ``--no-tangentia`` measures JAX alone:

    python benchmarks/bench_cold.py --sizes 10,30,100,300 --rounds 1 --plot p.png
    python benchmarks/bench_cold.py --sizes "chain=100,300;scan=10,30" --plot p.png
    python benchmarks/bench_cold.py --sizes "mlp=10,30" --no-jax --tree /tmp/base
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PRELUDE = {
    "tangentia": """
        import tangentia as jax
        import tangentia.numpy as jnp
        from tangentia import lax
        from tangentia.experimental.ode import odeint
        from tangentia.scipy.optimize import minimize
        from tangentia.compiler.backend import wait_for_compiles
    """,
    "jax": """
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax import lax
        from jax.experimental.ode import odeint
        from jax.scipy.optimize import minimize
        def wait_for_compiles(timeout=None):
            pass
    """,
}

# --reuse: where a tangentia child's first call goes, CPU seconds (``time.process_time``)
# of the outermost call of each step, in the child's JSON as "phases": "load" the
# machine-code cache's lookup and load (``numba_backend._fast_load``: no numba), "numba"
# the compiler's and numba's import and registries (``_load_compiler``), "generate" the
# source (``native._generate``: the program and its compile units), "compile" numba's
# typing, lowering and code generation (``native._compile_lean``: the program's, units
# compiled or loaded from numba's cache within it), "other" the rest of the first call
# (tracing, the run).  Installed in the children ``run_reuse`` starts (``phases=True``).
_PHASES_CODE = """
import functools as _ft, time as _tm, sys as _sy
_nb = _sy.modules["tangentia.compiler.numba_backend"]
PHASES = {}
_depth = [0]
def _timed(f, key):
    @_ft.wraps(f)
    def w(*a, **k):
        if _depth[0]:
            return f(*a, **k)
        _depth[0] += 1
        c = _tm.process_time()
        try:
            return f(*a, **k)
        finally:
            _depth[0] -= 1
            PHASES[key] = PHASES.get(key, 0.0) + _tm.process_time() - c
    return w
_nb._fast_load = _timed(_nb._fast_load, "load")
def _hooked(_load=_nb._load_compiler):
    n = _load()
    n._generate = _timed(n._generate, "generate")
    n._compile_lean = _timed(n._compile_lean, "compile")
    return n
_nb._load_compiler = _timed(_hooked, "numba")
"""

# jit(grad) of a T-step scan, state f64[8]
_SCAN = """
    rng = np.random.default_rng(0)
    W = rng.standard_normal((8, 8)) / 3.0
    xs = rng.standard_normal(({T}, 8))
    def loss(W, c0):
        def body(c, x):
            c = jnp.tanh(W @ c + x)
            return c, c[0]
        cT, ys = lax.scan(body, c0, xs)
        return jnp.sum(cT ** 2) + 0.1 * jnp.sum(ys)
    g = jax.jit(jax.grad(loss))
    c0 = np.ones(8)
"""

# name: (setup, the first call's expression, a second call's expression or None, tolerance)
CASES = {
    "jit_elementwise": ("""
        def f(x):
            for i in range(10):
                x = jnp.sin(x) * 1.1 + 0.1 if i % 2 else jnp.exp(-x * x)
            return x
        x = np.linspace(0.0, 1.0, 8)
        g = jax.jit(f)
    """, "g(x)", "g(x + 1.0)", 1e-12),
    "jit_grad_elementwise": ("""
        def f(x):
            for i in range(10):
                x = jnp.sin(x) * 1.1 + 0.1 if i % 2 else jnp.exp(-x * x)
            return jnp.sum(x)
        x = np.linspace(0.0, 1.0, 8)
        g = jax.jit(jax.grad(f))
    """, "g(x)", "g(x + 1.0)", 1e-12),
    "jit_grad_scan": (_SCAN.format(T=100), "g(W, c0)", "g(W * 0.5, c0)", 1e-10),
    "jit_grad_mlp": ("""
        rng = np.random.default_rng(0)
        params = [rng.standard_normal((8, 32)) * 0.3, np.zeros(32),
                  rng.standard_normal((32, 1)) * 0.3, np.zeros(1)]
        X = rng.standard_normal((64, 8)); Y = rng.standard_normal((64, 1))
        def loss(p, X, Y):
            h = jnp.tanh(X @ p[0] + p[1])
            return jnp.mean((h @ p[2] + p[3] - Y) ** 2)
        g = jax.jit(jax.grad(loss))
    """, "g(params, X, Y)", "g(params, X * 0.5, Y)", 1e-10),
    "jit_vmap_jacfwd_newton": ("""
        def newton(a):
            def cond(s):
                x, i = s
                return (jnp.abs(x * x - a) > 1e-12) & (i < 50)
            def body(s):
                x, i = s
                return 0.5 * (x + a / x), i + 1
            return lax.while_loop(cond, body, (a, 0))[0]
        g = jax.jit(jax.vmap(jax.jacfwd(newton)))
        a = np.linspace(1.0, 4.0, 8)
    """, "g(a)", "g(a + 1.0)", 1e-10),
    "ode_grad": ("""
        def pend(y, t, b, c):
            return jnp.stack([y[1], -b * y[1] - c * jnp.sin(y[0])])
        y0 = np.array([np.pi - 0.1, 0.0]); ts = np.linspace(0.0, 10.0, 101)
        def loss(b, c):
            return jnp.sum(odeint(pend, y0, ts, b, c)[-1] ** 2)
        g = jax.jit(jax.grad(loss, argnums=(0, 1)))
    """, "g(0.25, 5.0)", "g(0.3, 5.0)", 1e-6),
    "minimize_bfgs": ("""
        def rosen(x):
            return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        x0 = np.zeros(6)
    """, "minimize(rosen, x0, method='BFGS').x", None, 1e-4),
    "mlp_first_step": ("""
        rng = np.random.default_rng(0)
        params = [rng.standard_normal((1, 64)) * 0.5, np.zeros(64),
                  rng.standard_normal((64, 64)) * 0.2, np.zeros(64),
                  rng.standard_normal((64, 1)) * 0.2, np.zeros(1)]
        X = np.linspace(-2, 2, 128)[:, None]; Y = np.sin(3 * X)
        def loss(p):
            h = jnp.tanh(X @ p[0] + p[1])
            h = jnp.tanh(h @ p[2] + p[3])
            return jnp.mean((h @ p[4] + p[5] - Y) ** 2)
        @jax.jit
        def step(p):
            l, gr = jax.value_and_grad(loss)(p)
            return [a - 0.05 * b for a, b in zip(p, gr)], l
    """, "step(params)", "step(step(params)[0])", 1e-10),
    "custom_root_eager": ("""
        def f(x, a):
            return x ** 3 - a
        def solve(g, x0):
            x = x0
            for _ in range(30):
                x = x - g(x) / jax.grad(g)(x)
            return x
        def tangent_solve(g, y):
            return y / g(1.0)
        def cube_root(a):
            return lax.custom_root(lambda x: f(x, a), 1.0, solve, tangent_solve)
    """, "jax.grad(cube_root)(2.0)", "jax.grad(cube_root)(3.0)", 1e-10),
    "ode_vmap_grad": ("""
        def pend(y, t, b, c):
            return jnp.stack([y[1], -b * y[1] - c * jnp.sin(y[0])])
        y0 = np.array([np.pi - 0.1, 0.0]); ts = np.linspace(0.0, 10.0, 51)
        def loss(p):
            return jnp.sum(odeint(pend, y0, ts, p[0], p[1])[-1] ** 2)
        g = jax.jit(jax.vmap(jax.grad(loss)))
        P = np.stack([np.linspace(0.2, 0.3, 8), np.linspace(4.0, 5.0, 8)], axis=1)
    """, "g(P)", "g(P * 1.01)", 1e-5),
    "ode_jacrev_grad": ("""
        def pend(y, t, b, c):
            return jnp.stack([y[1], -b * y[1] - c * jnp.sin(y[0])])
        y0 = np.array([np.pi - 0.1, 0.0]); ts = np.linspace(0.0, 10.0, 51)
        def loss(p):
            return jnp.sum(odeint(pend, y0, ts, p[0], p[1])[-1] ** 2)
        g = jax.jacrev(jax.grad(loss))
        p = np.array([0.25, 5.0])
    """, "g(p)", "g(p * 1.01)", 1e-4),
    "ode_hessian": ("""
        def pend(y, t, b, c):
            return jnp.stack([y[1], -b * y[1] - c * jnp.sin(y[0])])
        y0 = np.array([np.pi - 0.1, 0.0]); ts = np.linspace(0.0, 10.0, 51)
        def loss(p):
            return jnp.sum(odeint(pend, y0, ts, p[0], p[1])[-1] ** 2)
        g = jax.hessian(loss)
        p = np.array([0.25, 5.0])
    """, "g(p)", "g(p * 1.01)", 1e-4),
    # the steady-state workloads of run.py, cold
    "chain_jit_251": ("""
        def f(x):
            for i in range(250):
                x = jnp.sin(x) if i % 2 else x * 1.0001 + 0.001
            return jnp.sum(x)
        g = jax.jit(jax.grad(f))
        x = np.linspace(0.0, 1.0, 8)
    """, "g(x)", "g(x + 1.0)", 1e-10),
    "mlp_sgd_784": ("""
        rng = np.random.default_rng(0)
        sizes = [784, 512, 512, 10]
        params = [(rng.standard_normal((m, n)) / np.sqrt(m), np.zeros(n))
                  for m, n in zip(sizes[:-1], sizes[1:])]
        X = rng.standard_normal((128, 784)); Y = np.eye(10)[rng.integers(0, 10, 128)]
        def loss(p, X, Y):
            h = X
            for W, b in p[:-1]:
                h = jnp.tanh(h @ W + b)
            logits = h @ p[-1][0] + p[-1][1]
            logits = logits - jnp.max(logits, axis=1, keepdims=True)
            return -jnp.mean(jnp.sum(Y * (logits - jnp.log(jnp.sum(jnp.exp(logits), axis=1,
                                                                        keepdims=True))), axis=1))
        @jax.jit
        def step(p, X, Y):
            g = jax.grad(loss)(p, X, Y)
            return [(W - 0.01 * gW, b - 0.01 * gb) for (W, b), (gW, gb) in zip(p, g)]
    """, "step(params, X, Y)", "step(params, X * 0.5, Y)", 1e-8),
    "per_example_grads": ("""
        rng = np.random.default_rng(0)
        p = [rng.standard_normal((32, 64)) * 0.2, np.zeros(64), rng.standard_normal(64) * 0.2]
        X = rng.standard_normal((256, 32)); Y = rng.standard_normal(256)
        def loss(p, x, y):
            return (jnp.tanh(x @ p[0] + p[1]) @ p[2] - y) ** 2
        g = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    """, "g(p, X, Y)", "g(p, X * 0.5, Y)", 1e-10),
    "hvp_256": ("""
        rng = np.random.default_rng(0)
        A = rng.standard_normal((256, 256)) / 16.0
        def f(x):
            return jnp.sum(jnp.tanh(A @ x) ** 2)
        hvp = jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
        x = rng.standard_normal(256); v = rng.standard_normal(256)
    """, "hvp(x, v)", "hvp(x * 0.5, v)", 1e-10),
    "scan_1000": (_SCAN.format(T=1000), "g(W, c0)", "g(W * 0.5, c0)", 1e-10),
    "sigmoid_1e6": ("""
        x = np.linspace(-5.0, 5.0, 10 ** 6)
        g = jax.jit(jax.grad(lambda x: jnp.sum(1.0 / (1.0 + jnp.exp(-x)))))
    """, "g(x)", "g(x * 0.5)", 1e-12),
}

CHILD = """
import os, time, json
os.sched_setaffinity(0, {{{cpu}}})
t0 = time.perf_counter()
import numpy as np
{prelude}
{phases}
t1 = time.perf_counter()
{setup}
def ready(r):
    return jax.block_until_ready(r)
t2 = time.perf_counter(); c2 = time.process_time()
r1 = ready({first})
t3 = time.perf_counter(); c3 = time.process_time()
second = None
if {has_second}:
    t4 = time.perf_counter(); ready({second_expr}); second = time.perf_counter() - t4
try:                      # until the background compiles are done (None: not within the bound)
    wait_for_compiles({native_wait})
    native = time.perf_counter() - t2
except TimeoutError:
    native = None
import numpy as _np
leaves = jax.tree_util.tree_leaves(r1)
import sys as _sys
_nat = _sys.modules.get("tangentia.compiler.numba_backend.native")   # (compile units' outcomes;
_nat = getattr(_nat, "UNIT_STATS", None)  # None while the background compile still imports it)
print(json.dumps({{"import_s": t1 - t0, "first_s": t3 - t2, "first_cpu_s": c3 - c2,
                   "second_s": second,
                   "native_s": native, "units": dict(_nat) if _nat is not None else None,
                   "phases": globals().get("PHASES"),
                   "result": [_np.asarray(l, dtype=float).ravel().tolist() for l in leaves]}}))
"""


def child_code(lib, case, cpu, native_wait=300, phases=False):
    if "=" in case:         # a --sizes family's program of size n ("mlp=10"): jit(fn)
        fam, n = case.split("=")
        setup, first, second = textwrap.dedent(SIZE_FAMILIES[fam].format(n=int(n))) + "g = jax.jit(fn)\n", \
            "g(*args)", "g(*args2)"
    else:
        setup, first, second, _ = CASES[case]
    return CHILD.format(cpu=cpu, native_wait=native_wait, prelude=textwrap.dedent(PRELUDE[lib]),
                        phases=_PHASES_CODE if phases and lib == "tangentia" else "",
                        setup=textwrap.dedent(setup), first=first,
                        has_second=second is not None, second_expr=second or "None")


def child_env(tree=None, tiered=True):
    """The environment of a fresh benchmark process: ``tree`` (default: this one) first on
    PYTHONPATH, BLAS and XLA on one thread, no progress line, tiered or not."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([tree or ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    env["TANGENTIA_COMPILE_PROGRESS"] = "0"
    env["TANGENTIA_JIT_TIERED"] = "1" if tiered else "0"
    return env


def run_case(lib, case, cpu, tiered=True, timeout=900, native_wait=300, cache=None, variant=None,
             phases=False, tree=None):
    """One fresh process running ``case`` (``variant``: a key of ``REUSE[case]``, the case
    changed so) with an empty compile cache, or the directory ``cache`` (kept); ``phases``:
    the first call's CPU per step in the result (``_PHASES_CODE``); ``tree``: the tangentia
    tree to import (default: this one)."""
    env = child_env(tree, tiered)
    code = child_code(lib, case, cpu, native_wait, phases)
    for old, new in (REUSE[case][variant] if variant else ()):
        assert old in code, (case, variant, old)
        code = code.replace(old, new)
    with tempfile.TemporaryDirectory() as empty:
        env["TANGENTIA_CACHE_DIR"] = cache or empty
        proc = subprocess.run([sys.executable, "-c", code], cwd=tree or ROOT,   # (-c: the cwd first)
                              capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        err = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": err}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --reuse: a changed program after the original has filled the compile cache (numba's
# compile units: loop bodies and called functions cached by their own source), against
# the same changed program in an empty cache.  Variants: (text, replacement) in the case.
# (a) a changed time grid; (b) one edited line: a loss's last line, a term of an ODE's
# right-hand side, a constant in every step, an activation; (c) another batch size (from
# 8 rows, below ``native.GENERIC_MIN``, and from 128).
_LOSS = "return jnp.sum(odeint(pend, y0, ts, {})[-1] ** 2)"
_PEND = "-b * y[1] - c * jnp.sin(y[0])"
REUSE = {
    "ode_grad": {
        "grid 77": [("np.linspace(0.0, 10.0, 101)", "np.linspace(0.0, 10.0, 77)")],
        "edited loss": [(_LOSS.format("b, c"), _LOSS.format("b, c") + " + 0.5 * b")],
        "edited term": [(_PEND, _PEND + " + 0.1 * y[0]")],
    },
    "ode_vmap_grad": {
        "grid 41": [("np.linspace(0.0, 10.0, 51)", "np.linspace(0.0, 10.0, 41)")],
        "edited loss": [(_LOSS.format("p[0], p[1]"), _LOSS.format("p[0], p[1]") + " + 0.5 * p[0]")],
    },
    # the --sizes families' programs users write: one more layer or step, an edited last line
    "mlp=10": {
        "11 layers": [("for i in range(10)", "for i in range(11)")],
        "edited loss": [("return jnp.mean(h ** 2)", "return jnp.mean(h ** 2) + 0.1 * jnp.mean(h)")],
        "constant": [("return jnp.mean(h ** 2)", "return 0.5 * jnp.mean(h ** 2)")],
        "activation": [("jnp.tanh(h @ W + b)", "jnp.sin(h @ W + b)")],
        "batch 16": [("X = rng.standard_normal((8, 16))", "X = rng.standard_normal((16, 16))")],
    },
    "mlpb=10": {
        "batch 96": [("X = rng.standard_normal((128, 16))", "X = rng.standard_normal((96, 16))")],
    },
    "physics=10": {
        "12 steps": [("for t in range(10)", "for t in range(12)")],
        "edited loss": [("return jnp.sum(x ** 2) + jnp.sum(v ** 2)",
                         "return jnp.sum(x ** 2) + jnp.sum(v ** 2) + 0.5 * jnp.sum(x)")],
        "constant": [("- 0.1 * v", "- 0.2 * v")],     # (the damping, in every step)
    },
    "mlp_first_step": {
        "batch 96": [("X = np.linspace(-2, 2, 128)[:, None]", "X = np.linspace(-2, 2, 96)[:, None]")],
        "activation": [("h = jnp.tanh(h @ p[2] + p[3])", "h = jnp.sin(h @ p[2] + p[3])")],
    },
}


def run_reuse(cases, cpu, rounds, jax=True, variants=None, tree=None):
    """Per case and variant, untiered (the time numba takes): the original program cold,
    then the changed one in a new process with the same cache directory ("reused"),
    against the changed one in an empty cache ("cold") and, with ``jax``, JAX's first call
    of the changed one (JAX keeps no cache: its cold one); first calls, wall and CPU, and
    the compile units the reusing process loaded and compiled, and where the reusing and
    the cold first calls' CPU went (``_PHASES_CODE``; medians per step, "other" the rest).
    ``variants``: only those (names of ``REUSE[case]``); ``tree``: the tangentia tree to
    import (default: this one)."""
    out = {}
    for case in [c for c in cases if c in REUSE]:
        for variant in REUSE[case]:
            if variants and variant not in variants:
                continue
            rows = {"original": [], "reused": [], "cold": []} | ({"jax": []} if jax else {})
            moved = False
            for _ in range(rounds):       # interleaved
                with tempfile.TemporaryDirectory() as cache:
                    before = _backend_digest(tree)
                    rows["original"].append(run_case("tangentia", case, cpu, False, cache=cache,
                                                     tree=tree))
                    rows["reused"].append(run_case("tangentia", case, cpu, False, cache=cache,
                                                   variant=variant, phases=True, tree=tree))
                    moved |= _backend_digest(tree) != before
                rows["cold"].append(run_case("tangentia", case, cpu, False, variant=variant,
                                             phases=True, tree=tree))
                if jax:
                    rows["jax"].append(run_case("jax", case, cpu, variant=variant))
            res = {k: {m: _median([r for r in v if "error" not in r], m)
                       for m in ("first_s", "first_cpu_s")} for k, v in rows.items()}
            errs = [r["error"] for v in rows.values() for r in v if "error" in r]
            same = [r.get("result") for r in rows["reused"] + rows["cold"]]
            res["agree"] = all(x == same[0] for x in same)    # bit for bit
            units = [r.get("units") for r in rows["reused"] if r.get("units")]
            res["units_reused"] = units[0] if units else None
            res["phases"] = {k: _phases([r for r in rows[k] if "error" not in r])
                             for k in ("reused", "cold")}
            out[f"{case} / {variant}"] = res
            u = res["units_reused"]
            print(f"{case:<14} {variant:<12} original cold {_fmt(res['original']['first_s']):>9} "
                  f"(cpu {_fmt(res['original']['first_cpu_s'])}) | changed, reusing "
                  f"{_fmt(res['reused']['first_s']):>9} (cpu {_fmt(res['reused']['first_cpu_s'])}"
                  + (f"; units loaded {u['loaded']}, compiled {u['compiled']}" if u else "")
                  + f") | changed, cold {_fmt(res['cold']['first_s']):>9} "
                  f"(cpu {_fmt(res['cold']['first_cpu_s'])})"
                  + (f" | JAX {_fmt(res['jax']['first_s']):>9} (cpu {_fmt(res['jax']['first_cpu_s'])})"
                     if jax else "")
                  + ("" if res["agree"] else "  RESULTS DIFFER") + (f"  errors: {errs}" if errs else "")
                  + ("  SOURCES CHANGED between the original and the reusing run: nothing could be"
                     " reused (another tree: --tree)" if moved else ""), flush=True)
            res["sources_changed"] = moved
            for k, ph in res["phases"].items():
                print(f"{'':<27} {k} CPU: " + ", ".join(f"{n} {_fmt(v)}" for n, v in ph.items()), flush=True)
    return out


def _backend_digest(tree):
    """A digest of the numba backend's sources in ``tree`` (default: this one), which name
    every compiled module (``native._version_tag``): in a tree being edited, an edit between
    the original run and the reusing one leaves nothing to reuse, which is not a result."""
    import hashlib
    d = os.path.join(tree or ROOT, "tangentia", "compiler", "numba_backend")
    h = hashlib.sha256()
    for n in sorted(os.listdir(d)):
        if n.endswith(".py"):
            with open(os.path.join(d, n), "rb") as f:
                h.update(n.encode() + f.read())
    return h.hexdigest()


def _residual_mlp(width, scale, batch=8):
    """The ``mlp`` families' template: a residual MLP of ``width``-wide layers written as a
    Python loop over ``{n}`` of them (``scale`` keeps tanh's inputs moderate), on a batch of
    ``batch`` rows."""
    return f"""
        rng = np.random.default_rng(0)
        params = [(rng.standard_normal(({width}, {width})) / {scale},
                   rng.standard_normal({width}) * 0.1, np.float64(0.5 + 0.01 * i))
                  for i in range({{n}})]
        X = rng.standard_normal(({batch}, {width}))
        def loss(p):
            h = X
            for W, b, a in p:
                h = h + a * jnp.tanh(h @ W + b)
            return jnp.mean(h ** 2)
        fn = jax.grad(loss)
        args = (params,)
        args2 = ([(W * 0.5, b, a) for W, b, a in params],)
    """


# --sizes families: the program of size n (its setup defines ``fn``, the function jit compiles,
# and its arguments ``args`` and ``args2``).  "chain": jit(grad) of n elementwise operations on
# f64[8].  "scan": jit(grad) of a 20-step scan whose body is n dense layers (8x8 matrices,
# closed over, one of them differentiated) with tanh, the carry re-injected in every layer:
# contractions with arrays, a loop, its reverse loop and an accumulated matrix gradient.
SIZE_FAMILIES = {
    "chain": """
        def f(x):
            for i in range({n}):
                x = jnp.sin(x) * 1.01 + 0.1 if i % 3 == 0 else (x * x * 0.5 if i % 3 == 1 else jnp.cos(x) - x)
            return jnp.sum(x)
        fn = jax.grad(f)
        args = (np.linspace(0.0, 1.0, 8),)
        args2 = (np.linspace(0.5, 1.5, 8),)
    """,
    "scan": """
        rng = np.random.default_rng(0)
        Ws = [rng.standard_normal((8, 8)) / 3.0 for _ in range({n})]
        xs = rng.standard_normal((20, 8))
        def loss(W0, c0):
            def body(c, x):
                h = jnp.tanh(W0 @ c + x)
                for W in Ws:
                    h = jnp.tanh(W @ h + 0.1 * c)
                return h, h[0]
            cT, ys = lax.scan(body, c0, xs)
            return jnp.sum(cT ** 2) + 0.1 * jnp.sum(ys)
        fn = jax.grad(loss)
        W0 = rng.standard_normal((8, 8)) / 3.0
        args = (W0, np.ones(8))
        args2 = (W0 * 0.5, np.ones(8))
    """,
    # jit(grad) of a residual MLP written as a Python loop over n layers (no scan): a 16x16
    # matrix, a bias and a scalar gain per layer, all differentiated; batch of 8
    "mlp": _residual_mlp(16, 4.0),
    # the same MLP on a batch of 128 rows (the batch a size-generic unit reads from its
    # arguments: ``native._generic_source``)
    "mlpb": _residual_mlp(16, 4.0, 128),
    # the same MLP of 64x64 layers: its matrices (4,096 elements) are not packed in one
    # buffer (``irblock.ARRAY_MAX``), each is an argument of its own
    "mlpwide": _residual_mlp(64, 8.0),
    # jit(hessian) of a function of f64[6] with n stages (many small batched values)
    "hessian": """
        def f(x):
            y = x
            for i in range({n}):
                y = jnp.sin(y) * x[i % 6] + 0.1 * jnp.roll(y, 1) if i % 2 else jnp.tanh(y * 0.9 + x[(i + 3) % 6])
            return jnp.sum(y ** 2)
        fn = jax.hessian(f)
        args = (np.linspace(0.1, 0.6, 6),)
        args2 = (np.linspace(0.2, 0.7, 6),)
    """,
    # vmap over f64[8] of n stages, each a while_loop (Newton's square root) and a cond
    "vmapwhile": """
        def f(a):
            x = a
            for i in range({n}):
                c = a + 0.1 * i
                def cond(s, c=c):
                    return (jnp.abs(s[0] * s[0] - c) > 1e-12) & (s[1] < 40)
                def body(s, c=c):
                    return 0.5 * (s[0] + c / s[0]), s[1] + 1
                x = lax.while_loop(cond, body, (x + 1.0, 0))[0]
                x = lax.cond(x > 1.5, lambda v: v * 0.9, lambda v: v + 0.2, x)
            return x
        fn = jax.vmap(f)
        args = (np.linspace(1.0, 4.0, 8),)
        args2 = (np.linspace(1.5, 4.5, 8),)
    """,
    # jit(grad) of a 10-step fori_loop whose body has n dynamic slices and updates of f64[16]
    "fori": """
        def f(x):
            def body(i, s):
                for k in range({n}):
                    v = lax.dynamic_slice_in_dim(s, (i + k) % 12, 4)
                    s = lax.dynamic_update_slice_in_dim(s, jnp.sin(v) * 0.9 + 0.1, (i + 2 * k) % 12, 0)
                return s
            return jnp.sum(lax.fori_loop(0, 10, body, x) ** 2)
        fn = jax.grad(f)
        args = (np.linspace(0.0, 1.0, 16),)
        args2 = (np.linspace(0.5, 1.5, 16),)
    """,
    # jit(grad) of n steps of a small spring-chain simulation (16 particles in 2-D): a gather
    # of neighbours, float math, .at[].set updates
    "physics": """
        nb = (np.arange(16) + 1) % 16
        def sim(x0, v0):
            x, v = x0, v0
            for t in range({n}):
                f = (x[nb] - x) * 2.0 - (x - x[nb - 1]) * 1.5 - 0.1 * v
                v = (v + 0.01 * f).at[0].set(0.0)
                x = x + 0.01 * v
                x = x.at[:, 1].set(jnp.maximum(x[:, 1], 0.0))
            return jnp.sum(x ** 2) + jnp.sum(v ** 2)
        fn = jax.grad(sim, argnums=(0, 1))
        rng = np.random.default_rng(0)
        args = (rng.standard_normal((16, 2)), np.zeros((16, 2)))
        args2 = (args[0] * 0.5, np.zeros((16, 2)))
    """,
    # a hand-written special function of a scalar: n elementwise operations on f64[]
    "special": """
        def f(x):
            y = x
            for k in range({n}):
                m = k % 5
                if m == 0:
                    y = y * x + 1.0 / (k + 1)
                elif m == 1:
                    y = jnp.exp(-y * y) + 0.5 * x
                elif m == 2:
                    y = jnp.where(y > 0.3, y - 0.1, y * 1.1)
                elif m == 3:
                    y = jnp.log1p(jnp.abs(y)) * 0.7
                else:
                    y = jnp.sqrt(y * y + 0.25) - 0.4
            return y
        fn = f
        args = (np.float64(0.7),)
        args2 = (np.float64(0.3),)
    """,
}
SIZE_LABELS = {"chain": "jit(grad) of an elementwise chain on f64[8]",
               "scan": "jit(grad) of a 20-step scan of n dense 8x8 layers",
               "mlp": "jit(grad) of an n-layer residual MLP (Python loop)",
               "mlpwide": "jit(grad) of an n-layer residual MLP of 64x64 layers",
               "hessian": "jit(hessian) of n stages on f64[6]",
               "vmapwhile": "jit(vmap) of n while_loop + cond stages",
               "fori": "jit(grad) of a fori_loop of n dynamic slices/updates",
               "physics": "jit(grad) of n spring-chain steps (gather, .at[].set)",
               "special": "jit of n scalar elementwise operations"}

SIZE_CHILD = """
import os, time, json
os.sched_setaffinity(0, {{{cpu}}})
import numpy as np
{prelude}
{setup}
def count(j):      # equations, those of nested programs (loop bodies, calls) included
    n = 0
    for e in j.eqns:
        n += 1
        for v in e.params.values():
            for q in (v if isinstance(v, (tuple, list)) else (v,)):
                q = getattr(q, "jaxpr", q)
                if hasattr(q, "eqns"):
                    n += count(q)
    return n
g = jax.jit(fn)
eqns = count(jax.make_jaxpr(fn)(*args).jaxpr)
t0 = time.perf_counter(); c0 = time.process_time(); jax.block_until_ready(g(*args))
t1 = time.perf_counter(); c1 = time.process_time()
jax.block_until_ready(g(*args2)); t2 = time.perf_counter(); c2 = time.process_time()
print(json.dumps({{"eqns": eqns, "compile_s": (t1 - t0) - (t2 - t1),
                   "compile_cpu_s": (c1 - c0) - (c2 - c1)}}))
"""


def run_sizes(sizes, cpu, libs, rounds, families=("chain",), tree=None):
    """Per family, size and library: the first call minus the second (untiered: numba's
    compile), in a fresh process with empty caches (tangentia's and numba's), wall and CPU
    seconds; rounds interleaved between the libraries, medians.  ``tree``: the tangentia
    tree to import (default: this one), e.g. a baseline clone for an A/B."""
    env = dict(os.environ, TANGENTIA_JIT_TIERED="0", TANGENTIA_COMPILE_PROGRESS="0",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    env["PYTHONPATH"] = os.pathsep.join([tree or ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    out = {}
    for fam in families:
        for n in sizes:
            rows = {lib: [] for lib in libs}
            for _ in range(rounds):
                for lib in libs:
                    with tempfile.TemporaryDirectory() as cache:
                        env["TANGENTIA_CACHE_DIR"] = cache
                        env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba_own")
                        code = SIZE_CHILD.format(cpu=cpu, prelude=textwrap.dedent(PRELUDE[lib]),
                                                 setup=textwrap.dedent(SIZE_FAMILIES[fam].format(n=n)))
                        # (cwd: ``python -c`` puts it first on sys.path, before PYTHONPATH)
                        proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                              text=True, timeout=3600, env=env, cwd=tree or ROOT)
                    if proc.returncode == 0:
                        rows[lib].append(json.loads(proc.stdout.strip().splitlines()[-1]))
                    else:
                        print(f"{fam} {n} {lib}: " + (proc.stderr.strip().splitlines() or ["?"])[-1],
                              flush=True)
            for lib in libs:
                if rows[lib]:
                    eq = rows[lib][0]["eqns"]
                    c = statistics.median(r["compile_s"] for r in rows[lib])
                    cc = statistics.median(r["compile_cpu_s"] for r in rows[lib])
                    out.setdefault(fam, {}).setdefault(str(n), {})[lib] = {
                        "eqns": eq, "compile_s": c, "compile_cpu_s": cc}
                    print(f"{fam:<6} size {n:>6} {lib:<10} {eq:>6} equations  compile "
                          f"{_fmt(c):>9} (cpu {_fmt(cc):>9})  {cc / eq * 1e3:.2f} ms/equation (cpu)",
                          flush=True)
    return out


def _family_sizes(text, families):
    """``--sizes``: "n1,n2,..." for every family, or "family=n1,n2;family=..." per family."""
    if "=" not in text:
        return [(f, [int(n) for n in text.split(",")]) for f in families]
    out = []
    for part in text.split(";"):
        fam, ns = part.split("=")
        out.append((fam.strip(), [int(n) for n in ns.split(",")]))
    return out


def plot_sizes(sizes, path):
    """CPU compile time against the number of equations, log-log, one line per library
    and family (``sizes``: ``run_sizes``'s result)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = []
    for fam, marker in zip(sizes, "os^vDP<>"):
        for lib, line in (("tangentia", "-"), ("jax", "--")):
            pts = sorted((v[lib]["eqns"], v[lib]["compile_cpu_s"])
                         for v in sizes[fam].values() if lib in v)
            if pts:
                xs += [p[0] for p in pts]
                name = "tangentia (numba)" if lib == "tangentia" else "JAX (XLA)"
                ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker + line,
                          label=f"{name}: {SIZE_LABELS.get(fam, fam)}")
    if xs:
        xs = sorted(set(xs))
        ax.loglog(xs, [2e-3 * x for x in xs], "k:", label="2 ms per equation")
    ax.set_xlabel("equations (nested programs included)")
    ax.set_ylabel("compile time, CPU s (first call - second)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _phases(rows):
    """Medians of the children's "phases" (CPU s per step of the first call), with "other":
    the first call's CPU not in any of them."""
    names = ("load", "numba", "generate", "compile")
    per = [dict({n: (r.get("phases") or {}).get(n, 0.0) for n in names},
                other=r["first_cpu_s"] - sum((r.get("phases") or {}).get(n, 0.0) for n in names))
           for r in rows if "first_cpu_s" in r]
    return {n: statistics.median(p[n] for p in per) for n in names + ("other",)} if per else {}


def _median(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def _fmt(s):
    if s is None:
        return "-"
    return f"{s:.3f} s" if s >= 0.1 else f"{s * 1e3:.1f} ms"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--untiered", action="store_true")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--no-tangentia", action="store_true", help="JAX only (with --sizes)")
    ap.add_argument("--cpu", type=int, default=None, help="the core to pin to (default: the last)")
    ap.add_argument("--native-wait", type=float, default=300,
                    help="seconds to wait for tangentia's background compiles (native_s)")
    ap.add_argument("--sizes", default="", help="compile time vs size: the families' sizes n "
                    "(n1,n2,... or family=n1,n2;family=...)")
    ap.add_argument("--families", default="chain,scan",
                    help="with --sizes: program families (" + ", ".join(SIZE_FAMILIES) + ")")
    ap.add_argument("--tree", default=None, metavar="DIR",
                    help="with --sizes or --reuse: the tangentia tree to import (default: this one)")
    ap.add_argument("--plot", default=None, metavar="PNG",
                    help="with --sizes: also draw compile time against equations (matplotlib)")
    ap.add_argument("--reuse", action="store_true",
                    help="a changed program (time grid, one line) reusing the compile cache "
                         "of the original, against it cold (cases: " + ", ".join(REUSE) + ")")
    ap.add_argument("--variants", default="", help="with --reuse: only these changes "
                    "(comma-separated names, e.g. 'grid 77,constant')")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    cases = [c for c in dict.fromkeys(list(CASES) + (list(REUSE) if args.reuse else []))
             if (not args.only or c in args.only.split(",")) and (c in CASES or args.reuse)]
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    libs = ([] if args.no_tangentia else ["tangentia"]) + ([] if args.no_jax else ["jax"])
    if args.sizes:
        sizes = {}
        for fam, ns in _family_sizes(args.sizes, args.families.split(",")):
            sizes.update(run_sizes(ns, cpu, libs, args.rounds, [fam], tree=args.tree))
        if args.plot:
            plot_sizes(sizes, args.plot)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"sizes": sizes}, f, indent=1)
        return
    if args.reuse:
        reuse = run_reuse(cases, cpu, args.rounds, jax=not args.no_jax,
                          variants=[v for v in args.variants.split(",") if v] or None,
                          tree=args.tree and os.path.abspath(args.tree))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"reuse": reuse}, f, indent=1)
        return
    results = {}
    for case in cases:
        rows = {lib: [] for lib in libs}
        for _ in range(args.rounds):          # interleaved: tangentia, JAX, tangentia, ...
            for lib in libs:
                r = run_case(lib, case, cpu, tiered=not args.untiered, native_wait=args.native_wait,
                             tree=args.tree and os.path.abspath(args.tree))
                rows[lib].append(r)
        out = {}
        for lib in libs:
            ok = [r for r in rows[lib] if "error" not in r]
            out[lib] = {k: _median(ok, k) for k in ("import_s", "first_s", "second_s", "native_s")}
            out[lib]["errors"] = [r["error"] for r in rows[lib] if "error" in r]
            out[lib]["runs_first_s"] = [r.get("first_s") for r in rows[lib]]
            if ok:
                out[lib]["result"] = ok[0]["result"]
        if "jax" in out and out["tangentia"].get("result") and out["jax"].get("result"):
            import numpy as np
            tol = CASES[case][3]
            a = np.concatenate([np.asarray(x) for x in out["tangentia"]["result"]])
            b = np.concatenate([np.asarray(x) for x in out["jax"]["result"]])
            out["agree"] = bool(a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol))
        t, j = out["tangentia"].get("first_s"), out.get("jax", {}).get("first_s")
        out["ratio"] = t / j if t and j else None
        results[case] = out
        line = (f"{case:<24} tangentia first {_fmt(t):>9} (2nd {_fmt(out['tangentia'].get('second_s')):>9},"
                f" native after {_fmt(out['tangentia'].get('native_s')):>9}, import "
                f"{_fmt(out['tangentia'].get('import_s'))})")
        if "jax" in out:
            line += (f" | JAX first {_fmt(j):>9} (import {_fmt(out['jax'].get('import_s'))})"
                     f" | ratio {out['ratio']:.3f}" if out["ratio"] else " | ratio -")
            line += "" if out.get("agree", True) else "  RESULTS DIFFER"
        errs = out["tangentia"]["errors"] + out.get("jax", {}).get("errors", [])
        print(line + (f"  errors: {errs}" if errs else ""), flush=True)
    if args.json:
        for out in results.values():
            for lib in libs:
                out[lib].pop("result", None)
        with open(args.json, "w") as f:
            json.dump({"tiered": not args.untiered, "rounds": args.rounds, "cases": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
