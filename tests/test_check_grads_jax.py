"""tangentia.test_util.check_grads / check_jvp / check_vjp behave as jax.test_util's.

Same signatures (check_jvp(f, f_jvp, args, ...)), same random directions (RandomState(0)
afresh in each check, real then imaginary parts), finite differences in the inputs' dtypes,
tolerances per dtype multiplied by the number of elements compared: a check passes or fails
here as in JAX.  Ours drew directions from default_rng and took differences in float64, so
optax's check_grads tests failed on tolerance where JAX's pass, and the reverse.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import test_util as tu

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
pytest.importorskip("jax.scipy.stats")
from jax import test_util as jtu  # noqa: E402

import tangentia.scipy.stats  # noqa: E402,F401

ARGS = (np.array([0.3, -1.2, 2.0], np.float32), 0.5, np.array([1 + 2j, -0.5j], np.complex64),
        {"w": np.arange(4.0).reshape(2, 2)})


def _f(np_: Any) -> Any:
    return lambda x, s, z, d: (np_.sin(x) * s, z * z, np_.tanh(d["w"]) * s)


def _spy(api: Any, f: Any, seen: list) -> Any:
    def f_jvp(primals: Any, tangents: Any) -> Any:
        seen.append(tangents)
        return api.jvp(f, primals, tangents)
    return f_jvp


def test_directions_and_finite_differences_are_jaxs() -> None:
    ours: list = []
    theirs: list = []
    tu.check_jvp(_f(tnp), _spy(tg, _f(tnp), ours), ARGS)
    jtu.check_jvp(_f(jax.numpy), _spy(jax, _f(jax.numpy), theirs), ARGS)
    a, b = jax.tree_util.tree_leaves(ours[0]), jax.tree_util.tree_leaves(theirs[0])
    assert len(a) == len(b) == 4
    for x, y in zip(a, b):
        assert type(x) is type(y) and np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_array_equal(x, y)
    np_f = lambda x, s, z, d: (np.sin(x) * s, z * z, np.tanh(d["w"]) * s)  # noqa: E731
    for x, y in zip(jax.tree_util.tree_leaves(tu._numerical_jvp_in_dtype(np_f, ARGS, ours[0], 1e-4)),
                    jax.tree_util.tree_leaves(
                        jax._src.public_test_util.numerical_jvp(np_f, ARGS, theirs[0]))):
        assert np.asarray(x).dtype == np.asarray(y).dtype   # float32 differences stay float32
        np.testing.assert_array_equal(x, y)


def _outcome(check: Any, *a: Any, **kw: Any) -> str:
    try:
        check(*a, **kw)
    except AssertionError as e:
        return "fail: " + str(e).strip().splitlines()[-1 if "projection" in str(e) else 1]
    return "pass"


# (name, fn(np_), args, kwargs): at the edge of the tolerances
EDGE = [
    # the ppf's second derivatives by finite differences with eps 1e-4: JAX's check fails
    ("norm.ppf order 2", lambda sp: (lambda q: sp.scipy.stats.norm.ppf(q, 0.2, 2.0)),
     (np.array([0.03, 0.5, 0.97]),), {"order": 2}),
    # float32 points, a small step: JAX's check passes (ours took the differences in float64
    # and failed)
    ("exp(2x) float32, eps 1e-5", lambda sp: (lambda x: sp.numpy.exp(2 * x)),
     (np.array([0.9, 0.8, 0.7], np.float32),), {"order": 1, "modes": ["fwd"], "eps": 1e-5}),
    ("complex64 rev", lambda sp: (lambda z: sp.numpy.exp(3 * z) * z),
     (np.array([1 + 2j, 0.5j], np.complex64),), {"order": 2, "modes": ["rev"]}),
    ("lin mode", lambda sp: (lambda x: sp.numpy.sin(x) ** 2), (np.arange(3.0),),
     {"order": 2, "modes": ["lin"]}),
]


@pytest.mark.parametrize("case", EDGE, ids=[c[0] for c in EDGE])
def test_pass_or_fail_as_jax(case: Any) -> None:
    _, fn, args, kw = case
    got = _outcome(tu.check_grads, fn(tg), args, **kw)
    want = _outcome(jtu.check_grads, fn(jax), args, **kw)
    assert got.split(":")[0] == want.split(":")[0], (got, want)


def test_jax_signatures_of_check_jvp_and_check_vjp() -> None:
    f = lambda x: tnp.sin(x) * x  # noqa: E731
    x = np.array([0.5, 1.5])
    tu.check_jvp(f, partial(tg.jvp, f), (x,))
    tu.check_vjp(f, partial(tg.vjp, f), (x,), atol=1e-6, rtol=1e-6, eps=1e-5, err_msg="m")
    wrong = tg.custom_jvp(f)
    wrong.defjvp(lambda p, t: (f(p[0]), 1.01 * tnp.cos(p[0]) * p[0] * t[0]))
    with pytest.raises(AssertionError, match="JVP tangent"):
        tu.check_grads(wrong, (x,), order=1, modes=["fwd"])
    with pytest.raises(AssertionError, match="VJP cotangent projection"):
        tu.check_grads(wrong, (x,), order=1, modes=["rev"])
