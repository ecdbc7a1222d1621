"""Nested ``cond`` under ``grad``: the derivative program grows linearly with the depth.

Partial evaluation of a ``cond`` used to route every residual through the known
cond, also a residual that is just a known operand; transposing a branch holding
an inner cond splits it again (``ad._eval_known_part``), so each level added a
known cond per inner level: D nested conds gave O(D^2) conds (152 at D = 16,
JAX 32).  Such residuals are now operands of the unknown cond, as in JAX.
"""
import numpy as np

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core, lax


def _nested(depth):
    f = lambda x: tnp.sin(x)  # noqa: E731
    for i in range(depth):
        f = (lambda g, i: lambda x: lax.cond(
            tnp.sum(x) > 0.5 * (i % 3) - 0.4,
            lambda y: g(y) * 1.1, lambda y: tnp.cos(y) - 0.3, x))(f, i)
    return lambda x: tnp.sum(f(x) ** 2)


def _count(jaxpr, name=None):
    n = 0
    for e in jaxpr.eqns:
        n += name is None or e.prim.name == name
        for sub in core.subjaxprs(e.prim, e.params):
            n += _count(sub, name)
    return n


def test_grad_of_nested_conds_has_two_conds_per_level():
    x = np.array([0.3, -0.2, 0.2])
    counts = {}
    for depth in (1, 2, 4, 8):
        jaxpr = tg.make_jaxpr(tg.grad(_nested(depth)))(x).jaxpr
        counts[depth] = (_count(jaxpr, "cond"), _count(jaxpr))
    # As JAX's: one cond forward, one backward per level (was 2, 5, 14, 44 with one branch calling the inner level).
    assert [counts[d][0] for d in (1, 2, 4, 8)] == [2, 4, 8, 16]
    # All equations: linear in the depth (was quadratic).
    assert counts[8][1] <= 2 * counts[4][1] + 4, counts
    assert counts[4][1] <= 2 * counts[2][1] + 4, counts


def _fd(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


def test_grad_of_nested_conds_numbers():
    f = _nested(8)
    x = np.array([0.3, -0.2, 0.2])
    g = tg.grad(f)(x)
    np.testing.assert_allclose(g, _fd(f, x), rtol=1e-6, atol=1e-8)
    # Against the JVP (forward mode) at a point taking other branches.
    for x in (np.array([0.3, -0.2, 0.2]), np.array([-0.5, -0.4, 0.1])):
        jf = tg.jacfwd(f)(x)
        np.testing.assert_allclose(tg.grad(f)(x), jf, rtol=1e-12, atol=1e-14)
    xs = np.array([[0.3, -0.2, 0.2], [-0.5, -0.4, 0.1], [1.0, 0.2, -0.3]])
    loop = np.stack([tg.grad(f)(r) for r in xs])
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(xs), loop, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(tg.jit(tg.grad(f), backend="numpy")(x), tg.grad(f)(x),
                               rtol=1e-13, atol=1e-15)


def test_cond_residual_forwarding_keeps_effects_and_known_outputs():
    # A branch whose residual is an operand and with a known output: values
    # and the known output unchanged.
    def f(x, y):
        return lax.cond(y > 0, lambda a, b: (a * b, b + 1.0), lambda a, b: (a - b, b * 2.0), x, y)

    for y in (0.7, -0.7):
        out, vjp = tg.vjp(lambda x: f(x, y), 1.5)
        assert np.allclose(out, (1.5 * y, y + 1.0) if y > 0 else (1.5 - y, y * 2.0))
        (ct,) = vjp((1.0, 0.0))
        assert np.isclose(ct, y if y > 0 else 1.0)
