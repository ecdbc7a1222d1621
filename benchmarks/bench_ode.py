"""Benchmark: the odeint pendulum, gradient and forward solve, against JAX and
two hand-written numba references.

    pend(y, t, b, c) = [y[1], -b * y[1] - c * sin(y[0])]      (damped pendulum)
    loss(y0, b, c)   = sum(odeint(pend, y0, ts, b, c)[-1] ** 2),  ts = linspace(0, 10, 101)

at y0 = [pi - 0.1, 0], b = 0.25, c = 5.0, rtol = atol = 1.4e-8, float64.

Section "gradient": ``grad(loss, argnums=(0, 1, 2))``

* tangentia ``jit(grad(loss))`` per jit backend, and eager ``grad(loss)``
  with each backend running the eager control flow;
* JAX ``jax.jit(jax.grad(loss))`` and eager ``jax.grad(loss)``
  (``jax.experimental.ode.odeint``);
* reference (a), the "physical limit": numba Dormand-Prince with ONE adaptive
  backward sweep of the adjoint system (``_ode_numba.grad_one_sweep``);
* reference (b): a numba transcription of JAX's exact algorithm, including its
  backward pass that restarts an integration between every two output times
  (``_ode_numba.grad_jax_algorithm``).

Both references are checked against JAX's gradient: (b) to rtol 1e-6 (it
agrees to ~1e-13), (a) to 2e-6 of the largest component (it agrees to ~1.5e-6,
as JAX does with finite differences); every gradient is also compared with
central finite differences of SciPy's tightly solved loss (shown in a note).
tangentia is checked against JAX to 1e-4 (its dense output and error norm
differ slightly from JAX's, so the two carry different integration errors).

Section "forward": ``odeint(pend, y0, ts, b, c)`` alone (all 101 outputs), the
same implementations (the references' forward pass is the same code for (a) and
(b): JAX's forward algorithm).

Section "first call in a fresh process": import time and first-call time
(trace + compile + run) of ``jit(grad(loss))`` in a new interpreter, for
tangentia per backend with an empty compilation cache (``TANGENTIA_CACHE_DIR``
pointing to a new directory) and again with the cache that run filled, and for
JAX (default settings, no persistent cache).

Ratios are time / JAX jit time and time / reference (a) time.

Standalone: ``python benchmarks/bench_ode.py [--quick]`` (= ``run.py --only ode``).
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only ode`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only", "ode",
                              "--no-json", *sys.argv[1:]])

import json  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from _harness import (Impl, _short_exc, backend_note, in_backend, peer, run_fresh,  # noqa: E402
                      run_impls, tg_backends, tg_impls, tg_jit)

NAME = "ode"
TITLE = "odeint pendulum: grad and forward solve vs JAX and numba references"
Y0 = np.array([np.pi - 0.1, 0.0])
TS = np.linspace(0.0, 10.0, 101)
B, C = 0.25, 5.0
RTOL = ATOL = 1.4e-8
# Reference (a) integrates the adjoint with its own step sequence, so its gradient
# carries a different ~1e-6 integration error than JAX's: it must agree to 2e-6
# of the gradient's largest component (|g| ~ 25), normwise.  (b) must match to 1e-6.
REF_A_ATOL = 2e-6 * 25.0


def make_loss(np_, odeint_):
    def pend(y, t, b, c):
        return np_.stack([y[1], -b * y[1] - c * np_.sin(y[0])])

    def solve(y0, b, c):
        return odeint_(pend, y0, TS, b, c)

    def loss(y0, b, c):
        return np_.sum(solve(y0, b, c)[-1] ** 2)

    return loss, solve


def flat(g):
    y0, b, c = g
    return np.concatenate([np.asarray(y0, np.float64).ravel(), [float(b), float(c)]])


def finite_differences():
    """Central differences of SciPy's (tightly solved) loss; None without SciPy."""
    try:
        from scipy.integrate import odeint as sp_odeint
    except Exception:  # noqa: BLE001 - SciPy is optional here
        return None

    def loss(y0, b, c):
        ys = sp_odeint(lambda y, t: [y[1], -b * y[1] - c * np.sin(y[0])], y0, TS,
                       rtol=1e-12, atol=1e-12)
        return float(np.sum(ys[-1] ** 2))

    eps = 1e-5
    out = [(loss(Y0 + eps * e, B, C) - loss(Y0 - eps * e, B, C)) / (2 * eps) for e in np.eye(2)]
    out.append((loss(Y0, B + eps, C) - loss(Y0, B - eps, C)) / (2 * eps))
    out.append((loss(Y0, B, C + eps) - loss(Y0, B, C - eps)) / (2 * eps))
    return np.array(out)


