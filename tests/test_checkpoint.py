"""checkpoint / remat: same derivatives, residuals are only the inputs."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.interpreters import ad
from tangentia.test_util import check_grads

X = np.linspace(0.1, 1.0, 4)


def _chain(x):
    for _ in range(5):
        x = tnp.sin(x) * 1.1
    return x


def _loss(f):
    return lambda x: tnp.sum(f(x) ** 2)


def test_same_values_and_derivatives_under_every_transformation():
    cf = tg.checkpoint(_chain)
    np.testing.assert_allclose(cf(X), _chain(X), rtol=1e-15)
    g = tg.grad(_loss(_chain))(X)
    np.testing.assert_allclose(tg.grad(_loss(cf))(X), g, rtol=1e-14)
    np.testing.assert_allclose(tg.jit(tg.grad(_loss(cf)))(X), g, rtol=1e-14)
    np.testing.assert_allclose(tg.grad(tg.jit(_loss(cf)))(X), g, rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(_loss(cf)))(np.stack([X, X]))[1], g, rtol=1e-14)
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(tg.vmap(cf)(x) ** 2))(np.stack([X, X]))[0],
                               g, rtol=1e-14)
    np.testing.assert_allclose(tg.hessian(_loss(cf))(X), tg.hessian(_loss(_chain))(X), rtol=1e-12)
    check_grads(cf, (X,), 2)


def test_linearized_program_keeps_only_the_inputs():
    _, _, consts, _, _ = ad.linearize_flat(lambda x: [tg.checkpoint(_chain)(x)], [X])
    assert len(consts) == 1 and consts[0] is X
    _, _, plain_consts, _, _ = ad.linearize_flat(lambda x: [_chain(x)], [X])
    assert len(plain_consts) >= 5


def test_checkpointed_scan_body_and_static_args():
    def body(c, x):
        return tnp.tanh(c * x + 0.1), c

    def f(c0, xs, use_remat):
        step = tg.checkpoint(body) if use_remat else body
        return tnp.sum(lax.scan(step, c0, xs)[1])

    xs = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(tg.grad(f)(0.3, xs, True), tg.grad(f)(0.3, xs, False), rtol=1e-13)
    h = tg.checkpoint(lambda x, n: x ** n, static_argnums=(1,))
    assert tg.grad(h)(2.0, 3) == 12.0


def test_a_policy_that_is_not_callable_is_refused_clearly():
    # policies themselves are tested in test_checkpoint_policies.py
    with pytest.raises(TypeError, match="checkpoint: argument 'policy' must be None or a callable"):
        tg.checkpoint(_chain, policy=True)
