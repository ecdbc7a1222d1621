"""The numba backend chooses its GEMM by measuring (``numba_backend.gemm.calibration``).

The choice (own kernel or BLAS in compiled code; compile a program dominated by
products or run it as NumPy calls) is measured once per machine and dtype, the
first time a program could use the own kernel, and cached in a JSON file in
``$TANGENTIA_CACHE_DIR`` named by what decides it (CPU, BLAS libraries and their
environment variables, versions).  Checked here: the file is written atomically
and read by another process without measuring again; a corrupt file, or one of
another machine, is ignored and rewritten; ``TANGENTIA_NUMBA_GEMM=blas|own``
override it without measuring; nothing is measured for a program that could not
use the kernel; the measured choice is what the generated code does; and a real
measurement stays within its budget and decides by its own figures.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.numba_backend import gemm  # noqa: E402

from test_numba_backend import NUMBA, program  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F64, F32 = np.dtype(np.float64), np.dtype(np.float32)


def choice(own, compile_, own_s=2e-3, blas_s=3e-3, numpy_s=4e-3):
    return {"own": own, "compile": compile_, "own_s": own_s, "blas_s": blas_s,
            "numpy_s": numpy_s, "rounds": 5, "seconds": 0.1, "cpu_seconds": 0.1}


@pytest.fixture
def cal(tmp_path, monkeypatch):
    """A fresh cache directory and memo, the switch at ``auto``, an AVX-512 target,
    and a fake measurement returning ``cal.result`` (counted in ``cal.calls``)."""
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TANGENTIA_NUMBA_GEMM", raising=False)
    monkeypatch.setattr(gemm, "_CHOICES", {})
    monkeypatch.setattr(gemm, "_AVX512", True)

    class Fake:
        calls = []
        result = choice(True, True)

        def __call__(self, dtype):
            self.calls.append(np.dtype(dtype).name)
            return dict(self.result)
    fake = Fake()
    monkeypatch.setattr(gemm, "_measure", fake)
    fake.dir = tmp_path
    return fake


def read_file():
    with open(gemm.calibration_path()) as f:
        return json.load(f)


def test_measured_once_then_cached_on_disk(cal):
    assert gemm.calibration(F64)["own"] is True and cal.calls == ["float64"]
    assert gemm.calibration(np.float64) == gemm.calibration("float64") and cal.calls == ["float64"]
    path = gemm.calibration_path()
    assert os.path.dirname(path) == str(cal.dir) and os.path.basename(path).startswith("gemm-calibration-")
    data = read_file()
    assert data["key"] == json.loads(json.dumps(gemm.calibration_key()))
    assert data["float64"] == choice(True, True) and "float32" not in data
    # each dtype is measured on its own, and both stay in the file
    cal.result = choice(False, False)
    assert gemm.calibration(F32)["own"] is False and cal.calls == ["float64", "float32"]
    data = read_file()
    assert data["float64"]["own"] is True and data["float32"]["own"] is False
    # a new process (an empty memo) reads the file: nothing measured
    gemm._CHOICES.clear()
    assert gemm.calibration(F64) == choice(True, True) and len(cal.calls) == 2
    assert os.listdir(cal.dir) == [os.path.basename(path)]       # no temporary file left


def test_written_atomically(cal, monkeypatch):
    """The file appears by ``os.replace`` of a complete temporary file in the same
    directory: a reader sees no file or a whole one."""
    seen = []
    real_replace = os.replace

    def replace(src, dst):
        assert not os.path.exists(dst)
        assert os.path.dirname(src) == os.path.dirname(dst) and src != dst
        with open(src) as f:
            seen.append(json.load(f))                 # complete JSON before it is visible
        real_replace(src, dst)
    monkeypatch.setattr(gemm.os, "replace", replace)
    gemm.calibration(F64)
    assert len(seen) == 1 and seen[0]["float64"] == choice(True, True)
    assert sorted(os.listdir(cal.dir)) == [os.path.basename(gemm.calibration_path())]


def test_reused_by_another_process(cal):
    cal.result = choice(False, True, own_s=0.0123, blas_s=0.0101, numpy_s=0.0111)
    gemm.calibration(F64)
    script = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, sys.argv[1])
        from tangentia.compiler.numba_backend import gemm
        def measure(dtype):
            raise AssertionError("measured again")
        gemm._measure = measure
        gemm._AVX512 = True
        print(json.dumps(gemm.calibration("float64")))
    """)
    env = dict(os.environ, TANGENTIA_CACHE_DIR=str(cal.dir))
    out = subprocess.run([sys.executable, "-c", script, ROOT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == cal.result


@pytest.mark.parametrize("content", [
    "", "{not json", "[1, 2]", '{"key": 1}',
    None,                                             # a valid file of another machine
    "wrong entry",                                    # this key, but an entry of the wrong type
])
def test_corrupt_or_foreign_file_is_ignored_and_rewritten(cal, content):
    path = gemm.calibration_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if content is None:
        key = dict(gemm.calibration_key(), cpu="another CPU")
        content = json.dumps({"key": key, "float64": choice(False, False)})
    elif content == "wrong entry":
        content = json.dumps({"key": gemm.calibration_key(),
                              "float64": dict(choice(False, False), own="no")})
    with open(path, "w") as f:
        f.write(content)
    assert gemm.calibration(F64) == choice(True, True) and cal.calls == ["float64"]
    data = read_file()
    assert data["float64"] == choice(True, True) and data["key"]["cpu"] == gemm._cpu_model()


def test_key_follows_what_picks_the_blas_kernels(cal, monkeypatch):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    default = gemm.calibration_path()
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    haswell = gemm.calibration_path()
    assert haswell != default and os.path.dirname(haswell) == os.path.dirname(default)
    gemm.calibration(F64)
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    gemm.calibration(F64)                         # another configuration: measured again
    assert cal.calls == ["float64", "float64"]
    key = gemm.calibration_key()
    assert key["tangentia"] == tg.__version__ and key["numpy"][0] == np.__version__
    assert len(key["kernel"]) == 16 and key["cpu"] and key["features"]


def test_machine_code_key_follows_the_blas_settings(cal, monkeypatch):
    """A program compiled under one BLAS setting (whose calibration chose one kernel) is
    not loaded from the machine-code cache under another: the setting is part of the key,
    as it is of the calibration's file name (found when a run under
    ``OPENBLAS_CORETYPE=Haswell`` loaded the code compiled with the default's choice and
    never calibrated)."""
    from tangentia.compiler.numba_backend import objcache
    jaxpr = program(lambda x, y: tnp.tanh(x @ y), np.ones((64, 64)), np.ones((64, 64)))[0]
    keys = set()
    for var in objcache.BLAS_ENV:
        monkeypatch.delenv(var, raising=False)
    keys.add(objcache.program_key(jaxpr))
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    keys.add(objcache.program_key(jaxpr))
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    keys.add(objcache.program_key(jaxpr))
    assert len(keys) == 3 and None not in keys
    assert set(gemm.calibration_key()["env"]) == set(objcache.BLAS_ENV)


def test_unwritable_cache_directory_keeps_the_choice_in_memory(cal, monkeypatch):
    blocker = cal.dir / "file"
    blocker.write_text("")
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(blocker / "sub"))   # under a file
    assert gemm.calibration(F64) == choice(True, True)
    assert gemm.calibration(F64) == choice(True, True) and cal.calls == ["float64"]


def test_switch_overrides_without_measuring(cal, monkeypatch):
    mlp = (F64, 128, 512, 784)
    cal.result = choice(False, False)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")
    assert gemm.use_gemm(*mlp) and gemm.compile_products(F64)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")
    assert not gemm.use_gemm(*mlp) and not gemm.compile_products(F64)
    assert cal.calls == []
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", " Auto ")
    assert not gemm.use_gemm(*mlp) and not gemm.compile_products(F64)
    assert cal.calls == ["float64"]
    gemm._CHOICES.clear()
    os.remove(gemm.calibration_path())
    cal.result = choice(False, True)
    assert not gemm.use_gemm(*mlp) and gemm.compile_products(F64)
    # the size rules and the CPU come first: nothing is measured for what _gemm cannot do
    assert not gemm.use_gemm(F64, 32, 32, 32) and not gemm.use_gemm(np.int64, 128, 512, 784)
    monkeypatch.setattr(gemm, "_AVX512", False)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "own")
    assert not gemm.use_gemm(*mlp)
    assert cal.calls == ["float64", "float64"]


