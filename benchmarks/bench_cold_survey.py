"""Benchmark: cold first calls of programs a new user would write, against JAX (issue 23).

``bench_cold.py``'s cases are our own benchmarks; this survey times 20-30 programs nobody
tuned for: a small CNN, attention and layer-norm blocks, an LSTM through ``scan``, ``vmap``
of a per-example loss, ``jacfwd``/``jacrev`` of a vector function, ``cond``/``switch`` in a
loop, sorting and ``top_k``, ``cumsum``, gathers and scatters, random keys inside ``jit``,
``linalg`` inside ``jit(grad)``, custom rules inside ``scan``, ``checkpoint``, ``lax.map``,
``while_loop`` solvers, eager code of many small calls, ``stax``/``optimizers``, an
optax-like update.  Each runs in a fresh process (pinned core, every library on one thread,
empty ``TANGENTIA_CACHE_DIR`` and ``NUMBA_CACHE_DIR``) through ``bench_cold.py``'s child
(its ``CHILD`` and ``PRELUDE``, imported): the first call's wall and CPU time, tangentia
tiered (as users get it), tangentia untiered (``TANGENTIA_JIT_TIERED=0``: numba's compile
waited for) and JAX (x64), interleaved per round, medians; ratio = ours / JAX.  Results
agree with JAX's within the case's tolerance (checked; random-key cases compare shapes).

A user's first run is ``python script.py``: each program's "import + first call" is the
process's CPU time until its imports are done (the interpreter, NumPy, the library, from the
process's start) plus the first call's, against JAX's in the same layout.  ``LIBRARY``: the
programs of libraries written for JAX that are installed here (flax linen and nnx, equinox,
optax), imported on tangentia through ``tests/_jax_alias.py`` as tests/test_lib_*.py do;
the first call is the user's whole first step (the model's initialization, then one
compiled training step).  Programs as diffrax and numpyro users write them (an ODE fit
through ``odeint``, a log density's gradient, HMC's leapfrog steps) use the APIs both
libraries have.

    python benchmarks/bench_cold_survey.py                       # every program, 1 round
    python benchmarks/bench_cold_survey.py --rounds 3 --only cnn_grad,lstm_scan
    python benchmarks/bench_cold_survey.py --modes tiered,jax --tree /tmp/base   # an A/B
    python benchmarks/bench_cold_survey.py --json out.json
    python benchmarks/bench_cold_survey.py --only flax_nnx_adam_step,equinox_mlp_step
    python benchmarks/bench_cold_survey.py --imports 11 --base /tmp/base   # import CPU, A/B

``--ladder``: compile time against size up to ~10,000 equations for three of
``bench_cold.py``'s ``--sizes`` families (its ``run_sizes``: untiered, first call minus
second, CPU, fresh process, empty caches), ms per equation:

    python benchmarks/bench_cold_survey.py --ladder                      # special, mlp, physics
    python benchmarks/bench_cold_survey.py --ladder "special=1400,2800" --no-jax
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
sys.path.insert(0, HERE)
import bench_cold  # noqa: E402  (its child program, preludes and --sizes machinery)

ROOT = bench_cold.ROOT

EXTRA = {
    "tangentia": """
        import tangentia.nn
        import tangentia.random
        from tangentia.example_libraries import stax, optimizers
    """,
    "jax": """
        import jax.nn
        import jax.random
        from jax.example_libraries import stax, optimizers
    """,
}

# name: (setup, first call, second call or None, tolerance; None: compare shapes only)
SURVEY = {
    # a small CNN: two convolutions, average pooling, a dense layer, softmax cross-entropy
    "cnn_grad": ("""
        rng = np.random.default_rng(0)
        p = {"c1": rng.standard_normal((8, 1, 3, 3)) * 0.3, "c2": rng.standard_normal((8, 8, 3, 3)) * 0.1,
             "W": rng.standard_normal((8 * 3 * 3, 10)) * 0.1, "b": np.zeros(10)}
        X = rng.standard_normal((16, 1, 12, 12)); Y = np.eye(10)[rng.integers(0, 10, 16)]
        def pool(h):
            return lax.reduce_window(h, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") / 4.0
        def loss(p, X, Y):
            h = jax.nn.relu(lax.conv_general_dilated(X, p["c1"], (1, 1), "SAME"))
            h = pool(h)
            h = jax.nn.relu(lax.conv_general_dilated(h, p["c2"], (1, 1), "SAME"))
            h = pool(h).reshape(h.shape[0], -1)
            logits = h @ p["W"] + p["b"]
            return -jnp.mean(jnp.sum(Y * jax.nn.log_softmax(logits), axis=1))
        g = jax.jit(jax.grad(loss))
    """, "g(p, X, Y)", "g(p, X * 0.5, Y)", 1e-9),
    # a self-attention block with layer norms and a residual MLP, jit(grad)
    "attention_grad": ("""
        rng = np.random.default_rng(0)
        d, T = 16, 12
        p = {k: rng.standard_normal((d, d)) / 4.0 for k in ("q", "k", "v", "o", "m1", "m2")}
        p["g1"] = np.ones(d); p["g2"] = np.ones(d)
        x = rng.standard_normal((T, d))
        def ln(h, g):
            mu = jnp.mean(h, axis=-1, keepdims=True)
            var = jnp.var(h, axis=-1, keepdims=True)
            return g * (h - mu) / jnp.sqrt(var + 1e-5)
        def block(p, x):
            h = ln(x, p["g1"])
            q, k, v = h @ p["q"], h @ p["k"], h @ p["v"]
            a = jax.nn.softmax(q @ k.T / np.sqrt(d), axis=-1)
            x = x + (a @ v) @ p["o"]
            h = ln(x, p["g2"])
            return x + jax.nn.gelu(h @ p["m1"]) @ p["m2"]
        def loss(p, x):
            return jnp.sum(block(p, x) ** 2)
        g = jax.jit(jax.grad(loss))
    """, "g(p, x)", "g(p, x * 0.5)", 1e-8),
    # the attention block's forward pass alone, batched with vmap
    "attention_vmap_fwd": ("""
        rng = np.random.default_rng(0)
        d, T = 16, 12
        Wq, Wk, Wv = (rng.standard_normal((d, d)) / 4.0 for _ in range(3))
        def attn(x):
            q, k, v = x @ Wq, x @ Wk, x @ Wv
            s = q @ k.T / np.sqrt(d)
            s = jnp.where(jnp.tril(jnp.ones((T, T))) > 0, s, -1e9)
            return jax.nn.softmax(s, axis=-1) @ v
        g = jax.jit(jax.vmap(attn))
        X = rng.standard_normal((8, T, d))
    """, "g(X)", "g(X * 0.5)", 1e-10),
    # an LSTM over 20 steps through scan, jit(grad) of the last state's loss
    "lstm_scan_grad": ("""
        rng = np.random.default_rng(0)
        H, D, T = 16, 8, 20
        p = {"Wx": rng.standard_normal((D, 4 * H)) * 0.2, "Wh": rng.standard_normal((H, 4 * H)) * 0.2,
             "b": np.zeros(4 * H), "Wo": rng.standard_normal((H, 1)) * 0.2}
        xs = rng.standard_normal((T, D))
        def loss(p, xs):
            def cell(carry, x):
                h, c = carry
                z = x @ p["Wx"] + h @ p["Wh"] + p["b"]
                i, f, o, u = jnp.split(z, 4)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(u)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), h @ p["Wo"]
            (h, c), ys = lax.scan(cell, (jnp.zeros(H), jnp.zeros(H)), xs)
            return jnp.sum(ys ** 2) + jnp.sum(h)
        g = jax.jit(jax.grad(loss))
    """, "g(p, xs)", "g(p, xs * 0.5)", 1e-9),
    # vmap of a per-example loss (a two-layer net), its mean under jit
    "vmap_per_example_loss": ("""
        rng = np.random.default_rng(0)
        W1 = rng.standard_normal((10, 32)) * 0.3; W2 = rng.standard_normal(32) * 0.3
        X = rng.standard_normal((128, 10)); Y = rng.standard_normal(128)
        def ex_loss(W1, W2, x, y):
            return (jnp.tanh(x @ W1) @ W2 - y) ** 2
        batched = jax.vmap(ex_loss, in_axes=(None, None, 0, 0))
        g = jax.jit(lambda W1, W2, X, Y: (batched(W1, W2, X, Y), jnp.mean(batched(W1, W2, X, Y))))
    """, "g(W1, W2, X, Y)", "g(W1, W2, X * 0.5, Y)", 1e-10),
    # jacfwd and jacrev of a vector function R^6 -> R^6
    "jacfwd_vector": ("""
        def f(x):
            return jnp.stack([jnp.sin(x[0]) * x[1], x[1] ** 2 + x[2], jnp.exp(-x[3]) * x[4],
                              jnp.tanh(x[5] * x[0]), jnp.sum(x ** 3), jnp.prod(x[:3])])
        g = jax.jit(jax.jacfwd(f))
        x = np.linspace(0.1, 0.6, 6)
    """, "g(x)", "g(x + 0.1)", 1e-10),
    "jacrev_vector": ("""
        A = np.arange(36.0).reshape(6, 6) / 36.0
        def f(x):
            return jnp.tanh(A @ x) * jnp.cos(x) + jnp.cumsum(x) ** 2
        g = jax.jit(jax.jacrev(f))
        x = np.linspace(0.1, 0.6, 6)
    """, "g(x)", "g(x + 0.1)", 1e-10),
    # cond and switch inside a fori_loop
    "cond_switch_loop": ("""
        def f(x):
            def body(i, s):
                s = lax.switch(i % 3, [lambda v: v * 0.9, lambda v: jnp.sin(v), lambda v: v + 0.1], s)
                return lax.cond(jnp.sum(s) > 1.0, lambda v: v * 0.5, lambda v: v * 1.5, s)
            return jnp.sum(lax.fori_loop(0, 30, body, x) ** 2)
        g = jax.jit(jax.value_and_grad(f))
        x = np.linspace(0.0, 1.0, 8)
    """, "g(x)", "g(x + 0.1)", 1e-10),
    # sort, argsort, top_k
    "sort_topk": ("""
        rng = np.random.default_rng(0)
        x = rng.standard_normal((16, 64))
        def f(x):
            s = jnp.sort(x, axis=1)
            i = jnp.argsort(x[:, 0])
            v, k = lax.top_k(x, 5)
            return s[i], v, k
        g = jax.jit(f)
    """, "g(x)", "g(x * 0.5)", 0.0),
    # grad through sort and top_k (a trimmed mean)
    "sort_grad": ("""
        rng = np.random.default_rng(0)
        x = rng.standard_normal((8, 32))
        def f(x):
            v, _ = lax.top_k(x, 4)
            return jnp.sum(jnp.sort(x, axis=1)[:, 4:-4] ** 2) + jnp.sum(v)
        g = jax.jit(jax.grad(f))
    """, "g(x)", "g(x * 0.5)", 1e-12),
    # cumsum/cumprod and their gradients
    "cumsum_grad": ("""
        x = np.linspace(0.1, 1.0, 100)
        def f(x):
            c = jnp.cumsum(x)
            return jnp.sum(jnp.cumprod(1.0 - 0.01 * x) * c) + jnp.sum(jnp.diff(c) ** 2)
        g = jax.jit(jax.grad(f))
    """, "g(x)", "g(x * 0.5)", 1e-10),
    # embedding lookup, segment-style .at[].add, jit(grad)
    "embedding_scatter_grad": ("""
        rng = np.random.default_rng(0)
        E = rng.standard_normal((100, 16)) * 0.1
        ids = rng.integers(0, 100, (32, 8)); seg = rng.integers(0, 10, 32)
        W = rng.standard_normal((16, 1)) * 0.1
        def loss(E, W):
            h = jnp.mean(E[ids], axis=1)
            pooled = jnp.zeros((10, 16)).at[seg].add(h)
            return jnp.sum((pooled @ W) ** 2) + 0.01 * jnp.sum(E ** 2)
        g = jax.jit(jax.grad(loss, argnums=(0, 1)))
    """, "g(E, W)", "g(E * 0.5, W)", 1e-10),
    # gather/scatter-heavy: a histogram, take_along_axis, .at[].max/.min/.set
    "gather_scatter": ("""
        rng = np.random.default_rng(0)
        x = rng.standard_normal(256); idx = rng.integers(0, 32, 256)
        def f(x):
            h = jnp.zeros(32).at[idx].add(x)
            m = jnp.full(32, -jnp.inf).at[idx].max(x)
            order = jnp.argsort(x)
            y = jnp.take_along_axis(x, order, axis=0)
            z = y.at[::2].set(0.0).at[1::2].multiply(2.0)
            return h, m, z[idx]
        g = jax.jit(f)
    """, "g(x)", "g(x * 0.5)", 1e-12),
    # random keys inside jit: split, normal, uniform, dropout
    "random_jit": ("""
        @jax.jit
        def f(key, x):
            k1, k2, k3 = jax.random.split(key, 3)
            noise = jax.random.normal(k1, x.shape)
            keep = jax.random.bernoulli(k2, 0.8, x.shape)
            u = jax.random.uniform(k3, (4,))
            return jnp.where(keep, x + 0.1 * noise, 0.0) / 0.8, u
        key = jax.random.PRNGKey(0)
        x = np.linspace(0.0, 1.0, 64)
        g = f
    """, "g(key, x)", "g(jax.random.PRNGKey(1), x)", None),
    # a loss with dropout from a key, jit(grad)
    "random_dropout_grad": ("""
        rng = np.random.default_rng(0)
        W = rng.standard_normal((16, 16)) * 0.2; X = rng.standard_normal((32, 16))
        def loss(W, key):
            h = jnp.tanh(X @ W)
            keep = jax.random.bernoulli(key, 0.9, h.shape)
            return jnp.mean(jnp.where(keep, h / 0.9, 0.0) ** 2)
        g = jax.jit(jax.grad(loss))
        key = jax.random.PRNGKey(0)
    """, "g(W, key)", "g(W * 0.5, key)", None),
    # solve, cholesky, eigh, svd inside jit(grad)
    "linalg_grad": ("""
        rng = np.random.default_rng(0)
        M = rng.standard_normal((6, 6)); b = rng.standard_normal(6)
        def loss(M):
            S = M @ M.T + 6.0 * jnp.eye(6)
            L = jnp.linalg.cholesky(S)
            x = jnp.linalg.solve(S, b)
            w, _ = jnp.linalg.eigh(S)
            sv = jnp.linalg.svd(M, compute_uv=False)
            return jnp.sum(x ** 2) + jnp.sum(jnp.log(jnp.diag(L))) + jnp.sum(w) * 0.01 + jnp.sum(sv)
        g = jax.jit(jax.grad(loss))
    """, "g(M)", "g(M * 0.5)", 1e-8),
    # custom_jvp and custom_vjp functions inside a scan
    "custom_rules_scan": ("""
        @jax.custom_jvp
        def softplus(x):
            return jnp.log1p(jnp.exp(x))
        @softplus.defjvp
        def _sp(primals, tangents):
            (x,), (t,) = primals, tangents
            return softplus(x), t * jax.nn.sigmoid(x)
        @jax.custom_vjp
        def clip_grad(x):
            return x
        def _cf(x):
            return x, None
        def _cb(_, g):
            return (jnp.clip(g, -1.0, 1.0),)
        clip_grad.defvjp(_cf, _cb)
        rng = np.random.default_rng(0)
        W = rng.standard_normal((8, 8)) * 0.3; xs = rng.standard_normal((25, 8))
        def loss(W):
            def body(c, x):
                c = clip_grad(softplus(W @ c + x) - 0.5)
                return c, jnp.sum(c)
            c, ys = lax.scan(body, jnp.zeros(8), xs)
            return jnp.sum(ys) + jnp.sum(c ** 2)
        g = jax.jit(jax.grad(loss))
    """, "g(W)", "g(W * 0.5)", 1e-10),
    # checkpoint (remat) of each block of a deep tanh net
    "checkpoint_grad": ("""
        rng = np.random.default_rng(0)
        Ws = [rng.standard_normal((16, 16)) * 0.25 for _ in range(8)]
        x = rng.standard_normal(16)
        @jax.checkpoint
        def block(W, h):
            return jnp.tanh(W @ h) + 0.5 * h
        def loss(Ws, x):
            h = x
            for W in Ws:
                h = block(W, h)
            return jnp.sum(h ** 2)
        g = jax.jit(jax.grad(loss))
    """, "g(Ws, x)", "g(Ws, x * 0.5)", 1e-10),
    # lax.map of a small Newton iteration over a batch
    "lax_map": ("""
        def solve(a):
            x = a
            for _ in range(6):
                x = x - (x ** 3 - a) / (3.0 * x ** 2)
            return jnp.stack([x, jnp.sin(x)])
        g = jax.jit(lambda a: lax.map(solve, a))
        a = np.linspace(1.0, 8.0, 32)
    """, "g(a)", "g(a + 1.0)", 1e-10),
    # a while_loop fixed-point / gradient-descent solver, grad w.r.t. the data outside it
    "while_solver": ("""
        rng = np.random.default_rng(0)
        A = rng.standard_normal((8, 8)); A = A @ A.T / 8.0 + np.eye(8); b = rng.standard_normal(8)
        def solve(A, b):
            def cond(s):
                x, r, i = s
                return (jnp.linalg.norm(r) > 1e-10) & (i < 500)
            def body(s):
                x, r, i = s
                x = x + 0.2 * r
                return x, b - A @ x, i + 1
            x, r, i = lax.while_loop(cond, body, (jnp.zeros(8), b, 0))
            return x, i
        g = jax.jit(solve)
    """, "g(A, b)", "g(A, b * 0.5)", 1e-8),
    # eager code, no jit: 120 small numpy calls of a data-preparation and evaluation script
    "eager_small_calls": ("""
        rng = np.random.default_rng(0)
        data = rng.standard_normal((50, 4))
        def script(data):
            x = jnp.asarray(data)
            out = []
            for j in range(4):
                c = x[:, j]
                mu = jnp.mean(c); sd = jnp.std(c)
                z = (c - mu) / sd
                z = jnp.clip(z, -3.0, 3.0)
                q = jnp.percentile(z, 90.0)
                s = jnp.sort(z)
                w = jnp.where(z > 0, z, 0.1 * z)
                e = jnp.exp(-w ** 2) * jnp.cos(w)
                m = jnp.max(jnp.abs(e)); am = jnp.argmax(e)
                h = jnp.histogram(z, bins=5, range=(-3.0, 3.0))[0]
                cs = jnp.cumsum(e)
                d = jnp.dot(e, z) + jnp.linalg.norm(e)
                r = jnp.concatenate([s[:3], s[-3:], jnp.array([q, m, d, cs[-1]]), h.astype(float)])
                r = jnp.round(r, 6) + am
                out.append(r)
            M = jnp.stack(out)
            C = jnp.corrcoef(x.T)
            return M, C, jnp.linalg.inv(C + jnp.eye(4)), jnp.unique(jnp.round(x[:, 0]))
    """, "script(data)", "script(data * 0.5)", 1e-10),
    # eager grad (no jit) of a small loss, several times
    "eager_grad": ("""
        rng = np.random.default_rng(0)
        W = rng.standard_normal((4, 8)) * 0.3; X = rng.standard_normal((16, 4))
        def loss(W, X):
            h = jnp.tanh(X @ W)
            return jnp.mean(jax.nn.logsumexp(h, axis=1)) + 0.1 * jnp.sum(W ** 2)
        def train(W):
            for _ in range(5):
                W = W - 0.1 * jax.grad(loss)(W, X)
            return W
    """, "train(W)", "train(W * 0.5)", 1e-10),
    # stax model and optimizers' Adam, a jitted update step
    "stax_adam_step": ("""
        init_fun, apply_fun = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(32), stax.Tanh,
                                          stax.Dense(10), stax.LogSoftmax)
        _, params = init_fun(jax.random.PRNGKey(0), (-1, 8))
        params = jax.tree_util.tree_map(np.asarray, params)
        opt_init, opt_update, get_params = optimizers.adam(1e-3)
        rng = np.random.default_rng(0)
        X = rng.standard_normal((64, 8)); Y = np.eye(10)[rng.integers(0, 10, 64)]
        def loss(p, X, Y):
            return -jnp.mean(jnp.sum(apply_fun(p, X) * Y, axis=1))
        @jax.jit
        def update(i, state, X, Y):
            return opt_update(i, jax.grad(loss)(get_params(state), X, Y), state)
        state = opt_init(params)
        def step_a():
            return get_params(update(0, state, X, Y))
        def step_b():
            return get_params(update(1, state, X * 0.5, Y))
    """, "step_a()", "step_b()", 1e-8),
    # an optax-like Adam written by hand with tree_map, a jitted train step
    "optax_like_step": ("""
        rng = np.random.default_rng(0)
        params = {"w1": rng.standard_normal((8, 32)) * 0.3, "b1": np.zeros(32),
                  "w2": rng.standard_normal((32, 1)) * 0.3, "b2": np.zeros(1)}
        X = rng.standard_normal((64, 8)); Y = rng.standard_normal((64, 1))
        tm = jax.tree_util.tree_map
        def loss(p, X, Y):
            h = jax.nn.relu(X @ p["w1"] + p["b1"])
            return jnp.mean((h @ p["w2"] + p["b2"] - Y) ** 2)
        @jax.jit
        def step(p, m, v, t, X, Y):
            l, g = jax.value_and_grad(loss)(p, X, Y)
            m = tm(lambda m, g: 0.9 * m + 0.1 * g, m, g)
            v = tm(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
            mh = tm(lambda m: m / (1 - 0.9 ** t), m)
            vh = tm(lambda v: v / (1 - 0.999 ** t), v)
            p = tm(lambda p, a, b: p - 1e-3 * a / (jnp.sqrt(b) + 1e-8), p, mh, vh)
            return p, m, v, l
        z = tm(np.zeros_like, params)
    """, "step(params, z, z, 1.0, X, Y)", "step(params, z, z, 2.0, X * 0.5, Y)", 1e-9),
    # a whole training loop under jit: fori_loop of SGD steps
    "fori_train_loop": ("""
        rng = np.random.default_rng(0)
        W0 = rng.standard_normal((8, 4)) * 0.3
        X = rng.standard_normal((32, 8)); Y = rng.standard_normal((32, 4))
        def loss(W):
            return jnp.mean((jnp.tanh(X @ W) - Y) ** 2)
        @jax.jit
        def train(W):
            return lax.fori_loop(0, 50, lambda i, W: W - 0.1 * jax.grad(loss)(W), W)
        g = train
    """, "g(W0)", "g(W0 * 0.5)", 1e-9),
    # the hessian of a small log-likelihood (logistic regression)
    "hessian_logistic": ("""
        rng = np.random.default_rng(0)
        X = rng.standard_normal((40, 5)); y = (rng.standard_normal(40) > 0).astype(float)
        def nll(w):
            z = X @ w
            return jnp.sum(jnp.logaddexp(0.0, z) - y * z) + 0.5 * jnp.sum(w ** 2)
        g = jax.jit(jax.hessian(nll))
        w = np.zeros(5)
    """, "g(w)", "g(w + 0.1)", 1e-9),
    # einsum contractions of a bilinear model, jit(grad)
    "einsum_grad": ("""
        rng = np.random.default_rng(0)
        T = rng.standard_normal((6, 5, 4)) * 0.3; A = rng.standard_normal((10, 6)); B = rng.standard_normal((10, 5))
        def loss(T):
            y = jnp.einsum("ijk,ni,nj->nk", T, A, B)
            return jnp.sum(jnp.einsum("nk,nk->n", y, y)) + jnp.einsum("ijk,ijk->", T, T)
        g = jax.jit(jax.grad(loss))
    """, "g(T)", "g(T * 0.5)", 1e-9),
}

# Programs of libraries written for JAX (installed in the venv), run on tangentia through
# ``tests/_jax_alias.py`` (``import jax`` gives tangentia, as in tests/test_lib_*.py) and on
# JAX (x64).  name: (modules imported, setup, first call, second call, tolerance).  The
# first call is the user's whole first step: building the model (its parameters' random
# initialization included), then one compiled training step.  flax's and equinox's
# parameters are float32 (their default ``param_dtype``), hence the float32 tolerance.
LIBRARY = {
    # flax linen: an MLP's init, then a jit(grad) SGD step
    "flax_linen_mlp_step": ("import flax.linen as nn", """
        class MLP(nn.Module):
            @nn.compact
            def __call__(self, x):
                x = nn.relu(nn.Dense(32)(x))
                x = nn.relu(nn.Dense(32)(x))
                return nn.Dense(1)(x)
        model = MLP()
        rng = np.random.default_rng(0)
        X = rng.standard_normal((64, 8)); Y = rng.standard_normal((64, 1))
        def loss(p, X, Y):
            return jnp.mean((model.apply(p, X) - Y) ** 2)
        step = jax.jit(lambda p, X, Y: jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, p,
                                                              jax.grad(loss)(p, X, Y)))
        def first():
            global params
            params = model.init(jax.random.PRNGKey(0), X)
            return step(params, X, Y)
    """, "first()", "step(params, X * 0.5, Y)", 1e-5),
    # flax nnx: a module, an nnx.Optimizer with optax's adam, an nnx.jit value_and_grad step
    "flax_nnx_adam_step": ("from flax import nnx\nimport optax", """
        class MLP(nnx.Module):
            def __init__(self, rngs):
                self.l1 = nnx.Linear(8, 32, rngs=rngs)
                self.l2 = nnx.Linear(32, 1, rngs=rngs)
            def __call__(self, x):
                return self.l2(nnx.relu(self.l1(x)))
        rng = np.random.default_rng(0)
        X = rng.standard_normal((64, 8)); Y = rng.standard_normal((64, 1))
        @nnx.jit
        def step(model, optimizer, X, Y):
            def loss(m):
                return jnp.mean((m(X) - Y) ** 2)
            value, grads = nnx.value_and_grad(loss)(model)
            optimizer.update(model, grads)
            return value
        def first():
            global model, optimizer
            model = MLP(nnx.Rngs(0))
            optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
            return step(model, optimizer, X, Y), model.l1.kernel[...]
    """, "first()", "step(model, optimizer, X * 0.5, Y)", 1e-5),
    # equinox: an MLP, filter_jit of filter_grad, the update applied
    "equinox_mlp_step": ("import equinox as eqx", """
        rng = np.random.default_rng(0)
        X = rng.standard_normal((64, 8)); Y = rng.standard_normal((64, 1))
        @eqx.filter_jit
        def step(model, X, Y):
            @eqx.filter_grad
            def grads(m):
                return jnp.mean((jax.vmap(m)(X) - Y) ** 2)
            g = grads(model)
            return eqx.apply_updates(model, jax.tree_util.tree_map(lambda t: -0.1 * t, g))
        def first():
            global model
            model = eqx.nn.MLP(8, 1, 32, 2, key=jax.random.PRNGKey(0))
            return eqx.filter(step(model, X, Y), eqx.is_array)
    """, "first()", "eqx.filter(step(model, X * 0.5, Y), eqx.is_array)", 1e-5),
    # optax: adam on a two-layer net's parameters (a dict), one jitted step
    "optax_adam_step": ("import optax", """
        rng = np.random.default_rng(0)
        params = {"W1": rng.standard_normal((8, 32)) * 0.3, "b1": np.zeros(32),
                  "W2": rng.standard_normal((32, 1)) * 0.3, "b2": np.zeros(1)}
        X = rng.standard_normal((64, 8)); Y = rng.standard_normal((64, 1))
        opt = optax.adam(1e-2)
        def loss(p, X, Y):
            return jnp.mean((jnp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"] - Y) ** 2)
        @jax.jit
        def step(p, state, X, Y):
            value, g = jax.value_and_grad(loss)(p, X, Y)
            updates, state = opt.update(g, state, p)
            return optax.apply_updates(p, updates), state, value
        def first():
            global state
            state = opt.init(params)
            return step(params, state, X, Y)
    """, "first()", "step(params, state, X * 0.5, Y)", 1e-9),
}

# Programs written the way diffrax/numpyro users write them, with the APIs both libraries
# have (odeint, jax.scipy.stats): no library import.
SURVEY.update({
    # an ODE fit: Lotka-Volterra through odeint, jit(grad) of a trajectory loss
    "ode_lotka_volterra_grad": ("""
        ts = np.linspace(0.0, 5.0, 21)
        obs = np.stack([np.exp(-0.1 * ts), 0.5 + 0.1 * np.sin(ts)], axis=1)
        def rhs(y, t, th):
            return jnp.stack([th[0] * y[0] - th[1] * y[0] * y[1],
                              th[2] * y[0] * y[1] - th[3] * y[1]])
        def loss(th):
            ys = odeint(rhs, jnp.array([1.0, 0.5]), ts, th, rtol=1e-8, atol=1e-8)
            return jnp.sum((ys - obs) ** 2)
        g = jax.jit(jax.value_and_grad(loss))
        th = np.array([0.6, 0.4, 0.3, 0.5])
    """, "g(th)", "g(th * 1.1)", 1e-6),
    # numpyro-like: eight schools' non-centred log density, jit(value_and_grad)
    "logdensity_grad": ("""
        stats = jax.scipy.stats
        y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
        sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
        def logp(th):
            mu, log_tau, eta = th["mu"], th["log_tau"], th["eta"]
            tau = jnp.exp(log_tau)
            lp = stats.norm.logpdf(mu, 0.0, 5.0) + stats.cauchy.logpdf(tau, 0.0, 5.0) + log_tau
            lp = lp + jnp.sum(stats.norm.logpdf(eta, 0.0, 1.0))
            return lp + jnp.sum(stats.norm.logpdf(y, mu + tau * eta, sigma))
        g = jax.jit(jax.value_and_grad(logp))
        th = {"mu": 1.0, "log_tau": 0.5, "eta": np.linspace(-1.0, 1.0, 8)}
    """, "g(th)", "g({**th, 'mu': 2.0})", 1e-10),
    # numpyro-like HMC: 10 leapfrog steps of that density's gradient in a fori_loop
    "hmc_leapfrog": ("""
        stats = jax.scipy.stats
        y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
        sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
        def logp(q):
            mu, log_tau, eta = q[0], q[1], q[2:]
            tau = jnp.exp(log_tau)
            lp = stats.norm.logpdf(mu, 0.0, 5.0) + stats.cauchy.logpdf(tau, 0.0, 5.0) + log_tau
            lp = lp + jnp.sum(stats.norm.logpdf(eta, 0.0, 1.0))
            return lp + jnp.sum(stats.norm.logpdf(y, mu + tau * eta, sigma))
        @jax.jit
        def leapfrog(q, p):
            eps = 0.05
            def body(i, qp):
                q, p = qp
                p = p + 0.5 * eps * jax.grad(logp)(q)
                q = q + eps * p
                return q, p + 0.5 * eps * jax.grad(logp)(q)
            q, p = lax.fori_loop(0, 10, body, (q, p))
            return q, p, logp(q) - 0.5 * jnp.sum(p ** 2)
        q0 = np.linspace(-0.5, 0.5, 10); p0 = np.cos(np.arange(10.0))
    """, "leapfrog(q0, p0)", "leapfrog(q0 * 0.5, p0)", 1e-9),
})


# A library program's prelude: on tangentia, ``import jax`` gives tangentia (the alias of
# tests/_jax_alias.py); then the library's modules.
LIBRARY_PRELUDE = {
    "tangentia": """
        import sys
        sys.path.insert(0, {tests!r})
        from _jax_alias import JaxAlias
        sys.meta_path.insert(0, JaxAlias())
        import jax
        import jax.numpy as jnp
        from jax import lax
        from tangentia.compiler.backend import wait_for_compiles
    """,
    "jax": """
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax import lax
        def wait_for_compiles(timeout=None):
            pass
    """,
}

# The process's CPU time when its imports are done (from the process's start: the
# interpreter's, NumPy's, the library's), read by the child's ``{phases}`` slot (after the
# prelude) into the JSON's "phases": "import + first call" is that plus the first call's.
_IMPORT_CPU = "PHASES = {'import_cpu_s': time.process_time()}"


def case_parts(case):
    """``(library modules or None, setup, first, second, tolerance)`` of a program."""
    if case in LIBRARY:
        return LIBRARY[case]
    return (None,) + SURVEY[case]


def child_code(lib, case):
    modules, setup, first, second, _ = case_parts(case)
    if modules is None:
        prelude = textwrap.dedent(bench_cold.PRELUDE[lib]) + textwrap.dedent(EXTRA[lib])
    else:
        prelude = textwrap.dedent(LIBRARY_PRELUDE[lib]).format(
            tests=os.path.join(ROOT, "tests")) + modules + "\n"
    return bench_cold.CHILD.format_map(_Blank(
        cpu=CPU[0], native_wait=0, prelude=prelude, phases=_IMPORT_CPU,
        setup=textwrap.dedent(setup), first=first,
        has_second=second is not None, second_expr=second or "None"))


class _Blank(dict):
    """The child's fields; any other field of ``bench_cold.CHILD`` (an option of its own,
    e.g. ``--reuse``'s phases) left empty."""
    def __missing__(self, key):
        return ""


CPU = [1]


def run_one(mode, case, tree=None, timeout=900):
    """One fresh process: ``mode`` is "tiered" or "untiered" (tangentia) or "jax"."""
    lib = "jax" if mode == "jax" else "tangentia"
    env = bench_cold.child_env(tree, tiered=mode != "untiered")
    with tempfile.TemporaryDirectory() as empty:
        env["TANGENTIA_CACHE_DIR"] = empty
        env["NUMBA_CACHE_DIR"] = os.path.join(empty, "numba_own")
        proc = subprocess.run([sys.executable, "-c", child_code(lib, case)], capture_output=True,
                              text=True, timeout=timeout, env=env, cwd=tree or ROOT)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _agree(a, b, tol):
    import numpy as np
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b)):
        return False
    if tol is None:
        return True
    return all(np.allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol) for x, y in zip(a, b))


