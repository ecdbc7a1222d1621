"""The backend interface of jit: selection, lowering text, caching, options."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.compiler import backend as B

BACKENDS = B.available_backends()


@pytest.fixture
def restore_backend():
    yield
    tg.config.update("jit_backend", None)


def test_backends_registered():
    assert "numpy" in BACKENDS
    # numba is a runtime dependency: its backend is registered and is the default.
    assert "numba" in BACKENDS
    assert B.DEFAULT_BACKEND == "numba"


@pytest.mark.parametrize("backend", BACKENDS)
def test_explicit_backend_agrees_with_eager(backend):
    def f(x, y):
        return tnp.sum(tnp.sin(x) * y) + tnp.max(x)

    x, y = np.linspace(-1, 1, 7), np.arange(7.0)
    got = tg.jit(f, backend=backend)(x, y)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, f(x, y), rtol=1e-13)


def test_unknown_backend_names_the_backends():
    with pytest.raises(ValueError, match=r"jit\(backend=\.\.\.\): unknown jit backend 'fortran'.*'numpy'"):
        tg.jit(lambda x: x, backend="fortran")
    with pytest.raises(ValueError, match="unknown jit backend 'fortran'"):
        tg.config.update("jit_backend", "fortran")


def test_config_selects_backend(restore_backend):
    tg.config.update("jit_backend", "numpy")
    assert tg.config.jit_backend == "numpy"
    f = tg.jit(lambda x: x * 2.0)
    assert "def compiled" in f.lower(np.ones(3)).as_text()  # the NumPy backend's code
    tg.config.update("jit_backend", None)
    assert tg.config.jit_backend == B.default_backend_name()


def test_environment_variable_selects_backend():
    code = ("import tangentia as tg, numpy as np;"
            "print(tg.config.jit_backend, float(tg.jit(lambda x: x + 1)(np.float64(1))))")
    env = dict(os.environ, TANGENTIA_JIT_BACKEND="numpy")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["numpy", "2.0"]
    env["TANGENTIA_JIT_BACKEND"] = "nope"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "TANGENTIA_JIT_BACKEND" in r.stderr and "'nope'" in r.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_lower_shows_generated_code_and_compiles(backend):
    f = tg.jit(lambda x, s: {"y": tnp.cos(x) * s}, backend=backend)
    x = np.linspace(0, 1, 5)
    lowered = f.lower(x, 3.0)
    text = lowered.as_text()
    assert isinstance(text, str) and "cos" in text
    assert str(lowered) == text
    out = lowered.compile()(x, 3.0)
    np.testing.assert_allclose(out["y"], np.cos(x) * 3.0, rtol=1e-14)
    assert "cos" in str(lowered.compiler_ir())


def test_jit_cache_is_per_function():
    traces = []

    def f(x):
        traces.append(1)
        return x + 1.0

    for i in range(5):
        np.testing.assert_array_equal(tg.jit(f)(np.full(3, float(i))), np.full(3, i + 1.0))
    assert len(traces) == 1
    tg.jit(f)(np.ones(4))  # a new signature traces again
    assert len(traces) == 2
    tg.jit(f, static_argnums=())(np.ones(4))  # same options: same cache
    assert len(traces) == 2


def test_jit_rejects_unknown_options():
    with pytest.raises(TypeError, match="static_argnum"):
        tg.jit(lambda x: x, static_argnum=1)
    with pytest.raises(NotImplementedError, match="in_shardings"):
        tg.jit(lambda x: x, in_shardings=object())
    f = tg.jit(lambda x: x * 2, donate_argnums=0, inline=True, keep_unused=True, backend="cpu")
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])


@pytest.mark.parametrize("args", [(1.5, 2), (True, 3.0), (np.float32(2.0), 1.0)])
def test_scalar_fast_path_matches_traced_path(args):
    f = tg.jit(lambda a, b: a * b + 1)
    first = f(*args)  # traces (slow path)
    second = f(*args)  # fast path
    want = tnp.multiply(*args) + 1
    for r in (first, second):
        assert isinstance(r, np.ndarray)
        assert r.dtype == np.asarray(want).dtype
        np.testing.assert_allclose(r, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_eager_loops_run_through_the_backend(backend, restore_backend):
    tg.config.update("jit_backend", backend)
    out = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5), (0, 1.0))
    assert int(out[0]) == 10 and float(out[1]) == 1.5 ** 10
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(5.0))
    np.testing.assert_allclose(ys, [0.0, 0.0, 2.0, 9.0, 24.0])
    assert float(carry) == 10.0
    assert float(lax.cond(True, lambda x: x + 1, lambda x: x - 1, 2.0)) == 3.0
    assert float(lax.switch(7, [lambda x: x, lambda x: 2 * x], 2.0)) == 4.0  # index clamped


def test_eager_equation_cache_is_reused():
    body = lambda c: c + 1  # noqa: E731
    cond = lambda c: c < 3  # noqa: E731
    before = len(B._EQN_CACHE)
    lax.while_loop(cond, body, 0)
    after_first = len(B._EQN_CACHE)
    lax.while_loop(cond, body, 0)
    assert after_first >= before
    assert len(B._EQN_CACHE) == after_first


def test_changing_the_default_backend_takes_effect_on_the_fast_path(restore_backend):
    class Counting(B.Backend):
        name = "counting-test"
        calls = 0

        def compile(self, jaxpr):
            fn = B.get_backend("numpy").compile(jaxpr)

            def run(*args):
                Counting.calls += 1
                return fn(*args)
            return run

        def source(self, jaxpr):
            return B.get_backend("numpy").source(jaxpr)

    B.register_backend(Counting())
    try:
        f = tg.jit(lambda x: x * 3.0)
        tg.config.update("jit_backend", "numpy")
        f(np.ones(2))
        f(np.ones(2))  # fast path, NumPy backend
        assert Counting.calls == 0
        tg.config.update("jit_backend", "counting-test")
        np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0])
        np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0])
        assert Counting.calls == 2
    finally:
        del B._BACKENDS["counting-test"]
        tg.config.update("jit_backend", None)