def test_bad_switch_and_dtype(cal, monkeypatch):
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "mkl")
    with pytest.raises(ValueError, match=r"TANGENTIA_NUMBA_GEMM must be 'auto', 'blas' or 'own', got 'mkl'"):
        gemm.use_gemm(F64, 128, 512, 784)
    with pytest.raises(TypeError, match=r"gemm.calibration: dtype must be float32 or float64, got int64"):
        gemm.calibration(np.int64)


# --- the choice in the generated code ----------------------------------------

def layer(x, w):
    """A tanh layer and its gradient: products dominate (~128 multiply-adds per element)."""
    return [tnp.tanh(x @ w), tg.grad(lambda w: tnp.sum(tnp.tanh(x @ w)))(w)]


def source(dtype):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(128, 256)).astype(dtype), rng.normal(size=(256, 256)).astype(dtype)
    return NUMBA.source(program(layer, x, w)[0])


@pytest.mark.parametrize("measured, kernel, compiled", [
    (choice(True, True), "_gemm", True),
    (choice(False, True), "np.dot", True),      # BLAS in compiled code
    (choice(True, False), None, False),         # NumPy's matmul was faster still: NumPy calls
    (choice(False, False), None, False),
])
def test_generated_code_follows_the_measured_choice(cal, measured, kernel, compiled):
    cal.result = measured
    src = source(F64)
    assert cal.calls == ["float64"]
    numpy_calls = src.startswith("# numba backend: a loop-free program over large arrays runs as NumPy calls")
    assert numpy_calls == (not compiled), src[:300]
    if kernel == "_gemm":
        assert len(re.findall(r"_gemm\d+\(", src)) == 2 and "_blasdot" not in src, src
    elif kernel == "np.dot":
        assert "_gemm" not in src and len(re.findall(r"_blasdot\d+\(", src)) == 2, src
    # float32 is measured separately; the float64 choice does not carry over
    cal.result = choice(False, False)
    assert source(F32).startswith("# numba backend: a loop-free program over large arrays")
    assert cal.calls == ["float64", "float32"]


