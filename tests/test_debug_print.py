"""tangentia.debug.print prints concrete values eagerly, inside jit (every
run), under grad (primal values) and vmap (once per element, as JAX)."""
import numpy as np

import tangentia as tg
import tangentia.numpy as tnp


def _f(x):
    y = tnp.sin(x)
    tg.debug.print("y = {}", y)
    tg.debug.print("x0={x0}", x0=x[0])
    return tnp.sum(y ** 2)


X = np.array([0.5, 1.0])


def _lines(capsys):
    return capsys.readouterr().out.strip().splitlines()


def test_eager_and_jit_print_concrete_values_each_run(capsys):
    _f(X)
    assert _lines(capsys) == [f"y = {np.sin(X)}", "x0=0.5"]
    g = tg.jit(_f)
    g(X)
    g(X + 1.0)
    assert _lines(capsys) == [f"y = {np.sin(X)}", "x0=0.5", f"y = {np.sin(X + 1)}", "x0=1.5"]


def test_under_grad_vmap_and_jit_of_grad(capsys):
    np.testing.assert_allclose(tg.grad(_f)(X), 2 * np.sin(X) * np.cos(X), rtol=1e-15)
    assert _lines(capsys) == [f"y = {np.sin(X)}", "x0=0.5"]
    tg.jit(tg.grad(_f))(X)
    assert _lines(capsys) == [f"y = {np.sin(X)}", "x0=0.5"]
    xs = np.stack([X, X + 1.0])
    tg.vmap(_f)(xs)
    out = capsys.readouterr().out
    # Once per element, as JAX's batching rule does.
    assert out.splitlines() == [f"y = {np.sin(xs[0])}", f"y = {np.sin(xs[1])}", "x0=0.5", "x0=1.5"]


def test_is_kept_in_the_program():
    s = str(tg.make_jaxpr(_f)(X))
    assert "debug_print[fmt='y = {}']" in s
