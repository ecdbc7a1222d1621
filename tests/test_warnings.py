"""NumPy's floating-point warnings (divide by zero, invalid value, overflow)
raised inside tangentia's primitives point at the user's line, eagerly, under
jit and inside transformations; the user's own NumPy error settings win."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

ZEROS = np.zeros(3)


def _warned_here(record, text):
    """The RuntimeWarnings of ``record`` (one at least), which must all point
    at this file; returns the first."""
    fp = [w for w in record if issubclass(w.category, RuntimeWarning)]
    assert fp
    for w in fp:
        assert w.filename == __file__, (w.filename, w.lineno, str(w.message))
        assert text in str(w.message), str(w.message)
    return fp[0]


def _line_of(text):
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "_line_of" not in line)


def test_eager_elementwise_points_at_the_callers_line():
    with pytest.warns(RuntimeWarning) as record:
        tnp.log(ZEROS)  # the log line
    w = _warned_here(record, "divide by zero encountered in log")
    assert w.lineno == _line_of("# the log line")
    with pytest.warns(RuntimeWarning) as record:
        tnp.arccos(np.array([2.0]))
    _warned_here(record, "invalid value encountered in arccos")
    with pytest.warns(RuntimeWarning) as record:
        tnp.divide(1.0, ZEROS)
    _warned_here(record, "divide by zero encountered in divide")


def test_compositions_and_library_functions():
    with pytest.warns(RuntimeWarning) as record:
        tnp.log10(ZEROS)
    _warned_here(record, "divide by zero")
    with pytest.warns(RuntimeWarning) as record:
        tg.scipy.special.xlogy(np.ones(2), np.zeros(2))
    _warned_here(record, "divide by zero")


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_under_jit_and_transformations(backend):
    def f(x):
        return tnp.sum(tnp.log(x))

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        tg.jit(f, backend=backend)(ZEROS)
    if backend == "numpy":  # numba's compiled loops raise no floating-point warnings
        _warned_here(record, "divide by zero encountered in log")
    else:
        assert not [w for w in record if w.filename != __file__]
    with pytest.warns(RuntimeWarning) as record:
        tg.grad(f)(ZEROS)  # log(0) and its derivative 1/0
    _warned_here(record, "divide by zero encountered in log")
    with pytest.warns(RuntimeWarning) as record:
        tg.vmap(tnp.log)(ZEROS)
    _warned_here(record, "divide by zero encountered in log")


def test_user_callbacks_point_at_their_own_line():
    @tg.custom_vjp
    def f(x):
        return x

    def bwd(res, g):
        return (g / np.zeros_like(g),)  # the rule's line

    f.defvjp(lambda x: (x, None), bwd)
    with pytest.warns(RuntimeWarning) as record:
        tg.grad(lambda x: tnp.sum(f(x)))(np.ones(2))
    w = _warned_here(record, "divide by zero")
    assert w.lineno == _line_of("# the rule's line")


def test_the_users_settings_win():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(tnp.log(ZEROS), -np.inf)
        with np.errstate(all="raise"), pytest.raises(FloatingPointError):
            tnp.log(ZEROS)
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
            tnp.log(ZEROS)
        calls = []
        with np.errstate(call=lambda kind, flag: calls.append(kind), divide="call"):
            tnp.log(ZEROS)
        assert calls == ["divide by zero"]
    assert np.geterr()["divide"] == "warn"  # nothing leaks out of tangentia's calls


def test_numpy_outside_tangentia_is_unchanged():
    with pytest.warns(RuntimeWarning, match="divide by zero encountered in log") as record:
        np.log(ZEROS)
    assert record[0].filename == __file__


@pytest.mark.parametrize("how", ["-c", "stdin"])
def test_code_run_by_python_c_or_from_stdin_warns_instead_of_crashing(how):
    """``__main__``'s loader is then the built-in importer, whose get_source
    raises ImportError when the warning machinery asks for the source line."""
    import subprocess
    import sys
    code = ("import warnings, numpy as np, tangentia as tg, tangentia.numpy as tnp\n"
            "print(tnp.log(np.zeros(1))[0],\n"   # one warning per line: eager here,
            "      tg.jit(tnp.log)(np.zeros(1))[0])\n"   # jit here
            "warnings.simplefilter('ignore')\n"
            "print(tnp.log(np.zeros(1))[0])\n")
    args, stdin = ([sys.executable, "-c", code], None) if how == "-c" else ([sys.executable, "-"], code)
    r = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "TANGENTIA_JIT_BACKEND": "numpy"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["-inf", "-inf", "-inf"]
    assert r.stderr.count("RuntimeWarning: divide by zero encountered in ") == 2, r.stderr
