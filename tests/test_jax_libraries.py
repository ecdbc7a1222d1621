"""What libraries written for JAX (optax, chex, ...) need from tangentia at import and in
use: the names they read (typing, sharding, config), ``vectorize`` with gufunc
signatures, JAX's behaviour of ``cond``/loops under ``disable_jit`` (function
evaluations counted), ``== None``, and methods of eager results taking traced arguments.
"""
from collections import Counter

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax

jax = pytest.importorskip("jax", reason="JAX is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


# ---------------------------------------------------------------------------
# lax.cond's operand=None, and how often control flow calls user functions

def test_cond_operand_none_is_passed_to_the_branch():
    got = lax.cond(True, lambda x: x is None, lambda x: False, operand=None)
    want = jax.lax.cond(True, lambda x: x is None, lambda x: False, operand=None)
    assert bool(got) is bool(want) is True
    # a pytree operand containing None, positionally
    assert bool(lax.cond(False, lambda x: False, lambda x: x[1] is None, (1.0, None)))
    assert float(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand=1.0)) == 2.0
    with pytest.raises(TypeError, match="if 'operand' keyword is passed then no positional"):
        lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)
    # no operand at all: the branches take no argument
    assert float(lax.cond(True, lambda: tnp.ones(()), lambda: tnp.zeros(()))) == 1.0


def _count_calls(lib, disable):
    """How often each user function of cond/switch/while/fori/scan/map is called, in ``lib``."""
    lx, np_ = (jax.lax, jnp) if lib is jax else (lax, tnp)
    c = Counter()

    def mk(name, f):
        def g(*a):
            c[name] += 1
            return f(*a)
        return g

    out = {}
    with lib.disable_jit(disable):
        lx.cond(True, mk("t", lambda x: x + 1), mk("f", lambda x: x - 1), 1.0)
        lx.cond(np_.array(False), mk("t", lambda x: x + 1), mk("f", lambda x: x - 1), 1.0)
        out["cond"], _ = dict(c), c.clear()
        lx.switch(1, [mk("b0", lambda x: x), mk("b1", lambda x: 2 * x),
                      mk("b2", lambda x: 3 * x)], 1.0)
        out["switch"], _ = dict(c), c.clear()
        r = lx.while_loop(mk("c", lambda v: v < 10), mk("b", lambda v: v * 2), 1)
        assert int(r) == 16
        out["while"], _ = dict(c), c.clear()
        assert float(lx.fori_loop(0, 5, mk("b", lambda i, v: v + i), 0.0)) == 10.0
        lx.fori_loop(np_.array(0), np_.array(5), mk("b", lambda i, v: v + i), 0.0)
        out["fori"], _ = dict(c), c.clear()
        carry, ys = lx.scan(mk("s", lambda c_, x: (c_ + x, c_ * 2)), 0.0, np_.arange(4.0))
        np.testing.assert_allclose(np.asarray(ys), [0.0, 0.0, 2.0, 6.0])
        carry, ys = lx.scan(mk("s", lambda c_, x: (c_ + x, c_ * 2)), 0.0, np_.arange(4.0),
                            reverse=True)
        np.testing.assert_allclose(np.asarray(ys), [12.0, 10.0, 6.0, 0.0])
        out["scan"], _ = dict(c), c.clear()
        np.testing.assert_allclose(np.asarray(lx.map(mk("m", lambda x: x * 2), np_.arange(4.0))),
                                   [0.0, 2.0, 4.0, 6.0])
        out["map"], _ = dict(c), c.clear()
    return out


@pytest.mark.parametrize("disable", [False, True])
def test_control_flow_calls_user_functions_as_often_as_jax(disable):
    assert _count_calls(tg, disable) == _count_calls(jax, disable)


def test_control_flow_under_disable_jit_follows_jax():
    with tg.disable_jit():
        assert lax.cond(True, lambda: 1, lambda: 2) == 1   # the branch's own value
        assert lax.switch(7, [lambda: 1, lambda: 2]) == 2   # clamped
        with pytest.raises(ValueError, match="zero-length scan is not supported in "
                                             "disable_jit"):
            lax.scan(lambda c, x: (c, x), 0.0, None, length=0)
        c, ys = lax.scan(lambda c, x: (c + 1, None), 0.0, None, length=3)
        assert float(c) == 3.0 and ys is None
        # a decision known only when the program runs (vmap): the staged loop
        f = tg.vmap(lambda x: lax.while_loop(lambda v: v < 10, lambda v: v * 2, x))
        np.testing.assert_array_equal(f(tnp.array([1, 3, 20])), [16, 12, 20])
        g = tg.vmap(lambda p, x: lax.cond(p, lambda x: x + 1, lambda x: x - 1, x))
        np.testing.assert_array_equal(g(tnp.array([True, False]), tnp.zeros(2)), [1.0, -1.0])
        # grad sees concrete decisions eagerly: Python branches, derivatives as without
        h = tg.grad(lambda x: lax.cond(x > 0, lambda x: x ** 3, lambda x: -x, x))
        assert float(h(2.0)) == 12.0 and float(h(-2.0)) == -1.0


def _line_search_counts(lib):
    lx, np_ = (jax.lax, jnp) if lib is jax else (lax, tnp)
    c = Counter()

    def loss(w):
        c["loss"] += 1
        return np_.sum((w - 3.0) ** 2)

    def step(w):
        g = lib.grad(loss)(w)

        def cond_fun(s):
            t, _ = s
            return loss(w - t * g) > loss(w) - 0.5 * t * np_.sum(g * g)

        def body_fun(s):
            t, k = s
            return lx.cond(k < 100, lambda t: t * 0.5, lambda t: t * 0.25, t), k + 1
        t, _ = lx.while_loop(cond_fun, body_fun, (1.0, 0))
        return w - t * g

    counts = []
    for mode in ("eager", "jit", "disable_jit"):
        c.clear()
        w = np_.ones(3) * 10
        with lib.disable_jit(mode == "disable_jit"):
            f = step if mode == "eager" else lib.jit(step)
            for _ in range(3):
                w = f(w)
        np.testing.assert_allclose(np.asarray(w), 3.0)
        counts.append(c["loss"])
    return counts


def test_line_search_evaluates_the_loss_as_often_as_jax():
    assert _line_search_counts(tg) == _line_search_counts(jax)
