"""What numba serializes for an object-mode fallback (``codegen._Fallback``): numba pickles
the callables an object-mode block reads into the compiled code; a fallback pickles as a
lookup of itself by a process-local token, never as its closure (the equation's params:
programs, rules, closed-over arrays), which a custom_vjp's backward pass made seconds of
cloudpickle per compile."""
from __future__ import annotations

import gc
import os
import pickle
import threading

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from numba.core import serialize  # noqa: E402
from tangentia.compiler.numba_backend import codegen  # noqa: E402
from _numba_util import compile_numba, empty_cache, program  # noqa: E402

BIG = np.linspace(0.0, 1.0, 200_000)   # 1.6 MB closed over by the callback


def _scaled(x: np.ndarray) -> np.ndarray:
    return np.asarray(x * BIG[-1] * 2.0 + BIG[:1].sum())


def _f(x):
    y = tg.pure_callback(lambda a: _scaled(a) + 0.0 * BIG[:3].sum(),
                         tg.ShapeDtypeStruct(x.shape, x.dtype), x)
    return tnp.sin(y)


def _callback_eqn():
    jaxpr, full = program(_f, np.array([0.5, 1.5]))
    eqn = next(e for e in jaxpr.eqns if e.prim.name == "pure_callback")
    return jaxpr, full, eqn


def test_a_fallback_pickles_as_a_small_lookup_of_itself():
    _, _, eqn = _callback_eqn()
    fb = codegen._fallback(eqn)
    closure = serialize.dumps(fb.fn)      # what numba pickled before: the closure by value
    assert len(closure) > 1_000_000
    for dumps in (pickle.dumps, serialize.dumps):
        data = dumps(fb)
        assert len(data) < 1024, len(data)
        assert pickle.loads(data) is fb
    out = fb(np.array([0.5, 1.5]))
    np.testing.assert_array_equal(out[0], _scaled(np.array([0.5, 1.5])))


def test_a_released_fallback_is_a_clear_error_not_another_callable():
    _, _, eqn = _callback_eqn()
    fb = codegen._fallback(eqn)
    data, token = pickle.dumps(fb), fb.token
    del fb
    gc.collect()
    with pytest.raises(RuntimeError, match=f"fallback #{token} is gone"):
        pickle.loads(data)


def test_compiled_object_mode_block_serializes_no_closure(monkeypatch):
    sizes: list[int] = []
    real = serialize.dumps

    def spy(obj):
        data = real(obj)
        sizes.append(len(data))
        return data
    monkeypatch.setattr(serialize, "dumps", spy)
    cache = empty_cache(monkeypatch, "tg_objmode_handle")
    jaxpr, full, _ = _callback_eqn()
    fn = compile_numba(jaxpr)
    assert "numba.objmode" in fn.source
    x = np.array([0.5, 1.5])
    want = np.sin(_scaled(x))
    # the first calls, from 4 threads at once (each unpickles the object-mode block's
    # dispatcher and its fallback by token)
    got: list = [None] * 4
    ts = [threading.Thread(target=lambda k=k: got.__setitem__(k, fn(*full)[0])) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    for g in got:
        np.testing.assert_allclose(g, want, rtol=1e-15)
    assert sizes and max(sizes) < 100_000, sizes    # the 1.6 MB closure was never pickled
    # object-mode programs are not kept on disk (a token means nothing to another
    # process): only the generated source is there, no machine code
    kept = [f for _, _, fs in os.walk(cache) for f in fs if not f.endswith(".py")]
    assert kept == [], kept
