"""NumPy's floating-point warnings (divide by zero, invalid value, overflow): tangentia's
own computations raise none, as JAX's do not (eagerly, under jit and inside
transformations: ``log(0)`` is -inf, ``0/0`` NaN, silently); the user's own NumPy code
running inside (a callback, a custom rule) warns at its own line, as NumPy does; the
user's own NumPy error settings win."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

ZEROS = np.zeros(3)


def _fp(record):
    return [w for w in record if issubclass(w.category, RuntimeWarning)]


def _warned_here(record, text):
    """The RuntimeWarnings of ``record`` (one at least), which must all point
    at this file; returns the first."""
    fp = _fp(record)
    assert fp
    for w in fp:
        assert w.filename == __file__, (w.filename, w.lineno, str(w.message))
        assert text in str(w.message), str(w.message)
    return fp[0]


def _line_of(text):
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "_line_of" not in line)


def _silent(fn):
    """``fn()`` under Python's "error" filter: any warning fails the test (flax's and
    optax's test settings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_eager_elementwise_is_silent_with_numpys_values():
    np.testing.assert_array_equal(_silent(lambda: tnp.log(ZEROS)), -np.inf)
    assert np.isnan(_silent(lambda: tnp.arccos(np.array([2.0])))).all()
    np.testing.assert_array_equal(_silent(lambda: tnp.divide(1.0, ZEROS)), np.inf)
    assert np.isnan(_silent(lambda: tnp.divide(ZEROS, ZEROS))).all()
    np.testing.assert_array_equal(_silent(lambda: tnp.exp(ZEROS + 1000)), np.inf)
    np.testing.assert_array_equal(_silent(lambda: tnp.ones(3) / 0.0), np.inf)   # operator


def test_compositions_and_library_functions_are_silent():
    np.testing.assert_array_equal(_silent(lambda: tnp.log10(ZEROS)), -np.inf)
    np.testing.assert_array_equal(
        _silent(lambda: tg.scipy.special.xlogy(np.ones(2), np.zeros(2))), -np.inf)
    assert np.isnan(_silent(lambda: tnp.nanmean(np.full(3, np.nan))))
    assert np.isnan(_silent(lambda: tnp.nanvar(np.full(3, np.nan))))
    assert np.isnan(_silent(lambda: tnp.corrcoef(np.ones(3), np.ones(3)))).all()
    out = _silent(lambda: tnp.mean(np.ones((2, 3)), axis=0,
                                   where=np.array([[True, False, True]] * 2)))
    np.testing.assert_array_equal(np.isnan(out), [False, True, False])
    assert np.isnan(_silent(lambda: tg.nn.softmax(ZEROS - np.inf))).all()
    assert _silent(lambda: tg.scipy.special.logsumexp(ZEROS - np.inf)) == -np.inf


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_under_jit_and_transformations(backend):
    def f(x):
        return tnp.sum(tnp.log(x))

    assert _silent(lambda: tg.jit(f, backend=backend)(ZEROS)) == -np.inf
    np.testing.assert_array_equal(_silent(lambda: tg.grad(f)(ZEROS)), np.inf)  # 1/0
    np.testing.assert_array_equal(_silent(lambda: tg.jit(tg.grad(f), backend=backend)(ZEROS)),
                                  np.inf)
    np.testing.assert_array_equal(_silent(lambda: tg.vmap(tnp.log)(ZEROS)), -np.inf)


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

    def cb(x):
        return np.log(x)  # the callback's line

    with pytest.warns(RuntimeWarning) as record:
        tg.pure_callback(cb, tg.ShapeDtypeStruct((3,), np.float64), ZEROS)
    w = _warned_here(record, "divide by zero encountered in log")
    assert w.lineno == _line_of("# the callback's line")


def test_the_users_settings_win():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"), pytest.raises(FloatingPointError):
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
    raises ImportError when the warning machinery asks for the source line (a
    callback's warning is re-issued at its line in ``__main__``)."""
    import subprocess
    import sys
    code = ("import warnings, numpy as np, tangentia as tg, tangentia.numpy as tnp\n"
            "sds = tg.ShapeDtypeStruct((1,), np.float64)\n"
            "print(tnp.log(np.zeros(1))[0],\n"   # silent
            "      tg.pure_callback(lambda x: np.log(x), sds, np.zeros(1))[0],\n"   # warns
            "      tg.jit(tnp.log)(np.zeros(1))[0])\n"   # silent
            "warnings.simplefilter('ignore')\n"
            "print(tg.pure_callback(lambda x: np.log(x), sds, np.zeros(1))[0])\n")
    args, stdin = ([sys.executable, "-c", code], None) if how == "-c" else ([sys.executable, "-"], code)
    r = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "TANGENTIA_JIT_BACKEND": "numpy"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["-inf", "-inf", "-inf", "-inf"]
    assert r.stderr.count("RuntimeWarning: divide by zero encountered in ") == 1, r.stderr
