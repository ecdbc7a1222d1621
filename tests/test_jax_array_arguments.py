"""An object with JAX's ``__jax_array__`` given where an array argument is
abstracted (grad, jit, vmap): JAX 0.10.2 refuses it with a ValueError
("Triggering __jax_array__() during abstractification is no longer
supported..."), honouring the protocol only in ``jnp.asarray``/``jnp.array``.
``core.as_array`` gives JAX's error and wording, then what it was given."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the expected errors are JAX's own")
jax.config.update("jax_enable_x64", True)   # (compared with float64 values below)
jnp = jax.numpy


class _Convertible:
    def __jax_array__(self) -> Any:
        return np.ones(2)


TRANSFORMS = {
    "grad": (lambda m: m.grad(lambda x: m.numpy.sum(x) if m is jax else tnp.sum(x))),
    "jit": (lambda m: m.jit(lambda x: x)),
    "vmap": (lambda m: m.vmap(lambda x: x)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_jax_array_object_as_an_argument_raises_jaxs_error(name):
    with pytest.raises(ValueError) as want:
        TRANSFORMS[name](jax)(_Convertible())
    with pytest.raises(ValueError) as got:
        TRANSFORMS[name](tg)(_Convertible())
    assert str(got.value).startswith(str(want.value).rstrip("."))
    assert "_Convertible" in str(got.value)


def test_explicit_conversion_still_honours_it():
    np.testing.assert_array_equal(tnp.asarray(_Convertible()), np.ones(2))
    np.testing.assert_array_equal(tg.grad(lambda x: tnp.sum(tnp.asarray(x) ** 2))(np.ones(2)),
                                  2 * np.ones(2))


# ---------------------------------------------------------------------------
# tangentia.numpy, nn and scipy take objects defining ``__jax_array__`` as the array it
# gives (flax nnx's Variables: ``jnp.dot(x, self.kernel)``), converted at the one point
# where user inputs enter (the user boundary, ``tangentia._array.public``), eagerly and
# under every transformation; lax's functions raise JAX's error.  JAX's numpy functions
# compiled by its ``jit`` take such an object only if it is also a pytree (flax's are),
# which is how JAX is compared here.


class _Var:
    """A pytree holding one array, converting itself by ``__jax_array__`` (nnx's Variable)."""

    def __init__(self, v):
        self.v = v

    def __jax_array__(self):
        return self.v


for _lib in (tg, jax):
    _lib.tree_util.register_pytree_node(_Var, lambda a: ((a.v,), None), lambda _, c: _Var(c[0]))

_M = np.array([[1.0, -2.0], [0.5, 3.0]])
_V = np.array([0.25, -1.5])
# name: f(lib, m, v) with m a matrix and v a vector (each an object or an array)
_CALLS = {
    "sin": lambda l, m, v: l.numpy.sin(v),
    "add": lambda l, m, v: l.numpy.add(v, 1.0),
    "multiply_both": lambda l, m, v: l.numpy.multiply(v, v),
    "dot": lambda l, m, v: l.numpy.dot(m, v),
    "matmul": lambda l, m, v: l.numpy.matmul(m, m),
    "einsum": lambda l, m, v: l.numpy.einsum("ij,j->i", m, v),
    "transpose": lambda l, m, v: l.numpy.transpose(m),
    "reshape": lambda l, m, v: l.numpy.reshape(m, (4,)),
    "sum": lambda l, m, v: l.numpy.sum(m, axis=0),
    "mean_where": lambda l, m, v: l.numpy.mean(m, axis=0, where=np.array([True, False])),
    "var": lambda l, m, v: l.numpy.var(v),
    "max": lambda l, m, v: l.numpy.max(m),
    "concatenate": lambda l, m, v: l.numpy.concatenate([v, v]),
    "stack": lambda l, m, v: l.numpy.stack([v, 2.0 * np.ones(2)]),
    "where": lambda l, m, v: l.numpy.where(np.array([True, False]), v, 0.0),
    "clip": lambda l, m, v: l.numpy.clip(v, -1.0, 0.0),
    "shape_ndim_size": lambda l, m, v: np.array([*l.numpy.shape(m), l.numpy.ndim(v),
                                                 l.numpy.size(m)]),
    "astype": lambda l, m, v: l.numpy.astype(v, np.float32),
    "zeros_like": lambda l, m, v: l.numpy.zeros_like(v),
    "norm": lambda l, m, v: l.numpy.linalg.norm(v),
    "inv": lambda l, m, v: l.numpy.linalg.inv(m),
    "relu": lambda l, m, v: l.nn.relu(v),
    "softmax": lambda l, m, v: l.nn.softmax(m, axis=-1),
    "logsumexp": lambda l, m, v: l.scipy.special.logsumexp(v),
    "keyword": lambda l, m, v: l.numpy.sum(m, where=_Var(np.array([True, False]))),
}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_jax_array_objects_across_the_api(name):
    call = _CALLS[name]
    want = call(jax, _Var(jnp.asarray(_M)), _Var(jnp.asarray(_V)))
    plain = call(tg, _M, _V)
    np.testing.assert_allclose(np.asarray(plain), np.asarray(want), rtol=1e-6)
    got = call(tg, _Var(_M), _Var(_V))   # eagerly
    assert type(got) is type(plain)
    np.testing.assert_array_equal(got, plain)
    # under jit, a Variable holding a tracer (what nnx's jit hands the module)
    np.testing.assert_array_equal(tg.jit(lambda m, v: call(tg, _Var(m), _Var(v)))(_M, _V), plain)
    # vmap (over the vector) against a loop
    vs = np.stack([_V, 2 * _V, -_V])
    np.testing.assert_array_equal(tg.vmap(lambda v: call(tg, _Var(_M), _Var(v)))(vs),
                                  np.stack([call(tg, _M, r) for r in vs]))


@pytest.mark.parametrize("name", ["sin", "dot", "einsum", "var", "norm", "softmax",
                                  "logsumexp", "concatenate"])
def test_jax_array_objects_under_grad_against_jax_and_finite_differences(name):
    call = _CALLS[name]

    def loss(lib):
        return lambda m, v: lib.numpy.sum(call(lib, _Var(m), _Var(v)) ** 2)

    g = tg.grad(loss(tg), argnums=(0, 1))(_M, _V)
    want = jax.grad(loss(jax), argnums=(0, 1))(jnp.asarray(_M), jnp.asarray(_V))
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    eps = 1e-6   # central differences in the vector
    f = loss(tg)
    fd = [(f(_M, _V + eps * e) - f(_M, _V - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(g[1], fd, rtol=1e-6, atol=1e-8)


def test_lax_refuses_jax_array_objects_and_operators_of_eager_results_take_them():
    with pytest.raises(ValueError, match="^Triggering __jax_array__"):
        tg.lax.sin(_Var(_V))
    with pytest.raises(ValueError, match="^Triggering __jax_array__"):
        tg.lax.add(_Var(_V), _Var(_V))
    with pytest.raises(ValueError, match="^Triggering __jax_array__"):
        jax.lax.add(_Var(jnp.asarray(_V)), _Var(jnp.asarray(_V)))
    # a pytree through lax's control flow stays a pytree (JAX's too)
    out = tg.lax.cond(True, lambda a: a, lambda a: a, _Var(_V))
    assert type(out) is _Var
    np.testing.assert_array_equal(out.v, _V)


def test_lists_of_jax_array_objects_after_lists_of_numbers():
    """A list given to a unary function first (``sin([1.0, 2.0])``) does not make lists
    pass unconverted later (``stack([v, w])``, ``sin([v, 2.0])``)."""
    np.testing.assert_array_equal(tnp.sin([1.0, 2.0]), np.sin([1.0, 2.0]))
    np.testing.assert_array_equal(tnp.add((1.0, 2.0), [3.0, 4.0]), [4.0, 6.0])
    np.testing.assert_array_equal(tnp.stack([_Var(_V), 2.0 * _V]), np.stack([_V, 2.0 * _V]))
    np.testing.assert_array_equal(tnp.sin([_Var(1.0), 2.0]), np.sin([1.0, 2.0]))
    np.testing.assert_array_equal(tnp.add((_Var(1.0), 2.0), [_Var(3.0), 4.0]), [4.0, 6.0])