def test_nothing_measured_for_programs_that_cannot_use_it(cal):
    rng = np.random.default_rng(1)
    small = rng.normal(size=(24, 24))
    NUMBA.source(program(lambda a: tnp.tanh(a @ a), small)[0])            # below the sizes
    big, v = rng.normal(size=(512, 512)), rng.normal(size=(512, 16))
    NUMBA.source(program(lambda a, v: tnp.tanh(a) + tnp.sum(a @ v), big, v)[0])  # products do not dominate
    assert cal.calls == []


# --- a real measurement -------------------------------------------------------

@pytest.mark.skipif(not gemm._has_avx512(), reason="numba's target CPU has no AVX-512F: _gemm cannot run")
def test_real_measurement_within_budget_and_decided_by_its_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("TANGENTIA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(gemm, "_CHOICES", {})
    gemm._gemm(np.ones((16, 16)), False, np.ones((16, 48)), False, np.empty((16, 48)))   # compiled first
    c = gemm.calibration(F64)
    lo, hi = gemm.CALIBRATION_ROUNDS
    assert lo <= c["rounds"] <= hi
    # the budget is of CPU time, checked between rounds after the first few (a round: ~15 ms
    # of one core on a quiet machine; more on a loaded one, where BLAS's threads wait
    # for the core; the wall time depends on the load)
    per_round = c["cpu_seconds"] / c["rounds"]
    assert c["rounds"] == lo or c["cpu_seconds"] <= gemm.CALIBRATION_BUDGET + 3 * per_round, c
    # the three products' least times are in seconds: between 50 MFLOP/s and 1 TFLOP/s
    # each (the floor is a units check, not a speed check: at a load of 9 on 2 cores the
    # least time fell to 0.3-0.4 GFLOP/s; a time in ms would read 1000x slower)
    flops = sum(2 * m * k * n for m, k, n, _, _ in gemm.CALIBRATION_SHAPES)
    for t in ("own_s", "blas_s", "numpy_s"):
        assert flops / 1e12 < c[t] < flops / 5e7, (t, c)
    assert c["own"] == (c["own_s"] <= gemm.OWN_GAIN * c["blas_s"])
    kernel = c["own_s"] if c["own"] else c["blas_s"]
    assert c["compile"] == (kernel <= gemm.COMPILE_GAIN * c["numpy_s"])
    assert read_file()["float64"] == c


def test_a_product_fused_with_its_update_takes_the_kernel_within_fused_gain(cal, monkeypatch):
    """The kernel replaces BLAS where it took at most OWN_GAIN of BLAS's time; for a
    product fused with its update (which BLAS cannot do), within FUSED_GAIN."""
    mlp = (F64, 784, 512, 128)
    cal.result = choice(False, True, own_s=1.0e-3, blas_s=1.0e-3)     # a tie
    assert not gemm.use_gemm(*mlp) and gemm.use_gemm(*mlp, fused=True)
    gemm._CHOICES.clear()
    os.remove(gemm.calibration_path())
    cal.result = choice(False, True, own_s=1.1e-3, blas_s=1.0e-3)     # 10% slower: BLAS
    assert not gemm.use_gemm(*mlp) and not gemm.use_gemm(*mlp, fused=True)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "blas")
    assert not gemm.use_gemm(*mlp, fused=True)
    gemm._CHOICES.clear()
    os.remove(gemm.calibration_path())
    cal.result = choice(False, True, own_s=1.0e-3, blas_s=1.0e-3)
    monkeypatch.setenv("TANGENTIA_NUMBA_GEMM", "auto")
    rng = np.random.default_rng(2)
    x, g, w = rng.normal(size=(128, 784)), rng.normal(size=(128, 512)), rng.normal(size=(784, 512))
    src = NUMBA.source(program(lambda x, g, w: [w - 0.1 * (x.T @ g), x.T @ (g * 2.0)], x, g, w)[0])
    assert f", np.int64({gemm.EPILOGUE_SUB}))" in src and "_blasdot" in src, src   # the fused one; BLAS


def test_decision_from_the_measured_times():
    """Own kernel where it took at most OWN_GAIN of BLAS's time; compiled where the
    kernel compiled code uses took at most COMPILE_GAIN of NumPy's -- with the own
    kernel, if only it did (a tie with BLAS must not mean NumPy calls)."""
    assert gemm.decide(0.8, 1.0, 1.0) == (True, True)
    assert gemm.decide(0.95, 1.0, 1.0) == (False, True)         # a tie: BLAS, compiled
    assert gemm.decide(0.95, 1.0, 0.5) == (False, False)        # NumPy's matmul far faster
    # measured: own 5.12, BLAS 5.59, NumPy 5.31 ms (OPENBLAS_CORETYPE=Haswell, pinned)
    assert gemm.decide(5.12, 5.59, 5.31) == (True, True)
    assert gemm.decide(5.7, 5.59, 5.31) == (False, False)       # neither within COMPILE_GAIN