def survey(cases, modes, rounds, tree=None):
    fmt = bench_cold._fmt
    results = {}
    for case in cases:
        rows = {m: [] for m in modes}
        for _ in range(rounds):
            for m in modes:
                rows[m].append(run_one(m, case, tree))
        out = {}
        for m in modes:
            ok = [r for r in rows[m] if "error" not in r]
            for r in ok:      # import + first call: the process's CPU until its imports
                r["import_cpu_s"] = (r.get("phases") or {}).get("import_cpu_s")   # were done
                r["total_cpu_s"] = (r["import_cpu_s"] + r["first_cpu_s"]
                                    if r["import_cpu_s"] is not None else None)
            out[m] = {k: bench_cold._median([r for r in ok if r.get(k) is not None], k)
                      for k in ("first_s", "first_cpu_s", "second_s", "import_s",
                                "import_cpu_s", "total_cpu_s")}
            out[m]["errors"] = [r["error"] for r in rows[m] if "error" in r]
            if ok:
                out[m]["result"] = ok[0]["result"]
        j = out.get("jax", {})
        for m in modes:
            if m != "jax" and j.get("first_s") and out[m].get("first_s"):
                out[m]["ratio_wall"] = out[m]["first_s"] / j["first_s"]
                out[m]["ratio_cpu"] = out[m]["first_cpu_s"] / j["first_cpu_s"]
                if j.get("total_cpu_s") and out[m].get("total_cpu_s"):
                    out[m]["ratio_total_cpu"] = out[m]["total_cpu_s"] / j["total_cpu_s"]
                if j.get("result") and out[m].get("result"):
                    out[m]["agree"] = _agree(out[m]["result"], j["result"], case_parts(case)[4])
        results[case] = out
        line = f"{case:<24}"
        for m in modes:
            o = out[m]
            line += f" | {m} {fmt(o['first_s']):>9} cpu {fmt(o['first_cpu_s']):>9}"
            if "ratio_wall" in o:
                line += f" ({o['ratio_wall']:.2f}x / {o['ratio_cpu']:.2f}x)"
            if o.get("total_cpu_s") is not None:
                line += f" +import cpu {fmt(o['total_cpu_s'])}"
                if "ratio_total_cpu" in o:
                    line += f" ({o['ratio_total_cpu']:.2f}x)"
            if "ratio_wall" in o:
                line += "" if o.get("agree", True) else " DIFFER"
            if o["errors"]:
                line += f" errors: {o['errors'][:1]}"
        print(line, flush=True)
    return results


