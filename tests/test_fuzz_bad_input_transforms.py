"""The transformations given wrong arguments, against JAX 0.10.2 (x64): where JAX raises, we
raise the same exception class and our message begins with JAX's words (then says which
function and what was expected).  Session 23 (E); each case below failed before its fix:
returned a number where JAX raises (grad's ``argnums=()``, jit's ``donate_argnums`` out of
range, vmap's ``axis_size`` as a str, a Python-int tangent or cotangent for a float value, a
float32 or int tangent given to ``linearize``'s function), raised an error from inside
(``static_argnums="1"``: a comparison of int and str; a pullback called with two cotangents:
``_pullback() takes 7 positional arguments``; ``axis_size=-3``: NumPy's broadcast error), or
raised with other words or another class (a jitted function returning a str, argnums out of
range for jacfwd/jacrev/hessian, ``tree_unflatten`` with too few leaves, a ``while_loop`` body
that drops a carry leaf of a weakly typed carry: tree_unflatten's count error from inside);
``associative_scan(fn, x, axis=3)`` of a vector ran along axis 0 (3 % 1); eager
``dot_general`` of unequal contracting sizes raised NumPy's matmul ValueError, and
``lax.full((2, -1), 0.0)`` NumPy's broadcast ValueError.

Left alone (JAX raises an error from its own inside, ours is clearer and of a kind as useful):
argnums naming one argument twice, custom_jvp/custom_vjp ``nondiff_argnums`` out of range,
``has_aux=True`` for a function returning one array; dicts with keys of mixed types (a
documented deviation of tangentia.tree_util: they are ordered by type, then value).
"""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

X = np.arange(3.0)
S = 1.5

# name -> call(T, N): T is the package (jax or tangentia), N its numpy
CASES: dict[str, Callable[[Any, Any], Any]] = {
    "grad argnums=()": lambda T, N: T.grad(lambda x, y: x * y, argnums=())(S, S),
    "value_and_grad argnums=()": lambda T, N: T.value_and_grad(lambda x, y: x * y,
                                                               argnums=())(S, S),
    "jacfwd argnums=()": lambda T, N: T.jacfwd(lambda x, y: x * y, argnums=())(X, X),
    "jacrev argnums=()": lambda T, N: T.jacrev(lambda x, y: x * y, argnums=())(X, X),
    "grad argnums=-3": lambda T, N: T.grad(lambda x, y: x * y, argnums=-3)(S, S),
    "grad argnums='0'": lambda T, N: T.grad(lambda x, y: x * y, argnums="0")(S, S),
    "jacfwd argnums=2": lambda T, N: T.jacfwd(lambda x: x, argnums=2)(X),
    "jacrev argnums=2": lambda T, N: T.jacrev(lambda x: x, argnums=2)(X),
    "hessian argnums=2": lambda T, N: T.hessian(lambda x: x, argnums=2)(X),
    "jacrev argnums=-2": lambda T, N: T.jacrev(lambda x: x, argnums=-2)(X),
    "jit donate_argnums=5": lambda T, N: T.jit(lambda x, y: x, donate_argnums=5)(S, S),
    "jit donate_argnums=-3": lambda T, N: T.jit(lambda x, y: x, donate_argnums=-3)(S, S),
    "jit static_argnums='1'": lambda T, N: T.jit(lambda x, y: x, static_argnums="1")(S, S),
    "jit static_argnums=1.0": lambda T, N: T.jit(lambda x, y: x, static_argnums=1.0)(S, S),
    "jit returns a str": lambda T, N: T.jit(lambda x: "a")(S),
    "jit returns an object": lambda T, N: T.jit(lambda x: (x, object()))(S),
    "jit returns a generator": lambda T, N: T.jit(lambda x: (i for i in range(2)))(S),
    "vmap axis_size='3'": lambda T, N: T.vmap(lambda x: x, in_axes=None, axis_size="3")(S),
    "vmap axis_size=-3": lambda T, N: T.vmap(lambda x: x, in_axes=None, axis_size=-3)(S),
    "jvp Python-int tangent": lambda T, N: T.jvp(lambda x: x * 2, (S,), (1,)),
    "jvp Python-complex tangent": lambda T, N: T.jvp(lambda x: x * 2, (S,), (1j,)),
    "vjp Python-int cotangent": lambda T, N: T.vjp(lambda x: x * 2, S)[1](1),
    "vjp int cotangent": lambda T, N: T.vjp(lambda x: x * 2, X)[1](np.arange(3)),
    "vjp two cotangents": lambda T, N: T.vjp(lambda x: (x, x), X)[1](X, X),
    "linearize float32 tangent": lambda T, N: T.linearize(lambda x: x * 2, X)[1](
        np.ones(3, np.float32)),
    "linearize int tangent": lambda T, N: T.linearize(lambda x: x * 2, X)[1](np.arange(3)),
    "linearize int primal": lambda T, N: T.linearize(lambda x: x * 2, 3)[1](1),
    "while_loop body drops a carry leaf": lambda T, N: T.lax.while_loop(
        lambda c: c[0] < 3, lambda c: c[0] + 1, (0, 1.0)),
    "fori_loop body drops a carry leaf": lambda T, N: T.lax.fori_loop(
        0, 3, lambda i, c: c[0] + 1.0, (0.0, 1.0)),
    "associative_scan axis=3 of a vector": lambda T, N: T.lax.associative_scan(
        lambda a, b: a + b, X, axis=3),
    "associative_scan axis=-2 of a vector": lambda T, N: T.lax.associative_scan(
        lambda a, b: a + b, X, axis=-2),
    "dot_general unequal contracting sizes": lambda T, N: T.lax.dot_general(
        X, np.ones(4), (((0,), (0,)), ((), ()))),
    "lax.full of a negative shape": lambda T, N: T.lax.full((2, -1), 0.0),
    "tree_unflatten too few": lambda T, N: T.tree_util.tree_unflatten(
        T.tree_util.tree_structure([1, 2]), [1]),
    "tree_unflatten too many": lambda T, N: T.tree_util.tree_unflatten(
        T.tree_util.tree_structure([1, 2]), [1, 2, 3]),
}

