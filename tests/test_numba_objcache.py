"""The machine-code cache (``numba_backend.objcache``): a program numba compiled in one
process is loaded in the next without numba, bit for bit the same; its key tells programs,
types, shapes, literals, settings and versions apart; a damaged entry is a miss."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.compiler.numba_backend import NumbaBackend, objcache

import test_interrupt
from _numba_util import compile_numba, program

pytest.importorskip("numba")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TANGENTIA_NUMBA_FAST_LOAD", "1")     # (the suite turns it off: conftest)
    return tmp_path


def _f(x, y):
    return tnp.sum(tnp.sin(x) * y + 0.5, axis=0), x * 2.0


def _args(dtype=np.float64, n=3):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 2)).astype(dtype), rng.standard_normal((n, 2)).astype(dtype)


def test_key_tells_programs_apart(cache, monkeypatch):
    key = objcache.program_key
    base = key(program(_f, *_args())[0])
    assert base == key(program(_f, *_args())[0])          # the same program traced again
    others = [
        program(_f, *_args(np.float32))[0],                                   # dtype
        program(_f, *_args(n=4))[0],                                          # shape
        program(lambda x, y: (tnp.sum(tnp.sin(x) * y + 0.25, axis=0), x * 2.0), *_args())[0],   # literal
        program(lambda x, y: (tnp.sum(tnp.cos(x) * y + 0.5, axis=0), x * 2.0), *_args())[0],    # operation
        program(lambda x, y: (tnp.sum(tnp.sin(x) * y + 0.5, axis=1), x * 2.0), *_args())[0],    # parameter
        program(lambda x, y: (tnp.sum(tnp.sin(y) * x + 0.5, axis=0), x * 2.0), *_args())[0],    # wiring
    ]
    keys = {base} | {key(j) for j in others}
    assert len(keys) == 1 + len(others) and None not in keys
    jaxpr = program(_f, *_args())[0]
    monkeypatch.setenv("TANGENTIA_NUMBA_IRBLOCK", "0")                 # a setting
    assert key(jaxpr) not in keys
    monkeypatch.delenv("TANGENTIA_NUMBA_IRBLOCK")
    monkeypatch.setattr(objcache, "_VERSION", ["another library"])     # a version
    assert key(jaxpr) not in keys


def test_loaded_code_gives_the_same_bits(cache):
    jaxpr, args = program(_f, *_args())
    native = compile_numba(jaxpr, NumbaBackend())
    entries = os.listdir(cache / "numba" / "fast")
    assert entries == [objcache.program_key(jaxpr) + ".bin"]
    loaded = objcache.load(jaxpr)
    assert loaded is not None and loaded.entry is not native.entry
    for a, b in zip(loaded(*args), native(*args)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    # packed scalar inputs (one float64 array)
    jaxpr, args = program(lambda a, b, c, d, n: (a * b - c / d, n * 0.0 + 1.5 * a), 1.0, 2.0, 3.0, 4.0, 2.0)
    native = compile_numba(jaxpr, NumbaBackend())
    loaded = objcache.load(jaxpr)
    assert loaded is not None and loaded.packed == native.packed != ()
    for a, b in zip(loaded(*args), native(*args)):
        assert a.tobytes() == b.tobytes()
    with pytest.raises(TypeError, match="takes 5 arguments"):
        loaded(1.0)


def test_programs_with_compile_units(cache, monkeypatch):
    """A program calling a compile unit (a loop body of its own module): the unit's object
    file is kept and linked too, its address passed as numba's code passes it."""
    import weakref
    from tangentia import lax
    from tangentia.compiler.numba_backend import native
    monkeypatch.setattr(native, "UNIT_MIN_COST", 20)
    monkeypatch.setattr(native, "_UNITS", weakref.WeakValueDictionary())
    monkeypatch.setattr(objcache, "_defaults", lambda: True)   # (kept in this test's cache only)

    def step(c):
        i, y = c
        for _ in range(3):
            y = tnp.sin(y) * 1.25 + tnp.cos(y[::-1]) * 0.5 - y * y * 0.125
        return i + 1, y
    jaxpr, args = program(lambda y: lax.while_loop(lambda c: c[0] < 6, step, (0, y))[1] * 2.0,
                          np.array([0.1, -0.4, 0.7]))
    native_fn = compile_numba(jaxpr, NumbaBackend())
    assert len(native_fn.units) == 1
    loaded = objcache.load(jaxpr)
    assert loaded is not None
    assert loaded(*args)[0].tobytes() == native_fn(*args)[0].tobytes()


