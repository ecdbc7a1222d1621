"""``custom_lin`` (forward mode through a ``custom_vjp`` function, and odeint's forward
sensitivities) on the numba backend: its linear map is staged into a program at compile
time and lowered natively (``numba_backend/custom_lin.py``), not run in object mode; a
``bwd`` that cannot be staged keeps the object-mode path.  Each program is checked against
the NumPy backend and its tangents against central finite differences, in float64."""
from __future__ import annotations

from typing import Any, List

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler import numba_backend as nbb  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from _numba_util import compile_numba, objmode_spy, program  # noqa: E402


@tg.custom_vjp
def softplus(x):
    return tnp.logaddexp(x, 0.0)


def _softplus_fwd(x):
    return softplus(x), x


def _softplus_bwd(x, g):
    return (g / (1.0 + tnp.exp(-x)),)


softplus.defvjp(_softplus_fwd, _softplus_bwd)


@tg.custom_vjp
def picky(x):
    return x * x


def _picky_bwd(x, g):
    # reads the residual's value with NumPy: it cannot be staged with the residual abstract
    return (g * (2.0 * np.asarray(x)),)


picky.defvjp(lambda x: (picky(x), x), _picky_bwd)


@pytest.fixture
def objmode_calls(monkeypatch: Any) -> List[str]:
    """The primitives the numba generator runs in object mode (a fresh cache: generated)."""
    return objmode_spy(monkeypatch, "tangentia-custom-lin-")


def _both(f: Any, *args: Any) -> Any:
    """``f``'s program on numba and on the NumPy backend: the same numbers (to rounding)."""
    jaxpr, full = program(f, *args)
    got = compile_numba(jaxpr, nbb.NumbaBackend())(*full)
    want = get_backend("numpy").compile(jaxpr)(*full)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    return got


def _fd(f: Any, x: np.ndarray, v: np.ndarray, h: float = 1e-6) -> np.ndarray:
    return (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)


def _sp(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(x, 0.0)


def test_jvp_of_a_custom_vjp_function_is_native(objmode_calls: List[str]) -> None:
    x, v = np.linspace(-3.0, 2.0, 7), np.linspace(1.0, 2.0, 7)
    out, tan = _both(lambda x, v: tg.jvp(softplus, (x,), (v,)), x, v)
    assert "custom_lin" in [e.prim.name for e in program(
        lambda x, v: tg.jvp(softplus, (x,), (v,)), x, v)[0].eqns]
    assert objmode_calls == []
    np.testing.assert_allclose(out, _sp(x), rtol=1e-14)
    np.testing.assert_allclose(tan, _fd(_sp, x, v), rtol=1e-8)


def test_custom_lin_in_a_loop_is_native(objmode_calls: List[str]) -> None:
    # forward mode through a custom_vjp function in a scan body: the equation inside the
    # loop (which ran the whole loop in object mode, the map traced again at every step)
    def f(x: Any) -> Any:
        return lax.scan(lambda c, _: (softplus(c) * 0.5 - 0.25, None), x, None, length=6)[0]

    x, v = np.linspace(-1.0, 1.5, 4), np.array([1.0, -0.5, 0.25, 2.0])
    out, tan = _both(lambda x, v: tg.jvp(f, (x,), (v,)), x, v)
    assert objmode_calls == []

    def ref(x: np.ndarray) -> np.ndarray:
        for _ in range(6):
            x = _sp(x) * 0.5 - 0.25
        return x
    np.testing.assert_allclose(out, ref(x), rtol=1e-14)
    np.testing.assert_allclose(tan, _fd(ref, x, v), rtol=1e-7, atol=1e-9)


def test_batched_custom_lin_jacfwd_is_native(objmode_calls: List[str]) -> None:
    # jacfwd: the custom_lin is batched (its forward map vmapped) before it is staged
    x = np.linspace(-2.0, 2.0, 5)
    (jac,) = _both(lambda x: [tg.jacfwd(lambda y: softplus(y) * tnp.sum(y))(x)], x)
    assert objmode_calls == []
    want = np.stack([_fd(lambda y: _sp(y) * y.sum(), x, e) for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(jac, want, rtol=1e-7, atol=1e-9)


def test_a_bwd_that_cannot_be_staged_runs_in_object_mode(objmode_calls: List[str]) -> None:
    x, v = np.array([0.5, -1.5, 2.0]), np.array([1.0, 2.0, -1.0])
    out, tan = _both(lambda x, v: tg.jvp(picky, (x,), (v,)), x, v)
    assert objmode_calls == ["custom_lin"]
    np.testing.assert_allclose(out, x * x, rtol=1e-15)
    np.testing.assert_allclose(tan, 2.0 * x * v, rtol=1e-15)


def test_lowering_paths_say_custom_lin_is_native_where_it_stages() -> None:
    assert nbb.lowering_paths()["custom_lin"] == "native+objmode"


W = np.random.default_rng(0).standard_normal((40, 40)) / 40.0


@tg.custom_vjp
def linear(x):
    return W @ x


linear.defvjp(lambda x: (linear(x), None), lambda r, g: (W.T @ g,))


def test_a_large_constant_of_the_linear_map(objmode_calls: List[str]) -> None:
    # the bwd closes over a 40 x 40 matrix: a constant of the staged program too large to
    # scalarize, held as a global array named by a hash of its bytes
    x, v = np.linspace(0.0, 1.0, 40), np.linspace(1.0, 2.0, 40)
    f = lambda x, v: tg.jvp(lambda y: tnp.sin(linear(y)), (x,), (v,))  # noqa: E731
    out, tan = _both(f, x, v)
    assert objmode_calls == []
    assert "constant <f8(40, 40)" in nbb.NumbaBackend().source(program(f, x, v)[0])
    np.testing.assert_allclose(out, np.sin(W @ x), rtol=1e-14)
    np.testing.assert_allclose(tan, np.cos(W @ x) * (W @ v), rtol=1e-13, atol=1e-15)
