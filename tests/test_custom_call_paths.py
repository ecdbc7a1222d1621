"""The short paths of custom_jvp/custom_vjp calls (issue 14): a call on
concrete arguments under eager evaluation, or inside a rule under eager
``grad``, calls the function without binding; a call with one perturbed
argument reaches the rule directly.  Each must give what the general path
gives: values, types, which user code runs, and the program-cache keys."""
import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia._array import ArrayImpl
from tangentia.custom_derivatives import rule_key


def _counted_sin():
    calls = {"fun": 0, "jvp": 0, "fwd": 0, "bwd": 0}

    @tg.custom_jvp
    def sj(x):
        calls["fun"] += 1
        return tnp.sin(x)

    @sj.defjvp
    def _(p, t):
        calls["jvp"] += 1
        return sj(p[0]), tnp.cos(p[0]) * t[0]

    @tg.custom_vjp
    def sv(x):
        calls["fun"] += 1
        return tnp.sin(x)

    def fwd(x):
        calls["fwd"] += 1
        return tnp.sin(x), tnp.cos(x)

    def bwd(c, g):
        calls["bwd"] += 1
        return (c * g,)

    sv.defvjp(fwd, bwd)
    return sj, sv, calls


X = np.linspace(0.1, 0.8, 5)


@pytest.mark.parametrize("arg", [X, 0.3, np.float64(0.3), 2])
def test_eager_call_is_the_function(arg):
    sj, sv, calls = _counted_sin()
    for f in (sj, sv):
        out = f(arg)
        assert type(out) is ArrayImpl
        np.testing.assert_array_equal(out, np.sin(arg))
    assert calls == {"fun": 2, "jvp": 0, "fwd": 0, "bwd": 0}


def test_eager_pytree_outputs_are_arrays():
    @tg.custom_jvp
    def f(x):
        return {"a": tnp.sin(x), "b": (1.5, x * 2)}

    f.defjvp(lambda p, t: (f(*p), {"a": t[0], "b": (0.0, 2 * t[0])}))
    out = f(X)
    # a Python float returned by the function stays one, as JAX's (issue 26)
    assert type(out["b"][0]) is float and type(out["b"][1]) is ArrayImpl
    np.testing.assert_array_equal(out["b"][0], 1.5)
    np.testing.assert_array_equal(out["b"][1], X * 2)
    # the staged call gives the same structure and values
    staged = tg.jit(f)(X)
    assert tg.tree_util.tree_structure(staged) == tg.tree_util.tree_structure(out)
    np.testing.assert_allclose(staged["a"], out["a"], rtol=1e-15)


def test_grad_runs_each_rule_once_per_call():
    sj, sv, calls = _counted_sin()

    def chain(f):
        def g(x):
            for _ in range(3):
                x = f(x)
            return tnp.sum(x)
        return g

    want = np.cos(np.sin(np.sin(X))) * np.cos(np.sin(X)) * np.cos(X)
    np.testing.assert_allclose(tg.grad(chain(sj))(X), want, rtol=1e-14)
    # the rule calls the function, which is evaluated, not differentiated again
    assert calls == {"fun": 3, "jvp": 3, "fwd": 0, "bwd": 0}
    np.testing.assert_allclose(tg.grad(chain(sv))(X), want, rtol=1e-14)
    assert calls == {"fun": 3, "jvp": 3, "fwd": 3, "bwd": 3}


def test_one_argument_with_integer_output():
    @tg.custom_vjp
    def f(x):
        return tnp.sin(x), tnp.floor(x * 10).astype(int)

    f.defvjp(lambda x: (f(x), tnp.cos(x)), lambda c, g: (c * g[0],))
    g = tg.grad(lambda x: tnp.sum(f(x)[0] * f(x)[1]))(X)
    np.testing.assert_allclose(g, np.cos(X) * np.floor(X * 10), rtol=1e-14)


def test_rule_keys_are_stable_and_follow_the_definition():
    sj, _, _ = _counted_sin()

    def key():
        (eqn,) = [e for e in tg.make_jaxpr(sj)(X).jaxpr.eqns]
        return rule_key(eqn.params["jvp"], "jvp")

    k1, k2 = key(), key()
    assert k1 is not None and k1 == k2 and hash(k1) == hash(k2)
    sj.defjvp(lambda p, t: (sj(p[0]), t[0]))
    assert key() != k1