@pytest.mark.parametrize("damage", ["flip", "truncate", "header", "cpu"])
def test_damaged_entry_is_a_miss(cache, damage):
    jaxpr, args = program(lambda x: tnp.tanh(x) * 3.0, np.linspace(0.0, 1.0, 5))
    native = compile_numba(jaxpr, NumbaBackend())
    path = cache / "numba" / "fast" / (objcache.program_key(jaxpr) + ".bin")
    data = path.read_bytes()
    if damage == "flip":
        data = data[:-100] + bytes([data[-100] ^ 1]) + data[-99:]
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "header":
        data = b"x" + data[1:]
    else:   # a whole entry made for another CPU
        import hashlib
        import pickle
        payload = data.split(b"\n", 2)[2]
        e = pickle.loads(payload)
        e["cpu"] = "another cpu"
        payload = pickle.dumps(e)
        data = objcache.FORMAT + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    path.write_bytes(data)
    assert objcache.load(jaxpr) is None
    assert native(*args)[0].tobytes() == (np.tanh(args[0]) * 3.0).tobytes()


def test_concurrent_writers_leave_a_whole_entry(cache):
    jaxpr, args = program(lambda x: tnp.exp(x) - 1.0, np.linspace(0.0, 1.0, 4))
    native = compile_numba(jaxpr, NumbaBackend())
    path = cache / "numba" / "fast" / (objcache.program_key(jaxpr) + ".bin")
    whole = path.read_bytes()
    path.unlink()
    done = []
    threads = [threading.Thread(target=lambda: done.append(objcache.save(jaxpr, native))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert True in done and path.read_bytes() == whole
    assert not [n for n in os.listdir(path.parent) if n.endswith(".tmp")]
    assert objcache.load(jaxpr)(*args)[0].tobytes() == native(*args)[0].tobytes()


def test_programs_indexing_with_arrays(cache):
    """An index spec's ARRAY marker (``x[idx]``, ``x.at[idx]``) and Ellipsis are described
    (such programs had no key: a gather of neighbours compiled again in every process);
    the key tells the specs apart, and the kept code gives the same bits."""
    nb = (np.arange(6) + 1) % 6
    key = objcache.program_key
    x = np.linspace(0.0, 1.0, 12).reshape(6, 2)
    specs = [lambda x: x[nb] * 2.0, lambda x: x.T[..., nb] * 2.0, lambda x: x.T[:, nb] * 2.0,
             lambda x: x.at[nb].add(1.0), lambda x: x.at[nb, 1].set(0.5), lambda x: x[nb, 0] * 2.0]
    keys = [key(program(f, x)[0]) for f in specs]
    assert None not in keys and len(set(keys)) == len(keys)
    # (the index array is a constant: an input of the program, its value not in the key)
    assert keys[0] == key(program(specs[0], x)[0]) == key(program(lambda x: x[nb[::-1]] * 2.0, x)[0])
    jaxpr, args = program(lambda x: tnp.sum(x[nb] * x + x.at[nb[::-1], 0].add(x[:, 1])), x)
    native = compile_numba(jaxpr, NumbaBackend())
    loaded = objcache.load(jaxpr)
    assert loaded is not None and loaded.entry is not native.entry
    assert loaded(*args)[0].tobytes() == native(*args)[0].tobytes()


def test_opaque_parameters_have_no_key():
    jaxpr = program(lambda x: x + 1.0, 1.0)[0]
    eqn = jaxpr.eqns[0]
    odd = type(eqn)(eqn.prim, eqn.inputs, eqn.outputs, dict(eqn.params, odd=object()))
    assert objcache.program_key(type(jaxpr)([], jaxpr.invars, [odd], jaxpr.outvars)) is None


def test_an_empty_cache_computes_no_key(cache, monkeypatch):
    """A first run (nothing kept yet) looks nothing up: no key is computed on the first
    call's path (the library's files, ~1-7 ms once per process), one directory read."""
    import tangentia.compiler.numba_backend as nb
    calls = []
    monkeypatch.setattr(objcache, "load", lambda jaxpr: calls.append(jaxpr))
    monkeypatch.setattr(nb, "_COMPILER", ())          # (as if the compiler were not imported)
    jaxpr = program(lambda x: x * 3.0 - 1.0, np.ones(3))[0]
    fast = os.path.join(str(cache), "numba", "fast")
    assert nb.fast_dir() == fast and not nb._fast_entries()       # no directory
    os.makedirs(fast)
    open(os.path.join(fast, "x.bin.123.tmp"), "wb").close()        # a write in progress
    assert nb._fast_load(jaxpr) is None and calls == []
    open(os.path.join(fast, "0" * 40 + ".bin"), "wb").close()
    assert nb._fast_load(program(lambda x: x * 3.0 - 2.0, np.ones(3))[0]) is None and len(calls) == 1
    assert fast in nb._FAST_DIRS


_CHILD = """
import json, sys
import numpy as np
import tangentia as tg, tangentia.numpy as tnp
from tangentia.compiler.numba_backend import objcache
def f(x):
    return tnp.sum(tnp.sin(x) * 1.5 + x * x)
g = tg.jit(tg.grad(f), backend="numba")
x = np.linspace(0.0, 1.0, 6)
r = np.asarray(g(x))
print(json.dumps({"r": r.tobytes().hex(), "numba": "numba" in sys.modules, "stats": objcache.STATS}))
"""


def test_a_new_process_loads_without_numba(cache):
    """The warm-cache first call: the cache filled here, the program loaded in a fresh
    interpreter that never imports numba, tiered or not; the same bits."""
    def f(x):
        return tnp.sum(tnp.sin(x) * 1.5 + x * x)
    x = np.linspace(0.0, 1.0, 6)
    # (the child runs a copy of the library, whose key this process computes: edits to the
    # working tree meanwhile do not make it miss)
    root = test_interrupt.library_snapshot(cache / "src")
    want = np.asarray(tg.jit(tg.grad(f), backend="numba")(x))
    env = test_interrupt.child_env(dict(os.environ, TANGENTIA_CACHE_DIR=str(cache),
                                        TANGENTIA_JIT_TIERED="0"), root)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_CHILD)], env=env, capture_output=True,
                         text=True, timeout=120, cwd=root)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["numba"] is False and got["stats"]["loaded"] == 1
    assert bytes.fromhex(got["r"]) == want.tobytes()


