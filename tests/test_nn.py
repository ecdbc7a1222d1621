"""``tangentia.nn``: activations, softmax/log_softmax and one_hot.

Values against SciPy/NumPy formulas, derivatives against closed forms and
finite differences under compositions of grad, jvp, vmap and jit, the
stability contracts (softplus, softmax Jacobians at +-1000), the
work-sharing sigmoid rule, and error messages."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.special as ss

import tangentia as tg
import tangentia.nn as nn
import tangentia.numpy as tnp
import tangentia.scipy.special as tsp
from tangentia.test_util import check_grads


def _close(got, want, rtol=1e-12, atol=0.0):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def _no_warnings(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args)


def _sig(x):
    return ss.expit(x)


def _dsig(x):
    return ss.expit(x) * ss.expit(-x)


def _phi(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


_C = math.sqrt(2 / math.pi)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(_C * (x + 0.044715 * x ** 3)))


def _dgelu_tanh(x):
    t = np.tanh(_C * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _C * (1 + 3 * 0.044715 * x * x)


def _d2gelu_tanh(x):
    a = 0.044715
    t = np.tanh(_C * (x + a * x ** 3))
    u1, u2 = _C * (1 + 3 * a * x * x), 6 * _C * a * x
    return (1 - t * t) * u1 + 0.5 * x * (1 - t * t) * (u2 - 2 * t * u1 * u1)


X = np.array([-7.5, -2.0, -0.4, 0.3, 1.1, 6.0])

# name -> (fn, reference value, first derivative, second derivative)
ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0, lambda x: 0 * x),
    "softplus": (nn.softplus, lambda x: np.logaddexp(x, 0), _sig, _dsig),
    "sigmoid": (nn.sigmoid, _sig, _dsig,
                lambda x: _dsig(x) * (ss.expit(-x) - ss.expit(x))),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -np.logaddexp(-x, 0), lambda x: ss.expit(-x),
                    lambda x: -_dsig(x)),
    "silu": (nn.silu, lambda x: x * _sig(x), lambda x: _sig(x) + x * _dsig(x),
             lambda x: 2 * _dsig(x) + x * _dsig(x) * (ss.expit(-x) - ss.expit(x))),
    "swish": (nn.swish, lambda x: x * _sig(x), lambda x: _sig(x) + x * _dsig(x), None),
    "gelu_tanh": (nn.gelu, _gelu_tanh, _dgelu_tanh, _d2gelu_tanh),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), lambda x: x * ss.ndtr(x),
                   lambda x: ss.ndtr(x) + x * _phi(x), lambda x: _phi(x) * (2 - x * x)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
            lambda x: np.where(x > 0, 1.0, np.exp(x)), lambda x: np.where(x > 0, 0.0, np.exp(x))),
    "elu_alpha": (lambda x: nn.elu(x, alpha=0.7),
                  lambda x: np.where(x > 0, x, 0.7 * np.expm1(np.minimum(x, 0))),
                  lambda x: np.where(x > 0, 1.0, 0.7 * np.exp(x)), None),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x),
                   lambda x: np.where(x >= 0, 1.0, 0.01), lambda x: 0 * x),
    "leaky_relu_slope": (lambda x: nn.leaky_relu(x, negative_slope=0.2),
                         lambda x: np.where(x >= 0, x, 0.2 * x),
                         lambda x: np.where(x >= 0, 1.0, 0.2), None),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_values(name):
    f, ref, _, _ = ACTIVATIONS[name]
    out = f(X)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    _close(out, ref(X))
    _close(tg.jit(f)(X), ref(X))
    _close(tg.vmap(f)(X), ref(X))
    _close(f(float(X[1])), ref(X[1]))
    assert f(X.astype(np.float32)).dtype == np.float32
    _close(f(np.array([-2, 0, 3])), ref(np.array([-2.0, 0.0, 3.0])))


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_derivatives_under_compositions(name):
    f, _, d1, d2 = ACTIVATIONS[name]
    want = d1(X)
    g = tg.grad(f)
    got = {
        "vmap(grad)": tg.vmap(g)(X),
        "jit(vmap(grad))": tg.jit(tg.vmap(g))(X),
        "vmap(jit(grad))": tg.vmap(tg.jit(g))(X),
        "grad(sum(vmap))": tg.grad(lambda v: tnp.sum(tg.vmap(f)(v)))(X),
        "jit(grad(sum))": tg.jit(tg.grad(lambda v: tnp.sum(f(v))))(X),
        "jvp": tg.jvp(f, (X,), (np.ones_like(X),))[1],
        "jit(jvp)": tg.jit(lambda v: tg.jvp(f, (v,), (tnp.ones_like(v),))[1])(X),
        "vmap(jvp)": tg.vmap(lambda v: tg.jvp(f, (v,), (tnp.ones_like(v),))[1])(X),
        "jvp(vmap(jit))": tg.jvp(tg.vmap(tg.jit(f)), (X,), (np.ones_like(X),))[1],
        "diag(jacrev)": np.diag(tg.jacrev(f)(X)),
    }
    for k, v in got.items():
        np.testing.assert_allclose(v, want, rtol=1e-10, atol=1e-300, err_msg=k)
    if d2 is not None:
        want2 = d2(X)
        second = {"vmap(grad(grad))": tg.vmap(tg.grad(g))(X),
                  "vmap(jvp(grad))": tg.vmap(
                      lambda v: tg.jvp(g, (v,), (tnp.ones_like(v),))[1])(X)}
        second["jit(vmap(grad(grad)))"] = tg.jit(tg.vmap(tg.grad(g)))(X)
        second["jit(vmap(jvp(grad)))"] = tg.jit(tg.vmap(
            lambda v: tg.jvp(g, (v,), (tnp.ones_like(v),))[1]))(X)
        for k, v in second.items():
            np.testing.assert_allclose(v, want2, rtol=1e-7, atol=1e-12, err_msg=k)


def _bug_jvp_of_grad(v):
    return tg.jvp(tg.grad(lambda x: (x + x * x) * 0.8), (v,), (tnp.ones_like(v),))[1]


def _bug_grad_of_grad(v):
    return tg.grad(tg.grad(lambda x: tnp.sin(x + x * x)))(v)


@pytest.mark.parametrize("fn", [_bug_jvp_of_grad, _bug_grad_of_grad])
def test_add_any_batch_with_unbatched_operand(fn):
    # Regression: under vmap, a derivative adds a batched and an unbatched
    # (constant) tangent or cotangent with add_any; staging must keep the
    # batch axis.
    x = np.array([0.3, 1.1])
    want = tg.vmap(fn)(x)
    _close(tg.jit(tg.vmap(fn))(x), want)


@pytest.mark.parametrize("name", [n for n in ACTIVATIONS if not n.startswith(("relu", "leaky"))])
def test_activation_check_grads(name):
    f = ACTIVATIONS[name][0]
    check_grads(f, (X,), order=2, modes=("fwd", "rev"), rtol=1e-5, atol=1e-6, eps=1e-5)


@pytest.mark.parametrize("name", ["relu", "leaky_relu"])
def test_piecewise_linear_check_grads(name):
    check_grads(ACTIVATIONS[name][0], (X,), order=1)


def test_derivatives_at_zero():
    # as in JAX: relu'(0) = 0, leaky_relu'(0) = 1, elu'(0) = 1
    assert tg.grad(nn.relu)(0.0) == 0.0
    assert tg.grad(tg.grad(nn.relu))(0.0) == 0.0
    assert tg.jit(tg.vmap(tg.grad(nn.relu)))(np.zeros(3)).tolist() == [0.0] * 3
    assert tg.jvp(nn.relu, (np.zeros(2),), (np.ones(2),))[1].tolist() == [0.0, 0.0]
    assert tg.grad(nn.leaky_relu)(0.0) == 1.0
    assert tg.grad(nn.elu)(0.0) == 1.0
    # the softplus / sigmoid rules are exact at the branch point x == 0, at every order
    _close(tg.grad(nn.softplus)(0.0), 0.5, rtol=1e-15)
    _close(tg.grad(tg.grad(nn.softplus))(0.0), 0.25, rtol=1e-15)
    _close(tg.grad(tg.grad(tg.grad(nn.softplus)))(0.0), 0.0, atol=1e-17)
    _close(tg.grad(tg.grad(tg.grad(tg.grad(nn.softplus))))(0.0), -1 / 8, rtol=1e-14)
    _close(tg.hessian(lambda x: nn.softplus(x) ** 2)(0.0),
           2 * 0.5 ** 2 + 2 * math.log(2) * 0.25, rtol=1e-14)


def test_relu_keeps_integers():
    out = nn.relu(np.array([-2, 3]))
    assert out.dtype == np.int64 and out.tolist() == [0, 3]


# ---------------------------------------------------------------------------
# Stability


def test_softplus_extremes():
    x = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    y = _no_warnings(nn.softplus, x)
    _close(y, np.logaddexp(x, 0), rtol=1e-15)
    g = _no_warnings(tg.vmap(tg.grad(nn.softplus)), x)
    assert g[-1] == 1.0 and g[0] == 0.0  # exactly
    _close(g, ss.expit(x), rtol=1e-15)
    assert tg.grad(nn.softplus)(1000.0) == 1.0
    assert tg.grad(nn.softplus)(-1000.0) == 0.0
    assert tg.jit(tg.grad(nn.softplus))(1000.0) == 1.0
    h = _no_warnings(tg.vmap(tg.grad(tg.grad(nn.softplus))), x)
    assert np.all(np.isfinite(h))
    # log_sigmoid inherits it
    _close(_no_warnings(nn.log_sigmoid, x), -np.logaddexp(-x, 0), rtol=1e-15)
    gl = _no_warnings(tg.vmap(tg.grad(nn.log_sigmoid)), x)
    assert gl[0] == 1.0 and gl[-1] == 0.0


def test_sigmoid_extremes_and_alias():
    x = np.array([-800.0, 800.0])
    _close(_no_warnings(nn.sigmoid, x), [0.0, 1.0])
    assert _no_warnings(tg.vmap(tg.grad(nn.sigmoid)), x).tolist() == [0.0, 0.0]
    assert _no_warnings(tg.vmap(tg.grad(nn.silu)), x).tolist() == [0.0, 1.0]
    _close(nn.sigmoid(X), tsp.expit(X), rtol=0)
    # the rule is used under vmap, so the plain composition's NaN never appears
    g = tg.grad(lambda v: tnp.sum(tg.vmap(nn.sigmoid)(v)))(np.array([-800.0]))
    assert g.tolist() == [0.0]


def _count(jaxpr_text, prim):
    return sum(1 for tok in jaxpr_text.replace("\n", " ").split() if tok == prim)


def test_sigmoid_rule_shares_the_exponential():
    # seed 004: the forward computes exp once and the derivative reuses it
    x = np.linspace(-3, 3, 7)
    jvp_prog = str(tg.make_jaxpr(lambda v: tg.jvp(nn.sigmoid, (v,), (tnp.ones_like(v),)))(x))
    assert _count(jvp_prog, "exp") == 1, jvp_prog
    grad_prog = str(tg.make_jaxpr(tg.grad(lambda v: tnp.sum(nn.sigmoid(v))))(x))
    assert _count(grad_prog, "exp") == 1, grad_prog
    # ...as does softplus (value and derivative from one exp)
    sp_prog = str(tg.make_jaxpr(lambda v: tg.jvp(nn.softplus, (v,), (tnp.ones_like(v),)))(x))
    assert _count(sp_prog, "exp") == 1, sp_prog
    y, t = tg.jvp(nn.sigmoid, (x,), (np.ones_like(x),))
    _close(y, ss.expit(x))
    _close(t, _dsig(x))


# ---------------------------------------------------------------------------
# softmax / log_softmax


def _softmax_jac(y):
    return np.diag(y) - np.outer(y, y)


def test_softmax_values_axes_and_where():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4))
    for axis in (-1, 0, 1, (0, 2), None):
        _close(nn.softmax(x, axis=axis), ss.softmax(x, axis=axis))
        _close(nn.log_softmax(x, axis=axis), ss.log_softmax(x, axis=axis), atol=1e-15)
        _close(tg.jit(lambda v: nn.softmax(v, axis=axis))(x), ss.softmax(x, axis=axis))
    _close(nn.softmax(x), ss.softmax(x, axis=-1))
    assert nn.softmax(x.astype(np.float32)).dtype == np.float32
    m = np.array([True, False, True, True])
    v = np.array([1.0, 2.0, 3.0, -1.0])
    want = np.where(m, np.exp(v) / np.sum(np.exp(v[m])), 0.0)
    _close(nn.softmax(v, where=m), want)
    ls = nn.log_softmax(v, where=m)
    _close(ls[m], np.log(want[m]))
    assert ls[1] == -np.inf
    # masked entries get zero derivative
    jm = tg.jacrev(lambda v: nn.softmax(v, where=m))(v)
    assert np.all(jm[:, 1] == 0) and np.all(jm[1] == 0)
    _close(tg.jacfwd(lambda v: nn.log_softmax(v, where=m))(v)[1], 0.0)
    # where under vmap: a batched mask
    ms = np.array([[True, True, False], [False, True, True]])
    xs = rng.standard_normal((2, 3))
    _close(tg.vmap(lambda a, w: nn.softmax(a, where=w))(xs, ms), nn.softmax(xs, where=ms))
    gv = tg.vmap(tg.grad(lambda a, w: nn.log_softmax(a, where=w)[1]))(xs, ms)
    _close(gv, tg.jacrev(lambda a: nn.log_softmax(a, where=ms))(xs)[[0, 1], 1][[0, 1], [0, 1]])


def test_softmax_derivatives():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4))
    check_grads(nn.softmax, (x,), order=2, rtol=1e-5, atol=1e-6)
    check_grads(nn.log_softmax, (x,), order=2, rtol=1e-5, atol=1e-6)
    check_grads(lambda v: nn.softmax(v, axis=0), (x,), order=2, rtol=1e-5, atol=1e-6)
    check_grads(lambda v: nn.log_softmax(v, axis=(0, 1)), (x,), order=1)
    row = x[0]
    y = ss.softmax(row)
    for jac in (tg.jacfwd, tg.jacrev):
        _close(jac(nn.softmax)(row), _softmax_jac(y))
        _close(jac(nn.log_softmax)(row), np.eye(4) - y[None, :])
        _close(tg.jit(jac(nn.softmax))(row), _softmax_jac(y))
    # per-row Jacobians by vmap == blocks of the full Jacobian, in either order
    jv = tg.vmap(tg.jacrev(nn.softmax))(x)
    for i in range(3):
        _close(jv[i], _softmax_jac(ss.softmax(x[i])))
    _close(tg.jacfwd(tg.vmap(nn.log_softmax))(x)[1, :, 1, :], np.eye(4) - ss.softmax(x[1])[None])
    _close(tg.jit(tg.vmap(tg.grad(lambda r: nn.log_softmax(r)[2])))(x),
           np.eye(4)[2][None] - ss.softmax(x, axis=1))


def test_softmax_jacobians_finite_at_1000():
    x = np.array([1000.0, -1000.0, 0.0, 999.0])
    y = ss.softmax(x)
    for jac in (tg.jacfwd, tg.jacrev):
        js = _no_warnings(jac(nn.softmax), x)
        jl = _no_warnings(jac(nn.log_softmax), x)
        assert np.all(np.isfinite(js)) and np.all(np.isfinite(jl))
        _close(js, _softmax_jac(y), atol=1e-300)
        _close(jl, np.eye(4) - y[None, :], atol=1e-300)
    for f in (nn.softmax, nn.log_softmax):
        h = _no_warnings(tg.hessian(lambda v: f(v)[0]), x)
        assert np.all(np.isfinite(h))
    _close(nn.log_softmax(x), ss.log_softmax(x))
    _close(tg.jit(tg.jacrev(nn.log_softmax))(-x), np.eye(4) - ss.softmax(-x)[None, :],
           atol=1e-300)


# ---------------------------------------------------------------------------
# one_hot


def test_one_hot():
    x = np.array([0, 2, 1, 5, -1])
    out = nn.one_hot(x, 3)
    assert out.dtype == np.float64 and out.shape == (5, 3)
    _close(out, np.concatenate([np.eye(3)[[0, 2, 1]], np.zeros((2, 3))]))
    assert nn.one_hot(x, 3, dtype=np.int32).dtype == np.int32
    m = np.array([[0, 1], [2, 0]])
    _close(nn.one_hot(m, 3, axis=0), np.moveaxis(np.eye(3)[m], -1, 0))
    _close(nn.one_hot(m, 3, axis=1), np.moveaxis(np.eye(3)[m], -1, 1))
    _close(tg.jit(lambda v: nn.one_hot(v, 4))(m), np.eye(4)[m])
    _close(tg.vmap(lambda v: nn.one_hot(v, 4, axis=0))(m), np.moveaxis(np.eye(4)[m], -1, 1))
    assert nn.one_hot(np.array(2), 4).tolist() == [0.0, 0.0, 1.0, 0.0]
    assert nn.one_hot(np.array([1]), np.int64(2)).tolist() == [[0.0, 1.0]]
    # a use: cross-entropy through log_softmax, differentiated under jit and vmap
    logits = np.random.default_rng(3).standard_normal((4, 3))
    labels = np.array([0, 2, 1, 1])

    def loss(lg, lb):
        return -tnp.sum(nn.one_hot(lb, 3) * nn.log_softmax(lg))

    g = tg.jit(tg.grad(loss))(logits, labels)
    _close(g, ss.softmax(logits, axis=1) - np.eye(3)[labels])
    _close(tg.vmap(tg.grad(loss))(logits, labels), g)


# ---------------------------------------------------------------------------
# Errors


def test_errors_name_function_and_argument():
    with pytest.raises(TypeError, match="one_hot: argument 'num_classes' must be an integer"):
        nn.one_hot(np.array([1]), 2.5)
    with pytest.raises(TypeError, match="one_hot: argument 'num_classes'"):
        nn.one_hot(np.array([1]), True)
    with pytest.raises(ValueError, match="one_hot: argument 'num_classes' must be non-negative"):
        nn.one_hot(np.array([1]), -2)
    with pytest.raises(tg.ConcretizationTypeError, match="one_hot: argument 'num_classes'"):
        tg.jit(lambda n: nn.one_hot(np.array([1]), n))(3)
    with pytest.raises(ValueError, match="one_hot: axis 3 .*'axis'"):
        nn.one_hot(np.array([1]), 2, axis=3)
    with pytest.raises(TypeError, match="one_hot: argument 'x'"):
        nn.one_hot(np.array(["a"]), 2)
    with pytest.raises(ValueError, match="softmax: axis 2 .*'axis'"):
        nn.softmax(np.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match="log_softmax: argument 'where' of shape"):
        nn.log_softmax(np.ones(3), where=np.ones(2, bool))
    with pytest.raises(TypeError, match="softmax: argument 'where' must be a boolean"):
        nn.softmax(np.ones(3), where=np.ones(3))
    with pytest.raises(TypeError, match="gelu: argument 'approximate'"):
        nn.gelu(np.ones(2), approximate="yes")
    with pytest.raises(TypeError, match="relu: argument 'x'"):
        nn.relu(np.ones(2, complex))
    with pytest.raises(TypeError, match="sigmoid: argument 'x'"):
        nn.sigmoid("x")