def test_public_functions_on_known_values_inside_rules():
    """Inside rules run on known values under eager ``grad``, the public
    unary and binary functions give what eager evaluation gives (eager
    results, NumPy's values, ArrayImpl arguments accepted), silently as JAX's
    (``log(0)``: no NumPy warning)."""
    seen = []

    def record(*vals):
        seen.extend(vals)
        return vals[0]

    @tg.custom_vjp
    def sv(x):
        return tnp.sin(x)

    def fwd(x):
        s = tnp.sin(x)
        c = tnp.cos(x)
        record(s, c, tnp.multiply(s, x), tnp.multiply(x, c), tnp.add(s, c), tnp.exp(c))
        tnp.log(tnp.multiply(x, 0.0))  # warns
        return s, c

    sv.defvjp(fwd, lambda c, g: (c * g,))

    @tg.custom_jvp
    def sj(x):
        return tnp.sin(x)

    sj.defjvp(lambda p, t: (sj(p[0]), record(tnp.cos(p[0])) * t[0]))

    for f in (sv, sj):
        seen.clear()
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            g = tg.grad(lambda x: tnp.sum(f(x)))(X)
        np.testing.assert_allclose(g, np.cos(X), rtol=1e-15)
        assert seen and all(type(v) is ArrayImpl for v in seen)
        assert seen[0].at[0].set(5.0)[0] == 5.0
        fp = [w for w in warned if issubclass(w.category, RuntimeWarning)]
        assert not fp, [str(w.message) for w in fp]
        if f is sj:
            continue
        s, c = np.sin(X), np.cos(X)
        for got, want in zip(seen, [s, c, s * X, X * c, s + c, np.exp(c)], strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "matmul"])
def test_eager_result_on_the_left_of_a_tracer(op):
    """``x op tracer`` with ``x`` an eager result (as in a rule computing
    ``tnp.cos(p) * t``): NumPy defers to the tracer, which gets ``x`` as a
    plain ndarray; values and derivatives are those of the plain array, and a
    staged program holds no ArrayImpl."""
    import operator
    f = getattr(operator, op)
    a = np.array([[1.5, 2.0], [3.0, -4.0]])
    y = np.array([[0.7, -1.2], [2.5, 0.3]])
    xa = tnp.asarray(a)
    assert type(xa) is ArrayImpl
    for fn in (lambda v: f(xa, v), lambda v: f(a, v)):
        np.testing.assert_array_equal(tg.jit(fn)(y), f(a, y))
        np.testing.assert_array_equal(tg.vmap(fn)(y[None])[0], f(a, y))
        g = tg.grad(lambda v: tnp.sum(fn(v)))(y)
        np.testing.assert_array_equal(g, tg.grad(lambda v: tnp.sum(f(a, v)))(y))
    consts = tg.make_jaxpr(lambda v: f(xa, v))(y).consts
    assert consts and all(type(c) is np.ndarray for c in consts)


def _vjp_with_residuals(make_res):
    """``sin`` as a custom_vjp whose fwd keeps ``make_res(x)`` (any pytree of
    arrays and scalars whose leaves multiply to ``cos(x)``)."""

    @tg.custom_vjp
    def f(x):
        return tnp.sin(x)

    def bwd(res, g):
        leaves = tg.tree_util.tree_leaves(res)
        out = g
        for leaf in leaves:
            out = out * leaf
        return (out,)

    f.defvjp(lambda x: (tnp.sin(x), make_res(x)), bwd)
    return f