@pytest.mark.timeout(120)
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process: POSIX")
def test_sigint_stops_a_loaded_loop(cache, monkeypatch):
    """A loop loaded from the machine-code cache polls for Ctrl-C as numba's does
    (``sigint``): the child of test_interrupt, minus its look at the source (which
    imports the compiler), loads the endless while loop without numba."""
    from tangentia import lax

    def f(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0), (0, x))[1]
    root = test_interrupt.library_snapshot(cache / "src")    # (test_a_new_process_loads...)
    tg.jit(f, backend="numba")(1.0, 10)          # fills the cache, with the child's next
    tg.jit(lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2.0),
                                    (0, x))[1], backend="numba")(1.5)    # program too
    child = "\n".join(line for line in test_interrupt.CHILD.splitlines()
                      if "source(" not in line and "if _interrupted():" not in line) \
        .replace('print("READY", flush=True)', 'print("READY", flush=True); print("NUMBA", "numba" in sys.modules, flush=True)') \
        .replace('print("PYTHON_INTERRUPT", flush=True)',
                 'print("PYTHON_INTERRUPT", flush=True); print("NUMBA_END", "numba" in sys.modules, flush=True)')
    assert child.count("READY") == 1 and "source(" not in child and "NUMBA_END" in child
    monkeypatch.setattr(test_interrupt, "CHILD", child)
    words = test_interrupt._run_child("while", cache, root)
    assert words["NUMBA"][0] == ["False"]      # loaded without numba, interrupted all the same
    assert words["NUMBA_END"][0] == ["False"]  # and the next program loaded too