# ---------------------------------------------------------------------------
# Implementations


def _tg(kind, jit):
    def make(backend):
        import tangentia as tg
        import tangentia.numpy as tnp
        from tangentia.experimental.ode import odeint
        loss, solve = make_loss(tnp, odeint)
        f = tg.grad(loss, argnums=(0, 1, 2)) if kind == "grad" else solve
        if jit:
            f = tg_jit(f, backend)
            return lambda: f(Y0, B, C)
        return in_backend(backend, lambda: f(Y0, B, C))
    return make


def _jax(kind, jit):
    def build():
        jax, _ = peer("jax")
        import jax.numpy as jnp
        from jax.experimental.ode import odeint
        loss, solve = make_loss(jnp, odeint)
        f = jax.grad(loss, argnums=(0, 1, 2)) if kind == "grad" else solve
        if jit:
            f = jax.jit(f)
        y0 = jnp.asarray(Y0)
        return lambda: jax.block_until_ready(f(y0, B, C))
    return build


def _numba_ref(which):
    def build():
        import _ode_numba as R
        args = np.array([B, C])
        if which == "a":
            def g():
                y_bar, a_bar = R.grad_one_sweep(R.PEND, R.PEND_ADJOINT, Y0, TS, args, RTOL, ATOL)
                return y_bar, a_bar[0], a_bar[1]
        elif which == "b":
            def g():
                y_bar, a_bar = R.grad_jax_algorithm(R.PEND, R.PEND_AUG_JAX, Y0, TS, args,
                                                    RTOL, ATOL)
                return y_bar, a_bar[0], a_bar[1]
        else:  # forward
            ys = np.empty((TS.shape[0], Y0.shape[0]))

            def g():
                R.odeint(R.PEND, Y0, TS, args, RTOL, ATOL, ys)
                return ys
        return g
    return build


def _impls(kind):
    bs = tg_backends()
    jit_to = ["jax-jit", "ref-a", "ref-b"] if kind == "grad" else ["jax-jit", "ref-fwd"]
    eager_to = ["jax-eager", "jax-jit", "ref-a"] if kind == "grad" else ["jax-eager", "ref-fwd"]
    what = "jit(grad(loss))" if kind == "grad" else "jit(odeint)"
    eager_what = "grad(loss)" if kind == "grad" else "odeint"
    tol = dict(rtol=1e-4, atol=1e-6)  # tangentia vs JAX: different dense output / error norm
    impls = tg_impls("tangentia-jit", f"tangentia[{{backend}}]: {what}", _tg(kind, True), bs,
                     ratio_to=jit_to, **tol)
    impls += tg_impls("tangentia-eager", f"tangentia[{{backend}}]: eager {eager_what}",
                      _tg(kind, False), bs, ratio_to=eager_to, **tol)
    impls += [
        Impl("jax-jit", f"jax: jax.{what}", _jax(kind, True), requires="jax", ratio_to=[],
             **tol),
        Impl("jax-eager", f"jax: jax.{eager_what} (no outer jit)", _jax(kind, False),
             requires="jax", ratio_to=["jax-jit"], check_against="jax-jit", rtol=1e-12,
             atol=1e-12),
    ]
    if kind == "grad":
        impls += [
            Impl("ref-a", "reference (a): numba DOPRI5, one-sweep adjoint", _numba_ref("a"),
                 role="reference", ratio_to=["jax-jit"], check_against="jax-jit",
                 rtol=0.0, atol=REF_A_ATOL),
            Impl("ref-b", "reference (b): numba transcription of JAX's odeint",
                 _numba_ref("b"), role="reference", ratio_to=["jax-jit", "ref-a"],
                 check_against="jax-jit", rtol=1e-6, atol=1e-6),
        ]
    else:
        impls.append(Impl("ref-fwd", "reference: numba DOPRI5 forward (JAX's algorithm)",
                          _numba_ref("fwd"), role="reference", ratio_to=["jax-jit"],
                          check_against="jax-jit", rtol=1e-8, atol=1e-10))
    return impls


# ---------------------------------------------------------------------------
# First call in a fresh process


def fresh_first_call(lib, backend=None, how=None):
    """Run in a child process: print {"import_s", "first_s"} as JSON."""
    t0 = time.perf_counter()
    if lib == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.experimental.ode import odeint
        t1 = time.perf_counter()
        loss, _ = make_loss(jnp, odeint)
        jax.block_until_ready(jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(jnp.asarray(Y0), B, C))
    else:
        import tangentia as tg
        import tangentia.numpy as tnp
        from tangentia.experimental.ode import odeint
        t1 = time.perf_counter()
        loss, _ = make_loss(tnp, odeint)
        tg_jit(tg.grad(loss, argnums=(0, 1, 2)), (backend, how))(Y0, B, C)
    t2 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "first_s": t2 - t1}))


