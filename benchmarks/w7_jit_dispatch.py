"""Workload 7: call overhead of a jitted function over its compiled code.

``f(x) = sin(x) * 2 + 1`` is jitted and called on

* an array argument (f64[8]) and
* a Python scalar argument (``2.0``, weakly typed),

so the compiled work is negligible and the time is the jit wrapper's own cost:
argument flattening, signature lookup, cache hit, output conversion.  For
tangentia, per jit backend, the compiled code itself (the backend's callable
for the staged program, called directly) is timed as well: the difference is
the dispatch overhead.  JAX: ``jax.jit(f)`` called with a device array, with a
NumPy array and with a Python float, and the ``lower(...).compile()`` callable.

Ratios: tangentia jit call / JAX jit call for the same kind of argument.

Standalone: ``python benchmarks/w7_jit_dispatch.py [--quick]``.
"""
from __future__ import annotations

if __name__ == "__main__":  # standalone: the same as `python benchmarks/run.py --only jit_dispatch`
    import os
    import sys
    _here = os.path.dirname(os.path.abspath(__file__))
    os.execv(sys.executable, [sys.executable, os.path.join(_here, "run.py"), "--only",
                              "jit_dispatch", "--no-json", *sys.argv[1:]])

import numpy as np  # noqa: E402

from _harness import Impl, backend_note, peer, run_impls, tg_backends, tg_jit  # noqa: E402

NAME = "jit_dispatch"
TITLE = "jit dispatch: call overhead of jit(f), f(x) = sin(x)*2+1, array and Python scalar"
X = np.linspace(-1.0, 1.0, 8)
S = 2.0


def make_f(np_):
    return lambda x: np_.sin(x) * 2.0 + 1.0


def compiled_code(f, arg, backend):
    """The backend's compiled callable for ``f``'s program at ``arg``, as
    ``fn(*consts, *args) -> list``, and the constants."""
    import tangentia as tg
    from tangentia.interpreters import partial_eval as pe
    closed = tg.make_jaxpr(f)(arg)
    jaxpr = pe.convert_constvars_to_invars(closed.jaxpr)
    name, how = backend
    try:
        from tangentia.compiler.backend import compile_jaxpr
        fn = compile_jaxpr(jaxpr, name if how == "backend=" else None)
    except ImportError:  # before the backend interface: the NumPy backend's compiler
        from tangentia.compiler.numpy_backend import compile_jaxpr
        fn = compile_jaxpr(jaxpr)
    return fn, list(closed.consts)


def impls():
    def tg_call(kind):
        def make(backend):
            import tangentia.numpy as tnp
            f = tg_jit(make_f(tnp), backend)
            arg = X if kind == "array" else S
            return lambda: f(arg)
        return make

    def tg_raw(kind):
        def make(backend):
            import tangentia.numpy as tnp
            arg = X if kind == "array" else S
            fn, consts = compiled_code(make_f(tnp), arg, backend)
            a = X if kind == "array" else np.asarray(S)
            return lambda: fn(*consts, a)[0]
        return make

    def jax_call(kind):
        def build():
            jax, _ = peer("jax")
            import jax.numpy as jnp
            f = jax.jit(make_f(jnp))
            arg = {"device": jnp.asarray(X), "numpy": X, "scalar": S,
                   "compiled": jnp.asarray(X)}[kind]
            if kind == "compiled":
                f = f.lower(arg).compile()
            return lambda: f(arg).block_until_ready()
        return build

    def np_call(kind):
        def build():
            f = make_f(np)
            arg = X if kind == "array" else S
            return lambda: f(arg)
        return build

    out = []
    for b in tg_backends():
        n = b[0]
        out += [
            Impl(f"tangentia-jit-array[{n}]", f"tangentia[{n}]: jit(f)(array)",
                 (lambda b=b: tg_call("array")(b)), role="tangentia",
                 ratio_to=["jax-device", "jax-numpy", f"tangentia-code-array[{n}]"]),
            Impl(f"tangentia-code-array[{n}]", f"tangentia[{n}]: its compiled code(array)",
                 (lambda b=b: tg_raw("array")(b)), role="context", ratio_to=[]),
            Impl(f"tangentia-jit-scalar[{n}]", f"tangentia[{n}]: jit(f)(python float)",
                 (lambda b=b: tg_call("scalar")(b)), role="tangentia",
                 ratio_to=["jax-scalar", f"tangentia-code-scalar[{n}]"],
                 check_against="numpy-scalar"),
            Impl(f"tangentia-code-scalar[{n}]", f"tangentia[{n}]: its compiled code(0-d array)",
                 (lambda b=b: tg_raw("scalar")(b)), role="context", ratio_to=[],
                 check_against="numpy-scalar"),
        ]
    return out[:1] + [
        Impl("numpy-array", "numpy floor: f(array) in plain NumPy", np_call("array"),
             role="context"),
        Impl("numpy-scalar", "numpy floor: f(python float) in plain NumPy", np_call("scalar"),
             role="context", check=False),
    ] + out[1:] + [
        Impl("jax-device", "jax: jax.jit(f)(device array)", jax_call("device"), requires="jax"),
        Impl("jax-numpy", "jax: jax.jit(f)(numpy array)", jax_call("numpy"), requires="jax"),
        Impl("jax-compiled", "jax: jax.jit(f).lower(x).compile()(device array)",
             jax_call("compiled"), requires="jax", role="context"),
        Impl("jax-scalar", "jax: jax.jit(f)(python float)", jax_call("scalar"), requires="jax",
             check_against="numpy-scalar"),
    ]


def run(cfg, log=print):
    entries = run_impls(impls(), cfg, rtol=1e-14, atol=1e-14, log=log)
    ok = {e["impl"]: e for e in entries if e.get("status") == "ok"}
    notes = [backend_note()]
    overhead = {}
    for key, e in ok.items():
        for kind in ("array", "scalar"):
            if key.startswith(f"tangentia-jit-{kind}"):
                code = ok.get(key.replace("jit", "code"))
                if code is not None:
                    overhead[key] = e["median_s"] - code["median_s"]
                    e["dispatch_overhead_s"] = overhead[key]
    if overhead:
        notes.append("dispatch overhead (jit call - compiled code): " + ", ".join(
            f"{k} {v * 1e6:.2f} us" for k, v in overhead.items()))
    notes.append("JAX's lower().compile() callable is not a bare-code baseline (it is no "
                 "cheaper than jax.jit's C++ fast path), so JAX's dispatch overhead is not "
                 "separated; compare the jit call times")
    return {"title": TITLE, "entries": entries, "notes": notes}