def table(results, modes):
    """A markdown table: first call wall / CPU per mode, ratios to JAX."""
    fmt = bench_cold._fmt
    head = "| program | " + " | ".join(
        f"{m} wall / cpu" + (" (x JAX)" if m != "jax" else "") for m in modes) + " | " + \
        " | ".join(f"{m} import + first, cpu" + (" (x JAX)" if m != "jax" else "")
                   for m in modes) + " |"
    lines = [head, "| --- |" + " --- |" * (2 * len(modes))]
    for case, out in results.items():
        cells = []
        for m in modes:
            o = out[m]
            if o.get("first_s") is None:
                cells.append("error")
                continue
            c = f"{fmt(o['first_s'])} / {fmt(o['first_cpu_s'])}"
            if "ratio_wall" in o:
                c += f" ({o['ratio_wall']:.2f} / {o['ratio_cpu']:.2f})"
            cells.append(c)
        for m in modes:
            o = out[m]
            c = fmt(o["total_cpu_s"]) if o.get("total_cpu_s") is not None else "-"
            if "ratio_total_cpu" in o:
                c += f" ({o['ratio_total_cpu']:.2f})"
            cells.append(c)
        lines.append(f"| `{case}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# the size ladder to ~10,000 equations (bench_cold's families; equations counted by make_jaxpr):
# special 2800 and physics 220 are 10,080 and 9,686 equations.  The MLP stops at 200 layers
# (3,002): past 256 layers of 16x16 its weights exceed native.PACK_MAX_ELEMENTS and its
# compile did not finish in 400 s of CPU (session 21; "mlp=330" to see it; R's to fix)
LADDER = "special=300,1400,2800;physics=30,110,220;mlp=100,200"


# --imports: what ``python script.py`` pays before its first line of work.  Each statement
# runs in a fresh process (pinned, the child environment of the programs above); its CPU is
# the process's own (getrusage: user + system, from its start), the interpreter's start-up
# included, so ``pass`` is the floor.  "tree" statements import the tangentia tree given
# (--tree, default this one); with --base DIR, the same statements on that tree too (an A/B,
# interleaved).  Bytecode: the trees' existing .pyc files are used, none written.
IMPORTS = {
    "pass": "pass",
    "numpy": "import numpy",
    "numpy+scipy": "import numpy, scipy.special, scipy.linalg",
    "tangentia": "import tangentia",
    "tnp+jit+grad": "import tangentia.numpy as tnp; from tangentia import jit, grad",
    "jax": "import jax; jax.config.update('jax_enable_x64', True); import jax.numpy",
}
_IMPORT_CHILD = ("import os; os.sched_setaffinity(0, {{{cpu}}})\n{stmt}\n"
                 "import resource; r = resource.getrusage(resource.RUSAGE_SELF); "
                 "print(r.ru_utime + r.ru_stime)")


def run_imports(rounds, trees):
    """``{(statement, tree): median CPU s}`` over ``rounds`` fresh processes per pair,
    interleaved round by round (``trees``: {label: tree directory})."""
    times = {}
    for _ in range(rounds):
        for name, stmt in IMPORTS.items():
            for label, tree in (trees.items() if "tangentia" in stmt else [("", None)]):
                env = bench_cold.child_env(tree)
                env["PYTHONDONTWRITEBYTECODE"] = "1"
                proc = subprocess.run([sys.executable, "-c",
                                       _IMPORT_CHILD.format(cpu=CPU[0], stmt=stmt)],
                                      capture_output=True, text=True, timeout=300, env=env,
                                      cwd=tempfile.gettempdir())
                if proc.returncode == 0:
                    times.setdefault((name, label), []).append(float(proc.stdout.split()[-1]))
    out = {k: statistics.median(v) for k, v in times.items()}
    for (name, label), t in out.items():
        print(f"{name:<14} {label:<6} {bench_cold._fmt(t):>9}   ({len(times[(name, label)])} "
              f"processes, CPU from the process's start)")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--modes", default="tiered,untiered,jax",
                    help="comma-separated: tiered, untiered (tangentia), jax")
    ap.add_argument("--cpu", type=int, default=None, help="the core to pin to (default: the last)")
    ap.add_argument("--tree", default=None, metavar="DIR", help="the tangentia tree to import")
    ap.add_argument("--ladder", nargs="?", const=LADDER, default=None,
                    help="compile time vs size to ~10k equations (family=n1,n2;...)")
    ap.add_argument("--no-jax", action="store_true", help="with --ladder: tangentia only")
    ap.add_argument("--imports", type=int, default=0, metavar="N",
                    help="the import statements' CPU only, median of N fresh processes each")
    ap.add_argument("--base", default=None, metavar="DIR",
                    help="with --imports: a second tangentia tree, interleaved (an A/B)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    CPU[0] = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    if args.imports:
        trees = {"tree": args.tree or ROOT, **({"base": args.base} if args.base else {})}
        out = run_imports(args.imports, trees)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"imports": [[n, t, s] for (n, t), s in out.items()]}, f, indent=1)
        return
    if args.ladder:
        libs = ["tangentia"] + ([] if args.no_jax else ["jax"])
        sizes = {}
        for fam, ns in bench_cold._family_sizes(args.ladder, ()):
            sizes.update(bench_cold.run_sizes(ns, CPU[0], libs, args.rounds, [fam], tree=args.tree))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"ladder": sizes}, f, indent=1)
        return
    cases = [c for c in (*SURVEY, *LIBRARY) if not args.only or c in args.only.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    results = survey(cases, modes, args.rounds, args.tree)
    print()
    print(table(results, modes))
    if args.json:
        for out in results.values():
            for m in modes:
                out[m].pop("result", None)
        with open(args.json, "w") as f:
            json.dump({"rounds": args.rounds, "modes": modes, "cases": results}, f, indent=1)


if __name__ == "__main__":
    main()
