"""The custom-rule cases of issue 26 where tangentia differed from JAX.

* ``closure_convert`` hoists only the closed-over values that may carry a tangent
  (traced by an enclosing grad/jvp, or staged by jit), as JAX's; concrete floats,
  integers, and values only batched by vmap stay closed over;
* a ``custom_jvp`` rule (``symbolic_zeros`` or not) returning Python floats gives
  Python floats from an eager ``jvp``, as JAX's; arrays under jit and vmap;
* ``odeint`` of a complex state under ``grad`` of a real loss.

Each case is compared with JAX (x64) where it is installed, and with finite
differences where a derivative is involved.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax", reason="JAX is the reference these cases mirror")
    jax.config.update("jax_enable_x64", True)
    return jax


def close(a, b, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# closure_convert: which constants are hoisted


def _hoisting_case(lib, np_):
    """A function closing over a concrete array, a Python float, a NumPy array,
    an integer range and a traced scalar ``s``; returns the value and the number
    of hoisted constants seen by each call."""
    w = np_.array([1.0, 2.0])
    c = 3.0
    n = np.array([0.5, -1.0])
    seen = []

    def outer(s):
        def fn(x):
            return (np_.sum(w * x) * c + s * x[0] + np_.sum(n * x)
                    + np_.sum(np_.arange(2) * x))
        conv, consts = lib.closure_convert(fn, np_.ones(2))
        seen.append(len(consts))
        return conv(np_.array([1.0, 2.0]), *consts)
    return outer, seen


@pytest.mark.parametrize("how", ["eager", "grad", "jit", "vmap", "jvp", "jit_grad",
                                 "vmap_grad"])
def test_closure_convert_hoists_what_jax_hoists(jax, how):
    import jax.numpy as jnp

    def run(lib, np_):
        outer, seen = _hoisting_case(lib, np_)
        f = {"eager": lambda: outer(2.0),
             "grad": lambda: lib.grad(outer)(2.0),
             "jit": lambda: lib.jit(outer)(2.0),
             "vmap": lambda: lib.vmap(outer)(np_.array([2.0, 3.0])),
             "jvp": lambda: lib.jvp(outer, (2.0,), (1.0,))[1],
             "jit_grad": lambda: lib.jit(lib.grad(outer))(2.0),
             "vmap_grad": lambda: lib.vmap(lib.grad(outer))(np_.array([2.0, 3.0]))}[how]
        return np.asarray(f()), seen

    got, got_seen = run(tg, tnp)
    want, want_seen = run(jax, jnp)
    close(got, want)
    assert got_seen == want_seen


def test_closure_convert_keeps_concrete_floats_and_grad_is_right(jax):
    # The hoisted constant is the traced s only; the derivative with respect to s
    # through a custom_vjp built on the converted function is right (by hand:
    # d/ds of s * sin(x0) * 2.5 is sin(x0) * 2.5).
    @partial(tg.custom_vjp, nondiff_argnums=(0,))
    def apply(fn, x, *consts):
        return fn(x, *consts)

    def apply_fwd(fn, x, *consts):
        return apply(fn, x, *consts), (x, consts)

    def apply_bwd(fn, res, g):
        x, consts = res
        return tg.vjp(fn, x, *consts)[1](g)

    apply.defvjp(apply_fwd, apply_bwd)
    k = 2.5  # concrete: stays in the converted function
    seen = []

    def loss(s, x):
        conv, consts = tg.closure_convert(lambda y: s * tnp.sin(y) * k, x)
        seen.append(len(consts))
        return apply(conv, x, *consts)

    s, x = 1.3, 0.4
    close(tg.grad(loss)(s, x), np.sin(x) * k)
    close(tg.grad(loss, 1)(s, x), s * np.cos(x) * k)
    close(tg.jit(tg.grad(loss))(s, x), np.sin(x) * k)
    assert seen == [1, 0, 1]  # s when it is traced; never k


# ---------------------------------------------------------------------------
# A custom_jvp rule returning Python floats


def _scalar_and_array_rule(lib, np_, symbolic_zeros, seen):
    """f(a, b, x, y) = (a + x, b + y) whose rule returns the scalar output's
    primal and tangent as Python floats (a and b are never perturbed)."""
    def f(a, b, x, y):
        return a + x, b + y

    f = lib.custom_jvp(f)

    def f_jvp(primals, tangents):
        a = primals[0]
        ta, tb, tx, ty = tangents
        seen.append((type(ta).__name__, type(tb).__name__))
        return f(*primals), (a + 90.0, ty + 91.0)

    f.defjvp(f_jvp, symbolic_zeros=symbolic_zeros)
    return f


@pytest.mark.parametrize("symbolic_zeros", [True, False])
@pytest.mark.parametrize("how", ["eager", "jit", "vmap", "jit_vmap"])
def test_custom_jvp_python_float_outputs_as_jax(jax, how, symbolic_zeros):
    import jax.numpy as jnp

    def run(lib, np_):
        seen = []
        f = _scalar_and_array_rule(lib, np_, symbolic_zeros, seen)

        def g(x, y):
            if "vmap" in how:
                args = (np_.ones(1), np_.array([[2.0, 3.0]]), x[None], y[None])
                outs = lib.vmap(f)(*args)
                return outs[0][0], outs[1][0]
            return f(1.0, np_.array([2.0, 3.0]), x, y)

        def jvp_g(ps, ts):
            return lib.jvp(g, ps, ts)
        if "jit" in how:
            jvp_g = lib.jit(jvp_g)
        out = jvp_g((4.0, np_.array([5.0, 6.0])), (7.0, np_.array([8.0, 9.0])))
        return out, seen

    (p, t), seen = run(tg, tnp)
    (jp, jt), jseen = run(jax, jnp)
    scalar = float if how == "eager" else np.ndarray
    for got, want in zip(p + t, jp + jt):
        assert isinstance(got, scalar if np.ndim(want) == 0 else np.ndarray)
        assert type(got) is float or type(want) is not float
        close(got, want)
    assert (type(p[0]) is float) == (type(jp[0]) is float)
    assert (type(t[0]) is float) == (type(jt[0]) is float)
    close(t[0], 91.0)
    close(t[1], [99.0, 100.0])
    zero_names = {"SymbolicZero"} if symbolic_zeros else {"ndarray", "ArrayImpl", "float",
                                                            "Array"}
    assert all(n in zero_names for pair in seen for n in pair), seen
    assert len(seen) == len(jseen)


def test_jvp_returns_python_floats_as_jax(jax):
    # the input itself, and a Python constant output (whose zero tangent is an array)
    for lib in (tg, jax):
        p, t = lib.jvp(lambda x: x, (1.0,), (2.0,))
        assert type(p) is float and type(t) is float
        (p1, p2), (t1, t2) = lib.jvp(lambda x: (x, 2.0), (1.0,), (1.0,))
        assert type(p1) is float and type(p2) is float and type(t1) is float
        assert isinstance(t2, (np.ndarray, jax.Array)) and float(t2) == 0.0
    # anything computed is an array
    p, t = tg.jvp(lambda x: x * 2.0, (1.0,), (1.0,))
    assert isinstance(p, np.ndarray) and isinstance(t, np.ndarray)
    close(t, 2.0)


# ---------------------------------------------------------------------------
# odeint of a complex state under grad of a real loss

_W = np.array([[0.2 + 1j, -0.3], [0.5j, -0.1 + 0.4j]])
_Y0 = np.array([1.0 + 0.5j, 0.3 - 0.2j])
_T = np.linspace(0.0, 1.0, 4)


def _complex_ode_loss(lib, np_, odeint):
    w = np_.asarray(_W)

    def f(y, t, p):
        return -1j * p * y + (w @ y) * np_.sin(t) * 0.3

    def loss(p, y0, t):
        ys = odeint(f, y0, t, p)
        return (np_.sum(np_.abs(ys) ** 2 * np_.arange(1.0, 5.0)[:, None])
                + np_.sum(np_.real(ys) * np_.imag(ys)))
    return loss


# JAX 0.10.2 (x64)'s numbers for this loss at p = 0.7 (jax.experimental.ode.odeint; JAX
# takes ~40 s to compile these four, so they are recorded here): value, d/dp, d/dy0, d/dt
_JAX_VALUE = 14.404789825568589
_JAX_GRAD_P = -2.4171230360498637
_JAX_GRAD_Y0 = [19.82333630471968 - 14.384897385176272j, 3.9635302957085665 + 3.0236794438065293j]
_JAX_GRAD_T = [2.4911820048648523, -0.6231224426962161, -0.5476541933066585, -0.3945487042736686]


def test_odeint_complex_state_value_and_grad():
    from tangentia.experimental.ode import odeint

    loss = _complex_ode_loss(tg, tnp, odeint)
    p = 0.7
    close(loss(p, _Y0, _T), _JAX_VALUE, rtol=1e-7)   # it was NaN
    # the real parameter: finite differences (the solver's tolerance bounds the agreement)
    eps = 1e-5
    fd = (loss(p + eps, _Y0, _T) - loss(p - eps, _Y0, _T)) / (2 * eps)
    g = tg.grad(loss)(p, _Y0, _T)
    assert np.asarray(g).dtype == np.float64
    close(g, fd, rtol=1e-6)
    close(g, _JAX_GRAD_P, rtol=1e-6)
    # forward mode agrees with reverse mode
    close(tg.jvp(lambda q: loss(q, _Y0, _T), (p,), (1.0,))[1], g, rtol=1e-6)
    # the complex initial state and the real times: JAX's convention, JAX's numbers
    gy = tg.grad(loss, 1)(p, _Y0, _T)
    assert np.asarray(gy).dtype == np.complex128
    close(gy, _JAX_GRAD_Y0, rtol=1e-6)
    gt = tg.grad(loss, 2)(p, _Y0, _T)
    assert np.asarray(gt).dtype == np.float64  # (the adjoint's time cotangent was complex)
    close(gt, _JAX_GRAD_T, rtol=1e-6)
    # a perturbation of y0's real and imaginary parts by finite differences (JAX's
    # convention: the gradient is d/dRe - i d/dIm)
    for d, part in ((np.array([1.0, 0.0]), np.real), (np.array([0.0, 1j]), lambda z: -np.imag(z))):
        fd_y = (loss(p, _Y0 + eps * d, _T) - loss(p, _Y0 - eps * d, _T)) / (2 * eps)
        close(part(gy[np.flatnonzero(d)[0]]), fd_y, rtol=1e-6)
    close(tg.jit(tg.grad(loss))(p, _Y0, _T), g, rtol=1e-10)