@pytest.mark.parametrize("make_res", [
    lambda x: tnp.cos(x),                                   # an eager result (ArrayImpl)
    lambda x: np.cos(x) if isinstance(x, np.ndarray) else tnp.cos(x),  # a plain ndarray
    lambda x: {"c": tnp.cos(x), "one": 1.0},                # a pytree with a Python float
    lambda x: (np.float64(1.0), tnp.cos(x)),                # a NumPy scalar
], ids=["arrayimpl", "ndarray", "float-leaf", "numpy-scalar"])
def test_custom_lin_recorded_under_eager_grad_as_the_linearization_would(make_res):
    """Under eager ``grad`` the JVP interpreter records a custom_vjp call's
    linear step itself when the linearization would record it as it is
    (plain residual arrays, tangents of its own), and hands it to the
    linearization otherwise: both give the derivative, as ``jit`` (a staged
    linearization, never recorded directly) and ``vjp`` (a program) do."""
    f = _vjp_with_residuals(make_res)

    def loss(x):
        return tnp.sum(f(f(x)) * x)

    x = np.linspace(-0.7, 0.9, 6)
    s = np.sin(x)
    want = np.cos(s) * np.cos(x) * x + np.sin(s)
    g = tg.grad(loss)(x)
    assert type(g) is ArrayImpl
    np.testing.assert_allclose(g, want, rtol=1e-14)
    np.testing.assert_allclose(tg.jit(tg.grad(loss))(x), want, rtol=1e-14)
    np.testing.assert_allclose(tg.vjp(loss, x)[1](1.0)[0], want, rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(loss))(x[None]), want[None], rtol=1e-14)


def test_custom_lin_with_an_unperturbed_input_and_an_integer_output():
    """An argument that is not differentiated (its tangent is a symbolic
    zero, materialized for the linear step) and an integer output (no
    tangent) under eager ``grad``, against the derivative by hand."""

    @tg.custom_vjp
    def f(x, y):
        return x * y, tnp.floor(x).astype(np.int32)

    f.defvjp(lambda x, y: (f(x, y), (x, y)),
             lambda res, g: (g[0] * res[1], g[0] * res[0]))
    x, y = np.array([1.5, -2.25, 3.0]), np.array([0.5, 4.0, -1.0])
    out, k = f(x, y)
    np.testing.assert_array_equal(k, np.floor(x).astype(np.int32))
    gx = tg.grad(lambda x: tnp.sum(f(x, y)[0] ** 2))(x)
    np.testing.assert_allclose(gx, 2 * x * y * y, rtol=1e-15)
    gx, gy = tg.grad(lambda x, y: tnp.sum(f(x, y)[0]), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, y)
    np.testing.assert_array_equal(gy, x)
    g32 = tg.grad(lambda x: tnp.sum(f(x, np.full(3, 2.0, np.float32))[0]))(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_array_equal(g32, np.full(3, 2.0, np.float32))


def test_warnings_of_a_custom_function_evaluated_in_its_rule_under_grad():
    """A custom_jvp function evaluated inside its own rule under ``grad`` (public
    functions inside another boundary keep NumPy's error state as grad set it) computes
    ``log(0)`` silently, as JAX's; NumPy code of the user's in the rule warns at its
    line, with NumPy's text, as NumPy does."""

    @tg.custom_jvp
    def f(x):
        return tnp.log(x)

    def rule(p, t):
        np.log(np.asarray(p[0]))  # the rule's NumPy line
        return f(p[0]), t[0] / p[0]

    f.defjvp(rule)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        g = tg.grad(lambda x: tnp.sum(f(x)))(np.array([0.0, 1.0]))
    np.testing.assert_array_equal(g, [np.inf, 1.0])
    fp = [(str(w.message), w.filename, w.lineno) for w in record]
    with open(__file__) as src:
        line = next(i for i, text in enumerate(src, 1) if "# the rule's " + "NumPy line" in text)
    assert fp == [("divide by zero encountered in log", __file__, line)]
    assert np.geterr()["divide"] == "warn"


def test_a_redefined_rule_is_the_one_the_next_call_uses():
    """A call reads the definition through one attribute the decorators keep
    (``_state``): rules defined again reach the next call, eager or
    differentiated, and a call before any definition raises JAX's error."""
    f = tg.custom_jvp(lambda x: tnp.sin(x))
    v = tg.custom_vjp(lambda x: tnp.sin(x))
    with pytest.raises(AttributeError, match="^No JVP defined for custom_jvp function"):
        f(X)
    with pytest.raises(AttributeError, match="^No VJP defined for custom_vjp function"):
        tg.grad(lambda x: tnp.sum(v(x)))(X)
    for k in (2.0, 3.0):
        f.defjvp(lambda p, t, k=k: (f(p[0]), k * t[0]))
        v.defvjp(lambda x: (tnp.sin(x), None), lambda r, g, k=k: (k * g,))
        for h in (f, v):
            np.testing.assert_array_equal(h(X), np.sin(X))
            np.testing.assert_array_equal(tg.grad(lambda x: tnp.sum(h(x)))(X), np.full(X.shape, k))
