"""tangentia.debug.callback is called with concrete NumPy arrays eagerly, at
every jit run (both backends), with primal values under differentiation (which
it does not change), at every loop iteration, and once per element under vmap
(JAX's semantics, checked against a loop)."""
import importlib.util

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax

X = np.array([0.5, 1.0, 2.0])


class Recorder:
    """A callback that keeps copies of what it was called with."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        for a in list(args) + list(kwargs.values()):
            for leaf in tg.tree_util.tree_leaves(a):
                assert isinstance(leaf, np.ndarray), type(leaf)
        self.calls.append(tg.tree_util.tree_map(np.copy, (args, kwargs)))


def f_with(rec):
    def f(x):
        y = tnp.sin(x)
        tg.debug.callback(rec, y, scale=2.0, pair={"x0": x[0]})
        return tnp.sum(y ** 2)
    return f


def _assert_calls(rec, xs):
    assert len(rec.calls) == len(xs)
    for (args, kwargs), x in zip(rec.calls, xs):
        np.testing.assert_array_equal(args[0], np.sin(x))
        assert kwargs["scale"] == 2.0 and kwargs["pair"]["x0"] == x[0]


def test_eager_and_every_jit_run():
    rec = Recorder()
    assert tg.debug.callback(rec, X) is None
    np.testing.assert_array_equal(rec.calls[0][0][0], X)
    rec = Recorder()
    f = f_with(rec)
    f(X)
    g = tg.jit(f)
    g(X)
    g(X + 1.0)
    _assert_calls(rec, [X, X, X + 1.0])


def test_kept_in_programs_even_without_outputs():
    rec = Recorder()
    text = str(tg.make_jaxpr(f_with(rec))(X))
    assert "debug_callback[callback='Recorder' ordered=False]" in text
    tg.jit(lambda x: (tg.debug.callback(rec, x), x)[1])(X)  # nothing uses it: still called
    assert len(rec.calls) == 1


def test_differentiation_sees_primal_values_once_and_is_unchanged():
    rec = Recorder()
    f = f_with(rec)
    want = 2 * np.sin(X) * np.cos(X)
    np.testing.assert_allclose(tg.grad(f)(X), want, rtol=1e-15)
    np.testing.assert_allclose(tg.jit(tg.grad(f))(X), want, rtol=1e-15)
    _, t = tg.jvp(f, (X,), (np.ones(3),))
    np.testing.assert_allclose(t, want.sum(), rtol=1e-14)
    tg.hessian(f)(X)
    _assert_calls(rec, [X] * 4)


def test_vmap_calls_once_per_element_like_a_loop():
    xs = np.stack([X, X + 1.0])
    rec, loop = Recorder(), Recorder()
    tg.vmap(f_with(rec))(xs)
    for x in xs:
        f_with(loop)(x)
    _assert_calls(rec, list(xs))
    _assert_calls(loop, list(xs))
    # An unmapped argument is passed whole; a batch along axis 1 is split along it.
    rec = Recorder()
    tg.jit(tg.vmap(lambda a, b: tg.debug.callback(rec, a, b), in_axes=(1, None)))(xs, X)
    assert len(rec.calls) == 3
    for i, (args, _) in enumerate(rec.calls):
        np.testing.assert_array_equal(args[0], xs[:, i])
        np.testing.assert_array_equal(args[1], X)


def test_every_iteration_of_scan_while_and_the_taken_branch():
    rec = Recorder()

    def body(c, x):
        tg.debug.callback(rec, c)
        return c * x, c

    f = lambda c: lax.scan(body, c, np.array([1.0, 2.0, 3.0]))[0]  # noqa: E731
    assert tg.grad(f)(2.0) == 6.0
    assert [float(a[0]) for a, _ in rec.calls] == [2.0, 2.0, 4.0]
    rec.calls.clear()

    def w(x):
        def step(c):
            tg.debug.callback(rec, c)
            return 2 * c
        return lax.while_loop(lambda c: c < 10, step, x)

    tg.jit(w)(1.5)
    assert [float(a[0]) for a, _ in rec.calls] == [1.5, 3.0, 6.0]
    rec.calls.clear()
    lax.cond(X[0] > 0, lambda x: (tg.debug.callback(rec, x), x)[1], lambda x: -x, X)
    assert len(rec.calls) == 1


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba is not installed")
def test_numba_backend_calls_it_in_object_mode():
    rec = Recorder()
    g = tg.jit(f_with(rec), backend="numba")
    assert "objmode" in g.lower(X).as_text()
    g(X)
    g(X + 1.0)
    _assert_calls(rec, [X, X + 1.0])


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="debug.callback: callback must be callable, got int"):
        tg.debug.callback(3, X)
    with pytest.raises(TypeError, match="debug.callback: argument leaf 1 is a str, not an array"):
        tg.debug.callback(print, X, "text")


def test_print_environment_info(capsys):
    import numba
    import scipy

    from tangentia.compiler.backend import default_backend_name
    text = tg.print_environment_info(return_string=True)
    lines = dict(line.split(":", 1) for line in text.splitlines())
    assert lines["tangentia"].strip() == tg.__version__
    assert lines["numpy"].strip() == np.__version__ and lines["scipy"].strip() == scipy.__version__
    assert lines["numba"].strip() == numba.__version__
    assert lines["jit backend"].split()[0] == default_backend_name()
    assert {"python", "platform", "blas"} <= set(lines)
    # NumPy's OpenBLAS (if it has one) is loaded, so its kernels are named on Linux; a
    # forced core type is reported.
    import os
    import sys
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    if sys.platform == "linux" and "openblas" in blas:
        assert lines["blas"].strip().startswith("OpenBLAS kernels ")
    assert ("OPENBLAS_CORETYPE=" in lines["blas"]) == bool(os.environ.get("OPENBLAS_CORETYPE"))
    assert tg.print_environment_info() is None
    assert capsys.readouterr().out.strip() == text