def first_call_section(log):
    entries = []

    def child(label, key, lib, env=None, backend=None, how=None, **extra):
        e = {"impl": key, "label": label, "role": "tangentia" if lib == "tangentia" else "peer",
             "metric": "first_call"}
        e.update(extra)
        entries.append(e)
        if lib == "jax" and peer("jax")[0] is None:
            e.update(status="n/a", reason=peer("jax")[1])
            return
        code = (f"import bench_ode; bench_ode.fresh_first_call({lib!r}, {backend!r}, {how!r})")
        try:
            e.update(run_fresh(code, env=env))
            e["status"] = "ok"
            log(f"    {label:<56} import {e['import_s']:.2f} s, first call {e['first_s']:.3f} s")
        except Exception as ex:  # noqa: BLE001
            e.update(status="error" if lib == "jax" else "skipped", reason=_short_exc(ex))
            log(f"    {label:<56} {e['status'].upper()}: {e['reason']}")

    child("jax: jax.jit(jax.grad(loss)), fresh process", "jax", "jax")
    with tempfile.TemporaryDirectory(prefix="tangentia-bench-cache-") as cache:
        for name, how in tg_backends():
            env = {"TANGENTIA_CACHE_DIR": os.path.join(cache, name)}
            child(f"tangentia[{name}]: jit(grad(loss)), fresh process, empty cache",
                  f"tangentia[{name}]-cold", "tangentia", env, name, how, cache="empty")
            child(f"tangentia[{name}]: jit(grad(loss)), fresh process, warm cache",
                  f"tangentia[{name}]-warm", "tangentia", env, name, how, cache="warm")
    jax_e = entries[0]
    for e in entries[1:]:
        if e.get("status") == "ok" and jax_e.get("status") == "ok":
            e["ratios"] = {"jax": e["first_s"] / jax_e["first_s"]}
    return {"title": "odeint pendulum: first call of jit(grad(loss)) in a fresh process "
                     "(trace + compile + run; import time separate)",
            "entries": entries,
            "notes": ["ratio = tangentia first call / JAX first call; 'empty cache' starts with "
                      "a new TANGENTIA_CACHE_DIR, 'warm cache' reuses the one that run filled"]}


# ---------------------------------------------------------------------------


def run(cfg, log=print):
    log("  gradient")
    outputs = {}
    grad_entries = run_impls(_impls("grad"), cfg, log=log, outputs=outputs)
    log("  forward solve")
    fwd_entries = run_impls(_impls("forward"), cfg, log=log)
    log("  first call in a fresh process")
    first = first_call_section(log)

    # Agreement with JAX and with finite differences, stated explicitly.
    notes = []
    grads = {k.replace("tangentia-jit", "tangentia"): np.concatenate([a.ravel() for a in v])
             for k, v in outputs.items() if k in ("jax-jit", "ref-a", "ref-b")
             or k.startswith("tangentia-jit")}
    fd = finite_differences()
    agreement = {}
    scale = None
    if "jax-jit" in grads:
        scale = np.max(np.abs(grads["jax-jit"]))
        for k, g in grads.items():
            if k != "jax-jit":
                agreement[f"{k} vs jax"] = float(np.max(np.abs(g - grads["jax-jit"])) / scale)
    if fd is not None:
        for k, g in grads.items():
            agreement[f"{k} vs finite differences"] = float(
                np.max(np.abs(g - fd)) / np.max(np.abs(fd)))
    if agreement:
        notes.append("max relative gradient difference: " + ", ".join(
            f"{k} {v:.2g}" for k, v in agreement.items()))
    for ref in ("ref-a", "ref-b"):
        key = f"{ref} vs jax"
        if key in agreement and agreement[key] > 2e-6:
            notes.append(f"WARNING: {ref} differs from JAX's gradient by {agreement[key]:.2g} "
                         "(expected ~1e-6)")
    if "jax-jit" in grads:
        notes.append("gradient (jax): " + np.array2string(grads["jax-jit"], precision=8))
    notes.append(backend_note())
    return {"title": TITLE,
            "sections": [
                {"title": "odeint pendulum: grad(loss) w.r.t. (y0, b, c), ts = linspace(0, 10, "
                          "101), rtol = atol = 1.4e-8", "entries": grad_entries, "notes": []},
                {"title": "odeint pendulum: forward solve alone (101 outputs)",
                 "entries": fwd_entries, "notes": []},
                first],
            "notes": notes, "agreement": agreement}
