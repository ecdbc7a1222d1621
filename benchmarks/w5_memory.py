"""Workload 5: peak memory of a jitted chain of elementwise operations.

A chain of 20 elementwise operations on a float64 array of 10**6 elements,
written the way people write formulas: every intermediate has its own name
(t1 ... t20), so eager Python keeps all of them alive until the function
returns.  A compiled tangentia program deletes each intermediate right after
its last use, so its peak should be a small constant number of arrays.

Measured with tracemalloc (NumPy reports its data allocations to it): the
peak traced memory above the baseline during one call, after a warm-up call,
divided by the size of one array (8 MB).  The input array exists before the
call and is not counted; the output is.

tracemalloc cannot see allocations made outside NumPy (numba's runtime, XLA),
so every implementation -- tangentia per jit backend, eager tangentia, plain
NumPy and JAX -- is also measured by the same second method: the peak
resident memory (``VmHWM``, reset through ``/proc/self/clear_refs``) above
the resident memory before the call, in a fresh process per implementation
with glibc's mmap threshold fixed at 64 KiB (``MALLOC_MMAP_THRESHOLD_``), so
that every array is its own mapping and is returned to the system when freed.
For JAX the static buffer assignment of the compiled XLA program
(``compiled.memory_analysis()``: temp + output bytes) is shown as well.

Ratios: each backend's jit peak / the NumPy backend's jit peak (RSS method).
Target: tangentia jit peak <= 3 arrays.

Standalone: ``python benchmarks/w5_memory.py [--quick]``.
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only memory`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "memory", "--no-json", *sys.argv[1:]])

import gc  # noqa: E402
import os  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

from _harness import (_short_exc, backend_note, check_close, max_abs_diff, peer,  # noqa: E402
                      run_fresh, tg_backends, tg_jit, to_numpy_leaves)

NAME = "memory"
TITLE = "peak memory: chain of 20 elementwise ops on f64[10**6] (in units of one array)"
MMAP_THRESHOLD = 65536
SIZE = 10 ** 6
N_OPS = 20
TARGET_ARRAYS = 3.0


def make_chain(np_):
    def chain(x):
        t1 = np_.sin(x)
        t2 = t1 * 0.5
        t3 = t2 + x
        t4 = np_.tanh(t3)
        t5 = t4 * t4
        t6 = np_.exp(t5)
        t7 = t6 - x
        t8 = np_.cos(t7)
        t9 = t8 * 1.5
        t10 = t9 + x
        t11 = np_.sin(t10)
        t12 = t11 * t11
        t13 = t12 + 1.0
        t14 = np_.sqrt(t13)
        t15 = np_.log(t14)
        t16 = t15 * x
        t17 = np_.tanh(t16)
        t18 = t17 * 0.25
        t19 = np_.exp(t18)
        t20 = t19 - x
        return t20
    return chain


def traced_peak(fn, nbytes, repeats=3):
    """Median over ``repeats`` calls of the peak traced bytes above baseline."""
    fn()  # warm-up (jit compiles here)
    peaks = []
    for _ in range(repeats):
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            out = fn()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        peaks.append(peak - base)
        del out
    p = statistics.median(peaks)
    return {"peak_bytes": p, "peak_arrays": p / nbytes, "peaks_bytes": peaks}


def ideal_arrays(jaxpr, nbytes):
    """Peak number of live full-size intermediates if each is freed after its last use."""
    from tangentia.core import Var
    last = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.inputs:
            if type(a) is Var:
                last[a] = i
    outs = {a for a in jaxpr.outvars if type(a) is Var}
    inputs = set(jaxpr.invars) | set(jaxpr.constvars)

    def size(v):
        a = v.aval
        return int(np.prod(a.shape, dtype=np.int64)) * a.dtype.itemsize

    live, peak = set(), 0
    for i, eqn in enumerate(jaxpr.eqns):
        live |= {v for v in eqn.outputs}
        peak = max(peak, sum(size(v) for v in live if v not in inputs))
        live = {v for v in live if last.get(v, -1) > i or v in outs}
    return peak / nbytes



# ---------------------------------------------------------------------------
# Peak resident memory in a fresh process


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def build(kind, backend=None, how=None):
    """The zero-argument function measured for ``kind`` (also used in the child)."""
    x = np.linspace(-1.0, 1.0, SIZE)
    if kind == "numpy":
        chain = make_chain(np)
        return lambda: chain(x)
    if kind == "jax":
        jax, _ = peer("jax")
        import jax.numpy as jnp
        f = jax.jit(make_chain(jnp))
        xj = jnp.asarray(x)
        return lambda: f(xj).block_until_ready()
    import tangentia as tg
    import tangentia.numpy as tnp
    chain = make_chain(tnp)
    if kind == "tg-eager":
        return lambda: chain(x)
    if kind == "tg-jit":
        f = tg_jit(chain, (backend, how))
    else:  # "tg-jit-grad"
        f = tg_jit(tg.grad(lambda x: tnp.sum(chain(x))), (backend, how))
    return lambda: f(x)


def rss_peak_child(kind, backend=None, how=None, repeats=3):
    """Run in a fresh process: print the median peak RSS above baseline, in bytes."""
    fn = build(kind, backend, how)
    out = fn()  # warm-up (compiles)
    ref = make_chain(np)(np.linspace(-1.0, 1.0, SIZE))
    agree = kind == "tg-jit-grad" or bool(np.allclose(np.asarray(out), ref, 1e-8, 1e-10))
    del out
    peaks = []
    for _ in range(repeats):
        gc.collect()
        # The numba backend keeps freed large blocks for the next call (numba_backend/pool.py):
        # they are emptied first, so that the call's own peak is measured (with the blocks
        # held, the call reuses resident pages and its peak above VmRSS reads ~0)
        pool = sys.modules.get("tangentia.compiler.numba_backend.pool")
        if pool is not None:
            pool.release()
        base = _status_kb("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        out = fn()
        peaks.append((_status_kb("VmHWM") - base) * 1024)
        del out
    print(json.dumps({"peak_bytes": statistics.median(peaks), "peaks_bytes": peaks,
                      "agree": agree}))


def rss_entries(nbytes, log):
    """Peak RSS of every implementation, each in its own fresh process."""
    entries = []
    env = {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD)}
    todo = [(f"tangentia-rss[{n}]", f"tangentia[{n}]: jit(chain), peak RSS", "tangentia",
             "tg-jit", n, how) for n, how in tg_backends()]
    todo += [(f"tangentia-grad-rss[{n}]", f"context: tangentia[{n}] jit(grad(sum o chain)), "
              "peak RSS", "context", "tg-jit-grad", n, how) for n, how in tg_backends()]
    todo += [("tangentia-eager-rss", "tangentia: eager chain (no jit), peak RSS", "context",
              "tg-eager", None, None),
             ("numpy-rss", "context: plain numpy, same code, peak RSS", "context", "numpy",
              None, None),
             ("jax-rss", "jax: jax.jit(chain), peak RSS", "peer", "jax", None, None)]
    for key, label, role, kind, backend, how in todo:
        e = {"impl": key, "label": label, "role": role, "metric": "memory", "method": "rss"}
        entries.append(e)
        if kind == "jax" and peer("jax")[0] is None:
            e.update(status="n/a", reason=peer("jax")[1])
            continue
        try:
            res = run_fresh(f"import w5_memory as w; w.rss_peak_child({kind!r}, {backend!r}, "
                            f"{how!r})", env=env)
        except Exception as ex:  # noqa: BLE001
            e.update(status="skipped" if role == "tangentia" else "error", reason=_short_exc(ex))
            log(f"    {label:<56} {e['status'].upper()}: {e['reason']}")
            continue
        if not res.pop("agree"):
            e.update(status="mismatch", reason="disagrees with numpy")
            log(f"    {label:<56} MISMATCH")
            continue
        e.update(res, status="ok", peak_arrays=res["peak_bytes"] / nbytes)
        log(f"    {label:<56} peak = {e['peak_arrays']:.2f} arrays")
    base = next((e for e in entries if e["impl"] == "tangentia-rss[numpy]"
                 and e.get("status") == "ok"), None)
    for e in entries:
        if e["role"] == "tangentia" and e.get("status") == "ok":
            e["target"] = TARGET_ARRAYS
            e["target_met"] = e["peak_arrays"] <= TARGET_ARRAYS
            if base is not None and e is not base and base["peak_bytes"] > 0:
                e["ratios"] = {"tangentia-rss[numpy]": e["peak_bytes"] / base["peak_bytes"]}
    return entries


def run(cfg, log=print):
    x = np.linspace(-1.0, 1.0, SIZE)
    nbytes = x.nbytes
    entries = []
    notes = []
    ref = make_chain(np)(x)

    def add(impl, label, role, fn, **extra):
        e = {"impl": impl, "label": label, "role": role, "metric": "memory"}
        e.update(extra)
        entries.append(e)
        try:
            out = fn()
            if "grad" not in impl:
                msg = check_close([ref], to_numpy_leaves(out), 1e-8, 1e-10)
                if msg is not None:
                    e.update(status="mismatch", reason=f"disagrees with numpy: {msg}")
                    log(f"    {label:<52} MISMATCH: {msg}")
                    return e
                diff = max_abs_diff([ref], to_numpy_leaves(out))
                e["agreement"] = f"allclose (max abs diff {diff:.2g})"
            e.update(traced_peak(fn, nbytes))
        except Exception as ex:  # noqa: BLE001
            e.update(status="skipped" if role == "tangentia" else "error",
                     reason=_short_exc(ex))
            log(f"    {label:<52} {e['status'].upper()}: {e['reason']}")
            return e
        e["status"] = "ok"
        log(f"    {label:<52} peak = {e['peak_arrays']:.2f} arrays")
        return e

    try:
        import tangentia as tg
        import tangentia.numpy as tnp
        chain_tg = make_chain(tnp)
        numpy_backend = next((b for b in tg_backends() if b[0] == "numpy"), tg_backends()[0])
        jitted = tg_jit(chain_tg, numpy_backend)
        try:
            ideal = ideal_arrays(tg.make_jaxpr(chain_tg)(x).jaxpr, nbytes)
        except Exception as ex:  # noqa: BLE001
            ideal = None
            notes.append(f"could not compute the ideal peak: {_short_exc(ex)}")
        e = add("tangentia", f"tangentia[{numpy_backend[0]}]: tg.jit(chain), tracemalloc",
                "tangentia",
                lambda: jitted(x), target=TARGET_ARRAYS, ideal_arrays=ideal)
        if e.get("status") == "ok":
            e["target_met"] = e["peak_arrays"] <= TARGET_ARRAYS
        if ideal is not None:
            notes.append(f"ideal peak with freeing after last use (from the program): "
                          f"{ideal:.0f} arrays (the operand being read + the result being written)")
        add("tangentia-eager", "tangentia: eager chain (no jit), tracemalloc", "context",
            lambda: chain_tg(x))
        gsum = tg_jit(tg.grad(lambda x: tnp.sum(chain_tg(x))), numpy_backend)
        add("tangentia-jit-grad", "context: tg.jit(tg.grad(sum o chain)), tracemalloc",
            "context", lambda: gsum(x))
    except Exception as ex:  # noqa: BLE001
        entries.append({"impl": "tangentia", "label": "tangentia", "role": "tangentia",
                        "metric": "memory", "status": "skipped", "reason": _short_exc(ex)})
        log(f"    tangentia SKIPPED: {_short_exc(ex)}")

    add("numpy", "context: plain numpy, same code, tracemalloc", "context",
        lambda: make_chain(np)(x))

    # JAX: static buffer assignment of the compiled program.
    e = {"impl": "jax", "label": "jax: jax.jit(chain), XLA memory_analysis (static)",
         "role": "peer", "metric": "memory"}
    entries.append(e)
    jax, reason = peer("jax")
    if jax is None:
        e.update(status="n/a", reason=reason)
        log(f"    {e['label']:<52} n/a ({reason})")
    else:
        try:
            import jax.numpy as jnp
            xj = jnp.asarray(x)
            compiled = jax.jit(make_chain(jnp)).lower(xj).compile()
            out = np.asarray(compiled(xj))
            msg = check_close([ref], [out], 1e-8, 1e-10)
            ma = compiled.memory_analysis()
            if msg is not None:
                e.update(status="mismatch", reason=f"disagrees with numpy: {msg}")
            elif ma is None:
                e.update(status="n/a", reason="memory_analysis() returned None on this backend")
            else:
                b = ma.temp_size_in_bytes + ma.output_size_in_bytes
                e.update(status="ok", peak_bytes=b, peak_arrays=b / nbytes,
                         temp_bytes=ma.temp_size_in_bytes, output_bytes=ma.output_size_in_bytes,
                         agreement=f"allclose (max abs diff {max_abs_diff([ref], [out]):.2g})")
        except Exception as ex:  # noqa: BLE001
            e.update(status="error", reason=_short_exc(ex))
        if e["status"] == "ok":
            log(f"    {e['label']:<52} peak = {e['peak_arrays']:.2f} arrays "
                f"(temp {e['temp_bytes']} B + output {e['output_bytes']} B)")
        else:
            log(f"    {e['label']:<52} {e['status']}: {e['reason']}")
    notes.append("tracemalloc sees NumPy's allocations only (so it is shown for the NumPy "
                 "backend); the JAX 'static' number is XLA's buffer assignment (XLA fuses the "
                 "chain into one loop), not a measured peak")
    if hasattr(os, "sched_getaffinity") and os.path.exists("/proc/self/clear_refs"):
        entries += rss_entries(nbytes, log)
        notes.append("peak RSS: fresh process per row, VmHWM above VmRSS before the call, "
                     f"MALLOC_MMAP_THRESHOLD_={MMAP_THRESHOLD}; ratio = peak / the NumPy "
                     "backend's jit peak")
    else:
        notes.append("peak RSS not measured (needs Linux /proc)")
    notes.append(backend_note())
    return {"title": TITLE, "entries": entries, "notes": notes, "array_bytes": nbytes}