# our message starts with JAX's up to its first line end or a program-specific detail
_UNTIL = re.compile(r"\n|(?<= at ).*")


def _raised(call: Callable[[], Any]) -> BaseException:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return e
    raise AssertionError("did not raise")


@pytest.mark.filterwarnings("ignore:Python iterable type:DeprecationWarning")   # JAX, generators
@pytest.mark.parametrize("name", list(CASES))
def test_raises_as_jax(name: str) -> None:
    theirs = _raised(lambda: CASES[name](jax, jnp))
    ours = _raised(lambda: CASES[name](tg, tnp))
    assert isinstance(ours, type(theirs)), (name, repr(ours), repr(theirs))
    want = _UNTIL.split(str(theirs).strip("\n"))[0].rstrip(".")
    assert str(ours).strip("\n").startswith(want), (name, str(ours), want)


def test_the_checks_let_good_arguments_through() -> None:
    # what the checks above must not refuse: a Python float tangent/cotangent for a float64
    # value, float0 for an integer primal, negative argnums and static_argnums in range,
    # axis_size as a NumPy integer, donation in range
    f0 = np.zeros((), jax.dtypes.float0)
    for T, N in ((tg, tnp), (jax, jnp)):
        assert float(T.jvp(lambda x: x * 2, (S,), (1.0,))[1]) == 2.0
        np.testing.assert_array_equal(T.vjp(lambda x: x * 2, X)[1](np.ones(3))[0], 2.0)
        assert float(T.vjp(lambda x: x * 2, S)[1](1.0)[0]) == 2.0
        np.testing.assert_array_equal(T.linearize(lambda x: x * 2, X)[1](np.ones(3)), 2.0)
        assert float(T.linearize(lambda x: x * 2.5, 2.0)[1](1.0)) == 2.5
        assert T.linearize(lambda x, n: x * n, 2.0, 3)[1](1.0, f0) == 3.0
        assert float(T.grad(lambda x, y: x * y, argnums=-1)(S, 4.0)) == S
        np.testing.assert_array_equal(T.jacrev(lambda x, y: x * y, argnums=-2)(X, X),
                                      np.diag(X))
        assert float(T.jit(lambda x, n: x * n, static_argnums=-1)(S, 2)) == 3.0
        assert float(T.jit(lambda x, n: x * n, static_argnums=np.int64(1))(S, 2)) == 3.0
        assert float(T.jit(lambda x, y: x * y, donate_argnums=(0, 1))(S, 2.0)) == 3.0
        np.testing.assert_array_equal(
            T.vmap(lambda x: x, in_axes=None, axis_size=np.int64(2))(S), [S, S])
        assert T.vmap(lambda x: x, in_axes=None, axis_size=0)(S).shape == (0,)
        g, = T.vjp(lambda x: (x, x), X)[1]((X, X))
        np.testing.assert_array_equal(g, 2 * X)
